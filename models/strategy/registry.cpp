// SPDX-License-Identifier: Apache-2.0
// The strategy registry: an explicit table, one row per family.
#include "models/strategy/strategy.hpp"

#include "models/scenario.hpp"

#include "sim/support/error.hpp"

namespace stepsim::models {

hardware::GroupShape group_shape(const Scenario& s, int ranks, int ranks_per_node) {
  hardware::GroupShape shape;
  shape.ranks = ranks;
  shape.ranks_per_node = ranks_per_node;
  shape.torus_axes = s.parallelism.torus_axes;
  return shape;
}

const std::vector<StrategyEntry>& strategy_registry() {
  static const std::vector<StrategyEntry> table = {
      {"ddp",
       "PyTorch DDP: gradient buckets in ready order (first 1 MiB, then bucket_cap_mb), "
       "in-order AllReduce on one NCCL stream overlapping backward, no_sync accumulation",
       &lower_ddp},
      {"zero1",
       "DeepSpeed ZeRO-1: optimizer state sharded; IPG gradient buckets reduced on the accumulation "
       "boundary (whole-bucket AllReduce), 1/N Adam, then one parameter AllGather",
       &lower_zero12},
      {"zero2",
       "DeepSpeed ZeRO-2: gradients and optimizer state sharded; IPG buckets reduced every micro-step, "
       "overlap_comm keeps one reduction in flight",
       &lower_zero12},
      {"zero3",
       "DeepSpeed ZeRO-3: parameters sharded too; per-layer coalesced AllGathers with prefetch and "
       "reuse distance, ready-order ReduceScatter buckets",
       &lower_zero3},
      {"fsdp",
       "PyTorch FSDP (FSDP2 fully_shard by default; FSDP1 switches): one AllGather and one "
       "ReduceScatter per unit, prefetch one unit ahead, reshard_after_forward",
       &lower_fsdp},
      {"hsdp",
       "PyTorch HSDP: FSDP inside a shard group (a node by default), AllReduce of the shard across "
       "replicas on its own stream",
       &lower_fsdp},
  };
  return table;
}

const StrategyEntry& find_strategy(const std::string& name) {
  for (const auto& e : strategy_registry())
    if (name == e.name) return e;
  throw InternalError("unknown strategy '" + name + "' passed validation");
}

}  // namespace stepsim::models
