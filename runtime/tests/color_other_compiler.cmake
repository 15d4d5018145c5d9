# ctest script: compile the coloring allocator and its unit test with another compiler (CC) at
# -O0 and -O2 with the project's warnings and -Werror, run the unit test it built, and compile
# every other C file of the part (benchmarks, other tests) the same way.
# Inputs: CC, SRC (runtime/), OUT (scratch dir), WARN (space-separated warning flags).
separate_arguments(warn UNIX_COMMAND "${WARN}")
file(MAKE_DIRECTORY ${OUT})
foreach(opt -O0 -O2)
  execute_process(
    COMMAND ${CC} -std=c11 ${opt} ${warn} -D_GNU_SOURCE -I${SRC}/include -I${SRC}/src/color
            ${SRC}/src/color/color.c ${SRC}/src/color/prim_linux.c ${SRC}/tests/test_color_unit.c
            -o ${OUT}/test_color_unit${opt} -lpthread
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${CC} ${opt} failed:\n${out}${err}")
  endif()
  execute_process(COMMAND ${OUT}/test_color_unit${opt} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "test_color_unit built by ${CC} ${opt} failed:\n${out}${err}")
  endif()
  # Every other C file of the part must compile warning-free too (objects only).
  foreach(f src/color/machine.c tests/test_color_machine.c bench/color_trace.c bench/color_wcet.c bench/color_sweep.c tests/test_color_prop.c
            tests/test_color_threads.c tests/test_color_example.c)
    execute_process(
      COMMAND ${CC} -std=c11 ${opt} ${warn} -D_GNU_SOURCE -I${SRC}/include -I${SRC}/src/color -c ${SRC}/${f}
              -o ${OUT}/obj.o
      RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "${CC} ${opt} failed on ${f}:\n${out}${err}")
    endif()
  endforeach()
endforeach()
