// SPDX-License-Identifier: Apache-2.0
// Checkpoints (issue 17 item 3): the bytes each rank saves, the gather a full state dict needs,
// the time of one save and its share of each step over the checkpoint interval.
#pragma once

#include "models/scenario.hpp"

#include <string>

namespace stepsim::models {

/// One save of `scenario`'s training state (Scenario::checkpoint). Bytes in decimal units,
/// times in seconds. The state as each framework saves it: FSDP (DCP) the fp32 parameter shards
/// and the optimizer's own states (Adam: 4 + 8 B per parameter; the model alone in float32, as
/// torchtitan exports it); DeepSpeed and DDP the module in its dtype and the optimizer's states
/// with their fp32 master copy (2 + 12 B). `model_only` drops the optimizer's. Under offload the
/// states already in host memory are not staged.
///
/// sharded (semantics-parallel.md §F1, §F5): each rank writes what it holds. Replicated tensors
/// are written once, spread over the ranks that hold them (torch.distributed.checkpoint's
/// dedup_save_plans gives each duplicate to the plan with the fewest bytes): DDP and HSDP's
/// replicas. DeepSpeed ZeRO-1/2: data-parallel rank 0 writes the module's state
/// (mp_rank_00_model_states.pt) and every rank its optimizer partition
/// (zero_pp_rank_N_..._optim_states.pt); ZeRO-3 and FSDP: every rank its shards. Time: each rank
/// stages its bytes to host memory over PCIe (all GPUs at once, the switch shared), then all
/// ranks write through the storage's bandwidth together: largest rank's bytes / shared D2H +
/// total bytes / storage bandwidth (a blocking save; fsync included in the bandwidth); on the
/// nodes' own NVMe (no storage given) at least the busiest node's bytes / its drives' bandwidth.
///
/// full (§F2, §F3; ddp, fsdp, hsdp): every tensor is all-gathered over the shard group (priced as
/// one AllGather of the whole state, a lower bound on FSDP's unit-by-unit gathers), rank 0 alone
/// copies it to CPU memory, then writes it alone: AllGather + state / D2H of one GPU + state /
/// storage bandwidth (one node's NVMe when no storage is given). Rank 0's host memory then holds the whole state: the seeds' warning.
struct CheckpointCost {
  std::string format;               ///< "sharded" | "full"
  std::int64_t interval = 0;        ///< steps between saves
  double state_bytes = 0;           ///< one copy of the whole training state (every TP and EP rank's share)
  double total_bytes = 0;           ///< written by all ranks together (every byte once: state_bytes)
  double max_rank_bytes = 0;        ///< the most one rank writes (the slowest writer)
  double gather_bytes = 0;          ///< full: the AllGather buffer (the whole state), 0 sharded
  double gather_s = 0;              ///< its time
  double stage_s = 0;               ///< device-to-host copies before writing
  double write_s = 0;               ///< through the storage
  double storage_write_bytes_per_s = 0;  ///< the bandwidth used
  bool storage_is_local_nvme = false;    ///< it is the nodes' NVMe (no storage bandwidth given)
  double save_s = 0;                ///< gather + stage + write: one blocking save
  double amortised_s = 0;           ///< save_s / interval: what the saves add to every step (run's step_time_s excludes it)
  double rank0_host_bytes = 0;      ///< full: what rank 0's host memory holds after the gather
  double host_capacity_bytes = 0;   ///< the profile's host.memory_bytes (the node's)
};

/// Prices one save of `s` (precondition: s.checkpoint.enabled, and the rules parse_scenario
/// checks: host facts present, a storage bandwidth, no full format under DeepSpeed).
CheckpointCost checkpoint_cost(const Scenario& s);

}  // namespace stepsim::models
