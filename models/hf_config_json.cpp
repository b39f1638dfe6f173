// SPDX-License-Identifier: Apache-2.0
// Hugging Face config.json -> ModelSpec (models/hf_config_json.hpp). Tensor lists and defaults:
// shared/reference/models.md §1 (transformers' modeling_*.py and configuration_*.py).
#include "models/hf_config_json.hpp"

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
constexpr double kMaxExpertInstances = 262144;  // routed experts × MoE blocks (2^18)

// Reads keys of one config object, collecting every problem instead of stopping at the first
// (a config.json's problems are reported together). A null value reads as absent, as
// transformers' configuration classes treat None.
using Problems = std::vector<std::pair<std::string, std::string>>;  // (JSON path, message)

// Keys of transformers' configuration classes that a config may hold and stepsim need not read
// (no tensor or step time depends on them, or not for this model_type): never typos.
const std::vector<std::string>& known_keys() {
  static const std::vector<std::string> keys = {
      "model_type", "torch_dtype", "dtype", "_name_or_path", "architectures", "transformers_version",
      "text_config", "vision_config", "sliding_window", "use_sliding_window", "max_window_layers", "layer_types",
      "sliding_window_pattern", "max_position_embeddings", "rope_theta", "rope_scaling", "rope_parameters",
      "rms_norm_eps", "layer_norm_eps", "layer_norm_epsilon", "hidden_act", "hidden_activation",
      "activation_function", "attention_dropout", "hidden_dropout", "initializer_range", "use_cache",
      "bos_token_id", "eos_token_id", "pad_token_id", "query_pre_attn_scalar", "attn_logit_softcapping",
      "final_logit_softcapping", "rope_local_base_freq", "partial_rotary_factor", "rotary_pct", "rotary_emb_base",
      "use_parallel_residual", "n_ctx", "resid_pdrop", "embd_pdrop", "attn_pdrop", "scale_attn_weights",
      "original_max_position_embeddings", "pretraining_tp", "mlp_bias", "attention_bias", "head_dim",
      "num_key_value_heads", "qkv_bias", "cache_implementation", "tie_word_embeddings", "n_inner", "n_positions",
      "name", "source",
      // routing, auxiliary losses and checkpoint extras of the MoE model_types: no tensor of the
      // transformers module depends on them
      "router_jitter_noise", "router_aux_loss_coef", "output_router_logits", "norm_topk_prob", "n_group",
      "topk_group", "topk_method", "routed_scaling_factor", "scoring_func", "aux_loss_alpha", "seq_aux",
      "num_nextn_predict_layers", "moe_layer_freq", "ep_size", "swiglu_limit", "quantization_config",
      "rope_interleave", "experts_per_token", "router_bias", "initial_context_length"};
  return keys;
}

class ConfigReader {
 public:
  ConfigReader(const nlohmann::json& obj, std::string source, std::string pointer, Problems& problems)
      : obj_(obj), source_(std::move(source)), pointer_(std::move(pointer)), problems_(problems) {}

  std::string path(const std::string& key) const { return pointer_ + "/" + key; }
  /// True when the key holds a value (not null); marks it read, and when it is not in the
  /// object at all, as one that took its default (typos() looks for it).
  bool present(const std::string& key) const {
    read_.push_back(key);
    if (!obj_.contains(key)) defaulted_.push_back(key);
    return obj_.contains(key) && !obj_.at(key).is_null();
  }
  /// A key nobody read that is a near miss of one that was read ("intermediate_sise" for
  /// intermediate_size) is a typo that would silently change the model, or silently not: a
  /// problem. Keys transformers knows (known_keys) are never typos.
  void typos() {
    for (const auto& [key, value] : obj_.items()) {
      if (std::find(read_.begin(), read_.end(), key) != read_.end()) continue;
      if (std::find(known_keys().begin(), known_keys().end(), key) != known_keys().end()) continue;
      const std::string near = suggest(key, read_);
      if (near.empty()) continue;
      const bool defaulted = std::find(defaulted_.begin(), defaulted_.end(), near) != defaulted_.end();
      problem(key, fmt::format("unknown key (did you mean '{}'?){}", near,
                               defaulted ? fmt::format("; without it, {} takes its default", near) : ""));
    }
  }

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
  mutable std::vector<std::string> read_, defaulted_;
};

// The defaults of a model_type's configuration class (transformers configuration_*.py __init__;
// shared/reference/models.md §1). kv_heads 0: num_attention_heads; head_dim 0: hidden / heads.
struct Defaults {
  std::int64_t vocab, hidden, ffn, layers, heads, kv_heads, head_dim;
  bool tied;
  std::int64_t context;  ///< max_position_embeddings
};

Defaults defaults_of(const std::string& type) {
  if (type == "llama") return {32000, 4096, 11008, 32, 32, 0, 0, false, 2048};       // LlamaConfig
  if (type == "mistral") return {32000, 4096, 14336, 32, 32, 8, 0, false, 131072};   // MistralConfig
  if (type == "qwen2") return {151936, 4096, 22016, 32, 32, 32, 0, false, 32768};    // Qwen2Config
  if (type == "qwen3") return {151936, 4096, 22016, 32, 32, 32, 128, false, 32768};  // Qwen3Config
  if (type == "gemma") return {256000, 3072, 24576, 28, 16, 16, 256, true, 8192};    // GemmaConfig
  if (type == "gemma2") return {256000, 2304, 9216, 26, 8, 4, 256, true, 8192};       // Gemma2Config
  if (type == "gemma3_text") return {262208, 2304, 9216, 26, 8, 4, 256, true, 131072}; // Gemma3TextConfig
  if (type == "phi3") return {32064, 3072, 8192, 32, 32, 0, 0, false, 4096};         // Phi3Config
  if (type == "olmo2") return {50304, 4096, 11008, 32, 32, 0, 0, false, 2048};       // Olmo2Config
  if (type == "gpt_neox") return {50432, 6144, 24576, 44, 64, 0, 0, false, 2048};    // GPTNeoXConfig
  if (type == "gpt2") return {50257, 768, 0, 12, 12, 0, 0, true, 1024};              // GPT2Config (n_inner None: 4·n_embd)
  if (type == "mixtral") return {32000, 4096, 14336, 32, 32, 8, 0, false, 131072};   // MixtralConfig
  if (type == "qwen2_moe") return {151936, 2048, 5632, 24, 16, 16, 0, false, 32768}; // Qwen2MoeConfig
  if (type == "qwen3_moe") return {151936, 2048, 6144, 24, 32, 4, 0, false, 32768};  // Qwen3MoeConfig
  if (type == "deepseek_v2") return {32000, 4096, 11008, 32, 32, 0, 0, false, 2048};  // DeepseekV2Config
  if (type == "deepseek_v3") return {129280, 7168, 18432, 61, 128, 0, 0, false, 4096}; // DeepseekV3Config
  if (type == "gpt_oss") return {201088, 2880, 2880, 36, 64, 8, 64, false, 131072};  // GptOssConfig
  throw InternalError("no defaults for model_type " + type);
}

bool is_moe(const std::string& type) {
  const auto& moe = hf_moe_model_types();
  return std::find(moe.begin(), moe.end(), type) != moe.end();
}

// The MoE keys of a mixture-of-experts model_type (TransformerShape::MoE; models.md §1.3, §1.4,
// §1.10, §1.11): the experts, their width, top-k, the shared expert and which blocks are sparse.
void read_moe(const std::string& type, ConfigReader& r, TransformerShape& s) {
  using MoE = TransformerShape::MoE;
  MoE& e = s.moe;
  std::vector<bool> sparse(static_cast<std::size_t>(s.layers), true);
  if (type == "mixtral") {  // MixtralConfig: every block sparse, experts of intermediate_size
    e.layout = MoE::Layout::Mixtral;
    e.experts = r.integer("num_local_experts", 8, 1, kMaxHeads);
    e.topk = r.integer("num_experts_per_tok", 2, 1, kMaxHeads);
    e.expert_ffn = s.ffn;
  } else if (type == "gpt_oss") {  // GptOssConfig: every block sparse, experts of intermediate_size
    e.layout = MoE::Layout::GptOss;
    e.experts = r.integer("num_local_experts", 128, 1, kMaxHeads);
    e.topk = r.integer("num_experts_per_tok", 4, 1, kMaxHeads);
    e.expert_ffn = s.ffn;
  } else if (type == "qwen2_moe" || type == "qwen3_moe") {
    // Qwen2MoeConfig / Qwen3MoeConfig: block i is sparse iff i is not in mlp_only_layers,
    // num_experts > 0 and (i + 1) % decoder_sparse_step == 0; else a dense MLP of intermediate_size.
    const bool qwen2 = type == "qwen2_moe";
    e.layout = MoE::Layout::Qwen;
    e.experts = r.integer("num_experts", qwen2 ? 60 : 128, 0, kMaxHeads);
    e.topk = r.integer("num_experts_per_tok", qwen2 ? 4 : 8, 1, kMaxHeads);
    e.expert_ffn = r.integer("moe_intermediate_size", qwen2 ? 1408 : 768, 1, kMaxDim);
    if (qwen2) {
      e.shared_ffn = r.integer("shared_expert_intermediate_size", 5632, 1, kMaxDim);
      e.shared_gate = true;
    }
    const std::int64_t step = r.integer("decoder_sparse_step", 1, 1, kMaxLayers);
    std::vector<std::int64_t> dense_only;
    if (r.present("mlp_only_layers")) {
      const nlohmann::json& v = r.json().at("mlp_only_layers");
      bool ok = v.is_array();
      for (std::size_t i = 0; ok && i < v.size(); ++i) {
        ok = v[i].is_number_integer() && v[i].get<std::int64_t>() >= 0;
        if (ok) dense_only.push_back(v[i].get<std::int64_t>());
      }
      if (!ok) r.problem("mlp_only_layers", "expected an array of block indexes (integers >= 0), got " + json_excerpt(v));
      for (std::int64_t i : dense_only)
        if (ok && i >= s.layers) {
          r.problem("mlp_only_layers", fmt::format("block index {} is beyond the model's {} blocks (num_hidden_layers); "
                                                   "expected indexes in [0, {}]", i, s.layers, s.layers - 1));
          break;
        }
    }
    for (std::int64_t i = 0; i < s.layers; ++i)
      sparse[static_cast<std::size_t>(i)] =
          e.experts > 0 && (i + 1) % step == 0 &&
          std::find(dense_only.begin(), dense_only.end(), i) == dense_only.end();
  } else {  // deepseek_v2 / deepseek_v3: blocks from first_k_dense_replace on are sparse
    const bool v3 = type == "deepseek_v3";
    e.layout = MoE::Layout::DeepSeek;
    e.experts = r.integer("n_routed_experts", v3 ? 256 : 64, 1, kMaxHeads);
    // DeepseekV2Config's num_experts_per_tok defaults to None, with which its MoE routes nothing:
    // a V2 config must give it (every released one does: 6).
    const bool topk_given = r.present("num_experts_per_tok");
    e.topk = r.integer("num_experts_per_tok", v3 ? 8 : 1, 1, kMaxHeads);
    if (!v3 && !topk_given)
      r.problem("num_experts_per_tok", "required field is missing (DeepseekV2Config's default None routes no token; "
                                       "DeepSeek-V2 and V2-Lite give 6)");
    e.expert_ffn = r.integer("moe_intermediate_size", v3 ? 2048 : 1407, 1, kMaxDim);
    // n_shared_experts null: no shared expert (DeepseekV2Moe builds one only when it is set).
    const std::int64_t shared = r.integer("n_shared_experts", v3 ? 1 : 2, 0, kMaxHeads);
    const bool no_shared = r.json().contains("n_shared_experts") && r.json().at("n_shared_experts").is_null();
    e.shared_ffn = no_shared ? 0 : shared * e.expert_ffn;
    const std::int64_t first = r.integer("first_k_dense_replace", v3 ? 3 : 0, 0, kMaxLayers);
    for (std::int64_t i = 0; i < s.layers && i < first; ++i) sparse[static_cast<std::size_t>(i)] = false;
  }
  if (e.experts > 0 && e.topk > e.experts)
    r.problem("num_experts_per_tok", fmt::format("expected at most the number of experts ({}), got {}", e.experts, e.topk));
  e.sparse_blocks = std::move(sparse);
}

}  // namespace

const std::vector<std::string>& hf_model_types() {
  static const std::vector<std::string> types = {
      "llama",  "mistral", "qwen2",  "qwen3",   "gemma",     "gemma2",    "gemma3_text", "gemma3",      "phi3",
      "gpt2",   "gpt_neox", "olmo2", "mixtral", "qwen2_moe", "qwen3_moe", "deepseek_v2", "deepseek_v3", "gpt_oss"};
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
  namespace fs = std::filesystem;
  const fs::path p = fs::path(path).lexically_normal();
  if (p.filename() != "config.json") return p.stem().string();
  const fs::path folder = p.parent_path();
  // The Hub's cache: .../models--ORG--NAME/snapshots/REVISION/config.json is NAME.
  const fs::path repo = folder.parent_path().parent_path().filename();
  const std::string cache = repo.string();
  if (folder.parent_path().filename() == "snapshots" && cache.rfind("models--", 0) == 0) {
    const auto last = cache.rfind("--");
    if (last != std::string::npos && last + 2 < cache.size()) return cache.substr(last + 2);
  }
  const std::string name = folder.filename().string();
  return name.empty() || name == "." || name == ".." ? p.stem().string() : name;
}

ModelSpec parse_hf_config(const nlohmann::json& config, const std::string& source, const std::string& pointer,
                          const std::string& name, std::optional<DType> dtype) {
  if (!config.is_object())
    throw InputError(source, pointer, "expected a Hugging Face config object, got " + json_excerpt(config));
  Problems problems;
  ConfigReader top(config, source, pointer, problems);
  const auto type_text = top.optional_string("model_type");
  if (!type_text) {
    if (!top.present("model_type"))
      top.problem("model_type", "required field is missing (the config's model_type, e.g. \"llama\")");
    top.finish();
  }
  std::string type = *type_text;
  if (config.contains("hf_config"))  // a wrapper's key inside the config itself: one of them is lost
    top.problem("hf_config", "a config.json holds no hf_config; give the config itself, or {\"name\", \"hf_config\": "
                             "{...}} without model_type beside hf_config");
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
  bool vision = false;  // Gemma3ForConditionalGeneration's vision tower, not built
  if (type == "gemma3") {
    if (config.contains("text_config") && config.at("text_config").is_object()) {
      text = &config.at("text_config");
      text_pointer = top.path("text_config");
    } else if (config.contains("text_config") && !config.at("text_config").is_null()) {
      top.problem("text_config", "expected an object (Gemma3TextConfig), got " + json_excerpt(config.at("text_config")));
      top.finish();
    }
    vision = true;
    type = "gemma3_text";
  }
  ConfigReader r(*text, source, text_pointer, problems);
  const Defaults d = defaults_of(type);
  const bool gpt2 = type == "gpt2";

  // GPT2Config's attribute_map makes hidden_size, num_hidden_layers, num_attention_heads and
  // max_position_embeddings aliases of n_embd, n_layer, n_head and n_positions.
  const auto key = [&](const char* primary, const char* alias) {
    return gpt2 && !text->contains(primary) && text->contains(alias) ? alias : primary;
  };
  const std::string hidden_key = gpt2 ? key("n_embd", "hidden_size") : "hidden_size";
  const std::string layers_key = gpt2 ? key("n_layer", "num_hidden_layers") : "num_hidden_layers";
  const std::string heads_key = gpt2 ? key("n_head", "num_attention_heads") : "num_attention_heads";
  const std::string ffn_key = gpt2 ? "n_inner" : "intermediate_size";
  TransformerShape s;
  s.hidden = r.integer(hidden_key, d.hidden, 1, kMaxDim);
  s.layers = r.integer(layers_key, d.layers, 1, kMaxLayers);
  s.heads = r.integer(heads_key, d.heads, 1, kMaxHeads);
  s.vocab = r.integer("vocab_size", d.vocab, 1, kMaxDim);
  s.ffn = r.integer(ffn_key, gpt2 ? 4 * s.hidden : d.ffn, 1, kMaxDim);
  const bool has_kv = type != "gpt2" && type != "gpt_neox";  // those two are multi-head only
  // None (null) is num_attention_heads (LlamaConfig, MistralConfig, Qwen2Config, …); absent is
  // the class's default, which for Mistral and Qwen2 is a number of its own.
  const bool kv_null = text->contains("num_key_value_heads") && text->at("num_key_value_heads").is_null();
  s.kv_heads = has_kv ? r.integer("num_key_value_heads", d.kv_heads > 0 && !kv_null ? d.kv_heads : s.heads, 1, kMaxHeads)
                      : s.heads;
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
    s.max_positions = r.integer(key("n_positions", "max_position_embeddings"), 1024, 1, kMaxDim);
  }
  if (type == "gpt_neox") s.rotary_fraction = r.fraction("rotary_pct", 0.25);
  const bool deepseek = type == "deepseek_v2" || type == "deepseek_v3";
  if (is_moe(type)) read_moe(type, r, s);
  if (deepseek) {
    // DeepseekV2/V3Attention (TransformerShape::Mla): every head has its own k and v, so
    // num_key_value_heads shapes nothing; attention_bias puts biases on q_a_proj,
    // kv_a_proj_with_mqa and o_proj only.
    s.layout = TransformerShape::Layout::DeepSeek;
    // q_lora_rank null: q_proj straight from hidden (DeepSeek-V2-Lite).
    s.mla.q_lora_rank = r.integer("q_lora_rank", 1536, 1, kMaxDim);
    if (r.json().contains("q_lora_rank") && r.json().at("q_lora_rank").is_null()) s.mla.q_lora_rank = 0;
    s.mla.kv_lora_rank = r.integer("kv_lora_rank", 512, 1, kMaxDim);
    s.mla.qk_nope_head_dim = r.integer("qk_nope_head_dim", 128, 1, kMaxHeads);
    s.mla.qk_rope_head_dim = r.integer("qk_rope_head_dim", 64, 1, kMaxHeads);
    s.mla.v_head_dim = r.integer("v_head_dim", 128, 1, kMaxHeads);
    s.kv_heads = s.heads;
    s.head_dim = s.mla.qk_head_dim();
    s.qkv_bias = s.o_bias = r.boolean("attention_bias", false);
  }
  if (type == "mixtral" || type == "qwen2_moe" || type == "qwen3_moe") s.qkv_bias = s.o_bias = false;
  if (type == "qwen2_moe") s.qkv_bias = r.boolean("qkv_bias", true);  // Qwen2MoeAttention: q/k/v bias
  if (type == "qwen3_moe") {
    s.qk_norm = TransformerShape::QkNorm::PerHead;
    s.qkv_bias = s.o_bias = r.boolean("attention_bias", false);
  }
  if (type == "gpt_oss") {  // GptOssAttention: biases on q/k/v/o, a sink per head
    s.qkv_bias = s.o_bias = r.boolean("attention_bias", true);
    s.attention_sinks = true;
  }

  // Cross-field checks, as the modeling classes need them: only over values the config gave
  // well (a refused value's fallback would be blamed for what the user never wrote).
  if (problems.empty()) {
    if (s.kv_heads > 0 && s.heads % s.kv_heads != 0)
      r.problem("num_key_value_heads", fmt::format("num_attention_heads ({}) must be divisible by num_key_value_heads "
                                                   "({})", s.heads, s.kv_heads));
    if (s.head_dim == 0 && s.hidden % s.heads != 0)
      r.problem(heads_key, fmt::format("{} ({}) is not divisible by it ({}){}", hidden_key, s.hidden, s.heads,
                                       has_head_dim ? ", and the config gives no head_dim" : ""));
    // The tensors' total, before any is built: at most 1e15 parameters keeps every count exact.
    const char* experts_key = type == "mixtral" || type == "gpt_oss" ? "num_local_experts"
                              : deepseek                            ? "n_routed_experts"
                                                                    : "num_experts";
    const double h = static_cast<double>(s.hidden), f = static_cast<double>(s.ffn);
    const double q = static_cast<double>(s.heads) * static_cast<double>(s.head_dim > 0 ? s.head_dim : s.hidden / s.heads);
    const double kv = q / static_cast<double>(s.heads) * static_cast<double>(s.kv_heads);
    const double layers = static_cast<double>(s.layers);
    const std::vector<std::pair<std::string, double>> parts = {
        {"vocab_size", h * static_cast<double>(s.vocab) * (s.tied_embeddings ? 1 : 2)},
        {gpt2 ? key("n_positions", "max_position_embeddings") : "vocab_size",
         h * static_cast<double>(s.max_positions)},
        {hidden_key, layers * h * (2 * q + 2 * kv)},
        {ffn_key, layers * h * f * (type == "phi3" || s.gated_mlp ? 3 : 2)},
        {experts_key, layers * h * 3 * static_cast<double>(s.moe.experts) * static_cast<double>(s.moe.expert_ffn)},
        {deepseek ? "n_shared_experts" : "shared_expert_intermediate_size",
         layers * h * 3 * static_cast<double>(s.moe.shared_ffn)},
        {"q_lora_rank", layers * static_cast<double>(s.mla.q_lora_rank) * (h + q)},
        {"kv_lora_rank", layers * static_cast<double>(s.mla.kv_lora_rank) *
                             (h + static_cast<double>(s.heads) *
                                      static_cast<double>(s.mla.qk_nope_head_dim + s.mla.v_head_dim))},
        {"v_head_dim", layers * h * static_cast<double>(s.heads) * static_cast<double>(s.mla.v_head_dim)}};
    double total = 0;
    std::size_t largest = 0;
    for (std::size_t i = 0; i < parts.size(); ++i) {
      total += parts[i].second;
      if (parts[i].second > parts[largest].second) largest = i;
    }
    // Every routed expert of every MoE block is its own tensors (and backward tasks): at most
    // kMaxExpertInstances of them (DeepSeek-V3 has 58 × 256 = 14,848).
    const double instances = static_cast<double>(s.moe.experts) *
                             static_cast<double>(std::count(s.moe.sparse_blocks.begin(), s.moe.sparse_blocks.end(), true));
    if (instances > kMaxExpertInstances)
      r.problem(experts_key, fmt::format("{} experts on each of {:.0f} MoE blocks are {:.3g} expert modules; expected at "
                                         "most {:g} (each is tensors and tasks of its own)",
                                         s.moe.experts, instances / static_cast<double>(s.moe.experts), instances,
                                         kMaxExpertInstances));
    if (total > kMaxParams)
      r.problem(parts[largest].first, fmt::format("this config has about {:.3g} parameters ({:.3g} from {}); expected at "
                                                  "most {:g}", total, parts[largest].second, parts[largest].first,
                                                  kMaxParams));
  }

  // The checkpoint's storage dtype (torch_dtype in transformers v4, dtype in v5) is not the
  // training dtype: Gemma 2 and OLMo 2 ship float32 configs and train in bf16 mixed precision.
  // The tensors are bf16, as for every language model here, unless precision.param_dtype says.
  std::optional<std::string> stored;
  for (const char* dtype_key : {"torch_dtype", "dtype"})
    if (top.present(dtype_key) && config.at(dtype_key).is_string()) {
      stored = config.at(dtype_key).get<std::string>();
      break;
    }
  // The context the config declares (max_position_embeddings; ModelSpec::context_length).
  const std::int64_t context = gpt2 ? 0 : r.integer("max_position_embeddings", d.context, 1, kMaxDim);
  // Sliding-window attention (TransformerShape::attention_window): its width is sliding_window
  // (MistralConfig, Gemma2Config and Gemma3TextConfig default to 4096; an explicit null, as in
  // Mistral-7B-v0.3, is none; Qwen2 / Qwen3 use theirs only with use_sliding_window). The blocks
  // that use it: the config's layer_types when given ("sliding_attention" / "full_attention"
  // per block); else Mistral every block, Gemma 2 the even ones (Gemma2Attention: layer_idx % 2
  // == 0), Gemma 3 all but every sliding_window_pattern-th ((i + 1) % pattern != 0, default 6),
  // Qwen2 / Qwen3 those from max_window_layers on (default 28).
  const bool null_window = text->contains("sliding_window") && text->at("sliding_window").is_null();
  const bool qwen = type == "qwen2" || type == "qwen3" || type == "qwen2_moe" || type == "qwen3_moe";
  std::optional<std::int64_t> width;
  if ((type == "mistral" || type == "gemma2" || type == "gemma3_text") && !null_window)
    width = r.integer("sliding_window", 4096, 1, kMaxDim);
  else if (type == "phi3" || type == "mixtral")  // None by default; Phi-3-mini-4k sets 2047, on every block
    width = r.optional_integer("sliding_window", 1, kMaxDim);
  else if (type == "gpt_oss" && !null_window)  // GptOssConfig: 128 on the layer_types' sliding blocks
    width = r.integer("sliding_window", 128, 1, kMaxDim);
  else if (qwen && r.boolean("use_sliding_window", false) && !null_window)
    width = r.integer("sliding_window", 4096, 1, kMaxDim);
  std::vector<bool> sliding_block(static_cast<std::size_t>(s.layers), false);
  if (width) {
    const std::int64_t pattern = type == "gemma3_text" ? r.integer("sliding_window_pattern", 6, 1, kMaxLayers) : 1;
    const std::int64_t first = qwen ? r.integer("max_window_layers", 28, 0, kMaxLayers) : 0;
    for (std::int64_t i = 0; i < s.layers; ++i)
      // gpt-oss's default layer_types alternate sliding and full, sliding first.
      sliding_block[static_cast<std::size_t>(i)] = type == "gemma2" || type == "gpt_oss" ? i % 2 == 0
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
  // The name: the caller's; else a bare config's own "name" (a wrapper-like key stepsim accepts
  // inline) or the last part of _name_or_path; else the model_type. Control characters become
  // '?' (a name is printed in every report's first line).
  std::string model_name = name;
  const auto own_name = top.optional_string("name");
  const auto name_or_path = top.optional_string("_name_or_path");
  const auto own_source = top.optional_string("source");
  if (model_name.empty() && own_name) model_name = *own_name;
  if (model_name.empty() && name_or_path)
    model_name = std::filesystem::path(*name_or_path).lexically_normal().filename().string();
  if (model_name.empty()) model_name = type;
  for (char& c : model_name)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  r.typos();
  top.finish();
  s.dtype = dtype.value_or(DType::BF16);
  if (stored && *stored != "bfloat16")
    notes.push_back(fmt::format("checkpoint stored in {} (torch_dtype); trained in {} (precision.param_dtype)",
                                excerpt(*stored), dtype_name(s.dtype)));
  const auto windowed = std::count(sliding_block.begin(), sliding_block.end(), true);
  if (windowed > 0) {
    for (bool b : sliding_block) s.attention_window.push_back(b ? *width : 0);
    notes.push_back(fmt::format("sliding_window {} on {} of {} blocks (a flash kernel skips the masked keys)", *width,
                                windowed, s.layers));
  }
  // What the config gives that the step does not price.
  std::vector<std::string> unpriced;
  if (vision)
    unpriced.push_back("text stack only: the vision tower and projector of model_type gemma3 are not simulated "
                       "(neither their parameters nor their compute)");
  // DeepSeek-V3's multi-token-prediction module: in the checkpoint, not in transformers' model
  // (it ignores model.layers.61.*; models.md §1.10), and trained by DeepSeek beside the main model.
  if (deepseek) {
    const auto mtp = r.optional_integer("num_nextn_predict_layers", 0, kMaxLayers);
    if (mtp && *mtp > 0)
      unpriced.push_back(fmt::format("num_nextn_predict_layers {}: the multi-token-prediction module (one more block "
                                     "and head per predicted token in DeepSeek's training) is not in transformers' "
                                     "model and not simulated", *mtp));
  }
  // A quantized checkpoint (gpt-oss's MXFP4 experts, FP8 DeepSeek-V3): how it is stored.
  if (top.present("quantization_config"))
    unpriced.push_back(fmt::format("quantization_config: the checkpoint's quantized storage is not simulated; the "
                                   "tensors train in {} (precision.param_dtype)", dtype_name(dtype.value_or(DType::BF16))));
  // Gemma2Config's final_logit_softcapping (30.0 by default; null is none) is priced.
  s.logit_softcap =
      type == "gemma2" && !(text->contains("final_logit_softcapping") && text->at("final_logit_softcapping").is_null());
  notes.insert(notes.end(), unpriced.begin(), unpriced.end());

  ModelSpec m = make_transformer(model_name, s);
  m.source = fmt::format("Hugging Face config.json (model_type {}): {} {}, {} {}, {} {}, {} {}, num_key_value_heads {}, "
                         "head_dim {}, vocab_size {}, tie_word_embeddings {}, {}",
                         type, gpt2 ? "n_embd" : "hidden_size", s.hidden, gpt2 ? "n_inner" : "intermediate_size", s.ffn,
                         gpt2 ? "n_layer" : "num_hidden_layers", s.layers, gpt2 ? "n_head" : "num_attention_heads",
                         s.heads, s.kv_heads, s.q_dim() / s.heads, s.vocab, s.tied_embeddings, dtype_name(s.dtype));
  if (s.moe.experts > 0) {
    const auto sparse = std::count(s.moe.sparse_blocks.begin(), s.moe.sparse_blocks.end(), true);
    m.source += fmt::format("; {} routed experts of width {}, {} per token, on {} of {} blocks{}", s.moe.experts,
                            s.moe.expert_ffn, s.moe.topk, sparse, s.layers,
                            s.moe.shared_ffn > 0 ? fmt::format(", a shared expert of width {}", s.moe.shared_ffn) : "");
  }
  if (s.uses_mla())
    m.source += fmt::format("; MLA: q_lora_rank {}, kv_lora_rank {}, qk_nope_head_dim {}, qk_rope_head_dim {}, "
                            "v_head_dim {}", s.mla.q_lora_rank, s.mla.kv_lora_rank, s.mla.qk_nope_head_dim,
                            s.mla.qk_rope_head_dim, s.mla.v_head_dim);
  for (const auto& n : notes) m.source += "; " + n;
  if (own_source && !own_source->empty()) m.source = *own_source + "; " + m.source;
  m.hf_model_type = type;
  m.not_modelled = unpriced;
  m.context_length = context;
  return m;
}

}  // namespace stepsim::models
