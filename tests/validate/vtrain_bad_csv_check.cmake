# SPDX-License-Identifier: Apache-2.0
# `stepsim accuracy vtrain` on a malformed CSV: exit 2 and one line naming the file, the line,
# the column, the bad value and what was expected.
# Inputs: STEPSIM, CSV (the good fixture), WORK_DIR.
# Without the shared dataset: a skip, or a failure under CI=true.
include(${CMAKE_CURRENT_LIST_DIR}/../support/require_shared.cmake)
stepsim_require_shared("${CSV}")
file(MAKE_DIRECTORY ${WORK_DIR})
file(STRINGS ${CSV} lines)
list(GET lines 0 header)
list(GET lines 1 row)
# hidden_size (column 18) of the first row: 2048 -> 20x8
string(REPLACE ",2048,16,16,1024," ",20x8,16,16,1024," bad_row "${row}")
if(bad_row STREQUAL row)
  message(FATAL_ERROR "fixture's first row changed; update this test")
endif()
file(WRITE ${WORK_DIR}/bad.csv "${header}\n${bad_row}\n")
execute_process(COMMAND ${STEPSIM} accuracy vtrain ${WORK_DIR}/bad.csv
                OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 2)
  message(FATAL_ERROR "expected exit 2, got ${rc}: ${err}")
endif()
if(NOT err MATCHES "bad\\.csv: line 2, column [0-9]+ \\(hidden_size\\): bad value '20x8'; expected an integer")
  message(FATAL_ERROR "unexpected message: ${err}")
endif()
# A missing column names the header line and the column.
string(REPLACE "iteration_time_ms" "time_ms" bad_header "${header}")
file(WRITE ${WORK_DIR}/nocol.csv "${bad_header}\n${row}\n")
execute_process(COMMAND ${STEPSIM} accuracy vtrain ${WORK_DIR}/nocol.csv
                OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 2 OR NOT err MATCHES "nocol\\.csv: line 1: header lacks column 'iteration_time_ms'")
  message(FATAL_ERROR "missing column: expected exit 2 naming the column, got ${rc}: ${err}")
endif()
message(STATUS "ok: ${err}")
