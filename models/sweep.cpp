// SPDX-License-Identifier: Apache-2.0
// Sweep grammar, grid, parallel runner, CSV and summary (see sweep.hpp).
#include "models/sweep.hpp"

#include "models/report.hpp"
#include "models/scenario.hpp"
#include "sim/support/error.hpp"
#include "sim/support/resources.hpp"
#include "sim/support/json_reader.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <mutex>
#include <string_view>
#include <thread>

namespace stepsim::models {

namespace {

constexpr std::size_t kMaxAxisValues = 1'000'000;
constexpr std::size_t kMaxGridPoints = 10'000'000;
constexpr const char* kGrammar = "PATH=V1,V2,... | PATH=LO:HI:xN | PATH=LO:HI:+STEP";

[[noreturn]] void vary_error(const std::string& spec, const std::string& what) {
  throw InputError("--vary", "", fmt::format("'{}': {}; expected {}", spec, what, kGrammar));
}

/// Parses the whole of `text` as a finite double.
std::optional<double> to_number(const std::string& text) {
  double v = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (ec != std::errc() || ptr != end || !std::isfinite(v)) return std::nullopt;
  return v;
}

bool is_integer_text(const std::string& text) {
  std::size_t i = text.size() > 0 && (text[0] == '-' || text[0] == '+') ? 1 : 0;
  if (i == text.size()) return false;
  return std::all_of(text.begin() + static_cast<std::ptrdiff_t>(i), text.end(),
                     [](char c) { return c >= '0' && c <= '9'; });
}

/// Splits `text` on `sep` (a space also splits on tabs) where it is not inside [], {} or a JSON
/// string; empty when a ']' or '}' closes nothing.
std::vector<std::string> split_top_level(const std::string& text, char sep) {
  std::vector<std::string> out;
  std::string cur;
  int depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\' && i + 1 < text.size()) cur += text[i++];
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      ++depth;
    } else if (c == ']' || c == '}') {
      if (--depth < 0) return {};  // unbalanced: the caller reports it
    } else if ((c == sep || (sep == ' ' && c == '\t')) && depth == 0) {
      out.push_back(cur);
      cur.clear();
      continue;
    }
    cur += c;
  }
  out.push_back(cur);
  return out;
}

/// Splits a value list on commas that are not inside [], {} or a JSON string.
std::vector<std::string> split_list(const std::string& spec, const std::string& list) {
  std::vector<std::string> out = split_top_level(list, ',');
  if (out.empty()) vary_error(spec, "a ']' or '}' closes nothing");
  for (const auto& v : out)
    if (v.empty()) vary_error(spec, "empty value in the list");
  return out;
}

/// LO:HI:xN and LO:HI:+STEP. Returns nullopt when `text` is not of that shape.
std::optional<SweepAxis> parse_range(const std::string& spec, const std::string& path,
                                     const std::string& text) {
  const auto c1 = text.find(':');
  if (c1 == std::string::npos) return std::nullopt;
  const auto c2 = text.find(':', c1 + 1);
  if (c2 == std::string::npos || text.find(':', c2 + 1) != std::string::npos) return std::nullopt;
  const std::string lo_text = text.substr(0, c1), hi_text = text.substr(c1 + 1, c2 - c1 - 1);
  const std::string third = text.substr(c2 + 1);
  if (third.empty() || (third[0] != 'x' && third[0] != '+')) return std::nullopt;
  const std::string count_text = third.substr(1);
  const auto lo = to_number(lo_text), hi = to_number(hi_text), n = to_number(count_text);
  if (!lo) vary_error(spec, fmt::format("LO '{}' is not a number", lo_text));
  if (!hi) vary_error(spec, fmt::format("HI '{}' is not a number", hi_text));
  if (*lo > *hi) vary_error(spec, fmt::format("LO {} is greater than HI {}", lo_text, hi_text));
  const bool integers = is_integer_text(lo_text) && is_integer_text(hi_text);
  SweepAxis axis{path, {}, third[0] == 'x'};
  auto push = [&](std::string v) {
    if (axis.values.empty() || axis.values.back() != v) axis.values.push_back(std::move(v));
  };
  if (third[0] == 'x') {
    if (!n || !is_integer_text(count_text) || *n < 1 || *n > static_cast<double>(kMaxAxisValues))
      vary_error(spec, fmt::format("N in xN must be an integer in [1, {}], got '{}'", kMaxAxisValues, count_text));
    if (!(*lo > 0)) vary_error(spec, fmt::format("log spacing needs LO > 0, got {}", lo_text));
    if (*n == 1 && *lo != *hi) vary_error(spec, fmt::format("x1 gives one point; use {}={}", path, lo_text));
    const auto count = static_cast<std::size_t>(*n);
    for (std::size_t i = 0; i < count; ++i) {
      // Endpoints exactly LO and HI; the rest LO·(HI/LO)^(i/(N−1)).
      const double v = i == 0 ? *lo : i + 1 == count ? *hi
                     : *lo * std::pow(*hi / *lo, static_cast<double>(i) / static_cast<double>(count - 1));
      push(integers ? fmt::format("{}", std::llround(v)) : fmt::format("{:.6g}", v));
    }
  } else {
    if (!n || !(*n > 0)) vary_error(spec, fmt::format("STEP in +STEP must be a number > 0, got '{}'", count_text));
    const double span = (*hi - *lo) / *n;
    if (span + 1 > static_cast<double>(kMaxAxisValues))
      vary_error(spec, fmt::format("more than {} values", kMaxAxisValues));
    const bool int_step = integers && is_integer_text(count_text);
    // Index arithmetic (LO + i·STEP), not accumulation; a relative 1e-9 slack keeps HI when
    // (HI−LO)/STEP is whole but not exactly representable (0:1:+0.1).
    const auto count = static_cast<std::size_t>(std::floor(span * (1 + 1e-9) + 1e-9)) + 1;
    for (std::size_t i = 0; i < count; ++i) {
      const double v = *lo + static_cast<double>(i) * *n;
      push(int_step ? fmt::format("{}", std::llround(v)) : fmt::format("{:.12g}", v));
    }
  }
  return axis;
}

/// Flattens the scalar fields of a report into (dotted name, value), in key order.
void flatten(const nlohmann::ordered_json& j, const std::string& prefix,
             std::vector<std::pair<std::string, MetricValue>>& out) {
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string name = prefix.empty() ? it.key() : prefix + "." + it.key();
    const auto& v = it.value();
    if (prefix.empty() && (it.key() == "scenario" || it.key() == "schema")) continue;
    if (v.is_object()) {
      flatten(v, name, out);
    } else if (v.is_boolean()) {
      out.push_back({name, {v.get<bool>() ? "true" : "false", v.get<bool>() ? 1.0 : 0.0}});
    } else if (v.is_number_integer()) {
      out.push_back({name, {v.dump(), v.get<double>()}});
    } else if (v.is_number_float()) {
      out.push_back({name, {fmt::format("{}", v.get<double>()), v.get<double>()}});
    } else if (v.is_string()) {
      out.push_back({name, {v.get<std::string>(), std::nullopt}});
    }  // arrays and nulls: skipped
  }
}

PointOutcome run_point(const nlohmann::json& base, const std::string& source,
                       const std::vector<SweepAxis>& axes, const std::vector<std::size_t>& idx,
                       const std::vector<std::string>& sets) {
  PointOutcome out;
  try {
    nlohmann::json doc = base;
    for (const auto& s : sets) apply_scenario_override(doc, s, "--set");
    for (std::size_t a = 0; a < axes.size(); ++a)
      apply_scenario_override(doc, axes[a].path + "=" + axes[a].values[idx[a]], "--vary");
    const Report report = run(parse_scenario(doc, source));
    flatten(nlohmann::ordered_json::parse(report_json(report)), "", out.metrics);
  } catch (const InputError& e) {
    out.error = e.what();
  } catch (const std::bad_alloc&) {
    throw;  // the machine, not the point: stops the sweep (run_on_threads rethrows it)
  } catch (const std::exception& e) {
    out.error = fmt::format("internal error (please report): {}", e.what());
  }
  return out;
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

std::optional<std::size_t> axis_named(const SweepResult& r, const std::string& path) {
  for (std::size_t a = 0; a < r.axes.size(); ++a)
    if (r.axes[a].path == path) return a;
  return std::nullopt;
}

/// True when `inner` is `outer` or lies under it ("a.b" under "a"; not "a.bc" under "a.b").
bool path_within(const std::string& inner, const std::string& outer) {
  return inner.size() >= outer.size() && inner.compare(0, outer.size(), outer) == 0 &&
         (inner.size() == outer.size() || inner[outer.size()] == '.');
}

/// Refuses an axis varied twice, or one inside another: the outer value (an object) would
/// replace the inner axis's field, so its CSV column would be false.
void check_axis_paths(const std::vector<SweepAxis>& axes) {
  for (std::size_t i = 0; i < axes.size(); ++i)
    for (std::size_t j = 0; j < i; ++j) {
      const std::string &a = axes[j].path, &b = axes[i].path;
      if (a == b)
        throw InputError("--vary", "", fmt::format("'{}' is varied twice; give all its values in one --vary", a));
      if (path_within(a, b) || path_within(b, a)) {
        const std::string& outer = a.size() < b.size() ? a : b;
        const std::string& inner = a.size() < b.size() ? b : a;
        throw InputError("--vary", "", fmt::format("'{}' and '{}' overlap: each value of '{}' would replace the "
                                                   "varied '{}'; vary one of them", a, b, outer, inner));
      }
    }
}

/// The base scenario (file, then every --set; no axis) must load before the grid runs: a
/// JSON object, every --set well formed, every file it names (calibration overlay, profile)
/// readable. A field the scenario itself gets wrong stays a per-point error, since an axis
/// may be what fixes it.
void check_base(const nlohmann::json& base, const std::string& source, const std::vector<std::string>& sets) {
  if (!base.is_object())
    throw InputError(source, "/", fmt::format("expected an object (a scenario), got {}",
                                              base.is_array() ? std::string("an array") : "a " + std::string(base.type_name())));
  nlohmann::json doc = base;
  for (const auto& s : sets) apply_scenario_override(doc, s, "--set");
  try {
    (void)parse_scenario(doc, source);
  } catch (const InputError& e) {
    // Another file (overlay, profile, model) or a --set is broken whatever the axes say; the
    // scenario's own fields are judged per point, since an axis may be what fixes them.
    if (e.source() != source) throw;
  }
}

}  // namespace

std::vector<std::pair<std::string, std::vector<std::size_t>>> curves_along(const SweepResult& r, std::size_t a) {
  std::map<std::vector<std::size_t>, std::size_t> slot;
  std::vector<std::pair<std::string, std::vector<std::size_t>>> out;
  for (std::size_t i = 0; i < r.points.size(); ++i) {
    auto idx = grid_indices(r.axes, i);
    for (std::size_t b = 0; b < r.axes.size(); ++b)
      if (moves_with(r.axes, a, b)) idx[b] = 0;
    auto [it, fresh] = slot.emplace(idx, out.size());
    if (fresh) {
      std::string label;
      for (std::size_t b = 0; b < r.axes.size(); ++b)
        if (!moves_with(r.axes, a, b)) label += (label.empty() ? "" : ", ") + r.axes[b].path + "=" + r.points[i].values[b];
      out.push_back({label, {}});
    }
    out[it->second].second.push_back(i);
  }
  return out;
}


SweepAxis parse_vary(const std::string& spec) {
  const auto eq = spec.find('=');
  if (eq == std::string::npos || eq == 0) vary_error(spec, "no PATH= part");
  const std::string path = spec.substr(0, eq), text = spec.substr(eq + 1);
  if (text.empty()) vary_error(spec, "no values after '='");
  if (path.front() == '.' || path.back() == '.' || path.find("..") != std::string::npos)
    vary_error(spec, fmt::format("empty component in path '{}'", path));
  if (auto range = parse_range(spec, path, text)) return *range;
  SweepAxis axis{path, split_list(spec, text), false};
  for (const auto& v : axis.values) {
    // A value is read as apply_override reads it; one it refuses (a number JSON cannot hold,
    // invalid UTF-8, absurd nesting, a duplicate key) is a grammar error, not a failed point.
    try {
      (void)parse_override_value(path, v, "--vary");
    } catch (const InputError& e) {
      vary_error(spec, e.detail());
    }
  }
  return axis;
}

void append_vary(std::vector<SweepAxis>& axes, const std::string& spec) {
  // Groups: split on spaces outside [], {} and JSON strings.
  std::vector<std::string> groups;
  const std::vector<std::string> parts = split_top_level(spec, ' ');
  if (parts.empty()) vary_error(spec, "a ']' or '}' closes nothing");
  for (const auto& g : parts)
    if (!g.empty()) groups.push_back(g);
  if (groups.empty()) vary_error(spec, "no PATH= part");
  const auto leader = static_cast<int>(axes.size());
  for (std::size_t g = 0; g < groups.size(); ++g) {
    SweepAxis axis = parse_vary(groups[g]);
    if (g > 0) {
      const SweepAxis& lead = axes[static_cast<std::size_t>(leader)];
      if (axis.values.size() != lead.values.size())
        vary_error(spec, fmt::format("'{}' has {} values and '{}' {}; paths varied together need as many values each",
                                     lead.path, lead.values.size(), axis.path, axis.values.size()));
      axis.tied_to = leader;
    }
    axes.push_back(std::move(axis));
  }
}

std::size_t grid_size(const std::vector<SweepAxis>& axes) {
  std::size_t n = 1;
  for (const auto& a : axes) {
    if (a.tied_to >= 0) continue;
    if (a.values.empty()) throw InputError("--vary", "", fmt::format("'{}' has no values", a.path));
    if (n > kMaxGridPoints / a.values.size())
      throw InputError("--vary", "", fmt::format("the grid has more than {} points; sweep fewer values", kMaxGridPoints));
    n *= a.values.size();
  }
  return n;
}

std::vector<std::size_t> grid_indices(const std::vector<SweepAxis>& axes, std::size_t point) {
  std::vector<std::size_t> idx(axes.size());
  for (std::size_t a = 0; a < axes.size(); ++a) {
    if (axes[a].tied_to >= 0) continue;
    idx[a] = point % axes[a].values.size();
    point /= axes[a].values.size();
  }
  for (std::size_t a = 0; a < axes.size(); ++a)
    if (axes[a].tied_to >= 0) idx[a] = idx[static_cast<std::size_t>(axes[a].tied_to)];
  return idx;
}

bool moves_with(const std::vector<SweepAxis>& axes, std::size_t a, std::size_t b) {
  const auto leader = [&axes](std::size_t i) {
    return axes[i].tied_to >= 0 ? static_cast<std::size_t>(axes[i].tied_to) : i;
  };
  return leader(a) == leader(b);
}

bool moves_with_another(const std::vector<SweepAxis>& axes, std::size_t a) {
  for (std::size_t b = 0; b < axes.size(); ++b)
    if (b != a && moves_with(axes, a, b)) return true;
  return false;
}

std::vector<std::pair<std::string, std::size_t>> grid_dimensions(const std::vector<SweepAxis>& axes) {
  std::vector<std::pair<std::string, std::size_t>> out;
  for (std::size_t a = 0; a < axes.size(); ++a) {
    if (axes[a].tied_to >= 0) continue;
    std::string name = axes[a].path;
    for (std::size_t b = a + 1; b < axes.size(); ++b)
      if (axes[b].tied_to == static_cast<int>(a)) name += " + " + axes[b].path;
    out.emplace_back(name, axes[a].values.size());
  }
  return out;
}

std::optional<std::size_t> SweepResult::column(const std::string& name) const {
  const auto it = std::find(metric_columns.begin(), metric_columns.end(), name);
  if (it == metric_columns.end()) return std::nullopt;
  return static_cast<std::size_t>(it - metric_columns.begin());
}

std::optional<double> SweepResult::number(std::size_t i, const std::string& name) const {
  const auto c = column(name);
  if (!c || !points[i].ok() || !points[i].metrics[*c]) return std::nullopt;
  return points[i].metrics[*c]->number;
}

std::string SweepResult::label(std::size_t i) const {
  std::string s;
  for (std::size_t a = 0; a < axes.size(); ++a)
    s += (s.empty() ? "" : ", ") + axes[a].path + "=" + points[i].values[a];
  return s;
}

std::vector<PointOutcome> run_sweep_points(const std::string& scenario_path, const std::vector<SweepAxis>& axes,
                                           const SweepOptions& options) {
  return run_sweep_points(read_json_file(scenario_path), scenario_path, axes, options);
}

std::vector<PointOutcome> run_sweep_points(const nlohmann::json& base, const std::string& scenario_path,
                                           const std::vector<SweepAxis>& axes, const SweepOptions& options) {
  const SweepPart part = options.part;
  if (part.parts < 1 || part.index >= part.parts)
    throw InputError("", "", fmt::format("sweep part {} of {} does not exist", part.index, part.parts));
  check_axis_paths(axes);
  const std::size_t grid = grid_size(axes);
  // Every point's row stays in memory until the CSV is written (and rank 0 of an MPI sweep
  // gathers them all): refuse a grid this process cannot hold, before running any of it.
  check_memory_need(static_cast<double>(grid) * kSweepBytesPerPoint, "--vary", "",
                    fmt::format("a sweep of {} points (about {} kB of results each)", grid, kSweepBytesPerPoint / 1000),
                    "sweep fewer values");
  check_base(base, scenario_path, options.sets);

  // This part's points: part.index, part.index + parts, ... (round robin).
  const std::size_t total = grid > part.index ? (grid - part.index + part.parts - 1) / part.parts : 0;
  std::vector<PointOutcome> outcomes(total);
  std::atomic<std::size_t> next{0};
  std::size_t done = 0;
  std::mutex progress_mutex;
  auto worker = [&](const std::function<bool()>& stop) {
    for (std::size_t k; !stop() && (k = next.fetch_add(1)) < total;) {
      const std::size_t i = part.index + k * part.parts;
      outcomes[k] = run_point(base, scenario_path, axes, grid_indices(axes, i), options.sets);
      outcomes[k].index = i;
      if (options.progress) {
        const std::lock_guard<std::mutex> lock(progress_mutex);
        options.progress(++done, total);
      }
    }
  };
  unsigned threads = options.threads ? options.threads : std::max(1u, std::thread::hardware_concurrency());
  threads = static_cast<unsigned>(std::max<std::size_t>(1, std::min<std::size_t>(threads, total)));
  run_on_threads(threads, worker, "-j");
  return outcomes;
}

SweepResult merge_sweep(const std::string& scenario_path, const std::vector<SweepAxis>& axes,
                        std::vector<PointOutcome> unordered) {
  const std::size_t total = grid_size(axes);
  std::vector<PointOutcome> outcomes(total);
  std::vector<bool> seen(total, false);
  for (auto& o : unordered) {
    if (o.index >= total || seen[o.index])
      throw InternalError(fmt::format("sweep merge: point {} of {} is {}", o.index, total,
                                      o.index >= total ? "outside the grid" : "given twice"));
    seen[o.index] = true;
    outcomes[o.index] = std::move(o);
  }
  if (const auto gap = std::find(seen.begin(), seen.end(), false); gap != seen.end())
    throw InternalError(fmt::format("sweep merge: point {} of {} is missing", gap - seen.begin(), total));

  // Merge in grid order, so columns and rows do not depend on the thread or process count.
  SweepResult r;
  r.source = scenario_path;
  r.axes = axes;
  std::map<std::string, std::size_t> col;
  for (const auto& o : outcomes)
    for (const auto& [name, v] : o.metrics)
      if (col.emplace(name, r.metric_columns.size()).second) r.metric_columns.push_back(name);
  r.points.resize(total);
  for (std::size_t i = 0; i < total; ++i) {
    SweepPoint& p = r.points[i];
    const auto idx = grid_indices(axes, i);
    for (std::size_t a = 0; a < axes.size(); ++a) p.values.push_back(axes[a].values[idx[a]]);
    p.error = std::move(outcomes[i].error);
    p.metrics.resize(r.metric_columns.size());
    for (auto& [name, v] : outcomes[i].metrics) p.metrics[col.at(name)] = std::move(v);
  }
  if (std::none_of(r.points.begin(), r.points.end(), [](const SweepPoint& p) { return p.ok(); }))
    throw InputError("--vary", "",
                     fmt::format("every point of the sweep failed; the first ({}): {}",
                                 r.label(0).empty() ? "the scenario as is" : r.label(0), r.points[0].error));
  return r;
}

SweepResult run_sweep(const std::string& scenario_path, const std::vector<SweepAxis>& axes,
                      const SweepOptions& options) {
  SweepOptions whole = options;
  whole.part = SweepPart{};
  return merge_sweep(scenario_path, axes, run_sweep_points(scenario_path, axes, whole));
}

SweepResult run_sweep(const nlohmann::json& base, const std::string& source, const std::vector<SweepAxis>& axes,
                      const SweepOptions& options) {
  SweepOptions whole = options;
  whole.part = SweepPart{};
  return merge_sweep(source, axes, run_sweep_points(base, source, axes, whole));
}

nlohmann::ordered_json sweep_rows_json(const SweepResult& r) {
  using J = nlohmann::ordered_json;
  J rows = J::array();
  for (const auto& p : r.points) {
    J row;
    for (std::size_t a = 0; a < r.axes.size(); ++a) {  // as applied: JSON where the text parses
      J v = J::parse(p.values[a], nullptr, /*allow_exceptions=*/false);
      row[r.axes[a].path] = v.is_discarded() ? J(p.values[a]) : std::move(v);
    }
    for (std::size_t m = 0; m < r.metric_columns.size(); ++m) {
      const auto& v = p.metrics[m];
      if (!v) continue;
      if (v->number && v->text != "true" && v->text != "false") row[r.metric_columns[m]] = *v->number;
      else if (v->text == "true" || v->text == "false") row[r.metric_columns[m]] = v->text == "true";
      else row[r.metric_columns[m]] = v->text;
    }
    row["error"] = p.error;
    rows.push_back(std::move(row));
  }
  return rows;
}

nlohmann::ordered_json sweep_summary_json(const SweepResult& r, const SweepSummary& s, bool with_rows,
                                          const std::vector<std::string>& files) {
  using J = nlohmann::ordered_json;
  J j;
  j["schema"] = "stepsim.sweep/1";
  j["source"] = r.source;
  J axes = J::array();
  for (const auto& a : r.axes) axes.push_back({{"path", a.path}, {"values", a.values}});
  j["axes"] = std::move(axes);
  j["points"] = s.points;
  j["ran"] = s.points - s.failed;
  j["failed"] = s.failed;
  j["not_fitting"] = s.not_fitting;
  j["metric"] = s.metric;
  j["minimize"] = s.minimize;
  if (s.best) {
    const std::size_t b = *s.best;
    j["best"] = {{"point", b},
                 {"label", r.label(b)},
                 {"value", *r.number(b, s.metric)},
                 {"step_time_s", r.number(b, "step_time_s").value_or(0)},
                 {"exposed_comm_s", r.number(b, "exposed_comm_s").value_or(0)},
                 {"tokens_per_s", r.number(b, "tokens_per_s").value_or(0)},
                 {"mfu", r.number(b, "mfu").value_or(0)}};
  } else {
    j["best"] = nullptr;
  }
  auto regime = [](const std::optional<BucketCurve::Regime>& g) -> J {
    if (!g) return nullptr;
    return {{"bucket_cap_mb", {g->lo_mb, g->hi_mb}}, {"buckets", {g->buckets_lo, g->buckets_hi}},
            {"comm_time_s", {g->comm_min_s, g->comm_max_s}}, {"exposed_comm_s", {g->exposed_min_s, g->exposed_max_s}},
            {"step_time_s", {g->step_min_s, g->step_max_s}}};
  };
  J buckets = J::array();
  for (const auto& c : s.bucket_curves)
    buckets.push_back({{"series", c.series},
                       {"best_bucket_cap_mb", c.best_bucket_cap_mb},
                       {"best_step_time_s", c.best_step_time_s},
                       {"latency_bound", regime(c.latency_bound)},
                       {"sweet_spot", regime(c.sweet_spot)},
                       {"last_bucket_exposed", regime(c.last_bucket_exposed)}});
  j["bucket_curves"] = std::move(buckets);
  J dps = J::array();
  for (const auto& c : s.dp_curves) {
    J pts = J::array();
    for (const auto& p : c.points)
      pts.push_back({{"dp", p.dp}, {"step_time_s", p.step_time_s}, {"exposed_comm_s", p.exposed_comm_s},
                     {"tokens_per_s", p.tokens_per_s}, {"efficiency", p.efficiency}});
    dps.push_back({{"series", c.series}, {"points", std::move(pts)},
                   {"first_dp_below_90_percent", c.first_dp_below ? J(*c.first_dp_below) : J(nullptr)}});
  }
  j["dp_curves"] = std::move(dps);
  j["files"] = files;
  if (with_rows) j["rows"] = sweep_rows_json(r);
  return j;
}

namespace {

// encode_outcomes format, all integers little-endian: "SSO2"; u64 name count, the names (each
// metric name once: a report has ~45 and a rank sends up to 10^6 points); u64 outcome count;
// per outcome u64 index, str error, u64 metric count; per metric u64 name number, str text,
// u8 has_number and, when 1, the u64 bits of the double. str = u64 length + bytes.
constexpr std::string_view kOutcomesMagic = "SSO2";

void put_u64(std::string& out, std::uint64_t v) {
  for (int b = 0; b < 8; ++b) out += static_cast<char>((v >> (8 * b)) & 0xff);
}
void put_str(std::string& out, const std::string& s) {
  put_u64(out, s.size());
  out += s;
}

struct Reader {
  const std::string& bytes;
  std::size_t at = 0;
  void need(std::size_t n) {
    if (n > bytes.size() - at)
      throw InternalError(fmt::format("decode_outcomes: buffer truncated at byte {} of {}", at, bytes.size()));
  }
  std::uint64_t u64() {
    need(8);
    std::uint64_t v = 0;
    for (int b = 0; b < 8; ++b) v |= std::uint64_t{static_cast<unsigned char>(bytes[at++])} << (8 * b);
    return v;
  }
  std::string str() {
    const std::uint64_t n = u64();
    need(n);
    std::string s = bytes.substr(at, n);
    at += n;
    return s;
  }
  unsigned char u8() {
    need(1);
    return static_cast<unsigned char>(bytes[at++]);
  }
};

}  // namespace

std::string encode_outcomes(const std::vector<PointOutcome>& outcomes) {
  std::map<std::string, std::uint64_t> number_of;
  std::vector<const std::string*> names;
  for (const auto& o : outcomes)
    for (const auto& m : o.metrics)
      if (number_of.emplace(m.first, names.size()).second) names.push_back(&m.first);
  std::string out(kOutcomesMagic);
  put_u64(out, names.size());
  for (const auto* n : names) put_str(out, *n);
  put_u64(out, outcomes.size());
  for (const auto& o : outcomes) {
    put_u64(out, o.index);
    put_str(out, o.error);
    put_u64(out, o.metrics.size());
    for (const auto& [name, v] : o.metrics) {
      put_u64(out, number_of.at(name));
      put_str(out, v.text);
      out += static_cast<char>(v.number ? 1 : 0);
      if (v.number) put_u64(out, std::bit_cast<std::uint64_t>(*v.number));
    }
  }
  return out;
}

std::vector<PointOutcome> decode_outcomes(const std::string& bytes) {
  if (bytes.compare(0, kOutcomesMagic.size(), kOutcomesMagic) != 0)
    throw InternalError("decode_outcomes: not a sweep outcome buffer");
  Reader in{bytes, kOutcomesMagic.size()};
  const std::uint64_t name_count = in.u64();
  if (name_count > bytes.size() / 8) throw InternalError("decode_outcomes: bad name count");  // 8+ bytes each
  std::vector<std::string> names(name_count);
  for (auto& n : names) n = in.str();
  const std::uint64_t count = in.u64();
  std::vector<PointOutcome> out;
  // Each outcome takes at least 17 bytes: a corrupt count cannot make us reserve much.
  out.reserve(std::min<std::uint64_t>(count, bytes.size() / 17));
  for (std::uint64_t k = 0; k < count; ++k) {
    PointOutcome o;
    o.index = in.u64();
    o.error = in.str();
    const std::uint64_t metrics = in.u64();
    for (std::uint64_t m = 0; m < metrics; ++m) {
      const std::uint64_t name = in.u64();
      if (name >= names.size()) throw InternalError(fmt::format("decode_outcomes: bad name number {}", name));
      MetricValue v{in.str(), std::nullopt};
      const unsigned char has = in.u8();
      if (has > 1) throw InternalError(fmt::format("decode_outcomes: bad number flag at byte {}", in.at - 1));
      if (has) v.number = std::bit_cast<double>(in.u64());
      o.metrics.emplace_back(names[name], std::move(v));
    }
    out.push_back(std::move(o));
  }
  if (in.at != bytes.size())
    throw InternalError(fmt::format("decode_outcomes: {} trailing bytes", bytes.size() - in.at));
  return out;
}

std::string encode_part(const std::function<std::vector<PointOutcome>()>& run) {
  try {
    return "O" + encode_outcomes(run());
  } catch (const InputError& e) {
    return std::string("I") + e.what();
  } catch (const std::exception& e) {
    return std::string("X") + e.what();
  } catch (...) {
    return "Xunknown exception";
  }
}

std::vector<PointOutcome> decode_parts(std::vector<std::string> parts, const std::string& part_name) {
  std::vector<PointOutcome> outcomes;
  for (std::size_t r = 0; r < parts.size(); ++r) {
    const std::string b = std::move(parts[r]);  // freed after decoding
    const std::string text = b.empty() ? std::string() : b.substr(1);
    // Part 0's own error reads as in a single-process run; another part's names it.
    const std::string where = r == 0 ? "" : fmt::format("{} {} of {}: ", part_name, r, parts.size());
    if (!b.empty() && b[0] == 'I') throw InputError("", "", where + text);
    if (b.empty() || b[0] != 'O') throw InternalError(where + (b.empty() ? "sent nothing" : text));
    for (auto& o : decode_outcomes(text)) outcomes.push_back(std::move(o));
  }
  std::stable_sort(outcomes.begin(), outcomes.end(),
                   [](const PointOutcome& a, const PointOutcome& b) { return a.index < b.index; });
  return outcomes;
}

std::string sweep_csv(const SweepResult& r) {
  std::string out;
  std::vector<std::string> header;
  for (const auto& a : r.axes) header.push_back(a.path);
  header.insert(header.end(), r.metric_columns.begin(), r.metric_columns.end());
  header.push_back("error");
  for (std::size_t c = 0; c < header.size(); ++c) out += (c ? "," : "") + csv_field(header[c]);
  out += "\n";
  for (const auto& p : r.points) {
    std::string row;
    for (const auto& v : p.values) row += csv_field(v) + ",";
    for (const auto& m : p.metrics) row += (m ? csv_field(m->text) : std::string()) + ",";
    row += csv_field(p.error);
    out += row + "\n";
  }
  return out;
}

SweepSummary summarize_sweep(const SweepResult& r, const std::string& metric, double sweet_tolerance,
                             double dp_efficiency_threshold) {
  SweepSummary s;
  s.metric = metric;
  const auto mcol = r.column(metric);
  const bool numeric = mcol && std::any_of(r.points.begin(), r.points.end(), [&](const SweepPoint& p) {
                         return p.ok() && p.metrics[*mcol] && p.metrics[*mcol]->number;
                       });
  if (!numeric)
    throw InputError("--metric", "", fmt::format("'{}' is not a numeric metric column (e.g. tokens_per_s, step_time_s, mfu, memory.total_bytes)", metric));
  auto ends_with = [&](const std::string& suffix) {
    return metric.size() >= suffix.size() && metric.compare(metric.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  s.minimize = (ends_with("_s") && !ends_with("_per_s")) || ends_with("_bytes");
  s.points = r.points.size();
  for (std::size_t i = 0; i < r.points.size(); ++i) {
    if (!r.points[i].ok()) {
      ++s.failed;
      continue;
    }
    const auto fits = r.number(i, "memory.fits");
    if (fits && *fits == 0) {
      ++s.not_fitting;
      continue;
    }
    const auto v = r.number(i, metric);
    if (!v) continue;
    if (!s.best || (s.minimize ? *v < *r.number(*s.best, metric) : *v > *r.number(*s.best, metric))) s.best = i;
  }

  // Bucket and DP curves hold everything else fixed: not along an axis tied to others.
  if (const auto a = axis_named(r, "parallelism.bucket_cap_mb"); a && !moves_with_another(r.axes, *a)) {
    for (const auto& [series, members] : curves_along(r, *a)) {
      std::vector<std::pair<double, std::size_t>> pts;  // (bucket_cap_mb, point)
      for (std::size_t i : members)
        if (const auto b = to_number(r.points[i].values[*a]); b && r.number(i, "step_time_s")) pts.push_back({*b, i});
      if (pts.empty()) continue;
      std::sort(pts.begin(), pts.end());
      auto t = [&](std::size_t k) { return *r.number(pts[k].second, "step_time_s"); };
      std::size_t best = 0;
      for (std::size_t k = 1; k < pts.size(); ++k)
        if (t(k) < t(best)) best = k;
      const double limit = t(best) * (1 + sweet_tolerance);
      std::size_t lo = best, hi = best;
      while (lo > 0 && t(lo - 1) <= limit) --lo;
      while (hi + 1 < pts.size() && t(hi + 1) <= limit) ++hi;
      auto end = [&](std::size_t k) {
        const std::size_t i = pts[k].second;
        return BucketCurve::End{pts[k].first, t(k), r.number(i, "comm_time_s").value_or(0),
                                r.number(i, "exposed_comm_s").value_or(0), r.number(i, "buckets.count").value_or(0)};
      };
      double min_comm = end(0).comm_time_s, min_exposed = end(0).exposed_comm_s;
      for (std::size_t k = 1; k < pts.size(); ++k) {
        min_comm = std::min(min_comm, end(k).comm_time_s);
        min_exposed = std::min(min_exposed, end(k).exposed_comm_s);
      }
      auto regime = [&](std::size_t first, std::size_t last) {
        BucketCurve::Regime g;
        g.lo_mb = pts[first].first;
        g.hi_mb = pts[last].first;
        g.buckets_lo = end(first).bucket_count;
        g.buckets_hi = end(last).bucket_count;
        g.comm_min_s = g.exposed_min_s = g.step_min_s = std::numeric_limits<double>::infinity();
        for (std::size_t k = first; k <= last; ++k) {
          const auto e = end(k);
          g.comm_min_s = std::min(g.comm_min_s, e.comm_time_s);
          g.comm_max_s = std::max(g.comm_max_s, e.comm_time_s);
          g.exposed_min_s = std::min(g.exposed_min_s, e.exposed_comm_s);
          g.exposed_max_s = std::max(g.exposed_max_s, e.exposed_comm_s);
          g.step_min_s = std::min(g.step_min_s, e.step_time_s);
          g.step_max_s = std::max(g.step_max_s, e.step_time_s);
        }
        return g;
      };
      BucketCurve c{series, pts[best].first, t(best), pts[lo].first, pts[hi].first,
                    end(0), end(pts.size() - 1), end(best), min_comm, min_exposed, std::nullopt, regime(lo, hi), std::nullopt};
      std::size_t n_lat = 0;  // points from the smallest with comm ≥ factor × least
      // No communication at all (dp 1): neither regime.
      while (min_comm > 0 && n_lat < pts.size() && end(n_lat).comm_time_s >= BucketCurve::kLatencyCommFactor * min_comm)
        ++n_lat;
      if (n_lat > 0) c.latency_bound = regime(0, n_lat - 1);
      std::size_t first_exposed = pts.size();  // points up to the largest with exposed ≥ share × comm
      while (first_exposed > 0 && end(first_exposed - 1).comm_time_s > 0 &&
             end(first_exposed - 1).exposed_comm_s >= BucketCurve::kExposedShare * end(first_exposed - 1).comm_time_s)
        --first_exposed;
      if (first_exposed < pts.size()) c.last_bucket_exposed = regime(first_exposed, pts.size() - 1);
      s.bucket_curves.push_back(std::move(c));
    }
  }

  if (const auto a = axis_named(r, "parallelism.dp"); a && !moves_with_another(r.axes, *a)) {
    for (const auto& [series, members] : curves_along(r, *a)) {
      DpCurve c{series, {}, std::nullopt};
      for (std::size_t i : members) {
        const auto dp = to_number(r.points[i].values[*a]);
        const auto tps = r.number(i, "tokens_per_s");
        if (!dp || !tps || *dp <= 0) continue;
        c.points.push_back({*dp, *tps, r.number(i, "step_time_s").value_or(0),
                            r.number(i, "exposed_comm_s").value_or(0), 1});
      }
      if (c.points.empty()) continue;
      std::sort(c.points.begin(), c.points.end(), [](const auto& x, const auto& y) { return x.dp < y.dp; });
      const double base = c.points.front().tokens_per_s / c.points.front().dp;
      for (auto& p : c.points) {
        p.efficiency = base > 0 ? p.tokens_per_s / p.dp / base : 0;
        if (!c.first_dp_below && p.efficiency < dp_efficiency_threshold) c.first_dp_below = p.dp;
      }
      s.dp_curves.push_back(std::move(c));
    }
  }
  return s;
}

}  // namespace stepsim::models
