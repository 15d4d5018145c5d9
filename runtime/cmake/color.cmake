# The TLB-coloring allocator (seed 003): library sources, tests, benchmarks.
# Tests: unit + randomized property tests (plain build), the same tests built with ASan+UBSan,
# the thread test under TSan,
# a valgrind memcheck run, and a clang build of the allocator with -Werror (when clang exists).

set(TLBLAB_COLOR_SOURCES
  ${CMAKE_CURRENT_SOURCE_DIR}/src/color/color.c
  ${CMAKE_CURRENT_SOURCE_DIR}/src/color/prim_linux.c
  ${CMAKE_CURRENT_SOURCE_DIR}/src/color/machine.c)
target_sources(tlblab PRIVATE ${TLBLAB_COLOR_SOURCES})

function(tlblab_color_exe name src)
  tlblab_program(${name} ${src})
  target_include_directories(${name} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/src/color)
endfunction()

tlblab_color_exe(test_color_unit tests/test_color_unit.c)
tlblab_color_exe(test_color_prop tests/test_color_prop.c)
tlblab_color_exe(test_color_threads tests/test_color_threads.c)
tlblab_color_exe(color_trace bench/color_trace.c)
tlblab_color_exe(color_wcet bench/color_wcet.c)
tlblab_color_exe(color_sweep bench/color_sweep.c)

tlblab_color_exe(test_color_machine tests/test_color_machine.c)

add_test(NAME color_unit COMMAND test_color_unit)
# The geometry loader on the presets themselves (their L2 levels are known) and on bad files.
add_test(NAME color_machine COMMAND test_color_machine ${CMAKE_CURRENT_SOURCE_DIR}/../presets)
add_test(NAME color_prop COMMAND test_color_prop 200 20000)
add_test(NAME color_threads COMMAND test_color_threads)
add_test(NAME color_trace_smoke
  COMMAND ${CMAKE_COMMAND} -DEXE=$<TARGET_FILE:color_trace>
          -DINPUT=${CMAKE_CURRENT_SOURCE_DIR}/tests/color_trace_input.txt
          -DEXPECTED=${CMAKE_CURRENT_SOURCE_DIR}/tests/color_trace_expected.txt
          -P ${CMAKE_CURRENT_SOURCE_DIR}/tests/color_trace_compare.cmake)

# ASan + UBSan: the allocator's sources compiled again into each sanitized test, so the plain
# library stays uninstrumented. Skipped when the whole build is already sanitized.
if(NOT TLBLAB_SANITIZE AND CMAKE_C_COMPILER_ID MATCHES "GNU|Clang")
  foreach(t unit prop threads)
    add_executable(test_color_${t}_san tests/test_color_${t}.c ${TLBLAB_COLOR_SOURCES})
    target_include_directories(test_color_${t}_san PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/include
                               ${CMAKE_CURRENT_SOURCE_DIR}/src/color)
    target_compile_options(test_color_${t}_san PRIVATE ${TLBLAB_WARNINGS} -O1 -g
                           -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all)
    target_compile_definitions(test_color_${t}_san PRIVATE _GNU_SOURCE)
    target_link_options(test_color_${t}_san PRIVATE -fsanitize=address,undefined)
    target_link_libraries(test_color_${t}_san PRIVATE Threads::Threads)
  endforeach()
  # ThreadSanitizer on the locked variant's concurrency test.
  add_executable(test_color_threads_tsan tests/test_color_threads.c ${TLBLAB_COLOR_SOURCES})
  target_include_directories(test_color_threads_tsan PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/include
                             ${CMAKE_CURRENT_SOURCE_DIR}/src/color)
  target_compile_options(test_color_threads_tsan PRIVATE ${TLBLAB_WARNINGS} -O1 -g -fsanitize=thread)
  target_compile_definitions(test_color_threads_tsan PRIVATE _GNU_SOURCE)
  target_link_options(test_color_threads_tsan PRIVATE -fsanitize=thread)
  target_link_libraries(test_color_threads_tsan PRIVATE Threads::Threads)
  add_test(NAME color_threads_tsan COMMAND test_color_threads_tsan)
  set_tests_properties(color_threads_tsan PROPERTIES ENVIRONMENT "TSAN_OPTIONS=halt_on_error=1 exitcode=66")
  add_test(NAME color_unit_asan_ubsan COMMAND test_color_unit_san)
  add_test(NAME color_prop_asan_ubsan COMMAND test_color_prop_san 40 5000)
  add_test(NAME color_threads_asan_ubsan COMMAND test_color_threads_san)
endif()

find_program(TLBLAB_VALGRIND valgrind)
if(TLBLAB_VALGRIND AND NOT TLBLAB_SANITIZE)  # valgrind cannot run ASan binaries
  add_test(NAME color_prop_valgrind
    COMMAND ${TLBLAB_VALGRIND} --tool=memcheck --error-exitcode=3 --leak-check=full --errors-for-leak-kinds=definite
            -q $<TARGET_FILE:test_color_prop> 8 2000)
  add_test(NAME color_unit_valgrind
    COMMAND ${TLBLAB_VALGRIND} --tool=memcheck --error-exitcode=3 --leak-check=full --errors-for-leak-kinds=definite
            -q $<TARGET_FILE:test_color_unit>)
endif()

# The other compiler: build the allocator and its tests warning-free (-Werror) with clang when
# this build uses gcc (and with gcc when it uses clang).
if(CMAKE_C_COMPILER_ID STREQUAL "GNU")
  find_program(TLBLAB_OTHER_CC clang)
else()
  find_program(TLBLAB_OTHER_CC gcc)
endif()
if(TLBLAB_OTHER_CC)
  string(REPLACE ";" " " _color_warn "${TLBLAB_WARNINGS}")
  add_test(NAME color_other_compiler_build
    COMMAND ${CMAKE_COMMAND} -DCC=${TLBLAB_OTHER_CC} -DSRC=${CMAKE_CURRENT_SOURCE_DIR}
            -DOUT=${CMAKE_CURRENT_BINARY_DIR}/color_other_cc "-DWARN=${_color_warn}"
            -P ${CMAKE_CURRENT_SOURCE_DIR}/tests/color_other_compiler.cmake)
endif()

# The usage example of docs/color.md (tests/test_color_docs.py keeps the two identical).
tlblab_color_exe(test_color_example tests/test_color_example.c)
add_test(NAME color_example COMMAND test_color_example)
