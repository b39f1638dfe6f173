// SPDX-License-Identifier: Apache-2.0
// Hugging Face config.json -> ModelSpec (models/hf_config.hpp). Tensor lists and defaults:
// shared/reference/models.md §1 (transformers' modeling_*.py and configuration_*.py).
#include "models/hf_config.hpp"

#include "sim/support/error.hpp"
#include "sim/support/json_reader.hpp"
#include "sim/support/names.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>

namespace stepsim::models {

namespace {

constexpr std::int64_t kMaxDim = std::int64_t{1} << 40;
constexpr std::int64_t kMaxLayers = 65536;
constexpr std::int64_t kMaxHeads = 1 << 20;
constexpr double kMaxParams = 1e15;

// Reads keys of one config object, collecting every problem instead of stopping at the first
// (a config.json's problems are reported together). A null value reads as absent, as
// transformers' configuration classes treat None.
using Problems = std::vector<std::pair<std::string, std::string>>;  // (JSON path, message)

class ConfigReader {
 public:
  ConfigReader(const nlohmann::json& obj, std::string source, std::string pointer, Problems& problems)
      : obj_(obj), source_(std::move(source)), pointer_(std::move(pointer)), problems_(problems) {}

  std::string path(const std::string& key) const { return pointer_ + "/" + key; }
  bool present(const std::string& key) const { return obj_.contains(key) && !obj_.at(key).is_null(); }

  std::optional<std::int64_t> optional_integer(const std::string& key, std::int64_t min, std::int64_t max) {
    if (!present(key)) return std::nullopt;
    const nlohmann::json& v = obj_.at(key);
    if (v.is_number_integer() && !(v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(max))) {
      const auto x = v.get<std::int64_t>();
      if (x >= min && x <= max) return x;
    } else if (v.is_number_float()) {
      const double d = v.get<double>();
      if (std::isfinite(d) && d == std::floor(d) && d >= static_cast<double>(min) && d <= static_cast<double>(max))
        return static_cast<std::int64_t>(d);
    }
    problem(key, fmt::format("expected an integer in [{}, {}], got {}", min, max, json_excerpt(v)));
    return std::nullopt;
  }
  std::int64_t integer(const std::string& key, std::int64_t fallback, std::int64_t min, std::int64_t max) {
    return optional_integer(key, min, max).value_or(fallback);
  }
  bool boolean(const std::string& key, bool fallback) {
    if (!present(key)) return fallback;
    const nlohmann::json& v = obj_.at(key);
    if (v.is_boolean()) return v.get<bool>();
    problem(key, fmt::format("expected true or false, got {}", json_excerpt(v)));
    return fallback;
  }
  double fraction(const std::string& key, double fallback) {
    if (!present(key)) return fallback;
    const nlohmann::json& v = obj_.at(key);
    if (v.is_number() && v.get<double>() > 0 && v.get<double>() <= 1) return v.get<double>();
    problem(key, fmt::format("expected a number in (0, 1], got {}", json_excerpt(v)));
    return fallback;
  }
  std::optional<std::string> optional_string(const std::string& key) {
    if (!present(key)) return std::nullopt;
    const nlohmann::json& v = obj_.at(key);
    if (v.is_string()) return v.get<std::string>();
    problem(key, fmt::format("expected a string, got {}", json_excerpt(v)));
    return std::nullopt;
  }

  void problem(const std::string& key, const std::string& message) {
    problems_.push_back({key.empty() ? pointer_ : path(key), message});
  }
  /// Throws every problem so far in one InputError (the first one's path; the others after it).
  void finish() const {
    if (problems_.empty()) return;
    std::string message = problems_.front().second;
    if (problems_.size() > 1) {
      message += fmt::format("; and {} more:", problems_.size() - 1);
      for (std::size_t i = 1; i < problems_.size(); ++i)
        message += fmt::format("{} {}: {}", i > 1 ? ";" : "", problems_[i].first, problems_[i].second);
    }
    throw InputError(source_, problems_.front().first, message);
  }
  const std::string& source() const { return source_; }
  const std::string& pointer() const { return pointer_; }
  const nlohmann::json& json() const { return obj_; }

 private:
  const nlohmann::json& obj_;
  std::string source_, pointer_;
  Problems& problems_;
};

// The defaults of a model_type's configuration class (transformers configuration_*.py __init__;
// shared/reference/models.md §1). kv_heads 0: num_attention_heads; head_dim 0: hidden / heads.
struct Defaults {
  std::int64_t vocab, hidden, ffn, layers, heads, kv_heads, head_dim;
  bool tied;
};

Defaults defaults_of(const std::string& type) {
  if (type == "llama") return {32000, 4096, 11008, 32, 32, 0, 0, false};       // LlamaConfig
  if (type == "mistral") return {32000, 4096, 14336, 32, 32, 8, 0, false};     // MistralConfig
  if (type == "qwen2") return {151936, 4096, 22016, 32, 32, 32, 0, false};     // Qwen2Config
  if (type == "qwen3") return {151936, 4096, 22016, 32, 32, 32, 128, false};   // Qwen3Config
  if (type == "gemma") return {256000, 3072, 24576, 28, 16, 16, 256, true};    // GemmaConfig
  if (type == "gemma2") return {256000, 2304, 9216, 26, 8, 4, 256, true};      // Gemma2Config
  if (type == "gemma3_text") return {262208, 2304, 9216, 26, 8, 4, 256, true}; // Gemma3TextConfig
  if (type == "phi3") return {32064, 3072, 8192, 32, 32, 0, 0, false};         // Phi3Config
  if (type == "olmo2") return {50304, 4096, 11008, 32, 32, 0, 0, false};       // Olmo2Config
  if (type == "gpt_neox") return {50432, 6144, 24576, 44, 64, 0, 0, false};    // GPTNeoXConfig
  if (type == "gpt2") return {50257, 768, 0, 12, 12, 0, 0, true};              // GPT2Config (n_inner None: 4·n_embd)
  throw InternalError("no defaults for model_type " + type);
}

std::optional<DType> dtype_from_torch(const std::string& text) {
  if (text == "bfloat16") return DType::BF16;
  if (text == "float16") return DType::FP16;
  if (text == "float32") return DType::FP32;
  return std::nullopt;
}

}  // namespace

const std::vector<std::string>& hf_model_types() {
  static const std::vector<std::string> types = {"llama", "mistral", "qwen2", "qwen3", "gemma", "gemma2",
                                                 "gemma3_text", "gemma3", "phi3", "gpt2", "gpt_neox", "olmo2"};
  return types;
}

const std::vector<std::string>& hf_moe_model_types() {
  static const std::vector<std::string> types = {"mixtral", "qwen2_moe", "qwen3_moe", "deepseek_v2", "deepseek_v3",
                                                 "gpt_oss"};
  return types;
}

bool is_hf_config(const nlohmann::json& doc) {
  return doc.is_object() && doc.contains("model_type") && !doc.contains("kind");
}

std::string hf_name_from_path(const std::string& path) {
  const std::filesystem::path p(path);
  if (p.filename() == "config.json") {
    const std::string folder = p.parent_path().lexically_normal().filename().string();
    if (!folder.empty() && folder != "." && folder != "..") return folder;
  }
  return p.stem().string();
}

ModelSpec parse_hf_config(const nlohmann::json& config, const std::string& source, const std::string& pointer,
                          const std::string& name, std::optional<DType> dtype) {
  if (!config.is_object())
    throw InputError(source, pointer, "expected a Hugging Face config object, got " + json_excerpt(config));
  Problems problems;
  ConfigReader top(config, source, pointer, problems);
  const auto type_text = top.optional_string("model_type");
  if (!type_text) {
    top.problem("model_type", "required field is missing (the config's model_type, e.g. \"llama\")");
    top.finish();
  }
  std::string type = *type_text;
  const auto& moe = hf_moe_model_types();
  if (std::find(moe.begin(), moe.end(), type) != moe.end())
    throw InputError(source, top.path("model_type"),
                     fmt::format("'{}' is a mixture-of-experts model, which stepsim does not simulate yet; dense "
                                 "model_types it builds: {}", type, join_names(hf_model_types())));
  const auto& types = hf_model_types();
  if (std::find(types.begin(), types.end(), type) == types.end())
    throw InputError(source, top.path("model_type"),
                     fmt::format("unknown model_type '{}'; supported: {}{}", excerpt(type), join_names(types),
                                 did_you_mean(type, types)));

  // Gemma 3's multimodal config nests the text stack (Gemma3Config.text_config); only its
  // text stack is built. Read dtype and name keys from the top level.
  const nlohmann::json* text = &config;
  std::string text_pointer = pointer;
  std::vector<std::string> notes;
  if (type == "gemma3") {
    if (config.contains("text_config") && config.at("text_config").is_object()) {
      text = &config.at("text_config");
      text_pointer = top.path("text_config");
    } else if (config.contains("text_config") && !config.at("text_config").is_null()) {
      top.problem("text_config", "expected an object (Gemma3TextConfig), got " + json_excerpt(config.at("text_config")));
      top.finish();
    }
    notes.push_back("text stack only (the vision tower is not built)");
    type = "gemma3_text";
  }
  ConfigReader r(*text, source, text_pointer, problems);
  const Defaults d = defaults_of(type);
  const bool gpt2 = type == "gpt2";

  TransformerShape s;
  s.hidden = r.integer(gpt2 ? "n_embd" : "hidden_size", d.hidden, 1, kMaxDim);
  s.layers = r.integer(gpt2 ? "n_layer" : "num_hidden_layers", d.layers, 1, kMaxLayers);
  s.heads = r.integer(gpt2 ? "n_head" : "num_attention_heads", d.heads, 1, kMaxHeads);
  s.vocab = r.integer("vocab_size", d.vocab, 1, kMaxDim);
  s.ffn = gpt2 ? r.integer("n_inner", 4 * s.hidden, 1, kMaxDim) : r.integer("intermediate_size", d.ffn, 1, kMaxDim);
  const bool has_kv = type != "gpt2" && type != "gpt_neox";  // those two are multi-head only
  s.kv_heads = has_kv ? r.integer("num_key_value_heads", d.kv_heads > 0 ? d.kv_heads : s.heads, 1, kMaxHeads) : s.heads;
  const bool has_head_dim = has_kv;  // every attention class reads getattr(config, "head_dim", hidden // heads)
  s.head_dim = has_head_dim ? r.integer("head_dim", d.head_dim, 1, kMaxHeads) : 0;
  s.tied_embeddings = r.boolean("tie_word_embeddings", d.tied);
  s.dtype = DType::BF16;

  const bool attention_bias_key = type == "llama" || type == "qwen3" || type == "gemma" || type == "gemma2" ||
                                  type == "gemma3_text" || type == "olmo2" || type == "gpt_neox";
  const bool attention_bias = attention_bias_key && r.boolean("attention_bias", type == "gpt_neox");
  s.qkv_bias = s.o_bias = attention_bias;
  if (type == "llama") s.mlp_bias = r.boolean("mlp_bias", false);
  if (type == "qwen2") s.qkv_bias = true;  // Qwen2Attention: bias on q/k/v, none on o_proj
  if (type == "gemma" || type == "gemma2" || type == "gemma3_text") {
    s.gelu_gate = true;
    s.scaled_embeddings = true;
  }
  if (type == "gemma2" || type == "gemma3_text") s.norm_layout = TransformerShape::NormLayout::Sandwich;
  if (type == "qwen3" || type == "gemma3_text") s.qk_norm = TransformerShape::QkNorm::PerHead;
  if (type == "olmo2") {
    s.qk_norm = TransformerShape::QkNorm::Full;
    s.norm_layout = TransformerShape::NormLayout::PostOnly;
  }
  if (type == "phi3") s.layout = TransformerShape::Layout::Phi3;
  if (gpt2 || type == "gpt_neox") {
    s.layout = gpt2 ? TransformerShape::Layout::GPT2 : TransformerShape::Layout::GPTNeoX;
    s.gated_mlp = false;
    s.layernorm = true;
    s.mlp_bias = true;
  }
  if (gpt2) {
    s.qkv_bias = s.o_bias = true;  // Conv1D layers always have a bias
    s.max_positions = r.integer("n_positions", 1024, 1, kMaxDim);
  }
  if (type == "gpt_neox") s.rotary_fraction = r.fraction("rotary_pct", 0.25);

  // Cross-field checks, as the modeling classes need them.
  if (s.kv_heads > 0 && s.heads % s.kv_heads != 0)
    r.problem(has_kv ? "num_key_value_heads" : "",
              fmt::format("num_attention_heads ({}) must be divisible by num_key_value_heads ({})", s.heads, s.kv_heads));
  if (s.head_dim == 0 && s.hidden % s.heads != 0)
    r.problem(gpt2 ? "n_head" : "num_attention_heads",
              fmt::format("{} ({}) is not divisible by it ({}), and the config gives no head_dim",
                          gpt2 ? "n_embd" : "hidden_size", s.hidden, s.heads));
  const double q = static_cast<double>(s.heads) * static_cast<double>(s.head_dim > 0 ? s.head_dim : s.hidden);
  const double h = static_cast<double>(s.hidden);
  const double per_layer = 4 * h * q + 3 * h * static_cast<double>(s.ffn);
  const double total = 2 * h * static_cast<double>(s.vocab) + per_layer * static_cast<double>(s.layers);
  if (total > kMaxParams)
    r.problem(gpt2 ? "n_embd" : "hidden_size",
              fmt::format("this config has about {:.3g} parameters; expected at most {:g}", total, kMaxParams));

  // Storage dtype: torch_dtype (transformers v4) or dtype (v5), at the top level.
  std::optional<DType> stored;
  for (const char* key : {"torch_dtype", "dtype"}) {
    if (const auto t = top.optional_string(key)) {
      stored = dtype_from_torch(*t);
      if (!stored) top.problem(key, fmt::format("'{}' is not a dtype stepsim trains in; expected bfloat16, float16 or float32", excerpt(*t)));
      break;
    }
  }
  // Sliding-window attention (TransformerShape::attention_window): its width is sliding_window
  // (MistralConfig, Gemma2Config and Gemma3TextConfig default to 4096; an explicit null, as in
  // Mistral-7B-v0.3, is none; Qwen2 / Qwen3 use theirs only with use_sliding_window). The blocks
  // that use it: the config's layer_types when given ("sliding_attention" / "full_attention"
  // per block); else Mistral every block, Gemma 2 the even ones (Gemma2Attention: layer_idx % 2
  // == 0), Gemma 3 all but every sliding_window_pattern-th ((i + 1) % pattern != 0, default 6),
  // Qwen2 / Qwen3 those from max_window_layers on (default 28).
  const bool null_window = text->contains("sliding_window") && text->at("sliding_window").is_null();
  const bool qwen = type == "qwen2" || type == "qwen3";
  std::optional<std::int64_t> width;
  if ((type == "mistral" || type == "gemma2" || type == "gemma3_text") && !null_window)
    width = r.integer("sliding_window", 4096, 1, kMaxDim);
  else if (qwen && r.boolean("use_sliding_window", false) && !null_window)
    width = r.integer("sliding_window", 4096, 1, kMaxDim);
  std::vector<bool> sliding_block(static_cast<std::size_t>(s.layers), false);
  if (width) {
    const std::int64_t pattern = type == "gemma3_text" ? r.integer("sliding_window_pattern", 6, 1, kMaxLayers) : 1;
    const std::int64_t first = qwen ? r.integer("max_window_layers", 28, 0, kMaxLayers) : 0;
    for (std::int64_t i = 0; i < s.layers; ++i)
      sliding_block[static_cast<std::size_t>(i)] = type == "gemma2"        ? i % 2 == 0
                                                   : type == "gemma3_text" ? (i + 1) % pattern != 0
                                                   : qwen                  ? i >= first
                                                                           : true;
    if (r.present("layer_types")) {
      const nlohmann::json& lt = text->at("layer_types");
      if (!lt.is_array() || lt.size() != static_cast<std::size_t>(s.layers)) {
        r.problem("layer_types", fmt::format("expected an array of {} entries (one per block), got {}", s.layers,
                                             json_excerpt(lt)));
      } else {
        for (std::size_t i = 0; i < lt.size(); ++i) {
          if (lt[i] == "sliding_attention" || lt[i] == "full_attention") {
            sliding_block[i] = lt[i] == "sliding_attention";
          } else {
            r.problem(fmt::format("layer_types/{}", i), fmt::format("expected \"sliding_attention\" or \"full_attention\", "
                                                                   "got {}", json_excerpt(lt[i])));
            break;
          }
        }
      }
    }
  }
  top.finish();
  s.dtype = dtype.value_or(stored.value_or(DType::BF16));
  const auto windowed = std::count(sliding_block.begin(), sliding_block.end(), true);
  if (windowed > 0) {
    for (bool b : sliding_block) s.attention_window.push_back(b ? *width : 0);
    notes.push_back(fmt::format("sliding_window {} on {} of {} blocks (a flash kernel skips the masked keys)", *width,
                                windowed, s.layers));
  }
  // What the config gives that the step does not price.
  std::vector<std::string> unpriced;
  if (type == "gemma2" && !(text->contains("final_logit_softcapping") && text->at("final_logit_softcapping").is_null()))
    unpriced.push_back("final_logit_softcapping not modelled: its tanh over the logits is not priced");
  notes.insert(notes.end(), unpriced.begin(), unpriced.end());

  std::string model_name = name;
  if (model_name.empty()) {
    const auto from = top.optional_string("_name_or_path");
    model_name = from && !from->empty() ? std::filesystem::path(*from).filename().string() : type;
    if (model_name.empty()) model_name = type;
  }
  ModelSpec m = make_transformer(model_name, s);
  m.source = fmt::format("Hugging Face config.json (model_type {}): {} {}, {} {}, {} {}, {} {}, num_key_value_heads {}, "
                         "head_dim {}, vocab_size {}, tie_word_embeddings {}, {}",
                         type, gpt2 ? "n_embd" : "hidden_size", s.hidden, gpt2 ? "n_inner" : "intermediate_size", s.ffn,
                         gpt2 ? "n_layer" : "num_hidden_layers", s.layers, gpt2 ? "n_head" : "num_attention_heads",
                         s.heads, s.kv_heads, s.q_dim() / s.heads, s.vocab, s.tied_embeddings, dtype_name(s.dtype));
  for (const auto& n : notes) m.source += "; " + n;
  m.hf_model_type = type;
  m.not_modelled = unpriced;
  return m;
}

}  // namespace stepsim::models
