# SPDX-License-Identifier: Apache-2.0
# Temporary files of the CLI (issue 13 item 14):
#  1. past `ulimit -f` (SIGXFSZ) a write of --trace fails with exit 2 and one error line naming
#     the file and "File too large", and no temporary file is left next to it;
#  2. SIGTERM while `sweep --plot` waits for gnuplot (a stand-in that sleeps) removes
#     gnuplot's private temporary folder, and stepsim dies of SIGTERM (status 143).
#   cmake -DSTEPSIM=... -DSOURCE_DIR=... -DWORK_DIR=... -P temp_files_check.cmake
include(${CMAKE_CURRENT_LIST_DIR}/expect_one_line.cmake)
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR}/out ${WORK_DIR}/tmp ${WORK_DIR}/bin)

# 1. ulimit -f 1: at most 512 or 1024 bytes per file (the shell's block); the trace is larger.
execute_process(
  COMMAND sh -c "ulimit -f 1; exec \"$0\" \"$@\"" ${STEPSIM} run ${SOURCE_DIR}/configs/examples/default.json
          --trace ${WORK_DIR}/out/trace.json
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
expect_one_line("ulimit -f" "${rc}" "${err}" "/out/trace\\.json: error while writing: File too large")
file(GLOB left LIST_DIRECTORIES true ${WORK_DIR}/out/* ${WORK_DIR}/out/.*)
if(left)
  message(FATAL_ERROR "ulimit -f: files left behind: ${left}")
endif()

# 2. SIGTERM during `sweep --plot`. Background jobs of a non-interactive shell ignore SIGINT
# (and stepsim keeps an ignored signal ignored), so SIGTERM is what this sends.
file(WRITE ${WORK_DIR}/bin/gnuplot "#!/bin/sh\necho $$ > ${WORK_DIR}/gnuplot.pid\nexec sleep 30\n")
file(CHMOD ${WORK_DIR}/bin/gnuplot PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE)
set(script [=[
TMPDIR="$W/tmp" PATH="$W/bin:$PATH" "$STEPSIM" sweep "$SRC/configs/examples/default.json" \
  --vary parallelism.dp=8,16 -j 1 --out "$W/out/sweep.csv" --plot "$W/out/sweep.svg" >"$W/sweep.log" 2>&1 &
pid=$!
i=0
while [ ! -s "$W/gnuplot.pid" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done
[ -s "$W/gnuplot.pid" ] || { echo "gnuplot never started"; cat "$W/sweep.log"; kill $pid; exit 1; }
kill -TERM $pid
wait $pid
echo "status=$?"
kill "$(cat "$W/gnuplot.pid")" 2>/dev/null
exit 0
]=])
execute_process(COMMAND ${CMAKE_COMMAND} -E env W=${WORK_DIR} STEPSIM=${STEPSIM} SRC=${SOURCE_DIR} sh -c "${script}"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT out MATCHES "status=143")
  message(FATAL_ERROR "SIGTERM: expected stepsim to die of SIGTERM (status 143), got: ${out}${err}")
endif()
file(GLOB left LIST_DIRECTORIES true ${WORK_DIR}/tmp/* ${WORK_DIR}/tmp/.* ${WORK_DIR}/out/.*)
if(left)
  message(FATAL_ERROR "SIGTERM: temporary files left behind: ${left}")
endif()
message("temp files ok: ${err}")
