// SPDX-License-Identifier: Apache-2.0
// Path-tracking JSON reader: typed, range-checked field access whose every error names the
// file, the JSON pointer, the bad value and the expectation; unknown keys are rejected with
// "did you mean". The only support file that sees nlohmann/json (style.md §3.5).
#pragma once

#include "sim/support/units.hpp"

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace stepsim {

/// Range constraint for numbers read through JsonReader.
enum class Check {
  Any,          ///< any finite number
  Positive,     ///< > 0
  NonNegative,  ///< ≥ 0
  Fraction,     ///< in (0, 1]
};

/// Reads fields of one JSON object. Every accessor records the key as known, so `finish()`
/// can reject the keys nobody asked for. Non-owning: the JSON document must outlive it.
///
/// All accessors throw InputError{source, "/path/key", "expected ..., got ..."}.
class JsonReader {
 public:
  /// @param node     the JSON value, must be an object (else InputError)
  /// @param source   file name or "--set" for messages
  /// @param pointer  JSON pointer of `node` ("" for the document root)
  JsonReader(const nlohmann::json& node, std::string source, std::string pointer);

  const std::string& source() const { return source_; }
  const std::string& pointer() const { return pointer_; }
  /// JSON pointer of `key` under this object.
  std::string path(std::string_view key) const;

  /// True when `key` is present (and marks it known).
  bool has(std::string_view key) const;

  /// Required / defaulted number. With a dimension, strings with units are accepted
  /// ("25MiB", "400GB/s"); a bare number is in the field's SI unit. Numbers beyond
  /// kMaxMagnitude (1e24) are refused whatever the check.
  double number(std::string_view key, Check check = Check::Any,
                std::optional<Dimension> dim = std::nullopt) const;
  double number_or(std::string_view key, double fallback, Check check = Check::Any,
                   std::optional<Dimension> dim = std::nullopt) const;
  /// Integer in [min, max]; JSON numbers with a fractional part are rejected.
  std::int64_t integer(std::string_view key, std::int64_t min, std::int64_t max) const;
  std::int64_t integer_or(std::string_view key, std::int64_t fallback, std::int64_t min,
                          std::int64_t max) const;
  std::string string(std::string_view key) const;
  std::string string_or(std::string_view key, std::string fallback) const;
  /// A string that must be one of `valid` (message lists them and suggests the closest).
  std::string choice_or(std::string_view key, std::string fallback,
                        const std::vector<std::string>& valid) const;
  bool boolean_or(std::string_view key, bool fallback) const;
  /// True when the key holds a string (used for fields that are a name or an inline object).
  bool is_string(std::string_view key) const;
  /// True when the key holds a boolean.
  bool is_boolean(std::string_view key) const;
  /// The JSON value of `key` (required), for fields read by hand (a name or an inline object).
  const nlohmann::json& value(std::string_view key) const;
  /// Nested object (required).
  JsonReader object(std::string_view key) const;
  /// Nested object if present.
  std::optional<JsonReader> optional_object(std::string_view key) const;
  /// Array of objects (required, may be empty unless `non_empty`).
  std::vector<JsonReader> objects(std::string_view key, bool non_empty) const;
  /// Array of integers in [min, max].
  std::vector<std::int64_t> integers(std::string_view key, std::int64_t min,
                                     std::int64_t max) const;
  /// Array of numbers, each read as number() reads one (the element's path in messages).
  std::vector<double> numbers(std::string_view key, Check check = Check::Any,
                              std::optional<Dimension> dim = std::nullopt) const;

  /// Rejects every key present in the object that no accessor asked for:
  /// "unknown key 'gpu_per_node' (did you mean 'gpus_per_node'?); known keys: ...".
  void finish() const;

  /// Throws InputError for `key` with `message` (use for cross-field checks).
  [[noreturn]] void fail(std::string_view key, const std::string& message) const;

 private:
  const nlohmann::json* find(std::string_view key) const;
  const nlohmann::json& require(std::string_view key) const;

  const nlohmann::json* node_;
  std::string source_;
  std::string pointer_;
  mutable std::vector<std::string> known_;
};

/// Compact one-line rendering of a JSON value for messages, truncated to ~60 characters.
std::string json_excerpt(const nlohmann::json& value);

/// The most bytes read_json_file reads (64 MiB): no scenario, profile, model or measured
/// timeline comes close.
inline constexpr std::uintmax_t kMaxJsonBytes = std::uintmax_t{64} << 20;

/// Reads (through read_input_file, expecting "a JSON file", at most kMaxJsonBytes) and parses
/// a JSON file; the file is noted as an input.
/// @throws InputError when the file is missing, is a directory or not a regular file (FIFO,
///         device, socket), cannot be read, is larger than 64 MiB, is empty, or is not valid
///         JSON ("FILE:LINE:COL: JSON syntax error: ...").
nlohmann::json read_json_file(const std::string& path);

/// Parses JSON text; `source` names it in errors (same messages as read_json_file).
nlohmann::json parse_json_text(const std::string& text, const std::string& source);

/// Reads the VALUE of an override "PATH=VALUE" (--set, --vary) as apply_override does: JSON
/// where it parses (numbers, booleans, arrays, objects, quoted strings), else a plain string.
/// @param dotted  the PATH, for messages
/// @param flag    the flag for messages ("--set", "--vary")
/// @throws InputError when VALUE is not valid UTF-8, is nested deeper than files may be
///         (256 levels), has a duplicate key in one object, or holds a number outside the
///         range of a double.
nlohmann::json parse_override_value(const std::string& dotted, const std::string& text,
                                    const std::string& flag);

/// Applies an override "a.b.c=VALUE" to `doc` before validation. VALUE is read as JSON where
/// it parses (numbers, booleans, arrays, objects, quoted strings), else as a plain string.
/// Intermediate objects are created as needed.
/// @param flag  the flag name for messages ("--set")
/// @throws InputError when the assignment has no '=' or an empty path, a path component
///         crosses a non-object value, the path is not valid UTF-8, or VALUE is refused by
///         parse_override_value.
void apply_override(nlohmann::json& doc, const std::string& assignment, const std::string& flag);

}  // namespace stepsim
