# SPDX-License-Identifier: Apache-2.0
# Determinism test (issue 8): runs `stepsim ARGS` twice from SOURCE_DIR and requires
# byte-identical stdout (reports carry no wall time: `run --timing` prints it on stderr).
#   cmake -DSTEPSIM=... -DSOURCE_DIR=... "-DARGS=run|configs/examples/x.json|--format|json" -P run_twice.cmake
#   (arguments separated by |)
string(REPLACE "|" ";" ARGS "${ARGS}")
foreach(i 1 2)
  execute_process(COMMAND ${STEPSIM} ${ARGS} WORKING_DIRECTORY ${SOURCE_DIR}
                  OUTPUT_VARIABLE out${i} ERROR_VARIABLE err${i} RESULT_VARIABLE rc${i})
  if(NOT rc${i} EQUAL 0)
    message(FATAL_ERROR "stepsim ${ARGS} failed (${rc${i}}): ${err${i}}")
  endif()
endforeach()
if(out1 STREQUAL "")
  message(FATAL_ERROR "stepsim ${ARGS} printed nothing")
endif()
if(NOT out1 STREQUAL out2)
  string(REPLACE ";" "_" tag "${ARGS}")
  string(REGEX REPLACE "[^A-Za-z0-9_.-]" "_" tag "${tag}")
  file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/${tag}.run1 "${out1}")
  file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/${tag}.run2 "${out2}")
  message(FATAL_ERROR "two runs of stepsim ${ARGS} differ; outputs written to "
          "${CMAKE_CURRENT_BINARY_DIR}/${tag}.run1 and .run2")
endif()
message(STATUS "stepsim ${ARGS}: two runs byte-identical")
