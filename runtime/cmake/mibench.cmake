# Stand-ins for the MiBench programs of seed 004 (Table 1): qsort_small, susan, basicmath_small,
# the same algorithms on generated inputs (runtime/bench/mibench/*.c say how each differs), built
# as ordinary programs so that `tlblab profile` and `tlblab trace record` trace them for real
# under Valgrind Lackey. Not part of the library.
foreach(prog qsort_small susan basicmath_small)
  add_executable(mibench_${prog} ${CMAKE_CURRENT_SOURCE_DIR}/bench/mibench/${prog}.c)
  set_target_properties(mibench_${prog} PROPERTIES OUTPUT_NAME ${prog}
    RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/mibench)
  target_compile_options(mibench_${prog} PRIVATE ${TLBLAB_WARNINGS})
  target_link_libraries(mibench_${prog} PRIVATE m)
endforeach()
