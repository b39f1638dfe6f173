# SPDX-License-Identifier: Apache-2.0
# Inputs the negative corpus (errors.json, one argv per row) cannot express (issue 13 items
# 12, 13, 16, 17): each must end with exit 2 and ONE error line, never a crash or terminate:
#  1. a 1e6-point sweep under `ulimit -v 2000000`: refused up front with the memory figure;
#  2. `-j 4096` under the same limit: thread creation fails, one line naming -j;
#  3. `--set` with bytes that are not UTF-8: one stepsim line (not a JSON library message);
#  4. a 65,000-deep `--set` value: refused with the file nesting limit, naming the flag;
#  5. `--trace /dev/stdout > FILE`: the output would replace the redirected report;
#  6. a 100 kB `--set` value: the error line echoes at most ~1 kB of it.
#   cmake -DSTEPSIM=... -DSOURCE_DIR=... -DWORK_DIR=... -P input_limits_check.cmake
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})
set(scenario ${SOURCE_DIR}/configs/examples/default.json)

include(${CMAKE_CURRENT_LIST_DIR}/expect_one_line.cmake)

# 1–2 need `ulimit -v`, which an ASan build cannot start under (its shadow memory reserves
# terabytes of address space): the Release suite checks them; SANITIZED=ON skips them.
if(NOT SANITIZED)
# 1. 1e6 points × ~12 kB of results = ~12 GB > 2 GB of address space.
execute_process(
  COMMAND sh -c "ulimit -v 2000000; exec \"$0\" \"$@\"" ${STEPSIM} sweep ${scenario}
          --vary parallelism.bucket_cap_mb=1:1000000:+1 -j 1 --out ${WORK_DIR}/big.csv
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
expect_one_line("1e6-point sweep" "${rc}" "${err}" "a sweep of 1000000 points .* needs about [0-9.]+ GB of memory, more than the")

# 2. 4096 threads of 8 MiB stacks do not fit in 2 GB of address space.
execute_process(
  COMMAND sh -c "ulimit -v 2000000; exec \"$0\" \"$@\"" ${STEPSIM} sweep ${scenario}
          --vary parallelism.bucket_cap_mb=1:5000:+1 -j 4096 --out ${WORK_DIR}/threads.csv
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
expect_one_line("-j 4096" "${rc}" "${err}" "-j: could not start thread [0-9]+ of 4096 .*use a smaller -j")
else()
  message(STATUS "sanitized build: the two ulimit -v checks run in the Release suite only")
endif()

# 3. Invalid UTF-8 (0xFF) in a --set value.
execute_process(
  COMMAND sh -c "exec \"$0\" run \"$1\" --set \"name=ab$(printf '\\377')\"" ${STEPSIM} ${scenario}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
expect_one_line("invalid UTF-8" "${rc}" "${err}" "--set name=ab.*: byte 2 of the value of 'name' is 0xFF, which is not valid UTF-8")

# 4. 65,000 levels of arrays (130 kB, under the 128 KiB argument limit).
string(REPEAT "[" 65000 open)
string(REPEAT "]" 65000 close)
execute_process(COMMAND ${STEPSIM} run ${scenario} --set "parallelism=${open}${close}"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
expect_one_line("65,000-deep --set" "${rc}" "${err}" "--set parallelism=\\[\\[.*: the value of 'parallelism' is nested deeper than 256 levels")
execute_process(COMMAND ${STEPSIM} sweep ${scenario} --vary "parallelism=${open}${close}"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
expect_one_line("65,000-deep --vary" "${rc}" "${err}" "--vary: .*nested deeper than 256 levels")

# 5. --trace /dev/stdout while stdout is redirected to a file that receives the report.
execute_process(
  COMMAND sh -c "exec \"$0\" run \"$1\" --trace /dev/stdout > \"$2\"" ${STEPSIM} ${scenario} ${WORK_DIR}/report.txt
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
expect_one_line("--trace /dev/stdout" "${rc}" "${err}" "/dev/stdout: is this process's standard output \\(a file\\)")

# 6. A 100 kB value is not echoed whole.
string(REPEAT "x" 100000 long)
execute_process(COMMAND ${STEPSIM} run ${scenario} --set "model=${long}"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
expect_one_line("100 kB --set" "${rc}" "${err}" "\\.\\.\\.")
string(LENGTH "${err}" len)
if(len GREATER 1200)
  message(FATAL_ERROR "100 kB --set: the error line is ${len} bytes; expected at most ~1 kB")
endif()
message(STATUS "input limits: all checks passed")
