// SPDX-License-Identifier: Apache-2.0
// ModelSpec: the layers of a model, their parameter tensors (in registration order), FLOPs
// and activation bytes. Data only: strategies decide what runs where.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace stepsim::models {

/// Element types of parameters, gradients and activations.
enum class DType { FP32, BF16, FP16, FP8 };
/// Bytes per element: 4, 2, 2, 1.
double dtype_bytes(DType t);
/// "fp32", "bf16", "fp16", "fp8".
std::string dtype_name(DType t);

/// One parameter tensor (nn.Parameter). Order within a model is registration order
/// (model.parameters()), which PyTorch DDP's bucketing depends on (semantics.md §A.1).
struct ParamTensor {
  std::string name;
  std::int64_t numel = 0;   ///< elements, > 0
  DType dtype = DType::BF16;
  bool trainable = true;    ///< requires_grad; frozen tensors get no gradient, bucket or state
  /// A routed expert's tensor (TransformerShape::MoE): it serves `expert_share` of the tokens
  /// (topk / experts); expert parallelism places it on one EP rank and its gradient reduces
  /// over the expert-data-parallel group. 0: a dense tensor every token uses.
  double expert_share = 0;
};

/// One GEMM of a layer's forward, for the shape-dependent GEMM curve (hardware/gemm_model.hpp).
/// Linear: C[tokens, n] = X[tokens, k]·W (W = params[param]). Attention (per sequence and head,
/// head_dim = hidden / heads): Scores S[s, s] = Q[s, d]·Kᵀ; Values O[s, d] = P[s, s]·V.
/// Conv (nn.Conv2d as cuDNN's implicit GEMM, NVIDIA's "Convolutional Layers User's Guide",
/// §"Convolution algorithms": forward is a GEMM of M = N·P·Q output positions, N = K output
/// channels, K = C·R·S per group): per group, Y[tokens·rows, n/groups] = X̃[tokens·rows, k]·W_g,
/// with n = output channels, k = (input channels / groups)·kh·kw and rows = the output's
/// height × width per sample; the im2col matrix X̃ is never stored, so HBM traffic is the input
/// (input_elements per sample), the weight and the output, each once.
struct LayerGemm {
  enum class Kind { Linear, AttentionScores, AttentionValues, Conv };
  Kind kind = Kind::Linear;
  double n = 0, k = 0;          ///< Linear: output and input features; Conv: output channels, reduction per group
  std::int64_t param = -1;      ///< Linear/Conv: index of the weight in params (no wgrad when frozen); -1 = held elsewhere (tied), wgrad runs
  double heads = 0, head_dim = 0;  ///< attention kinds
  bool causal = false;             ///< attention kinds: a causal mask (decoder LMs)
  double rows = 1;                 ///< Conv: output positions per sample (height × width)
  double groups = 1;               ///< Conv: groups (ResNeXt's cardinality); n and input channels divide by it
  double input_elements = 0;       ///< Conv: input elements per sample (channels × height × width)
  bool input_grad = true;          ///< Conv: the input needs a gradient (false for a network's first conv on the images)
  /// Linear: a routed experts' projection of a mixture-of-experts layer (TransformerShape::MoE),
  /// run as one grouped GEMM over `experts` weights [n, k], each on the tokens routed to it:
  /// topk/experts of the tokens when the router balances them (dropless). 0: a dense linear.
  double experts = 0, topk = 0;
  /// Attention kinds: a causal sliding window, the most keys a query sees (0 = the whole
  /// sequence). Only a FlashAttention kernel skips the masked blocks (hardware::AttentionWork);
  /// SDPA's other backends and eager attention compute the whole masked s×s.
  double window = 0;
  /// FLOPs per sample of the forward: 2·rows·n·k (Linear and Conv; × topk for routed experts; 0
  /// for the attention kinds, whose FLOPs scale with the sequence).
  double flops_per_sample() const {
    return kind == Kind::Linear || kind == Kind::Conv ? 2.0 * rows * n * k * (experts > 0 ? topk : 1.0) : 0.0;
  }
  /// The attention kinds (Scores, Values).
  bool attention() const { return kind == Kind::AttentionScores || kind == Kind::AttentionValues; }
  /// Attention kinds: keys per query on the FLOP convention's full s² (LayerSpec::attention_keys):
  /// seq_len, or 2w − w²/seq_len under a causal window w < seq_len.
  double keys(double seq_len) const {
    return causal && window > 0 && window < seq_len ? 2 * window - window * window / seq_len : seq_len;
  }
};

/// One layer (module) as the simulator schedules it: forward runs layers in order, backward
/// in reverse. Per-token quantities scale with micro_batch_size × seq_len tokens.
struct LayerSpec {
  std::string name;
  std::vector<ParamTensor> params;  ///< may be empty (e.g. a tied LM head)
  /// Indexes into `params` in the order backward produces their gradients; empty means
  /// reverse registration order.
  std::vector<std::size_t> grad_ready_order;
  double fwd_gemm_flops_per_token = 0;  ///< matmul FLOPs (2 per multiply-add)
  double fwd_attn_flops_per_token_per_seq = 0;  ///< attention core FLOPs, × seq_len
  double fwd_streaming_bytes_per_token = 0;     ///< HBM bytes of norms, activations, residuals
  double activation_bytes_per_token = 0;        ///< saved for backward (flash attention)
  double input_bytes_per_token = 0;   ///< the layer's input, all that full recomputation keeps
  std::int64_t attention_heads = 0;   ///< heads whose scores eager attention stores (a·s per token)
  /// The forward GEMMs with their shapes (empty for layers described by FLOPs only); their
  /// FLOPs add up to fwd_gemm_flops_per_token (+ the attention FLOPs × seq_len).
  std::vector<LayerGemm> gemms;
  /// Forward launches besides the GEMMs, for the per-op host cost (Scenario::framework): the
  /// streaming kernels (norms, bias/activation, residual adds, rotary; eager attention's own
  /// are added by the strategy) and the host-only ops (views, splits, transposes).
  double fwd_streaming_kernels = 0;
  double fwd_host_only_ops = 0;
  /// What eager PyTorch adds when the layer's composite ops run op by op instead of fused
  /// (Scenario::framework.implementation "eager"; compile and megatron_te fuse them): HBM bytes
  /// per token, kernel launches, and activation bytes per token saved for backward
  /// (make_transformer lists the ops).
  double eager_extra_streaming_bytes_per_token = 0;
  double eager_extra_streaming_kernels = 0;
  double eager_extra_activation_bytes_per_token = 0;
  /// The loss layer's fp32 cast of the logits before cross_entropy under eager PyTorch
  /// (Scenario::framework.cross_entropy "upcast"): HBM bytes per token, one kernel.
  double logits_upcast_bytes_per_token = 0;
  /// The loss layer under a fused cross-entropy kernel over the low-precision logits
  /// (framework.cross_entropy "fused": flash-attn's CrossEntropyLoss, inplace backward): it keeps
  /// the logits for backward in act·vocab bytes per token, in place of the fp32
  /// log-probabilities (activation and input bytes). Its time stays fwd_streaming_bytes_per_token
  /// (8 B per vocab entry at hbm_efficiency): fused cross-entropy kernels run far below HBM
  /// bandwidth: Liger's forward over bf16 logits, 8192 tokens × 131072 entries on H100, takes
  /// 2.968 ms (0.72 TB/s on the bytes it must read; shared/reference/kernels.md §3.2), where that
  /// charge gives 3.02 ms.
  /// 0: the layer computes no loss.
  double fused_loss_bytes_per_token = 0;
  bool root = false;  ///< owned by FSDP's root unit (embeddings, final norm, LM head), not a block
  /// Megatron-LM's tensor parallelism of the layer (shared/reference/semantics-parallel.md
  /// §A1–A5, A12–A13; models/tensor_parallel.hpp): how many ColumnParallelLinear →
  /// RowParallelLinear pairs it holds (a transformer block 2: attention qkv → proj and the MLP
  /// fc1 → fc2; a seed MLP layer 1), and whether it is the vocab-parallel embedding or the
  /// vocab-parallel LM head with its cross-entropy.
  int tp_linear_pairs = 0;
  enum class VocabParallel { None, Embedding, Head };
  VocabParallel vocab_parallel = VocabParallel::None;
  /// Keys per query that the attention FLOPs count (× fwd_attn_flops_per_token_per_seq): the
  /// sequence, or under a causal sliding window w < seq_len (LayerGemm::window) 2w − w²/seq_len,
  /// the windowed share of the causal work (s·w − w²/2 against s²/2) on the convention's full s².
  double attention_keys(double seq_len) const;
  /// A mixture-of-experts layer's routing (TransformerShape::MoE): its routed experts (all of
  /// them, whatever expert parallelism holds here), the experts each token goes to, and the
  /// width of a token as the experts receive it. experts 0: a dense layer.
  struct Routing {
    double experts = 0, topk = 0, hidden = 0;
  };
  Routing routing;
  std::optional<double> fwd_s;  ///< measured forward time of one micro-batch (replaces FLOPs)
  std::optional<double> bwd_s;  ///< measured backward time of one micro-batch
};

/// A model: ordered layers. `kind` is how it was described ("mlp", "transformer", "resnet", "layers").
struct TransformerShape;
struct MlpShape;

struct ModelSpec {
  std::string name;
  std::string kind;
  std::string source;  ///< where the shape comes from (public config, paper)
  /// The config.json's model_type when the model was built from a Hugging Face config
  /// (models/hf_config_json.hpp); empty otherwise.
  std::string hf_model_type;
  /// What the description gives that the simulation does not price (e.g. Gemma 2's final logit
  /// softcap), one line each; reports repeat them as warnings.
  std::vector<std::string> not_modelled;
  /// Rows of a learned position table (GPT-2's wpe): no sequence may be longer. 0: none.
  std::int64_t learned_positions = 0;
  /// The context a config declares (max_position_embeddings) for rotary models: a longer
  /// sequence runs but is beyond what the model was configured for (a warning). 0: unknown.
  std::int64_t context_length = 0;
  std::vector<LayerSpec> layers;
  /// The composites eager PyTorch runs op by op in this model ("RMSNorm", "rotary",
  /// "repeat_kv", "SwiGLU"; LayerSpec::eager_extra_*), for reports; empty when it has none.
  std::vector<std::string> eager_composites;
  /// The shape the layers were built from (make_transformer, make_mlp), so tensor parallelism
  /// can build one rank's share of it (models/tensor_parallel.hpp); null for the other kinds,
  /// which cannot be split.
  std::shared_ptr<const TransformerShape> transformer_shape;
  std::shared_ptr<const MlpShape> mlp_shape;
  /// A layer computes the loss over logits (LayerSpec::fused_loss_bytes_per_token > 0), so
  /// framework.cross_entropy applies.
  bool has_logits_loss() const;
  /// Some layer computes attention (attention GEMMs, attention FLOPs or eager score heads), so
  /// activations.attention has something to act on.
  bool has_attention() const;
  /// Some layer runs routed experts (LayerGemm::experts > 0): a mixture of experts.
  bool has_experts() const;
  /// What one sample of the simulator's batch is: "images" for convolutional networks (kind
  /// "resnet", one image per sample, seq_len 1), else "tokens".
  std::string sample_unit() const { return kind == "resnet" ? "images" : "tokens"; }

  /// Gradient-ready order of layer `l`'s tensors (grad_ready_order or reverse registration).
  std::vector<std::size_t> ready_order(std::size_t l) const;
  /// Parameter count Ψ (all tensors) and trainable count.
  std::int64_t parameter_count() const;
  std::int64_t trainable_parameter_count() const;
  /// Parameters one token uses: the routed experts' tensors count their expert_share (top-k of
  /// the experts), every other tensor in full; parameter_count() for a dense model. Rounded to
  /// the nearest parameter.
  std::int64_t active_parameter_count() const;
};

/// Copies what a description set beyond a transformer's shape (name, source, hf_model_type,
/// not_modelled, context_length) from `from` to `to`: for a model rebuilt from `from`'s shape
/// as one rank's share of it (tensor and expert parallelism).
void copy_model_provenance(const ModelSpec& from, ModelSpec& to);

/// Activation bytes one token leaves for the backward of `layer` (Korthikanti et al. 2022 §4,
/// per layer): with full recomputation only the layer input is kept; with eager attention the
/// scores add 2·a·s bytes per token (bf16 softmax output; the s² term of Korthikanti's 5as/h).
double activation_bytes_per_token(const LayerSpec& layer, bool flash_attention, bool full_recompute,
                                  std::int64_t seq_len);

/// Transformer shape (decoder-only). Tensor list follows Hugging Face's registration order:
/// embed_tokens, [position embeddings], per block q/k/v/o projections, MLP (gate, up, down |
/// fc_in, fc_out), the two norms; final norm; lm_head unless tied. The fields after `dtype`
/// describe the variants Hugging Face's model classes build (models/hf_config_json.hpp reads them
/// from a config.json; shared/reference/models.md §1): their defaults give the Llama layout.
struct TransformerShape {
  std::int64_t hidden = 0;
  std::int64_t layers = 0;
  std::int64_t heads = 0;
  std::int64_t kv_heads = 0;    ///< grouped-query attention; = heads for MHA
  std::int64_t ffn = 0;
  std::int64_t vocab = 0;
  bool gated_mlp = true;        ///< SwiGLU (gate+up+down) vs two-matrix MLP
  bool tied_embeddings = false; ///< lm_head shares embed_tokens.weight
  bool causal = true;           ///< causal self-attention (decoder LMs); false for encoders (BERT)
  bool layernorm = false;       ///< LayerNorm (weight+bias) instead of RMSNorm (weight)
  std::int64_t max_positions = 0;  ///< learned position embeddings (0 = rotary, none)
  DType dtype = DType::BF16;

  /// Width of one attention head; 0 = hidden / heads. Hugging Face's attention classes take
  /// config.head_dim when given (LlamaAttention: getattr(config, "head_dim", hidden // heads)),
  /// so q is heads·head_dim wide, which may differ from hidden (Gemma-7B: 16·256 = 4096 vs 3072).
  std::int64_t head_dim = 0;
  bool qkv_bias = false;        ///< biases on q/k/v (Qwen2 always; attention_bias elsewhere)
  bool o_bias = false;          ///< bias on the attention output projection
  bool mlp_bias = false;        ///< biases on the MLP's linears
  /// RMSNorm on q and k before rotary: none; per head over head_dim (Qwen3, Gemma 3: q_norm /
  /// k_norm of [head_dim]); over the whole projection (OLMo 2: [heads·head_dim], [kv_heads·head_dim]).
  enum class QkNorm { None, PerHead, Full };
  QkNorm qk_norm = QkNorm::None;
  /// Where a block's hidden-wide norms sit. PrePost: input_layernorm before attention and
  /// post_attention_layernorm before the MLP (Llama). Sandwich: those two plus
  /// pre_feedforward_layernorm and post_feedforward_layernorm, the attention and MLP outputs
  /// normed before their residual adds (Gemma 2/3). PostOnly: post_attention_layernorm and
  /// post_feedforward_layernorm on the outputs only, no input norm (OLMo 2).
  enum class NormLayout { PrePost, Sandwich, PostOnly };
  NormLayout norm_layout = NormLayout::PrePost;
  /// Tensor names and fused projections. Llama: model.layers.N.self_attn.{q,k,v,o}_proj,
  /// mlp.{gate,up,down}_proj (fc_in / fc_out when not gated). Phi3: self_attn.o_proj then one
  /// qkv_proj, mlp.gate_up_proj (one GEMM of 2·ffn) and down_proj. GPT2: transformer.h.N.ln_1,
  /// attn.c_attn (fused q/k/v), attn.c_proj, ln_2, mlp.c_fc, mlp.c_proj; transformer.wte / wpe /
  /// ln_f. GPTNeoX: gpt_neox.layers.N.input_layernorm, post_attention_layernorm (registered
  /// first), attention.query_key_value (fused), attention.dense, mlp.dense_h_to_4h,
  /// mlp.dense_4h_to_h; gpt_neox.embed_in, final_layer_norm, embed_out.
  /// DeepSeek: MLA attention (TransformerShape::Mla) with Llama's decoder layer.
  enum class Layout { Llama, Phi3, GPT2, GPTNeoX, DeepSeek };
  Layout layout = Layout::Llama;
  /// The gated MLP's activation is GELU (Gemma's GeGLU) rather than SiLU; same kernels and bytes.
  bool gelu_gate = false;
  /// The embedding output is multiplied by sqrt(hidden) (Gemma): one more elementwise kernel.
  bool scaled_embeddings = false;
  /// Share of each head's width that rotary embedding turns (GPT-NeoX rotary_pct, 0.25 in
  /// Pythia); scales the rotary kernels' bytes.
  double rotary_fraction = 1.0;
  /// Per block, the causal sliding window of its attention in tokens (0 = full attention);
  /// empty = every block full (LayerGemm::window).
  std::vector<std::int64_t> attention_window;
  /// Gemma 2's final logit softcapping, logits = cap·tanh(logits / cap) after the LM head
  /// (Gemma2ForCausalLM): one more pass over the act-dtype logits, 2·act·vocab bytes per token
  /// fused (torch.compile), three ops apart (÷, tanh, ×) under eager PyTorch; it keeps the
  /// tanh's output for backward (act·vocab).
  bool logit_softcap = false;

  /// Multi-head latent attention (DeepSeek-V2/V3, models.md §1.10), when kv_lora_rank > 0:
  /// q = q_b_proj(q_a_layernorm(q_a_proj(x))) (or q_proj when q_lora_rank is 0),
  /// [k_nope, v] = kv_b_proj(kv_a_layernorm(kv_a_proj_with_mqa(x)[:kv_lora_rank])), the rotary
  /// part k_pe (qk_rope_head_dim wide) shared by every head; each head's q and k are
  /// qk_nope_head_dim + qk_rope_head_dim wide, its v v_head_dim; o_proj is [hidden, heads·v_head_dim].
  struct Mla {
    std::int64_t q_lora_rank = 0;   ///< 0: q_proj [heads·qk_head_dim, hidden] (DeepSeek-V2-Lite)
    std::int64_t kv_lora_rank = 0;  ///< 0: no MLA
    std::int64_t qk_nope_head_dim = 0, qk_rope_head_dim = 0, v_head_dim = 0;
    /// qk_nope_head_dim + qk_rope_head_dim: the width of one head's q and k.
    std::int64_t qk_head_dim() const { return qk_nope_head_dim + qk_rope_head_dim; }
  };
  Mla mla;
  bool uses_mla() const { return mla.kv_lora_rank > 0; }

  /// Mixture of experts (models.md §1.3, §1.4, §1.10, §1.11): the blocks whose MLP is a sparse
  /// layer of `experts` routed SwiGLU experts of width `expert_ffn`, `topk` of them per token,
  /// picked by a router Linear [experts, hidden]; the other blocks keep the dense MLP of width ffn.
  struct MoE {
    std::int64_t experts = 0;     ///< routed experts E (0: a dense model)
    std::int64_t topk = 0;        ///< experts per token k, 1 ≤ k ≤ E
    std::int64_t expert_ffn = 0;  ///< one routed expert's SwiGLU width
    /// The shared expert(s), one merged SwiGLU every token runs (DeepSeek: moe_intermediate_size
    /// × n_shared_experts; Qwen2-MoE: shared_expert_intermediate_size); 0: none.
    std::int64_t shared_ffn = 0;
    bool shared_gate = false;     ///< Qwen2-MoE's shared_expert_gate, Linear [1, hidden] + sigmoid
    /// Tensor names and registration order of the sparse block:
    ///  * Mixtral: block_sparse_moe.gate [E, H]; block_sparse_moe.experts.{j}.w1 [F, H], w2 [H, F], w3 [F, H];
    ///  * Qwen: mlp.gate [E, H]; mlp.experts.{j}.{gate,up,down}_proj; [mlp.shared_expert.{gate,up,down}_proj,
    ///    mlp.shared_expert_gate [1, H]] (Qwen2-MoE);
    ///  * DeepSeek: mlp.experts.{j}.{gate,up,down}_proj; mlp.gate.weight [E, H]; mlp.shared_experts.{gate,up,down}_proj;
    ///  * GptOss: mlp.router.weight [E, H] + bias [E]; mlp.experts.gate_up_proj [E, H, 2F] + gate_up_proj_bias
    ///    [E, 2F], down_proj [E, F, H] + down_proj_bias [E, H] (fused 3-D tensors).
    /// (transformers v4's per-expert nn.ModuleList; v5 fuses Mixtral's, Qwen's and DeepSeek's experts
    /// into 3-D tensors of the same element count, models.md §1.0.)
    enum class Layout { Mixtral, Qwen, DeepSeek, GptOss };
    Layout layout = Layout::Mixtral;
    /// Per block, whether its MLP is sparse; blocks past the end are dense.
    std::vector<bool> sparse_blocks;
    /// Expert parallelism (models/expert_parallel.hpp): this rank holds experts / ep of the
    /// routed experts (their tensors, their grouped GEMMs' batch); the router still scores all.
    std::int64_t ep = 1;
    bool sparse(std::int64_t block) const {
      return experts > 0 && block >= 0 && static_cast<std::size_t>(block) < sparse_blocks.size() &&
             sparse_blocks[static_cast<std::size_t>(block)];
    }
  };
  MoE moe;
  /// gpt-oss: biases on the experts' projections and the router, and a learned attention sink
  /// per head (self_attn.sinks [heads], registered after o_proj).
  bool attention_sinks = false;

  /// heads·head_dim: width of q and of the attention output.
  std::int64_t q_dim() const { return heads * (head_dim > 0 ? head_dim : hidden / heads); }
  /// kv_heads·head_dim: width of k and of v.
  std::int64_t kv_dim() const { return kv_heads * (head_dim > 0 ? head_dim : hidden / heads); }
};

/// Builds the layer list of a transformer.
///
/// FLOPs per token: 2 × matmul parameters forward (the 6Ψ convention counts 2 fwd + 4 bwd),
/// plus attention core 4·hidden·seq per layer forward (QKᵀ and AV, PaLM appendix B,
/// no causal discount). The LM head costs 2·hidden·vocab per token even when tied.
/// Activation bytes per token per block (bf16, flash attention, no recompute):
/// 2 × (5·hidden + 2·kv_dim + 3·ffn) gated, 2 × (5·hidden + 2·kv_dim + 2·ffn) otherwise
/// (Korthikanti et al. 2022 §4 accounting without the s² attention term); LM head logits fp32.
/// Streaming bytes count each elementwise op fused into one kernel that reads its inputs and
/// writes its output once (torch.compile, Megatron/Transformer Engine). Eager PyTorch runs the
/// composites op by op (LayerSpec::eager_extra_*), with act = activation bytes per element:
///  * RMSNorm (torchtitan's RMSNorm, Hugging Face's LlamaRMSNorm: x.float(), pow(2),
///    mean(-1), + eps, rsqrt, ×, .type_as(x), × weight): (act+4) + 8 + 4 + 8 + (4+act) + 2·act
///    bytes per element in 8 kernels, against 2·act in one; it saves the fp32 input and its
///    bf16 output for backward (4 + act) instead of the input (act). LayerNorm is one native
///    kernel (F.layer_norm) either way.
///  * rotary embedding on q and k (torchtitan's apply_rotary_emb: .float(), complex multiply,
///    .type_as; Hugging Face's rotate_half form moves the same 20 B per bf16 element):
///    (act+4) + 8 + (4+act) bytes per element in 3 kernels, against 2·act in one.
///  * grouped-query attention's repeat_kv (expand + reshape copies k and v to every query head,
///    torchtitan and Hugging Face alike, before SDPA): act·(kv_dim + hidden) per tensor, 2 kernels.
///  * SwiGLU: silu(w1·x) and × (w3·x) as two kernels: 5·act per ffn element, against 3·act.
///  * the loss: logits cast to fp32 before cross_entropy (torchtitan's `.float()`, Hugging Face's
///    `logits.float()`): act + 4 bytes per vocab entry, one kernel (logits_upcast_bytes_per_token).
/// With q_dim = heads·head_dim ≠ hidden (TransformerShape::head_dim) the q, attention-output and
/// rotary terms above take q_dim where the formulas say hidden; each extra hidden-wide norm
/// (Sandwich) adds its input to the saved activations and 2·act·hidden of streaming; q/k norms
/// save their inputs and stream 2·act·(q_dim + kv_dim) in two kernels (RMSNorm op by op under
/// eager, as the block norms).
/// Precondition: shape validated (all sizes > 0, heads divisible by kv_heads, and hidden
/// divisible by heads when head_dim is 0).
ModelSpec make_transformer(const std::string& name, const TransformerShape& shape);

/// torchvision's ResNet / ResNeXt of Bottleneck blocks (torchvision/models/resnet.py; He et al.
/// 2016, the "v1.5" variant with the stride on the 3×3 conv; ResNeXt: Xie et al. 2017).
/// Samples are images (a "token" of the simulator is one image: batch.seq_len is 1).
struct ResNetShape {
  std::vector<std::int64_t> depths;    ///< Bottleneck blocks per stage: {3,4,6,3} ResNet-50, {3,4,23,3} ResNet-101
  std::int64_t groups = 1;             ///< the 3×3 convs' groups (ResNeXt cardinality: 32)
  std::int64_t width_per_group = 64;   ///< ResNeXt's bottleneck width per group (4 for 32x4d, 8 for 32x8d)
  std::int64_t image_size = 224;       ///< square input images, pixels
  std::int64_t num_classes = 1000;     ///< the classifier's outputs
  DType dtype = DType::FP32;
};

/// Builds the layer list of a torchvision ResNet: "stem" (conv1 7×7/2, bn1, ReLU, 3×3/2 max
/// pool), one layer per Bottleneck block ("layer1.0" …), "head" (average pool, fc, the loss).
/// Tensors carry torchvision's names in its registration order (model.parameters()), so DDP's
/// buckets are PyTorch's. A Bottleneck of `planes` p, width w = p·width_per_group/64·groups:
/// conv1 1×1 (in→w), bn1, ReLU; conv2 3×3 stride s, groups (w→w), bn2, ReLU; conv3 1×1
/// (w→4p), bn3; the first block of a stage adds downsample = 1×1 conv stride s (in→4p) + BN;
/// then += shortcut, ReLU. Stages: p = 64, 128, 256, 512 at stride 1, 2, 2, 2.
/// Per sample, with e = activation bytes per element and `out` a conv's output elements:
///  * FLOPs: 2·rows·n·k per conv (LayerGemm::Conv), 2·2048·num_classes for fc;
///  * streaming bytes (forward): training BatchNorm reads its input twice (statistics, then
///    normalisation) and writes once, 3·e·out; in-place ReLU 2·e·out; the residual add 3·e·out;
///    max pool reads its input and writes its output and int64 indices; average pool reads its
///    input. Backward moves twice the forward's (the simulator's convention for streaming ops).
///  * activations kept for backward: each BatchNorm's input (the conv output) and each ReLU's
///    output, e·out each (a conv's input is the previous ReLU's output, the same tensor), the
///    image for conv1's weight gradient, max pool's indices (8 B per output element), fc's input;
///    the logits (fp32) for the loss.
/// Precondition: shape validated (depths has 4 stages, every size ≥ 1, image_size ≥ 32).
ModelSpec make_resnet(const std::string& name, const ResNetShape& shape);

/// The seed MLP's shape (make_mlp).
struct MlpShape {
  std::int64_t layers = 0, hidden = 0, ffn = 0;
  DType dtype = DType::BF16;
};

/// The seed's MLP model (seed 000 §2.3): L layers of W_in[D,F], W_out[F,D], no biases.
/// Forward 2·2·D·F FLOPs per token per layer; activations 2·(D + 2F) bytes per token.
ModelSpec make_mlp(const std::string& name, std::int64_t layers, std::int64_t hidden,
                   std::int64_t ffn, DType dtype);

}  // namespace stepsim::models
