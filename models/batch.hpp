// SPDX-License-Identifier: Apache-2.0
// Global-batch arithmetic the seeds walk through (seed 000 §6.1, §7.2, §7.5): how
// gbs = micro_batch_size × grad_accum × dp splits, how large a batch N GPUs need before pure
// DP stops being communication-bound, and how many GPUs a given batch can keep busy.
#pragma once

#include "hardware/collective_model.hpp"
#include "hardware/hardware_profile.hpp"

#include <cstdint>
#include <string>
#include <string_view>

namespace stepsim::models {

/// Parses a count such as "4M", "38M", "16384", "1.5e6", "8Ki": decimal prefixes k/K, M, G, T
/// are powers of 1000, binary Ki, Mi, Gi, Ti powers of 1024 (DESIGN.md "Units and names").
/// @throws InputError naming `flag` when the text is not a finite number ≥ 0 with such a prefix.
double parse_count(std::string_view text, const std::string& flag);

/// Sequences in a global batch of `tokens` at `seq_len` tokens each: the nearest power of two
/// (in log scale) when `round_to_power_of_two` (seed 000 §6.1: 4M tokens at 4k → 1024), else
/// the nearest integer (at least 1).
/// Preconditions: tokens > 0, seq_len ≥ 1.
std::int64_t samples_for_tokens(double tokens, std::int64_t seq_len, bool round_to_power_of_two);

/// gbs = micro_batch_size × grad_accum × dp, solved for grad_accum (seed 000 §6.1).
struct BatchSplit {
  std::int64_t global_batch_samples = 0;  ///< gbs, in sequences
  std::int64_t micro_batch_size = 0;      ///< mbs, sequences per GPU per micro-batch
  std::int64_t dp = 0;
  double grad_accum_exact = 0;            ///< gbs / (mbs × dp)
  /// grad_accum to use: grad_accum_exact when it is a whole number ≥ 1, else its ceiling
  /// (which overshoots gbs; see global_batch_samples_used), 1 when too_many_gpus.
  std::int64_t grad_accum = 0;
  bool whole = false;                     ///< grad_accum_exact is a whole number
  bool too_many_gpus = false;             ///< grad_accum_exact < 1: more GPUs than gbs/mbs (GPU-rich)
  std::int64_t global_batch_samples_used = 0;  ///< mbs × grad_accum × dp
  std::int64_t max_dp = 0;                ///< gbs / mbs (floor): the most GPUs this gbs keeps at this mbs
};

/// @throws InputError ("--global-batch-samples", "--micro-batch-size", "--ranks") when a
///         value is < 1.
BatchSplit split_global_batch(std::int64_t global_batch_samples, std::int64_t micro_batch_size,
                              std::int64_t dp);

/// The most ranks a global batch of `tokens` keeps compute-bound under pure DP (seed 000 §7.5):
/// the largest N with tokens / N ≥ threshold(N), the communication-bound threshold of
/// hardware::dp_threshold.
struct RankCapacity {
  double tokens = 0;                      ///< the global batch, tokens
  double tokens_per_gpu_asymptotic = 0;   ///< the seeds' C/W (× E/k for MoE, E/(k·ep) under EP)
  double ranks_asymptotic = 0;            ///< tokens / (C/W): the seeds' figure (38M on v5p → ≈ 44,700)
  /// Largest N (a whole number of nodes above one node) with tokens/N ≥ the exact-ring-factor
  /// threshold at N; larger than ranks_asymptotic because the (k−1)/k factors are below 1.
  std::int64_t ranks = 0;
  double tokens_per_gpu_at_ranks = 0;     ///< tokens / ranks
  double threshold_at_ranks = 0;          ///< exact threshold at `ranks`
  /// TPU: the batch would keep more chips than one pod busy; `ranks` is then the pod size
  /// (multi-slice DP over DCN is not modelled), while ranks_asymptotic still goes beyond.
  bool limited_by_pod = false;
};

/// @param gpus_per_node  0 = the profile's;  axes  TPU torus axes used for DP (0 = all)
/// @param moe_factor  as hardware::dp_threshold (1 dense, E/k MoE, E/(k·ep) under EP), > 0
/// Preconditions: tokens > 0.
RankCapacity max_ranks_for_batch(const hardware::HardwareProfile& hw, double tokens, int gpus_per_node,
                                 int axes, double moe_factor = 1);

}  // namespace stepsim::models
