#!/usr/bin/env python3
# `stepsim kineto` on the shared profiler traces (../shared/data/kineto, read in place): the JSON
# summary is one document of schema stepsim.kineto-summary/1 with every trace of the folder,
# ordered by rank, whose GPU events and NCCL calls match a count made here from the JSON with
# Python's gzip + json; two runs on one trace give the same bytes (determinism); `stepsim compare` on a trace
# prints the kernel-class table. Missing data fails under CI=true, else prints SKIPPED.
import gzip, json, os, re, subprocess, sys

stepsim, data = sys.argv[1], sys.argv[2]
folder = os.path.join(data, "kineto")
if not os.path.isdir(folder):
    if os.environ.get("CI") == "true":
        sys.exit(f"shared dataset missing under CI=true: {folder}")
    print(f"SKIPPED: {folder} missing")
    sys.exit(0)

def run(*args):
    p = subprocess.run([stepsim, *args], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"stepsim {' '.join(args)}: exit {p.returncode}: {p.stderr}")
    return p.stdout

out = run("kineto", folder, "--format", "json")
small = os.path.join(folder, "nccl_parser_config__nccl_data.json.gz")
assert run("kineto", small, "--format", "json") == run("kineto", small, "--format", "json"), "two runs differ"
doc = json.loads(out)
assert doc["schema"] == "stepsim.kineto-summary/1", doc["schema"]
files = sorted(f for f in os.listdir(folder) if f.endswith(".json") or f.endswith(".json.gz"))
assert len(doc["traces"]) == len(files), (len(doc["traces"]), files)
ranks = [t["rank"] for t in doc["traces"]]
assert [r for r in ranks if r is not None] == sorted(r for r in ranks if r is not None), ranks
for t in doc["traces"]:
    d = json.load(gzip.open(t["source"]))
    gpu = [e for e in d["traceEvents"] if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    assert t["gpu_events"] == len(gpu), (t["source"], t["gpu_events"], len(gpu))
    nccl = {}
    for e in gpu:
        m = re.match(r"nccl(?:Dev)?Kernel_([A-Za-z]+)", e["name"])
        if m:
            nccl[m.group(1)] = nccl.get(m.group(1), 0) + 1
    got = {}
    for c in t["collectives"]:
        got[c["op"]] = got.get(c["op"], 0) + c["calls"]
    # calls counted in the summary are those inside steps; every NCCL kernel of these traces is
    assert got == nccl, (t["source"], got, nccl)
    assert all(st["gpu_span_s"] >= 0 and st["wall_s"] >= 0 for st in t["steps"])
text = run("compare", os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "..",
                                   "configs", "examples", "resnet50-ddp-16xv100.json"),
           os.path.join(folder, "ns_resolution_trace__rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"),
           "--set", "parallelism.dp=1", "--set", "cluster.nodes=1", "--set", "cluster.gpus_per_node=1")
assert "matmul (gemm, conv)" in text and "step" in text, text
print(f"ok: {len(doc['traces'])} traces")
