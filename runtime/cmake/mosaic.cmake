# Mosaic allocator (tlblab/mosaic.h; Mosalloc's method, Agbarya et al. MICRO 2020): library sources
# in libtlblab, the LD_PRELOAD library libtlblab_mosaic.so (the same sources plus the malloc and
# mmap replacements, preload.c), its ctest tests, and the host-prediction programs
# (bench/hostpredict/, `tlblab host predict`, docs/host-predict.md).
set(MOSAIC_SRCS ${CMAKE_CURRENT_LIST_DIR}/../src/mosaic/mosaic.c
                ${CMAKE_CURRENT_LIST_DIR}/../src/mosaic/prim_linux.c)
target_sources(tlblab PRIVATE ${MOSAIC_SRCS})

add_library(tlblab_mosaic SHARED ${MOSAIC_SRCS} ${CMAKE_CURRENT_LIST_DIR}/../src/mosaic/preload.c)
target_include_directories(tlblab_mosaic PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/include)
target_compile_options(tlblab_mosaic PRIVATE ${TLBLAB_WARNINGS})
target_compile_definitions(tlblab_mosaic PRIVATE _GNU_SOURCE)

# test_mosaic (parser, allocators), test_mosaic_coverage (the smaps check; skipped, 77, where
# THP is `never`) and test_mosaic_hugetlb / _hugetlb_1g (hugetlb windows as asked and refused; as
# root, writing the kernel's pool of hugetlb pages and restoring it; skipped, 77, when not root or
# when the kernel cannot reserve the pages), plus an ASan/UBSan build of them. The tests that write
# the pool, or read it to decide, hold the lock `hugetlb_pool`, so `ctest -j` never runs two at
# once. (This file is included before ptwarm.cmake, so it cannot use tlblab_ptwarm_test.)
tlblab_program(test_mosaic ${CMAKE_CURRENT_LIST_DIR}/../tests/test_mosaic.c)
add_test(NAME test_mosaic COMMAND test_mosaic)
add_test(NAME test_mosaic_coverage COMMAND test_mosaic --case coverage)
add_test(NAME test_mosaic_hugetlb COMMAND test_mosaic --case hugetlb)
add_test(NAME test_mosaic_hugetlb_1g COMMAND test_mosaic --case hugetlb_1g)
set_tests_properties(test_mosaic test_mosaic_coverage test_mosaic_hugetlb test_mosaic_hugetlb_1g
                     PROPERTIES TIMEOUT 60 SKIP_RETURN_CODE 77)
set_tests_properties(test_mosaic_hugetlb test_mosaic_hugetlb_1g PROPERTIES RESOURCE_LOCK hugetlb_pool)
include(CheckCCompilerFlag)
set(CMAKE_REQUIRED_LINK_OPTIONS -fsanitize=address,undefined)
check_c_compiler_flag(-fsanitize=address,undefined TLBLAB_MOSAIC_HAVE_ASAN)
unset(CMAKE_REQUIRED_LINK_OPTIONS)
if(TLBLAB_MOSAIC_HAVE_ASAN AND NOT TLBLAB_SANITIZE)
  add_executable(test_mosaic_asan ${CMAKE_CURRENT_LIST_DIR}/../tests/test_mosaic.c ${MOSAIC_SRCS})
  target_include_directories(test_mosaic_asan PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/include)
  target_compile_options(test_mosaic_asan PRIVATE ${TLBLAB_WARNINGS} -O1 -g -fsanitize=address,undefined
                         -fno-omit-frame-pointer -fno-sanitize-recover=all)
  target_compile_definitions(test_mosaic_asan PRIVATE _GNU_SOURCE)
  target_link_options(test_mosaic_asan PRIVATE -fsanitize=address,undefined)
  add_test(NAME test_mosaic_asan COMMAND test_mosaic_asan)
  add_test(NAME test_mosaic_coverage_asan COMMAND test_mosaic_asan --case coverage)
  add_test(NAME test_mosaic_hugetlb_asan COMMAND test_mosaic_asan --case hugetlb)
  set_tests_properties(test_mosaic_asan test_mosaic_coverage_asan test_mosaic_hugetlb_asan
                       PROPERTIES TIMEOUT 120 SKIP_RETURN_CODE 77)
  set_tests_properties(test_mosaic_hugetlb_asan PROPERTIES RESOURCE_LOCK hugetlb_pool)
endif()

# The preloaded library end to end: a program whose heap is backed by a 2 MiB window, its report.
add_executable(mosaic_preload_probe ${CMAKE_CURRENT_LIST_DIR}/../tests/mosaic_preload_probe.c)
target_compile_options(mosaic_preload_probe PRIVATE ${TLBLAB_WARNINGS})
target_compile_definitions(mosaic_preload_probe PRIVATE _GNU_SOURCE)
add_test(NAME mosaic_preload
         COMMAND ${CMAKE_COMMAND} -DPROBE=$<TARGET_FILE:mosaic_preload_probe>
                 -DLIB=$<TARGET_FILE:tlblab_mosaic> -DDIR=${CMAKE_CURRENT_BINARY_DIR}
                 -P ${CMAKE_CURRENT_LIST_DIR}/../tests/mosaic_preload_check.cmake)
set_tests_properties(mosaic_preload PROPERTIES TIMEOUT 60 SKIP_RETURN_CODE 77 RESOURCE_LOCK hugetlb_pool)

# The programs `tlblab host predict` measures and captures (real kernels with a TLB-sensitive
# region of interest, tlblab/roi.h); -O2, no tlblab library: they run under the preloaded allocator.
file(GLOB HOSTPREDICT_PROGRAMS CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/../bench/hostpredict/*.c)
foreach(src ${HOSTPREDICT_PROGRAMS})
  get_filename_component(name ${src} NAME_WE)
  add_executable(hp_${name} ${src})
  set_target_properties(hp_${name} PROPERTIES OUTPUT_NAME ${name} RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/hostpredict)
  target_include_directories(hp_${name} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/include)
  target_compile_options(hp_${name} PRIVATE ${TLBLAB_WARNINGS} -O2)
  target_compile_definitions(hp_${name} PRIVATE _GNU_SOURCE)
  target_link_libraries(hp_${name} PRIVATE m)
endforeach()

# The other compiler: the allocator, its tests and the programs warning-free under clang too
# (a syntax-only pass with the same warnings, about a second).
find_program(TLBLAB_MOSAIC_CLANG clang)
if(TLBLAB_MOSAIC_CLANG AND NOT CMAKE_C_COMPILER_ID STREQUAL "Clang")
  add_test(NAME mosaic_clang_warnings
           COMMAND ${TLBLAB_MOSAIC_CLANG} -std=c11 -D_GNU_SOURCE -fsyntax-only -Wall -Wextra -Werror -Wshadow
                   -Wstrict-prototypes -Wmissing-prototypes -I${CMAKE_CURRENT_SOURCE_DIR}/include
                   ${MOSAIC_SRCS} ${CMAKE_CURRENT_LIST_DIR}/../src/mosaic/preload.c
                   ${CMAKE_CURRENT_LIST_DIR}/../tests/test_mosaic.c
                   ${CMAKE_CURRENT_LIST_DIR}/../tests/mosaic_preload_probe.c
                   ${HOSTPREDICT_PROGRAMS})
endif()
