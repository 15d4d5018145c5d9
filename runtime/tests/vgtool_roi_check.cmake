# Runs the ROI program under tlblab's Valgrind tool with --roi-only=yes and checks the stream's
# framing: the magic word first, a ROI begin and end, and the END word five words before the end
# (END, exit code, then the three counts; see runtime/valgrind/tlblab_main.c).
execute_process(
  COMMAND ${CMAKE_COMMAND} -E env VALGRIND_LIB=${TOOL_DIR}
          ${VALGRIND} -q --tool=tlblab --roi-only=yes --log-fd=2 --out-fd=1 ${PROGRAM}
  OUTPUT_FILE ${OUT} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "valgrind --tool=tlblab exited with ${rc}")
endif()
file(READ ${OUT} hex HEX)
string(LENGTH "${hex}" n)
string(SUBSTRING "${hex}" 0 16 magic)
if(NOT magic STREQUAL "544c425647543031")
  message(FATAL_ERROR "stream starts with ${magic}, expected the magic TLBVGT01")
endif()
math(EXPR end_at "${n} - 80")
string(SUBSTRING "${hex}" ${end_at} 16 end_word)
if(NOT end_word STREQUAL "0000000000001b00")
  message(FATAL_ERROR "no END word five words before the end (found ${end_word})")
endif()
# The marks' words (tests/test_vgtool.py checks what lies between them, through the decoder).
string(FIND "${hex}" "0000000000001300" roi_begin)
string(FIND "${hex}" "0000000000001700" roi_end)
if(roi_begin LESS 0 OR roi_end LESS roi_begin)
  message(FATAL_ERROR "no ROI begin and end marks in order (${roi_begin}, ${roi_end})")
endif()
message(STATUS "stream of ${n} hex digits: magic, ROI marks and END in place")
