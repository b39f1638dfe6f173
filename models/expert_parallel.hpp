// SPDX-License-Identifier: Apache-2.0
// Expert parallelism (issue 16 item 3; shared/reference/semantics-parallel.md §D): a mixture of
// experts' routed experts spread over parallelism.ep ranks, the tokens sent to them and back.
//
// Rules modelled (torchtitan's ExpertParallel, D7, with Megatron-LM's process groups, D1):
//  - placement: EP borrows from the data-parallel ranks: an EP group is ep consecutive DP ranks
//    (torchtitan's dp_shard_in_ep; with TP at 1, which MoE models run here), so ep divides
//    dp × cp; each rank holds experts / ep of every MoE layer's routed experts (Shard(0) on the
//    experts), so the experts divide by ep; the router, the shared experts, attention and the
//    dense blocks stay replicated across EP;
//  - tokens: every MoE layer's forward exchanges the per-expert token counts (one all-to-all of
//    experts int64 counts, then a blocking device-to-host copy of the splits), dispatches each
//    token's top-k copies to their experts' ranks (an all-to-all of tokens · topk · hidden
//    elements in the activation dtype per rank: dropless, a balanced router) and, after the
//    experts, combines them back (the same bytes); backward runs the combine's and the
//    dispatch's gradients (two more all-to-alls of the same size). They are issued on the
//    default stream, between the router and the experts and after them, so compute waits for
//    them. Full recomputation re-runs the forward's three (torch.utils.checkpoint re-executes
//    the module; selective AC saves their outputs, D8);
//  - the experts' grouped GEMMs run experts / ep weights on the tokens · topk · ep / experts
//    copies each receives (LayerGemm::experts); their FLOPs per rank are unchanged;
//  - gradients: dense tensors reduce over dp × cp ranks as without EP; the routed experts'
//    over the dp × cp / ep ranks holding the same experts (Megatron-LM's expert-data-parallel
//    group; torchtitan's efsdp mesh): ddp all-reduces them in buckets of their own, fsdp
//    all-gathers and reduce-scatters them over that group (torchtitan wraps the experts as an
//    FSDP unit of their own on it), each beside its block's dense collective on the same stream;
//    hsdp keeps EP inside its shard group (ep divides shard_group_size): the experts gather and
//    reduce-scatter over the shard group's ranks holding them (shard / ep), then AllReduce over
//    the replicas beside the dense shard (torchtitan's dp_replicate × efsdp mesh);
//  - DeepSpeed ZeRO-1/2 (stage_1_and_2.py, v0.16.5; native MoE): the experts' parameter group
//    is partitioned over the expert-data-parallel group (_configure_moe_settings sets its
//    real_dp_process_group and partition_count); each IPG bucket's slices are reduced per
//    process group, in the order they appear in it (average_tensor: one allreduce_and_scatter
//    for the dense slices over DP, one for the expert slices over expert DP, on the reduction
//    stream), and after step() each parameter group is all-gathered over its own group;
//  - ZeRO-3 (stage3.py and partition_parameters.py, DeepSpeed master of 2026-08: AutoEP; native
//    MoE layers are refused under stage 3): an expert parameter's partition group is the expert
//    DP group; a coalesced fetch runs one AllGather per partition group (all_gather_coalesced
//    groups its parameters by group; a group of one rank gathers nothing), and the IPG reduce
//    bucket is flushed when a gradient of another partition group arrives
//    (reduce_independent_p_g_buckets_and_remove_grads), so expert gradients reduce-scatter in
//    buckets of their own.
//  - uneven routing (per_rank mode, sim.expert_load): each rank's load of each MoE layer is
//    drawn once per step and scales its experts' share of the layer's compute
//    (expert_compute_share), capped at the capacity factor (tokens beyond dropped); the
//    all-to-alls are rendezvous, so the busiest rank of an EP group sets their pace.
// Not modelled: the load's effect on the all-to-alls' own sizes (a busy rank receives more
// bytes), padding to capacity, expert tensor parallelism, DeepEP / HybridEP dispatchers, the device-to-host
// sync's stall of the CPU's run-ahead, and pipeline parallelism.
#pragma once

#include "models/model_spec.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace stepsim::models {

struct Scenario;

/// Why `s` (parsed, with its full model) cannot run expert parallelism at s.parallelism.ep;
/// "" when it can (ep 1 always can). Checks: a mixture-of-experts model, pp 1, a GPU profile,
/// ep dividing the experts of every MoE layer and dp × cp (under hsdp, the shard group).
std::string expert_parallel_problem(const Scenario& s);

/// One rank's share of `full` under expert parallelism `ep` (≥ 1): every MoE layer holds
/// experts / ep of its routed experts (tensors and grouped-GEMM batch); everything else as
/// `full` (names, dtypes, trainable flags, provenance). `full` itself at ep 1.
/// Precondition: expert_parallel_problem() is "" for this ep.
ModelSpec expert_parallel_model(const ModelSpec& full, std::int64_t ep);

/// Whether tensor `p` of `s`'s model is a routed expert's under expert parallelism (ep > 1):
/// sharded and reduced over the expert-data-parallel group instead of the DP group.
bool expert_partitioned(const Scenario& s, const ParamTensor& p);

/// The share of `layer`'s compute that its routed experts do, by forward FLOPs (their grouped
/// GEMMs over the layer's linears and attention at the scenario's sequence): what a rank's
/// expert load scales (sim.expert_load). 0 for a dense layer.
double expert_compute_share(const Scenario& s, std::size_t layer);

/// One all-to-all of one MoE layer and micro-batch on one rank.
struct ExpertParallelTransfer {
  const char* what = "dispatch";  ///< "counts", "dispatch", "combine"
  double bytes = 0;               ///< one rank's send buffer (nccl-tests' alltoall size)
  bool recompute = false;         ///< the forward's, re-run by full recomputation in backward
  /// "counts", "dispatch", "combine", "recompute_dispatch" … for task names.
  std::string label() const;
};

/// The EP all-to-alls of one micro-batch of `layer` in its forward (`backward` false) or
/// backward, in issue order, per the rules above; empty without EP or for a dense layer.
std::vector<ExpertParallelTransfer> expert_parallel_transfers(const Scenario& s, std::size_t layer, bool backward);

}  // namespace stepsim::models
