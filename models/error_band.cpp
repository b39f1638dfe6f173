// SPDX-License-Identifier: Apache-2.0
#include "models/error_band.hpp"

#include "models/strategy/strategy.hpp"

#include <algorithm>
#include <cmath>

namespace stepsim::models {

RunKind run_kind(const Scenario& s) {
  RunKind k;
  const std::string& n = s.hardware.name;
  auto starts = [&](const char* p) { return n.rfind(p, 0) == 0; };
  if (starts("v100")) k.family = "v100";
  else if (starts("a100")) k.family = "a100";
  else if (starts("h100") || starts("h200") || starts("h800")) k.family = "hopper";
  k.sharded = s.zero_stage() == 3;  // parameters sharded: ZeRO-3, FSDP, HSDP
  k.tensor_parallel = s.parallelism.tp > 1;
  k.pipeline_parallel = s.parallelism.pp > 1;
  k.context_parallel = s.parallelism.cp > 1;
  k.mixture_of_experts = s.model.has_experts();
  using Math = hardware::GemmMath;
  const Math m = s.precision.gemm_math;
  k.math = s.precision.float8 != PrecisionConfig::Float8::None ? "fp8"
           : m == Math::Fp8                                       ? "fp8_tensors"
           : m == Math::Fp32 || m == Math::Tf32                   ? "fp32"
                                                                  : "bf16";
  return k;
}

std::string RunKind::mesh_label() const {
  std::string out;
  for (const auto& [on, name] : {std::pair{tensor_parallel, "TP"}, std::pair{context_parallel, "CP"},
                                 std::pair{pipeline_parallel, "PP"}, std::pair{mixture_of_experts, "MoE"}})
    if (on) out += (out.empty() ? "" : ", ") + std::string(name);
  return out;
}

const std::vector<ErrorBand>& error_bands() {
  // Printed by `stepsim accuracy --bands` on 2026-12-01 (tests/validate/accuracy_test.cpp
  // checks them against a fresh run of the sets).
  static const std::vector<ErrorBand> bands = {
#include "models/error_bands.inc"
  };
  return bands;
}

ErrorBand error_band_for(const Scenario& s) {
  const RunKind k = run_kind(s);
  for (const ErrorBand& b : error_bands())
    if (b.kind == k && !k.family.empty()) return b;
  ErrorBand none;
  none.kind = k;
  return none;
}

CalibrationBand calibration_band_for(const Scenario& s) {
  CalibrationBand b;
  if (!s.calibration) return b;
  const hardware::CalibrationOverlay& o = *s.calibration;
  b.overlay = o.name;
  if (o.gemm) {
    b.points += static_cast<std::size_t>(std::max(o.gemm->points, 0));
    b.max_residual = std::max(b.max_residual, o.gemm->max_residual);
  }
  if (o.memory) {
    b.points += static_cast<std::size_t>(std::max(o.memory->points, 0));
    b.max_residual = std::max(b.max_residual, o.memory->max_residual);
  }
  if (o.host && s.framework.host_op_measured) {  // cuda_graphs, or host_op_s 0, leaves it out
    b.points += static_cast<std::size_t>(std::max(o.host->points, 0));
    b.max_residual = std::max(b.max_residual, o.host->max_residual);
  }
  for (const auto& t : o.tables)
    for (const auto& seg : t.segments) {
      b.points += static_cast<std::size_t>(std::max(seg.points, 0));
      b.max_residual = std::max(b.max_residual, seg.max_residual);
    }
  return b;
}

double quantile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double h = p * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(h));
  const std::size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (h - static_cast<double>(lo)) * (v[hi] - v[lo]);
}

}  // namespace stepsim::models
