// SPDX-License-Identifier: Apache-2.0
// ModelSpec builders: transformer, torchvision's ResNet and the seed's MLP.
#include "models/model_spec.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace stepsim::models {

double dtype_bytes(DType t) {
  switch (t) {
    case DType::FP32: return 4;
    case DType::BF16: return 2;
    case DType::FP16: return 2;
    case DType::FP8: return 1;
  }
  return 0;
}

std::string dtype_name(DType t) {
  switch (t) {
    case DType::FP32: return "fp32";
    case DType::BF16: return "bf16";
    case DType::FP16: return "fp16";
    case DType::FP8: return "fp8";
  }
  return "?";
}

double activation_bytes_per_token(const LayerSpec& layer, bool flash_attention, bool full_recompute,
                                  std::int64_t seq_len) {
  if (full_recompute) return layer.input_bytes_per_token;
  double bytes = layer.activation_bytes_per_token;
  if (!flash_attention) bytes += 2.0 * static_cast<double>(layer.attention_heads) * static_cast<double>(seq_len);
  return bytes;
}

double LayerSpec::attention_keys(double seq_len) const {
  for (const auto& g : gemms)
    if (g.attention()) return g.keys(seq_len);
  return seq_len;
}

bool ModelSpec::has_logits_loss() const {
  for (const auto& l : layers)
    if (l.fused_loss_bytes_per_token > 0) return true;
  return false;
}

bool ModelSpec::has_attention() const {
  for (const auto& l : layers) {
    if (l.attention_heads > 0 || l.fwd_attn_flops_per_token_per_seq > 0) return true;
    for (const auto& g : l.gemms)
      if (g.attention()) return true;
  }
  return false;
}

void copy_model_provenance(const ModelSpec& from, ModelSpec& to) {
  to.name = from.name;
  to.source = from.source;
  to.hf_model_type = from.hf_model_type;
  to.not_modelled = from.not_modelled;
  to.context_length = from.context_length;
}

bool ModelSpec::has_experts() const {
  for (const auto& l : layers)
    for (const auto& g : l.gemms)
      if (g.experts > 0) return true;
  return false;
}

std::vector<std::size_t> ModelSpec::ready_order(std::size_t l) const {
  const LayerSpec& layer = layers.at(l);
  if (!layer.grad_ready_order.empty()) return layer.grad_ready_order;
  std::vector<std::size_t> order(layer.params.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = order.size() - 1 - i;
  return order;
}

std::int64_t ModelSpec::parameter_count() const {
  std::int64_t n = 0;
  for (const auto& l : layers)
    for (const auto& p : l.params) n += p.numel;
  return n;
}

std::int64_t ModelSpec::active_parameter_count() const {
  double n = 0;
  for (const auto& l : layers)
    for (const auto& p : l.params) n += static_cast<double>(p.numel) * (p.expert_share > 0 ? p.expert_share : 1.0);
  return std::llround(n);
}

std::int64_t ModelSpec::trainable_parameter_count() const {
  std::int64_t n = 0;
  for (const auto& l : layers)
    for (const auto& p : l.params)
      if (p.trainable) n += p.numel;
  return n;
}

namespace {

// One module of a transformer block as make_transformer registers it: a linear (weight
// [out, in], optional bias [out]) or a norm (weight [width], bias when LayerNorm), and its place
// in the block's execution (lower runs first).
struct BlockModule {
  std::string name;
  bool linear = true;
  std::int64_t in = 0, out = 0;  ///< linear: features in and out; norm: out = width
  bool bias = false;
  int exec = 0;
  /// A routed expert's projection (TransformerShape::MoE): E copies, each seeing topk/E of the
  /// tokens; per expert its tensors are named by formatting `name` with the expert's index and
  /// registered expert by expert, unless `fused` (one [E, in, out] tensor and one [E, out] bias).
  std::int64_t experts = 0;
  bool fused = false;
};

// Execution ranks of a block's modules: norms before attention, q/k/v (or the fused projection),
// q/k norms, the output projection, the norms between, the MLP's first linears, its last, the
// post-MLP norm.
// MLA's low-rank projections run kQkv, then their norms (kLoraNorm), then the up-projections
// (kLoraUp); an MoE block's router runs before the experts (kRouter), its shared expert after
// them (kSharedIn, kSharedOut: DeepSeek and Qwen2-MoE add it to the routed output); gpt-oss's
// attention sinks (kSinks) are a parameter of the attention kernel.
enum : int { kPreNorm = 0, kQkv = 10, kLoraNorm = 11, kLoraUp = 12, kQkNorm = 13, kSinks = 14, kAttnOut = 15,
             kPostAttnNorm = 20, kPreMlpNorm = 21, kRouter = 25, kMlpIn = 30, kMlpOut = 32, kSharedIn = 34,
             kSharedOut = 36, kPostMlpNorm = 40 };

// The block-wide norms (over hidden), whose bytes and kernels the block's formulas count.
bool hidden_norm(const BlockModule& m) {
  return !m.linear && (m.exec == kPreNorm || m.exec == kPostAttnNorm || m.exec == kPreMlpNorm || m.exec == kPostMlpNorm);
}

// The MLP of block `i` in registration order: dense (Llama's names) or sparse (MoE::Layout).
void mlp_modules(const TransformerShape& s, std::int64_t i, std::vector<BlockModule>& m) {
  using MoE = TransformerShape::MoE;
  const std::int64_t h = s.hidden;
  const auto linear = [](std::string n, std::int64_t in, std::int64_t out, bool bias, int exec) {
    return BlockModule{std::move(n), true, in, out, bias, exec};
  };
  const auto swiglu = [&](const std::string& p, std::int64_t f, bool bias, int in_exec, int out_exec,
                          std::int64_t experts) {
    m.push_back({p + "gate_proj", true, h, f, bias, in_exec, experts});
    m.push_back({p + "up_proj", true, h, f, bias, in_exec, experts});
    m.push_back({p + "down_proj", true, f, h, bias, out_exec, experts});
  };
  const MoE& e = s.moe;
  if (!e.sparse(i)) {
    swiglu("mlp.", s.ffn, s.mlp_bias, kMlpIn, kMlpOut, 0);
    return;
  }
  // Expert parallelism: this rank's experts (the router still scores all n).
  const std::int64_t n = e.experts / std::max<std::int64_t>(1, e.ep), f = e.expert_ffn, all = e.experts;
  switch (e.layout) {
    case MoE::Layout::Mixtral:  // MixtralSparseMoeBlock: gate, then experts (w1, w2, w3 each)
      m.push_back(linear("block_sparse_moe.gate", h, all, false, kRouter));
      m.push_back({"block_sparse_moe.experts.{}.w1", true, h, f, false, kMlpIn, n});
      m.push_back({"block_sparse_moe.experts.{}.w2", true, f, h, false, kMlpOut, n});
      m.push_back({"block_sparse_moe.experts.{}.w3", true, h, f, false, kMlpIn, n});
      return;
    case MoE::Layout::Qwen:  // Qwen2MoeSparseMoeBlock: gate, experts, shared_expert, shared_expert_gate
      m.push_back(linear("mlp.gate", h, all, false, kRouter));
      swiglu("mlp.experts.{}.", f, false, kMlpIn, kMlpOut, n);
      if (e.shared_ffn > 0) swiglu("mlp.shared_expert.", e.shared_ffn, false, kSharedIn, kSharedOut, 0);
      if (e.shared_gate) m.push_back(linear("mlp.shared_expert_gate", h, 1, false, kSharedOut));
      return;
    case MoE::Layout::DeepSeek:  // DeepseekV3MoE: experts, gate, shared_experts
      swiglu("mlp.experts.{}.", f, false, kMlpIn, kMlpOut, n);
      m.push_back(linear("mlp.gate", h, all, false, kRouter));
      if (e.shared_ffn > 0) swiglu("mlp.shared_experts.", e.shared_ffn, false, kSharedIn, kSharedOut, 0);
      return;
    case MoE::Layout::GptOss:  // GptOssMLP: router (weight, bias), experts (gate_up_proj[_bias], down_proj[_bias])
      m.push_back(linear("mlp.router", h, all, true, kRouter));
      m.push_back({"mlp.experts.gate_up_proj", true, h, 2 * f, true, kMlpIn, n, true});
      m.push_back({"mlp.experts.down_proj", true, f, h, true, kMlpOut, n, true});
      return;
  }
}

// Block `block`'s modules in registration order (TransformerShape::Layout).
std::vector<BlockModule> block_modules(const TransformerShape& s, std::int64_t block) {
  using TS = TransformerShape;
  const std::int64_t h = s.hidden, q = s.q_dim(), kv = s.kv_dim(), f = s.ffn;
  const auto linear = [](std::string n, std::int64_t in, std::int64_t out, bool bias, int exec) {
    return BlockModule{std::move(n), true, in, out, bias, exec};
  };
  const auto norm = [&s](std::string n, std::int64_t width, int exec) {
    return BlockModule{std::move(n), false, 0, width, s.layernorm, exec};
  };
  std::vector<BlockModule> m;
  switch (s.layout) {
    case TS::Layout::GPT2:  // GPT2Block: ln_1, attn (c_attn, c_proj), ln_2, mlp (c_fc, c_proj)
      m.push_back(norm("ln_1", h, kPreNorm));
      m.push_back(linear("attn.c_attn", h, q + 2 * kv, s.qkv_bias, kQkv));
      m.push_back(linear("attn.c_proj", q, h, s.o_bias, kAttnOut));
      m.push_back(norm("ln_2", h, kPostAttnNorm));
      m.push_back(linear("mlp.c_fc", h, f, s.mlp_bias, kMlpIn));
      m.push_back(linear("mlp.c_proj", f, h, s.mlp_bias, kMlpOut));
      return m;
    case TS::Layout::GPTNeoX:  // GPTNeoXLayer: both norms first, then attention and mlp
      m.push_back(norm("input_layernorm", h, kPreNorm));
      m.push_back(norm("post_attention_layernorm", h, kPostAttnNorm));
      m.push_back(linear("attention.query_key_value", h, q + 2 * kv, s.qkv_bias, kQkv));
      m.push_back(linear("attention.dense", q, h, s.o_bias, kAttnOut));
      m.push_back(linear("mlp.dense_h_to_4h", h, f, s.mlp_bias, kMlpIn));
      m.push_back(linear("mlp.dense_4h_to_h", f, h, s.mlp_bias, kMlpOut));
      return m;
    case TS::Layout::Phi3:  // Phi3Attention registers o_proj before qkv_proj
      m.push_back(linear("self_attn.o_proj", q, h, s.o_bias, kAttnOut));
      m.push_back(linear("self_attn.qkv_proj", h, q + 2 * kv, s.qkv_bias, kQkv));
      m.push_back(linear("mlp.gate_up_proj", h, 2 * f, s.mlp_bias, kMlpIn));
      m.push_back(linear("mlp.down_proj", f, h, s.mlp_bias, kMlpOut));
      break;
    case TS::Layout::DeepSeek: {  // DeepseekV3Attention (TransformerShape::Mla), then Llama's MLP and norms
      const TS::Mla& a = s.mla;
      if (a.q_lora_rank > 0) {
        m.push_back(linear("self_attn.q_a_proj", h, a.q_lora_rank, s.qkv_bias, kQkv));
        m.push_back({"self_attn.q_a_layernorm", false, 0, a.q_lora_rank, false, kLoraNorm});
        m.push_back(linear("self_attn.q_b_proj", a.q_lora_rank, q, false, kLoraUp));
      } else {
        m.push_back(linear("self_attn.q_proj", h, q, false, kQkv));
      }
      m.push_back(linear("self_attn.kv_a_proj_with_mqa", h, a.kv_lora_rank + a.qk_rope_head_dim, s.qkv_bias, kQkv));
      m.push_back({"self_attn.kv_a_layernorm", false, 0, a.kv_lora_rank, false, kLoraNorm});
      m.push_back(linear("self_attn.kv_b_proj", a.kv_lora_rank, s.heads * (a.qk_nope_head_dim + a.v_head_dim), false,
                         kLoraUp));
      m.push_back(linear("self_attn.o_proj", s.heads * a.v_head_dim, h, s.o_bias, kAttnOut));
      mlp_modules(s, block, m);
      break;
    }
    case TS::Layout::Llama:
      m.push_back(linear("self_attn.q_proj", h, q, s.qkv_bias, kQkv));
      m.push_back(linear("self_attn.k_proj", h, kv, s.qkv_bias, kQkv));
      m.push_back(linear("self_attn.v_proj", h, kv, s.qkv_bias, kQkv));
      m.push_back(linear("self_attn.o_proj", q, h, s.o_bias, kAttnOut));
      if (s.qk_norm != TS::QkNorm::None) {  // registered after o_proj (Qwen3Attention, Olmo2Attention)
        const bool per_head = s.qk_norm == TS::QkNorm::PerHead;
        const std::int64_t d = q / s.heads;
        m.push_back({"self_attn.q_norm", false, 0, per_head ? d : q, false, kQkNorm});
        m.push_back({"self_attn.k_norm", false, 0, per_head ? d : kv, false, kQkNorm});
      }
      if (s.attention_sinks) m.push_back({"self_attn.sinks", false, 0, s.heads, false, kSinks});  // GptOssAttention
      if (s.gated_mlp) {
        mlp_modules(s, block, m);
      } else {
        m.push_back(linear("mlp.fc_in", h, f, s.mlp_bias, kMlpIn));
        m.push_back(linear("mlp.fc_out", f, h, s.mlp_bias, kMlpOut));
      }
      break;
  }
  switch (s.norm_layout) {
    case TS::NormLayout::PrePost:
      m.push_back(norm("input_layernorm", h, kPreNorm));
      m.push_back(norm("post_attention_layernorm", h, kPostAttnNorm));
      break;
    case TS::NormLayout::Sandwich:  // Gemma2DecoderLayer: the attention output is normed too
      m.push_back(norm("input_layernorm", h, kPreNorm));
      m.push_back(norm("post_attention_layernorm", h, kPostAttnNorm));
      m.push_back(norm("pre_feedforward_layernorm", h, kPreMlpNorm));
      m.push_back(norm("post_feedforward_layernorm", h, kPostMlpNorm));
      break;
    case TS::NormLayout::PostOnly:  // Olmo2DecoderLayer: no input_layernorm
      m.push_back(norm("post_attention_layernorm", h, kPostAttnNorm));
      m.push_back(norm("post_feedforward_layernorm", h, kPostMlpNorm));
      break;
  }
  return m;
}

}  // namespace

ModelSpec make_transformer(const std::string& name, const TransformerShape& s) {
  using TS = TransformerShape;
  ModelSpec m;
  m.name = name;
  m.kind = "transformer";
  m.learned_positions = s.max_positions;
  const double h = static_cast<double>(s.hidden);
  const std::int64_t kv_dim = s.kv_dim();
  const double q = static_cast<double>(s.q_dim());
  const double act = dtype_bytes(s.dtype);
  auto tensor = [&](std::string n, std::int64_t numel) { return ParamTensor{std::move(n), numel, s.dtype, true}; };
  const bool gpt2 = s.layout == TS::Layout::GPT2, neox = s.layout == TS::Layout::GPTNeoX;
  const std::string root = gpt2 ? "transformer." : neox ? "gpt_neox." : "model.";

  LayerSpec embed;
  embed.name = "embed";
  embed.params.push_back(tensor(root + (gpt2 ? "wte" : neox ? "embed_in" : "embed_tokens") + ".weight", s.vocab * s.hidden));
  if (s.max_positions > 0)
    embed.params.push_back(tensor(root + (gpt2 ? "wpe" : "embed_positions") + ".weight", s.max_positions * s.hidden));
  embed.fwd_streaming_bytes_per_token = 2 * act * h;  // gather a row, write it
  embed.root = true;
  embed.vocab_parallel = LayerSpec::VocabParallel::Embedding;
  embed.fwd_streaming_kernels = s.max_positions > 0 ? 3 : 1;  // gather, [position gather + add]
  if (s.scaled_embeddings) {  // Gemma: hidden_states * sqrt(hidden)
    embed.fwd_streaming_bytes_per_token += 2 * act * h;
    embed.fwd_streaming_kernels += 1;
  }
  m.layers.push_back(embed);

  const bool qk_norm = s.qk_norm != TS::QkNorm::None;
  const bool rotary = s.max_positions == 0;
  const bool mla = s.uses_mla();
  const TS::MoE& moe = s.moe;

  for (std::int64_t i = 0; i < s.layers; ++i) {
    const std::vector<BlockModule> modules = block_modules(s, i);
    std::vector<std::size_t> exec_modules(modules.size());
    for (std::size_t k = 0; k < modules.size(); ++k) exec_modules[k] = k;
    std::stable_sort(exec_modules.begin(), exec_modules.end(),
                     [&](std::size_t a, std::size_t b) { return modules[a].exec < modules[b].exec; });
    int hidden_norms = 0;
    for (const BlockModule& mod : modules) hidden_norms += hidden_norm(mod);
    const bool sparse = moe.sparse(i);
    LayerSpec b;
    b.name = fmt::format("layers.{}", i);
    b.tp_linear_pairs = 2;  // attention qkv → proj, MLP fc1 → fc2
    const std::string p = root + fmt::format("{}.{}.", gpt2 ? "h" : "layers", i);
    // Registration order; each module's weight, then its bias. A run of per-expert modules
    // registers expert by expert (experts.0.w1, experts.0.w2, …, experts.1.w1, …).
    std::vector<std::vector<std::size_t>> module_params(modules.size());
    const auto add = [&](std::size_t k, const std::string& module_name) {
      const BlockModule& mod = modules[k];
      module_params[k].push_back(b.params.size());
      // gpt-oss's sinks are a bare nn.Parameter of the attention module, named as such.
      b.params.push_back(tensor(p + module_name + (mod.exec == kSinks ? "" : ".weight"),
                                mod.linear ? mod.in * mod.out : mod.out));
      if (mod.bias) {
        module_params[k].push_back(b.params.size());
        b.params.push_back(tensor(p + module_name + ".bias", mod.out));
      }
    };
    for (std::size_t k = 0; k < modules.size(); ++k) {
      const BlockModule& mod = modules[k];
      if (mod.experts == 0 || mod.fused) {
        // gpt-oss's fused experts: gate_up_proj, gate_up_proj_bias (not .weight / .bias).
        if (mod.fused) {
          module_params[k].push_back(b.params.size());
          b.params.push_back(tensor(p + mod.name, mod.experts * mod.in * mod.out));
          if (mod.bias) {
            module_params[k].push_back(b.params.size());
            b.params.push_back(tensor(p + mod.name + "_bias", mod.experts * mod.out));
          }
        } else {
          add(k, mod.name);
        }
        continue;
      }
      std::size_t last = k;
      while (last + 1 < modules.size() && modules[last + 1].experts > 0 && !modules[last + 1].fused) ++last;
      for (std::int64_t j = 0; j < mod.experts; ++j)
        for (std::size_t e = k; e <= last; ++e) add(e, fmt::format(fmt::runtime(modules[e].name), j));
      k = last;
    }
    for (std::size_t k = 0; k < modules.size(); ++k)
      if (modules[k].experts > 0)
        for (std::size_t idx : module_params[k])
          b.params[idx].expert_share = static_cast<double>(moe.topk) / static_cast<double>(moe.experts);
    // Execution order: the GEMMs run in it, and backward produces gradients in its reverse
    // (registration order differs: Llama registers the norms last).
    std::vector<std::size_t> exec;
    for (std::size_t k : exec_modules) {
      const BlockModule& mod = modules[k];
      exec.insert(exec.end(), module_params[k].begin(), module_params[k].end());
      if (!mod.linear) continue;
      LayerGemm g{LayerGemm::Kind::Linear, static_cast<double>(mod.out), static_cast<double>(mod.in),
                  static_cast<std::int64_t>(module_params[k].front()), 0, 0};
      if (mod.experts > 0) {
        g.experts = static_cast<double>(mod.experts);
        g.topk = static_cast<double>(moe.topk);
      }
      b.gemms.push_back(g);
      b.fwd_gemm_flops_per_token += g.flops_per_sample();
    }
    b.grad_ready_order.assign(exec.rbegin(), exec.rend());
    // Attention: QKᵀ over q/k heads of width hd, PV over v heads of width vd (MLA: qk_head_dim
    // and v_head_dim; else both head_dim).
    const auto heads = static_cast<double>(s.heads);
    const auto hd = static_cast<double>(s.q_dim() / s.heads);
    const double vd = mla ? static_cast<double>(s.mla.v_head_dim) : hd;
    b.fwd_attn_flops_per_token_per_seq = 2.0 * heads * (hd + vd);
    b.gemms.push_back({LayerGemm::Kind::AttentionScores, 0, 0, -1, heads, hd, s.causal});
    b.gemms.push_back({LayerGemm::Kind::AttentionValues, 0, 0, -1, heads, vd, s.causal});
    if (static_cast<std::size_t>(i) < s.attention_window.size())
      for (std::size_t k = b.gemms.size() - 2; k < b.gemms.size(); ++k)
        b.gemms[k].window = static_cast<double>(s.attention_window[static_cast<std::size_t>(i)]);
    const double f = static_cast<double>(s.ffn);
    const double kv = static_cast<double>(kv_dim);
    const double extra_norms = hidden_norms - 2;  // Sandwich: the two norms on the outputs
    // The MLP's terms per token, in elements of act bytes (plus fp32 router bytes): what it keeps
    // for backward, what its elementwise kernels move, its kernels, and eager PyTorch's extra
    // traffic. Dense: the gate/up/activation outputs (3·ffn; 2·ffn ungated), the activation's read
    // and write. Sparse (TransformerShape::MoE, dropless, the grouped-GEMM form torchtitan and
    // Megatron-Core run): per token, its k routed copies' permuted input (k·h), the experts'
    // gate/up/activation outputs (3·k·F) and outputs before the weighted combine (k·h) are kept,
    // with the router's fp32 scores (4·E bytes) and its top-k indices (8·k bytes); the
    // permutation gathers (h read, k·h written) and the un-permutation scatter-adds (k·h read,
    // h written); the router's softmax (or sigmoid) and top-k read and write the fp32 scores
    // (3·4·E bytes); kernels: the scores, top-k, the routing map's sort and counts, the gather,
    // the scatter-add. The shared expert is a dense SwiGLU of shared_ffn on every token;
    // Qwen2-MoE's shared_expert_gate adds a sigmoid and a product over h.
    double mlp_kept = (s.gated_mlp ? 3 : 2) * f, mlp_stream = (s.gated_mlp ? 3 : 2) * f, mlp_eager = 2 * f;
    double mlp_kernels = s.gated_mlp ? 2 : 1, mlp_fp32_kept = 0, mlp_fp32_stream = 0;
    if (sparse) {
      b.routing = {static_cast<double>(moe.experts), static_cast<double>(moe.topk), h};
      const double k = static_cast<double>(moe.topk), fe = static_cast<double>(moe.expert_ffn);
      const double e = static_cast<double>(moe.experts), fs = static_cast<double>(moe.shared_ffn);
      mlp_kept = k * (2 * h + 3 * fe) + 3 * fs;
      mlp_stream = 3 * k * fe + 2 * (1 + k) * h + 3 * fs + (moe.shared_gate ? 3 * h : 0.0);
      mlp_eager = 2 * (k * fe + fs);
      mlp_kernels = 2 + 6 + (fs > 0 ? 2 : 0) + (moe.shared_gate ? 2 : 0);
      mlp_fp32_kept = 4 * e + 8 * k;
      mlp_fp32_stream = 3 * 4 * e;
    }
    // Attention's kept tensors: q, k, v and the output (2·q + 2·kv). MLA (TransformerShape::Mla):
    // q and k of heads·qk_head_dim, v and the output of heads·v_head_dim, and the low-rank
    // projections' outputs before and after their norms (2·q_lora_rank + 2·kv_lora_rank +
    // qk_rope_head_dim); rotary turns only the rope part of q (heads·qk_rope_head_dim) and the
    // shared k_pe; the two low-rank norms stream 2·act each way, and concatenating q and k's
    // nope and rope parts copies both (2·2·q).
    double attn_kept = 2 * q + 2 * kv, rotary_elems = s.rotary_fraction * (q + kv), lora_norm = 0;
    double attn_copies = 0;
    int lora_norms = 0;
    if (mla) {
      const double vdim = heads * vd, ql = static_cast<double>(s.mla.q_lora_rank);
      const double kl = static_cast<double>(s.mla.kv_lora_rank), rope = static_cast<double>(s.mla.qk_rope_head_dim);
      attn_kept = 2 * q + 2 * vdim + 2 * ql + 2 * kl + rope;
      rotary_elems = heads * rope + rope;
      lora_norm = ql + kl;
      lora_norms = s.mla.q_lora_rank > 0 ? 2 : 1;
      attn_copies = 2 * 2 * q;
    }
    b.activation_bytes_per_token =
        act * (3 * h + attn_kept + mlp_kept) + act * h * extra_norms + mlp_fp32_kept;
    if (qk_norm) b.activation_bytes_per_token += act * (q + kv);
    b.input_bytes_per_token = act * h;
    b.attention_heads = s.heads;
    // Norms (read+write twice), residual adds (3 h each, twice), rotary on q/k, MLP activation.
    // A Llama-layout block with learned positions (a "transformer" description with
    // max_positions) has counted the rotary pass's bytes, though not its kernels, since it
    // landed; the goldens and accuracy sets keep that until a change of its own moves them.
    const bool rotary_bytes = rotary || s.layout == TS::Layout::Llama;
    b.fwd_streaming_bytes_per_token =
        act * (2 * h * hidden_norms + 6 * h + (rotary_bytes ? 2 * rotary_elems : 0.0) + mlp_stream) + mlp_fp32_stream;
    if (qk_norm) b.fwd_streaming_bytes_per_token += act * 2 * (q + kv);
    if (mla) b.fwd_streaming_bytes_per_token += act * (2 * lora_norm + attn_copies);
    // The norms, two residual (bias-dropout-) adds, the MLP's (activation and gate product when
    // gated; a sparse layer's routing), rotary on q and k, the q/k norms, MLA's low-rank norms and
    // q/k concatenations; views: the q/k/v splits and head reshapes.
    b.fwd_streaming_kernels =
        hidden_norms + 2 + mlp_kernels + (rotary ? 2 : 0) + (qk_norm ? 2 : 0) + (mla ? lora_norms + 2 : 0);
    b.fwd_host_only_ops = 8;
    // Eager PyTorch's composites, op by op (make_transformer's documentation lists them).
    const bool upcast = act < 4;
    const double rms_eager = (upcast ? 2 * (act + 4) : 0.0) + 8 + 4 + 8 + 2 * act;  // bytes per element
    const double rms_kernels = (upcast ? 2 : 0) + 6 - 1;  // beyond the fused kernel
    if (!s.layernorm) {  // RMSNorm: every hidden-wide norm of the block
      b.eager_extra_streaming_bytes_per_token += hidden_norms * h * (rms_eager - 2 * act);
      b.eager_extra_streaming_kernels += hidden_norms * rms_kernels;
      if (upcast) b.eager_extra_activation_bytes_per_token += hidden_norms * h * 4;  // fp32 input + output, less the input
    }
    if (qk_norm || mla) {  // q_norm and k_norm (MLA: q_a_layernorm, kv_a_layernorm) are RMSNorms too
      const double width = mla ? lora_norm : q + kv;
      b.eager_extra_streaming_bytes_per_token += width * (rms_eager - 2 * act);
      b.eager_extra_streaming_kernels += (mla ? lora_norms : 2) * rms_kernels;
      if (upcast) b.eager_extra_activation_bytes_per_token += width * 4;
    }
    if (rotary) {  // rotary on q and k
      const double eager = upcast ? (act + 4) + 8 + (4 + act) : 8;
      b.eager_extra_streaming_bytes_per_token += rotary_elems * (eager - 2 * act);
      b.eager_extra_streaming_kernels += 2 * ((upcast ? 3 : 1) - 1);
    }
    if (s.kv_heads < s.heads) {  // repeat_kv copies k and v to every query head
      b.eager_extra_streaming_bytes_per_token += 2 * act * (kv + q);
      b.eager_extra_streaming_kernels += 2;
    }
    if (s.gated_mlp) b.eager_extra_streaming_bytes_per_token += act * mlp_eager;  // act and × apart: 5·act vs 3·act
    m.layers.push_back(b);
  }

  if (!s.layernorm || qk_norm) m.eager_composites.push_back("RMSNorm");
  if (rotary) m.eager_composites.push_back("rotary");
  if (s.kv_heads < s.heads) m.eager_composites.push_back("repeat_kv");
  if (s.gated_mlp) m.eager_composites.push_back(s.gelu_gate ? "GeGLU" : "SwiGLU");

  LayerSpec final_norm;
  final_norm.name = "final_norm";
  const std::string final_name = root + (gpt2 ? "ln_f" : neox ? "final_layer_norm" : "norm");
  final_norm.params.push_back(tensor(final_name + ".weight", s.hidden));
  if (s.layernorm) final_norm.params.push_back(tensor(final_name + ".bias", s.hidden));
  final_norm.fwd_streaming_bytes_per_token = 2 * act * h;
  final_norm.activation_bytes_per_token = act * h;
  final_norm.input_bytes_per_token = act * h;
  final_norm.root = true;
  final_norm.fwd_streaming_kernels = 1;
  m.layers.push_back(final_norm);

  LayerSpec head;
  head.name = "lm_head";
  // Tied: the weight belongs to embed_tokens (registered first), so its gradient is ready
  // only when the embedding's backward ends, at the very end of backward.
  if (!s.tied_embeddings) head.params.push_back(tensor(neox ? "embed_out.weight" : "lm_head.weight", s.vocab * s.hidden));
  head.fwd_gemm_flops_per_token = 2.0 * h * static_cast<double>(s.vocab);
  // Tied: the weight gradient is still computed here (into embed_tokens.weight's .grad).
  head.gemms.push_back({LayerGemm::Kind::Linear, static_cast<double>(s.vocab), h, s.tied_embeddings ? -1 : 0, 0, 0});
  head.activation_bytes_per_token = 4.0 * static_cast<double>(s.vocab);  // fp32 logits for the loss
  head.fwd_streaming_bytes_per_token = 2 * 4.0 * static_cast<double>(s.vocab);  // softmax / loss
  head.input_bytes_per_token = head.activation_bytes_per_token;  // logits are needed for the loss anyway
  head.root = true;
  head.vocab_parallel = LayerSpec::VocabParallel::Head;
  head.fwd_streaming_kernels = 2;  // log-softmax and the loss
  if (s.logit_softcap) {  // Gemma 2: cap·tanh(logits / cap) over the logits (TransformerShape::logit_softcap)
    const double v = static_cast<double>(s.vocab);
    head.fwd_streaming_bytes_per_token += 2 * act * v;
    head.fwd_streaming_kernels += 1;
    head.eager_extra_streaming_bytes_per_token += 2 * 2 * act * v;  // ÷ and × apart from the tanh
    head.eager_extra_streaming_kernels += 2;
    head.activation_bytes_per_token += act * v;
  }
  if (act < 4) head.logits_upcast_bytes_per_token = (act + 4) * static_cast<double>(s.vocab);  // eager: cast, then the loss
  head.fused_loss_bytes_per_token = act * static_cast<double>(s.vocab);
  m.layers.push_back(head);
  m.transformer_shape = std::make_shared<const TransformerShape>(s);
  return m;
}

namespace {

// Output size of a convolution or pooling window along one axis (PyTorch's formula, dilation 1).
std::int64_t window_out(std::int64_t in, std::int64_t kernel, std::int64_t stride, std::int64_t pad) {
  return (in + 2 * pad - kernel) / stride + 1;
}

// Builds one ResNet layer's convolutions, BatchNorms and pointwise ops (make_resnet's rules).
class ResNetLayerBuilder {
 public:
  ResNetLayerBuilder(LayerSpec& layer, DType dtype) : l_(layer), dtype_(dtype), e_(dtype_bytes(dtype)) {}

  // nn.Conv2d(c_in, c_out, kernel, stride, padding = kernel / 2, groups, bias=False) on an
  // input of c_in × size × size; returns the output's side.
  std::int64_t conv(const std::string& name, std::int64_t c_in, std::int64_t c_out, std::int64_t size,
                    std::int64_t kernel, std::int64_t stride, std::int64_t groups, bool input_grad = true) {
    const std::int64_t out = window_out(size, kernel, stride, kernel / 2);
    l_.params.push_back({name + ".weight", c_out * (c_in / groups) * kernel * kernel, dtype_, true});
    LayerGemm g;
    g.kind = LayerGemm::Kind::Conv;
    g.n = static_cast<double>(c_out);
    g.k = static_cast<double>((c_in / groups) * kernel * kernel);
    g.param = static_cast<std::int64_t>(l_.params.size() - 1);
    g.rows = static_cast<double>(out * out);
    g.groups = static_cast<double>(groups);
    g.input_elements = static_cast<double>(c_in * size * size);
    g.input_grad = input_grad;
    l_.gemms.push_back(g);
    l_.fwd_gemm_flops_per_token += g.flops_per_sample();
    return out;
  }
  // nn.BatchNorm2d(c) in training mode over c × size × size: reads the input twice, writes once;
  // keeps its input for backward.
  void batch_norm(const std::string& name, std::int64_t c, std::int64_t size) {
    l_.params.push_back({name + ".weight", c, dtype_, true});
    l_.params.push_back({name + ".bias", c, dtype_, true});
    const double elems = static_cast<double>(c * size * size);
    l_.fwd_streaming_bytes_per_token += 3 * e_ * elems;
    l_.activation_bytes_per_token += e_ * elems;
    l_.fwd_streaming_kernels += 1;
  }
  // nn.ReLU(inplace=True): read and write; keeps its output for backward.
  void relu(double elems) {
    l_.fwd_streaming_bytes_per_token += 2 * e_ * elems;
    l_.activation_bytes_per_token += e_ * elems;
    l_.fwd_streaming_kernels += 1;
  }
  // out += identity: two reads, one write; keeps nothing.
  void add(double elems) {
    l_.fwd_streaming_bytes_per_token += 3 * e_ * elems;
    l_.fwd_streaming_kernels += 1;
  }

 private:
  LayerSpec& l_;
  DType dtype_;
  double e_;
};

}  // namespace

ModelSpec make_resnet(const std::string& name, const ResNetShape& s) {
  ModelSpec m;
  m.name = name;
  m.kind = "resnet";
  const double e = dtype_bytes(s.dtype);
  constexpr std::int64_t kExpansion = 4;  // Bottleneck.expansion

  LayerSpec stem;
  stem.name = "stem";
  ResNetLayerBuilder sb(stem, s.dtype);
  const double image = 3.0 * static_cast<double>(s.image_size * s.image_size);
  std::int64_t size = sb.conv("conv1", 3, 64, s.image_size, 7, 2, 1, /*input_grad=*/false);
  sb.batch_norm("bn1", 64, size);
  sb.relu(64.0 * static_cast<double>(size * size));
  // nn.MaxPool2d(3, stride 2, padding 1): reads its input, writes its output and int64
  // indices, which it keeps for backward; its output is the first block's input.
  const double conv_out = 64.0 * static_cast<double>(size * size);
  size = window_out(size, 3, 2, 1);
  const double pooled = 64.0 * static_cast<double>(size * size);
  stem.fwd_streaming_bytes_per_token += e * conv_out + (e + 8) * pooled;
  stem.fwd_streaming_kernels += 1;
  stem.activation_bytes_per_token += e * image + 8 * pooled + e * pooled;
  stem.input_bytes_per_token = e * image;
  stem.root = true;
  m.layers.push_back(stem);

  std::int64_t inplanes = 64;
  const std::int64_t planes_of[] = {64, 128, 256, 512};
  for (std::size_t stage = 0; stage < s.depths.size(); ++stage) {
    const std::int64_t planes = planes_of[stage];
    const std::int64_t width = planes * s.width_per_group / 64 * s.groups;
    for (std::int64_t block = 0; block < s.depths[stage]; ++block) {
      const std::int64_t stride = block == 0 && stage > 0 ? 2 : 1;
      LayerSpec b;
      b.name = fmt::format("layer{}.{}", stage + 1, block);
      ResNetLayerBuilder bb(b, s.dtype);
      b.input_bytes_per_token = e * static_cast<double>(inplanes * size * size);
      const std::int64_t in_size = size;
      bb.conv(b.name + ".conv1", inplanes, width, in_size, 1, 1, 1);
      bb.batch_norm(b.name + ".bn1", width, in_size);
      bb.relu(static_cast<double>(width * in_size * in_size));
      const std::int64_t out = bb.conv(b.name + ".conv2", width, width, in_size, 3, stride, s.groups);
      bb.batch_norm(b.name + ".bn2", width, out);
      bb.relu(static_cast<double>(width * out * out));
      bb.conv(b.name + ".conv3", width, planes * kExpansion, out, 1, 1, 1);
      bb.batch_norm(b.name + ".bn3", planes * kExpansion, out);
      if (stride != 1 || inplanes != planes * kExpansion) {
        // downsample = Sequential(conv1x1 stride s, BatchNorm2d): tensors "downsample.0/1".
        bb.conv(b.name + ".downsample.0", inplanes, planes * kExpansion, in_size, 1, stride, 1);
        bb.batch_norm(b.name + ".downsample.1", planes * kExpansion, out);
      }
      const double block_out = static_cast<double>(planes * kExpansion * out * out);
      bb.add(block_out);
      bb.relu(block_out);
      m.layers.push_back(b);
      inplanes = planes * kExpansion;
      size = out;
    }
  }

  LayerSpec head;
  head.name = "head";
  const double features = static_cast<double>(inplanes);
  const double classes = static_cast<double>(s.num_classes);
  head.params.push_back({"fc.weight", s.num_classes * inplanes, s.dtype, true});
  head.params.push_back({"fc.bias", s.num_classes, s.dtype, true});
  head.gemms.push_back({LayerGemm::Kind::Linear, classes, features, 0, 0, 0});
  head.fwd_gemm_flops_per_token = 2.0 * features * classes;
  // AdaptiveAvgPool2d(1) reads the last block's output, writes the features; fc keeps its
  // input; the loss (log_softmax + nll_loss) reads and writes the fp32 logits and keeps its output.
  head.fwd_streaming_bytes_per_token = e * features * static_cast<double>(size * size + 1) + 2 * 4.0 * classes;
  head.activation_bytes_per_token = e * features + 4.0 * classes;
  head.input_bytes_per_token = e * features * static_cast<double>(size * size);
  head.fwd_streaming_kernels = 3;  // average pool, log_softmax, nll_loss
  head.fwd_host_only_ops = 1;      // flatten
  head.root = true;
  m.layers.push_back(head);
  return m;
}

ModelSpec make_mlp(const std::string& name, std::int64_t layers, std::int64_t hidden,
                   std::int64_t ffn, DType dtype) {
  ModelSpec m;
  m.name = name;
  m.kind = "mlp";
  const double act = dtype_bytes(dtype);
  for (std::int64_t i = 0; i < layers; ++i) {
    LayerSpec l;
    l.name = fmt::format("layers.{}", i);
    l.params.push_back({fmt::format("layers.{}.w_in", i), hidden * ffn, dtype, true});
    l.params.push_back({fmt::format("layers.{}.w_out", i), ffn * hidden, dtype, true});
    l.fwd_gemm_flops_per_token = 2.0 * 2.0 * static_cast<double>(hidden) * static_cast<double>(ffn);
    l.gemms.push_back({LayerGemm::Kind::Linear, static_cast<double>(ffn), static_cast<double>(hidden), 0, 0, 0});
    l.gemms.push_back({LayerGemm::Kind::Linear, static_cast<double>(hidden), static_cast<double>(ffn), 1, 0, 0});
    l.activation_bytes_per_token = act * static_cast<double>(hidden + 2 * ffn);
    l.input_bytes_per_token = act * static_cast<double>(hidden);
    l.fwd_streaming_bytes_per_token = 2 * act * static_cast<double>(ffn);  // activation function
    l.fwd_streaming_kernels = 1;
    l.tp_linear_pairs = 1;  // w_in column-parallel, w_out row-parallel
    m.layers.push_back(l);
  }
  m.mlp_shape = std::make_shared<const MlpShape>(MlpShape{layers, hidden, ffn, dtype});
  return m;
}

}  // namespace stepsim::models
