// SPDX-License-Identifier: Apache-2.0
// Segmented least-squares fit of nccl-tests times to factors over the nominal model
// (style.md §3.3 step 3–4), and its error against the measurements.
#include "validate/fit.hpp"

#include "hardware/nccl_model.hpp"
#include "sim/support/error.hpp"
#include "sim/support/names.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <tuple>
#include <stdexcept>

namespace stepsim::validate {

NominalLine nominal_line(const hardware::HardwareProfile& hw, hardware::CollectiveOp op,
                         const hardware::GroupShape& group, hardware::CollectiveAlgorithm algorithm) {
  constexpr double v = 1e9;
  const auto c = hardware::collective_cost(hw, op, v, group, algorithm);
  return {c.latency_s, c.bandwidth_s / v};
}

namespace {

using real = long double;

// Weighted sums over a run of points, w = 1/t² (relative error).
struct Sums {
  real s0 = 0, s1 = 0, s2 = 0, t0 = 0, t1 = 0, t2 = 0;
  Sums operator-(const Sums& o) const { return {s0 - o.s0, s1 - o.s1, s2 - o.s2, t0 - o.t0, t1 - o.t1, t2 - o.t2}; }
};

struct LineFit {
  double a = 0, b = 0;
  double sse = 0;  // Σ ((a + bV − t)/t)²
};

// Least squares with a ≥ a_min and b ≥ b_min (clamp one, re-solve the other).
LineFit solve(const Sums& s, double a_min, double b_min) {
  real a = 0, b = 0;
  const real det = s.s0 * s.s2 - s.s1 * s.s1;
  if (det > 1e-18L * s.s0 * s.s2) {
    a = (s.s2 * s.t0 - s.s1 * s.t1) / det;
    b = (s.s0 * s.t1 - s.s1 * s.t0) / det;
  } else {
    b = b_min;
    a = (s.t0 - b * s.s1) / s.s0;
  }
  if (b < b_min) {
    b = b_min;
    a = (s.t0 - b * s.s1) / s.s0;
  }
  if (a < a_min) {
    a = a_min;
    b = s.s2 > 0 ? (s.t1 - a * s.s1) / s.s2 : b_min;
    if (b < b_min) b = b_min;
  }
  const real sse = s.t2 - 2 * a * s.t0 - 2 * b * s.t1 + a * a * s.s0 + 2 * a * b * s.s1 + b * b * s.s2;
  return {static_cast<double>(a), static_cast<double>(b), static_cast<double>(std::max<real>(0, sse))};
}

}  // namespace

namespace {

hardware::CalibrationTable fit_once(std::vector<Measurement> points, const NominalLine& nominal,
                                    const FitOptions& options) {
  std::stable_sort(points.begin(), points.end(), [](const Measurement& x, const Measurement& y) { return x.bytes < y.bytes; });
  const int n = static_cast<int>(points.size());
  const int m = std::min(options.min_points, n);
  const double a_min = 1e-3 * nominal.alpha_s;
  const double b_min = nominal.seconds_per_byte / options.max_bandwidth_factor;

  std::vector<Sums> prefix(points.size() + 1);
  for (int i = 0; i < n; ++i) {
    const real v = points[i].bytes, t = points[i].time_s, w = 1 / (t * t);
    Sums s = prefix[i];
    s.s0 += w, s.s1 += w * v, s.s2 += w * v * v, s.t0 += w * t, s.t1 += w * v * t, s.t2 += w * t * t;
    prefix[i + 1] = s;
  }
  auto seg = [&](int i, int j) { return solve(prefix[j] - prefix[i], a_min, b_min); };  // points [i, j)

  // best[k][j]: minimal SSE of the first j points in k segments; from[k][j]: start of the last.
  const int k_max = std::max(1, std::min(options.max_segments, n / m));
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<std::vector<double>> best(k_max + 1, std::vector<double>(n + 1, inf));
  std::vector<std::vector<int>> from(k_max + 1, std::vector<int>(n + 1, -1));
  best[0][0] = 0;
  for (int k = 1; k <= k_max; ++k)
    for (int j = k * m; j <= n; ++j)
      for (int i = (k - 1) * m; i + m <= j; ++i) {
        if (best[k - 1][i] == inf) continue;
        const double c = best[k - 1][i] + seg(i, j).sse;
        if (c < best[k][j]) {
          best[k][j] = c;
          from[k][j] = i;
        }
      }
  int k_best = 1;
  double score_best = inf;
  const double floor2 = options.noise_floor * options.noise_floor;
  for (int k = 1; k <= k_max; ++k) {
    if (best[k][n] == inf) continue;
    if (options.segments > 0) {  // fixed count: the largest feasible one up to it
      if (k <= options.segments) k_best = k;
      continue;
    }
    const double score = n * std::log(std::max(best[k][n] / n, floor2)) + (3.0 * k - 1) * std::log(static_cast<double>(n));
    if (score < score_best - 1e-9) {
      score_best = score;
      k_best = k;
    }
  }
  std::vector<int> starts;
  for (int k = k_best, j = n; k > 0; --k) {
    const int i = from[k][j];
    starts.push_back(i);
    j = i;
  }
  std::reverse(starts.begin(), starts.end());

  hardware::CalibrationTable table;
  for (std::size_t s = 0; s < starts.size(); ++s) {
    const int i = starts[s];
    const int j = s + 1 < starts.size() ? starts[s + 1] : n;
    const LineFit f = seg(i, j);
    hardware::CalibrationSegment out;
    out.lo_bytes = s == 0 ? points[i].bytes : table.segments.back().hi_bytes;
    if (j < n) {
      const double lo = points[j - 1].bytes, hi = points[j].bytes;
      double mid = std::floor(std::sqrt(std::max(lo, 1.0) * hi));
      // Continuity: where this segment's line and the next one's cross between the two
      // measured sizes, the boundary goes there (NCCL switches to whichever protocol is
      // faster, semantics.md §D.3 rule 83, so the switch sits where the two lines meet).
      const int k = starts[s + 1];
      const int k_end = s + 2 < starts.size() ? starts[s + 2] : n;
      const LineFit g = seg(k, k_end);
      if (f.b != g.b) {
        const double x = (g.a - f.a) / (f.b - g.b);
        if (x > lo && x <= hi) mid = std::floor(x);
      }
      if (mid <= lo) mid = lo + 1;
      if (mid > hi) mid = hi;
      out.hi_bytes = mid;
    } else {
      out.hi_bytes = points[n - 1].bytes + 1;
    }
    out.latency_factor = f.a / nominal.alpha_s;
    out.bandwidth_factor = nominal.seconds_per_byte / f.b;
    out.points = j - i;
    for (int p = i; p < j; ++p)
      out.max_residual = std::max(out.max_residual,
                                  std::fabs(f.a + f.b * points[p].bytes - points[p].time_s) / points[p].time_s);
    table.segments.push_back(out);
  }
  return table;
}

// Relative error of `table` at `p`.
double residual(const hardware::CalibrationTable& table, const NominalLine& nominal, const Measurement& p) {
  const auto& segs = table.segments;
  const hardware::CalibrationSegment* s = &segs.back();
  for (const auto& x : segs)
    if (p.bytes < x.hi_bytes) {
      s = &x;
      break;
    }
  const double t = s->latency_factor * nominal.alpha_s + p.bytes * nominal.seconds_per_byte / s->bandwidth_factor;
  return t / p.time_s - 1;
}

hardware::CalibrationTable refit_without_outliers(const hardware::CalibrationTable& first,
                                                  const std::vector<Measurement>& points, const NominalLine& nominal,
                                                  const FitOptions& options, std::vector<Measurement>* outliers) {
  hardware::CalibrationTable table = first;
  // One round of outlier rejection: nccl-tests rows with a one-off spike (a straggling
  // iteration, 2–4x the neighbours) would otherwise decide where the segments go.
  std::vector<double> r;
  for (const auto& p : points) r.push_back(std::fabs(residual(table, nominal, p)));
  std::vector<double> sorted = r;
  std::sort(sorted.begin(), sorted.end());
  const double med = sorted[sorted.size() / 2];
  const double limit = std::max(options.outlier_threshold, 5 * med);
  std::vector<Measurement> kept;
  for (std::size_t i = 0; i < points.size(); ++i) {
    if (r[i] > limit && outliers) outliers->push_back(points[i]);
    if (r[i] <= limit) kept.push_back(points[i]);
  }
  if (kept.size() == points.size() || kept.size() < 2) return table;
  return fit_once(kept, nominal, options);
}

}  // namespace

std::vector<Measurement> drop_spikes(const std::vector<Measurement>& sorted, double tolerance,
                                     std::vector<Measurement>* spikes) {
  if (!(tolerance > 0)) return sorted;
  const double k = 1 + tolerance;
  std::vector<bool> spike(sorted.size(), false);
  for (std::size_t i = 0; i + 1 < sorted.size(); ++i)
    spike[i] = sorted[i].time_s > k * sorted[i + 1].time_s && (i == 0 || sorted[i].time_s > k * sorted[i - 1].time_s);
  std::vector<Measurement> kept;
  for (std::size_t i = 0; i < sorted.size(); ++i)
    if (!spike[i]) kept.push_back(sorted[i]);
  if (kept.size() < 2) return sorted;
  if (spikes)
    for (std::size_t i = 0; i < sorted.size(); ++i)
      if (spike[i]) spikes->push_back(sorted[i]);
  return kept;
}

double interpolate_time(const std::vector<Measurement>& points, double bytes, Interpolation how) {
  const std::size_t n = points.size();
  if (n < 2) throw std::invalid_argument("interpolate_time needs at least 2 measured sizes");
  // Interval [i, i+1] holding `bytes`; the end intervals extend beyond the measured range.
  std::size_t i = 0;
  while (i + 2 < n && bytes > points[i + 1].bytes) ++i;
  const Measurement& p = points[i];
  const Measurement& q = points[i + 1];
  // Below the smallest size: held flat (latency-bound; the fit's rule, fit_table).
  if (bytes < p.bytes) return p.time_s;
  if (how == Interpolation::Linear) {
    const double t = p.time_s + (q.time_s - p.time_s) * (bytes - p.bytes) / (q.bytes - p.bytes);
    return std::max(t, 0.01 * q.time_s);
  }
  // Log-log coordinates (sizes ≥ 1 byte).
  auto lx = [](double v) { return std::log(std::max(v, 1.0)); };
  std::vector<double> x(n), y(n);
  for (std::size_t j = 0; j < n; ++j) x[j] = lx(points[j].bytes), y[j] = std::log(points[j].time_s);
  const double u = lx(bytes);
  const double h = x[i + 1] - x[i];
  const double d = (y[i + 1] - y[i]) / h;
  if (how == Interpolation::LogLog || u < x[i] || u > x[i + 1]) return std::exp(y[i] + d * (u - x[i]));
  // Fritsch–Carlson: weighted harmonic-mean slopes at interior sizes keep each interval
  // monotone (Fritsch & Carlson, SIAM J. Numer. Anal. 17(2), 1980; the weights of Fritsch &
  // Butland 1984, as SciPy's PCHIP uses them); the end sizes take their interval's secant.
  auto slope = [&](std::size_t k) {
    if (k == 0 || k + 1 == n) return (y[k == 0 ? 1 : k] - y[k == 0 ? 0 : k - 1]) / (x[k == 0 ? 1 : k] - x[k == 0 ? 0 : k - 1]);
    const double h0 = x[k] - x[k - 1], h1 = x[k + 1] - x[k];
    const double d0 = (y[k] - y[k - 1]) / h0, d1 = (y[k + 1] - y[k]) / h1;
    if (d0 * d1 <= 0) return 0.0;
    const double w1 = 2 * h1 + h0, w2 = h1 + 2 * h0;
    return (w1 + w2) / (w1 / d0 + w2 / d1);
  };
  const double m0 = slope(i), m1 = slope(i + 1);
  const double s = (u - x[i]) / h;
  const double h00 = (1 + 2 * s) * (1 - s) * (1 - s), h10 = s * (1 - s) * (1 - s), h01 = s * s * (3 - 2 * s),
               h11 = s * s * (s - 1);
  return std::exp(h00 * y[i] + h10 * h * m0 + h01 * y[i + 1] + h11 * h * m1);
}

hardware::CalibrationTable fit_table(std::vector<Measurement> points, const NominalLine& nominal,
                                     const FitOptions& options, const std::string& source,
                                     std::vector<Measurement>* outliers) {
  if (points.size() < 2)
    throw InputError(source, "", fmt::format("a fit needs at least 2 timed sizes, got {}", points.size()));
  // Weights are 1/t²: a time near 0 (1e-207 s) or a size past 2^53 makes the sums overflow or
  // lose every digit (issue 13 item 11). The readers refuse such rows; this guards library callers.
  for (const auto& p : points)
    if (!(p.time_s >= kMinMeasuredTimeS && p.time_s <= kMaxMeasuredTimeS) || !(p.bytes >= 0 && p.bytes <= 9.007e15))
      throw InputError(source, "", fmt::format("a measurement of {:g} bytes in {:g} s is outside what a fit can use "
                                               "(time in [{:g}, {:g}] s, size in [0, 2^53] bytes)",
                                               p.bytes, p.time_s, kMinMeasuredTimeS, kMaxMeasuredTimeS));
  if (!(nominal.alpha_s > 0) || !(nominal.seconds_per_byte > 0))
    throw InputError(source, "", fmt::format("the nominal model predicts latency {} s and {} s/byte for this "
                                             "collective; both must be > 0 to express factors over it",
                                             nominal.alpha_s, nominal.seconds_per_byte));
  // Spikes first: a collective's time does not fall as the message grows (NCCL picks the
  // fastest algorithm and protocol at every size, semantics.md §D.3 rule 83), so a row more
  // than `monotone_tolerance` slower than both its neighbours (the next size only, for the
  // smallest) is a one-off (nccl-tests averages 20 iterations, §D.5 rule 90: one straggler
  // shows as 2-4x). A plateau that steps down (a late protocol switch) is not a spike.
  std::stable_sort(points.begin(), points.end(), [](const Measurement& x, const Measurement& y) { return x.bytes < y.bytes; });
  const std::vector<Measurement> fit_points = drop_spikes(points, options.monotone_tolerance, outliers);
  hardware::CalibrationTable table = fit_once(fit_points, nominal, options);
  if (options.outlier_threshold > 0 && fit_points.size() >= 6) table = refit_without_outliers(table, fit_points, nominal, options, outliers);
  // Below the smallest size kept (a leading spike left out: nccl-tests' first size often
  // carries warm-up), the collective is latency-bound: its time there is held at the fitted
  // time of that size instead of following the first segment's line down, which is steep
  // when that segment spans a protocol switch (time does not rise as the message shrinks and
  // is near-flat below the LL protocol's latency, semantics.md §D.3).
  if (fit_points.front().bytes > points.front().bytes) {
    const hardware::CalibrationSegment& first = table.segments.front();
    const double v0 = fit_points.front().bytes;
    const double t0 = first.latency_factor * nominal.alpha_s + v0 * nominal.seconds_per_byte / first.bandwidth_factor;
    hardware::CalibrationSegment flat;
    flat.lo_bytes = points.front().bytes;
    flat.hi_bytes = v0;
    flat.bandwidth_factor = options.max_bandwidth_factor;
    flat.latency_factor = (t0 - v0 * nominal.seconds_per_byte / flat.bandwidth_factor) / nominal.alpha_s;
    table.segments.front().lo_bytes = v0;
    if (flat.latency_factor > 0) table.segments.insert(table.segments.begin(), flat);
  }
  // The table must still cover every measured size, outliers included.
  table.segments.front().lo_bytes = std::min(table.segments.front().lo_bytes, points.front().bytes);
  table.segments.back().hi_bytes = std::max(table.segments.back().hi_bytes, points.back().bytes + 1);
  return table;
}

ErrorSummary summarize_errors(const std::vector<std::pair<double, double>>& errors) {
  std::vector<double> large, small;
  for (const auto& [bytes, e] : errors) (bytes >= 1024.0 * 1024.0 ? large : small).push_back(std::fabs(e));
  auto median = [](std::vector<double> v) {
    if (v.empty()) return 0.0;
    std::sort(v.begin(), v.end());
    const std::size_t h = v.size() / 2;
    return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
  };
  ErrorSummary s;
  s.large_points = static_cast<int>(large.size());
  s.small_points = static_cast<int>(small.size());
  s.large_median = median(large);
  s.small_median = median(small);
  for (double e : large) s.large_max = std::max(s.large_max, e);
  for (double e : small) s.small_max = std::max(s.small_max, e);
  return s;
}

ErrorSummary cross_check_interpolation(const std::vector<Measurement>& points, Interpolation how,
                                       double monotone_tolerance) {
  std::vector<Measurement> even;
  for (std::size_t i = 0; i < points.size(); i += 2) {
    if (!even.empty() && even.back().bytes == points[i].bytes) {  // a repeated size: one point, the mean
      even.back().time_s = 0.5 * (even.back().time_s + points[i].time_s);
      continue;
    }
    even.push_back(points[i]);
  }
  even = drop_spikes(even, monotone_tolerance);
  if (even.size() < 2) return {};
  std::vector<std::pair<double, double>> errors;
  for (std::size_t i = 1; i < points.size(); i += 2)
    errors.emplace_back(points[i].bytes, interpolate_time(even, points[i].bytes, how) / points[i].time_s - 1);
  return summarize_errors(errors);
}

std::optional<hardware::CollectiveOp> modelled_op(const std::string& nccl_op) {
  for (const auto& e : hardware::collective_ops())
    if (nccl_op == e.nccl_tests) return e.op;
  return std::nullopt;
}

namespace {

std::string segment_label(const hardware::CalibrationMatch& m) {
  if (!m.segment) return "nominal";
  return fmt::format("[{:.0f}, {:.0f}){}", m.segment->lo_bytes, m.segment->hi_bytes, m.size_extrapolated ? " extrap." : "");
}

}  // namespace

namespace {

// The accelerator model a device or profile name names ("H100", "B200"), "" when none.
std::string model_in(std::string text) {
  // Accelerator model names, longest first so "H200" is not read as "H20".
  static const char* const kModels[] = {"GB200", "GB300", "MI300X", "MI325X", "MI355X", "H100", "H200", "H800",
                                        "A100", "A800", "B200", "B300", "V100", "L40S", "H20", "L40", "L4"};
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  for (const char* m : kModels)
    if (text.find(m) != std::string::npos) return m;
  return "";
}

}  // namespace

namespace {

// "FILE:LINE", or the file alone for a table without line numbers (a profiler trace's).
std::string located(const std::string& source, int line) {
  return line > 0 ? fmt::format("{}:{}", source, line) : source;
}

}  // namespace

std::string builtin_profile_for_gpu(const std::string& gpu) {
  const std::string m = model_in(gpu);
  std::string upper = gpu;
  std::transform(upper.begin(), upper.end(), upper.begin(), [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  if (m == "A100") return upper.find("40GB") != std::string::npos ? "a100-40gb" : "a100-sxm";
  if (m == "H100") return "h100-sxm";
  if (m == "H200") return upper.find("NVL") != std::string::npos ? "h200-nvl" : "h200";
  if (m == "GB200") return "gb200-nvl72";
  if (m == "GB300") return "gb300-nvl72";
  if (m == "V100") return "v100-sxm2";
  for (const char* same : {"H800", "H20", "B200", "B300", "MI300X", "MI325X", "MI355X"})
    if (m == same) {
      std::string name = same;
      std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      return name;
    }
  return "";
}

std::optional<std::string> gpu_profile_mismatch(const std::string& gpu, const hardware::HardwareProfile& hw) {
  const std::string measured = model_in(gpu);
  const std::string profile = model_in(hw.name).empty() ? model_in(hw.description) : model_in(hw.name);
  if (measured.empty() || profile.empty() || measured == profile) return std::nullopt;
  return fmt::format("measured on {} ({}), fitted over profile '{}' ({}): the factors will carry the difference "
                     "between the two GPUs; fit over the measured GPU's profile", measured, gpu, hw.name, profile);
}

std::vector<Measurement> pool_sizes(std::vector<Measurement> points, std::size_t max_sizes) {
  std::stable_sort(points.begin(), points.end(), [](const Measurement& x, const Measurement& y) { return x.bytes < y.bytes; });
  // Median of a run of points (by time); its line is the first point's.
  auto median_of = [](std::vector<Measurement> run) {
    std::vector<double> t, b;
    for (const auto& p : run) {
      t.push_back(p.time_s);
      b.push_back(p.bytes);
    }
    auto med = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      const std::size_t n = v.size();
      return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
    };
    return Measurement{med(b), med(t), run.front().line};
  };
  std::vector<Measurement> by_size;
  for (std::size_t i = 0; i < points.size();) {
    std::size_t j = i;
    while (j < points.size() && points[j].bytes == points[i].bytes) ++j;
    by_size.push_back(j - i == 1 ? points[i] : median_of({points.begin() + static_cast<std::ptrdiff_t>(i),
                                                         points.begin() + static_cast<std::ptrdiff_t>(j)}));
    i = j;
  }
  if (max_sizes < 2 || by_size.size() <= max_sizes) return by_size;
  // Too many distinct sizes for the O(n²·K) segmentation: bins equal in log size.
  const double lo = std::log(std::max(1.0, by_size.front().bytes)), hi = std::log(std::max(1.0, by_size.back().bytes));
  const double width = (hi - lo) / static_cast<double>(max_sizes);
  std::vector<Measurement> binned;
  std::vector<Measurement> bin;
  std::size_t current = 0;
  for (const auto& p : by_size) {
    const auto k = width > 0 ? std::min(max_sizes - 1, static_cast<std::size_t>((std::log(std::max(1.0, p.bytes)) - lo) / width))
                             : std::size_t{0};
    if (!bin.empty() && k != current) {
      binned.push_back(median_of(bin));
      bin.clear();
    }
    current = k;
    bin.push_back(p);
  }
  if (!bin.empty()) binned.push_back(median_of(bin));
  return binned;
}

CalibrationResult calibrate(const std::vector<NcclTestsLog>& logs, const hardware::HardwareProfile& hw,
                            const CalibrateOptions& options, const std::string& overlay_name) {
  CalibrationResult result;
  result.overlay.name = overlay_name;
  result.overlay.hardware = hw.name;
  result.overlay.algorithm = options.algorithm;
  // Repeated runs of one table (same op, ranks and hosts; in one file or several) are pooled
  // into the first: a size measured several times takes the median (issue 13 item 10).
  std::vector<NcclTestsLog> pooled_logs = logs;
  std::set<std::pair<std::size_t, std::size_t>> pooled_away;
  {
    std::map<std::tuple<std::string, int, int>, std::pair<std::size_t, std::size_t>> first;
    for (std::size_t li = 0; li < pooled_logs.size(); ++li)
      for (std::size_t ri = 0; ri < pooled_logs[li].runs.size(); ++ri) {
        const auto& run = pooled_logs[li].runs[ri];
        const auto key = std::make_tuple(options.op.empty() ? run.op : options.op,
                                         options.ranks > 0 ? options.ranks : run.ranks, run.nodes);
        const auto [it, fresh] = first.emplace(key, std::make_pair(li, ri));
        if (fresh || std::get<0>(key).empty()) continue;
        auto& into = pooled_logs[it->second.first].runs[it->second.second];
        into.rows.insert(into.rows.end(), run.rows.begin(), run.rows.end());
        pooled_away.insert({li, ri});
        result.warnings.push_back(fmt::format("{}: a repeated {} table at {} ranks is pooled with {} (median time "
                                              "per size)", located(pooled_logs[li].source, run.first_line), std::get<0>(key),
                                              std::get<1>(key), located(pooled_logs[it->second.first].source, into.first_line)));
      }
  }
  for (std::size_t li = 0; li < pooled_logs.size(); ++li) {
    const auto& log = pooled_logs[li];
    for (const auto& u : log.unreadable)
      result.warnings.push_back(fmt::format("{}:{}: unreadable line skipped: {} ('{}')", log.source, u.line, u.reason, u.text));
    hardware::CalibrationSource src;
    src.file = log.source;
    src.sha256 = log.sha256;
    src.format = log.format;
    for (std::size_t ri = 0; ri < log.runs.size(); ++ri) {
      const auto& run = log.runs[ri];
      if (pooled_away.count({li, ri})) {
        if (src.ranks == 0) {
          src.ranks = run.ranks;
          src.nodes = run.nodes;
          src.gpu = run.gpu;
          src.nccl_version = run.nccl_version;
        }
        continue;
      }
      const std::string where = fmt::format("line {}", run.first_line);
      const std::string op_name = options.op.empty() ? run.op : options.op;
      // --op names what a table measures when the log does not say; it never overrides what the
      // log says (its header, its file name or its busbw/algbw ratio).
      if (!options.op.empty() && !run.op.empty() && run.op != options.op)
        throw InputError(log.source, where,
                         fmt::format("--op {} contradicts this table, which measures {} (from its header, file name or "
                                     "busbw/algbw ratio); {}", options.op, run.op,
                                     modelled_op(run.op) ? "drop --op or pass --op " + run.op
                                                         : "stepsim fits " +
                                                               join_names(hardware::collective_op_nccl_tests_names()) +
                                                               " tables only"));
      if (op_name.empty())
        throw InputError(log.source, where, "cannot tell which collective this table measures (no 'Collective test "
                                            "starting' line, no op in the file name); pass --op all_reduce|all_gather|reduce_scatter");
      const auto op = modelled_op(op_name);
      if (!op) {
        result.warnings.push_back(fmt::format("{}: {} table ({} rows) skipped: stepsim models AllReduce, "
                                              "AllGather and ReduceScatter only", located(log.source, run.first_line), op_name, run.rows.size()));
        continue;
      }
      const int ranks = options.ranks > 0 ? options.ranks : run.ranks;
      if (ranks == 1) {
        result.warnings.push_back(fmt::format("{}: one-rank table ({} rows) skipped: nothing to communicate", located(log.source, run.first_line), run.rows.size()));
        continue;
      }
      if (ranks < 2)
        throw InputError(log.source, where, fmt::format("rank count unknown or < 2 (got {}): no '#  Rank' lines and "
                                                        "busbw/algbw too rounded; pass --ranks N", ranks));
      int g = options.gpus_per_node;
      if (g <= 0 && run.nodes > 0) {
        if (ranks % run.nodes != 0)
          throw InputError(log.source, where, fmt::format("{} ranks on {} hosts is not a whole number of GPUs per "
                                                          "node; pass --gpus-per-node", ranks, run.nodes));
        g = ranks / run.nodes;
      }
      if (g <= 0) g = std::min(ranks, hw.gpus_per_node);
      if (ranks > g && ranks % g != 0)
        throw InputError(log.source, where, fmt::format("{} ranks is not a whole number of {}-GPU nodes", ranks, g));
      hardware::GroupShape group{ranks, std::min(g, ranks), 0};
      const int nodes = (ranks + group.ranks_per_node - 1) / group.ranks_per_node;
      if (src.ranks == 0) {
        src.ranks = ranks;
        src.nodes = run.nodes > 0 ? run.nodes : nodes;
        src.gpu = run.gpu;
        src.nccl_version = run.nccl_version;
      }
      if (const auto mismatch = gpu_profile_mismatch(run.gpu, hw))
        result.warnings.push_back(fmt::format("{}: {}", located(log.source, run.first_line), *mismatch));

      std::vector<Measurement> points;
      const double factor = bus_factor(op_name, ranks);
      int derived = 0;
      for (const auto& r : run.rows) {
        if (const auto t = r.time_us()) {
          points.push_back({r.size_bytes, *t * 1e-6, r.line});
          continue;
        }
        // Tables that print only busbw: t = S · factor / busbw (nccl-tests' definitions, §D.5).
        const auto bw = r.oop_busbw_GBps ? r.oop_busbw_GBps : r.ip_busbw_GBps;
        if (bw && *bw > 0) {
          points.push_back({r.size_bytes, r.size_bytes * factor / (*bw * 1e9), r.line});
          ++derived;
        } else {
          result.warnings.push_back(fmt::format("{}: row has neither a time nor a busbw; skipped", located(log.source, r.line)));
        }
      }
      if (derived > 0)
        result.warnings.push_back(fmt::format("{}: {} rows give busbw only; their time is S x {:.4g} / busbw "
                                              "(rounded busbw makes small sizes imprecise)", located(log.source, run.first_line), derived, factor));
      points = pool_sizes(std::move(points), kMaxFitSizes);
      const NominalLine nom = nominal_line(hw, *op, group, options.algorithm);
      TableReport rep;
      rep.source = log.source;
      rep.op = op_name;
      rep.group = group;
      rep.nodes = nodes;
      rep.bus_factor = factor;
      std::vector<Measurement> outliers;
      rep.table = fit_table(points, nom, options.fit, log.source + ":" + where, &outliers);
      for (const auto& p : outliers)
        result.warnings.push_back(fmt::format("{}: outlier left out of the fit: {:.0f} B took {:.2f} us",
                                              located(log.source, p.line), p.bytes, p.time_s * 1e6));
      rep.table.op = *op;
      rep.table.scope = hardware::scope_of(group);
      rep.table.ranks = ranks;
      rep.table.ranks_per_node = group.ranks_per_node;
      rep.table.source = log.source;

      // Cross-validation: fit the even-indexed sizes, predict the odd-indexed ones.
      std::vector<Measurement> even;
      for (std::size_t i = 0; i < points.size(); i += 2) even.push_back(points[i]);
      std::optional<hardware::CalibrationOverlay> cross;
      if (even.size() >= 2) {
        hardware::CalibrationOverlay o;
        o.tables.push_back(fit_table(even, nom, options.fit, log.source + ":" + where));
        o.tables.back().op = *op;
        o.tables.back().scope = rep.table.scope;
        o.tables.back().ranks = ranks;
        cross = std::move(o);
      }
      hardware::CalibrationOverlay self;
      self.tables.push_back(rep.table);
      std::vector<std::pair<double, double>> e_nom, e_fit, e_cross, e_cross_nom, e_nccl;
      for (std::size_t i = 0; i < points.size(); ++i) {
        const auto& p = points[i];
        RowComparison row;
        row.line = p.line;
        row.bytes = p.bytes;
        row.measured_s = p.time_s;
        row.nominal_s = nom.alpha_s + nom.seconds_per_byte * p.bytes;
        const auto m = hardware::find_calibration(self, *op, group, p.bytes);
        row.fitted_s = hardware::apply_factors(hardware::collective_cost(hw, *op, p.bytes, group, options.algorithm), *m.segment).time_s();
        row.segment = segment_label(m);
        e_nom.emplace_back(p.bytes, row.nominal_s / p.time_s - 1);
        if (!hw.nccl.arch.empty()) {
          const auto nc = hardware::nccl_collective_cost(hw, *op, p.bytes, group, options.algorithm);
          row.nccl_s = nc.time_s();
          row.nccl_choice = nc.algorithm + "/" + nc.protocol;
          e_nccl.emplace_back(p.bytes, *row.nccl_s / p.time_s - 1);
        }
        e_fit.emplace_back(p.bytes, row.fitted_s / p.time_s - 1);
        if (cross && i % 2 == 1) {
          const auto mc = hardware::find_calibration(*cross, *op, group, p.bytes);
          row.cross_s = hardware::apply_factors(hardware::collective_cost(hw, *op, p.bytes, group, options.algorithm), *mc.segment).time_s();
          e_cross.emplace_back(p.bytes, *row.cross_s / p.time_s - 1);
          e_cross_nom.emplace_back(p.bytes, row.nominal_s / p.time_s - 1);
        }
        rep.rows.push_back(row);
      }
      rep.nominal = summarize_errors(e_nom);
      rep.fitted = summarize_errors(e_fit);
      rep.cross = summarize_errors(e_cross);
      rep.cross_nominal = summarize_errors(e_cross_nom);
      rep.cross_interpolation = cross_check_interpolation(points, Interpolation::Linear, options.fit.monotone_tolerance);
      if (!e_nccl.empty()) rep.nccl = summarize_errors(e_nccl);

      // One table per (op, scope, ranks): a later run of the same key replaces nothing; warn.
      const auto dup = std::find_if(result.overlay.tables.begin(), result.overlay.tables.end(), [&](const auto& t) {
        return t.op == rep.table.op && t.scope == rep.table.scope && t.ranks == rep.table.ranks;
      });
      if (dup != result.overlay.tables.end())
        result.warnings.push_back(fmt::format("{}: a second {} {} table at {} ranks; the overlay keeps the first ({})", located(log.source, run.first_line), hardware::collective_op_label(*op),
                                              hardware::calibration_scope_name(rep.table.scope), ranks, dup->source));
      else
        result.overlay.tables.push_back(rep.table);
      result.tables.push_back(std::move(rep));
    }
    if (src.ranks > 0) result.overlay.sources.push_back(src);
  }
  if (result.overlay.tables.empty())
    throw InputError(logs.empty() ? "" : logs.front().source, "",
                     "no AllReduce, AllGather or ReduceScatter table to fit in the given logs");
  return result;
}

}  // namespace stepsim::validate
