// SPDX-License-Identifier: Apache-2.0
// Per-GPU memory model: model states by ZeRO stage, activations and framework buffers.
#pragma once

#include "models/model_spec.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace stepsim::models {

struct Scenario;

/// Model-state memory of one GPU (bytes) — the ZeRO paper's accounting (§3.1, Figure 1):
/// parameters, gradients and K bytes/param of optimizer state, sharded by stage.
struct ModelStates {
  double params_bytes = 0;
  double grads_bytes = 0;
  double optimizer_bytes = 0;
  double total_bytes() const { return params_bytes + grads_bytes + optimizer_bytes; }
};

/// ZeRO paper formulas with Ψ parameters of `param_bytes` each (2 for bf16), gradients of the
/// same size, K bytes/param of optimizer state (12 for mixed-precision Adam), N_d ranks:
///   stage 0 (DDP) 2Ψ + 2Ψ + KΨ;  1: 2Ψ + 2Ψ + KΨ/N;  2: 2Ψ + (2+K)Ψ/N;  3: (2+2+K)Ψ/N.
/// Preconditions: psi ≥ 0, ranks ≥ 1, 0 ≤ stage ≤ 3.
/// `sharded_psi` (≥ 0; default: psi) is what the sharded states count instead of Ψ: under
/// expert parallelism Ψ is one rank's model (its experts / ep of every MoE layer) and the
/// sharded states come to the whole model's over N, since each routed expert shards over the
/// N / ep ranks holding it (models/expert_parallel.hpp).
ModelStates zero_model_states(double psi, std::int64_t ranks, int stage, double optimizer_bytes_per_param = 12,
                              double param_bytes = 2, double sharded_psi = -1);

/// One row of the strategies' model-state table (`stepsim memory`).
struct StrategyModelStates {
  const char* strategy;      ///< "ddp", "zero1", "zero2", "zero3", "fsdp", "hsdp"
  ModelStates states;        ///< per GPU, zero_model_states() at the row's stage and ranks
};

/// zero_model_states() for every strategy: ddp, zero1–3 over `ranks`; fsdp (FULL_SHARD, the
/// ZeRO-3 accounting) over `ranks`; hsdp (ZeRO-3 accounting inside a shard group) over
/// `shard_group` ranks. Preconditions as zero_model_states(), 1 ≤ shard_group ≤ ranks.
/// `param_bytes`: bytes per parameter and per gradient element (2 for bf16, 4 for fp32).
std::vector<StrategyModelStates> strategy_model_states(double psi, std::int64_t ranks, std::int64_t shard_group,
                                                       double optimizer_bytes_per_param = 12, double param_bytes = 2,
                                                       double sharded_psi = -1);

/// Peak memory of one GPU, in bytes (decimal GB = 1e9 in reports).
struct MemoryBreakdown {
  double params_bytes = 0;      ///< parameters held persistently (sharded by stage)
  double grads_bytes = 0;       ///< persistent gradients (sharded by stage)
  double optimizer_bytes = 0;   ///< fp32 master copy (unless params are fp32) + Adam's m, v or SGD's momentum, sharded
  double grad_accum_bytes = 0;  ///< fp32 gradient-accumulation buffer (precision.fp32_grad_accum)
  double activations_bytes = 0; ///< saved for backward, one micro-batch (Korthikanti et al. 2022)
  double buffers_bytes = 0;     ///< framework buffers at the peak: DDP buckets, DeepSpeed IPG
                                ///< buffers, FSDP/ZeRO-3 unsharded parameters and gradients
  double total_bytes = 0;       ///< peak over the simulated step
  double peak_time_s = 0;       ///< when the peak is first reached
  double capacity_bytes = 0;    ///< usable HBM: the profile's hbm_bytes − reserved_bytes
  double hbm_bytes = 0;         ///< the profile's HBM capacity (datasheet)
  double reserved_bytes = 0;    ///< CUDA context, workspaces, NCCL buffers (profile memory.reserved_bytes)
  bool fits = false;            ///< total ≤ capacity_bytes (the usable HBM)
  /// Optimizer offload (parallelism.offload_optimizer; semantics-parallel.md §E3/E4): what one
  /// node's host memory holds for its GPUs — each one's fp32 master partition and Adam states,
  /// its fp32 gradient partition and the low-precision gradient buffer (stage 3's flat one, or
  /// stages 1/2's accumulation buffer when grad_accum > 1) — against the profile's
  /// host.memory_bytes. 0 and true without offload.
  double host_bytes = 0;
  double host_capacity_bytes = 0;
  bool host_fits = true;
  /// Under zero3 with offload_optimizer device "nvme": the states and fp32 gradients one node's
  /// GPUs swap to its NVMe drives (host_bytes then keeps the low-precision gradient buffer),
  /// against host.nvme_bytes.
  double nvme_bytes = 0;
  double nvme_capacity_bytes = 0;
  /// Allocation waits on rank 0 (issue 13 item 3): tasks (in practice AllGathers run ahead of
  /// compute) whose start waited for their allocation to fit the usable HBM, as the caching
  /// allocator's free-and-retry makes them.
  std::size_t allocation_waits = 0;
  double allocation_wait_s = 0;  ///< summed time those tasks waited, s
  /// Allocations admitted over the usable HBM because nothing left to run could free memory
  /// (not counted in allocation_waits).
  std::size_t allocation_over_limit = 0;
};

/// Optimizer state bytes per trainable parameter held in `dtype`: Adam's m and v (8) or SGD's
/// momentum buffer (4), plus an fp32 master copy (4) when the parameter is narrower than fp32;
/// 0 for "none" (Scenario::optimizer).
double optimizer_state_bytes_per_param(const std::string& optimizer, DType dtype);

/// Persistent (static) memory of a scenario's strategy: model states sharded by stage,
/// persistent buffers (DDP buckets unless gradient_as_bucket_view, semantics §A.6 rule 23;
/// DeepSpeed IPG buffers of reduce_bucket_size elements, two with overlap_comm, §C.2 rule 56;
/// ZeRO-3 persistent parameters, §C.3 rule 66), and the fp32 accumulation buffer.
/// Activations and transient buffers come from the timeline (see run()).
MemoryBreakdown static_memory(const Scenario& s);

/// Activation bytes one micro-batch leaves for backward on one GPU at the peak: the sum over
/// layers of kept_activation_bytes_per_token plus the largest recomputed_activation_bytes_per_token
/// (one layer is rebuilt at a time), × micro_batch_size × seq_len (models/recompute.hpp).
double activation_bytes(const Scenario& s);

}  // namespace stepsim::models
