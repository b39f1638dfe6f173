// SPDX-License-Identifier: Apache-2.0
// `stepsim calibrate gemm`: measured GEMM times (stepsim-validate gemm-sweep, or the GEMM
// kernels of an mlp-step timeline) fitted to the GEMM curve of hardware/gemm_model.hpp.
#pragma once

#include "hardware/calibration.hpp"
#include "hardware/gemm_model.hpp"
#include "hardware/hardware_profile.hpp"

#include <string>
#include <vector>

namespace stepsim::validate {

/// One measured GEMM.
struct GemmPoint {
  std::string name;          ///< "fwd.w_in" (gemm-sweep) or "fwd.w_in" etc. (mlp-step roles)
  std::int64_t hidden = 0, ffn = 0, tokens = 0;  ///< the MLP shape it belongs to
  hardware::GemmShape shape;
  double measured_s = 0;     ///< mean time of one GEMM (> 0)
  std::string where;         ///< JSON path of the row ("/rows/3") or the kernels it came from
};

/// A file of GEMM measurements.
struct GemmMeasurements {
  std::string source;   ///< file name
  std::string sha256;   ///< hex SHA-256 of its bytes
  std::string format;   ///< "gemm-sweep" (schema stepsim.gemm-sweep/1), "mlp-step" (stepsim.measured/1) or
                        ///< "torch.profiler" (GEMM kernels of profiler traces, validate/kineto.hpp)
  std::string device;   ///< environment.device, e.g. "NVIDIA H200"
  std::vector<GemmPoint> points;  ///< non-empty
};

/// Reads a gemm-sweep file (schema "stepsim.gemm-sweep/1": environment, dtype, iters, warmup,
/// rows of {name, hidden, ffn, tokens, m, n, k, trans_a, trans_b, flops, time_s,
/// flops_per_s}) or an mlp-step MEASURED.json ("stepsim.measured/1"), whose GEMM kernels
/// (gemm.w_in / gemm.w_out in fwd.layers.N, dgrad / wgrad in bwd.layers.N.w_in|w_out) become
/// six points: per role the median over layers, ranks and iterations of the kernel time, with
/// the shapes gemm-sweep uses for the same roles.
/// @throws InputError naming the file, JSON path, value and expectation: another schema, a
///         missing or unknown key, sizes < 1, time_s ≤ 0, flops ≠ 2·m·n·k (relative 1e-6), no
///         rows, an mlp-step file without GEMM kernels; as read_input_file (expecting "a JSON
///         file", at most 64 MiB) for a missing, non-regular or oversized file.
GemmMeasurements read_gemm_measurements(const std::string& path);

/// Same, from the file's text; `source` names it in messages.
GemmMeasurements parse_gemm_measurements(const std::string& text, const std::string& source);

/// One row of the fit report.
struct GemmFitRow {
  GemmPoint point;
  double nominal_s = 0;  ///< the profile's pricing (its gemm_curve, else flat gemm_efficiency)
  double fitted_s = 0;   ///< the fitted curve
};

/// |relative error| summary.
struct GemmErrorStats {
  double median = 0, max = 0;
};

/// The fit and how good it is.
struct GemmFitResult {
  hardware::GemmCalibration gemm;  ///< curve, points, residuals, source
  std::vector<GemmFitRow> rows;    ///< in file order
  GemmErrorStats nominal, fitted;  ///< |predicted / measured − 1|
};

/// Every point must run in one arithmetic (GemmShape::math): BF16/FP16 points fit the curve's
/// `max_efficiency`; TF32, FP32 or FP8 points fit that arithmetic's own efficiency against its
/// own peak (HardwareProfile::peak_for) and operand bytes, the other efficiencies staying the
/// profile's (its curve's, else its flat gemm_efficiency).
/// Fits `max_efficiency` and `overhead_s` of the curve by least squares on relative error,
/// min Σ (t_fit(i) / t_meas(i) − 1)², for each tile shape of `tiles` (by default {128×128,
/// 128×256, 256×128}, cuBLAS's usual bf16 tiles) and keeps the best. For a fixed tile and fixed set of
/// memory-bound points the problem is linear in (overhead_s, 1 / max_efficiency) and is solved
/// by its 2×2 normal equations under the bounds overhead_s ≥ 0, max_efficiency ≤ 1; points are
/// re-classified compute- or memory-bound until the set is stable.
/// @param sms  SMs of the GPU (> 0; the profile's compute.sm_count when the caller has it)
/// @throws InputError when fewer than 2 points or 2 distinct shapes are given, when a point
///         runs faster than 1.05 × the profile's peak, or when the best curve misses its own
///         points by a median above 25 % (another GPU's data, or times that are not per GEMM).
/// The tile shapes fit_gemm tries by default: cuBLAS's usual BF16 tiles.
inline const std::vector<std::pair<int, int>> kGemmFitTiles = {{128, 128}, {128, 256}, {256, 128}};
/// With the small tiles too (64×64, 128×64, 64×128), which the skinny GEMMs of a training step
/// run on (CUTLASS's cutlass_80_tensorop_s1688gemm_64x64 in the A100 traces): for trace fits.
inline const std::vector<std::pair<int, int>> kGemmFitTilesWithSmall = {{64, 64}, {128, 64}, {64, 128}, {128, 128}, {128, 256}, {256, 128}};
GemmFitResult fit_gemm(const GemmMeasurements& m, const hardware::HardwareProfile& hw, int sms,
                       const std::vector<std::pair<int, int>>& tiles = kGemmFitTiles);

/// Built-in profile name for a measured device string ("NVIDIA H200" → "h200", "H100" →
/// "h100-sxm", "H800" → "h800", "A100" → "a100-sxm", "V100" → "v100-sxm2"), "" when unknown.
std::string profile_for_device(const std::string& device);

}  // namespace stepsim::validate
