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
  c.format = ck.format;
  c.interval = ck.interval;
  // One rank's model (its TP / EP share) and its optimizer state, unsharded.
  double params = 0, states = 0;
  for (const auto& l : s.model.layers)
    for (const auto& p : l.params) {
      params += static_cast<double>(p.numel) * dtype_bytes(p.dtype);
      if (p.trainable && !ck.model_only)
        states += static_cast<double>(p.numel) * optimizer_state_bytes_per_param(s.optimizer, p.dtype);
    }
  const double model_split = static_cast<double>(s.parallelism.tp);  // ranks one copy of the state spans
  c.state_bytes = (params + states) * model_split;
  const StrategyEntry& st = strategy_of(s);
  const double data = static_cast<double>(s.data_ranks()), world = static_cast<double>(s.world_size());
  c.storage_is_local_nvme = !(ck.storage_write_bytes_per_s > 0);
  c.storage_write_bytes_per_s = c.storage_is_local_nvme
                                    ? host.nvme_write_bytes_per_s * static_cast<double>(s.cluster.nodes)
                                    : ck.storage_write_bytes_per_s;
  c.host_capacity_bytes = host.memory_bytes;
  if (ck.format == "full") {
    // Rank 0 ends up with its model-parallel share of everything (the whole state without TP).
    const double whole = params + states;
    if (st.zero_stage >= 3) {
      const int shard = static_cast<int>(s.shard_ranks());
      c.gather_bytes = whole;
      c.gather_s = hardware::model_collective_cost(s.collective_model, s.hardware, hardware::CollectiveOp::AllGather, whole,
                                                   group_shape(s, shard, std::min(shard, s.dp_slots_per_node())),
                                                   s.algorithm)
                       .time_s();
    }
    c.stage_s = whole / host.d2h_bytes_per_s;  // rank 0 alone copies (the others free theirs at once)
    c.total_bytes = c.max_rank_bytes = whole * model_split;
    c.write_s = whole / c.storage_write_bytes_per_s;
    c.rank0_host_bytes = whole;
  } else {
    double typical = 0, rank0 = 0;
    if (st.family == StrategyFamily::DeepSpeed && st.zero_stage < 3) {
      typical = states / data;          // each rank's optimizer partition
      rank0 = params + typical;         // DP rank 0 also writes the module's state
    } else if (st.zero_stage >= 3 && !st.hybrid) {
      typical = rank0 = (params + states) / data;  // every rank its shards
    } else {
      typical = rank0 = (params + states) / data;  // replicated (DDP) or HSDP's replicas: deduplicated
    }
    c.max_rank_bytes = rank0;
    c.total_bytes = typical * world + (rank0 - typical) * model_split;
    c.stage_s = rank0 / host.shared_d2h_bytes_per_s(s.gpus_used_per_node());
    c.write_s = c.total_bytes / c.storage_write_bytes_per_s;
  }
  c.save_s = c.gather_s + c.stage_s + c.write_s;
  c.amortised_s = c.save_s / static_cast<double>(c.interval);
  return c;
}

}  // namespace stepsim::models
