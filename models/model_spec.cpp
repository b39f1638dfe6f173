// SPDX-License-Identifier: Apache-2.0
// ModelSpec builders: transformer, torchvision's ResNet and the seed's MLP.
#include "models/model_spec.hpp"

#include <fmt/format.h>

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

std::int64_t ModelSpec::trainable_parameter_count() const {
  std::int64_t n = 0;
  for (const auto& l : layers)
    for (const auto& p : l.params)
      if (p.trainable) n += p.numel;
  return n;
}

ModelSpec make_transformer(const std::string& name, const TransformerShape& s) {
  ModelSpec m;
  m.name = name;
  m.kind = "transformer";
  const double h = static_cast<double>(s.hidden);
  const std::int64_t head_dim = s.hidden / s.heads;
  const std::int64_t kv_dim = head_dim * s.kv_heads;
  const double act = dtype_bytes(s.dtype);
  auto tensor = [&](std::string n, std::int64_t numel) { return ParamTensor{std::move(n), numel, s.dtype, true}; };

  LayerSpec embed;
  embed.name = "embed";
  embed.params.push_back(tensor("model.embed_tokens.weight", s.vocab * s.hidden));
  if (s.max_positions > 0) embed.params.push_back(tensor("model.embed_positions.weight", s.max_positions * s.hidden));
  embed.fwd_streaming_bytes_per_token = 2 * act * h;  // gather a row, write it
  embed.root = true;
  embed.fwd_streaming_kernels = s.max_positions > 0 ? 3 : 1;  // gather, [position gather + add]
  m.layers.push_back(embed);

  for (std::int64_t i = 0; i < s.layers; ++i) {
    LayerSpec b;
    b.name = fmt::format("layers.{}", i);
    const std::string p = fmt::format("model.layers.{}.", i);
    auto linear = [&](const std::string& n, std::int64_t in, std::int64_t out) {
      b.params.push_back(tensor(p + n + ".weight", in * out));
      b.gemms.push_back({LayerGemm::Kind::Linear, static_cast<double>(out), static_cast<double>(in),
                         static_cast<std::int64_t>(b.params.size() - 1), 0, 0});
      if (s.linear_bias) b.params.push_back(tensor(p + n + ".bias", out));
      b.fwd_gemm_flops_per_token += 2.0 * static_cast<double>(in) * static_cast<double>(out);
    };
    // Execution order: input norm, attention projections, post-attention norm, MLP. Backward
    // produces gradients in the reverse of it (registration order differs: norms last).
    linear("self_attn.q_proj", s.hidden, s.hidden);
    linear("self_attn.k_proj", s.hidden, kv_dim);
    linear("self_attn.v_proj", s.hidden, kv_dim);
    linear("self_attn.o_proj", s.hidden, s.hidden);
    if (s.gated_mlp) {
      linear("mlp.gate_proj", s.hidden, s.ffn);
      linear("mlp.up_proj", s.hidden, s.ffn);
      linear("mlp.down_proj", s.ffn, s.hidden);
    } else {
      linear("mlp.fc_in", s.hidden, s.ffn);
      linear("mlp.fc_out", s.ffn, s.hidden);
    }
    for (const char* norm : {"input_layernorm", "post_attention_layernorm"}) {
      b.params.push_back(tensor(p + norm + ".weight", s.hidden));
      if (s.layernorm) b.params.push_back(tensor(p + norm + ".bias", s.hidden));
    }
    const std::size_t per_linear = s.linear_bias ? 2 : 1;
    const std::size_t per_norm = s.layernorm ? 2 : 1;
    const std::size_t attn_end = 4 * per_linear;
    const std::size_t mlp_end = attn_end + (s.gated_mlp ? 3 : 2) * per_linear;
    std::vector<std::size_t> exec;
    for (std::size_t k = 0; k < per_norm; ++k) exec.push_back(mlp_end + k);
    for (std::size_t k = 0; k < attn_end; ++k) exec.push_back(k);
    for (std::size_t k = 0; k < per_norm; ++k) exec.push_back(mlp_end + per_norm + k);
    for (std::size_t k = attn_end; k < mlp_end; ++k) exec.push_back(k);
    b.grad_ready_order.assign(exec.rbegin(), exec.rend());
    b.fwd_attn_flops_per_token_per_seq = 4.0 * h;
    const auto hd = static_cast<double>(head_dim), heads = static_cast<double>(s.heads);
    b.gemms.push_back({LayerGemm::Kind::AttentionScores, 0, 0, -1, heads, hd, s.causal});
    b.gemms.push_back({LayerGemm::Kind::AttentionValues, 0, 0, -1, heads, hd, s.causal});
    const double f = static_cast<double>(s.ffn);
    const double kv = static_cast<double>(kv_dim);
    b.activation_bytes_per_token = act * (5 * h + 2 * kv + (s.gated_mlp ? 3 : 2) * f);
    b.input_bytes_per_token = act * h;
    b.attention_heads = s.heads;
    // Norms (read+write twice), residual adds (3 h each, twice), rotary on q/k, MLP activation.
    b.fwd_streaming_bytes_per_token = act * (4 * h + 6 * h + 2 * (h + kv) + (s.gated_mlp ? 3 : 2) * f);
    // Two norms, two residual (bias-dropout-) adds, the activation (SiLU and the gate product
    // when gated), rotary on q and k; views: the q/k/v splits and head reshapes in and out.
    b.fwd_streaming_kernels = 2 + 2 + (s.gated_mlp ? 2 : 1) + (s.max_positions > 0 ? 0 : 2);
    b.fwd_host_only_ops = 8;
    // Eager PyTorch's composites, op by op (make_transformer's documentation lists them).
    const bool upcast = act < 4;
    if (!s.layernorm) {  // RMSNorm: two per block
      const double eager = (upcast ? 2 * (act + 4) : 0.0) + 8 + 4 + 8 + 2 * act;
      b.eager_extra_streaming_bytes_per_token += 2 * h * (eager - 2 * act);
      b.eager_extra_streaming_kernels += 2 * ((upcast ? 2 : 0) + 6 - 1);
      if (upcast) b.eager_extra_activation_bytes_per_token += 2 * h * 4;  // fp32 input + output, less the input
    }
    if (s.max_positions == 0) {  // rotary on q and k
      const double eager = upcast ? (act + 4) + 8 + (4 + act) : 8;
      b.eager_extra_streaming_bytes_per_token += (h + kv) * (eager - 2 * act);
      b.eager_extra_streaming_kernels += 2 * ((upcast ? 3 : 1) - 1);
    }
    if (s.kv_heads < s.heads) {  // repeat_kv copies k and v to every query head
      b.eager_extra_streaming_bytes_per_token += 2 * act * (kv + h);
      b.eager_extra_streaming_kernels += 2;
    }
    if (s.gated_mlp) b.eager_extra_streaming_bytes_per_token += 2 * act * f;  // silu and × apart: 5·act vs 3·act
    m.layers.push_back(b);
  }

  if (!s.layernorm) m.eager_composites.push_back("RMSNorm");
  if (s.max_positions == 0) m.eager_composites.push_back("rotary");
  if (s.kv_heads < s.heads) m.eager_composites.push_back("repeat_kv");
  if (s.gated_mlp) m.eager_composites.push_back("SwiGLU");

  LayerSpec final_norm;
  final_norm.name = "final_norm";
  final_norm.params.push_back(tensor("model.norm.weight", s.hidden));
  if (s.layernorm) final_norm.params.push_back(tensor("model.norm.bias", s.hidden));
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
  if (!s.tied_embeddings) head.params.push_back(tensor("lm_head.weight", s.vocab * s.hidden));
  head.fwd_gemm_flops_per_token = 2.0 * h * static_cast<double>(s.vocab);
  // Tied: the weight gradient is still computed here (into embed_tokens.weight's .grad).
  head.gemms.push_back({LayerGemm::Kind::Linear, static_cast<double>(s.vocab), h, s.tied_embeddings ? -1 : 0, 0, 0});
  head.activation_bytes_per_token = 4.0 * static_cast<double>(s.vocab);  // fp32 logits for the loss
  head.fwd_streaming_bytes_per_token = 2 * 4.0 * static_cast<double>(s.vocab);  // softmax / loss
  head.input_bytes_per_token = head.activation_bytes_per_token;  // logits are needed for the loss anyway
  head.root = true;
  head.fwd_streaming_kernels = 2;  // log-softmax and the loss
  if (act < 4) head.logits_upcast_bytes_per_token = (act + 4) * static_cast<double>(s.vocab);  // eager: cast, then the loss
  head.fused_loss_bytes_per_token = act * static_cast<double>(s.vocab);
  m.layers.push_back(head);
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
    m.layers.push_back(l);
  }
  return m;
}

}  // namespace stepsim::models
