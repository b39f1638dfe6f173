// SPDX-License-Identifier: Apache-2.0
// Shape-dependent GEMM time (formula and sources in gemm_model.hpp).
#include "hardware/gemm_model.hpp"

#include "hardware/compute_model.hpp"
#include "sim/support/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace stepsim::hardware {

double gemm_flops(const GemmShape& g) { return 2.0 * g.m * g.n * g.k * g.batch; }

const char* gemm_math_name(GemmMath m) {
  switch (m) {
    case GemmMath::Tf32: return "tf32";
    case GemmMath::Fp32: return "fp32";
    case GemmMath::Fp8: return "fp8";
    case GemmMath::Tensor16: break;
  }
  return "bf16";
}

double gemm_operand_bytes(GemmMath m) { return m == GemmMath::Fp8 ? 1.0 : m == GemmMath::Tensor16 ? 2.0 : 4.0; }

double gemm_bytes(const GemmShape& g) {
  if (g.hbm_bytes > 0) return g.hbm_bytes;
  const double operand = gemm_operand_bytes(g.math);
  const double result = g.math == GemmMath::Fp8 ? 2.0 : operand;
  return (operand * (g.m * g.k + g.k * g.n) + result * g.m * g.n) * g.batch;
}

namespace {

double output_tiles(const GemmCurve& curve, const GemmShape& g) {
  return std::ceil(g.m / curve.tile_m) * std::ceil(g.n / curve.tile_n) * g.batch;
}

}  // namespace

double split_k_factor(const GemmCurve& curve, const GemmShape& g) {
  if (!g.split_k) return 1;
  const double tiles = output_tiles(curve, g);
  const double sms = static_cast<double>(curve.sms);
  if (tiles >= sms) return 1;
  return std::max(1.0, std::min(std::floor(sms / tiles), std::floor(g.k / kSplitKMinSlice)));
}

double wave_efficiency(const GemmCurve& curve, const GemmShape& g) {
  const double tiles = output_tiles(curve, g) * split_k_factor(curve, g);
  const double waves = tiles / static_cast<double>(curve.sms);
  return waves / std::ceil(waves);
}

double gemm_time_s(const HardwareProfile& hw, const GemmCurve& curve, const GemmShape& g) {
  const double compute =
      gemm_flops(g) / (hw.sustained_flops_per_s(g.math) * curve.max_efficiency_for(g.math) * wave_efficiency(curve, g));
  if (g.on_chip) return compute;
  const double partials = 2.0 * 4.0 * (split_k_factor(curve, g) - 1.0) * g.m * g.n * g.batch;
  const double memory = (gemm_bytes(g) + partials) / (hw.hbm_bandwidth_bytes_per_s * hw.hbm_efficiency);
  return curve.overhead_s + std::max(compute, memory);
}

double gemm_efficiency(const HardwareProfile& hw, const GemmCurve& curve, const GemmShape& g) {
  return gemm_flops(g) / (hw.peak_for(g.math) * gemm_time_s(hw, curve, g));
}

namespace {

double one_gemm_s(const HardwareProfile& hw, const GemmCurve& curve, const GemmShape& g) {
  return curve.present() ? gemm_time_s(hw, curve, g) : gemm_flops(g) / (hw.sustained_flops_per_s(g.math) * hw.gemm_efficiency);
}

}  // namespace

double gemm_list_time_s(const HardwareProfile& hw, const GemmCurve& curve, const GemmList& list) {
  double t = 0;
  for (const auto& w : list) t += w.count * one_gemm_s(hw, curve, w.shape);
  return t;
}

KernelWorkTotals kernel_work_totals(const HardwareProfile& hw, const GemmCurve& curve, const KernelWork& work) {
  KernelWorkTotals out;
  out.launches = work.streaming_kernels + work.host_only_ops;
  out.math = work.math;
  out.kernels = !work.gemms.empty() || !work.attention.empty();
  for (const auto& w : work.gemms) {
    const double t = w.count * one_gemm_s(hw, curve, w.shape);
    out.gemm_s += t;
    out.matmul_s += t;
    if (!w.shape.on_chip) out.launches += w.count;  // a fused on-chip matmul is no op of its own on the host
  }
  for (const auto& a : work.attention) {
    const double t = a.passes * a.forward_flops() /
                     (hw.clock_fraction() * attention_flops_per_s(hw.attention.at(a.kernel), a.causal, a.head_dim, a.span()));
    out.attention_s += t;
    out.matmul_s += t;
    out.launches += 1;
  }
  return out;
}

KernelWorkSplit kernel_work_split(const HardwareProfile& hw, const KernelWorkTotals& totals, double share, double flops,
                                  double bytes, double host_op_s) {
  KernelWorkSplit out;
  double gemm = totals.gemm_s, gpu = totals.matmul_s, launches = totals.launches;
  if (!totals.kernels && flops > 0) {
    gemm = gpu = flops / share / (hw.sustained_flops_per_s(totals.math) * hw.gemm_efficiency);
    launches += 1;
  }
  out.gemm_s = share * gemm;
  out.attention_s = share * totals.attention_s;
  out.matmul_s = share * gpu;
  out.streaming_s = bytes / (hw.hbm_bandwidth_bytes_per_s * hw.hbm_efficiency);
  out.launch_s = share * launches * host_op_s;
  return out;
}

KernelWorkSplit kernel_work_split(const HardwareProfile& hw, const GemmCurve& curve, const KernelWork& work, double share,
                                  double flops, double bytes, double host_op_s) {
  return kernel_work_split(hw, kernel_work_totals(hw, curve, work), share, flops, bytes, host_op_s);
}

double kernel_work_time_s(const HardwareProfile& hw, const GemmCurve& curve, const KernelWork& work, double share,
                          double flops, double bytes, double host_op_s) {
  return kernel_work_split(hw, curve, work, share, flops, bytes, host_op_s).time_s();
}

double gemm_list_flops(const GemmList& list) {
  double f = 0;
  for (const auto& w : list) f += w.count * gemm_flops(w.shape);
  return f;
}

std::string describe_gemm_curve(const GemmCurve& c) {
  return fmt::format("e_max {:.4g}, overhead {:.3g} us, tile {}x{}, {} SMs", c.max_efficiency, c.overhead_s * 1e6,
                     c.tile_m, c.tile_n, c.sms);
}

void check_gemm_curve(const GemmCurve& c, const std::string& source, const std::string& pointer) {
  if (!(c.max_efficiency > 0 && c.max_efficiency <= 1))
    throw InputError(source, pointer + "/max_efficiency", fmt::format("expected a fraction in (0, 1], got {:g}", c.max_efficiency));
  if (!(c.overhead_s >= 0 && c.overhead_s < 1))
    throw InputError(source, pointer + "/overhead_s", fmt::format("expected seconds in [0, 1), got {:g}", c.overhead_s));
  for (const auto& [key, v] : {std::pair{"tile_m", c.tile_m}, std::pair{"tile_n", c.tile_n}, std::pair{"sms", c.sms}})
    if (v < 1 || v > 4096)
      throw InputError(source, pointer + "/" + key, fmt::format("expected an integer in [1, 4096], got {}", v));
}

}  // namespace stepsim::hardware
