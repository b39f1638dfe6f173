# SPDX-License-Identifier: Apache-2.0
# Golden test: runs `stepsim run SCENARIO --format text` from SOURCE_DIR and compares stdout with
# EXPECT byte for byte. With the environment variable STEPSIM_UPDATE_GOLDEN=1 it rewrites EXPECT.
execute_process(COMMAND ${STEPSIM} run ${SCENARIO} --format text
                WORKING_DIRECTORY ${SOURCE_DIR}
                OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "stepsim run ${SCENARIO} failed (${rc}): ${err}")
endif()
if("$ENV{STEPSIM_UPDATE_GOLDEN}" STREQUAL "1")
  file(WRITE ${EXPECT} "${out}")
  message(STATUS "updated ${EXPECT}")
  return()
endif()
if(NOT EXISTS ${EXPECT})
  message(FATAL_ERROR "missing golden file ${EXPECT} (run with STEPSIM_UPDATE_GOLDEN=1)")
endif()
file(READ ${EXPECT} expected)
if(NOT out STREQUAL expected)
  file(WRITE ${EXPECT}.actual "${out}")
  message(FATAL_ERROR "output differs from ${EXPECT}; actual output written to ${EXPECT}.actual\n"
          "review with: diff ${EXPECT} ${EXPECT}.actual")
endif()
