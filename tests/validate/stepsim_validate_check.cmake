# CTest script for stepsim-validate on a machine without a GPU (label `validate`):
#  - bad arguments exit 2 with the flag named, before any device is touched;
#  - a valid mlp-step exits 2 with "no CUDA device found" and the CUDA error string.
# With a GPU present the device check prints SKIPPED (the run itself is tools/validate-on-gpu's).
# -DVALIDATE=path/to/stepsim-validate -DWORK_DIR=scratch folder
file(MAKE_DIRECTORY ${WORK_DIR})
execute_process(COMMAND ${VALIDATE} mlp-step --layers 0 --out ${WORK_DIR}/m.json
                RESULT_VARIABLE rc ERROR_VARIABLE err OUTPUT_VARIABLE out)
if(NOT rc EQUAL 2 OR NOT err MATCHES "--layers: expected an integer in \\[1, 4096\\], got '0'")
  message(FATAL_ERROR "bad --layers: expected exit 2 naming --layers, got ${rc}: ${err}")
endif()
execute_process(COMMAND ${VALIDATE} collective-sweep --ops alltoall
                RESULT_VARIABLE rc ERROR_VARIABLE err OUTPUT_VARIABLE out)
if(NOT rc EQUAL 2 OR NOT err MATCHES "unknown collective 'alltoall'")
  message(FATAL_ERROR "bad --ops: expected exit 2, got ${rc}: ${err}")
endif()
execute_process(COMMAND ${VALIDATE} mlp-step --layers 1 --hidden 64 --ffn 256 --tokens 32 --bucket-mb 1
                        --grad-accum 1 --iters 1 --warmup 0 --out ${WORK_DIR}/m.json
                RESULT_VARIABLE rc ERROR_VARIABLE err OUTPUT_VARIABLE out)
if(rc EQUAL 0)
  message("SKIPPED: a CUDA device is present (mlp-step ran)")
  return()
endif()
if(NOT rc EQUAL 2 OR NOT err MATCHES "no CUDA device found: cudaGetDeviceCount: cuda[A-Za-z]+: .+")
  message(FATAL_ERROR "no GPU: expected exit 2 with 'no CUDA device found: <CUDA error>', got ${rc}: ${err}")
endif()
message("ok: ${err}")
