// SPDX-License-Identifier: Apache-2.0
// Per-GPU memory model: model states, activations and framework buffers.
#pragma once

#include <string>

namespace stepsim::models {

struct Scenario;

/// Peak memory of one GPU, in bytes (decimal GB = 1e9 in reports).
struct MemoryBreakdown {
  double params_bytes = 0;      ///< parameters in their own dtype
  double grads_bytes = 0;       ///< gradients of trainable parameters (.grad)
  double optimizer_bytes = 0;   ///< Adam: fp32 master copy (unless params are fp32) + m + v
  double activations_bytes = 0; ///< saved for backward, one micro-batch
  double buffers_bytes = 0;     ///< framework buffers (DDP gradient buckets)
  double total_bytes = 0;
  double capacity_bytes = 0;    ///< the profile's HBM
  bool fits = false;            ///< total ≤ capacity
};

/// Memory of pure data parallelism (DDP) on one GPU (seed 000 §8; ZeRO paper §3.1 with K = 12:
/// bf16 params 2Ψ + bf16 grads 2Ψ + fp32 master/m/v 12Ψ = 16Ψ), plus DDP's bucket storage
/// (one gradient-sized buffer unless gradient_as_bucket_view, semantics.md §A.6 rule 23) and
/// the activations of one micro-batch. With optimizer "none" there is no optimizer state.
MemoryBreakdown ddp_memory(const Scenario& s);

}  // namespace stepsim::models
