// SPDX-License-Identifier: Apache-2.0
// Compute roofline.
#include "hardware/compute_model.hpp"

#include "sim/support/error.hpp"

#include <algorithm>
#include <cmath>

namespace stepsim::hardware {

double kernel_time_s(const HardwareProfile& hw, double flops, double bytes) {
  return std::max(flops / (hw.sustained_flops_per_s() * hw.gemm_efficiency), streaming_time_s(hw, bytes));
}

double sequence_time_s(const HardwareProfile& hw, double flops, double bytes) {
  return flops / (hw.sustained_flops_per_s() * hw.gemm_efficiency) + streaming_time_s(hw, bytes);
}

double streaming_time_s(const HardwareProfile& hw, double bytes) {
  return bytes / (hw.hbm_bandwidth_bytes_per_s * hw.hbm_efficiency);
}

double sm_partition_slowdown(int sms, int held, double ctas) {
  STEPSIM_ASSERT(sms >= 1 && held >= 0 && held < sms && ctas >= 0, "bad SM partition: {} SMs, {} held, {} CTAs",
                 sms, held, ctas);
  if (ctas == 0) return static_cast<double>(sms) / (sms - held);
  return std::ceil(ctas / (sms - held)) / std::ceil(ctas / sms);
}

}  // namespace stepsim::hardware

namespace stepsim::hardware {

namespace {

// One curve's FLOP/s at seq_len: linear in log2(seq_len) between its points, the end values beyond.
double curve_rate(const AttentionCurve& c, double seq_len) {
  const auto& x = c.seq_len;
  const auto& y = c.fwd_bwd_flops_per_s;
  if (seq_len <= x.front()) return y.front();
  if (seq_len >= x.back()) return y.back();
  std::size_t i = 1;
  while (x[i] < seq_len) ++i;
  const double t = (std::log2(seq_len) - std::log2(x[i - 1])) / (std::log2(x[i]) - std::log2(x[i - 1]));
  return y[i - 1] + t * (y[i] - y[i - 1]);
}

}  // namespace

double attention_flops_per_s(const AttentionThroughput& t, bool causal, double head_dim, double seq_len) {
  STEPSIM_ASSERT(t.present() && seq_len > 0, "attention throughput asked of an empty table or seq_len {}", seq_len);
  bool same_kind = false;
  for (const auto& c : t.curves) same_kind = same_kind || c.causal == causal;
  const AttentionCurve* below = nullptr;  // largest head_dim ≤ head_dim
  const AttentionCurve* above = nullptr;  // smallest head_dim ≥ head_dim
  for (const auto& c : t.curves) {
    if (same_kind && c.causal != causal) continue;
    const double d = c.head_dim;
    if (d <= head_dim && (below == nullptr || d > below->head_dim)) below = &c;
    if (d >= head_dim && (above == nullptr || d < above->head_dim)) above = &c;
  }
  if (below == nullptr) return curve_rate(*above, seq_len);
  if (above == nullptr || above == below || above->head_dim == below->head_dim) return curve_rate(*below, seq_len);
  const double w = (head_dim - below->head_dim) / (above->head_dim - below->head_dim);
  return (1 - w) * curve_rate(*below, seq_len) + w * curve_rate(*above, seq_len);
}

}  // namespace stepsim::hardware
