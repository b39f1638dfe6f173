// SPDX-License-Identifier: Apache-2.0
// `stepsim sweep`: run a scenario over a grid of overrides, write the CSV, plot it with
// gnuplot, print the summary. The grid, runner, CSV and summary live in models/sweep.hpp.
#include "tools/commands.hpp"

#include "models/sweep.hpp"
#include "sim/support/atomic_file.hpp"
#include "sim/support/error.hpp"

#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <thread>

namespace stepsim::tools {

namespace {

struct SweepArgs {
  std::string scenario;
  std::vector<std::string> varies;
  std::vector<std::string> sets;
  std::string out;
  std::string plot;
  std::string metric = "tokens_per_s";
  unsigned threads = 0;
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

/// gnuplot script: three panels (step time, exposed and busy communication, in ms) against the
/// first axis, one line per combination of the other axes; log x for log-spaced or wide
/// positive axes; non-numeric first axes become labelled tics.
std::string gnuplot_script(const models::SweepResult& r, const std::string& terminal, const std::string& output) {
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
  // One datablock per curve: x (or value index), step ms, exposed ms, label.
  const std::size_t per_curve = x.values.size();
  const std::size_t curves = r.points.size() / per_curve;
  std::vector<std::string> titles;
  std::vector<bool> has_data(curves, false);
  for (std::size_t c = 0; c < curves; ++c) {
    std::string title;
    for (std::size_t a = 1; a < r.axes.size(); ++a)
      title += (title.empty() ? "" : ", ") + r.axes[a].path + "=" + r.points[c * per_curve].values[a];
    titles.push_back(title.empty() ? "step" : title);
    s += fmt::format("$curve{} << EOD\n", c);
    for (std::size_t k = 0; k < per_curve; ++k) {
      const std::size_t i = c * per_curve + k;  // first axis fastest: one curve is consecutive
      const auto step = r.number(i, "step_time_s"), exposed = r.number(i, "exposed_comm_s");
      const auto comm = r.number(i, "comm_time_s");
      if (!step || !exposed || !comm) continue;
      has_data[c] = true;
      s += fmt::format("{} {} {} {} \"{}\"\n", numeric ? fmt::format("{}", xs[k]) : std::to_string(k), *step * 1e3,
                       *exposed * 1e3, *comm * 1e3, x.values[k]);
    }
    s += "EOD\n";
  }
  s += fmt::format("set multiplot layout 3,1 title {}\n", gp_quote("stepsim sweep of " + r.source));
  s += "set grid\nset key outside right top\nset style data linespoints\n";
  if (logx) s += "set logscale x\n";
  s += fmt::format("set xlabel {}\n", gp_quote(x.path + (logx ? " (log scale)" : "")));
  const std::string tics = numeric ? "" : ":xtic(5)";
  for (const auto& [col, ylabel] : {std::pair{2, "step time (ms)"}, std::pair{3, "exposed communication (ms)"},
                                    std::pair{4, "communication busy (ms)"}}) {
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

/// Runs gnuplot on the script into a temporary file next to `path`, then renames it over
/// `path` (the plot is never left half-written).
void write_plot(const models::SweepResult& r, const std::string& path) {
  const std::string terminal = extension_of(path) == ".png"
                                   ? "pngcairo size 1000,1100 noenhanced font 'sans,10'"
                                   : "svg size 1000,1100 dynamic noenhanced font 'sans,11' background rgb 'white'";
  const std::string tmp = path + fmt::format(".tmp.{}", ::getpid());
  const std::string script = gnuplot_script(r, terminal, tmp);
  const std::string cmd = find_on_path("gnuplot") + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "w");
  if (!p) throw InputError("--plot", "", "cannot start gnuplot");
  std::fwrite(script.data(), 1, script.size(), p);
  const int rc = ::pclose(p);
  std::error_code ec;
  if (rc != 0 || !std::filesystem::exists(tmp)) {
    std::filesystem::remove(tmp, ec);
    throw InputError("--plot", "", fmt::format("gnuplot failed (status {}) writing '{}'", rc, path));
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    throw InputError("--plot", "", fmt::format("cannot write '{}': {}", path, ec.message()));
  }
}

std::string pct(double ratio) { return fmt::format("{:+.1f} %", (ratio - 1) * 100); }

std::string summary_text(const models::SweepResult& r, const models::SweepSummary& s, unsigned threads,
                         double wall_s) {
  std::string out;
  std::string shape;
  for (const auto& a : r.axes) shape += fmt::format("{}{} ({} values)", shape.empty() ? "" : " x ", a.path, a.values.size());
  out += fmt::format("sweep of {}: {} points over {}\n", r.source, s.points, shape);
  out += fmt::format("  {} ran, {} failed (see the error column), {} do not fit in memory; {} threads, {:.2f} s ({:.0f} points/s)\n",
                     s.points - s.failed, s.failed, s.not_fitting, threads, wall_s, wall_s > 0 ? s.points / wall_s : 0.0);
  if (s.best) {
    const std::size_t b = *s.best;
    out += fmt::format("best {} ({} is better): {:.6g} at {}\n", s.metric, s.minimize ? "lower" : "higher",
                       *r.number(b, s.metric), r.label(b));
    out += fmt::format("  step {:.3f} ms, exposed comm {:.3f} ms, {:.4g} tokens/s, MFU {:.1f} %\n",
                       r.number(b, "step_time_s").value_or(0) * 1e3, r.number(b, "exposed_comm_s").value_or(0) * 1e3,
                       r.number(b, "tokens_per_s").value_or(0), r.number(b, "mfu").value_or(0) * 100);
  } else {
    out += "best: none (no point ran and fit in memory)\n";
  }
  if (!s.bucket_curves.empty()) {
    out += "bucket sweep (seed 000 §4): sweet spot = step time within 2 % of the curve's best\n";
    for (const auto& c : s.bucket_curves) {
      out += fmt::format("  {}\n", c.series.empty() ? "all points" : c.series);
      out += fmt::format("    best       bucket_cap_mb {:<9g} step {:.3f} ms; sweet spot {:g} to {:g} MiB\n",
                         c.best_bucket_cap_mb, c.best_step_time_s * 1e3, c.sweet_lo_mb, c.sweet_hi_mb);
      auto end = [&](const char* name, const models::BucketCurve::End& e) {
        out += fmt::format("    {:<10} bucket_cap_mb {:<9g} step {:.3f} ms ({} vs best), {:g} buckets, comm {:.3f} ms, exposed {:.3f} ms\n",
                           name, e.bucket_cap_mb, e.step_time_s * 1e3, pct(e.step_time_s / c.best_step_time_s),
                           e.bucket_count, e.comm_time_s * 1e3, e.exposed_comm_s * 1e3);
      };
      end("smallest", c.smallest);
      // The seed's regimes (000 §4): latency piles up with many small collectives; one huge
      // bucket cannot start before backward ends, so it is exposed.
      if (c.smallest.comm_time_s > 1.1 * c.min_comm_time_s)
        out += fmt::format("      latency-bound: communication {} vs the least on this curve ({}){}\n",
                           pct(c.smallest.comm_time_s / c.min_comm_time_s),
                           fmt::format("{:.3f} ms", c.min_comm_time_s * 1e3),
                           c.smallest.step_time_s > c.best_step_time_s * 1.02 ? "" : ", still hidden behind backward");
      end("largest", c.largest);
      if (c.largest.step_time_s > c.best_step_time_s * 1.02)
        out += "      the last bucket is exposed: it cannot start before backward ends\n";
    }
  }
  if (!s.dp_curves.empty()) {
    out += "DP scaling: per-GPU tokens/s relative to the smallest dp (weak scaling; 90 % threshold)\n";
    for (const auto& c : s.dp_curves) {
      out += fmt::format("  {}\n", c.series.empty() ? "all points" : c.series);
      out += fmt::format("    {:>8} {:>12} {:>12} {:>14} {:>10}\n", "dp", "step ms", "exposed ms", "tokens/s", "efficiency");
      for (const auto& p : c.points)
        out += fmt::format("    {:>8g} {:>12.3f} {:>12.3f} {:>14.4g} {:>9.1f}%\n", p.dp, p.step_time_s * 1e3,
                           p.exposed_comm_s * 1e3, p.tokens_per_s, p.efficiency * 100);
      out += c.first_dp_below ? fmt::format("    scaling efficiency drops below 90 % at dp={:g}\n", *c.first_dp_below)
                              : std::string("    scaling efficiency stays at or above 90 % over this range\n");
    }
  }
  return out;
}

int cmd_sweep(const SweepArgs& a) {
  if (a.varies.empty()) throw InputError("--vary", "", "expected at least one --vary PATH=VALUES");
  std::vector<models::SweepAxis> axes;
  for (const auto& v : a.varies) axes.push_back(models::parse_vary(v));
  if (!a.plot.empty()) {
    const std::string ext = extension_of(a.plot);
    if (ext != ".svg" && ext != ".png")
      throw InputError("--plot", "", fmt::format("expected a file name ending in .svg or .png, got '{}'", a.plot));
    if (find_on_path("gnuplot").empty())
      throw InputError("--plot", "", "gnuplot not found on PATH; install it (tools/setup.sh installs the Debian "
                                     "package gnuplot-nox) or leave out --plot");
  }
  if (a.threads > 4096) throw InputError("-j", "", fmt::format("expected a thread count in [1, 4096], got {}", a.threads));

  models::SweepOptions opt;
  opt.sets = a.sets;
  opt.threads = a.threads;
  const auto t0 = Clock::now();
  const bool tty = ::isatty(::fileno(stderr)) != 0;
  auto last = t0;
  bool shown = false;
  if (tty) {
    // Progress only on a terminal, only once the sweep has taken more than a moment.
    opt.progress = [&](std::size_t done, std::size_t total) {
      const auto now = Clock::now();
      if ((now - t0 < std::chrono::milliseconds(500) || now - last < std::chrono::milliseconds(100)) && done < total)
        return;
      if (!shown && done == total) return;
      last = now;
      shown = true;
      std::fprintf(stderr, "\rsweep: %zu/%zu points", done, total);
      if (done == total) std::fprintf(stderr, "\n");
      std::fflush(stderr);
    };
  }
  const models::SweepResult r = models::run_sweep(a.scenario, axes, opt);
  const double wall_s = seconds_since(t0);
  const unsigned threads = static_cast<unsigned>(std::min<std::size_t>(
      a.threads ? a.threads : std::max(1u, std::thread::hardware_concurrency()), r.points.size()));
  const models::SweepSummary s = models::summarize_sweep(r, a.metric);

  const std::string csv = models::sweep_csv(r);
  std::string files;
  if (!a.out.empty()) {
    write_file_atomically(a.out, csv);
    files += fmt::format("CSV: {} ({} rows, {} columns)\n", a.out, r.points.size(), r.axes.size() + r.metric_columns.size() + 1);
  }
  if (!a.plot.empty()) {
    write_plot(r, a.plot);
    files += fmt::format("plot: {}\n", a.plot);
  }
  const std::string summary = summary_text(r, s, threads, wall_s) + files;
  if (a.out.empty()) {
    print(csv);  // the CSV owns stdout; the summary goes to stderr
    std::fputs(summary.c_str(), stderr);
  } else {
    print(summary);
  }
  return 0;
}

}  // namespace

void add_sweep_command(CLI::App& app, Action& action) {
  auto a = std::make_shared<SweepArgs>();
  auto* sweep = app.add_subcommand("sweep", "run a scenario over a grid of field values: CSV, plot, summary");
  sweep->add_option("scenario", a->scenario, "scenario JSON file")->required();
  sweep->add_option("--vary", a->varies,
                    "PATH=V1,V2,... | PATH=LO:HI:xN (N log-spaced) | PATH=LO:HI:+STEP; repeat for a Cartesian "
                    "grid (the first --vary changes fastest and is the plot's x axis). For a DP sweep of a "
                    "scenario that fixes cluster.nodes, add --set cluster.nodes=null");
  sweep->add_option("--set", a->sets, "override applied to every point before the --vary values: PATH=VALUE (repeatable)");
  add_calibration_option(*sweep, a->sets);
  sweep->add_option("--out", a->out, "CSV file, written atomically (default: CSV on stdout, summary on stderr)");
  sweep->add_option("--plot", a->plot, "plot step time and exposed communication with gnuplot: FILE.svg or FILE.png");
  sweep->add_option("--metric", a->metric,
                    "metric column for the best point (default tokens_per_s; names ending in _s or _bytes are "
                    "minimised, others maximised)");
  sweep->add_option("-j,--jobs", a->threads, "worker threads (default: all cores); the output does not depend on it");
  sweep->callback([a, &action] { action = [a] { return cmd_sweep(*a); }; });
}

}  // namespace stepsim::tools
