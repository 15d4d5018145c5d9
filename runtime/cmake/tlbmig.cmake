# TLB re-warming after migration (tlblab/tlbmig.h, seed 000): library sources, tests, and the
# migration measurement program (bench/migrate_bench.c). Uses tlblab_ptwarm_test() from ptwarm.cmake
# (parts are included in sorted order: ptwarm before tlbmig).
target_sources(tlblab PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/../src/tlbmig/tlbmig.c
  ${CMAKE_CURRENT_LIST_DIR}/../src/tlbmig/prim_linux.c)

tlblab_ptwarm_test(test_tlbmig ${CMAKE_CURRENT_LIST_DIR}/../tests/test_tlbmig.c ${TLBMIG_SRCS})

add_executable(migrate_bench ${CMAKE_CURRENT_LIST_DIR}/../bench/migrate_bench.c)
target_link_libraries(migrate_bench PRIVATE tlblab m)
target_compile_options(migrate_bench PRIVATE ${TLBLAB_WARNINGS})
target_compile_definitions(migrate_bench PRIVATE _GNU_SOURCE)
