// SPDX-License-Identifier: Apache-2.0
// Per-GPU memory model (seed 000 §8; ZeRO paper §3.1).
#include "models/memory.hpp"

#include "models/scenario.hpp"

namespace stepsim::models {

MemoryBreakdown ddp_memory(const Scenario& s) {
  MemoryBreakdown m;
  double act_per_token = 0;
  for (const auto& layer : s.model.layers) {
    act_per_token += layer.activation_bytes_per_token;
    for (const auto& p : layer.params) {
      const double n = static_cast<double>(p.numel);
      m.params_bytes += n * dtype_bytes(p.dtype);
      if (!p.trainable) continue;
      m.grads_bytes += n * dtype_bytes(p.dtype);
      if (s.optimizer == "adam") m.optimizer_bytes += n * (8.0 + (p.dtype == DType::FP32 ? 0.0 : 4.0));
    }
  }
  if (!s.parallelism.gradient_as_bucket_view) m.buffers_bytes = m.grads_bytes;
  m.activations_bytes = act_per_token * static_cast<double>(s.tokens_per_micro_batch());
  m.total_bytes = m.params_bytes + m.grads_bytes + m.optimizer_bytes + m.activations_bytes + m.buffers_bytes;
  m.capacity_bytes = s.hardware.hbm_bytes;
  m.fits = m.total_bytes <= m.capacity_bytes;
  return m;
}

}  // namespace stepsim::models
