// SPDX-License-Identifier: Apache-2.0
// Expert parallelism: one rank's experts and its all-to-alls (expert_parallel.hpp).
#include "models/expert_parallel.hpp"

#include "models/recompute.hpp"
#include "models/scenario.hpp"
#include "models/strategy/strategy.hpp"
#include "sim/support/error.hpp"

#include <fmt/format.h>

namespace stepsim::models {

std::string expert_parallel_problem(const Scenario& s) {
  const auto& p = s.parallelism;
  if (p.ep <= 1) return "";
  const auto& t = s.model.transformer_shape;
  if (!t || t->moe.experts == 0 || !s.model.has_experts())
    return fmt::format("model '{}' has no {}: expert parallelism spreads a mixture of experts' experts; expected ep 1",
                       s.model.name, t && t->moe.experts > 0 ? "MoE block (every block is dense)" : "routed experts");
  if (p.pp > 1) return "with pipeline parallelism it is not modelled yet; expected pp 1";
  if (s.hardware.is_torus()) return fmt::format("on the {} torus it is not modelled; expected ep 1", s.hardware.name);
  if (t->moe.experts % p.ep != 0)
    return fmt::format("model '{}' has {} routed experts per MoE layer, which do not divide by ep (each EP rank holds "
                       "experts / ep of them); expected a divisor of {}", s.model.name, t->moe.experts, t->moe.experts);
  if (s.data_ranks() % p.ep != 0)
    return fmt::format("EP groups are ep consecutive data-parallel ranks, and dp{} = {} does not divide by it; expected "
                       "a divisor of {}", p.cp > 1 ? " × cp" : "", s.data_ranks(), s.data_ranks());
  if (strategy_of(s).hybrid && s.shard_ranks() % p.ep != 0)
    return fmt::format("under hsdp an EP group lies inside one shard group (torchtitan's dp_shard_in_ep), and its {} "
                       "ranks do not divide by it; expected a divisor of {} (or a shard_group_size that ep divides)",
                       s.shard_ranks(), s.shard_ranks());
  return "";
}

ModelSpec expert_parallel_model(const ModelSpec& full, std::int64_t ep) {
  if (ep <= 1) return full;
  STEPSIM_ASSERT(full.transformer_shape && full.transformer_shape->moe.experts % ep == 0,
                 "expert_parallel_model: model '{}' cannot split its experts {} ways", full.name, ep);
  TransformerShape shape = *full.transformer_shape;
  shape.moe.ep = ep;
  ModelSpec local = make_transformer(full.name, shape);
  copy_model_provenance(full, local);
  STEPSIM_ASSERT(local.layers.size() == full.layers.size(), "expert_parallel_model: {} layers rebuilt as {}",
                 full.layers.size(), local.layers.size());
  // Each tensor's dtype and trainable flag as the description set them, matched by name (the
  // local model holds fewer expert tensors).
  for (std::size_t i = 0; i < full.layers.size(); ++i) {
    const auto& f = full.layers[i].params;
    std::size_t k = 0;
    for (auto& p : local.layers[i].params) {
      while (k < f.size() && f[k].name != p.name) ++k;
      if (k == f.size()) break;
      p.dtype = f[k].dtype;
      p.trainable = f[k].trainable;
    }
  }
  return local;
}

bool expert_partitioned(const Scenario& s, const ParamTensor& p) { return p.expert_share > 0 && s.parallelism.ep > 1; }

double expert_compute_share(const Scenario& s, std::size_t layer) {
  const LayerSpec& l = s.model.layers.at(layer);
  if (l.routing.experts <= 0) return 0;
  double experts = 0;
  for (const LayerGemm& g : l.gemms)
    if (g.experts > 0) experts += g.flops_per_sample();
  const double total =
      l.fwd_gemm_flops_per_token + l.fwd_attn_flops_per_token_per_seq * l.attention_keys(static_cast<double>(s.batch.seq_len));
  return total > 0 ? experts / total : 0.0;
}

std::string ExpertParallelTransfer::label() const { return fmt::format("{}{}", recompute ? "recompute_" : "", what); }

std::vector<ExpertParallelTransfer> expert_parallel_transfers(const Scenario& s, std::size_t layer, bool backward) {
  std::vector<ExpertParallelTransfer> out;
  const LayerSpec& l = s.model.layers.at(layer);
  if (s.parallelism.ep <= 1 || l.routing.experts <= 0) return out;
  // The tokens' top-k copies in the activation dtype (the block's parameters').
  const double act = l.params.empty() ? 2.0 : dtype_bytes(l.params.front().dtype);
  const double tokens = static_cast<double>(s.tokens_per_micro_batch());
  const double copies = tokens * l.routing.topk * l.routing.hidden * act;
  const double counts = 8.0 * l.routing.experts;  // int64 tokens per expert
  const auto forward = [&](bool recompute) {
    out.push_back({"counts", counts, recompute});
    out.push_back({"dispatch", copies, recompute});
    out.push_back({"combine", copies, recompute});
  };
  if (!backward) {
    forward(false);
    return out;
  }
  if (recompute_work(s, layer).policy == LayerRecompute::Full) forward(true);
  out.push_back({"combine", copies, false});   // the combine's gradient, back to the experts
  out.push_back({"dispatch", copies, false});  // the dispatch's gradient, back to the tokens
  return out;
}

}  // namespace stepsim::models
