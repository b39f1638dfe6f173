# `stepsim sweep --plot` through gnuplot: the SVG is produced and names each series and panel.
# Skips (CTest SKIP_REGULAR_EXPRESSION "SKIPPED:") when gnuplot is not installed.
#   cmake -DSTEPSIM=... -DSOURCE_DIR=... -DWORK_DIR=... -P sweep_plot_check.cmake
find_program(GNUPLOT gnuplot)
if(NOT GNUPLOT)
  message("SKIPPED: gnuplot not found on PATH; `stepsim sweep --plot` needs it (tools/setup.sh installs gnuplot-nox)")
  return()
endif()
file(MAKE_DIRECTORY ${WORK_DIR})
set(svg ${WORK_DIR}/sweep_plot.svg)
file(REMOVE ${svg})
execute_process(
  COMMAND ${STEPSIM} sweep ${SOURCE_DIR}/configs/examples/default.json
          --vary parallelism.bucket_cap_mb=1:1000:x4 --vary batch.seq_len=1024,8192
          --out ${WORK_DIR}/sweep_plot.csv --plot ${svg} -j 2
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "stepsim sweep --plot failed (${rc}): ${out}${err}")
endif()
if(NOT EXISTS ${svg})
  message(FATAL_ERROR "no plot written at ${svg}")
endif()
file(READ ${svg} content)
foreach(want "<svg" "batch.seq_len=1024" "batch.seq_len=8192" "step time (ms)" "exposed communication (ms)"
             "communication busy (ms)" "step time vs the curve's best (%)" "parallelism.bucket_cap_mb (log scale)"
             "shaded: regimes of batch.seq_len=1024" "sweet spot (step within 2 %)" "last bucket exposed")
  string(FIND "${content}" "${want}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "the plot does not contain '${want}'")
  endif()
endforeach()
file(GLOB leftovers ${WORK_DIR}/.sweep_plot.svg.tmp.* ${WORK_DIR}/.sweep_plot.csv.tmp.*)
if(leftovers)
  message(FATAL_ERROR "temporary plot files left behind: ${leftovers}")
endif()
message("plot ok: ${svg}")
