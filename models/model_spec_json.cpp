// SPDX-License-Identifier: Apache-2.0
// JSON -> ModelSpec (the only file in models/ that reads model JSON).
#include "models/model_spec_json.hpp"

#include "models/hf_config_json.hpp"

#include "sim/support/embedded.hpp"
#include "sim/support/error.hpp"
#include "sim/support/json_reader.hpp"
#include "sim/support/names.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <limits>

namespace stepsim::models {

namespace detail {
const std::vector<EmbeddedFile>& builtin_models();  // generated from models/catalog/
}

namespace {

constexpr std::int64_t kMaxDim = std::int64_t{1} << 40;
constexpr double kMaxParams = 1e15;  // keeps every count exact in int64 and double
constexpr std::int64_t kMaxLayers = 65536;  // far beyond any model; keeps building the spec cheap

TransformerShape read_transformer(const JsonReader& r, DType dtype) {
  TransformerShape s;
  s.hidden = r.integer("hidden", 1, kMaxDim);
  s.layers = r.integer("layers", 1, kMaxLayers);
  s.heads = r.integer("heads", 1, 1 << 20);
  s.kv_heads = r.integer_or("kv_heads", s.heads, 1, 1 << 20);
  s.ffn = r.integer("ffn", 1, kMaxDim);
  s.vocab = r.integer("vocab", 1, kMaxDim);
  s.gated_mlp = r.boolean_or("gated_mlp", true);
  s.tied_embeddings = r.boolean_or("tied_embeddings", false);
  s.causal = r.boolean_or("causal", true);
  s.qkv_bias = s.o_bias = s.mlp_bias = r.boolean_or("linear_bias", false);
  s.head_dim = r.integer_or("head_dim", 0, 1, 1 << 20);
  s.layernorm = r.choice_or("norm", "rmsnorm", {"rmsnorm", "layernorm"}) == "layernorm";
  s.max_positions = r.integer_or("max_positions", 0, 0, kMaxDim);
  s.dtype = dtype;
  // Tensor sizes are products of these; refuse shapes whose counts would leave exact int64
  // arithmetic (1e15 parameters is far beyond any model).
  const double h = static_cast<double>(s.hidden);
  const double q = static_cast<double>(s.heads) * static_cast<double>(s.head_dim > 0 ? s.head_dim : s.hidden);
  const double biggest = std::max({h * static_cast<double>(s.vocab), h * static_cast<double>(s.ffn), h * h, h * q});
  const double total = biggest * (3.0 + 12.0 * static_cast<double>(s.layers));
  if (total > kMaxParams)
    r.fail("hidden", fmt::format("this shape has about {:.3g} parameters; expected at most {:g}", total, kMaxParams));
  if (s.head_dim == 0 && s.hidden % s.heads != 0)
    r.fail("heads", fmt::format("hidden ({}) must be divisible by heads ({}), or give head_dim", s.hidden, s.heads));
  if (s.heads % s.kv_heads != 0)
    r.fail("kv_heads", fmt::format("heads ({}) must be divisible by kv_heads ({})", s.heads, s.kv_heads));
  return s;
}

ResNetShape read_resnet(const JsonReader& r, DType dtype) {
  ResNetShape s;
  s.depths = r.integers("depths", 1, 1024);
  if (s.depths.size() != 4)
    r.fail("depths", fmt::format("expected 4 stages of Bottleneck blocks (torchvision's layer1..layer4, e.g. "
                                 "[3, 4, 6, 3] for ResNet-50), got {}", s.depths.size()));
  s.groups = r.integer_or("groups", 1, 1, 1024);
  s.width_per_group = r.integer_or("width_per_group", 64, 1, 65536);
  s.image_size = r.integer_or("image_size", 224, 32, 8192);
  s.num_classes = r.integer_or("num_classes", 1000, 1, 1 << 24);
  s.dtype = dtype;
  // The widest 3×3 conv (stage 4) bounds the tensor sizes: keep every count exact.
  const double width = 8.0 * static_cast<double>(s.width_per_group) * static_cast<double>(s.groups);
  const double conv = width * width / static_cast<double>(s.groups) * 9.0;
  if (conv > kMaxParams)
    r.fail("width_per_group", fmt::format("groups {} x width_per_group {} gives a stage-4 3x3 conv of about {:.3g} "
                                          "parameters; expected at most {:g}", s.groups, s.width_per_group, conv, kMaxParams));
  return s;
}

LayerSpec read_layer(const JsonReader& r, DType dtype) {
  LayerSpec l;
  l.name = r.string("name");
  for (const JsonReader& p : r.objects("params", false)) {
    ParamTensor t;
    t.name = p.string("name");
    t.numel = p.integer("numel", 1, kMaxDim);
    t.dtype = p.has("dtype") ? parse_dtype(p.string("dtype"), p.source(), p.path("dtype")) : dtype;
    t.trainable = p.boolean_or("trainable", true);
    p.finish();
    l.params.push_back(t);
  }
  const bool measured = r.has("fwd_s") || r.has("bwd_s");
  if (measured) {
    l.fwd_s = r.number("fwd_s", Check::NonNegative, Dimension::Seconds);
    l.bwd_s = r.number("bwd_s", Check::NonNegative, Dimension::Seconds);
    for (const char* k : {"fwd_flops_per_token", "attn_flops_per_token_per_seq"})
      if (r.has(k)) r.fail(k, "give either measured fwd_s/bwd_s or FLOPs, not both");
  } else {
    l.fwd_gemm_flops_per_token = r.number("fwd_flops_per_token", Check::NonNegative);
    l.fwd_attn_flops_per_token_per_seq = r.number_or("attn_flops_per_token_per_seq", 0.0, Check::NonNegative);
  }
  l.fwd_streaming_bytes_per_token = r.number_or("streaming_bytes_per_token", 0.0, Check::NonNegative, Dimension::Bytes);
  l.activation_bytes_per_token = r.number_or("activation_bytes_per_token", 0.0, Check::NonNegative, Dimension::Bytes);
  l.input_bytes_per_token = r.number_or("input_bytes_per_token", 0.0, Check::NonNegative, Dimension::Bytes);
  l.attention_heads = r.integer_or("attention_heads", 0, 0, 1 << 20);
  l.root = r.boolean_or("root", false);
  r.finish();
  return l;
}

}  // namespace

const std::vector<std::string>& dtype_names() {
  static const std::vector<std::string> names = {"fp32", "bf16", "fp16", "fp8"};
  return names;
}

DType parse_dtype(const std::string& text, const std::string& source, const std::string& pointer) {
  const auto& names = dtype_names();
  for (std::size_t i = 0; i < names.size(); ++i)
    if (text == names[i]) return static_cast<DType>(i);
  // PyTorch's names (torch.bfloat16, a config.json's torch_dtype) for the same types.
  static const std::vector<std::string> torch_names = {"float32", "bfloat16", "float16", "float8_e4m3fn"};
  for (std::size_t i = 0; i < torch_names.size(); ++i)
    if (text == torch_names[i]) return static_cast<DType>(i);
  throw InputError(source, pointer,
                   fmt::format("unknown dtype '{}'; valid values: {}{}", text, join_names(names),
                               did_you_mean(text, names)));
}

std::vector<std::string> builtin_model_names() {
  std::vector<std::string> names;
  for (const auto& f : detail::builtin_models()) names.emplace_back(f.name);
  return names;
}

ModelSpec parse_model(const nlohmann::json& doc, const std::string& source, const std::string& pointer,
                      std::optional<DType> dtype_override) {
  // A Hugging Face config.json, as it is or wrapped as {"hf_config": {...}, "name", "source"}.
  if (is_hf_config(doc)) return parse_hf_config(doc, source, pointer, "", dtype_override);
  JsonReader r(doc, source, pointer);
  if (doc.is_object() && doc.contains("hf_config")) {
    r.has("hf_config");  // known here
    const std::string name = r.string_or("name", "");
    const std::string src = r.string_or("source", "");
    r.finish();
    ModelSpec m = parse_hf_config(doc.at("hf_config"), source, r.path("hf_config"), name, dtype_override);
    if (!src.empty()) m.source = src + "; " + m.source;
    return m;
  }
  if (doc.is_object() && !doc.contains("kind")) {
    // A Hugging Face config without its model_type, or a misspelt "hf_config", would otherwise
    // be told "/name: required field is missing".
    for (const char* key : {"architectures", "hidden_size", "num_hidden_layers", "n_embd", "vocab_size"})
      if (doc.contains(key))
        r.fail("model_type", fmt::format("required field is missing: this reads as a Hugging Face config.json (it "
                                         "has '{}'), which names its model_type (one of: {})",
                                         key, join_names(hf_model_types())));
    for (const auto& [key, value] : doc.items())
      if (key != "name" && key != "source" && suggest(key, {"hf_config", "kind"}) == "hf_config")
        r.fail(key, "unknown key (did you mean 'hf_config'?)");
  }
  const std::string name = r.string("name");
  const std::string kind = r.choice_or("kind", "", {"mlp", "transformer", "resnet", "layers"});
  if (kind.empty()) r.fail("kind", "required field is missing (one of: mlp, transformer, resnet, layers)");
  const std::string src = r.string_or("source", "");
  // torchvision's networks train in fp32 by default; language models are described in bf16.
  const DType described = r.has("dtype") ? parse_dtype(r.string("dtype"), source, r.path("dtype"))
                          : kind == "resnet" ? DType::FP32
                                             : DType::BF16;
  const DType dtype = dtype_override.value_or(described);
  // DType order in dtype_names() matches the enum.
  static_assert(static_cast<int>(DType::FP32) == 0 && static_cast<int>(DType::FP8) == 3);
  ModelSpec m;
  if (kind == "transformer") {
    m = make_transformer(name, read_transformer(r, dtype));
  } else if (kind == "resnet") {
    m = make_resnet(name, read_resnet(r, dtype));
  } else if (kind == "mlp") {
    const auto layers = r.integer("layers", 1, kMaxLayers);
    const auto hidden = r.integer("hidden", 1, kMaxDim);
    const auto ffn = r.integer("ffn", 1, kMaxDim);
    const double total = 2.0 * static_cast<double>(layers) * static_cast<double>(hidden) * static_cast<double>(ffn);
    if (total > kMaxParams)
      r.fail("hidden", fmt::format("this shape has {:.3g} parameters; expected at most {:g}", total, kMaxParams));
    m = make_mlp(name, layers, hidden, ffn, dtype);
  } else {
    m.name = name;
    m.kind = "layers";
    const auto layer_list = r.objects("layers", true);
    if (static_cast<std::int64_t>(layer_list.size()) > kMaxLayers)
      r.fail("layers", fmt::format("expected at most {} layers, got {}", kMaxLayers, layer_list.size()));
    for (const JsonReader& l : layer_list) m.layers.push_back(read_layer(l, dtype));
  }
  m.source = src;
  r.finish();
  double total = 0;
  for (const auto& l : m.layers)
    for (const auto& t : l.params) total += static_cast<double>(t.numel);
  if (total > kMaxParams)
    r.fail("layers", fmt::format("the model has {:.3g} parameters; expected at most {:g}", total, kMaxParams));
  if (m.parameter_count() <= 0) r.fail("layers", "the model has no parameters");
  return m;
}

ModelSpec load_model(const std::string& ref, const std::string& source, const std::string& pointer,
                     std::optional<DType> dtype) {
  namespace fs = std::filesystem;
  const auto load_file = [&](const std::string& path) {
    const nlohmann::json doc = read_json_file(path);
    // A config.json is named after its folder (".../Llama-3.1-8B/config.json").
    if (is_hf_config(doc)) return parse_hf_config(doc, path, "", hf_name_from_path(path), dtype);
    return parse_model(doc, path, "", dtype);
  };
  // A folder holding a config.json (a Hugging Face checkpoint or snapshot folder).
  const auto load_folder = [&](const std::string& folder) {
    const std::string config = (fs::path(folder) / "config.json").string();
    std::error_code ec;
    if (!fs::is_regular_file(config, ec))
      throw InputError(source, pointer, fmt::format("'{}' is a folder without a config.json; expected a model .json "
                                                    "file or a Hugging Face model folder", excerpt(folder)));
    return load_file(config);
  };
  std::error_code ec;
  const bool is_path = ref.find('/') != std::string::npos ||
                       (ref.size() > 5 && ref.substr(ref.size() - 5) == ".json");
  if (is_path) return fs::is_directory(ref, ec) ? load_folder(ref) : load_file(ref);
  for (const auto& f : detail::builtin_models())
    if (ref == f.name) {
      static CatalogMemo<std::pair<std::string, int>, ModelSpec> memo;
      return memo.get({ref, dtype ? static_cast<int>(*dtype) : -1}, [&] {
        return parse_model(parse_json_text(f.text, "models/catalog/" + ref + ".json"), ref, "", dtype);
      });
    }
  if (!ref.empty() && fs::is_directory(ref, ec)) return load_folder(ref);
  const auto names = builtin_model_names();
  throw InputError(source, pointer,
                   "no model '" + ref + "' in the catalog" + did_you_mean(ref, names) +
                       "; give a path to a .json file, a Hugging Face config.json or a folder holding one, or a "
                       "known model (stepsim list models): " + join_names(names));
}

}  // namespace stepsim::models
