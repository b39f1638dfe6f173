# CTest script for stepsim-validate on a machine without a GPU (label `validate`):
#  - bad arguments exit 2 with the flag named, before any device is touched (a bad --out too);
#  - --plan-only --out F writes the plan to F;
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
# Issue 13 item 23: --plan-only --out F writes the plan to F (it used to go to stdout only);
# a bad --out is refused (exit 2, naming --out) before the GPU probe, so not "no CUDA device".
file(REMOVE ${WORK_DIR}/plan.json)
execute_process(COMMAND ${VALIDATE} mlp-step --layers 2 --hidden 64 --ffn 256 --bucket-mb 1 --plan-only
                        --out ${WORK_DIR}/plan.json
                RESULT_VARIABLE rc ERROR_VARIABLE err OUTPUT_VARIABLE out)
if(NOT rc EQUAL 0 OR NOT EXISTS ${WORK_DIR}/plan.json)
  message(FATAL_ERROR "--plan-only --out: expected exit 0 and ${WORK_DIR}/plan.json, got ${rc}: ${out}${err}")
endif()
file(READ ${WORK_DIR}/plan.json plan)
if(NOT plan MATCHES "\"buckets\"" OR out MATCHES "\"buckets\"")
  message(FATAL_ERROR "--plan-only --out: expected the plan in the file and not on stdout; file: ${plan}\nstdout: ${out}")
endif()
foreach(bad ${WORK_DIR}/no-such-folder/m.json ${WORK_DIR})
  foreach(cmd "mlp-step;--layers;1;--hidden;64;--ffn;256;--tokens;32;--iters;1;--warmup;0" "gemm-sweep" "collective-sweep")
    execute_process(COMMAND ${VALIDATE} ${cmd} --out ${bad} RESULT_VARIABLE rc ERROR_VARIABLE err OUTPUT_VARIABLE out)
    if(NOT rc EQUAL 2 OR NOT err MATCHES "--out: '.*'.*expected a writable file path" OR err MATCHES "CUDA")
      message(FATAL_ERROR "${cmd} --out ${bad}: expected exit 2 naming --out before any CUDA call, got ${rc}: ${err}")
    endif()
  endforeach()
endforeach()
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
