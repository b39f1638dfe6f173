// SPDX-License-Identifier: Apache-2.0
// Activation-checkpointing policies per layer (rules and sources in recompute.hpp).
#include "models/recompute.hpp"

#include "sim/support/error.hpp"

#include <algorithm>

namespace stepsim::models {

namespace {

using Policy = ActivationConfig::Recompute;

bool has_kind(const LayerSpec& l, bool linear) {
  return std::any_of(l.gemms.begin(), l.gemms.end(),
                     [&](const LayerGemm& g) { return linear ? g.kind == LayerGemm::Kind::Linear : g.attention(); });
}

// 0-based position of `layer` among the non-root layers (the transformer blocks), counted in
// forward order as torchtitan's process-global wrapper counter counts model.layers' children.
std::size_t block_index(const ModelSpec& m, std::size_t layer) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < layer; ++i) n += m.layers[i].root ? 0 : 1;
  return n;
}

// Eager PyTorch's composites save more for backward (RMSNorm's fp32 input, LayerSpec).
double eager_extra(const Scenario& s, const LayerSpec& l) {
  return s.framework.eager() ? l.eager_extra_activation_bytes_per_token : 0.0;
}

DType gemm_dtype(const LayerSpec& l, const LayerGemm& g) {
  return g.param >= 0 ? l.params.at(static_cast<std::size_t>(g.param)).dtype : DType::BF16;
}

// A fused cross-entropy kernel keeps the low-precision logits, not fp32 log-probabilities.
bool fused_loss(const Scenario& s, const LayerSpec& l) { return !s.framework.upcast_logits && l.fused_loss_bytes_per_token > 0; }

double none_bytes(const Scenario& s, const LayerSpec& l) {
  if (fused_loss(s, l)) return l.fused_loss_bytes_per_token;
  return activation_bytes_per_token(l, s.activations.flash_attention, false, s.batch.seq_len) + eager_extra(s, l);
}

}  // namespace

LayerRecompute layer_recompute(const Scenario& s, std::size_t layer) {
  const LayerSpec& l = s.model.layers.at(layer);
  switch (s.activations.recompute) {
    case Policy::None: return LayerRecompute::None;
    case Policy::Full: return LayerRecompute::Full;
    case Policy::SelectiveLayer: {
      if (l.root) return LayerRecompute::None;
      const auto count = static_cast<std::int64_t>(block_index(s.model, layer)) + 1;
      return count % s.activations.ac_freq == 0 ? LayerRecompute::Full : LayerRecompute::None;
    }
    case Policy::SelectiveOp:
      return !l.root && !l.fwd_s && has_kind(l, true) ? LayerRecompute::SelectiveOp : LayerRecompute::None;
    case Policy::MegatronSelective:
      return !l.root && !l.fwd_s && has_kind(l, false) ? LayerRecompute::CoreAttention : LayerRecompute::None;
  }
  return LayerRecompute::None;
}

RecomputeWork recompute_work(const Scenario& s, std::size_t layer) {
  const LayerSpec& l = s.model.layers.at(layer);
  RecomputeWork w;
  w.policy = layer_recompute(s, layer);
  switch (w.policy) {
    case LayerRecompute::None: break;
    case LayerRecompute::Full:
      for (std::size_t i = 0; i < l.gemms.size(); ++i) w.gemms.push_back(i);
      w.linear_flops_share = w.attention = w.streaming = 1;
      break;
    case LayerRecompute::SelectiveOp: {
      // Matmuls counted per block invocation: the 2nd, 4th … re-run (semantics-parallel.md §G3).
      int count = 0;
      double rerun = 0;
      for (std::size_t i = 0; i < l.gemms.size(); ++i) {
        const LayerGemm& g = l.gemms[i];
        if (g.kind != LayerGemm::Kind::Linear || ++count % 2 != 0) continue;
        w.gemms.push_back(i);
        rerun += g.flops_per_sample();
      }
      w.linear_flops_share = l.fwd_gemm_flops_per_token > 0 ? std::min(1.0, rerun / l.fwd_gemm_flops_per_token) : 0.0;
      w.streaming = 1;
      break;
    }
    case LayerRecompute::CoreAttention:
      for (std::size_t i = 0; i < l.gemms.size(); ++i)
        if (l.gemms[i].attention()) w.gemms.push_back(i);
      w.attention = 1;
      break;
  }
  return w;
}

double kept_activation_bytes_per_token(const Scenario& s, std::size_t layer) {
  const LayerSpec& l = s.model.layers.at(layer);
  switch (layer_recompute(s, layer)) {
    case LayerRecompute::None: return none_bytes(s, l);
    case LayerRecompute::Full: return fused_loss(s, l) ? l.fused_loss_bytes_per_token : l.input_bytes_per_token;
    case LayerRecompute::SelectiveOp: {
      double kept = l.input_bytes_per_token;
      int count = 0;
      for (const LayerGemm& g : l.gemms) {
        if (g.kind == LayerGemm::Kind::Linear) {
          // A routed expert's output: one row per routed copy (topk per token).
          if (++count % 2 == 1) kept += g.n * (g.experts > 0 ? g.topk : 1.0) * dtype_bytes(gemm_dtype(l, g));
        } else if (g.kind == LayerGemm::Kind::AttentionScores) {
          // SDPA's saved outputs: the attention output and its fp32 logsumexp per head.
          const DType act = l.params.empty() ? DType::BF16 : l.params.front().dtype;
          kept += g.heads * g.head_dim * dtype_bytes(act) + 4.0 * g.heads;
        }
      }
      return std::min(kept, none_bytes(s, l));
    }
    case LayerRecompute::CoreAttention:
      return activation_bytes_per_token(l, true, false, s.batch.seq_len) + eager_extra(s, l);
  }
  return none_bytes(s, l);
}

double recomputed_activation_bytes_per_token(const Scenario& s, std::size_t layer) {
  if (layer_recompute(s, layer) == LayerRecompute::None) return 0;
  return std::max(0.0, none_bytes(s, s.model.layers.at(layer)) - kept_activation_bytes_per_token(s, layer));
}

std::vector<std::string> recompute_names() {
  return {"none", "full", "selective_op", "selective_layer", "megatron_selective"};
}

std::string recompute_name(ActivationConfig::Recompute policy) {
  return recompute_names().at(static_cast<std::size_t>(policy));
}

ActivationConfig::Recompute recompute_from_name(const std::string& name) {
  const auto names = recompute_names();
  const auto it = std::find(names.begin(), names.end(), name);
  STEPSIM_ASSERT(it != names.end(), "unknown recompute policy '{}' (parse_scenario checks it)", name);
  return static_cast<ActivationConfig::Recompute>(it - names.begin());
}

}  // namespace stepsim::models
