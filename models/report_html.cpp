// SPDX-License-Identifier: Apache-2.0
// One-file HTML report of a simulated step (models/report_html.hpp): inline SVG and CSS only.
#include "models/report_html.hpp"

#include "models/simulate.hpp"
#include "models/strategy/compute_tasks.hpp"
#include "sim/replicate.hpp"
#include "sim/support/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>

namespace stepsim::models {

namespace {

// ---- layout (pixels) ----
constexpr double kWidth = 1180;   // SVG width
constexpr double kLeft = 190;     // lane labels
constexpr double kRight = 20;
constexpr double kLane = 22;      // lane height
constexpr double kAxis = 28;      // time axis height
constexpr double kMemHeight = 220;

std::string esc(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (const char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default:
        // No control character reaches the page (a NUL is no HTML): as its JSON escape.
        if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t')
          out += fmt::format("\\u{:04x}", static_cast<unsigned char>(c));
        else
          out += c;
    }
  }
  return out;
}

std::string ms(double s) { return fmt::format("{:.3f} ms", s * 1e3); }
std::string gb(double bytes) { return fmt::format("{:.2f} GB", bytes / 1e9); }

// The phase of a task as the CSS class and legend name (Phase in strategy.hpp).
const char* phase_class(std::uint32_t phase) {
  switch (static_cast<Phase>(phase)) {
    case Phase::Forward: return "forward";
    case Phase::Backward: return "backward";
    case Phase::Optimizer: return "optimizer";
    case Phase::Overhead: return "overhead";
    case Phase::Communication: return "communication";
  }
  return "overhead";
}

// Round tick spacing (1, 2 or 5 × 10^k) giving about `target` ticks over `span`.
double tick_step(double span, double target) {
  const double raw = span / target;
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  for (const double m : {1.0, 2.0, 5.0, 10.0})
    if (raw <= m * p) return m * p;
  return 10 * p;
}

struct Scale {
  double t0 = 0, t1 = 1;  // seconds
  double x(double t) const { return kLeft + (t - t0) / (t1 - t0) * (kWidth - kLeft - kRight); }
};

std::string axis(const Scale& sc, double y, double height) {
  std::string out = fmt::format(R"(<g class="axis"><line x1="{:.1f}" y1="{:.1f}" x2="{:.1f}" y2="{:.1f}"/>)", kLeft, y,
                                kWidth - kRight, y);
  const double step = tick_step(sc.t1 - sc.t0, 10);
  for (double t = 0; t <= sc.t1 + step * 1e-9; t += step) {
    const double x = sc.x(t);
    out += fmt::format(R"(<line class="grid" x1="{:.1f}" y1="{:.1f}" x2="{:.1f}" y2="{:.1f}"/>)", x, y - height, x, y);
    out += fmt::format(R"(<text x="{:.1f}" y="{:.1f}" text-anchor="middle">{:g} ms</text>)", x, y + 16, t * 1e3);
  }
  return out + "</g>\n";
}

// One rank's slice of the played step: the graph's tasks with rank 0's records of copy `copy`.
sim::Timeline slice_of(const SimulatedStep& step, std::uint32_t copy) {
  if (step.copies == 1) return *step.timeline;
  return sim::copy_timeline(*step.timeline, step.step.graph.size(), copy);
}

std::string timeline_svg(const Report& r, const SimulatedStep& step, const std::vector<std::uint32_t>& ranks) {
  const sim::TaskGraph& g = step.step.graph;
  Scale sc;
  sc.t1 = std::max(r.step_time_s, 1e-12);
  struct Lane {
    std::uint32_t rank, stream;
  };
  std::vector<Lane> lanes;
  std::vector<sim::Timeline> slices;
  for (const std::uint32_t rank : ranks) {
    slices.push_back(slice_of(step, rank));
    std::set<std::uint32_t> streams;
    for (sim::TaskId v = 0; v < g.size(); ++v)
      if (g.task(v).rank == 0) streams.insert(g.task(v).stream);
    for (const std::uint32_t st : streams) lanes.push_back({rank, st});
  }
  const double height = kAxis + 10 + kLane * static_cast<double>(lanes.size()) + 8;
  std::string out = fmt::format(R"(<svg id="timeline" xmlns="http://www.w3.org/2000/svg" width="{:.0f}" height="{:.0f}" )"
                                R"(viewBox="0 0 {:.0f} {:.0f}" role="img" aria-label="timeline">)"
                                "\n",
                                kWidth, height, kWidth, height);
  for (std::size_t k = 0; k < ranks.size(); ++k) {
    const sim::Timeline& tl = slices[k];
    const auto path = tl.critical_path();
    const std::set<sim::TaskId> critical(path.begin(), path.end());
    // Communication no compute hides on this rank (the report's exposed communication).
    const auto compute = sim::busy_intervals(g, tl, [](const sim::Task& t) { return t.kind == sim::TaskKind::Compute && t.rank == 0; });
    for (std::size_t li = 0; li < lanes.size(); ++li) {
      const Lane& lane = lanes[li];
      if (lane.rank != ranks[k]) continue;
      const double y = 8 + kLane * static_cast<double>(li);
      // A per_rank copy's world rank (its first stage's under PP: the lanes are stage 0's).
      const std::int64_t world_rank = r.per_rank.present ? per_rank_world_rank(r.scenario, lane.rank, 0) : lane.rank;
      const std::string name = fmt::format("rank {} {}", world_rank, stream_name(lane.stream));
      out += fmt::format(R"(<g class="lane" data-lane="{}"><text class="label" x="{:.1f}" y="{:.1f}" text-anchor="end">{}</text>)",
                         esc(name), kLeft - 6, y + kLane * 0.68, esc(name));
      out += fmt::format(R"(<rect class="lane-bg" x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}"/>)", kLeft, y,
                         kWidth - kLeft - kRight, kLane - 4);
      std::vector<sim::Interval> comm;
      for (sim::TaskId v = 0; v < g.size(); ++v) {
        const sim::Task& t = g.task(v);
        if (t.rank != 0 || t.stream != lane.stream) continue;
        const double a = tl[v].start.seconds(), b = tl[v].end.seconds();
        if (!(b > a)) continue;
        if (t.kind == sim::TaskKind::Transfer) comm.push_back({tl[v].start, tl[v].end});
        const double x = sc.x(a), w = std::max(0.6, sc.x(b) - x);
        const bool on_path = critical.count(v) > 0;
        out += fmt::format(R"(<rect class="task {}{}" x="{:.2f}" y="{:.1f}" width="{:.2f}" height="{:.1f}"><title>{}: {} to {} ({}){}</title></rect>)",
                           phase_class(t.phase), on_path ? " critical" : "", x, y, w, kLane - 4, esc(t.name), ms(a), ms(b),
                           ms(b - a), on_path ? ", on the critical path" : "");
        if (on_path)  // a black line along the lane's top edge
          out += fmt::format(R"(<rect class="critical-mark" x="{:.2f}" y="{:.1f}" width="{:.2f}" height="2"/>)", x, y - 2, w);
      }
      // The exposed part of this lane's communication: a band under it.
      std::sort(comm.begin(), comm.end(), [](const sim::Interval& p, const sim::Interval& q) { return p.begin < q.begin; });
      for (const auto& c : comm) {
        sim::Time from = c.begin;
        for (const auto& busy : compute) {
          if (busy.end <= from || busy.begin >= c.end) continue;
          if (busy.begin > from)
            out += fmt::format(R"(<rect class="exposed" x="{:.2f}" y="{:.1f}" width="{:.2f}" height="3"><title>exposed communication {} to {}</title></rect>)",
                               sc.x(from.seconds()), y + kLane - 4, std::max(0.6, sc.x(busy.begin.seconds()) - sc.x(from.seconds())),
                               ms(from.seconds()), ms(busy.begin.seconds()));
          from = std::max(from, busy.end);
        }
        if (from < c.end)
          out += fmt::format(R"(<rect class="exposed" x="{:.2f}" y="{:.1f}" width="{:.2f}" height="3"><title>exposed communication {} to {}</title></rect>)",
                             sc.x(from.seconds()), y + kLane - 4, std::max(0.6, sc.x(c.end.seconds()) - sc.x(from.seconds())),
                             ms(from.seconds()), ms(c.end.seconds()));
      }
      out += "</g>\n";
    }
  }
  out += axis(sc, height - kAxis + 6, height - kAxis);
  return out + "</svg>\n";
}

std::string memory_svg(const Report& r, const SimulatedStep& step) {
  const sim::TaskGraph& g = step.step.graph;
  const sim::Timeline tl = slice_of(step, 0);
  // Rank 0's counters over time: allocations at a task's start, frees at its end, frees first
  // at equal instants (sim::memory_peak's order).
  struct Change {
    sim::Time at;
    int order;  // 0 free, 1 alloc
    double d[2];
  };
  std::vector<Change> changes;
  for (sim::TaskId v = 0; v < g.size(); ++v) {
    const sim::Task& t = g.task(v);
    if (t.rank != 0) continue;
    if (t.alloc_bytes[0] != 0 || t.alloc_bytes[1] != 0) changes.push_back({tl[v].start, 1, {t.alloc_bytes[0], t.alloc_bytes[1]}});
    if (t.free_bytes[0] != 0 || t.free_bytes[1] != 0) changes.push_back({tl[v].end, 0, {-t.free_bytes[0], -t.free_bytes[1]}});
  }
  std::stable_sort(changes.begin(), changes.end(),
                   [](const Change& a, const Change& b) { return a.at != b.at ? a.at < b.at : a.order < b.order; });
  std::vector<std::pair<double, std::array<double, 2>>> points = {{0.0, {0.0, 0.0}}};
  std::array<double, 2> level = {0, 0};
  double max_counters = 0;
  for (const auto& c : changes) {
    level[0] += c.d[0];
    level[1] += c.d[1];
    max_counters = std::max(max_counters, level[0] + level[1]);
    points.push_back({c.at.seconds(), level});
  }
  points.push_back({r.step_time_s, level});
  const auto& m = r.memory;
  const double baseline = std::max(0.0, m.total_bytes - max_counters);
  const double top = std::max({m.total_bytes, m.capacity_bytes, 1.0}) * 1.08;
  Scale sc;
  sc.t1 = std::max(r.step_time_s, 1e-12);
  const double plot = kMemHeight - kAxis - 10;
  const auto y = [&](double bytes) { return 10 + plot * (1 - bytes / top); };
  // Stacked step curves: baseline, + activations, + buffers.
  const auto area = [&](const char* cls, const char* title, auto lo, auto hi) {
    std::string d = fmt::format("M{:.2f},{:.2f}", sc.x(0), y(lo(points.front().second)));
    for (std::size_t i = 1; i < points.size(); ++i)
      d += fmt::format(" H{:.2f} V{:.2f}", sc.x(points[i].first), y(lo(points[i].second)));
    for (std::size_t i = points.size(); i-- > 0;) {
      d += fmt::format(" V{:.2f}", y(hi(points[i].second)));
      if (i > 0) d += fmt::format(" H{:.2f}", sc.x(points[i].first));
    }
    d += fmt::format(" H{:.2f} Z", sc.x(0));
    return fmt::format(R"(<path class="memory-area {}" d="{}"><title>{}</title></path>)", cls, d, title) + "\n";
  };
  std::string out = fmt::format(R"(<svg id="memory" xmlns="http://www.w3.org/2000/svg" width="{:.0f}" height="{:.0f}" )"
                                R"(viewBox="0 0 {:.0f} {:.0f}" role="img" aria-label="memory over the step">)"
                                "\n",
                                kWidth, kMemHeight, kWidth, kMemHeight);
  out += fmt::format(R"(<rect class="memory-area states" x="{:.2f}" y="{:.2f}" width="{:.2f}" height="{:.2f}"><title>model states and persistent buffers: {}</title></rect>)",
                     kLeft, y(baseline), kWidth - kLeft - kRight, y(0) - y(baseline), gb(baseline)) + "\n";
  out += area("activations", "activations", [&](const std::array<double, 2>&) { return baseline; },
              [&](const std::array<double, 2>& l) { return baseline + l[0]; });
  out += area("buffers", "framework buffers (gradient buckets, gathered parameters and gradients)",
              [&](const std::array<double, 2>& l) { return baseline + l[0]; },
              [&](const std::array<double, 2>& l) { return baseline + l[0] + l[1]; });
  if (m.capacity_bytes > 0)
    out += fmt::format(R"(<line class="capacity" x1="{:.1f}" y1="{:.2f}" x2="{:.1f}" y2="{:.2f}"><title>usable HBM {}</title></line><text class="note" x="{:.1f}" y="{:.2f}" text-anchor="end">usable HBM {}</text>)",
                       kLeft, y(m.capacity_bytes), kWidth - kRight, y(m.capacity_bytes), gb(m.capacity_bytes), kWidth - kRight - 4,
                       y(m.capacity_bytes) - 4, gb(m.capacity_bytes)) + "\n";
  out += fmt::format(R"(<circle class="peak" cx="{:.2f}" cy="{:.2f}" r="4"><title>peak {} at {}</title></circle><text class="note" x="{:.2f}" y="{:.2f}">peak {} at {}</text>)",
                     sc.x(m.peak_time_s), y(m.total_bytes), gb(m.total_bytes), ms(m.peak_time_s),
                     std::min(sc.x(m.peak_time_s) + 6, kWidth - 200), y(m.total_bytes) - 6, gb(m.total_bytes),
                     ms(m.peak_time_s)) + "\n";
  for (const double frac : {0.0, 0.5, 1.0})
    out += fmt::format(R"(<text class="label" x="{:.1f}" y="{:.2f}" text-anchor="end">{}</text>)", kLeft - 6, y(frac * top / 1.08) + 4,
                       gb(frac * top / 1.08));
  out += axis(sc, kMemHeight - kAxis + 6, 0);
  return out + "</svg>\n";
}

std::string breakdown(const Report& r) {
  struct Part {
    const char* cls;
    const char* name;
    double s;
  };
  std::vector<Part> parts = {{"forward", "forward", r.forward_time_s},
                             {"backward", "backward", r.backward_time_s},
                             {"optimizer", "optimizer", r.optimizer_time_s},
                             {"overhead", "framework ops", r.overhead_time_s},
                             {"exposed", "exposed communication", r.exposed_comm_s}};
  if (r.per_rank.present) parts.push_back({"waiting", "waiting (rank 0 idle)", r.wait_time_s});
  if (!r.pipeline_stages.empty())
    parts.push_back({"waiting", "pipeline bubble (stage 0 waiting for its neighbours)", r.pipeline_stages.front().bubble_s});
  double total = 0;
  for (const auto& p : parts) total += p.s;
  std::string bar = R"(<svg id="breakdown" xmlns="http://www.w3.org/2000/svg" width="1180" height="34" viewBox="0 0 1180 34">)";
  double x = 0;
  for (const auto& p : parts) {
    const double w = total > 0 ? p.s / total * 1180 : 0;
    if (w <= 0) continue;
    bar += fmt::format(R"(<rect class="task {}" x="{:.2f}" y="4" width="{:.2f}" height="26"><title>{}: {}</title></rect>)", p.cls, x, w,
                       p.name, ms(p.s));
    x += w;
  }
  bar += "</svg>\n<table class=\"rows\"><tr><th>part of the step</th><th>time</th><th>share</th></tr>\n";
  for (const auto& p : parts)
    bar += fmt::format("<tr><td><span class=\"swatch {}\"></span>{}</td><td>{}</td><td>{:.1f} %</td></tr>\n", p.cls, p.name,
                       ms(p.s), total > 0 ? 100 * p.s / total : 0.0);
  return bar + "</table>\n";
}

std::string collectives_table(const Report& r) {
  if (r.collectives.empty()) return "<p>No collectives.</p>\n";
  // With tensor parallelism each row names its mesh dimension (TP or DP).
  const bool mesh = reports_mesh(r.scenario);
  std::string t = std::string("<table class=\"rows\" id=\"collectives\"><tr>") + (mesh ? "<th>group</th>" : "") +
                  "<th>op</th><th>ranks</th><th>size</th><th>per step</th>"
                  "<th>time each</th><th>algbw</th><th>busbw</th><th>algorithm</th></tr>\n";
  for (const auto& c : r.collectives)
    t += fmt::format("<tr>{}<td>{}</td><td>{}</td><td>{:.2f} MB</td><td>{}</td><td>{}</td><td>{:.1f} GB/s</td><td>{:.1f} GB/s</td>"
                     "<td>{}{}</td></tr>\n",
                     mesh ? "<td>" + mesh_group_label(c) + "</td>" : std::string(),
                     esc(c.op),
                     c.ranks, c.bytes / 1e6, c.count, ms(c.time_s), c.algbw_bytes_per_s / 1e9,
                     c.busbw_bytes_per_s / 1e9, esc(c.algorithm), c.protocol.empty() ? "" : " / " + esc(c.protocol));
  return t + "</table>\n";
}

std::string memory_table(const Report& r) {
  const auto& m = r.memory;
  std::string t = "<table class=\"rows\"><tr><th>memory at the peak (rank 0)</th><th>per GPU</th></tr>\n";
  for (const auto& [name, bytes] : std::vector<std::pair<const char*, double>>{{"parameters", m.params_bytes},
                                                                              {"gradients", m.grads_bytes},
                                                                              {"optimizer state", m.optimizer_bytes},
                                                                              {"fp32 gradient accumulation", m.grad_accum_bytes},
                                                                              {"activations", m.activations_bytes},
                                                                              {"framework buffers", m.buffers_bytes}})
    if (bytes > 0) t += fmt::format("<tr><td>{}</td><td>{}</td></tr>\n", name, gb(bytes));
  t += fmt::format("<tr><td><b>peak</b></td><td><b>{}</b> of {} usable ({} HBM less {} reserved): {}</td></tr>\n", gb(m.total_bytes),
                   gb(m.capacity_bytes), gb(m.hbm_bytes), gb(m.reserved_bytes), m.fits ? "fits" : "<b>does not fit</b>");
  return t + "</table>\n";
}

std::string band_line(const Report& r) {
  if (r.calibration_band.present())
    return fmt::format("calibrated by {}: its fits reproduce {} measurements within {:.1f} %", esc(r.calibration_band.overlay),
                       r.calibration_band.points, 100 * r.calibration_band.max_residual);
  const auto& b = r.error_band;
  if (!b.present())
    return r.error_band_withheld.empty() ? "no error band: no public measured set has 5 runs or more of this kind yet"
                                         : esc(r.error_band_withheld);
  return fmt::format("real step time {:.2f}&#8211;{:.2f} &#215; this prediction (p10&#8211;p90 of {} runs of set {}: stepsim "
                     "accuracy)",
                     b.real_over_predicted_low(), b.real_over_predicted_high(), b.rows, esc(b.set));
}

constexpr const char* kStyle = R"(
body { font: 14px/1.45 system-ui, sans-serif; margin: 24px; color: #222; max-width: 1200px; }
h1 { font-size: 20px; margin: 0 0 4px; } h2 { font-size: 16px; margin: 22px 0 6px; }
.sub { color: #555; } .headline b { font-size: 18px; }
table.rows { border-collapse: collapse; margin: 6px 0; } table.rows td, table.rows th { padding: 2px 10px; border-bottom: 1px solid #ddd; text-align: left; }
svg text { font: 11px system-ui, sans-serif; fill: #333; }
.axis line { stroke: #888; } .axis .grid { stroke: #e6e6e6; }
.lane-bg { fill: #f6f6f6; }
.task.forward, .swatch.forward { fill: #4e79a7; background: #4e79a7; }
.task.backward, .swatch.backward { fill: #59a14f; background: #59a14f; }
.task.optimizer, .swatch.optimizer { fill: #edc948; background: #edc948; }
.task.overhead, .swatch.overhead { fill: #b07aa1; background: #b07aa1; }
.task.communication, .swatch.communication { fill: #f28e2b; background: #f28e2b; }
.task.exposed, .swatch.exposed, rect.exposed { fill: #e15759; background: #e15759; }
.task.waiting, .swatch.waiting { fill: #bab0ac; background: #bab0ac; }
.critical-mark, .swatch.critical { fill: #000; background: #000; }
.swatch { display: inline-block; width: 11px; height: 11px; margin-right: 6px; vertical-align: -1px; }
.memory-area.states { fill: #c7d4e8; } .memory-area.activations { fill: #59a14f; opacity: .8; } .memory-area.buffers { fill: #f28e2b; opacity: .8; }
.capacity { stroke: #e15759; stroke-dasharray: 5 3; } .peak { fill: #000; } .note { fill: #000; }
ul.warnings li { color: #8a4b00; }
.charts { display: flex; flex-wrap: wrap; gap: 8px; }
svg.chart { border: 1px solid #eee; } .chart-title { font-weight: 600; }
path.series { fill: none; stroke-width: 2; }
rect.regime.latency-bound { fill: #e15759; opacity: .13; } rect.regime.sweet-spot { fill: #59a14f; opacity: .18; }
rect.regime.last-bucket { fill: #f28e2b; opacity: .16; }
)";

// ---- sweep charts ----

constexpr double kChartW = 560, kChartH = 300, kChartL = 64, kChartR = 16, kChartT = 28, kChartB = 40;
constexpr std::size_t kChartsShown = 6;
constexpr std::size_t kRowsShown = 200;
constexpr const char* kSeriesColours[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#b07aa1", "#edc948", "#9c755f"};

// A numeric axis value, or nullopt.
std::optional<double> as_number(const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != '\0' || !std::isfinite(v)) return std::nullopt;
  return v;
}

// One chart: lines (x, y) per series, x on a log scale when its range spans 20× or more.
struct Chart {
  std::string title, xlabel, ylabel;
  struct Series {
    std::string name;
    std::vector<std::pair<double, double>> points;
    bool dashed = false;
  };
  std::vector<Series> series;
  struct Band {
    double x0, x1;
    std::string cls, title;
  };
  std::vector<Band> bands;
  std::optional<double> hline;  // a reference line (y)
  std::string hline_label;
};

std::string chart_svg(const Chart& c) {
  double x0 = INFINITY, x1 = -INFINITY, y1 = 0;
  for (const auto& s : c.series)
    for (const auto& [x, y] : s.points) {
      x0 = std::min(x0, x);
      x1 = std::max(x1, x);
      y1 = std::max(y1, y);
    }
  if (c.hline) y1 = std::max(y1, *c.hline);
  if (!(x1 > x0)) {
    x0 = x0 - 1;
    x1 = x1 + 1;
  }
  y1 = y1 > 0 ? y1 * 1.1 : 1;
  const bool logx = x0 > 0 && x1 / x0 >= 20;
  const auto fx = [&](double x) {
    const double f = logx ? std::log(x / x0) / std::log(x1 / x0) : (x - x0) / (x1 - x0);
    return kChartL + f * (kChartW - kChartL - kChartR);
  };
  const auto fy = [&](double y) { return kChartT + (1 - y / y1) * (kChartH - kChartT - kChartB); };
  std::string out = fmt::format(R"(<svg class="chart" xmlns="http://www.w3.org/2000/svg" width="{:.0f}" height="{:.0f}" viewBox="0 0 {:.0f} {:.0f}" role="img" aria-label="{}">)",
                                kChartW, kChartH, kChartW, kChartH, esc(c.title));
  out += fmt::format(R"(<text class="chart-title" x="{:.0f}" y="16">{}</text>)", kChartL, esc(c.title));
  for (const auto& b : c.bands) {
    const double a = fx(std::max(x0, b.x0)), z = fx(std::min(x1, b.x1));
    out += fmt::format(R"(<rect class="regime {}" x="{:.2f}" y="{:.1f}" width="{:.2f}" height="{:.1f}"><title>{}</title></rect>)", b.cls,
                       a - 4, kChartT, std::max(8.0, z - a + 8), kChartH - kChartT - kChartB, esc(b.title));
  }
  // Axes and ticks: x at the data's values (few) or 5 linear ticks; y at 5 ticks.
  out += fmt::format(R"(<g class="axis"><line x1="{:.0f}" y1="{:.1f}" x2="{:.0f}" y2="{:.1f}"/><line x1="{:.0f}" y1="{:.1f}" x2="{:.0f}" y2="{:.1f}"/>)",
                     kChartL, fy(0), kChartW - kChartR, fy(0), kChartL, fy(0), kChartL, kChartT);
  std::set<double> xs;
  for (const auto& s : c.series)
    for (const auto& p : s.points) xs.insert(p.first);
  if (xs.size() > 12) {
    xs.clear();
    for (int i = 0; i <= 4; ++i) xs.insert(logx ? x0 * std::pow(x1 / x0, i / 4.0) : x0 + (x1 - x0) * i / 4.0);
  }
  for (const double x : xs)
    out += fmt::format(R"(<text x="{:.1f}" y="{:.1f}" text-anchor="middle">{:.4g}</text>)", fx(x), fy(0) + 14, x);
  const double ystep = tick_step(y1, 5);
  for (double y = 0; y <= y1 + ystep * 1e-9; y += ystep)
    out += fmt::format(R"(<line class="grid" x1="{:.0f}" y1="{:.1f}" x2="{:.0f}" y2="{:.1f}"/><text x="{:.0f}" y="{:.1f}" text-anchor="end">{:.4g}</text>)",
                       kChartL, fy(y), kChartW - kChartR, fy(y), kChartL - 4, fy(y) + 4, y);
  out += fmt::format(R"(<text x="{:.0f}" y="{:.0f}" text-anchor="middle">{}{}</text>)", (kChartL + kChartW - kChartR) / 2,
                     kChartH - 8, esc(c.xlabel), logx ? " (log scale)" : "");
  out += fmt::format(R"svg(<text x="12" y="{:.0f}" transform="rotate(-90 12 {:.0f})" text-anchor="middle">{}</text></g>)svg",
                     (kChartT + kChartH - kChartB) / 2, (kChartT + kChartH - kChartB) / 2, esc(c.ylabel));
  if (c.hline)
    out += fmt::format(R"(<line class="capacity" x1="{:.0f}" y1="{:.1f}" x2="{:.0f}" y2="{:.1f}"/><text class="note" x="{:.0f}" y="{:.1f}" text-anchor="end">{}</text>)",
                       kChartL, fy(*c.hline), kChartW - kChartR, fy(*c.hline), kChartW - kChartR - 2, fy(*c.hline) - 3,
                       esc(c.hline_label));
  for (std::size_t k = 0; k < c.series.size(); ++k) {
    const auto& s = c.series[k];
    const char* colour = kSeriesColours[k % std::size(kSeriesColours)];
    std::string d;
    for (const auto& [x, y] : s.points) d += fmt::format("{}{:.2f},{:.2f}", d.empty() ? "M" : " L", fx(x), fy(y));
    out += fmt::format(R"(<path class="series" d="{}" stroke="{}"{}><title>{}</title></path>)", d, colour,
                       s.dashed ? R"( stroke-dasharray="5 3")" : "", esc(s.name));
    for (const auto& [x, y] : s.points)
      out += fmt::format(R"(<circle class="point" cx="{:.2f}" cy="{:.2f}" r="3" fill="{}"><title>{}: {:.4g}, {:.4g}</title></circle>)", fx(x),
                         fy(y), colour, esc(s.name), x, y);
  }
  // Legend under the title.
  double lx = kChartL + 8;
  for (std::size_t k = 0; k < c.series.size() && k < 4; ++k) {
    out += fmt::format(R"(<rect x="{:.0f}" y="{:.0f}" width="10" height="3" fill="{}"/><text x="{:.0f}" y="{:.0f}">{}</text>)", lx,
                       kChartT + 6, kSeriesColours[k % std::size(kSeriesColours)], lx + 14, kChartT + 10,
                       esc(c.series[k].name.size() > 40 ? c.series[k].name.substr(0, 40) + "…" : c.series[k].name));
    lx += 14 + 7.0 * static_cast<double>(std::min<std::size_t>(41, c.series[k].name.size())) + 12;
    if (lx > kChartW - 120) break;
  }
  return out + "</svg>\n";
}

std::string more(std::size_t left, const char* kind) {
  return left == 0 ? std::string()
                   : fmt::format("<p class=\"sub\">… and {} more {} (every curve: stepsim sweep --format json; every point: "
                                 "the CSV)</p>\n",
                                 left, kind);
}

}  // namespace

std::string sweep_html(const SweepResult& r, const SweepSummary& s) {
  std::string shape;
  for (const auto& [name, values] : grid_dimensions(r.axes))
    shape += fmt::format("{}{} ({} values)", shape.empty() ? "" : " &#215; ", esc(name), values);
  std::string h = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n";
  h += fmt::format("<title>stepsim sweep of {}</title>\n<style>{}</style></head>\n<body>\n", esc(r.source), kStyle);
  h += fmt::format("<h1>stepsim sweep of {}</h1>\n<p class=\"sub\">{} points over {}: {} ran, {} failed, {} do not fit in "
                   "memory</p>\n",
                   esc(r.source), s.points, shape, s.points - s.failed, s.failed, s.not_fitting);
  if (s.best)
    h += fmt::format("<p class=\"headline\" id=\"best\">best {} ({} is better): <b>{:.6g}</b> at {} &#183; step {} &#183; exposed "
                     "communication {} &#183; MFU {:.1f} %</p>\n",
                     esc(s.metric), s.minimize ? "lower" : "higher", *r.number(*s.best, s.metric), esc(r.label(*s.best)),
                     ms(r.number(*s.best, "step_time_s").value_or(0)), ms(r.number(*s.best, "exposed_comm_s").value_or(0)),
                     100 * r.number(*s.best, "mfu").value_or(0));
  else
    h += "<p class=\"headline\" id=\"best\">best: none (no point ran and fit in memory)</p>\n";
  const auto axis_of = [&r](const std::string& path) -> std::optional<std::size_t> {
    for (std::size_t a = 0; a < r.axes.size(); ++a)
      if (r.axes[a].path == path) return a;
    return std::nullopt;
  };
  // The points of one curve along axis `a` with a numeric value of the axis and of `metric`.
  const auto points_of = [&r](std::size_t a, const std::vector<std::size_t>& members, const std::string& metric, double scale) {
    std::vector<std::pair<double, double>> pts;
    for (const std::size_t i : members) {
      const auto x = as_number(r.points[i].values[a]);
      const auto y = r.number(i, metric);
      if (x && y) pts.push_back({*x, *y * scale});
    }
    std::sort(pts.begin(), pts.end());
    return pts;
  };
  if (const auto a = axis_of("parallelism.bucket_cap_mb"); a && !s.bucket_curves.empty()) {
    h += "<h2>Bucket size (seed 000 §4)</h2>\n<p class=\"sub\">Shaded: latency-bound (communication at least "
         "1.5&#215; the curve's least), the sweet spot (step time within 2 % of the best), last bucket exposed (exposed "
         "communication at least half the communication).</p>\n<div class=\"charts\">\n";
    const auto curves = curves_along(r, *a);
    for (std::size_t k = 0; k < s.bucket_curves.size() && k < kChartsShown; ++k) {
      const BucketCurve& bc = s.bucket_curves[k];
      std::vector<std::size_t> members;
      for (const auto& [series, idx] : curves)
        if (series == bc.series) members = idx;
      Chart c;
      c.title = bc.series.empty() ? "step time against bucket_cap_mb" : bc.series;
      c.xlabel = "bucket_cap_mb";
      c.ylabel = "ms";
      c.series.push_back({"step time", points_of(*a, members, "step_time_s", 1e3), false});
      c.series.push_back({"exposed communication", points_of(*a, members, "exposed_comm_s", 1e3), true});
      if (bc.latency_bound)
        c.bands.push_back({bc.latency_bound->lo_mb, bc.latency_bound->hi_mb, "latency-bound", "latency-bound"});
      c.bands.push_back({bc.sweet_spot.lo_mb, bc.sweet_spot.hi_mb, "sweet-spot", "sweet spot"});
      if (bc.last_bucket_exposed)
        c.bands.push_back({bc.last_bucket_exposed->lo_mb, bc.last_bucket_exposed->hi_mb, "last-bucket", "last bucket exposed"});
      h += chart_svg(c);
    }
    h += "</div>\n" + more(s.bucket_curves.size() > kChartsShown ? s.bucket_curves.size() - kChartsShown : 0, "bucket curves");
  }
  if (const auto a = axis_of("parallelism.dp"); a && !s.dp_curves.empty() && r.axes[*a].values.size() > 1) {
    Chart c;
    c.title = "DP scaling efficiency (per-GPU throughput against the smallest dp)";
    c.xlabel = "parallelism.dp";
    c.ylabel = "efficiency";
    for (std::size_t k = 0; k < s.dp_curves.size() && k < 8; ++k) {
      Chart::Series ser{s.dp_curves[k].series.empty() ? "efficiency" : s.dp_curves[k].series, {}, false};
      for (const auto& p : s.dp_curves[k].points) ser.points.push_back({p.dp, p.efficiency});
      c.series.push_back(std::move(ser));
    }
    c.hline = 0.9;
    c.hline_label = "90 %";
    h += "<h2>Where DP stops scaling</h2>\n<div class=\"charts\">\n" + chart_svg(c) + "</div>\n" +
         more(s.dp_curves.size() > 8 ? s.dp_curves.size() - 8 : 0, "DP curves");
  }
  if (s.bucket_curves.empty() && s.dp_curves.empty() && !r.axes.empty()) {
    // The metric against the first axis, one line per value of the others.
    Chart c;
    c.title = s.metric + " against " + r.axes[0].path;
    c.xlabel = r.axes[0].path;
    c.ylabel = s.metric;
    const auto curves = curves_along(r, 0);
    for (std::size_t k = 0; k < curves.size() && k < 8; ++k)
      c.series.push_back({curves[k].first.empty() ? s.metric : curves[k].first, points_of(0, curves[k].second, s.metric, 1.0), false});
    bool any = false;
    for (const auto& ser : c.series) any = any || !ser.points.empty();
    if (any) h += "<h2>Curves</h2>\n<div class=\"charts\">\n" + chart_svg(c) + "</div>\n" + more(curves.size() > 8 ? curves.size() - 8 : 0, "curves");
  }
  // The points.
  h += "<h2>Points</h2>\n<table class=\"rows\" id=\"points\"><tr>";
  for (const auto& a : r.axes) h += "<th>" + esc(a.path) + "</th>";
  h += fmt::format("<th>{}</th><th>step time</th><th>exposed comm</th><th>fits</th><th>error</th></tr>\n", esc(s.metric));
  for (std::size_t i = 0; i < r.points.size() && i < kRowsShown; ++i) {
    h += "<tr>";
    for (const auto& v : r.points[i].values) h += "<td>" + esc(v) + "</td>";
    const auto metric = r.number(i, s.metric);
    const auto fits = r.number(i, "memory.fits");
    h += fmt::format("<td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
                     metric ? fmt::format("{:.6g}", *metric) : "", r.points[i].ok() ? ms(r.number(i, "step_time_s").value_or(0)) : "",
                     r.points[i].ok() ? ms(r.number(i, "exposed_comm_s").value_or(0)) : "",
                     !fits ? "" : *fits != 0 ? "yes" : "no", esc(r.points[i].error));
  }
  h += "</table>\n" + more(r.points.size() > kRowsShown ? r.points.size() - kRowsShown : 0, "points");
  h += "<p class=\"sub\">Written by stepsim sweep --report.</p>\n";
  return h + "</body></html>\n";
}

std::string report_html(const Report& r, const SimulatedStep& step) {
  STEPSIM_ASSERT(step.timeline.has_value(), "report_html without a played timeline");
  const Scenario& s = r.scenario;
  std::vector<std::uint32_t> ranks = {0};
  if (r.per_rank.present && r.per_rank.slowest_copy != 0) ranks.push_back(static_cast<std::uint32_t>(r.per_rank.slowest_copy));
  std::string h = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n";
  h += fmt::format("<title>stepsim: {} step of {} on {} x {}</title>\n", esc(s.parallelism.strategy), esc(s.model.name),
                   s.world_size(), esc(s.hardware.name));
  h += std::string("<style>") + kStyle + "</style></head>\n<body>\n";
  h += fmt::format("<h1>stepsim: {} step of {} on {} &#215; {}</h1>\n", esc(s.parallelism.strategy), esc(s.model.name),
                   s.world_size(), esc(s.hardware.name));
  h += fmt::format("<p class=\"sub\">{}{} nodes &#215; {} GPUs; micro_batch_size {} &#215; seq_len {} &#215; grad_accum {}; {}</p>\n",
                   s.name.empty() ? "" : esc(s.name) + " &#8212; ", s.cluster.nodes, s.cluster.gpus_per_node,
                   s.batch.micro_batch_size, s.batch.seq_len, s.batch.grad_accum,
                   r.per_rank.present ? fmt::format("every one of {} ranks simulated (per_rank)", r.per_rank.ranks)
                                      : "one representative rank (symmetric)");
  h += fmt::format("<p class=\"headline\">step time <b id=\"step-time\">{}</b>{} &#183; {:.0f} tokens/s ({:.0f} per GPU) &#183; MFU "
                   "{:.1f} % &#183; communication {} ({:.1f} % hidden behind compute)</p>\n",
                   ms(r.step_time_s), r.per_rank.present ? " (the slowest rank)" : "", r.tokens_per_s,
                   r.tokens_per_s / static_cast<double>(s.world_size()), 100 * r.mfu, ms(r.comm_time_s),
                   100 * r.overlap_fraction);
  if (s.parallelism.cp > 1)
    h += fmt::format("<p id=\"context\">context parallelism: cp {} ({}), {} of every micro-batch's {} tokens per rank; "
                     "exposed CP communication {}</p>\n",
                     s.parallelism.cp, esc(s.parallelism.cp_comm_type), s.tokens_per_micro_batch() / s.batch.micro_batch_size,
                     s.batch.seq_len, ms(r.cp_exposed_comm_s));
  if (const std::string placed = placement_line(s); !placed.empty())
    h += fmt::format("<p id=\"placement\">placement: {}</p>\n", esc(placed));
  if (s.parallelism.tp > 1 && s.parallelism.pp == 1)
    h += fmt::format("<p id=\"mesh\">mesh: dp {} &#215; tp {}{} &#8212; each TP group of {} GPUs {}, {} "
                     "parameters per TP rank of the model's {}; exposed communication {} TP ({}) and {} DP</p>\n",
                     s.parallelism.dp, s.parallelism.tp, s.parallelism.sequence_parallel ? " with sequence parallelism" : "",
                     s.parallelism.tp,
                     tp_placement(s),
                     s.model.parameter_count(), s.model_parameters, ms(r.tp_exposed_comm_s),
                     s.parallelism.tp_comm_overlap ? "beside each layer's compute: tp_comm_overlap"
                                                   : "synchronous on the compute stream",
                     ms(r.dp_exposed_comm_s));
  if (s.parallelism.pp > 1) {
    const auto& p = s.parallelism;
    h += fmt::format("<p id=\"mesh\">mesh: dp {} &#215; tp {} &#215; cp {} &#215; pp {} &#8212; {} pipeline stages of {} GPUs, {} "
                     "schedule, {} micro-batches, {} model chunk{} per PP rank; exposed communication {} PP, {} TP and {} DP "
                     "(stage 0)</p>\n",
                     p.dp, p.tp, p.cp, p.pp, p.pp, s.stage_ranks(), esc(p.pipeline_schedule), s.batch.grad_accum, p.virtual_stages,
                     p.virtual_stages == 1 ? "" : "s", ms(r.pp_exposed_comm_s), ms(r.tp_exposed_comm_s),
                     ms(r.dp_exposed_comm_s));
    h += "<table class=\"rows\" id=\"pipeline-stages\"><tr><th>PP rank</th><th>blocks</th><th>parameters</th><th>compute</th>"
         "<th>exposed comm</th><th>bubble</th><th>bubble share</th><th>peak memory</th></tr>\n";
    for (std::size_t k = 0; k < r.pipeline_stages.size(); ++k) {
      const auto& st = r.pipeline_stages[k];
      h += fmt::format("<tr><td>{}</td><td>{}</td><td>{:.3g}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.1f} %</td>"
                       "<td>{:.2f} GB</td></tr>\n",
                       k, st.blocks, st.parameters, ms(st.compute_time_s), ms(st.exposed_comm_s), ms(st.bubble_s),
                       r.step_time_s > 0 ? 100 * st.bubble_s / r.step_time_s : 0.0, st.memory_peak_bytes / 1e9);
    }
    h += "</table>\n";
  }
  h += fmt::format("<p class=\"band\" id=\"error-band\">accuracy: {}</p>\n", band_line(r));
  if (r.per_rank.present) {
    const auto& pr = r.per_rank;
    h += fmt::format("<p id=\"per-rank\">per rank: {} ranks; the step ends between {} and {} (spread {}, slowest rank {}); "
                     "straggler cost {} over the no-variation step ({})</p>\n",
                     pr.ranks, ms(pr.step_time_min_s), ms(pr.step_time_max_s), ms(pr.spread_s), pr.slowest_rank,
                     ms(pr.straggler_cost_s), ms(pr.no_variation_step_time_s));
  }
  h += "<h2>Where the step goes</h2>\n" + breakdown(r);
  h += "<h2>Timeline</h2>\n<p class=\"sub\">Each rectangle is a task of rank 0";
  h += ranks.size() > 1 ? fmt::format(" and of the slowest rank, {}", r.per_rank.slowest_rank) : std::string();
  h += " (hover for its name and times); a black line above a task: the critical path; red under a communication lane: "
       "communication no compute hides.</p>\n";
  h += "<p>";
  for (const char* c : {"forward", "backward", "optimizer", "overhead", "communication", "exposed", "critical"})
    h += fmt::format("<span class=\"swatch {}\"></span>{} &#160; ", c,
                     std::string(c) == "overhead" ? "framework ops" : std::string(c) == "critical" ? "critical path" : c);
  h += "</p>\n" + timeline_svg(r, step, ranks);
  h += "<h2>Memory over the step (rank 0)</h2>\n<p class=\"sub\">Model states held all step (blue), activations (green) and "
       "framework buffers (orange) on top; the dashed line is the usable HBM.</p>\n";
  h += memory_svg(r, step) + memory_table(r);
  h += "<h2>Collectives per step per rank</h2>\n" + collectives_table(r);
  h += "<h2>Warnings</h2>\n";
  if (r.warnings.empty()) {
    h += "<p>None.</p>\n";
  } else {
    h += "<ul class=\"warnings\">\n";
    for (const auto& w : r.warnings) h += "<li>" + esc(w) + "</li>\n";
    h += "</ul>\n";
  }
  h += "<p class=\"sub\">Written by stepsim run --report; the same step as text: stepsim run, as JSON: --format json.</p>\n";
  return h + "</body></html>\n";
}

}  // namespace stepsim::models
