# SPDX-License-Identifier: Apache-2.0
"""tools/export_model.py (issue 16 item 4) on Debian's python3-torch / python3-torchvision (CPU).

* torchvision's ResNet-18 gives PyTorch's own DDP AllReduce sizes: 2,052,000 / 28,852,224 /
  15,853,824 bytes at bucket_cap_mb 25 and 2,052,000 / 38,297,600 / 6,408,448 at 35
  (pytorch/pytorch#48880, fp32 gradients in reverse registration order).
* A small GPT with GPT-2's module layout (small_gpt.py) gives the tensors, in order, that stepsim
  builds from the same config.json, and the same model FLOPs.
"""

import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
EXPORT = os.path.join(ROOT, "tools", "export_model.py")
CLI = os.environ.get("STEPSIM_CLI", os.path.join(ROOT, "build", "bin", "stepsim"))


def export(tmp_path, name, *args):
    out = tmp_path / f"{name}.json"
    subprocess.run([sys.executable, EXPORT, *args, "-o", str(out)], check=True, capture_output=True, text=True)
    return out


def stepsim(*args):
    done = subprocess.run([CLI, *args], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def scenario(tmp_path, model, **parallelism):
    path = tmp_path / "scenario.json"
    path.write_text(json.dumps({
        "model": str(model), "hardware": "v100-sxm2", "optimizer": "sgd",
        "parallelism": {"strategy": "ddp", "dp": 2, **parallelism},
        "batch": {"micro_batch_size": 32, "seq_len": 1}}))
    return str(path)


def allreduce_sizes(report):
    return sorted((c["bytes"] for c in report["collectives"] if c["op"] == "AllReduce" for _ in range(c["count"])),
                  key=lambda b: -b)


@pytest.mark.parametrize("cap, sizes", [(25, [2_052_000, 28_852_224, 15_853_824]),
                                        (35, [2_052_000, 38_297_600, 6_408_448])])
def test_resnet18_gives_pytorchs_own_ddp_buckets(tmp_path, cap, sizes):
    model = export(tmp_path, "resnet18", "torchvision.models:resnet18", "--input", "2,3,224,224")
    report = stepsim("run", scenario(tmp_path, model, bucket_cap_mb=cap), "--format", "json")
    got = [c for c in report["collectives"] if c["op"] == "AllReduce"]
    assert sorted(b for c in got for b in [c["bytes"]] * c["count"]) == sorted(sizes)
    assert report["model"]["parameters"] == 11_689_512
    # ResNet-18's forward: 1.82 GMACs per 224x224 image (torchvision's documented 1.81 GFLOPS).
    layers = json.loads(model.read_text())["layers"]
    assert abs(sum(l["fwd_flops_per_token"] for l in layers) / 2 - 1.82e9) < 0.01e9


def test_small_gpt_matches_the_config_json_path(tmp_path):
    model = export(tmp_path, "gpt", os.path.join(HERE, "small_gpt.py") + ":GPT", "--input", "2,128",
                   "--input-dtype", "long", "--vocab", "1000")
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"model_type": "gpt2", "n_embd": 64, "n_layer": 2, "n_head": 4,
                                  "n_positions": 128, "vocab_size": 1000}))
    want = stepsim("list", "tensors", str(config), "--format", "json")["tensors"]
    got = json.loads(model.read_text())["layers"]
    assert [(t["name"], t["numel"]) for t in want] == \
        [(t["name"], t["numel"]) for layer in got for t in layer["params"]]
    # The same model FLOPs per GPU (linears 2 per weight and token, attention 4 x hidden per key).
    run = {"hardware": "h100-sxm", "parallelism": {"strategy": "ddp", "dp": 2},
           "batch": {"micro_batch_size": 2, "seq_len": 128}, "precision": {"param_dtype": "fp32"}}
    flops = []
    for m in (str(model), str(config)):
        path = tmp_path / "run.json"
        path.write_text(json.dumps({"model": m, **run}))
        flops.append(stepsim("run", str(path), "--format", "json")["model_flops_per_gpu"])
    assert flops[0] == pytest.approx(flops[1], rel=1e-12)


def test_bad_inputs_exit_2_with_one_line_and_keep_existing_files(tmp_path):
    def run(*args):
        return subprocess.run([sys.executable, EXPORT, *args], capture_output=True, text=True)

    for args, message in [
        (["torchvision.models:no_such_net", "--input", "1,3,32,32", "-o", "-"], "has no attribute 'no_such_net'"),
        (["no_such_module_xyz:Net", "--input", "1,3", "-o", "-"], "cannot import 'no_such_module_xyz'"),
        (["resnet18", "--input", "1,3", "-o", "-"], "expected MODULE:NAME"),
        (["torchvision.models:resnet18", "--input", "1,x", "-o", "-"], "expected comma-separated positive integers"),
        (["torchvision.models:resnet18", "--input", "1,3,224,224", "--kwargs", "[1]", "-o", "-"], "expected a JSON object"),
        (["torchvision.models:resnet18", "--input", "5", "-o", "-"], "the forward on --input 5 raised"),
    ]:
        done = run(*args)
        assert done.returncode == 2, (args, done.stderr)
        assert message in done.stderr
        assert done.stderr.count("\n") == 1
    kept = tmp_path / "kept.json"
    kept.write_text("mine")
    done = run("torchvision.models:resnet18", "--input", "1,3,64,64", "-o", str(kept))
    assert done.returncode == 2 and "exists; give --force" in done.stderr
    assert kept.read_text() == "mine"
