// SPDX-License-Identifier: Apache-2.0
// Loading hardware profiles: built-in catalog names or user JSON files.
#pragma once

#include "hardware/hardware_profile.hpp"

#include <nlohmann/json_fwd.hpp>

namespace stepsim {
class JsonReader;
}

#include <string>
#include <vector>

namespace stepsim::hardware {

/// Names of the built-in profiles (hardware/profiles/*.json, compiled into the binary).
std::vector<std::string> builtin_profile_names();

/// Names of the built-in network presets (hardware/networks/*.json, compiled in).
std::vector<std::string> builtin_network_names();

/// The built-in network preset `name` (NetworkPreset).
/// @throws InputError at (`source`, `pointer`) naming the known presets when there is none.
NetworkPreset load_network_preset(const std::string& name, const std::string& source = "",
                                  const std::string& pointer = "");

/// `hw` on the built-in network preset `name` given by a flag (`--network`): as
/// apply_network_preset(hw, load_network_preset(name)).
/// @throws InputError naming `flag` when `name` is empty or unknown, or `hw` is a torus (no NICs).
void apply_network_flag(HardwareProfile& hw, const std::string& name, const std::string& flag);

/// Resolves `ref`: a built-in profile name, or a path to a JSON file (anything containing
/// '/' or ending in ".json").
/// @param source, pointer  where `ref` was written, for messages
/// @throws InputError naming the reference and listing the known profiles, or any error of
///         the profile file itself (file, JSON path, bad value, expectation).
HardwareProfile load_profile(const std::string& ref, const std::string& source = "",
                             const std::string& pointer = "");

/// The JSON document of the profile `ref` names (as load_profile resolves it), unparsed.
/// @throws InputError as load_profile for an unknown name or an unreadable file.
nlohmann::json profile_document(const std::string& ref, const std::string& source = "", const std::string& pointer = "");

/// An inline profile over a base (issue 20 item 2): `doc` = {"base": REF, FIELD: VALUE, ...}
/// at `pointer` of `source`. The base's document (profile_document(base_ref)) with doc's other
/// fields merged over it (RFC 7396 merge patch: an object merges key by key, any other value
/// replaces, null removes), read as parse_profile reads a file, so every field check holds and
/// an unknown key is named at its path under `pointer`. The base is read whole first (an error
/// in it names its file); a base that is itself over a base is refused (one level). The name
/// stays the base's unless doc gives one; HardwareProfile::base is the base's name and
/// HardwareProfile::overridden the dotted paths whose values doc changed.
/// @throws InputError for an unknown, invalid or chained base, or any invalid merged field.
HardwareProfile parse_profile_over_base(const nlohmann::json& doc, const std::string& base_ref,
                                        const std::string& source, const std::string& pointer);

/// Parses a profile found at JSON pointer `pointer` of a document read from `source`. A
/// top-level `"network": NAME` applies that preset (apply_network_preset) after inter_node.
/// @throws InputError for a missing/invalid/unknown field.
HardwareProfile parse_profile(const nlohmann::json& doc, const std::string& source,
                              const std::string& pointer = "");

/// Reads a GEMM curve object (hardware/gemm_model.hpp): `max_efficiency` (required, (0, 1]),
/// `overhead_s` (seconds ≥ 0 and < 1, default 0), `tile_m`, `tile_n` (default 128), `sms`
/// (default `default_sms`; required when that is 0). Used by profiles (`compute.gemm_curve`)
/// and calibration overlays (`gemm`). The caller calls finish() on `r`.
/// @throws InputError naming the source, JSON path, value and expectation.
GemmCurve read_gemm_curve(const JsonReader& r, int default_sms);

}  // namespace stepsim::hardware
