// SPDX-License-Identifier: Apache-2.0
// Calibration overlay files (schema "stepsim.calibration/1"): read with the path-tracking
// JsonReader, written as stable, human-readable JSON.
#pragma once

#include "hardware/calibration.hpp"

#include <nlohmann/json_fwd.hpp>

#include <string>

namespace stepsim::hardware {

/// Reads an overlay file written by calibration_json() (or by hand).
/// @throws InputError naming the file, the JSON pointer, the bad value and the expectation
///         (missing/unknown keys with "did you mean", factors ≤ 0, non-contiguous segments).
CalibrationOverlay read_calibration(const std::string& path);

/// Parses an overlay document read from `source`. Same errors as read_calibration().
CalibrationOverlay parse_calibration(const nlohmann::json& doc, const std::string& source);

/// The overlay as JSON text (2-space indent, trailing newline); read_calibration() reads it
/// back to an equal overlay (name aside, which becomes the file path).
std::string calibration_json(const CalibrationOverlay& overlay);

}  // namespace stepsim::hardware
