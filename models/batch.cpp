// SPDX-License-Identifier: Apache-2.0
// Global-batch arithmetic (see batch.hpp).
#include "models/batch.hpp"

#include "sim/support/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <utility>

namespace stepsim::models {

double parse_count(std::string_view text, const std::string& flag) {
  static constexpr std::pair<std::string_view, double> kPrefixes[] = {
      {"Ki", 1024.0}, {"Mi", 1048576.0}, {"Gi", 1073741824.0}, {"Ti", 1099511627776.0},
      {"k", 1e3},     {"K", 1e3},        {"M", 1e6},           {"G", 1e9},  {"T", 1e12}};
  double scale = 1;
  std::string_view number = text;
  for (const auto& [prefix, factor] : kPrefixes) {
    if (text.size() > prefix.size() && text.substr(text.size() - prefix.size()) == prefix) {
      number = text.substr(0, text.size() - prefix.size());
      scale = factor;
      break;
    }
  }
  double v = 0;
  const auto [ptr, ec] = std::from_chars(number.data(), number.data() + number.size(), v);
  if (number.empty() || ec != std::errc() || ptr != number.data() + number.size() || !std::isfinite(v * scale) || v < 0)
    throw InputError(flag, "", fmt::format("expected a count ≥ 0 such as 16384, 4M (4e6) or 8Ki (8192), got '{}'", text));
  return v * scale;
}

std::int64_t samples_for_tokens(double tokens, std::int64_t seq_len, bool round_to_power_of_two) {
  const double samples = tokens / static_cast<double>(seq_len);
  if (round_to_power_of_two) return std::int64_t{1} << std::max(0L, std::lround(std::log2(std::max(samples, 1.0))));
  return std::max<std::int64_t>(1, std::llround(samples));
}

BatchSplit split_global_batch(std::int64_t global_batch_samples, std::int64_t micro_batch_size, std::int64_t dp) {
  if (global_batch_samples < 1)
    throw InputError("--global-batch-samples", "", fmt::format("expected at least 1 sequence, got {}", global_batch_samples));
  if (micro_batch_size < 1)
    throw InputError("--micro-batch-size", "", fmt::format("expected an integer ≥ 1, got {}", micro_batch_size));
  if (dp < 1) throw InputError("--ranks", "", fmt::format("expected an integer ≥ 1, got {}", dp));
  BatchSplit b;
  b.global_batch_samples = global_batch_samples;
  b.micro_batch_size = micro_batch_size;
  b.dp = dp;
  const std::int64_t per_accum = micro_batch_size * dp;  // sequences per micro-batch step, all GPUs
  b.grad_accum_exact = static_cast<double>(global_batch_samples) / static_cast<double>(per_accum);
  b.whole = global_batch_samples % per_accum == 0;
  b.too_many_gpus = global_batch_samples < per_accum;
  b.grad_accum = b.too_many_gpus ? 1 : (global_batch_samples + per_accum - 1) / per_accum;
  b.global_batch_samples_used = per_accum * b.grad_accum;
  b.max_dp = global_batch_samples / micro_batch_size;
  return b;
}

RankCapacity max_ranks_for_batch(const hardware::HardwareProfile& hw, double tokens, int gpus_per_node, int axes,
                                 double moe_factor) {
  const int g = gpus_per_node > 0 ? gpus_per_node : hw.gpus_per_node;
  // Candidate k ↦ ranks: 1..g within a node, then whole nodes.
  auto ranks_of = [&](std::int64_t k) { return k <= g ? k : (k - g + 1) * g; };
  auto threshold = [&](std::int64_t n) {
    const hardware::GroupShape shape{static_cast<int>(n), static_cast<int>(std::min<std::int64_t>(g, n)), axes};
    return hardware::dp_threshold(hw, shape, moe_factor);
  };
  // A torus group cannot exceed the pod (multi-slice DP is not modelled): search within it.
  std::int64_t max_ranks = 100'000'000;
  if (hw.is_torus()) {
    max_ranks = 1;
    for (int d : hw.torus_dims) max_ranks *= d;
  }
  RankCapacity c;
  c.tokens = tokens;
  c.tokens_per_gpu_asymptotic = threshold(std::min<std::int64_t>(max_ranks, 1024LL * g) / g * g).tokens_per_gpu_asymptotic;
  c.ranks_asymptotic = tokens / c.tokens_per_gpu_asymptotic;
  auto compute_bound = [&](std::int64_t k) {
    const auto n = ranks_of(k);
    return tokens / static_cast<double>(n) >= threshold(n).tokens_per_gpu;
  };
  // Largest k with compute_bound(k). The exact threshold at N = 2 is half of C/W at most,
  // which bounds the search. On a torus the threshold is not monotone in N (a size with a
  // large prime factor gets fewer usable axes), so scan down; on GPUs tokens/N falls while
  // the threshold rises towards C/W, the predicate flips once, and bisection is exact.
  std::int64_t lo = 1, hi = std::min<std::int64_t>(max_ranks / g + g - 1, static_cast<std::int64_t>(4 * c.ranks_asymptotic / g) + g + 1);
  c.limited_by_pod = hw.is_torus() && ranks_of(hi) == max_ranks && compute_bound(hi);
  if (hw.is_torus()) {
    for (lo = hi; lo > 1 && !compute_bound(lo);) --lo;
  } else {
    if (compute_bound(hi)) lo = hi;
    while (hi - lo > 1) {
      const std::int64_t mid = lo + (hi - lo) / 2;
      (compute_bound(mid) ? lo : hi) = mid;
    }
  }
  c.ranks = ranks_of(lo);
  c.tokens_per_gpu_at_ranks = tokens / static_cast<double>(c.ranks);
  c.threshold_at_ranks = threshold(c.ranks).tokens_per_gpu;
  return c;
}

}  // namespace stepsim::models
