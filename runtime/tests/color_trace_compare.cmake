# ctest script: run color_trace on a committed request sequence and compare its output with the
# committed expected placement (the golden file the simulator's port is also checked against).
# Inputs: EXE, INPUT, EXPECTED.
execute_process(COMMAND ${EXE} --sets 16 --ways 4 --reserved 2 --periods 4
                INPUT_FILE ${INPUT} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "color_trace failed (${rc}): ${err}")
endif()
file(READ ${EXPECTED} want)
if(NOT out STREQUAL want)
  message(FATAL_ERROR "color_trace placement changed.\n--- expected\n${want}\n--- got\n${out}")
endif()
