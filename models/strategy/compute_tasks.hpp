// SPDX-License-Identifier: Apache-2.0
// Compute tasks every strategy shares: per-layer forward, per-tensor backward segments, and
// the optimizer step.
#pragma once

#include "sim/task.hpp"

#include <cstddef>
#include <string>
#include <vector>

namespace stepsim::models {

struct Scenario;

/// Stream indexes on every rank (CUDA: the default stream and the process group's NCCL stream,
/// semantics.md §A.5 rule 20).
inline constexpr std::uint32_t kComputeStream = 0;
inline constexpr std::uint32_t kCommStream = 1;

/// Forward of layer `layer` for one micro-batch, on the compute stream. A fused sequence of
/// GEMMs (FLOPs at the profile's GEMM efficiency) and streaming kernels (bytes at HBM
/// bandwidth), or the layer's measured fwd_s.
/// @param prefix  prepended to the name ("mb1." for the second micro-batch, "" when one)
sim::Task forward_task(const Scenario& s, std::size_t layer, const std::string& prefix);

/// One backward segment: the work that produces one parameter's gradient (or the whole
/// layer's backward when it has no parameters).
struct BackwardSegment {
  sim::Task task;
  std::size_t param = 0;   ///< index into the layer's params (valid when has_param)
  bool has_param = false;
  bool produces_grad = false;  ///< has_param and the tensor is trainable
};

/// Backward of `layer` split into one segment per parameter tensor in gradient-ready order,
/// so a gradient hook fires when its tensor's segment ends (semantics.md §A.4 rule 15). The
/// layer's backward work (dgrad + wgrad = 2 × forward GEMM FLOPs, minus the wgrad of frozen
/// tensors; 2 × attention and streaming) is divided in proportion to tensor sizes.
/// @param grad_copy_bytes_per_grad_byte  extra HBM bytes per gradient byte (DDP's copy into
///        the bucket, read + write = 2; 0 when no copy runs)
std::vector<BackwardSegment> backward_segments(const Scenario& s, std::size_t layer,
                                               const std::string& prefix,
                                               double grad_copy_bytes_per_grad_byte);

/// Adam step over `params` parameters held on this rank, as one HBM-bound kernel: reads fp32
/// master weights, m, v and the gradient, writes master, m, v and the low-precision copy:
/// (4+4+4+2) + (4+4+4+2) = 28 bytes per parameter (bf16 params and grads).
sim::Task optimizer_task(double params, double grad_bytes_per_param, double param_bytes_per_param);

/// Model FLOPs per GPU per optimizer step (the 6·Ψ·tokens convention plus attention, for MFU):
/// 3 × forward FLOPs of every layer.
double model_flops_per_gpu_step(const Scenario& s);

}  // namespace stepsim::models
