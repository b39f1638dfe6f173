// SPDX-License-Identifier: Apache-2.0
// Context parallelism (issue 15 item 7; shared/reference/semantics-parallel.md §C): the
// sequence of every micro-batch split over parallelism.cp ranks, and the KV transfers each
// attention layer needs.
//
// Rules modelled:
//  - placement and data (C1, C6, C7): CP ranks sit between TP and DP (Megatron-LM's order
//    tp-cp-dp-pp): a CP group takes every tp-th rank. Each rank holds seq_len / cp tokens of
//    every micro-batch (load-balanced: chunks i and 2·cp − 1 − i, so seq_len divides by 2·cp),
//    and every module but attention works on them unchanged (Scenario::tokens_per_micro_batch).
//    Its queries attend to the whole sequence's keys: 1/cp of the causal attention's work, run
//    as cp kernel steps of seq_len / cp queries (models/strategy/compute_tasks.cpp). Weights are
//    replicated across CP: gradients are reduced (and FSDP shards) over dp × cp ranks
//    (Scenario::data_ranks);
//  - KV of one rank, one layer, one micro-batch: K and V of its tokens,
//    2 · micro_batch_size · (seq_len / cp) · ⌈kv_heads / tp⌉ · head_dim in the parameter dtype
//    (C3);
//  - `p2p` (Megatron-LM's --cp-comm-type default, Transformer Engine's AttnFuncWithCPAndKVP2P,
//    C3–C4): forward cp − 1 ring messages of KV, each overlapping one attention step; backward
//    cp − 1 of KV and cp − 1 of dKV (activation dtype). They run beside the layer's compute
//    (kCpStream), the next layer waiting for them;
//  - `allgather` (torchtitan's default rotate method, _AllGatherRotater, C7): forward one
//    AllGather of KV over the CP group, which only the first step could hide: on the compute
//    stream; backward the AllGather again, and dK/dV rotated around the ring (cp − 1 messages)
//    in fp32 (convert_to_f32; [derived, unconfirmed] in semantics-parallel.md), beside the
//    layer's backward;
//  - recomputation that re-runs the attention (full, megatron_selective) re-runs its forward
//    transfers in backward.
// Not modelled: Ulysses (a2a) and a2a+p2p, the last ring steps' transfers the attention
// cannot hide being shorter than a whole layer (the overlap window is the layer's compute).
#pragma once

#include "hardware/collective_model.hpp"

#include <cstddef>
#include <string>
#include <vector>

namespace stepsim::models {

struct Scenario;

/// One kind of CP transfer of one layer and micro-batch on one rank.
struct ContextParallelTransfer {
  /// Ring messages between CP neighbours (point to point, overlapped with the layer), or
  /// AllGathers over the CP group (on the compute stream).
  bool ring = true;
  hardware::CollectiveOp op = hardware::CollectiveOp::AllGather;  ///< when !ring
  int count = 0;       ///< how many
  double bytes = 0;    ///< each: a message's bytes, or an AllGather's output (nccl-tests size)
  const char* what = "kv";  ///< "kv", "dkv"
  bool recompute = false;   ///< the forward's, re-run by recomputation in backward
  /// "kv_ring", "dkv_ring", "kv_allgather", "recompute_kv_ring" … for task names.
  std::string label() const;
};

/// The CP transfers of one micro-batch of `layer` in its forward (`backward` false) or its
/// backward, per the rules in this file's header; empty without CP or for a layer without
/// attention.
std::vector<ContextParallelTransfer> context_parallel_transfers(const Scenario& s, std::size_t layer, bool backward);

/// KV bytes of one rank, one attention layer and one micro-batch (header). Precondition: the
/// model has a transformer shape.
double context_parallel_kv_bytes(const Scenario& s);

/// "p2p" or "allgather": parallelism.cp_comm_type's default for a strategy family, as the
/// frameworks default it (torchtitan under fsdp / hsdp, Megatron-LM otherwise).
const char* default_cp_comm_type(const Scenario& s);

}  // namespace stepsim::models
