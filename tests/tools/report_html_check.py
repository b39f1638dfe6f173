#!/usr/bin/env python3
# `stepsim run --report FILE.html` (issue 20 item 4): the page's structure against the JSON
# report of the same run, then the page loaded in a real browser, headless Chromium (Debian's
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
check_page(pr_page, pr, ["rank 0 compute", "rank 0 communication", "rank 5 compute", "rank 5 communication"])

# 3. A real browser loads it: DOM after load, console, screenshot.
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
shot = os.path.join(work, "step.png")
subprocess.run([browser] + flags + ["--window-size=1240,1600", "--screenshot=" + shot, url], capture_output=True,
               timeout=120, check=True)
assert os.path.getsize(shot) > 20000, "screenshot suspiciously small"
print("report --html: %d lanes, %d tasks drawn, %d critical, screenshot %s" %
      (len(loaded.lanes), loaded.classes.get("task", 0), loaded.classes.get("critical", 0), shot))
