// SPDX-License-Identifier: Apache-2.0
// Tensor parallelism as Megatron-LM builds it (issue 15 item 5): one rank's share of a model
// and the TP collectives of each of its layers.
//
// Rules (shared/reference/semantics-parallel.md §A, each read in Megatron-LM's
// megatron/core/tensor_parallel/layers.py and mappings.py):
//  - a transformer block holds two ColumnParallelLinear → RowParallelLinear pairs (A3): the
//    attention's qkv (column: heads and KV heads split tp ways) → proj (row), the MLP's fc1
//    (column: ffn split) → fc2 (row); norms, and biases added after a row-parallel reduction,
//    are replicated (A7);
//  - the embedding is vocab-parallel (A12), the LM head column-parallel over the vocabulary
//    with a vocab-parallel cross-entropy (A13: logits stay [s, b, V/tp]);
//  - per pair and micro-batch, without sequence parallelism: forward one AllReduce of the
//    [s, b, h] activations after the row-parallel linear, backward one AllReduce of the
//    column-parallel linear's input gradient (A4); with sequence parallelism: forward an
//    AllGather before the column-parallel linear and a ReduceScatter after the row-parallel
//    one, backward an AllGather (the ReduceScatter's backward), a ReduceScatter of the input
//    gradient and an AllGather that re-gathers the saved input shard for the weight gradient
//    (A5); under the FSDP strategies, whose TP is PyTorch's DTensor TP as torchtitan applies it
//    (A15–A16: the same forward collectives), autograd keeps the all-gathered input, so the
//    backward has no re-gather (its activations keep that input whole; not modelled in memory);
//    with float8 tensorwise it all-gathers that input in float8, 1 byte per element (torchao's
//    Float8ColwiseParallel, which torchtitan's apply_tp takes under enable_float8_tensorwise_tp);
//  - the embedding reduces its output over TP (AllReduce; ReduceScatter into the sequence
//    shards under sequence parallelism when the model has no learned position table, A12),
//    the LM head's column-parallel input is all-gathered under sequence parallelism and its
//    input gradient all-reduced (reduce-scattered and re-gathered under sequence parallelism),
//    and the vocab-parallel cross-entropy runs three AllReduces of an fp32 [s, b] tensor in
//    forward (max, target logit, sum of exponentials, A13);
//  - full recomputation (activations.recompute "full", and the blocks "selective_layer"
//    checkpoints) re-runs the forward's TP collectives before the backward's; torchtitan's
//    op-level policy ("selective_op") saves the outputs of reduce_scatter_tensor and recomputes
//    the rest, so its AllGathers and AllReduces run again (torchtitan/distributed/
//    activation_checkpoint.py, the comm_ops save list); Megatron's selective recompute of core
//    attention re-runs none;
//  - with sequence parallelism everything outside the TP regions (norms, dropout, residual
//    adds) runs on s/tp tokens, so every per-token HBM and activation term of a layer other
//    than the vocabulary's is 1/tp of the whole model's (Korthikanti et al. 2022 §4.2.2:
//    sbh(34/t + 5as/(ht)) per layer, against sbh(10 + 24/t + 5as/(ht)) without).
// parallelism.tp_comm_overlap (Megatron-LM's tp_comm_overlap, A6; torchtitan's async TP:
// torch._inductor's micro-pipeline TP) runs each layer's TP collectives beside its compute on
// their own stream; the next layer waits for them (models/strategy/compute_tasks.hpp). What
// the chunked pipeline cannot hide (its first AllGather chunk, its last ReduceScatter chunk) is
// not priced, so this is a lower bound on the exposed TP time.
// Not modelled yet: the backward AllReduce's overlap with the weight-gradient GEMM (A1: it
// runs after the layer's backward here, an upper bound on its cost) and the sequence-parallel
// AllReduce of the replicated parameters' gradients (A7, a few MB).
#pragma once

#include "hardware/collective_model.hpp"
#include "models/model_spec.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace stepsim::models {

struct Scenario;

/// Why `full` cannot be split `tp` ways, as one clause ("" when it can): a model kind without
/// Megatron's layout (a ResNet, a `layers` list), or attention heads, KV heads (Megatron's
/// num_query_groups), the MLP width or the seed MLP's ffn not divisible by tp
/// (megatron/core/utils.py divide() asserts it where the linears are built).
/// @pre tp ≥ 1
std::string tensor_parallel_problem(const ModelSpec& full, std::int64_t tp);

/// One rank's share of `full` under `tp`-way tensor parallelism: the model rebuilt from its
/// shape with heads, KV heads and the MLP width divided by tp (head_dim kept) and the
/// vocabulary divided by tp rounded up (Megatron pads it), so every column- and row-parallel
/// linear has its per-rank GEMM shape and tensor, and the replicated tensors (norms, row
/// biases) their whole size. Tensor names, order, dtypes and trainable flags are `full`'s. With
/// `sequence_parallel`, every layer but the embedding and the LM head takes 1/tp of `full`'s
/// per-token streaming and activation bytes. tp = 1 returns `full`.
/// @pre tensor_parallel_problem(full, tp) is empty (InternalError otherwise)
ModelSpec tensor_parallel_model(const ModelSpec& full, std::int64_t tp, bool sequence_parallel);

/// One TP collective of a layer: op, nccl-tests size in bytes (the logical [s, b, h] tensor,
/// or the [s, b] fp32 tensor of the cross-entropy), and what it is for the task's name.
struct TensorParallelCollective {
  hardware::CollectiveOp op;
  double bytes;
  bool loss = false;       ///< one of the vocab-parallel cross-entropy's AllReduces
  bool recompute = false;  ///< the forward's, run again by recomputation before the backward
  /// "allreduce", "loss_allreduce", "recompute_allgather" … (hardware::collective_op_name).
  std::string label() const;
};

/// The [s, b, h] activations' hidden width h of a model tensor parallelism can split (its
/// transformer or seed-MLP shape). Precondition: tensor_parallel_problem(m, 2) names no kind.
std::int64_t tensor_parallel_hidden(const ModelSpec& m);

/// The TP collectives of one micro-batch of `layer` of `s.model` (the rank-local model) in
/// its forward (`backward` false) or backward, per the rules in this file's header, in issue
/// order. Empty when parallelism.tp is 1.
std::vector<TensorParallelCollective> tensor_parallel_collectives(const Scenario& s, std::size_t layer, bool backward);

}  // namespace stepsim::models
