# `stepsim plan` under MPI (issue 17 item 4: "it uses the sweep machinery (threads, MPI)"): the
# same query searched by one process with -j 1 and by NP MPI ranks must give the same JSON,
# byte for byte, printed once, and the same search figures (configurations, simulated) on the
# --timing line, which names the ranks (a bad input: mpi_error_check.cmake).
#   cmake -DSTEPSIM=... -DMPIEXEC=... -DNP=2 -DWORK_DIR=... -P plan_mpi_check.cmake
# Open MPI's settings for a container or CI runner come from the test's environment.
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})
set(query --hardware a100-sxm --gpus 8 --global-batch-tokens 1Mi --seq-len 4096)

execute_process(COMMAND ${STEPSIM} plan --model qwen2.5-32b ${query} --format json -j 1 --timing
                RESULT_VARIABLE rc OUTPUT_VARIABLE one ERROR_VARIABLE one_err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "single-process plan failed (${rc}): ${one}${one_err}")
endif()
execute_process(COMMAND ${MPIEXEC} -n ${NP} ${STEPSIM} plan --model qwen2.5-32b ${query} --format json -j 1 --timing
                RESULT_VARIABLE rc OUTPUT_VARIABLE many ERROR_VARIABLE many_err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${MPIEXEC} -n ${NP} plan failed (${rc}): ${many}${many_err}")
endif()
file(WRITE ${WORK_DIR}/one.json "${one}")
file(WRITE ${WORK_DIR}/mpi.json "${many}")
if(NOT one STREQUAL many)
  message(FATAL_ERROR "the plan of ${NP} MPI ranks differs from the single-process -j 1 plan: "
                      "diff ${WORK_DIR}/one.json ${WORK_DIR}/mpi.json")
endif()
string(REGEX MATCH "^plan: ([0-9]+) configurations in [0-9.]+ s \\([0-9]+ per second\\), ([0-9]+) simulated\n$" m1 "${one_err}")
set(c1 "${CMAKE_MATCH_1}")
set(s1 "${CMAKE_MATCH_2}")
string(REGEX MATCH "^plan: ([0-9]+) configurations in [0-9.]+ s \\([0-9]+ per second\\), ([0-9]+) simulated by ${NP} MPI ranks\n$"
       m2 "${many_err}")
if(NOT m1 OR NOT m2 OR NOT c1 STREQUAL CMAKE_MATCH_1 OR NOT s1 STREQUAL CMAKE_MATCH_2 OR c1 LESS 1000)
  message(FATAL_ERROR "expected one timing line each, the same counts, the second naming ${NP} MPI ranks:\n"
                      "--- one process:\n${one_err}\n--- ${NP} ranks:\n${many_err}")
endif()
string(LENGTH "${one}" bytes)
message("${NP} ranks: plan JSON identical to -j 1 (${bytes} bytes), ${c1} configurations, ${s1} simulated")
