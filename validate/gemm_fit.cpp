// SPDX-License-Identifier: Apache-2.0
// GEMM measurements and the GEMM-curve fit (gemm_fit.hpp).
#include "validate/gemm_fit.hpp"

#include "sim/support/error.hpp"
#include "sim/support/json_reader.hpp"
#include "validate/measured_timeline.hpp"
#include "validate/nccl_tests.hpp"
#include "validate/stats.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

namespace stepsim::validate {

namespace {

constexpr const char* kSweepSchema = "stepsim.gemm-sweep/1";

void read_sweep(const nlohmann::json& doc, GemmMeasurements& out) {
  JsonReader root(doc, out.source, "");
  root.choice_or("schema", kSweepSchema, {kSweepSchema});
  root.string_or("generator", "");
  if (const auto env = root.optional_object("environment")) {
    out.device = env->string_or("device", "");
    for (const char* k : {"host", "cuda_runtime", "cuda_driver", "nccl", "cublas"}) env->string_or(k, "");
    env->finish();
  }
  root.choice_or("dtype", "bf16", {"bf16"});
  root.choice_or("accumulate", "fp32", {"fp32"});
  root.integer_or("iters", 1, 1, 1 << 30);
  root.integer_or("warmup", 0, 0, 1 << 30);
  for (const auto& r : root.objects("rows", true)) {
    GemmPoint p;
    p.name = r.string("name");
    p.hidden = r.integer_or("hidden", 0, 0, 1 << 30);
    p.ffn = r.integer_or("ffn", 0, 0, 1 << 30);
    p.tokens = r.integer_or("tokens", 0, 0, 1 << 30);
    p.shape.m = static_cast<double>(r.integer("m", 1, 1 << 30));
    p.shape.n = static_cast<double>(r.integer("n", 1, 1 << 30));
    p.shape.k = static_cast<double>(r.integer("k", 1, 1 << 30));
    r.boolean_or("trans_a", false);
    r.boolean_or("trans_b", false);
    const double flops = r.number("flops", Check::Positive);
    const double expect = hardware::gemm_flops(p.shape);
    if (std::fabs(flops / expect - 1) > 1e-6)
      r.fail("flops", fmt::format("expected 2·m·n·k = {:.17g}, got {:.17g}", expect, flops));
    p.measured_s = r.number("time_s", Check::Positive);
    if (p.measured_s >= 100) r.fail("time_s", fmt::format("expected the seconds of one GEMM (< 100), got {:g}", p.measured_s));
    r.number_or("flops_per_s", 0.0, Check::NonNegative);
    r.finish();
    p.where = r.pointer();
    out.points.push_back(std::move(p));
  }
  root.finish();
}

// The GEMM kernels of mlp-step's tasks, with the shapes gemm-sweep gives the same roles
// (validate/cuda/gemm_sweep.cu layer_shapes; D hidden, F ffn, B tokens).
void read_mlp_step(const std::string& text, GemmMeasurements& out) {
  const MeasuredTimeline t = parse_measured_timeline(text, out.source);
  out.device = t.environment.device;
  const auto d = static_cast<double>(t.config.hidden), f = static_cast<double>(t.config.ffn),
             b = static_cast<double>(t.config.tokens);
  struct Role {
    const char* task_suffix;  // after "fwd.layers.N" / "bwd.layers.N"
    const char* kernel;
    const char* name;
    hardware::GemmShape shape;
  };
  const Role roles[] = {{"fwd", "gemm.w_in", "fwd.w_in", {b, f, d, 1}},   {"fwd", "gemm.w_out", "fwd.w_out", {b, d, f, 1}},
                        {".w_out", "dgrad", "dgrad.w_out", {b, f, d, 1}}, {".w_out", "wgrad", "wgrad.w_out", {f, d, b, 1}},
                        {".w_in", "dgrad", "dgrad.w_in", {b, d, f, 1}},   {".w_in", "wgrad", "wgrad.w_in", {d, f, b, 1}}};
  std::map<std::string, std::vector<double>> times;
  for (const auto& it : t.iterations)
    for (const auto& rank : it.ranks)
      for (const auto& task : rank.tasks) {
        // Strip an "mbK." prefix.
        std::string name = task.name;
        if (name.rfind("mb", 0) == 0 && name.find('.') != std::string::npos) name = name.substr(name.find('.') + 1);
        const bool fwd = name.rfind("fwd.layers.", 0) == 0;
        const bool bwd = name.rfind("bwd.layers.", 0) == 0;
        if (!fwd && !bwd) continue;
        for (const auto& k : task.kernels)
          for (const Role& role : roles) {
            const std::string suffix = role.task_suffix;
            const bool task_matches = suffix == "fwd" ? fwd
                                                      : bwd && name.size() > suffix.size() &&
                                                            name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
            if (task_matches && k.name == role.kernel) times[role.name].push_back(k.end_s - k.start_s);
          }
      }
  for (const Role& role : roles) {
    const auto it = times.find(role.name);
    if (it == times.end()) continue;
    GemmPoint p;
    p.name = role.name;
    p.hidden = t.config.hidden;
    p.ffn = t.config.ffn;
    p.tokens = t.config.tokens;
    p.shape = role.shape;
    p.measured_s = median_of(it->second);
    p.where = fmt::format("{} kernels '{}' (median of {})", role.name, role.kernel, it->second.size());
    if (!(p.measured_s > 0))
      throw InputError(out.source, "/iterations", fmt::format("kernels '{}' of {} have a median time of {:g} s; expected > 0",
                                                              role.kernel, role.name, p.measured_s));
    out.points.push_back(std::move(p));
  }
  if (out.points.empty())
    throw InputError(out.source, "/iterations",
                     "expected GEMM kernels (gemm.w_in, gemm.w_out, dgrad, wgrad) in fwd.layers.N / bwd.layers.N.* tasks, "
                     "found none");
}

struct Solve {
  double overhead_s = 0, inv_eff = 1, sse = 0;
};

// Least squares on relative error for one tile shape (see fit_gemm()).
Solve solve(const std::vector<GemmPoint>& pts, const hardware::HardwareProfile& hw, const hardware::GemmCurve& tile) {
  const std::size_t n = pts.size();
  std::vector<double> c(n), mem(n), u(n);
  for (std::size_t i = 0; i < n; ++i) {
    const auto& g = pts[i].shape;
    c[i] = hardware::gemm_flops(g) / (hw.peak_flops_per_s * hardware::wave_efficiency(tile, g));
    mem[i] = 2.0 * (g.m * g.k + g.k * g.n + g.m * g.n) * g.batch / (hw.hbm_bandwidth_bytes_per_s * hw.hbm_efficiency);
    u[i] = 1.0 / pts[i].measured_s;
  }
  Solve s;
  std::vector<bool> compute(n, true), last;
  for (int iter = 0; iter < 50 && compute != last; ++iter) {
    last = compute;
    double sxx = 0, sxy = 0, syy = 0, sxz = 0, syz = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const double x = u[i], y = compute[i] ? c[i] * u[i] : 0.0, z = compute[i] ? 1.0 : 1.0 - mem[i] * u[i];
      sxx += x * x, sxy += x * y, syy += y * y, sxz += x * z, syz += y * z;
    }
    const double det = sxx * syy - sxy * sxy;
    double t0 = det != 0 ? (sxz * syy - sxy * syz) / det : 0.0;
    double a = det != 0 ? (sxx * syz - sxy * sxz) / det : (syy > 0 ? syz / syy : 1.0);
    if (t0 < 0) {  // bound overhead_s ≥ 0
      t0 = 0;
      a = syy > 0 ? syz / syy : 1.0;
    }
    if (a < 1) {  // bound max_efficiency ≤ 1
      a = 1;
      t0 = std::max(0.0, (sxz - sxy) / sxx);
    }
    s.overhead_s = t0;
    s.inv_eff = a;
    for (std::size_t i = 0; i < n; ++i) compute[i] = a * c[i] >= mem[i];
  }
  for (std::size_t i = 0; i < n; ++i) {
    const double r = (s.overhead_s + std::max(s.inv_eff * c[i], mem[i])) * u[i] - 1.0;
    s.sse += r * r;
  }
  return s;
}

GemmErrorStats stats(const std::vector<double>& rel) {
  GemmErrorStats s;
  std::vector<double> a;
  for (double e : rel) a.push_back(std::fabs(e));
  s.median = median_of(a);
  s.max = a.empty() ? 0 : *std::max_element(a.begin(), a.end());
  return s;
}

}  // namespace

GemmMeasurements parse_gemm_measurements(const std::string& text, const std::string& source) {
  GemmMeasurements out;
  out.source = source;
  out.sha256 = sha256_hex(text);
  const nlohmann::json doc = parse_json_text(text, source);
  if (doc.is_object() && doc.contains("schema") && doc["schema"] == "stepsim.measured/1") {
    out.format = "mlp-step";
    read_mlp_step(text, out);
  } else {
    out.format = "gemm-sweep";
    read_sweep(doc, out);
  }
  return out;
}

GemmMeasurements read_gemm_measurements(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  // A directory opens as a stream on Linux: let the JSON reader say "missing file" / "is a directory".
  if (!in || std::filesystem::is_directory(path)) (void)read_json_file(path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return parse_gemm_measurements(ss.str(), path);
}

GemmFitResult fit_gemm(const GemmMeasurements& m, const hardware::HardwareProfile& hw, int sms) {
  if (m.points.size() < 2)
    throw InputError(m.source, "/rows", fmt::format("expected at least 2 measured GEMMs to fit a curve, got {}", m.points.size()));
  if (sms < 1 || sms > 4096) throw InputError("--sms", "", fmt::format("expected an SM count in [1, 4096], got {}", sms));
  // Plausibility before fitting: no GEMM beats the profile's peak, and one shape cannot tell a
  // per-kernel overhead from an efficiency.
  for (const auto& p : m.points) {
    const double rate = hardware::gemm_flops(p.shape) / p.measured_s;
    if (rate > 1.05 * hw.peak_flops_per_s)
      throw InputError(m.source, p.where,
                       fmt::format("{} ({}x{}x{}) ran at {:.0f} TFLOP/s, above the {:.0f} TFLOP/s peak of profile '{}' "
                                   "(expected the time of one GEMM on that GPU; check --hardware)",
                                   p.name, p.shape.m, p.shape.n, p.shape.k, rate / 1e12, hw.peak_flops_per_s / 1e12, hw.name));
  }
  std::vector<std::array<double, 4>> shapes;
  for (const auto& p : m.points) shapes.push_back({p.shape.m, p.shape.n, p.shape.k, p.shape.batch});
  std::sort(shapes.begin(), shapes.end());
  if (std::unique(shapes.begin(), shapes.end()) - shapes.begin() < 2)
    throw InputError(m.source, "/rows",
                     "expected at least 2 distinct GEMM shapes (one shape cannot separate the per-kernel overhead "
                     "from the efficiency), got 1");
  hardware::GemmCurve best;
  double best_sse = 0;
  for (const auto& [tm, tn] : {std::pair{128, 128}, std::pair{128, 256}, std::pair{256, 128}}) {
    hardware::GemmCurve c;
    c.tile_m = tm;
    c.tile_n = tn;
    c.sms = sms;
    const Solve s = solve(m.points, hw, c);
    c.max_efficiency = 1.0 / s.inv_eff;
    c.overhead_s = s.overhead_s;
    if (!best.present() || s.sse < best_sse * (1 - 1e-12)) {
      best = c;
      best_sse = s.sse;
    }
  }
  GemmFitResult r;
  r.gemm.curve = best;
  r.gemm.points = static_cast<int>(m.points.size());
  r.gemm.source.file = m.source;
  r.gemm.source.sha256 = m.sha256;
  r.gemm.source.format = m.format;
  r.gemm.source.gpu = m.device;
  std::vector<double> nominal, fitted;
  for (const auto& p : m.points) {
    GemmFitRow row{p, hardware::gemm_list_time_s(hw, hw.gemm_curve, {{p.shape, 1}}),
                   hardware::gemm_time_s(hw, best, p.shape)};
    nominal.push_back(row.nominal_s / p.measured_s - 1);
    fitted.push_back(row.fitted_s / p.measured_s - 1);
    r.rows.push_back(std::move(row));
  }
  r.nominal = stats(nominal);
  r.fitted = stats(fitted);
  r.gemm.median_residual = r.fitted.median;
  r.gemm.max_residual = r.fitted.max;
  // A curve this far from its own data describes another GPU or broken timings: refuse to
  // write it rather than calibrate every later run with it.
  if (r.fitted.median > 0.25)
    throw InputError(m.source, "", fmt::format("the fitted curve misses its own measurements by a median {:.0f} % "
                                               "(max {:.0f} %) over profile '{}'; expected a fit within 25 % (check "
                                               "--hardware and that times are per GEMM)",
                                               100 * r.fitted.median, 100 * r.fitted.max, hw.name));
  return r;
}

std::string profile_for_device(const std::string& device) {
  for (const auto& [key, profile] : {std::pair{"H200", "h200"}, std::pair{"H100", "h100-sxm"}, std::pair{"H800", "h800"},
                                     std::pair{"A100", "a100-sxm"}, std::pair{"V100", "v100-sxm2"}})
    if (device.find(key) != std::string::npos) return profile;
  return "";
}

}  // namespace stepsim::validate
