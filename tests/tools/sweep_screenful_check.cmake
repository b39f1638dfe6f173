# SPDX-License-Identifier: Apache-2.0
# Issue 20 item 5: a sweep's text summary stays a screenful however many points (at most three
# curves of each kind in detail, long DP curves cut in the middle), with no progress line when
# stderr is not a terminal, and `--quiet` accepted.
#   cmake -DSTEPSIM=... -DSOURCE_DIR=... -DWORK_DIR=... -P sweep_screenful_check.cmake
file(MAKE_DIRECTORY ${WORK_DIR})
execute_process(
  COMMAND ${STEPSIM} sweep ${SOURCE_DIR}/configs/examples/default.json
          --vary parallelism.dp=8:256:+8 --vary parallelism.bucket_cap_mb=1,5,25,100,400
          --out ${WORK_DIR}/screenful.csv -j 2 --quiet
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "stepsim sweep failed (${rc}): ${out}${err}")
endif()
# 160 points, 32 bucket curves (one per dp) and 5 DP curves (one per bucket size) of 32 rows.
# With --out the summary is on stdout.
string(REGEX MATCHALL "\n" lines "${out}")
list(LENGTH lines n)
if(n GREATER 80)
  message(FATAL_ERROR "the summary has ${n} lines, expected a screenful (at most 80):\n${out}")
endif()
foreach(want "and 29 more bucket curves" "and 2 more DP curves" "(23 more dp values)" "CSV: ")
  string(FIND "${out}" "${want}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "summary lacks '${want}':\n${out}")
  endif()
endforeach()
if(err MATCHES "sweep: [0-9]+/[0-9]+ points")
  message(FATAL_ERROR "a progress line was written to a stderr that is not a terminal:\n${err}")
endif()
