# Seed 003's periodic tasks as a real program (runtime/bench/seed003/rt_tasks.c): the Table 6.1
# kernels allocating with glibc malloc or tlb_malloc, each job between tlblab's ROI marks.
# python/tlblab/seeds/s003_tlb_coloring/rt_capture.py builds its own copy (cached by content hash) to capture under
# Valgrind; this target keeps it compiling warning-free with the library. Not part of the library.
tlblab_program(rt_tasks ${CMAKE_CURRENT_SOURCE_DIR}/bench/seed003/rt_tasks.c)
set_target_properties(rt_tasks PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/seed003)
target_link_libraries(rt_tasks PRIVATE Threads::Threads m)

# Figs. 6.13-6.14's pairs (fft, adpcm, fir, Mi's adpcm) as a program of their own, as each of the
# seed's experiments was: in rt_tasks.c their code moved the Table 6.1 program's pages.
tlblab_program(rt_tasks_fig6_13_14 ${CMAKE_CURRENT_SOURCE_DIR}/bench/seed003/rt_tasks_fig6_13_14.c)
set_target_properties(rt_tasks_fig6_13_14 PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/seed003)
target_link_libraries(rt_tasks_fig6_13_14 PRIVATE Threads::Threads m)
