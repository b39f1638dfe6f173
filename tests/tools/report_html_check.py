#!/usr/bin/env python3
# `stepsim run --report FILE.html` and `stepsim sweep --report FILE.html` (issue 20 item 4): the
# pages' structure against the JSON report of the same run or sweep, then the pages loaded in a real browser, headless Chromium (Debian's
# `chromium`, installed by tools/setup.sh): its DOM after loading has the timeline lanes, the
# exposed-communication bands, the critical path and the memory lanes, and the browser logs no
# console error. A screenshot is left beside it for a person to look at.
#   report_html_check.py STEPSIM SOURCE_DIR WORK_DIR
import html.parser
import json
import os
import shutil
import subprocess
import sys

stepsim, source, work = sys.argv[1], sys.argv[2], sys.argv[3]
os.makedirs(work, exist_ok=True)
scenario = os.path.join(source, "configs/examples/default.json")


class Page(html.parser.HTMLParser):
    """Counts what the checks need: elements by id and class, lanes, table rows."""

    def __init__(self):
        super().__init__()
        self.ids, self.classes, self.lanes, self.rows = set(), {}, [], {}
        self.scripts = 0
        self.table = None
        self.text = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "script" or any(k in a for k in ("src", "href")) and tag != "a":
            self.scripts += 1  # nothing may be fetched or run
        if "id" in a:
            self.ids.add(a["id"])
        for c in a.get("class", "").split():
            self.classes[c] = self.classes.get(c, 0) + 1
        if tag == "g" and "data-lane" in a:
            self.lanes.append(a["data-lane"])
        if tag == "table":
            self.table = a.get("id", "")
            self.rows[self.table] = 0
        if tag == "tr" and self.table is not None:
            self.rows[self.table] += 1

    def handle_endtag(self, tag):
        if tag == "table":
            self.table = None

    def handle_data(self, data):
        self.text.append(data)


def check_page(path, report, want_lanes):
    p = Page()
    p.feed(open(path, encoding="utf-8").read())
    assert p.scripts == 0, "the page must run and fetch nothing"
    for i in ("timeline", "memory", "breakdown", "step-time", "error-band", "collectives"):
        assert i in p.ids, (i, sorted(p.ids))
    assert p.lanes == want_lanes, p.lanes
    assert p.classes.get("critical", 0) > 0, "critical path not marked"
    for c in ("states", "activations", "buffers", "peak", "capacity"):
        assert p.classes.get(c, 0) >= 1, (c, p.classes)
    # One table row per collective of the report, plus the header.
    assert p.rows["collectives"] == len(report["collectives"]) + 1, (p.rows, len(report["collectives"]))
    text = "".join(p.text)
    assert "%.3f ms" % (report["step_time_s"] * 1e3) in text, "step time differs from the JSON report"
    return p


# 1. The default scenario (symmetric: rank 0's compute and communication lanes).
page = os.path.join(work, "step.html")
out = subprocess.run([stepsim, "run", scenario, "--report", page, "--format", "json"], check=True, capture_output=True,
                     text=True).stdout
report = json.loads(out)
p = check_page(page, report, ["rank 0 compute", "rank 0 communication"])
assert report["exposed_comm_s"] > 0 and p.classes.get("exposed", 0) > 0, "exposed communication not drawn"
# Same input, same bytes.
again = os.path.join(work, "again.html")
subprocess.run([stepsim, "run", scenario, "--report", again], check=True, capture_output=True)
assert open(page, "rb").read() == open(again, "rb").read(), "the page is not deterministic"

# 2. per_rank with a slow rank: rank 0's lanes and the slowest rank's.
pr_page = os.path.join(work, "per_rank.html")
out = subprocess.run([stepsim, "run", scenario, "--set", "sim.rank_mode=per_rank", "--set", "parallelism.dp=16",
                      "--set", 'sim.slow_ranks=[{"rank": 5, "compute_factor": 1.2}]', "--report", pr_page,
                      "--format", "json"], check=True, capture_output=True, text=True).stdout
pr = json.loads(out)
assert pr["per_rank"]["slowest_rank"] == 5, pr["per_rank"]
pp = check_page(pr_page, pr, ["rank 0 compute", "rank 0 communication", "rank 5 compute", "rank 5 communication"])
assert "per-rank" in pp.ids and "slowest rank 5" in "".join(pp.text), "per-rank summary missing"
assert "%.3f ms" % (pr["per_rank"]["straggler_cost_s"] * 1e3) in "".join(pp.text), "straggler cost missing"

# 2b. The same under another placement order (parallelism.order dp-tp: world rank 5 is copy 10 in
# the engine): the page's lanes and the Chrome trace's processes name world ranks, and the trace's
# slowed compute is rank 5's. Under PP (per_rank, --trace) every stage's process is named.
order_page, order_trace = os.path.join(work, "order.html"), os.path.join(work, "order_trace.json")
out = subprocess.run([stepsim, "run", scenario, "--set", "sim.rank_mode=per_rank", "--set", "parallelism.dp=8",
                      "--set", "parallelism.tp=2", "--set", "cluster.nodes=2", "--set", "parallelism.order=dp-tp",
                      "--set", 'sim.slow_ranks=[{"rank": 5, "compute_factor": 3}]', "--report", order_page,
                      "--trace", order_trace, "--format", "json"], check=True, capture_output=True, text=True).stdout
ordered = json.loads(out)
assert ordered["per_rank"]["slowest_rank"] == 5, ordered["per_rank"]
check_page(order_page, ordered, ["rank 0 compute", "rank 0 communication", "rank 5 compute", "rank 5 communication"])
events = json.load(open(order_trace))
events = events["traceEvents"] if isinstance(events, dict) else events
names = {e["pid"]: e["args"]["name"] for e in events if e.get("name") == "process_name"}
compute = {}
for e in events:
    if e.get("ph") == "X" and e.get("cat") == "compute":
        compute[e["pid"]] = compute.get(e["pid"], 0) + e["dur"]
assert names[max(compute, key=compute.get)] == "rank 5", (names, compute)
pp_trace = os.path.join(work, "pp_trace.json")
subprocess.run([stepsim, "run", scenario, "--set", "sim.rank_mode=per_rank", "--set", "parallelism.dp=8",
                "--set", "parallelism.pp=2", "--set", "batch.grad_accum=4", "--set", "cluster.nodes=2",
                "--trace", pp_trace], check=True, capture_output=True)
events = json.load(open(pp_trace))
events = events["traceEvents"] if isinstance(events, dict) else events
names = sorted(e["args"]["name"] for e in events if e.get("name") == "process_name")
assert len(names) == 16 and "rank 8 (PP rank 1)" in names and "rank 7 (PP rank 0)" in names, names

# 3. sweep --report: a bucket sweep's curves with seed 000 §4's regimes shaded, a DP sweep's
# efficiency curves, one table row per point.
bucket_page = os.path.join(work, "buckets.html")
out = subprocess.run([stepsim, "sweep", scenario, "--vary", "parallelism.bucket_cap_mb=0.25,1,5,25,100,400",
                      "--vary", "batch.seq_len=1024,8192", "--set", "parallelism.dp=256", "--report", bucket_page,
                      "--format", "json", "-j", "2"], check=True, capture_output=True, text=True).stdout
sweep = json.loads(out)
assert sweep["files"] == [bucket_page], sweep["files"]
b = Page()
b.feed(open(bucket_page, encoding="utf-8").read())
assert b.scripts == 0
assert b.classes.get("chart", 0) == len(sweep["bucket_curves"]) == 2, (b.classes.get("chart"), len(sweep["bucket_curves"]))
assert b.classes.get("series", 0) == 4, b.classes.get("series")  # step time and exposed communication per curve
assert b.classes.get("sweet-spot", 0) == 2, b.classes
assert b.classes.get("latency-bound", 0) == sum(1 for c in sweep["bucket_curves"] if c["latency_bound"]), b.classes
assert b.rows["points"] == sweep["points"] + 1, (b.rows, sweep["points"])
dp_page = os.path.join(work, "dp.html")
subprocess.run([stepsim, "sweep", scenario, "--vary", "parallelism.dp=8,16,64,256", "--vary", "batch.seq_len=1024,8192",
                "--report", dp_page, "--quiet", "--out", os.path.join(work, "dp.csv"), "-j", "2"], check=True,
               capture_output=True)
d = Page()
d.feed(open(dp_page, encoding="utf-8").read())
assert d.classes.get("chart", 0) == 1 and d.classes.get("series", 0) == 2, d.classes
assert d.classes.get("capacity", 0) == 1, "the 90 % line"

# 4. A real browser loads them: DOM after load, console, screenshot.
browser = shutil.which("chromium") or shutil.which("chromium-browser")
if browser is None:
    sys.exit("report_html_check: headless Chromium not found; tools/setup.sh installs Debian's chromium")
flags = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--enable-logging=stderr", "--v=0",
         "--user-data-dir=" + os.path.join(work, "chromium-profile")]
url = "file://" + os.path.abspath(page)
dom = subprocess.run([browser] + flags + ["--dump-dom", url], capture_output=True, text=True, timeout=120)
assert dom.returncode == 0, dom.stderr[-2000:]
loaded = Page()
loaded.feed(dom.stdout)
assert loaded.lanes == ["rank 0 compute", "rank 0 communication"], loaded.lanes
assert "memory" in loaded.ids and loaded.classes.get("activations", 0) >= 1, "memory lanes missing after load"
assert loaded.classes.get("task", 0) >= report["tasks"] // 2, (loaded.classes.get("task"), report["tasks"])
console = [l for l in dom.stderr.splitlines() if "CONSOLE" in l or "Uncaught" in l]
assert not console, console
sweep_dom = subprocess.run([browser] + flags + ["--dump-dom", "file://" + os.path.abspath(bucket_page)],
                           capture_output=True, text=True, timeout=120)
assert sweep_dom.returncode == 0, sweep_dom.stderr[-2000:]
sl = Page()
sl.feed(sweep_dom.stdout)
assert sl.classes.get("chart", 0) == 2 and sl.classes.get("sweet-spot", 0) == 2, sl.classes
assert not [l for l in sweep_dom.stderr.splitlines() if "CONSOLE" in l or "Uncaught" in l]
shot = os.path.join(work, "step.png")
subprocess.run([browser] + flags + ["--window-size=1240,1600", "--screenshot=" + shot, url], capture_output=True,
               timeout=120, check=True)
assert os.path.getsize(shot) > 20000, "screenshot suspiciously small"
print("report --html: %d lanes, %d tasks drawn, %d critical, screenshot %s" %
      (len(loaded.lanes), loaded.classes.get("task", 0), loaded.classes.get("critical", 0), shot))
