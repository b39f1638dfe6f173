// SPDX-License-Identifier: Apache-2.0
// Activation checkpointing as the frameworks do it (issue 14 item 4): which layers recompute
// what in backward, what each keeps from forward to backward, and what the recomputation
// rebuilds for the duration of the layer's backward. Rules (semantics-parallel.md §G):
//  * full (G2): the whole layer's forward runs again; only its input is kept. stepsim applies
//    it to every layer (as it always has), torchtitan's FullAC to every transformer block.
//  * selective_op (G3, torchtitan per-op SAC, torchtitan/distributed/activation_checkpoint.py):
//    in each transformer block the outputs of the 1st, 3rd, 5th … matmul (counted per block
//    invocation) and of the fused attention (SDPA flash / efficient: output and logsumexp) are
//    saved; the 2nd, 4th … matmul and every other op (norms, rotary, SiLU, products, residual
//    adds) are recomputed. With Llama's order wq, wk, wv, wo, w1, w3, w2: wq, wv, w1, w2 saved;
//    wk, wo, w3 recomputed.
//  * selective_layer (G4, torchtitan ≤ v0.2.2 selective_ac_option = "k"): full AC on the blocks
//    whose 1-based count is divisible by k (k = 2: the 2nd, 4th … block); the rest keep all.
//  * megatron_selective (G6, Megatron `--recompute-activations`, recompute_modules
//    ["core_attn"]): the attention core (QKᵀ, softmax, dropout, ·V) is recomputed in every block;
//    with fused (flash) attention nothing of it was stored, so only its time is added.
// Only transformer blocks (non-root layers) take the selective policies; embeddings, the final
// norm and the LM head keep their activations, as torchtitan wraps only model.layers' children.
#pragma once

#include "models/model_spec.hpp"
#include "models/scenario.hpp"

#include <cstddef>
#include <string>
#include <vector>

namespace stepsim::models {

/// What one layer recomputes in its backward.
enum class LayerRecompute { None, Full, SelectiveOp, CoreAttention };

/// The policy of layer `layer` under s.activations.recompute (rules above). SelectiveOp and
/// CoreAttention apply to non-root layers with GEMM shapes (Linear, resp. attention) and no
/// measured time; others get None. Precondition: layer < s.model.layers.size().
LayerRecompute layer_recompute(const Scenario& s, std::size_t layer);

/// The forward work layer `layer` runs again inside its backward.
struct RecomputeWork {
  LayerRecompute policy = LayerRecompute::None;
  /// Indexes into LayerSpec::gemms whose forward GEMM re-runs, in forward order (Full: all).
  std::vector<std::size_t> gemms;
  double linear_flops_share = 0;  ///< share of fwd_gemm_flops_per_token re-run (Full 1)
  double attention = 0;           ///< 1: the attention core's forward re-runs (Full, CoreAttention)
  double streaming = 0;           ///< 1: the layer's streaming kernels re-run (Full, SelectiveOp)
};

/// The recompute work of `layer` (the rules above; empty for None).
RecomputeWork recompute_work(const Scenario& s, std::size_t layer);

/// Activation bytes per token layer `layer` keeps from its forward to its backward:
/// None: activation_bytes_per_token (with eager attention's scores) + under eager PyTorch
/// LayerSpec::eager_extra_activation_bytes_per_token; Full: its input;
/// SelectiveOp: its input + the saved matmul outputs (n elements each, in the weight's dtype)
/// + per attention its output (heads·head_dim elements) and fp32 logsumexp (4·heads bytes),
/// capped at None's; CoreAttention: None's less eager attention's scores.
double kept_activation_bytes_per_token(const Scenario& s, std::size_t layer);

/// Bytes per token the recomputation rebuilds while the layer's backward runs (None's
/// activations less the kept ones; 0 when the layer recomputes nothing).
double recomputed_activation_bytes_per_token(const Scenario& s, std::size_t layer);

/// "none", "full", "selective_op", "selective_layer", "megatron_selective".
std::string recompute_name(ActivationConfig::Recompute policy);
/// Every name recompute_name gives, in enum order (the scenario's `activations.recompute`).
std::vector<std::string> recompute_names();
/// Inverse of recompute_name. Precondition: `name` is one of recompute_names() (parse checks).
ActivationConfig::Recompute recompute_from_name(const std::string& name);

}  // namespace stepsim::models
