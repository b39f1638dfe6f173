# SPDX-License-Identifier: Apache-2.0
"""The Python module against the CLI it wraps (issue 20 item 1): same scenario, same numbers.

Run by CTest (python.module) with PYTHONPATH=build/python and STEPSIM_CLI=build/bin/stepsim,
from the source folder.
"""
import json
import os
import pathlib
import subprocess

import pytest

import stepsim

CLI = os.environ["STEPSIM_CLI"]
DEFAULT = "configs/examples/default.json"


def cli_json(*args):
    out = subprocess.run([CLI, *args, "--format", "json"], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def test_run_from_a_path_is_the_cli_report():
    report = stepsim.run(DEFAULT)
    assert report == cli_json("run", DEFAULT)
    assert report["schema"] == "stepsim.report/1"
    assert report["step_time_s"] == pytest.approx(0.235045, rel=1e-5)  # tests/golden/default.txt: 235.045 ms


def test_run_from_a_dict_with_overrides():
    scenario = json.loads(pathlib.Path(DEFAULT).read_text())
    as_dict = stepsim.run(scenario, set={"parallelism.strategy": "fsdp", "batch.seq_len": 2048})
    as_list = stepsim.run(pathlib.Path(DEFAULT), set=["parallelism.strategy=fsdp", "batch.seq_len=2048"])
    cli = cli_json("run", DEFAULT, "--set", "parallelism.strategy=fsdp", "--set", "batch.seq_len=2048")
    assert as_dict["step_time_s"] == as_list["step_time_s"] == cli["step_time_s"]
    assert as_dict["scenario"]["parallelism"]["strategy"] == "fsdp"


def test_a_hugging_face_config_inline():
    report = stepsim.run({
        "model": {"name": "Qwen2.5-0.5B", "hf_config": {
            "model_type": "qwen2", "hidden_size": 896, "intermediate_size": 4864, "num_hidden_layers": 24,
            "num_attention_heads": 14, "num_key_value_heads": 2, "vocab_size": 151936, "tie_word_embeddings": True}},
        "hardware": "h100-sxm", "parallelism": {"strategy": "fsdp", "dp": 8}, "batch": {"seq_len": 4096}})
    assert report["model"]["parameters"] == 494_032_768  # HF Qwen/Qwen2.5-0.5B: 0.49B
    assert report["model"]["hf_model_type"] == "qwen2"


def test_input_errors_carry_source_path_and_message():
    with pytest.raises(stepsim.InputError) as e:
        stepsim.run({"model": "llama3-8b", "hardware": "h100-sxm", "parallelism": {"dp": 0}})
    assert e.value.source == "<dict>"
    assert e.value.path == "/parallelism/dp"
    assert "expected an integer" in e.value.message
    assert isinstance(e.value, ValueError)
    with pytest.raises(stepsim.InputError) as e:
        stepsim.run(DEFAULT, set={"parallelism.strategy": "zero4"})
    assert e.value.path == "/parallelism/strategy"
    assert "did you mean" in e.value.message
    with pytest.raises(stepsim.InputError) as e:
        stepsim.run("no/such/scenario.json")
    assert e.value.source == "no/such/scenario.json"
    with pytest.raises(TypeError):
        stepsim.run(42)
    with pytest.raises(stepsim.InputError):
        stepsim.run({"model": "llama3-8b", "hardware": "h100-sxm", "batch": {"seq_len": float("nan")}})


def test_sweep_rows_are_the_cli_rows():
    rows = stepsim.sweep(DEFAULT, vary={"parallelism.dp": [8, 16], "parallelism.bucket_cap_mb": "25:100:x2"}, jobs=2)
    cli = cli_json("sweep", DEFAULT, "--vary", "parallelism.dp=8,16", "--vary", "parallelism.bucket_cap_mb=25:100:x2")
    assert rows == cli["rows"]
    assert [(r["parallelism.dp"], r["parallelism.bucket_cap_mb"]) for r in rows] == [(8, 25), (16, 25), (8, 100), (16, 100)]  # first axis fastest, as --vary
    assert all(r["error"] == "" and r["step_time_s"] > 0 for r in rows)
    # A point that fails keeps its row and says why; the others run.
    mixed = stepsim.sweep(DEFAULT, vary={"parallelism.strategy": ["ddp", "nope"]})
    assert mixed[0]["error"] == "" and "unknown value 'nope'" in mixed[1]["error"]


def test_catalogs():
    assert "h100-sxm" in [p["name"] for p in stepsim.profiles()]
    models = {m["name"]: m for m in stepsim.models()}
    assert models["llama3-8b"]["parameters"] == 8_030_261_248
    assert models["qwen2.5-7b"]["hf_model_type"] == "qwen2"
    assert [s["name"] for s in stepsim.strategies()] == ["ddp", "zero1", "zero2", "zero3", "fsdp", "hsdp"]
    fields = {f["path"]: f for f in stepsim.fields()}
    assert fields["parallelism.bucket_cap_mb"]["default"] == "25"  # PyTorch reducer.hpp kDefaultBucketBytesCap
    assert fields["parallelism.reshard_after_forward"]["applies_to"] == ["fsdp", "hsdp"]


def test_memory_collective_threshold_are_the_cli_answers():
    assert stepsim.memory(params=7.5e9, dp=64) == cli_json("memory", "--params", "7.5e9", "--dp", "64")
    # The ZeRO table (seed 000 §8): 120 / 31.4 / 16.6 / 1.88 GB for 7.5B on 64 GPUs.
    table = stepsim.memory(params=7.5e9, dp=64)
    assert [round(table[s]["total_bytes"] / 1e9, 2) for s in ("ddp", "zero1", "zero2", "zero3")] == [120.0, 31.41, 16.64, 1.88]
    assert stepsim.memory(DEFAULT, set={"parallelism.dp": 128}) == cli_json("memory", DEFAULT, "--set", "parallelism.dp=128")
    assert stepsim.memory(params=7e9, dp=8, hardware="h100-sxm", optimizer_bytes_per_param=8) == \
        cli_json("memory", "--params", "7e9", "--dp", "8", "--hardware", "h100-sxm", "--optimizer-bytes-per-param", "8")
    assert stepsim.collective("allreduce", "h100-sxm", 8, "16GB") == \
        cli_json("collective", "allreduce", "--hardware", "h100-sxm", "--ranks", "8", "--size", "16GB")
    assert stepsim.collective("allgather", "a100-sxm", 64, 1 << 30, algorithm="ring", cost_model="alpha-beta") == \
        cli_json("collective", "allgather", "--hardware", "a100-sxm", "--ranks", "64", "--size", str(1 << 30),
                 "--algorithm", "ring", "--cost-model", "alpha-beta")
    assert stepsim.threshold("h100-sxm", 16384) == cli_json("threshold", "--hardware", "h100-sxm", "--ranks", "16384")
    assert stepsim.threshold("h100-sxm", 16384)["tokens_per_gpu"] == pytest.approx(2472, abs=1)  # README: ≈ 2472
    with pytest.raises(stepsim.InputError) as e:
        stepsim.collective("allreduce", "h100-sxm", 12, "1GB")
    assert e.value.source == "--ranks" and "not a whole number of 8-GPU nodes" in e.value.message
    with pytest.raises(stepsim.InputError):
        stepsim.collective("alltoall", "h100-sxm", 8, "1GB")
    with pytest.raises(stepsim.InputError):
        stepsim.memory(params=-1, dp=8)


def test_notebook_values_and_mistakes():
    numpy = pytest.importorskip("numpy")  # tools/setup.sh installs python3-numpy
    # What a DataFrame hands back: NumPy scalars and arrays are the numbers and lists they hold.
    a = stepsim.run(DEFAULT, set={"parallelism.dp": numpy.int64(16)})
    assert a["step_time_s"] == stepsim.run(DEFAULT, set={"parallelism.dp": 16})["step_time_s"]
    rows = stepsim.sweep(DEFAULT, vary={"parallelism.dp": numpy.array([8, 16])})
    assert [r["parallelism.dp"] for r in rows] == [8, 16]
    # NaN is refused where it is.
    with pytest.raises(stepsim.InputError) as e:
        stepsim.run({"model": "llama3-8b", "hardware": "h100-sxm", "parallelism": {"bucket_cap_mb": float("nan")}})
    assert e.value.path == "/parallelism/bucket_cap_mb" and "finite" in e.value.message
    # One override as a string; no axis at all; too many threads; K that is not a number.
    assert stepsim.run(DEFAULT, set="parallelism.dp=16")["step_time_s"] == a["step_time_s"]
    with pytest.raises(stepsim.InputError):
        stepsim.sweep(DEFAULT, vary={})
    with pytest.raises(stepsim.InputError):
        stepsim.sweep(DEFAULT, vary={"parallelism.dp": [8]}, jobs=5000)
    with pytest.raises(stepsim.InputError):
        stepsim.memory(params=7e9, dp=8, optimizer_bytes_per_param="adam")
    assert stepsim.__version__ and "InputError" in stepsim.__doc__ and "path" in stepsim.InputError.__doc__


def test_ctrl_c_stops_a_long_sweep():
    import signal
    import threading
    import time
    timer = threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT))
    start = time.monotonic()
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        stepsim.sweep(DEFAULT, vary={"parallelism.bucket_cap_mb": "1:200000:+1"}, jobs=2)  # minutes of work
    timer.cancel()
    assert time.monotonic() - start < 10


def test_sweep_report_is_the_cli_summary():
    vary = {"parallelism.bucket_cap_mb": [1, 25, 400], "parallelism.dp": [8, 64]}
    report = stepsim.sweep_report(DEFAULT, vary=vary)
    cli = cli_json("sweep", DEFAULT, "--vary", "parallelism.bucket_cap_mb=1,25,400", "--vary", "parallelism.dp=8,64")
    assert report == cli
    assert report["schema"] == "stepsim.sweep/1" and report["best"]["label"]
    assert len(report["bucket_curves"]) == 2 and len(report["dp_curves"]) == 3
    assert report["rows"] == stepsim.sweep(DEFAULT, vary=vary)
    with pytest.raises(stepsim.InputError):
        stepsim.sweep_report(DEFAULT, vary=vary, metric="no_such_column")


def test_a_bucket_sweep_into_a_dataframe():
    # Issue 20's notebook case: sweep bucket sizes, hand the rows to pandas, pick the fastest
    # (Debian's python3-pandas, installed by tools/setup.sh).
    import pandas
    rows = stepsim.sweep(DEFAULT, vary={"parallelism.bucket_cap_mb": [1, 5, 25, 100, 400]}, jobs=2)
    df = pandas.DataFrame(rows)
    assert list(df["parallelism.bucket_cap_mb"]) == [1, 5, 25, 100, 400]
    assert (df["error"] == "").all() and df["step_time_s"].dtype.kind == "f"
    best = df.loc[df["step_time_s"].idxmin()]
    # The same best point as the sweep summary's (stepsim sweep --metric step_time_s).
    report = stepsim.sweep_report(DEFAULT, vary={"parallelism.bucket_cap_mb": [1, 5, 25, 100, 400]}, metric="step_time_s")
    assert best["parallelism.bucket_cap_mb"] == rows[report["best"]["point"]]["parallelism.bucket_cap_mb"]
    # 1 MB buckets are latency-bound: more, smaller AllReduces, a slower step than the best.
    assert df.loc[0, "step_time_s"] > best["step_time_s"]
