// SPDX-License-Identifier: Apache-2.0
// stepsim-validate's tiny JSON writer (the program carries no JSON library): objects, arrays,
// strings with escapes, integers, booleans and doubles printed with 17 significant digits.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace stepsim::validate {

/// Streaming writer: begin_object/end_object, begin_array/end_array, key(), value().
/// Commas and indentation are placed automatically; nesting is checked by the caller.
class JsonWriter {
 public:
  /// Opens an object (as a value, or after key()).
  JsonWriter& begin_object() { return open('{'); }
  /// Closes the innermost object.
  JsonWriter& end_object() { return close('}'); }
  /// Opens an array.
  JsonWriter& begin_array() { return open('['); }
  /// Closes the innermost array.
  JsonWriter& end_array() { return close(']'); }
  /// Writes an object key; the next call writes its value.
  JsonWriter& key(const std::string& k) {
    separate();
    out_ += quote(k) + ": ";
    after_key_ = true;
    return *this;
  }
  /// Writes a string value.
  JsonWriter& value(const std::string& s) { return raw(quote(s)); }
  /// Writes a string value.
  JsonWriter& value(const char* s) { return raw(quote(s)); }
  /// Writes an integer value.
  JsonWriter& value(std::int64_t v) { return raw(std::to_string(v)); }
  /// Writes an integer value.
  JsonWriter& value(int v) { return raw(std::to_string(v)); }
  /// Writes a boolean value.
  JsonWriter& value(bool v) { return raw(v ? "true" : "false"); }
  /// Writes a number (non-finite values become null).
  JsonWriter& value(double v) {
    if (!std::isfinite(v)) return raw("null");
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    return raw(buf);
  }
  /// key(k).value(v) in one call.
  template <typename T>
  JsonWriter& field(const std::string& k, const T& v) {
    key(k);
    return value(v);
  }
  /// The document written so far (complete once every container is closed), newline-terminated.
  std::string str() const { return out_ + "\n"; }

  /// JSON string literal of `s` (quotes, backslash, control characters escaped).
  static std::string quote(const std::string& s) {
    std::string q = "\"";
    for (const unsigned char c : s) {
      if (c == '"' || c == '\\') {
        q += '\\';
        q += static_cast<char>(c);
      } else if (c < 0x20) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", c);
        q += buf;
      } else {
        q += static_cast<char>(c);
      }
    }
    return q + "\"";
  }

 private:
  void separate() {
    if (after_key_) {
      after_key_ = false;
      return;
    }
    if (!first_.empty()) {
      if (!first_.back()) out_ += ',';
      first_.back() = false;
      out_ += '\n' + std::string(2 * first_.size(), ' ');
    }
  }
  JsonWriter& raw(const std::string& text) {
    separate();
    out_ += text;
    return *this;
  }
  JsonWriter& open(char c) {
    separate();
    out_ += c;
    first_.push_back(true);
    return *this;
  }
  JsonWriter& close(char c) {
    const bool empty = first_.back();
    first_.pop_back();
    if (!empty) out_ += '\n' + std::string(2 * first_.size(), ' ');
    out_ += c;
    return *this;
  }

  std::string out_;
  std::vector<bool> first_;  ///< per open container: nothing written in it yet
  bool after_key_ = false;
};

}  // namespace stepsim::validate
