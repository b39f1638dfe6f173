#!/usr/bin/env python3
# `stepsim sweep --format json` (issue 20 item 3): schema stepsim.sweep/1 on stdout, the same
# points as the CSV, the best point and bucket regimes of the text summary, and the same bytes
# on a second run. Usage: sweep_json_check.py STEPSIM SOURCE_DIR WORK_DIR
import csv
import json
import os
import subprocess
import sys

stepsim, source, work = sys.argv[1:4]
os.makedirs(work, exist_ok=True)
scenario = os.path.join(source, "configs/examples/resnet50-ddp-16xv100.json")
args = [stepsim, "sweep", scenario, "--vary", "parallelism.bucket_cap_mb=1,5,25,100", "-j", "1"]


def run(extra):
    return subprocess.run(args + extra, check=True, capture_output=True, text=True).stdout


out = run(["--format", "json"])
assert out == run(["--format", "json"]), "two runs gave different JSON"
doc = json.loads(out)
assert doc["schema"] == "stepsim.sweep/1"
assert doc["points"] == 4 and doc["ran"] == 4 and doc["failed"] == 0, doc
rows = doc["rows"]
assert [r["parallelism.bucket_cap_mb"] for r in rows] == [1, 5, 25, 100], rows
# The CSV of the same sweep holds the same step times.
csv_path = os.path.join(work, "sweep.csv")
run(["--out", csv_path])
with open(csv_path) as f:
    table = list(csv.DictReader(f))
for r, c in zip(rows, table):
    assert abs(r["step_time_s"] - float(c["step_time_s"])) <= 1e-12 * r["step_time_s"], (r["step_time_s"], c["step_time_s"])
# Best by tokens_per_s (higher is better) is the point with the largest value.
best = max(range(4), key=lambda i: rows[i]["tokens_per_s"])
assert doc["best"]["point"] == best and doc["best"]["value"] == rows[best]["tokens_per_s"], doc["best"]
curve = doc["bucket_curves"][0]
assert curve["best_bucket_cap_mb"] == rows[min(range(4), key=lambda i: rows[i]["step_time_s"])]["parallelism.bucket_cap_mb"]
# With --out the rows stay in the CSV.
doc2 = json.loads(run(["--format", "json", "--out", csv_path]))
assert "rows" not in doc2 and doc2["files"] == [csv_path], doc2.get("files")
print("sweep --format json: %d rows, best bucket_cap_mb %g" % (len(rows), curve["best_bucket_cap_mb"]))
