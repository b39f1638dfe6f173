// SPDX-License-Identifier: Apache-2.0
// Error bands (issue 14 item 6): how far real steps of a scenario's kind were from stepsim's
// predictions, taken from the public measured sets (`stepsim accuracy`, docs/accuracy.md).
#pragma once

#include "models/scenario.hpp"

#include <string>
#include <vector>

namespace stepsim::models {

/// The kind of run a band describes: a GPU family and whether DP shards parameters.
struct RunKind {
  std::string family;  ///< "v100" | "a100" | "hopper" (h100, h200, h800) | "" (no measured set covers it)
  bool sharded = false;  ///< fsdp, hsdp, zero3 (parameters gathered per layer) vs ddp, zero1, zero2
  /// The linears' arithmetic: "bf16" (BF16/FP16 tensor cores), "fp32" (FP32 or TF32), "fp8"
  /// (torchao Float8Linear, precision.float8), "fp8_tensors" (parameters held in fp8): a band
  /// earned in one says little about another.
  std::string math = "bf16";
  /// parallelism.tp > 1: a band earned by data-parallel runs says nothing of a TP step's TP
  /// collectives, so TP runs earn bands of their own (the megatron and torchtitan sets).
  bool tensor_parallel = false;
  /// parallelism.pp > 1: the same for a pipeline's bubble and point-to-point transfers.
  bool pipeline_parallel = false;
  /// parallelism.cp > 1: the same for context parallelism's KV exchange.
  bool context_parallel = false;
  /// The model has routed experts (a mixture of experts, with or without parallelism.ep): no
  /// measured set has MoE runs yet.
  bool mixture_of_experts = false;
  bool operator==(const RunKind&) const = default;
  /// The parallelism beside DP, as reports name it: "" (data parallelism alone), else e.g.
  /// "TP", "TP, PP", "CP, MoE" (in the order TP, CP, PP, MoE).
  std::string mesh_label() const;
};

/// The kind of `s`: the family from its hardware profile's name (a100-*, h100-*, h200*, h800*,
/// v100-*; a file profile by its `name`), sharded from its strategy, math from its precision.
RunKind run_kind(const Scenario& s);

/// The signed errors (predicted − measured) / measured of one set's simulated runs of one kind:
/// their p10, median and p90 (linear interpolation between order statistics).
struct ErrorBand {
  std::string set;      ///< accuracy set the runs come from; empty = no band
  RunKind kind;
  std::size_t rows = 0;
  double p10 = 0, median = 0, p90 = 0;
  bool present() const { return !set.empty(); }
  /// The real step time as a multiple of the prediction: [1 / (1 + p90), 1 / (1 + p10)].
  double real_over_predicted_low() const { return 1.0 / (1.0 + p90); }
  double real_over_predicted_high() const { return 1.0 / (1.0 + p10); }
};

/// What a calibrated run (scenario `calibration`) reports in place of the set's band (issue 14
/// item 6): how closely the overlay's fits reproduce the measurements they were fitted on.
/// The residuals are per measured GEMM or collective, not per step: the parts of a step the
/// overlay does not price (memory-bound kernels, the collectives it has no table for) keep the
/// uncertainty of the nominal model, which the set's band (kept beside it) describes.
struct CalibrationBand {
  std::string overlay;          ///< the overlay's name (file); empty = not calibrated
  std::size_t points = 0;       ///< measured GEMMs + collective sizes the overlay was fitted on
  double max_residual = 0;      ///< the largest |t_fit − t_meas| / t_meas over them
  bool present() const { return !overlay.empty(); }
  /// Real time of a calibrated kernel or collective as a multiple of its prediction, at worst:
  /// [1 / (1 + max_residual), 1 / (1 − max_residual)] (the upper end unbounded at ≥ 1).
  double real_over_predicted_low() const { return 1.0 / (1.0 + max_residual); }
  double real_over_predicted_high() const { return max_residual < 1 ? 1.0 / (1.0 - max_residual) : 0.0; }
};

/// The residual band of `s`'s calibration overlay (absent without one).
CalibrationBand calibration_band_for(const Scenario& s);

/// The bands stepsim reports, one per kind that a measured set covers with at least 5 runs:
/// the set chosen for a kind is the one with the most such runs. The numbers are those
/// `stepsim accuracy --bands` prints; a test checks them against a fresh run of the sets.
const std::vector<ErrorBand>& error_bands();

/// The band of `s`'s kind, or one with an empty set when no measured set covers it.
ErrorBand error_band_for(const Scenario& s);

/// p-th quantile (p in [0, 1]) of `v` by linear interpolation between order statistics (the
/// "type 7" rule of R and NumPy's default); 0 for an empty vector.
double quantile(std::vector<double> v, double p);

}  // namespace stepsim::models
