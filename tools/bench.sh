#!/usr/bin/env bash
# Benchmarks of issue 7 (figures, not tests): engine events/s, a per_rank Llama-3-70B FSDP step
# on 16,384 ranks (wall time and peak RSS), and symmetric mode at 8 vs 16,384 ranks.
#   tools/bench.sh [BUILD_DIR]      (default: build; needs STEPSIM_BUILD_BENCH=ON, i.e. Google
#                                    Benchmark installed, and /usr/bin/time)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build}"
stepsim="$build/bin/stepsim"
bench="$build/bin/stepsim_bench"
[[ -x "$bench" ]] || { echo "bench.sh: $bench missing (configure with -DSTEPSIM_BUILD_BENCH=ON)" >&2; exit 2; }
scenario="$root/configs/examples/llama3-70b-fsdp-256xh100.json"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

"$bench" --benchmark_filter='BM_EngineEvents|BM_ReplicatedEvents|BM_SymmetricRun' \
  --benchmark_format=json --benchmark_out="$out/bench.json" --benchmark_min_time=0.5s >/dev/null 2>&1 ||
  "$bench" --benchmark_filter='BM_EngineEvents|BM_ReplicatedEvents|BM_SymmetricRun' \
    --benchmark_format=json --benchmark_out="$out/bench.json" >/dev/null
python3 - "$out/bench.json" <<'PY'
import json, sys
runs = {b["name"]: b for b in json.load(open(sys.argv[1]))["benchmarks"]}
def ms(b): return b["real_time"] * {"ms": 1, "us": 1e-3, "ns": 1e-6, "s": 1e3}[b["time_unit"]]
for name, label in (("BM_EngineEvents/1048576", "engine, one graph"), ("BM_ReplicatedEvents/1024", "engine, 1,024 copies")):
    if name in runs:
        print(f"{label:28s} {runs[name]['events_per_s'] / 1e6:8.1f} M events/s   (goal >= 20 M/s on one core)")
a, b = runs.get("BM_SymmetricRun/8"), runs.get("BM_SymmetricRun/16384")
if a and b:
    print(f"symmetric 70B FSDP run()     {ms(a):8.2f} ms at 8 ranks, {ms(b):.2f} ms at 16,384 ranks "
          f"({(ms(b) / ms(a) - 1) * 100:+.1f} %; goal within 10 %)")
PY

# per_rank at 16,384 ranks, without variation (the goal's case) and with 5 % lognormal jitter
# (every copy's events at distinct instants). CPU time is printed too: this machine is shared.
for jitter in none lognormal; do
  extra=()
  [[ $jitter == none ]] || extra=(--set 'sim.jitter={"seed":1,"distribution":"lognormal","cv":0.05}')
  /usr/bin/time -v "$stepsim" run "$scenario" --set parallelism.dp=16384 --set cluster.nodes=null \
    --set sim.rank_mode=per_rank "${extra[@]}" --format json >"$out/report.json" 2>"$out/time.txt"
  python3 - "$out/report.json" "$out/time.txt" "$jitter" <<'PY'
import json, re, sys
r = json.load(open(sys.argv[1]))
t = open(sys.argv[2]).read()
wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (.*)", t).group(1)
parts = [float(x) for x in wall.split(":")]
secs = sum(p * 60 ** i for i, p in enumerate(reversed(parts)))
cpu = float(re.search(r"User time \(seconds\): (\S+)", t).group(1)) + float(re.search(r"System time \(seconds\): (\S+)", t).group(1))
rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", t).group(1)) * 1024
label = "no variation" if sys.argv[3] == "none" else "5 % lognormal jitter"
print(f"per_rank 70B FSDP, 16,384 ranks, {label}: {r['tasks']:,} tasks per rank, {r['events']:,} events; "
      f"process wall {secs:.2f} s, CPU {cpu:.2f} s (run() {r['wall_time_s']:.2f} s), peak RSS {rss / 1e9:.2f} GB "
      f"(goal <= 1 s, <= 2 GB)")
PY
done
