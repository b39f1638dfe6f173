// SPDX-License-Identifier: Apache-2.0
// Loading models: catalog names, user JSON files, or inline objects.
#pragma once

#include "models/model_spec.hpp"

#include <nlohmann/json_fwd.hpp>

#include <string>
#include <optional>
#include <vector>

namespace stepsim::models {

/// Names of the built-in catalog models (models/catalog/*.json, compiled in).
std::vector<std::string> builtin_model_names();

/// Resolves a catalog name, a path to a JSON file ('/' inside or ".json" suffix) — a stepsim
/// model description or a Hugging Face config.json (models/hf_config_json.hpp), named after its
/// folder — or a folder holding a config.json.
/// @throws InputError naming the reference and listing the catalog, or any error of the file.
/// `dtype`: as parse_model's.
ModelSpec load_model(const std::string& ref, const std::string& source = "",
                     const std::string& pointer = "", std::optional<DType> dtype = std::nullopt);

/// Parses a model description (forms "mlp", "transformer", "resnet", "layers") found at
/// `pointer` in `source`, or a Hugging Face config (an object with "model_type" and no "kind",
/// or {"hf_config": {...}, "name": optional, "source": optional}; parse_hf_config). `dtype`, when given, replaces the description's "dtype" (a scenario's
/// precision.param_dtype): every tensor is held in it and, for the shape-built forms (mlp,
/// transformer), the activations too; a "layers" model gives its bytes itself, so only its
/// parameters change. @throws InputError for any missing, invalid or unknown field.
ModelSpec parse_model(const nlohmann::json& doc, const std::string& source,
                      const std::string& pointer, std::optional<DType> dtype = std::nullopt);

/// "bf16" etc. (or PyTorch's "bfloat16", "float16", "float32", "float8_e4m3fn") to DType. @throws InputError{source, pointer, ...} listing the valid names.
/// stepsim's dtype names in DType order: fp32, bf16, fp16, fp8.
const std::vector<std::string>& dtype_names();

DType parse_dtype(const std::string& text, const std::string& source, const std::string& pointer);

}  // namespace stepsim::models
