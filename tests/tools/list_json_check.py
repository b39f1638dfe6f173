#!/usr/bin/env python3
# `stepsim list WHAT --format json` (issue 20 item 3): schema stepsim.list/1, one item per
# built-in, with the figures the text list prints. Usage: list_json_check.py STEPSIM
import json
import subprocess
import sys

stepsim = sys.argv[1]


def listing(what, key="name"):
    out = subprocess.run([stepsim, "list", what, "--format", "json"], check=True, capture_output=True, text=True).stdout
    doc = json.loads(out)
    assert doc["schema"] == "stepsim.list/1", doc["schema"]
    assert doc["what"] == what, doc["what"]
    return {item[key]: item for item in doc["items"]}


models = listing("models")
# torchvision's documented count for resnet50; Llama-3.2-1B's tied 1.24 B (models/catalog).
assert models["resnet50"]["parameters"] == 25557032, models["resnet50"]
assert models["resnet50"]["kind"] == "resnet" and models["resnet50"]["sample_unit"] == "images"
assert models["llama3.2-1b"]["kind"] == "transformer" and models["llama3.2-1b"]["sample_unit"] == "tokens"
profiles = listing("profiles")
assert profiles["h100-sxm"]["peak_flops_per_s"] == 989e12, profiles["h100-sxm"]  # datasheet dense BF16
assert profiles["v100-sxm2"]["gpus_per_node"] == 8
strategies = listing("strategies")
assert set(strategies) == {"ddp", "zero1", "zero2", "zero3", "fsdp", "hsdp"}, sorted(strategies)
# The field reference (issue 15 item 2): DDP's bucket cap as PyTorch's reducer.hpp sets it.
fields = listing("fields", "path")
assert fields["parallelism.bucket_cap_mb"]["default"] == "25" and fields["parallelism.bucket_cap_mb"]["applies_to"] == ["ddp"]
assert fields["parallelism.dp"]["required"] is True
text = subprocess.run([stepsim, "list", "fields"], check=True, capture_output=True, text=True).stdout
assert [line.split()[0] for line in text.splitlines()[:-1]] == list(fields), text[:400]
# The text list names the same entries.
text = subprocess.run([stepsim, "list", "models"], check=True, capture_output=True, text=True).stdout
assert [line.split()[0] for line in text.splitlines()] == list(models), text
# Every subcommand's JSON names its schema (README "--format json").
for args, schema in [(["memory", "--params", "7.5e9", "--dp", "64"], "stepsim.memory/1"),
                     (["collective", "allreduce", "--hardware", "h100-sxm", "--ranks", "16", "--size", "1GB"],
                      "stepsim.collective/1"),
                     (["threshold", "--hardware", "h100-sxm", "--ranks", "16"], "stepsim.threshold/1"),
                     (["batch", "--hardware", "h100-sxm", "--ranks", "64"], "stepsim.batch/1")]:
    out = subprocess.run([stepsim] + args + ["--format", "json"], check=True, capture_output=True, text=True).stdout
    assert json.loads(out)["schema"] == schema, (args, out[:200])
print("list --format json: %d models, %d profiles, %d strategies, %d fields" % (len(models), len(profiles), len(strategies),
                                                                              len(fields)))
