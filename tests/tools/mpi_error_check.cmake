# A bad input under MPI (issue 4 item 4, issue 17 item 4): NP ranks print one error line, the
# one a single process prints, and the job's status is not 0.
#   cmake -DMPIEXEC=... -DNP=2 "-DARGS=/path/stepsim;sweep;..." "-DEXPECT=regex of the line" -P mpi_error_check.cmake
# Open MPI's settings for a container or CI runner come from the test's environment.
execute_process(COMMAND ${MPIEXEC} -n ${NP} ${ARGS} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
# Count lines starting "error:" (the launcher adds its own framed note on a non-zero status).
string(REGEX MATCHALL "(^|\n)error: " starts "${out}${err}")
list(LENGTH starts n)
if(rc EQUAL 0 OR NOT n EQUAL 1 OR NOT "${out}${err}" MATCHES "(^|\n)error: ${EXPECT}")
  message(FATAL_ERROR "expected one error line matching '${EXPECT}' and a non-zero status, got status ${rc} and "
                      "${n} error lines:\n${out}${err}")
endif()
message("one error line, status ${rc}")
