// SPDX-License-Identifier: Apache-2.0
// GEMM measurements and the GEMM-curve fit (gemm_fit.hpp).
#include "validate/gemm_fit.hpp"

#include "sim/support/error.hpp"
#include "validate/stats.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>

namespace stepsim::validate {

namespace {

struct Solve {
  double overhead_s = 0, inv_eff = 1, sse = 0;
};

// Least squares on relative error for one tile shape (see fit_gemm()).
Solve solve(const std::vector<GemmPoint>& pts, const hardware::HardwareProfile& hw, const hardware::GemmCurve& tile) {
  const std::size_t n = pts.size();
  std::vector<double> c(n), mem(n), u(n);
  for (std::size_t i = 0; i < n; ++i) {
    const auto& g = pts[i].shape;
    // The rate gemm_time_s prices with: the peak at the sustained clock (a power-capped part's
    // curve is fitted against what its SMs run at, so fitting and pricing agree).
    c[i] = hardware::gemm_flops(g) / (hw.sustained_flops_per_s(g.math) * hardware::wave_efficiency(tile, g));
    const double bytes = g.math == hardware::GemmMath::Tensor16 ? 2.0 * (g.m * g.k + g.k * g.n + g.m * g.n) * g.batch
                                                                : hardware::gemm_bytes(g);
    mem[i] = bytes / (hw.hbm_bandwidth_bytes_per_s * hw.hbm_efficiency);
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

GemmFitResult fit_gemm(const GemmMeasurements& m, const hardware::HardwareProfile& hw, int sms,
                       const std::vector<std::pair<int, int>>& tiles) {
  if (m.points.size() < 2)
    throw InputError(m.source, "/rows", fmt::format("expected at least 2 measured GEMMs to fit a curve, got {}", m.points.size()));
  if (sms < 1 || sms > 4096) throw InputError("--sms", "", fmt::format("expected an SM count in [1, 4096], got {}", sms));
  // Plausibility before fitting: no GEMM beats the profile's peak, and one shape cannot tell a
  // per-kernel overhead from an efficiency.
  const hardware::GemmMath math = m.points.front().shape.math;
  for (const auto& p : m.points) {
    if (p.shape.math != math)
      throw InputError(m.source, p.where, fmt::format("expected every GEMM in one arithmetic ({}), got {}",
                                                      hardware::gemm_math_name(math), hardware::gemm_math_name(p.shape.math)));
    const double rate = hardware::gemm_flops(p.shape) / p.measured_s;
    if (rate > 1.05 * hw.peak_for(math))
      throw InputError(m.source, p.where,
                       fmt::format("{} ({}x{}x{}) ran at {:.0f} TFLOP/s, above the {:.0f} TFLOP/s peak of profile '{}' "
                                   "(expected the time of one GEMM on that GPU; check --hardware)",
                                   p.name, p.shape.m, p.shape.n, p.shape.k, rate / 1e12, hw.peak_for(math) / 1e12, hw.name));
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
  for (const auto& [tm, tn] : tiles) {
    hardware::GemmCurve c;
    c.tile_m = tm;
    c.tile_n = tn;
    c.sms = sms;
    const Solve s = solve(m.points, hw, c);
    if (math == hardware::GemmMath::Tensor16) {
      c.max_efficiency = 1.0 / s.inv_eff;
    } else {  // another arithmetic's efficiency: the others stay the profile's
      c.max_efficiency = hw.gemm_curve.present() ? hw.gemm_curve.max_efficiency : hw.gemm_efficiency;
      c.tf32_max_efficiency = hw.gemm_curve.tf32_max_efficiency;
      c.fp32_max_efficiency = hw.gemm_curve.fp32_max_efficiency;
      c.fp8_max_efficiency = hw.gemm_curve.fp8_max_efficiency;
      (math == hardware::GemmMath::Tf32 ? c.tf32_max_efficiency
       : math == hardware::GemmMath::Fp32 ? c.fp32_max_efficiency
                                          : c.fp8_max_efficiency) = 1.0 / s.inv_eff;
    }
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
