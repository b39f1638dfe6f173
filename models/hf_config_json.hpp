// SPDX-License-Identifier: Apache-2.0
// A Hugging Face config.json as a model (issue 16 item 1): the parameter tensors the
// `transformers` model class registers for that config, in its order, and the compute of each
// block (make_transformer). The rules per model_type are in shared/reference/models.md §1.
#pragma once

#include "models/model_spec.hpp"

#include <nlohmann/json_fwd.hpp>

#include <optional>
#include <string>
#include <vector>

namespace stepsim::models {

/// The model_types stepsim builds from a config.json: llama (Llama 2 / 3 / 3.1 / 3.2 / 3.3),
/// mistral, qwen2, qwen3, gemma, gemma2, gemma3_text (and gemma3, whose text_config is read),
/// phi3 (Phi-3, Phi-4), gpt2, gpt_neox, olmo2, and the mixture-of-experts ones
/// (hf_moe_model_types()).
const std::vector<std::string>& hf_model_types();

/// The mixture-of-experts model_types (TransformerShape::MoE): mixtral, qwen2_moe, qwen3_moe,
/// deepseek_v2, deepseek_v3 (with multi-head latent attention, TransformerShape::Mla), gpt_oss.
const std::vector<std::string>& hf_moe_model_types();

/// True when `doc` reads as a Hugging Face config rather than a stepsim model description: an
/// object with a "model_type" key and no "kind".
bool is_hf_config(const nlohmann::json& doc);

/// The model name a config file's path gives: the folder's name for ".../NAME/config.json",
/// else the file name without ".json".
std::string hf_name_from_path(const std::string& path);

/// Builds the model a config.json describes.
///
/// Keys missing (or null) take the defaults of the model_type's `transformers` configuration
/// class (LlamaConfig, Qwen2Config, GPT2Config, …); num_key_value_heads defaults to
/// num_attention_heads and head_dim to hidden_size / num_attention_heads where the class leaves
/// them None. Keys that do not change the tensors or the step (token ids, rope settings, eps,
/// architectures, …) are ignored; an unknown key that is a near miss of one that took its default
/// is a problem (a typo would change the model silently). Tensors are held in `dtype` when given
/// (a scenario's precision.param_dtype), else bf16: the config's torch_dtype is how the
/// checkpoint is stored, not how it trains, and the source notes it when it is not bfloat16.
/// Sliding-window attention sets the blocks' LayerGemm::window (rules in the .cpp); GPT-2's
/// n_positions becomes ModelSpec::learned_positions, max_position_embeddings
/// ModelSpec::context_length; Gemma 2's final_logit_softcapping prices its pass over the logits
/// (TransformerShape::logit_softcap); what is not simulated (Gemma 3's vision tower) goes to
/// ModelSpec::not_modelled.
///
/// @param config   the config object (a file's root, or an inline "hf_config")
/// @param source   file name for messages
/// @param pointer  JSON pointer of `config` in `source`
/// @param name     the model's name; "" takes the config's _name_or_path, else its model_type
/// @throws InputError naming `source` and the JSON path of each problem — every problem of the
///         config in one line (a wrong type, a size out of range, heads not divisible by
///         num_key_value_heads, num_experts_per_tok above the experts, or an unknown
///         model_type, which lists the supported ones).
ModelSpec parse_hf_config(const nlohmann::json& config, const std::string& source, const std::string& pointer,
                          const std::string& name, std::optional<DType> dtype = std::nullopt);

}  // namespace stepsim::models
