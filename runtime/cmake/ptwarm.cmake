# Page-table warmer (tlblab/ptwarm.h, seed 001): library sources, ctest tests (plain, ASan+UBSan,
# valgrind, clang -Werror syntax check) and the host measurement programs (bench/ptwarm_*.c).
target_sources(tlblab PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/../src/ptwarm/ptwarm.c
  ${CMAKE_CURRENT_LIST_DIR}/../src/ptwarm/prim_linux.c)

set(PTWARM_SRCS ${CMAKE_CURRENT_LIST_DIR}/../src/ptwarm/ptwarm.c
                ${CMAKE_CURRENT_LIST_DIR}/../src/ptwarm/prim_linux.c)
set(TLBMIG_SRCS ${CMAKE_CURRENT_LIST_DIR}/../src/tlbmig/tlbmig.c
                ${CMAKE_CURRENT_LIST_DIR}/../src/tlbmig/prim_linux.c)

include(CheckCCompilerFlag)

# tlblab_ptwarm_test(NAME SOURCE EXTRA_LIB_SOURCES...): the plain test, plus (when the toolchain has
# them) an ASan+UBSan build of the same test and a valgrind memcheck run, each its own ctest test.
# The cases listed in ${NAME}_CASES (those that need what a machine may lack) run as their own
# tests, `NAME_CASE` (`--case CASE`), in every variant; they exit 77 when they cannot run here,
# which ctest reports as skipped (SKIP_RETURN_CODE).
function(tlblab_ptwarm_test name src)
  tlblab_program(${name} ${src})
  add_test(NAME ${name} COMMAND ${name})
  set_tests_properties(${name} PROPERTIES TIMEOUT 60)
  foreach(case IN LISTS ${name}_CASES)
    add_test(NAME ${name}_${case} COMMAND ${name} --case ${case})
    set_tests_properties(${name}_${case} PROPERTIES TIMEOUT 60 SKIP_RETURN_CODE 77)
  endforeach()
  if(NOT TLBLAB_SANITIZE)
    set(CMAKE_REQUIRED_LINK_OPTIONS -fsanitize=address,undefined)
    check_c_compiler_flag(-fsanitize=address,undefined TLBLAB_HAVE_ASAN)
    unset(CMAKE_REQUIRED_LINK_OPTIONS)
    if(TLBLAB_HAVE_ASAN)
      add_executable(${name}_asan ${src} ${ARGN})
      target_include_directories(${name}_asan PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/include)
      target_compile_options(${name}_asan PRIVATE ${TLBLAB_WARNINGS} -O1 -g -fsanitize=address,undefined
                             -fno-omit-frame-pointer -fno-sanitize-recover=all)
      target_compile_definitions(${name}_asan PRIVATE _GNU_SOURCE)
      target_link_options(${name}_asan PRIVATE -fsanitize=address,undefined)
      target_link_libraries(${name}_asan PRIVATE Threads::Threads)
      add_test(NAME ${name}_asan COMMAND ${name}_asan)
      set_tests_properties(${name}_asan PROPERTIES TIMEOUT 120
                           ENVIRONMENT "ASAN_OPTIONS=detect_leaks=1:abort_on_error=0")
      foreach(case IN LISTS ${name}_CASES)
        add_test(NAME ${name}_${case}_asan COMMAND ${name}_asan --case ${case})
        set_tests_properties(${name}_${case}_asan PROPERTIES TIMEOUT 120 SKIP_RETURN_CODE 77
                             ENVIRONMENT "ASAN_OPTIONS=detect_leaks=1:abort_on_error=0")
      endforeach()
    endif()
  endif()
  find_program(TLBLAB_VALGRIND valgrind)
  if(TLBLAB_VALGRIND AND NOT TLBLAB_SANITIZE)
    # --fair-sched=yes: valgrind runs one thread at a time, and without fair scheduling a thread
    # waiting for the helper can hold the lock for whole time slices (120–180+ s instead of 4 s).
    add_test(NAME ${name}_valgrind
             COMMAND ${TLBLAB_VALGRIND} --quiet --fair-sched=yes --error-exitcode=3 --leak-check=full
                     --errors-for-leak-kinds=definite,indirect $<TARGET_FILE:${name}> --quick)
    set_tests_properties(${name}_valgrind PROPERTIES TIMEOUT 180)
    foreach(case IN LISTS ${name}_CASES)
      add_test(NAME ${name}_${case}_valgrind
               COMMAND ${TLBLAB_VALGRIND} --quiet --fair-sched=yes --error-exitcode=3 --leak-check=full
                       --errors-for-leak-kinds=definite,indirect $<TARGET_FILE:${name}> --quick --case ${case})
      set_tests_properties(${name}_${case}_valgrind PROPERTIES TIMEOUT 180 SKIP_RETURN_CODE 77)
    endforeach()
  endif()
endfunction()

set(test_ptwarm_CASES llc_check llc_auto willneed)
tlblab_ptwarm_test(test_ptwarm ${CMAKE_CURRENT_LIST_DIR}/../tests/test_ptwarm.c ${PTWARM_SRCS})

# The other compiler: the library, its tests and the measurement programs must also build warning-free
# under clang (the project builds warning-free with both compilers). A syntax-only pass with the same warnings catches that, in about a second.
find_program(TLBLAB_CLANG clang)
if(TLBLAB_CLANG AND NOT CMAKE_C_COMPILER_ID STREQUAL "Clang")
  add_test(NAME ptwarm_tlbmig_clang_warnings
           COMMAND ${TLBLAB_CLANG} -std=c11 -D_GNU_SOURCE -fsyntax-only -Wall -Wextra -Werror -Wshadow
                   -Wstrict-prototypes -Wmissing-prototypes -I${CMAKE_CURRENT_SOURCE_DIR}/include
                   ${PTWARM_SRCS} ${TLBMIG_SRCS}
                   ${CMAKE_CURRENT_LIST_DIR}/../tests/test_ptwarm.c
                   ${CMAKE_CURRENT_LIST_DIR}/../tests/test_tlbmig.c
                   ${CMAKE_CURRENT_LIST_DIR}/../bench/ptwarm_bench.c
                   ${CMAKE_CURRENT_LIST_DIR}/../bench/ptwarm_pid.c
                   ${CMAKE_CURRENT_LIST_DIR}/../bench/migrate_bench.c
                   ${CMAKE_CURRENT_LIST_DIR}/../tests/test_ptwarm_example.c)
endif()

# Host measurement programs (benchmarks, not tests): JSON on stdout. Built -O2 with the library.
foreach(b ptwarm_bench ptwarm_pid)
  tlblab_program(${b} ${CMAKE_CURRENT_LIST_DIR}/../bench/${b}.c)
  target_link_libraries(${b} PRIVATE m)
endforeach()
