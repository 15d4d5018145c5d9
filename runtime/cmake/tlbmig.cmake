# TLB re-warming after migration (tlblab/tlbmig.h, seed 000): library sources, tests, and the
# migration measurement program (bench/migrate_bench.c). Uses tlblab_ptwarm_test() from ptwarm.cmake
# (parts are included in sorted order: ptwarm before tlbmig).
target_sources(tlblab PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/../src/tlbmig/tlbmig.c
  ${CMAKE_CURRENT_LIST_DIR}/../src/tlbmig/prim_linux.c)

set(test_tlbmig_CASES migration)
tlblab_ptwarm_test(test_tlbmig ${CMAKE_CURRENT_LIST_DIR}/../tests/test_tlbmig.c ${TLBMIG_SRCS})

tlblab_program(migrate_bench ${CMAKE_CURRENT_LIST_DIR}/../bench/migrate_bench.c)
target_link_libraries(migrate_bench PRIVATE m)

# The usage examples of docs/ptwarm.md (tests/test_ptwarm_docs.py keeps the two identical).
tlblab_program(test_ptwarm_example ${CMAKE_CURRENT_LIST_DIR}/../tests/test_ptwarm_example.c)
add_test(NAME ptwarm_docs_example COMMAND test_ptwarm_example)
