// SPDX-License-Identifier: Apache-2.0
// `stepsim sweep`: run a scenario over a grid of overrides, write the CSV, plot it with
// gnuplot, print the summary. The grid, runner, CSV and summary live in models/sweep.hpp.
#include "tools/commands.hpp"

#include "models/report_html.hpp"
#include "models/sweep.hpp"
#include "tools/mpi_partition.hpp"
#include "sim/support/atomic_file.hpp"
#include "sim/support/error.hpp"
#include "sim/support/temp_files.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <exception>
#include <memory>
#include <optional>
#include <sstream>
#include <thread>

extern char** environ;

namespace stepsim::tools {

namespace {

struct SweepArgs {
  std::string scenario;
  std::vector<std::string> varies;
  std::vector<std::string> sets;
  std::string out;
  std::string plot;
  std::string report;  // --report FILE.html
  std::string metric = "tokens_per_s";
  std::string format = "text";
  unsigned threads = 0;
  bool quiet = false;  ///< --quiet: no progress line
};

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

/// Path of an executable `name` on $PATH, or "" when there is none.
std::string find_on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

std::string extension_of(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return ext;
}

/// A gnuplot string literal: single quotes, '' for a quote.
std::string gp_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("''") : std::string(1, c);
  return q + "'";
}

/// gnuplot script: four panels (step time in ms and relative to its curve's best, exposed and
/// busy communication in ms) against the first axis, one line per combination of the other
/// axes; log x for log-spaced or wide positive axes; non-numeric first axes become labelled
/// tics. A bucket sweep shades the first curve's regimes (seed 000 §4) on every panel.
std::string gnuplot_script(const models::SweepResult& r, const models::SweepSummary& summary,
                           const std::string& terminal, const std::string& output) {
  const models::SweepAxis& x = r.axes.front();
  std::vector<double> xs;
  bool numeric = true;
  for (const auto& v : x.values) {
    char* end = nullptr;
    const double d = std::strtod(v.c_str(), &end);
    numeric = numeric && end && *end == '\0' && std::isfinite(d);
    xs.push_back(d);
  }
  const bool positive = numeric && std::all_of(xs.begin(), xs.end(), [](double d) { return d > 0; });
  const double lo = positive ? *std::min_element(xs.begin(), xs.end()) : 0;
  const double hi = positive ? *std::max_element(xs.begin(), xs.end()) : 0;
  const bool logx = positive && (x.log_spaced || hi / lo >= 100);

  std::string s = fmt::format("set terminal {}\nset output {}\n", terminal, gp_quote(output));
  // One datablock per curve: x (or value index), step ms, exposed ms, comm ms, label, step
  // relative to the curve's best in %.
  const std::size_t per_curve = x.values.size();
  const std::size_t curves = r.points.size() / per_curve;
  std::vector<std::string> titles;
  std::vector<bool> has_data(curves, false);
  for (std::size_t c = 0; c < curves; ++c) {
    std::string title;
    for (std::size_t a = 1; a < r.axes.size(); ++a)
      if (!models::moves_with(r.axes, 0, a))
        title += (title.empty() ? "" : ", ") + r.axes[a].path + "=" + r.points[c * per_curve].values[a];
    titles.push_back(title.empty() ? "step" : title);
    s += fmt::format("$curve{} << EOD\n", c);
    double best_step = 0;
    for (std::size_t k = 0; k < per_curve; ++k)
      if (const auto step = r.number(c * per_curve + k, "step_time_s"); step && (best_step == 0 || *step < best_step))
        best_step = *step;
    for (std::size_t k = 0; k < per_curve; ++k) {
      const std::size_t i = c * per_curve + k;  // first axis fastest: one curve is consecutive
      const auto step = r.number(i, "step_time_s"), exposed = r.number(i, "exposed_comm_s");
      const auto comm = r.number(i, "comm_time_s");
      if (!step || !exposed || !comm) continue;
      has_data[c] = true;
      s += fmt::format("{} {} {} {} \"{}\" {}\n", numeric ? fmt::format("{}", xs[k]) : std::to_string(k), *step * 1e3,
                       *exposed * 1e3, *comm * 1e3, x.values[k], (*step / best_step - 1) * 100);
    }
    s += "EOD\n";
  }
  std::string title = "stepsim sweep of " + r.source;
  std::string labels;
  if (!summary.bucket_curves.empty() && numeric && x.path == "parallelism.bucket_cap_mb") {
    // Shaded x ranges (transparent, so overlaps show) with their names on the first panel.
    const auto& c = summary.bucket_curves.front();
    int n = 0;
    auto shade = [&](const models::BucketCurve::Regime& g, const char* color, const std::string& name, double y) {
      // Half a grid step beyond each end, so a one-point regime is visible.
      const double pad = logx ? std::pow(hi / lo, 0.5 / std::max<double>(1, static_cast<double>(xs.size()) - 1)) : 1;
      const double x0 = logx ? g.lo_mb / pad : g.lo_mb, x1 = logx ? g.hi_mb * pad : g.hi_mb;
      s += fmt::format("set object {} rect from first {}, graph 0 to first {}, graph 1 behind fc rgb '{}' "
                       "fs transparent solid 0.18 noborder\n", ++n, x0, x1, color);
      labels += fmt::format("set label {} {} at first {}, graph {} center front\n", n, gp_quote(name),
                            logx ? std::sqrt(x0 * x1) : (x0 + x1) / 2, y);
    };
    if (c.latency_bound) shade(*c.latency_bound, "#d62728", "latency-bound (comm time)", 0.90);
    shade(c.sweet_spot, "#2ca02c", "sweet spot (step within 2 %)", 0.75);
    if (c.last_bucket_exposed) shade(*c.last_bucket_exposed, "#ff7f0e", "last bucket exposed", 0.60);
    title += "; shaded: regimes of " + (c.series.empty() ? std::string("the sweep") : c.series);
  }
  s += fmt::format("set multiplot layout 4,1 title {}\n", gp_quote(title));
  s += "set grid\nset key outside right top\nset style data linespoints\n";
  if (logx) s += "set logscale x\n";
  s += fmt::format("set xlabel {}\n", gp_quote(x.path + (logx ? " (log scale)" : "")));
  const std::string tics = numeric ? "" : ":xtic(5)";
  bool first_panel = true;
  for (const auto& [col, ylabel] : {std::pair{2, "step time (ms)"}, std::pair{6, "step time vs the curve's best (%)"},
                                    std::pair{3, "exposed communication (ms)"}, std::pair{4, "communication busy (ms)"}}) {
    s += first_panel ? labels : std::string("unset label\n");
    first_panel = false;
    s += fmt::format("set ylabel {}\nplot ", gp_quote(ylabel));
    bool first = true;
    for (std::size_t c = 0; c < curves; ++c) {
      if (!has_data[c]) continue;
      s += fmt::format("{}$curve{} using 1:{}{} title {}", first ? "" : ", ", c, col, tics, gp_quote(titles[c]));
      first = false;
    }
    s += "\n";
  }
  s += "unset multiplot\nset output\n";
  return s;
}

/// The line of gnuplot's stderr worth quoting: the first naming a script line ("... line 12:
/// undefined variable"), else the first non-blank one.
std::string gnuplot_message(const std::string& err) {
  std::string first;
  std::istringstream lines(err);
  for (std::string line; std::getline(lines, line);) {
    const auto b = line.find_first_not_of(" \t\r"), e = line.find_last_not_of(" \t\r");
    if (b == std::string::npos || line[b] == '^') continue;
    line = line.substr(b, e - b + 1);
    if (line.find(" line ") != std::string::npos && line.find(": ") != std::string::npos) return line;
    if (first.empty()) first = line;
  }
  return first;
}

/// Renders the plot with gnuplot into memory: gnuplot reads its script from a file in a
/// private temporary directory and writes the image there; its stdout goes to /dev/null and
/// its stderr is captured, so nothing of it reaches our stdout (where the CSV may be).
/// @throws InputError "--plot: gnuplot exited with status N: FIRST ERROR LINE" (or "was
///         killed by signal N") when it fails or writes nothing.
std::string render_plot(const models::SweepResult& r, const models::SweepSummary& summary, const std::string& path) {
  const std::string terminal = extension_of(path) == ".png"
                                   ? "pngcairo size 1000,1400 noenhanced font 'sans,10'"
                                   : "svg size 1000,1400 dynamic noenhanced font 'sans,11' background rgb 'white'";
  // Private (mkdtemp, 0700), so the fixed names inside are safe; registered, so a SIGTERM or
  // SIGINT removes the files and the folder too (stepsim_main.cpp).
  TempDir dir("stepsim-plot", "--plot");
  const std::string image = dir.file("plot" + extension_of(path));
  const std::string script_path = dir.file("plot.gp"), err_path = dir.file("stderr.txt");
  {
    std::ofstream script(script_path, std::ios::binary);
    script << gnuplot_script(r, summary, terminal, image);
    if (!script.flush()) throw InputError("--plot", "", "cannot write the gnuplot script to " + dir.path());
  }
  const std::string gnuplot = find_on_path("gnuplot");
  posix_spawn_file_actions_t actions;
  ::posix_spawn_file_actions_init(&actions);
  ::posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  ::posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  ::posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  std::vector<char*> argv{const_cast<char*>(gnuplot.c_str()), const_cast<char*>(script_path.c_str()), nullptr};
  // The CLI ignores SIGXFSZ (stepsim_main.cpp); gnuplot gets the default back.
  posix_spawnattr_t attr;
  ::posix_spawnattr_init(&attr);
  sigset_t defaults;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGXFSZ);
  ::posix_spawnattr_setsigdefault(&attr, &defaults);
  ::posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF);
  pid_t pid = 0;
  const int spawn = ::posix_spawn(&pid, gnuplot.c_str(), &actions, &attr, argv.data(), environ);
  ::posix_spawn_file_actions_destroy(&actions);
  ::posix_spawnattr_destroy(&attr);
  if (spawn != 0) throw InputError("--plot", "", fmt::format("cannot start {}: {}", gnuplot, std::strerror(spawn)));
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  auto slurp = [](const std::string& file) {
    std::ifstream in(file, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
  };
  const std::string why = gnuplot_message(slurp(err_path));
  const std::string detail = why.empty() ? "" : ": " + why;
  if (WIFSIGNALED(status))
    throw InputError("--plot", "", fmt::format("gnuplot was killed by signal {} ({}) while plotting '{}'{}",
                                               WTERMSIG(status), ::strsignal(WTERMSIG(status)), path, detail));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw InputError("--plot", "", fmt::format("gnuplot exited with status {} while plotting '{}'{}",
                                               WIFEXITED(status) ? WEXITSTATUS(status) : -1, path, detail));
  std::string bytes = slurp(image);
  if (bytes.empty()) throw InputError("--plot", "", fmt::format("gnuplot wrote no plot for '{}'{}", path, detail));
  return bytes;
}

std::string pct(double ratio) { return fmt::format("{:+.1f} %", (ratio - 1) * 100); }

// The text summary stays a screenful however many points (issue 20 item 5): at most this many
// curves of each kind in detail and this many rows of a DP curve; `--format json` has them all.
constexpr std::size_t kCurvesShown = 3;
constexpr std::size_t kDpRowsShown = 10;

std::string more_curves(std::size_t left, const char* kind) {
  return fmt::format("  ... and {} more {} {} (every curve: stepsim sweep --format json; every point: the CSV)\n", left,
                     kind, left == 1 ? "curve" : "curves");
}

std::string summary_text(const models::SweepResult& r, const models::SweepSummary& s, const std::string& workers,
                         double wall_s) {
  std::string out;
  std::string shape;
  for (const auto& [name, values] : models::grid_dimensions(r.axes))
    shape += fmt::format("{}{} ({})", shape.empty() ? "" : " x ", name, count_of(values, "value"));
  out += fmt::format("sweep of {}: {} over {}\n", r.source, count_of(s.points, "point"), shape);
  out += fmt::format("  {} ran, {} failed (see the error column), {} do not fit in memory; {}, {:.2f} s ({:.0f} points/s)\n",
                     s.points - s.failed, s.failed, s.not_fitting, workers, wall_s, wall_s > 0 ? s.points / wall_s : 0.0);
  if (s.best) {
    const std::size_t b = *s.best;
    out += fmt::format("best {} ({} is better): {:.6g} at {}\n", s.metric, s.minimize ? "lower" : "higher",
                       *r.number(b, s.metric), r.label(b));
    out += fmt::format("  step {:.3f} ms, exposed comm {:.3f} ms, {:.4g} tokens/s, MFU {:.1f} %\n",
                       r.number(b, "step_time_s").value_or(0) * 1e3, r.number(b, "exposed_comm_s").value_or(0) * 1e3,
                       r.number(b, "tokens_per_s").value_or(0), r.number(b, "mfu").value_or(0) * 100);
    // A whole-job metric across points of different sizes (a tp axis alone grows the world).
    std::optional<double> lo, hi;
    for (std::size_t i = 0; i < r.points.size(); ++i)
      if (const auto g = r.number(i, "gpus")) {
        lo = lo ? std::min(*lo, *g) : *g;
        hi = hi ? std::max(*hi, *g) : *g;
      }
    if (lo && hi && *lo != *hi && s.metric.find("per_gpu") == std::string::npos && s.metric != "mfu")
      out += fmt::format("  note: the points run on {:g} to {:g} GPUs (the gpus column); --metric tokens_per_s_per_gpu "
                         "compares them per GPU\n", *lo, *hi);
  } else {
    out += "best: none (no point ran and fit in memory)\n";
  }
  if (!s.bucket_curves.empty()) {
    out += fmt::format("bucket sweep (seed 000 §4): three regimes per curve, each with the metric that shows it\n"
                       "  latency-bound = comm time >= {:g}x the curve's least; sweet spot = step time within 2 % of the "
                       "best;\n  last bucket exposed = exposed comm >= {:g} % of comm time\n",
                       models::BucketCurve::kLatencyCommFactor, models::BucketCurve::kExposedShare * 100);
    // "a to b", or "a" when both print the same.
    auto span = [](const std::string& a, const std::string& b) { return a == b ? a : a + " to " + b; };
    auto range = [&](const models::BucketCurve::Regime& g) {
      return fmt::format("bucket_cap_mb {} ({} buckets)", span(fmt::format("{:g}", g.lo_mb), fmt::format("{:g}", g.hi_mb)),
                         span(fmt::format("{:g}", g.buckets_lo), fmt::format("{:g}", g.buckets_hi)));
    };
    auto ms = [&](double a, double b) { return span(fmt::format("{:.3f}", a * 1e3), fmt::format("{:.3f}", b * 1e3)) + " ms"; };
    for (std::size_t ci = 0; ci < s.bucket_curves.size(); ++ci) {
      const auto& c = s.bucket_curves[ci];
      if (ci == kCurvesShown) {
        out += more_curves(s.bucket_curves.size() - ci, "bucket");
        break;
      }
      out += fmt::format("  {}\n", c.series.empty() ? "all points" : c.series);
      out += fmt::format("    best                 bucket_cap_mb {:g}: step {:.3f} ms, comm {:.3f} ms, exposed {:.3f} ms\n",
                         c.best_bucket_cap_mb, c.best_step_time_s * 1e3, c.at_best.comm_time_s * 1e3,
                         c.at_best.exposed_comm_s * 1e3);
      if (const auto& g = c.latency_bound) {
        // Step time is what users pay; say plainly when backward hides the latency.
        const bool hidden = g->step_max_s <= c.best_step_time_s * 1.02;
        out += fmt::format("    latency-bound        {}:\n"
                           "                         comm time {} ({} over the least, {:.3f} ms);\n"
                           "                         exposed comm up to {:.3f} ms ({} over the least); step up to {} vs the best{}\n",
                           range(*g), ms(g->comm_min_s, g->comm_max_s),
                           span(pct(g->comm_min_s / c.min_comm_time_s), pct(g->comm_max_s / c.min_comm_time_s)),
                           c.min_comm_time_s * 1e3, g->exposed_max_s * 1e3,
                           pct(g->exposed_max_s / c.min_exposed_comm_s), pct(g->step_max_s / c.best_step_time_s),
                           hidden ? ":\n                         backward hides it, so it shows in comm time, hardly in step time" : "");
      } else {
        out += fmt::format("    latency-bound        none on this curve: comm time stays below {:g}x its least "
                           "(PyTorch never splits a tensor: at most one bucket per gradient)\n",
                           models::BucketCurve::kLatencyCommFactor);
      }
      out += fmt::format("    sweet spot           {}: step {}, exposed comm {}\n", range(c.sweet_spot),
                         ms(c.sweet_spot.step_min_s, c.sweet_spot.step_max_s),
                         ms(c.sweet_spot.exposed_min_s, c.sweet_spot.exposed_max_s));
      if (const auto& g = c.last_bucket_exposed) {
        out += fmt::format("    last bucket exposed  {}:\n"
                           "                         exposed comm {} of comm {}; step {} vs the best\n",
                           range(*g), ms(g->exposed_min_s, g->exposed_max_s), ms(g->comm_min_s, g->comm_max_s),
                           span(pct(g->step_min_s / c.best_step_time_s), pct(g->step_max_s / c.best_step_time_s)));
      } else {
        out += fmt::format("    last bucket exposed  none on this curve: exposed comm stays below {:g} % of comm time\n",
                           models::BucketCurve::kExposedShare * 100);
      }
    }
  }
  if (!s.dp_curves.empty()) {
    out += "DP scaling: per-GPU tokens/s relative to the smallest dp (weak scaling; 90 % threshold)\n";
    for (std::size_t ci = 0; ci < s.dp_curves.size(); ++ci) {
      const auto& c = s.dp_curves[ci];
      if (ci == kCurvesShown) {
        out += more_curves(s.dp_curves.size() - ci, "DP");
        break;
      }
      out += fmt::format("  {}\n", c.series.empty() ? "all points" : c.series);
      out += fmt::format("    {:>8} {:>12} {:>12} {:>14} {:>10}\n", "dp", "step ms", "exposed ms", "tokens/s", "efficiency");
      // A long curve shows its first and last rows (the JSON summary has them all).
      const std::size_t n = c.points.size();
      for (std::size_t i = 0; i < n; ++i) {
        if (n > kDpRowsShown && i == kDpRowsShown / 2) {
          out += fmt::format("    {:>8} ({} more dp values)\n", "...", n - kDpRowsShown + 1);
          i = n - (kDpRowsShown / 2 - 1) - 1;
          continue;
        }
        const auto& p = c.points[i];
        out += fmt::format("    {:>8g} {:>12.3f} {:>12.3f} {:>14.4g} {:>9.1f}%\n", p.dp, p.step_time_s * 1e3,
                           p.exposed_comm_s * 1e3, p.tokens_per_s, p.efficiency * 100);
      }
      out += c.first_dp_below ? fmt::format("    scaling efficiency drops below 90 % at dp={:g}\n", *c.first_dp_below)
                              : std::string("    scaling efficiency stays at or above 90 % over this range\n");
    }
  }
  return out;
}


/// Checks the arguments that do not need the scenario; returns the parsed axes.
std::vector<models::SweepAxis> checked_axes(const SweepArgs& a) {
  if (a.varies.empty()) throw InputError("--vary", "", "expected at least one --vary PATH=VALUES");
  std::vector<models::SweepAxis> axes;
  for (const auto& v : a.varies) models::append_vary(axes, v);
  if (!a.plot.empty()) {
    const std::string ext = extension_of(a.plot);
    if (ext != ".svg" && ext != ".png")
      throw InputError("--plot", "", fmt::format("expected a file name ending in .svg or .png, got '{}'", a.plot));
    if (find_on_path("gnuplot").empty())
      throw InputError("--plot", "", "gnuplot not found on PATH; install it (tools/setup.sh installs the Debian "
                                     "package gnuplot-nox) or leave out --plot");
  }
  return axes;
}

/// Options for this process's share; the progress line (progress_printer) when `show_progress`
/// and --quiet is not given.
models::SweepOptions sweep_options(const SweepArgs& a, Clock::time_point t0, bool show_progress) {
  models::SweepOptions opt;
  opt.sets = a.sets;
  opt.threads = a.threads;
  if (show_progress && !a.quiet)
    if (auto p = progress_printer("sweep", "points", t0))
      opt.progress = [p](std::size_t done, std::size_t total) { p(done, total); };
  return opt;
}

/// Threads one process uses for `points` points.
unsigned threads_for(const SweepArgs& a, std::size_t points) {
  return static_cast<unsigned>(std::max<std::size_t>(
      1, std::min<std::size_t>(a.threads ? a.threads : std::max(1u, std::thread::hardware_concurrency()), points)));
}

/// Summary, CSV, plot: the same bytes whichever processes and threads ran the points. The
/// plot is rendered before anything is written, so a gnuplot failure leaves no CSV behind.
void write_outputs(const SweepArgs& a, const models::SweepResult& r, const std::string& workers, double wall_s) {
  const models::SweepSummary s = models::summarize_sweep(r, a.metric);
  const std::string csv = models::sweep_csv(r);
  const std::string plot = a.plot.empty() ? std::string() : render_plot(r, s, a.plot);
  std::string files;
  std::vector<std::string> written;
  if (!a.out.empty()) {
    write_file_atomically(a.out, csv);
    files += fmt::format("CSV: {} ({}, {})\n", a.out, count_of(r.points.size(), "row"),
                         count_of(r.axes.size() + r.metric_columns.size() + 1, "column"));
    written.push_back(a.out);
  }
  if (!a.plot.empty()) {
    write_file_atomically(a.plot, plot);
    files += fmt::format("plot: {}\n", a.plot);
    written.push_back(a.plot);
  }
  if (!a.report.empty()) {
    write_file_atomically(a.report, models::sweep_html(r, s));
    files += fmt::format("report: {}\n", a.report);
    written.push_back(a.report);
  }
  if (a.format == "json") {  // one JSON document on stdout: the rows in it unless --out took them
    print(models::sweep_summary_json(r, s, a.out.empty(), written).dump(2) + "\n");
    return;
  }
  const std::string summary = summary_text(r, s, workers, wall_s) + files;
  if (a.out.empty()) {
    print(csv);  // the CSV owns stdout; the summary goes to stderr
    std::fputs(summary.c_str(), stderr);
  } else {
    print(summary);
  }
}

/// Under mpirun/srun: rank k runs points k, k + size, ... with its threads; rank 0 gathers
/// the outcomes, merges them in grid order and writes everything; the other ranks print
/// nothing. A failure on any rank travels to rank 0 as a message in place of the outcomes (so
/// no rank waits for one that threw); rank 0 prints it and exits with its status, the others
/// with 0 once they have it (the broadcast).
int cmd_sweep_mpi(const SweepArgs& a, const MpiWorld& world, Clock::time_point t0) {
  const auto part = models::SweepPart{static_cast<std::size_t>(world.rank()), static_cast<std::size_t>(world.size())};
  std::size_t my_points = 0;
  const std::string mine = models::encode_part([&] {
    const auto axes = checked_axes(a);
    models::SweepOptions opt = sweep_options(a, t0, world.rank() == 0);
    opt.part = part;
    auto outcomes = models::run_sweep_points(a.scenario, axes, opt);
    my_points = outcomes.size();
    return outcomes;
  });
  std::vector<std::string> all = world.gather(mine);
  return finish_on_rank_0(world, [&] {
    if (world.rank() != 0) return;
    // Rank 0 holds every row: each part is freed once decoded.
    std::vector<models::PointOutcome> outcomes = models::decode_parts(std::move(all), "rank");
    const auto axes = checked_axes(a);
    const models::SweepResult r = models::merge_sweep(a.scenario, axes, std::move(outcomes));
    const std::string workers = fmt::format("{} x {}", count_of(static_cast<std::size_t>(world.size()), "MPI rank"),
                                           count_of(threads_for(a, my_points), "thread"));
    write_outputs(a, r, workers, seconds_since(t0));
  });
}

int cmd_sweep(const SweepArgs& a) {
  std::optional<MpiWorld> world;
  try {
    world.emplace(mpi_launch_from_env());
  } catch (const MpiWorld::Quiet& q) {
    return q.status;  // rank 0 prints the message
  }
  const auto t0 = Clock::now();  // after MPI_Init: the summary's points/s is the sweep's
  if (world->joined()) return cmd_sweep_mpi(a, *world, t0);

  const auto axes = checked_axes(a);
  const models::SweepResult r = models::run_sweep(a.scenario, axes, sweep_options(a, t0, true));
  write_outputs(a, r, count_of(threads_for(a, r.points.size()), "thread"), seconds_since(t0));
  return 0;
}

}  // namespace

void add_sweep_command(CLI::App& app, Action& action) {
  auto a = std::make_shared<SweepArgs>();
  auto* sweep = app.add_subcommand("sweep", "run a scenario over a grid of field values: CSV, plot, summary");
  sweep->add_option("scenario", a->scenario, "scenario JSON file")->required();
  sweep->add_option("--vary", a->varies,
                    "PATH=V1,V2,... | PATH=LO:HI:xN (N log-spaced) | PATH=LO:HI:+STEP; repeat for a Cartesian "
                    "grid (the first --vary changes fastest and is the plot's x axis). Several PATH=VALUES in one "
                    "--vary, separated by spaces, vary together (value i of each at one point, as many values "
                    "each): 'parallelism.tp=1,2,4,8 parallelism.dp=64,32,16,8'. For a DP sweep of a "
                    "scenario that fixes cluster.nodes, add --set cluster.nodes=null");
  sweep->add_option("--set", a->sets, "override applied to every point before the --vary values: PATH=VALUE (repeatable)");
  sweep->add_flag("--quiet", a->quiet, "no progress line on stderr (there is none either when stderr is not a terminal)");
  add_calibration_option(*sweep, a->sets);
  sweep->add_option("--out", a->out, "CSV file (default: CSV on stdout, summary on stderr)");
  sweep->add_option("--format", a->format,
                    "summary format: text, or json (schema stepsim.sweep/1 on stdout, with every point's row unless --out "
                    "takes them)")
      ->check(CLI::IsMember({"text", "json"}));
  sweep->add_option("--plot", a->plot, "plot step time and exposed communication with gnuplot: FILE.svg or FILE.png");
  sweep->add_option("--report", a->report,
                    "write a one-file HTML report: the curves (bucket regimes shaded, DP efficiency) and the points");
  sweep->add_option("--metric", a->metric,
                    "metric column for the best point (default tokens_per_s; names ending in _s or _bytes are "
                    "minimised, others maximised)");
  add_jobs_option(*sweep, a->threads, "points run");
  sweep->callback([a, &action] { action = [a] { return cmd_sweep(*a); }; });
}

}  // namespace stepsim::tools
