// SPDX-License-Identifier: Apache-2.0
// Path-tracking JSON reader and the JSON file loader.
#include "sim/support/json_reader.hpp"
#include "sim/support/input_file.hpp"

#include "sim/support/error.hpp"
#include "sim/support/names.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <unordered_set>

namespace stepsim {

namespace {

std::string escape_pointer_token(std::string_view key) {
  std::string out;
  for (char c : key) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out += c;
  }
  return out;
}

std::string type_name(const nlohmann::json& v) {
  if (v.is_number()) return "a number";
  if (v.is_string()) return "a string";
  if (v.is_boolean()) return "a boolean";
  if (v.is_array()) return "an array";
  if (v.is_object()) return "an object";
  return "null";
}

std::string check_text(Check check) {
  switch (check) {
    case Check::Any: return "a finite number";
    case Check::Positive: return "a positive number";
    case Check::NonNegative: return "a non-negative number";
    case Check::Fraction: return "a number in (0, 1]";
  }
  return "a number";
}

}  // namespace

std::string json_excerpt(const nlohmann::json& value) {
  return excerpt(value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), 60);
}

JsonReader::JsonReader(const nlohmann::json& node, std::string source, std::string pointer)
    : node_(&node), source_(std::move(source)), pointer_(std::move(pointer)) {
  if (!node.is_object())
    throw InputError(source_, pointer_.empty() ? "/" : pointer_,
                     fmt::format("expected an object, got {} {}", type_name(node),
                                 json_excerpt(node)));
}

std::string JsonReader::path(std::string_view key) const {
  return pointer_ + "/" + escape_pointer_token(key);
}

const nlohmann::json* JsonReader::find(std::string_view key) const {
  if (std::find(known_.begin(), known_.end(), key) == known_.end()) known_.emplace_back(key);
  const auto it = node_->find(std::string(key));
  if (it == node_->end() || it->is_null()) return nullptr;
  return &*it;
}

const nlohmann::json& JsonReader::require(std::string_view key) const {
  const nlohmann::json* v = find(key);
  if (!v) throw InputError(source_, path(key), "required field is missing");
  return *v;
}

void JsonReader::fail(std::string_view key, const std::string& message) const {
  throw InputError(source_, path(key), message);
}

bool JsonReader::has(std::string_view key) const { return find(key) != nullptr; }

const nlohmann::json& JsonReader::value(std::string_view key) const { return require(key); }

bool JsonReader::is_string(std::string_view key) const {
  const nlohmann::json* v = find(key);
  return v && v->is_string();
}

bool JsonReader::is_boolean(std::string_view key) const {
  const nlohmann::json* v = find(key);
  return v && v->is_boolean();
}

double JsonReader::number(std::string_view key, Check check, std::optional<Dimension> dim) const {
  const nlohmann::json& v = require(key);
  double x = 0;
  std::string unit_hint = dim ? fmt::format(" ({})", dimension_name(*dim)) : "";
  if (v.is_number()) {
    x = v.get<double>();
  } else if (v.is_string() && dim) {
    try {
      x = parse_quantity(v.get<std::string>(), *dim);
    } catch (const UnitError& e) {
      fail(key, e.what());
    }
  } else {
    fail(key, fmt::format("expected {}{}, got {} {}", check_text(check), unit_hint, type_name(v),
                          json_excerpt(v)));
  }
  const bool ok = std::isfinite(x) && (check != Check::Positive || x > 0) &&
                  (check != Check::NonNegative || x >= 0) &&
                  (check != Check::Fraction || (x > 0 && x <= 1));
  if (!ok) fail(key, fmt::format("expected {}{}, got {}", check_text(check), unit_hint, json_excerpt(v)));
  if (std::fabs(x) > kMaxMagnitude)  // a 300-digit figure: finite, but beyond anything modelled
    fail(key, fmt::format("expected {}{} of at most {:g} in magnitude, got {}", check_text(check), unit_hint,
                          kMaxMagnitude, json_excerpt(v)));
  return x + 0.0;  // -0 becomes 0, so reports never print "-0"
}

double JsonReader::number_or(std::string_view key, double fallback, Check check,
                             std::optional<Dimension> dim) const {
  return find(key) ? number(key, check, dim) : fallback;
}

std::int64_t JsonReader::integer(std::string_view key, std::int64_t min, std::int64_t max) const {
  const nlohmann::json& v = require(key);
  const std::string expect = max == INT64_MAX ? fmt::format("an integer ≥ {}", min)
                                              : fmt::format("an integer in [{}, {}]", min, max);
  if (v.is_number_integer()) {
    // Unsigned values above INT64_MAX are out of range by construction.
    if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(max))
      fail(key, fmt::format("expected {}, got {}", expect, json_excerpt(v)));
    const auto x = v.get<std::int64_t>();
    if (x < min || x > max) fail(key, fmt::format("expected {}, got {}", expect, json_excerpt(v)));
    return x;
  }
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (std::isfinite(d) && d == std::floor(d) && d >= static_cast<double>(min) &&
        d <= static_cast<double>(max) && std::fabs(d) < 9.0e15)
      return static_cast<std::int64_t>(d);
  }
  fail(key, fmt::format("expected {}, got {}", expect, json_excerpt(v)));
}

std::int64_t JsonReader::integer_or(std::string_view key, std::int64_t fallback, std::int64_t min,
                                    std::int64_t max) const {
  return find(key) ? integer(key, min, max) : fallback;
}

std::string JsonReader::string(std::string_view key) const {
  const nlohmann::json& v = require(key);
  if (!v.is_string())
    fail(key, fmt::format("expected a string, got {} {}", type_name(v), json_excerpt(v)));
  return v.get<std::string>();
}

std::string JsonReader::string_or(std::string_view key, std::string fallback) const {
  return find(key) ? string(key) : fallback;
}

std::string JsonReader::choice_or(std::string_view key, std::string fallback,
                                  const std::vector<std::string>& valid) const {
  if (!find(key)) return fallback;
  std::string s = string(key);
  if (std::find(valid.begin(), valid.end(), s) == valid.end())
    fail(key, fmt::format("unknown value '{}'; valid values: {}{}", s, join_names(valid),
                          did_you_mean(s, valid)));
  return s;
}

bool JsonReader::boolean_or(std::string_view key, bool fallback) const {
  const nlohmann::json* v = find(key);
  if (!v) return fallback;
  if (!v->is_boolean())
    fail(key, fmt::format("expected true or false, got {} {}", type_name(*v), json_excerpt(*v)));
  return v->get<bool>();
}

JsonReader JsonReader::object(std::string_view key) const {
  return JsonReader(require(key), source_, path(key));
}

std::optional<JsonReader> JsonReader::optional_object(std::string_view key) const {
  const nlohmann::json* v = find(key);
  if (!v) return std::nullopt;
  return JsonReader(*v, source_, path(key));
}

std::vector<JsonReader> JsonReader::objects(std::string_view key, bool non_empty) const {
  const nlohmann::json& v = require(key);
  if (!v.is_array())
    fail(key, fmt::format("expected an array of objects, got {} {}", type_name(v), json_excerpt(v)));
  if (non_empty && v.empty()) fail(key, "expected a non-empty array, got []");
  std::vector<JsonReader> out;
  out.reserve(v.size());
  for (std::size_t i = 0; i < v.size(); ++i)
    out.emplace_back(v[i], source_, fmt::format("{}/{}", path(key), i));
  return out;
}

namespace {

// The elements of the array `v` at `key` of `self`, each read by `read(reader, index)` from a
// one-key wrapper object, so messages name the element's own path (".../key/3").
template <class T, class Read>
std::vector<T> read_array(const JsonReader& self, const nlohmann::json& v, std::string_view key, const char* what,
                          Read read) {
  if (!v.is_array()) self.fail(key, fmt::format("expected an array of {}, got {} {}", what, type_name(v), json_excerpt(v)));
  std::vector<T> out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    nlohmann::json wrapper = nlohmann::json::object();
    wrapper[std::to_string(i)] = v[i];
    const JsonReader r(wrapper, self.source(), self.path(key));
    out.push_back(read(r, std::to_string(i)));
  }
  return out;
}

}  // namespace

std::vector<std::int64_t> JsonReader::integers(std::string_view key, std::int64_t min,
                                               std::int64_t max) const {
  return read_array<std::int64_t>(*this, require(key), key, "integers",
                                  [&](const JsonReader& r, const std::string& i) { return r.integer(i, min, max); });
}

std::vector<double> JsonReader::numbers(std::string_view key, Check check, std::optional<Dimension> dim) const {
  return read_array<double>(*this, require(key), key, "numbers",
                            [&](const JsonReader& r, const std::string& i) { return r.number(i, check, dim); });
}

void JsonReader::finish() const {
  for (const auto& [k, v] : node_->items()) {
    if (std::find(known_.begin(), known_.end(), k) != known_.end()) continue;
    throw InputError(source_, path(k),
                     fmt::format("unknown key '{}'{}; known keys here: {}", k,
                                 did_you_mean(k, known_), join_names(known_)));
  }
}

namespace {

constexpr std::size_t kMaxNesting = 256;

// Deepest nesting of arrays/objects in `text` (strings skipped). nlohmann's parser and dump()
// recurse, so absurd nesting must be refused before either runs.
std::size_t nesting_depth(const std::string& text) {
  std::size_t depth = 0, max_depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      max_depth = std::max(max_depth, ++depth);
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return max_depth;
}


// Parses `text`, refusing duplicate keys (nlohmann keeps the last one silently, which would
// hide a typo). Syntax errors escape as nlohmann::json::parse_error; the caller checked the
// nesting depth.
nlohmann::json parse_unique_keys(const std::string& text, const std::string& source) {
  std::vector<std::unordered_set<std::string>> keys;  // per open object: a hash set, so a file of
                                                       // millions of keys parses in linear time
  std::string duplicate;
  const auto check_keys = [&](int /*depth*/, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    using E = nlohmann::json::parse_event_t;
    if (event == E::object_start) keys.emplace_back();
    else if (event == E::object_end && !keys.empty()) keys.pop_back();
    else if (event == E::key && !keys.empty() && duplicate.empty()) {
      if (!keys.back().insert(parsed.get<std::string>()).second) duplicate = parsed.get<std::string>();
    }
    return true;
  };
  nlohmann::json doc = nlohmann::json::parse(text, check_keys);
  if (!duplicate.empty())
    throw InputError(source, "", fmt::format("duplicate key '{}' in one JSON object (which one was meant?)", duplicate));
  return doc;
}

}  // namespace

namespace {

// "SOURCE:LINE:COL" of byte `offset` of `text`.
std::string source_at(const std::string& text, const std::string& source, std::size_t offset) {
  std::size_t line = 1, col = 1;
  for (std::size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return fmt::format("{}:{}:{}", source, line, col);
}

}  // namespace

nlohmann::json parse_json_text(const std::string& text, const std::string& source) {
  if (text.find_first_not_of(" \t\r\n") == std::string::npos)
    throw InputError(source, "", "file is empty (expected a JSON object)");
  if (nesting_depth(text) > kMaxNesting)
    throw InputError(source, "", fmt::format("JSON nested deeper than {} levels; expected a scenario, "
                                             "profile or model description", kMaxNesting));
  try {
    nlohmann::json doc = parse_unique_keys(text, source);
    // The JSON parser stops at a NUL byte: whatever follows would be ignored silently.
    if (const auto nul = text.find('\0'); nul != std::string::npos)
      throw InputError(source_at(text, source, nul), "", "JSON syntax error: a NUL byte; expected text");
    return doc;
  } catch (const nlohmann::json::parse_error& e) {
    const std::size_t offset = std::min<std::size_t>(e.byte == 0 ? 0 : e.byte - 1, text.size());
    std::string what = e.what();
    // nlohmann: "[json.exception.parse_error.101] parse error at line 1, column 2: syntax error
    // while parsing value - invalid literal; last read: 'x'" — keep the part after "error while".
    const auto pos = what.find("syntax error while parsing");
    std::string detail = pos == std::string::npos ? what : what.substr(pos + 13);
    throw InputError(source_at(text, source, offset), "",
                     fmt::format("JSON syntax error: {}", detail));
  } catch (const nlohmann::json::exception& e) {
    // e.g. out_of_range 406 "number overflow parsing '1e999'": no position is reported.
    std::string what = e.what();
    const auto pos = what.find("] ");
    throw InputError(source, "", "invalid JSON: " + (pos == std::string::npos ? what : what.substr(pos + 2)) +
                                     " (numbers must be finite doubles)");
  }
}

nlohmann::json read_json_file(const std::string& path) {
  return parse_json_text(read_input_file(path, "a JSON file", kMaxJsonBytes), path);
}

nlohmann::json parse_override_value(const std::string& dotted, const std::string& text,
                                    const std::string& flag) {
  // A value that is not valid UTF-8 would pass as a plain string and break every later dump.
  if (const std::size_t bad = invalid_utf8_offset(text); bad != std::string_view::npos)
    throw InputError(flag, "",
                     fmt::format("byte {} of the value of '{}' is 0x{:02X}, which is not valid UTF-8; expected "
                                 "UTF-8 text", bad, dotted, static_cast<unsigned char>(text[bad])));
  // nlohmann's parser and dump() recurse: the same depth limit as files, before either runs.
  if (nesting_depth(text) > kMaxNesting)
    throw InputError(flag, "", fmt::format("the value of '{}' is nested deeper than {} levels (the limit for "
                                           "files too); expected a scenario value", dotted, kMaxNesting));
  try {
    return parse_unique_keys(text, flag);  // duplicate keys: refused, as in files
  } catch (const nlohmann::json::parse_error&) {
    return text;  // not JSON: a plain string
  } catch (const nlohmann::json::exception&) {
    // out_of_range 406: "number overflow parsing '1e999'"
    throw InputError(flag, "", fmt::format("cannot read the value: '{}' holds a number outside the range of a "
                                           "double (numbers must be finite)", text));
  }
}

void apply_override(nlohmann::json& doc, const std::string& assignment, const std::string& flag) {
  const auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0)
    throw InputError(flag, "",
                     fmt::format("expected PATH=VALUE (e.g. parallelism.dp=64), got '{}'", assignment));
  const std::string dotted = assignment.substr(0, eq);
  if (const std::size_t bad = invalid_utf8_offset(dotted); bad != std::string_view::npos)
    throw InputError(flag, "", fmt::format("byte {} of the path is 0x{:02X}, which is not valid UTF-8; expected "
                                           "UTF-8 text", bad, static_cast<unsigned char>(dotted[bad])));
  const nlohmann::json value = parse_override_value(dotted, assignment.substr(eq + 1), flag);
  if (!doc.is_object())
    throw InputError(flag, "", "the scenario document is not a JSON object");
  nlohmann::json* node = &doc;
  std::string pointer;
  std::size_t start = 0;
  while (true) {
    const auto dot = dotted.find('.', start);
    const std::string key = dotted.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (key.empty())
      throw InputError(flag, "", fmt::format("empty component in path '{}'", dotted));
    pointer += "/" + escape_pointer_token(key);
    if (dot == std::string::npos) {
      (*node)[key] = value;
      return;
    }
    nlohmann::json& next = (*node)[key];
    if (next.is_null()) next = nlohmann::json::object();
    if (!next.is_object())
      throw InputError(flag, pointer,
                       fmt::format("'{}' is {}, not an object, so '{}' cannot be set", key,
                                   type_name(next), dotted));
    node = &next;
    start = dot + 1;
  }
}

}  // namespace stepsim
