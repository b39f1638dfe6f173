# configs/seeds/README.md's bucket-demo line (issue 13 item 22): runs the sweep of that line
# (without --plot, which draws the same summary) and checks each figure the README quotes,
# read from the summary, within its tolerance.
#   cmake -DSTEPSIM=... -DSOURCE_DIR=... -DWORK_DIR=... -P seeds_bucket_demo_check.cmake
file(MAKE_DIRECTORY ${WORK_DIR})
execute_process(COMMAND ${STEPSIM} sweep ${SOURCE_DIR}/configs/seeds/bucket-demo.json
                        --vary parallelism.bucket_cap_mb=0.01:10000:x40 --out ${WORK_DIR}/bucket.csv -j 2
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "stepsim sweep configs/seeds/bucket-demo.json failed (${rc}): ${out}${err}")
endif()
set(summary "${out}${err}")
# check(NAME REGEX EXPECT LO HI): the first group of REGEX in the summary is in [LO, HI], the
# tolerance around the README's figure EXPECT (CMake's LESS/GREATER compare as floating point).
function(check name regex expect lo hi)
  if(NOT summary MATCHES "${regex}")
    message(SEND_ERROR "${name}: the summary has no match for '${regex}':\n${summary}")
    return()
  endif()
  string(REGEX REPLACE "^\\+" "" v "${CMAKE_MATCH_1}")
  if(v LESS lo OR v GREATER hi)
    message(SEND_ERROR "${name}: ${v}, expected ${expect} (in [${lo}, ${hi}])")
  else()
    message("${name}: ${v}, expected ${expect} (in [${lo}, ${hi}]): ok")
  endif()
endfunction()
set(lat "latency-bound +bucket_cap_mb 0.01 to [0-9.]+ \\(")
# "0.01 MiB: 113 buckets (one per tensor)": the latency-bound range starts at 0.01 with 113.
check(tiny_buckets_count "${lat}([0-9]+) to" 113 113 113)
# "+18.7 % step" at 0.01 MiB: the latency-bound range's worst step is its smallest bucket's.
check(tiny_buckets_step "step up to ([-+0-9.]+) % vs the best" 18.7 18.5 18.9)
# "10000 MiB: 2 buckets, +19.1 %": the last-bucket-exposed range ends at 10000 with 2 buckets.
check(huge_buckets_count "last bucket exposed +bucket_cap_mb [0-9.]+ to 10000 \\([0-9]+ to ([0-9]+) buckets" 2 2 2)
check(huge_buckets_step "of comm [0-9. to]+ ms; step [-+0-9.]+ % to ([-+0-9.]+) % vs the best" 19.1 18.9 19.3)
# "sweet spot 34.6–289 MiB (within 2 % of the best, 70.2 MiB)": grid points of x40 (ratio 1.43).
check(sweet_spot_lo "sweet spot +bucket_cap_mb ([0-9.]+) to" 34.6 34.2 35.0)
check(sweet_spot_hi "sweet spot +bucket_cap_mb [0-9.]+ to ([0-9.]+)" 289 286 292)
check(best "best +bucket_cap_mb ([0-9.]+):" 70.2 69.5 70.9)
