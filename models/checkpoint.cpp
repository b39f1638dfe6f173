// SPDX-License-Identifier: Apache-2.0
#include "models/checkpoint.hpp"

#include "hardware/nccl_model.hpp"
#include "models/memory.hpp"
#include "models/strategy/strategy.hpp"

#include <algorithm>

namespace stepsim::models {

CheckpointCost checkpoint_cost(const Scenario& s) {
  CheckpointCost c;
  const auto& ck = s.checkpoint;
  const auto& host = s.hardware.host;
  const StrategyEntry& st = strategy_of(s);
  c.format = ck.format;
  c.interval = ck.interval;
  // One rank's model (its TP share) and its optimizer state, unsharded, as each framework
  // saves them. FSDP (DCP): the sharded parameters are the fp32 originals (mixed precision casts
  // a copy for compute) and the optimizer holds its own states only; torchtitan exports the
  // model in float32 (export_dtype). DeepSpeed and DDP: the module in its dtype, the optimizer's
  // states with the fp32 master copy (optimizer_state_bytes_per_param, as the memory model).
  const bool fsdp = st.family == StrategyFamily::FSDP;
  // Bytes per parameter of one rank's model (its TP and EP share), then of the whole model:
  // every parameter once, whatever the mesh splits.
  double local = 0, local_trainable = 0, params = 0, states = 0;
  for (const auto& l : s.model.layers)
    for (const auto& p : l.params) {
      const double n = static_cast<double>(p.numel);
      local += n;
      params += n * (fsdp ? 4.0 : dtype_bytes(p.dtype));
      if (p.trainable) {
        local_trainable += n;
        if (!ck.model_only)
          states += n * (fsdp ? optimizer_state_bytes_per_param(s.optimizer, DType::FP32)
                              : optimizer_state_bytes_per_param(s.optimizer, p.dtype));
      }
    }
  const double whole_params = local > 0 ? params / local * static_cast<double>(s.model_parameters) : 0.0;
  const double whole_states =
      local_trainable > 0 ? states / local_trainable * static_cast<double>(s.model_trainable_parameters) : 0.0;
  const double whole = whole_params + whole_states;
  c.state_bytes = whole;
  const double world = static_cast<double>(s.world_size()), tp = static_cast<double>(s.parallelism.tp);
  const double node_ranks = static_cast<double>(s.gpus_used_per_node());
  c.storage_is_local_nvme = !(ck.storage_write_bytes_per_s > 0);
  c.host_capacity_bytes = host.memory_bytes;
  // What is already in host memory needs no copy: everything under FSDP's cpu_offload, the
  // optimizer's states under DeepSpeed's offload_optimizer.
  const double on_gpu = s.sharding.cpu_offload ? 0.0 : s.sharding.offload_optimizer() ? whole_params / whole : 1.0;
  if (ck.format == "full") {
    // Every tensor gathered into rank 0 (over the shard group; under TP / EP from the other
    // model-parallel ranks too, which the gather's price leaves out).
    if (st.zero_stage >= 3) {
      const int shard = static_cast<int>(s.shard_ranks());
      c.gather_bytes = whole;
      c.gather_s = hardware::model_collective_cost(s.collective_model, s.hardware, hardware::CollectiveOp::AllGather,
                                                   whole / tp, group_shape(s, s.layout().data(1, shard)),
                                                   s.algorithm)
                       .time_s();
    }
    // FULL_STATE_DICT moves every tensor to the device for the gather, then rank 0 alone copies
    // it to its CPU memory (the others free theirs at once).
    c.stage_s = whole / host.d2h_bytes_per_s;
    c.total_bytes = c.max_rank_bytes = whole;
    // One writer: one node's drives, or the shared storage.
    c.storage_write_bytes_per_s = c.storage_is_local_nvme ? host.nvme_write_bytes_per_s : ck.storage_write_bytes_per_s;
    c.write_s = whole / c.storage_write_bytes_per_s;
    c.rank0_host_bytes = whole;
  } else {
    // Every byte written once. ZeRO-3 and FSDP: every rank its shards; DDP and HSDP's replicas:
    // one copy spread over the ranks holding it (dedup_save_plans); DeepSpeed ZeRO-1/2: each
    // rank its optimizer partition, and data-parallel rank 0 of each model-parallel rank the
    // module's share.
    const bool module_on_rank0 = st.family == StrategyFamily::DeepSpeed && st.zero_stage < 3;
    const double typical = (module_on_rank0 ? whole_states : whole) / world;
    const double rank0 = typical + (module_on_rank0 ? whole_params / tp : 0.0);
    c.max_rank_bytes = rank0;
    c.total_bytes = whole;
    c.stage_s = rank0 * on_gpu / host.shared_d2h_bytes_per_s(s.gpus_used_per_node());
    // Every node writes at once: the storage's bandwidth shared by all, and on the nodes' own
    // NVMe the busiest node (rank 0's) at its drives' speed.
    c.storage_write_bytes_per_s =
        c.storage_is_local_nvme ? host.nvme_write_bytes_per_s * static_cast<double>(s.cluster.nodes) : ck.storage_write_bytes_per_s;
    c.write_s = c.total_bytes / c.storage_write_bytes_per_s;
    if (c.storage_is_local_nvme)
      c.write_s = std::max(c.write_s, (rank0 + (node_ranks - 1) * typical) / host.nvme_write_bytes_per_s);
  }
  c.save_s = c.gather_s + c.stage_s + c.write_s;
  c.amortised_s = c.save_s / static_cast<double>(c.interval);
  return c;
}

}  // namespace stepsim::models
