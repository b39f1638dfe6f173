// SPDX-License-Identifier: Apache-2.0
// Loading models: catalog names, user JSON files, or inline objects.
#pragma once

#include "models/model_spec.hpp"

#include <nlohmann/json_fwd.hpp>

#include <string>
#include <vector>

namespace stepsim::models {

/// Names of the built-in catalog models (models/catalog/*.json, compiled in).
std::vector<std::string> builtin_model_names();

/// Resolves a catalog name or a path to a JSON file ('/' inside or ".json" suffix).
/// @throws InputError naming the reference and listing the catalog, or any error of the file.
ModelSpec load_model(const std::string& ref, const std::string& source = "",
                     const std::string& pointer = "");

/// Parses a model description (forms "mlp", "transformer", "layers") found at `pointer` in
/// `source`. @throws InputError for any missing, invalid or unknown field.
ModelSpec parse_model(const nlohmann::json& doc, const std::string& source,
                      const std::string& pointer);

/// "bf16" etc. to DType. @throws InputError{source, pointer, ...} listing the valid names.
DType parse_dtype(const std::string& text, const std::string& source, const std::string& pointer);

}  // namespace stepsim::models
