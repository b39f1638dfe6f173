// SPDX-License-Identifier: Apache-2.0
// Per-GPU memory model (seed 000 §8–9; ZeRO paper §3.1; semantics.md §A.6, §C.2–C.3).
#include "models/memory.hpp"

#include "models/expert_parallel.hpp"
#include "models/recompute.hpp"
#include "models/scenario.hpp"
#include "models/strategy/strategy.hpp"

#include <algorithm>

namespace stepsim::models {

ModelStates zero_model_states(double psi, std::int64_t ranks, int stage, double k, double param_bytes,
                              double sharded_psi) {
  const double n = static_cast<double>(ranks);
  const double whole = sharded_psi >= 0 ? sharded_psi : psi;
  ModelStates m;
  m.params_bytes = param_bytes * (stage >= 3 ? whole / n : psi);
  m.grads_bytes = param_bytes * (stage >= 2 ? whole / n : psi);
  m.optimizer_bytes = k * (stage >= 1 ? whole / n : psi);
  return m;
}

std::vector<StrategyModelStates> strategy_model_states(double psi, std::int64_t ranks, std::int64_t shard_group,
                                                       double k, double b, double sharded_psi) {
  std::vector<StrategyModelStates> rows;
  for (const auto& st : strategy_registry())
    rows.push_back({st.name, zero_model_states(psi, st.hybrid ? shard_group : ranks, st.zero_stage, k, b, sharded_psi)});
  return rows;
}

double activation_bytes(const Scenario& s) {
  double per_token = 0;
  double largest_recomputed = 0;
  for (std::size_t i = 0; i < s.model.layers.size(); ++i) {
    per_token += kept_activation_bytes_per_token(s, i);
    // While layer i is recomputed, its full activations replace the kept ones.
    largest_recomputed = std::max(largest_recomputed, recomputed_activation_bytes_per_token(s, i));
  }
  // Recomputation rebuilds one layer's activations at a time during backward.
  per_token += largest_recomputed;
  return per_token * static_cast<double>(s.tokens_per_micro_batch());
}

double optimizer_state_bytes_per_param(const std::string& optimizer, DType dtype) {
  const double state = optimizer == "adam" ? 8.0 : optimizer == "sgd" ? 4.0 : 0.0;
  return state > 0 && dtype != DType::FP32 ? state + 4.0 : state;
}

MemoryBreakdown static_memory(const Scenario& s) {
  MemoryBreakdown m;
  const int stage = s.zero_stage();
  const double n = static_cast<double>(s.shard_ranks());
  const StrategyEntry& strategy = strategy_of(s);
  double trainable_grad_bytes = 0;
  double partition_elements = 0;  // trainable elements this rank's optimizer updates
  double param_partition_bytes = 0;  // of params_bytes, the sharded ZeRO-3 partitions (not persistent ones)
  for (const auto& layer : s.model.layers) {
    for (const auto& p : layer.params) {
      // A routed expert under expert parallelism is sharded over its expert-data-parallel
      // ranks' share of the shard group (Scenario::expert_shard_ranks): as n ranks shard a
      // tensor ep times larger.
      const double local = static_cast<double>(p.numel);
      const double numel = local * (stage >= 1 && expert_partitioned(s, p)
                                        ? n / static_cast<double>(s.expert_shard_ranks())
                                        : 1.0);
      const double b = dtype_bytes(p.dtype);
      // A tensor the strategy keeps whole everywhere (ZeRO-3's persistent small tensors).
      const bool persistent = strategy.persistent_param && strategy.persistent_param(s, numel);
      // What a rank holds of a state: its shard when the stage shards it, else its tensor.
      const auto held = [&](bool sharded) { return sharded ? numel / n : local; };
      m.params_bytes += held(stage >= 3 && !persistent) * b;
      if (stage >= 3 && !persistent) param_partition_bytes += held(true) * b;
      if (!p.trainable) continue;
      trainable_grad_bytes += local * b;
      m.grads_bytes += held(stage >= 2) * b;
      m.optimizer_bytes += held(stage >= 1) * optimizer_state_bytes_per_param(s.optimizer, p.dtype);
      partition_elements += held(stage >= 1);
      if (s.precision.fp32_grad_accum && s.batch.grad_accum > 1) m.grad_accum_bytes += held(stage >= 2) * 4.0;
    }
  }
  if (s.sharding.cpu_offload) {
    // FSDP's CPU offload (§E8/E9): the fp32 parameter shard, its fp32 gradient and the Adam
    // states live on the host; the GPU holds only what is gathered (the timeline's buffers).
    // fp32 parameter shard (4 B) + fp32 gradient (4 B) + the optimizer's own states (Adam's m and
    // v, SGD's momentum; no separate master copy: the shard is fp32).
    const double per_gpu = partition_elements * (8.0 + optimizer_state_bytes_per_param(s.optimizer, DType::FP32));
    m.params_bytes = m.grads_bytes = m.optimizer_bytes = 0;
    m.host_bytes = per_gpu * s.gpus_used_per_node();
    m.host_capacity_bytes = s.hardware.host.memory_bytes;
    m.host_fits = m.host_bytes <= m.host_capacity_bytes;
  } else if (s.sharding.offload_optimizer()) {
    // The optimizer states and the gradient partition live on the host (estimate_zero2/3_
    // model_states_mem_needs: GPU 2Ψ under stage 2, 2Ψ/N under stage 3); stage 1 still holds
    // every gradient on the GPU until its reduction after backward.
    const double accum = stage == 3 || s.batch.grad_accum > 1 ? dtype_bytes(s.precision.param_dtype) : 0.0;
    const double states = m.optimizer_bytes + partition_elements * 4.0, buffer = partition_elements * accum;
    const bool nvme = stage == 3 && s.sharding.offload_optimizer_device == "nvme";
    const double gpus = s.gpus_used_per_node();
    m.optimizer_bytes = 0;
    if (stage >= 2) m.grads_bytes = 0;
    m.host_bytes = (nvme ? buffer : states + buffer) * gpus;
    m.host_capacity_bytes = s.hardware.host.memory_bytes;
    m.host_fits = m.host_bytes <= m.host_capacity_bytes;
    if (nvme) m.nvme_bytes = states * gpus;
    if (s.sharding.offload_param()) {
      // ZeRO-Infinity (§E5/E6): the 16-bit partitions leave the GPU for the host, or for NVMe
      // through buffer_count (5) pinned buffers of buffer_size (1e8) elements per GPU.
      // Persistent small tensors stay gathered on every GPU (rule 66).
      const double partitions = param_partition_bytes;
      m.params_bytes -= partitions;
      if (s.sharding.offload_param_device == "nvme") {
        m.nvme_bytes += partitions * gpus;
        m.host_bytes += 5 * 1e8 * dtype_bytes(s.precision.param_dtype) * gpus;
      } else {
        m.host_bytes += partitions * gpus;
      }
      m.host_fits = m.host_bytes <= m.host_capacity_bytes;
    }
    if (m.nvme_bytes > 0) {
      m.nvme_capacity_bytes = s.hardware.host.nvme_bytes;
      m.host_fits = m.host_fits && m.nvme_bytes <= m.nvme_capacity_bytes;
    }
  }
  if (strategy.buffer_bytes) m.buffers_bytes = strategy.buffer_bytes(s, trainable_grad_bytes);
  m.capacity_bytes = s.hardware.usable_hbm_bytes();
  m.hbm_bytes = s.hardware.hbm_bytes;
  m.reserved_bytes = s.hardware.hbm_reserved_bytes;
  return m;
}

}  // namespace stepsim::models
