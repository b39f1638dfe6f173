#!/usr/bin/env bash
# Benchmark of issue 17 item 4 (figures, not a test): `stepsim plan`'s search speed.
#   tools/bench_plan.sh [BUILD_DIR]     (default: build)
# Goals: the full search for a 70B model on 256 GPUs in under 10 s, >= 10,000 configurations/s
# on 2 cores. Prints the configurations searched, simulated and the wall time of each query.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
stepsim="${1:-$root/build}/bin/stepsim"
[[ -x "$stepsim" ]] || { echo "bench_plan.sh: $stepsim missing (bash tools/build.sh first)" >&2; exit 2; }
echo "cores: $(nproc)"
while read -r model hw gpus tokens seq; do
  "$stepsim" plan --model "$model" --hardware "$hw" --gpus "$gpus" --global-batch-tokens "$tokens" --seq-len "$seq" \
    --timing 2>&1 >/dev/null | sed "s|^plan:|$model on $gpus x $hw, $tokens tokens:|"
done <<'LIST'
llama3-70b h100-sxm 256 4194304 8192
qwen2.5-32b a100-sxm 8 1048576 4096
llama3-8b h100-sxm 64 2097152 8192
LIST
