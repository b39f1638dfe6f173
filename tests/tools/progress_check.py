#!/usr/bin/env python3
# Long work tells how long (issue 20 item 5): a per_rank run over half a second shows its
# progress line ("per_rank: done/total tasks (P %), rate, time left") on a terminal's stderr,
# rewritten in place and ended at 100 %; nothing with --quiet, nothing when stderr is a pipe;
# stdout (the report) is the same bytes either way.
#   progress_check.py STEPSIM SOURCE_DIR
import os
import pty
import re
import subprocess
import sys

stepsim, source = sys.argv[1], sys.argv[2]
# 70B FSDP on 2,048 ranks with 5 % jitter: every rank played, ~2.6 M tasks (about a second here; the
# sanitizer stage runs it three times within its 300 s limit, with other tests beside it).
args = [stepsim, "run", os.path.join(source, "configs/examples/llama3-70b-fsdp-256xh100.json"), "--set",
        "parallelism.dp=2048", "--set", "cluster.nodes=null", "--set", "sim.rank_mode=per_rank", "--set",
        'sim.jitter={"seed": 1, "cv": 0.05}', "--format", "json"]


def run_on_tty(extra):
    master, slave = pty.openpty()
    p = subprocess.Popen(args + extra, stdout=subprocess.PIPE, stderr=slave)
    os.close(slave)
    err = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:
            break
        if not chunk:
            break
        err += chunk
    out = p.stdout.read()
    assert p.wait() == 0, err
    os.close(master)
    return out, err.decode()


out_tty, err_tty = run_on_tty([])
lines = [l for l in re.split(r"[\r\n]", err_tty) if l.strip()]
assert lines, "no progress line on a terminal"
assert re.fullmatch(r"per_rank: (\d+)/\1 tasks \(100 %\), \d+ tasks/s\s*", lines[-1]), lines[-1]
assert all(l.startswith("per_rank: ") for l in lines), lines
_, err_quiet = run_on_tty(["--quiet"])
assert err_quiet.strip() == "", err_quiet
piped = subprocess.run(args, capture_output=True, check=True)
assert piped.stderr == b"", piped.stderr
assert piped.stdout == out_tty, "the report differs with a progress line"
print("progress: %d updates, last: %s" % (len(lines), lines[-1].strip()))
