#!/usr/bin/env bash
# Benchmark (not a test): a 1,000-point bucket sweep of the default scenario, printed as
# points/s. Issue 4's target: ≤ 5 s on 2 cores.
#   tools/bench_sweep.sh [STEPSIM] [JOBS]      (defaults: build/bin/stepsim, 2)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
stepsim="${1:-$root/build/bin/stepsim}"
jobs="${2:-2}"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
start=$(date +%s.%N)
"$stepsim" sweep "$root/configs/examples/default.json" \
  --vary parallelism.bucket_cap_mb=0.01:10000:x500 --vary batch.seq_len=2048,8192 \
  -j "$jobs" --out "$out/bench.csv" >/dev/null
end=$(date +%s.%N)
rows=$(($(wc -l <"$out/bench.csv") - 1))
awk -v n="$rows" -v s="$start" -v e="$end" -v j="$jobs" \
  'BEGIN { t = e - s; printf "sweep benchmark: %d points in %.2f s with -j %d = %.0f points/s (target: <= 5 s)\n", n, t, j, n / t }'
