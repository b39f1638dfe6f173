#!/usr/bin/env bash
# Benchmark of issue 18 (a figure, not a test): peak memory and time of `stepsim kineto` on a
# ~100 MB profiler trace, against the goal "reading a 100 MB trace stays under 2 x its size in
# memory". The trace is synthesised from a shared one (../shared/data/kineto, read only): its
# traceEvents repeated with every ts shifted past the previous copy, ProfilerStep numbers and
# correlation ids renumbered, until the JSON passes TARGET_MB; written plain and gzipped to a
# temporary folder (removed on exit).
#   tools/bench_kineto.sh [BUILD_DIR] [TARGET_MB]     (defaults: build, 100; needs /usr/bin/time)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build}"
target_mb="${2:-100}"
stepsim="$build/bin/stepsim"
shared="${STEPSIM_SHARED_DATA:-$root/../shared/data}"
src="$shared/kineto/trace_diff__control__control.json.gz"
[[ -x "$stepsim" ]] || { echo "bench_kineto.sh: $stepsim missing (build first)" >&2; exit 2; }
[[ -r "$src" ]] || { echo "bench_kineto.sh: $src missing (the shared datasets)" >&2; exit 2; }
[[ -x /usr/bin/time ]] || { echo "bench_kineto.sh: /usr/bin/time missing (apt install time)" >&2; exit 2; }
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

python3 - "$src" "$out/big.json" "$target_mb" <<'PY'
import gzip, json, re, sys
src, dst, target = sys.argv[1], sys.argv[2], float(sys.argv[3]) * 1e6
d = json.load(gzip.open(src))
events = d.pop("traceEvents")
span = max(e.get("ts", 0) + e.get("dur", 0) for e in events) - min(e["ts"] for e in events if "ts" in e) + 1000
steps = sorted({int(m.group(1)) for e in events if (m := re.match(r"ProfilerStep#(\d+)$", str(e.get("name", ""))))})
corr_span = max(e.get("args", {}).get("correlation", 0) for e in events) + 1
with open(dst, "w") as f:
    f.write("{" + ", ".join(f"{json.dumps(k)}: {json.dumps(v)}" for k, v in d.items()) + ', "traceEvents": [\n')
    written, copy, first = 0, 0, True
    while written < target:
        for e in events:
            e2 = dict(e)
            if "ts" in e2: e2["ts"] = e["ts"] + copy * span
            if e2.get("name", "").startswith("ProfilerStep#"):
                e2["name"] = "ProfilerStep#%d" % (int(e2["name"][13:]) + copy * (len(steps) + 10))
            if "args" in e2 and "correlation" in e2["args"]:
                e2["args"] = dict(e2["args"], correlation=e2["args"]["correlation"] + copy * corr_span)
            line = ("" if first else ",\n") + json.dumps(e2)
            first = False
            f.write(line)
            written += len(line)
        copy += 1
    f.write("\n]}\n")
PY
gzip -k -6 "$out/big.json"
for file in "$out/big.json" "$out/big.json.gz"; do
  size=$(stat -c %s "$file")
  /usr/bin/time -f "%M %e" -o "$out/time" "$stepsim" kineto "$file" > "$out/summary.txt"
  read -r rss_kb secs < "$out/time"
  python3 - "$file" "$size" "$rss_kb" "$secs" "$out/summary.txt" <<'PY'
import sys
name, size, rss_kb, secs, summary = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
events = open(summary).readline().split(" trace, ")[1].split(" events")[0]
print(f"{name.rsplit('/', 1)[1]:14s} {size / 1e6:8.1f} MB on disk, {events} events: peak RSS {rss_kb / 1e3:7.1f} MB "
      f"({rss_kb * 1e3 / size:.2f} x the file; goal < 2 x for 100 MB), {secs:.1f} s")
PY
done
# The fits of `calibrate trace` (collectives, GEMMs, memory-bound kernels, host time) on the same file.
size=$(stat -c %s "$out/big.json")
/usr/bin/time -f "%M %e" -o "$out/time" "$stepsim" calibrate trace "$out/big.json" --hardware a100-40gb > /dev/null
read -r rss_kb secs < "$out/time"
python3 -c "import sys; s, r, t = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]); print(f'calibrate trace {s / 1e6:6.1f} MB plain JSON: peak RSS {r / 1e3:7.1f} MB ({r * 1e3 / s:.2f} x the file), {t:.1f} s')" "$size" "$rss_kb" "$secs"
