# `stepsim sweep` under MPI (issue 4 item 4): the same sweep run by one process with -j 1 and
# by NP MPI ranks must give byte-identical CSVs and the same summary (but for its timing line),
# printed once (a bad input: mpi_error_check.cmake).
#   cmake -DSTEPSIM=... -DMPIEXEC=... -DNP=2 -DSOURCE_DIR=... -DWORK_DIR=...
#         "-DVARY=--vary;a=1,2;--vary;b=3,4" -P sweep_mpi_check.cmake
# Open MPI's settings for a container or CI runner (run as root, loopback only, more ranks
# than cores) come from the test's environment (OMPI_ALLOW_RUN_AS_ROOT, OMPI_MCA_btl, ...).
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})
set(scenario ${SOURCE_DIR}/configs/examples/default.json)

execute_process(COMMAND ${STEPSIM} sweep ${scenario} ${VARY} -j 1 --out ${WORK_DIR}/one.csv
                WORKING_DIRECTORY ${WORK_DIR} RESULT_VARIABLE rc OUTPUT_VARIABLE one ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "single-process sweep failed (${rc}): ${one}${err}")
endif()
execute_process(COMMAND ${MPIEXEC} -n ${NP} ${STEPSIM} sweep ${scenario} ${VARY} -j 2 --out ${WORK_DIR}/mpi.csv
                WORKING_DIRECTORY ${WORK_DIR} RESULT_VARIABLE rc OUTPUT_VARIABLE many ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${MPIEXEC} -n ${NP} sweep failed (${rc}): ${many}${err}")
endif()
file(READ ${WORK_DIR}/one.csv a)
file(READ ${WORK_DIR}/mpi.csv b)
if(NOT a STREQUAL b)
  message(FATAL_ERROR "the CSV of ${NP} MPI ranks differs from the single-process -j 1 CSV: "
                      "diff ${WORK_DIR}/one.csv ${WORK_DIR}/mpi.csv")
endif()
# Summaries: equal once the timing line and file names are masked; rank 0 alone prints.
foreach(v one many)
  string(REGEX REPLACE "do not fit in memory;[^\n]*" "do not fit in memory; TIMING" ${v} "${${v}}")
  string(REGEX REPLACE "(one|mpi)\\.csv" "FILE.csv" ${v} "${${v}}")
endforeach()
if(NOT one STREQUAL many)
  message(FATAL_ERROR "summaries differ:\n--- one process:\n${one}\n--- ${NP} ranks:\n${many}")
endif()
if(NOT err STREQUAL "")
  message(FATAL_ERROR "the MPI run wrote to stderr:\n${err}")
endif()
# The grid's invalid points keep their rows and messages (asserted when the grid has one).
string(REGEX MATCHALL "expected an integer in \\[1, [0-9]+\\], got -3" bad "${b}")
list(LENGTH bad nbad)
if(VARY MATCHES "=-3|,-3" AND nbad EQUAL 0)
  message(FATAL_ERROR "the invalid point dp=-3 has no error row in ${WORK_DIR}/mpi.csv")
endif()
string(REGEX MATCHALL "\n" rows "${b}")
list(LENGTH rows nrows)
message("${NP} ranks: CSV identical to -j 1 (${nrows} lines, ${nbad} invalid-point rows), summary identical")
