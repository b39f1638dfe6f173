// SPDX-License-Identifier: Apache-2.0
// The strategy registry: an explicit table, one row per family.
#include "models/strategy/strategy.hpp"

#include "models/scenario.hpp"

#include "sim/support/error.hpp"

#include <algorithm>

namespace stepsim::models {

hardware::GroupShape group_shape(const Scenario& s, const MeshGroup& group) {
  const RankLayout layout = s.layout();
  hardware::GroupShape shape;
  shape.ranks = static_cast<int>(layout.members(group));
  shape.ranks_per_node = layout.members_per_node(group);
  shape.torus_axes = s.parallelism.torus_axes;
  shape.concurrent_groups_per_node = layout.groups_per_node(group);
  return shape;
}

const std::vector<StrategyEntry>& strategy_registry() {
  using F = StrategyFamily;
  static const char* const kBucketOps = "bucket copies, copy-outs, waits";
  static const char* const kGatherOps = "all-gather copy-outs, waits";
  static const char* const kFsdpBuffers = "unsharded parameters and gradients at the peak";
  static const std::vector<StrategyEntry> table = {
      {"ddp",
       "PyTorch DDP: gradient buckets in ready order (first 1 MiB, then bucket_cap_mb), "
       "in-order AllReduce on one NCCL stream overlapping backward, no_sync accumulation",
       &lower_ddp, F::DDP, 0, false, "DDP gradient buckets", kBucketOps, &ddp_buffer_bytes, nullptr,
       {"bucket_cap_mb", "first_bucket_mb", "gradient_as_bucket_view", "sync_every_micro_batch",
        "use_distributed_optimizer", "overlap_param_gather"}},
      {"zero1",
       "DeepSpeed ZeRO-1: optimizer state sharded; IPG gradient buckets reduced on the accumulation "
       "boundary (whole-bucket AllReduce), 1/N Adam, then one parameter AllGather",
       &lower_zero12, F::DeepSpeed, 1, false, "DeepSpeed IPG gradient buckets", kBucketOps, &zero_buffer_bytes, nullptr,
       {"reduce_bucket_size", "overlap_comm", "gradient_reduce_scatter", "offload_optimizer"}},
      {"zero2",
       "DeepSpeed ZeRO-2: gradients and optimizer state sharded; IPG buckets reduced every micro-step, "
       "overlap_comm keeps one reduction in flight",
       &lower_zero12, F::DeepSpeed, 2, false, "DeepSpeed IPG gradient buckets", kBucketOps, &zero_buffer_bytes, nullptr,
       {"reduce_bucket_size", "overlap_comm", "gradient_reduce_scatter", "offload_optimizer"}},
      {"zero3",
       "DeepSpeed ZeRO-3: parameters sharded too; per-layer coalesced AllGathers with prefetch and "
       "reuse distance, ready-order ReduceScatter buckets",
       &lower_zero3, F::DeepSpeed, 3, false, "IPG buckets + gathered parameters at the peak", kBucketOps,
       &zero_buffer_bytes, &zero3_persistent_param,
       {"reduce_bucket_size", "overlap_comm", "stage3_prefetch_bucket_size", "stage3_max_live_parameters",
        "stage3_max_reuse_distance", "stage3_param_persistence_threshold", "offload_optimizer", "offload_param"}},
      {"fsdp",
       "PyTorch FSDP (FSDP2 fully_shard by default; FSDP1 switches): one AllGather and one "
       "ReduceScatter per unit, prefetch one unit ahead, reshard_after_forward",
       &lower_fsdp, F::FSDP, 3, false, kFsdpBuffers, kGatherOps, nullptr, nullptr,
       {"fsdp_version", "unit_layers", "reshard_after_forward", "backward_prefetch", "forward_prefetch",
        "limit_all_gathers", "sync_every_micro_batch", "cpu_offload"}},
      {"hsdp",
       "PyTorch HSDP: FSDP inside a shard group (a node by default), AllReduce of the shard across "
       "replicas on its own stream",
       &lower_fsdp, F::FSDP, 3, true, kFsdpBuffers, kGatherOps, nullptr, nullptr,
       {"fsdp_version", "unit_layers", "reshard_after_forward", "backward_prefetch", "forward_prefetch",
        "limit_all_gathers", "shard_group_size", "defer_replica_all_reduce", "sync_every_micro_batch", "cpu_offload"}},
  };
  return table;
}

bool StrategyEntry::takes(const std::string& key) const {
  return std::find_if(knobs.begin(), knobs.end(), [&key](const char* k) { return key == k; }) != knobs.end();
}

const StrategyEntry& find_strategy(const std::string& name) {
  for (const auto& e : strategy_registry())
    if (name == e.name) return e;
  throw InternalError("unknown strategy '" + name + "' passed validation");
}

const StrategyEntry& strategy_of(const Scenario& scenario) { return find_strategy(scenario.parallelism.strategy); }

LoweredStep lower_step(const Scenario& scenario) {
  if (scenario.parallelism.pp > 1) return lower_pipeline(scenario);
  return strategy_of(scenario).lower(scenario);
}

}  // namespace stepsim::models
