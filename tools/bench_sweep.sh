#!/usr/bin/env bash
# Benchmark (not a test): a 1,000-point bucket sweep of the default scenario, printed as
# points/s. Issue 4's target: ≤ 5 s on 2 cores. RANKS > 1 runs it under `mpiexec -n RANKS`
# (a stepsim built with MPI; Open MPI as root needs OMPI_ALLOW_RUN_AS_ROOT=1
# OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1), with JOBS threads per rank.
#   tools/bench_sweep.sh [STEPSIM] [JOBS] [RANKS]      (defaults: build/bin/stepsim, 2, 1)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
stepsim="${1:-$root/build/bin/stepsim}"
jobs="${2:-2}"
ranks="${3:-1}"
launcher=()
if [ "$ranks" -gt 1 ]; then launcher=(mpiexec -n "$ranks"); fi
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
start=$(date +%s.%N)
"${launcher[@]}" "$stepsim" sweep "$root/configs/examples/default.json" \
  --vary parallelism.bucket_cap_mb=0.01:10000:x500 --vary batch.seq_len=2048,8192 \
  -j "$jobs" --out "$out/bench.csv" >/dev/null
end=$(date +%s.%N)
rows=$(($(wc -l <"$out/bench.csv") - 1))
awk -v n="$rows" -v s="$start" -v e="$end" -v j="$jobs" -v r="$ranks" -v load="$(cut -d' ' -f1-3 /proc/loadavg)" \
  'BEGIN { t = e - s; printf "sweep benchmark: %d points in %.2f s with %d rank(s) x -j %d = %.0f points/s (target: <= 5 s; load average %s)\n", n, t, r, j, n / t, load }'
