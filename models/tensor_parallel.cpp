// SPDX-License-Identifier: Apache-2.0
// Tensor parallelism: one rank's share of a model and its TP collectives (tensor_parallel.hpp).
#include "models/tensor_parallel.hpp"

#include "models/recompute.hpp"
#include "models/scenario.hpp"
#include "models/strategy/strategy.hpp"
#include "sim/support/error.hpp"

#include <fmt/format.h>

namespace stepsim::models {

std::string tensor_parallel_problem(const ModelSpec& full, std::int64_t tp) {
  if (tp <= 1) return "";
  const auto indivisible = [tp](const char* what, std::int64_t n) {
    return n % tp == 0 ? std::string()
                       : fmt::format("its {} ({}) do not divide by tp {} (Megatron-LM splits them evenly across the "
                                     "TP ranks)", what, n, tp);
  };
  if (const auto& t = full.transformer_shape) {
    if (t->moe.experts > 0 || t->uses_mla())
      return fmt::format("model '{}' is {}: tensor parallelism of such a model is not modelled yet (its {}); run it "
                         "with tp 1{}", full.name,
                         t->moe.experts > 0 ? "a mixture of experts" : "built on multi-head latent attention",
                         t->moe.experts > 0 ? "experts' split, Megatron-LM's expert tensor parallelism, and the router's"
                                            : "latent projections' split",
                         t->moe.experts > 0 ? " (expert parallelism is parallelism.ep)" : "");
    for (const std::string& why : {indivisible("attention heads", t->heads), indivisible("KV heads", t->kv_heads),
                                   indivisible("MLP width (ffn)", t->ffn)})
      if (!why.empty()) return fmt::format("model '{}': {}", full.name, why);
    return "";
  }
  if (const auto& m = full.mlp_shape) {
    const std::string why = indivisible("ffn features", m->ffn);
    return why.empty() ? "" : fmt::format("model '{}': {}", full.name, why);
  }
  return fmt::format("model '{}' is of kind '{}': tensor parallelism splits a transformer's (or the seed MLP's) "
                     "linears as Megatron-LM does, and this kind has no such layout",
                     full.name, full.kind);
}

ModelSpec tensor_parallel_model(const ModelSpec& full, std::int64_t tp, bool sequence_parallel) {
  if (tp <= 1) return full;
  const std::string why = tensor_parallel_problem(full, tp);
  STEPSIM_ASSERT(why.empty(), "tensor_parallel_model: {}", why);
  ModelSpec local;
  if (const auto& t = full.transformer_shape) {
    TransformerShape shape = *t;
    shape.head_dim = t->q_dim() / t->heads;
    shape.heads = t->heads / tp;
    shape.kv_heads = t->kv_heads / tp;
    shape.ffn = t->ffn / tp;
    shape.vocab = (t->vocab + tp - 1) / tp;
    local = make_transformer(full.name, shape);
  } else {
    const MlpShape& m = *full.mlp_shape;
    local = make_mlp(full.name, m.layers, m.hidden, m.ffn / tp, m.dtype);
  }
  STEPSIM_ASSERT(local.layers.size() == full.layers.size(), "tensor_parallel_model: {} layers rebuilt as {}",
                 full.layers.size(), local.layers.size());
  // What the description set beyond the shape: names and provenance, each tensor's dtype and
  // trainable flag (model.dtype, "trainable": false).
  copy_model_provenance(full, local);
  for (std::size_t i = 0; i < full.layers.size(); ++i) {
    LayerSpec& l = local.layers[i];
    const LayerSpec& f = full.layers[i];
    STEPSIM_ASSERT(l.params.size() == f.params.size(), "tensor_parallel_model: layer {} has {} tensors, rebuilt {}",
                   f.name, f.params.size(), l.params.size());
    for (std::size_t k = 0; k < l.params.size(); ++k) {
      l.params[k].dtype = f.params[k].dtype;
      l.params[k].trainable = f.params[k].trainable;
    }
    if (!sequence_parallel || l.vocab_parallel != LayerSpec::VocabParallel::None) continue;
    const double t = static_cast<double>(tp);
    l.fwd_streaming_bytes_per_token = f.fwd_streaming_bytes_per_token / t;
    l.activation_bytes_per_token = f.activation_bytes_per_token / t;
    l.input_bytes_per_token = f.input_bytes_per_token / t;
    l.eager_extra_streaming_bytes_per_token = f.eager_extra_streaming_bytes_per_token / t;
    l.eager_extra_activation_bytes_per_token = f.eager_extra_activation_bytes_per_token / t;
  }
  return local;
}

std::string TensorParallelCollective::label() const {
  return std::string(recompute ? "recompute_" : "") + (loss ? "loss_" : "") + hardware::collective_op_name(op);
}

std::int64_t tensor_parallel_hidden(const ModelSpec& m) {
  if (m.transformer_shape) return m.transformer_shape->hidden;
  STEPSIM_ASSERT(m.mlp_shape != nullptr, "tensor_parallel_hidden: model '{}' has no shape to split", m.name);
  return m.mlp_shape->hidden;
}

std::vector<TensorParallelCollective> tensor_parallel_collectives(const Scenario& s, std::size_t layer, bool backward) {
  std::vector<TensorParallelCollective> out;
  using Op = hardware::CollectiveOp;
  const auto& par = s.parallelism;
  if (par.tp <= 1) return out;
  const ModelSpec& m = s.model;
  const LayerSpec& l = m.layers.at(layer);
  const std::int64_t hidden = tensor_parallel_hidden(m);
  const DType act = m.transformer_shape ? m.transformer_shape->dtype : m.mlp_shape->dtype;
  const double tokens = static_cast<double>(s.tokens_per_micro_batch());
  const double n = tokens * static_cast<double>(hidden) * dtype_bytes(act);  // the [s, b, h] activations
  const auto add = [&](Op op, double bytes) { out.push_back({op, bytes}); };
  const bool sp = par.sequence_parallel;
  // PyTorch's DTensor TP (torchtitan, with FSDP2): autograd keeps the all-gathered input of the
  // column-parallel linears, so the backward gathers nothing again (§A15–A16).
  const bool dtensor = strategy_of(s).family == StrategyFamily::FSDP;
  // torchtitan's float8 tensorwise TP (torchao Float8ColwiseParallel / PrepareFloat8ModuleInput):
  // the column-parallel input is cast to float8 before its AllGather, 1 byte per element.
  const bool fp8_gather = dtensor && s.precision.float8 == PrecisionConfig::Float8::Tensorwise;
  // Full recomputation re-runs the layer's forward, its TP collectives with it, before the
  // backward (Megatron-LM's CheckpointFunction over the whole block).
  // torchtitan's op-level policy keeps what reduce_scatter_tensor returns (its save list:
  // torchtitan/distributed/activation_checkpoint.py, comm_ops) and recomputes the rest, so the
  // forward's AllGathers and AllReduces run again.
  // Both checkpoint the transformer blocks only (Megatron-LM's CheckpointFunction per layer,
  // torchtitan's apply_ac per TransformerBlock): the embedding's and the LM head's run once.
  if (backward && !l.root) {
    const LayerRecompute policy = recompute_work(s, layer).policy;
    if (policy == LayerRecompute::Full || policy == LayerRecompute::SelectiveOp)
      for (auto c : tensor_parallel_collectives(s, layer, false))
        if (policy == LayerRecompute::Full || c.op != Op::ReduceScatter)
          out.push_back({c.op, c.bytes, c.loss, true});
  }
  for (int pair = 0; pair < l.tp_linear_pairs; ++pair) {
    if (!sp) {
      add(Op::AllReduce, n);  // forward: after the row-parallel linear; backward: the input gradient
    } else if (!backward) {
      add(Op::AllGather, fp8_gather ? n / dtype_bytes(act) : n);  // into the column-parallel linear
      add(Op::ReduceScatter, n);  // out of the row-parallel linear
    } else {
      add(Op::AllGather, n);                       // backward of the forward's ReduceScatter
      if (!dtensor) add(Op::AllGather, n);  // Megatron: the saved input shard re-gathered for wgrad
      add(Op::ReduceScatter, n);  // the column-parallel input gradient
    }
  }
  switch (l.vocab_parallel) {
    case LayerSpec::VocabParallel::Embedding:
      if (!backward) add(sp && m.learned_positions == 0 ? Op::ReduceScatter : Op::AllReduce, n);
      else if (sp) add(Op::AllGather, n);
      break;
    case LayerSpec::VocabParallel::Head:
      if (!backward) {
        if (sp) add(Op::AllGather, n);
        for (int k = 0; k < 3; ++k) out.push_back({Op::AllReduce, 4.0 * tokens, true});  // max, target, sum of exp
      } else if (sp) {
        add(Op::AllGather, n);
        add(Op::ReduceScatter, n);
      } else {
        add(Op::AllReduce, n);
      }
      break;
    case LayerSpec::VocabParallel::None: break;
  }
  return out;
}

}  // namespace stepsim::models
