// SPDX-License-Identifier: Apache-2.0
// Error types: message assembly.
#include "sim/support/error.hpp"

#include <algorithm>
#include <cctype>

namespace stepsim {

std::size_t utf8_sequence_length(const unsigned char* p, std::size_t n) {
  const unsigned char c = p[0];
  const std::size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
  if (len == 0 || len > n) return 0;
  for (std::size_t k = 1; k < len; ++k)
    if ((p[k] & 0xC0) != 0x80) return 0;
  if (len == 2 && c < 0xC2) return 0;  // overlong
  if (len == 3 && ((c == 0xE0 && p[1] < 0xA0) || (c == 0xED && p[1] >= 0xA0))) return 0;
  if (len == 4 && (c > 0xF4 || (c == 0xF0 && p[1] < 0x90) || (c == 0xF4 && p[1] >= 0x90))) return 0;
  return len;
}

std::size_t invalid_utf8_offset(std::string_view text) {
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t len = utf8_sequence_length(p + i, text.size() - i);
    if (len == 0) return i;
    i += len;
  }
  return std::string_view::npos;
}

std::string excerpt(std::string_view text, std::size_t max) {
  if (text.size() <= max) return std::string(text);
  std::size_t cut = max > 3 ? max - 3 : 0;
  // Back up to a sequence boundary (never split a multi-byte character).
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return std::string(text.substr(0, cut)) + "...";
}

namespace {

// A message longer than this keeps its head (the bad value) and its tail (the expectation).
constexpr std::size_t kMaxMessageBytes = 4 * kMaxEchoBytes;

// A quoted value ('...': the quote opens after a space, '(', '=' or at the start, and closes
// before anything but a letter or digit, so "profile's" is not a quote) longer than
// kMaxEchoBytes is cut to an excerpt.
std::string cap_quoted(const std::string& message) {
  std::string out;
  std::size_t i = 0;
  const auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  while (i < message.size()) {
    const std::size_t open = message.find('\'', i);
    if (open == std::string::npos) break;
    const bool opens = open == 0 || message[open - 1] == ' ' || message[open - 1] == '(' || message[open - 1] == '=';
    std::size_t close = open + 1;
    while (opens && (close = message.find('\'', close)) != std::string::npos && close + 1 < message.size() &&
           word(message[close + 1]))
      ++close;
    if (!opens || close == std::string::npos) {
      out.append(message, i, open + 1 - i);
      i = open + 1;
      continue;
    }
    out.append(message, i, open + 1 - i);
    out += excerpt(std::string_view(message).substr(open + 1, close - open - 1));
    out += '\'';
    i = close + 1;
  }
  out.append(message, std::min(i, message.size()), std::string::npos);
  return out;
}

std::string cap_message(const std::string& raw) {
  const std::string message = raw.size() > kMaxEchoBytes ? cap_quoted(raw) : raw;
  if (message.size() <= kMaxMessageBytes) return message;
  std::string head = excerpt(message, kMaxMessageBytes / 2);
  std::size_t from = message.size() - kMaxMessageBytes / 2 + 3;
  while (from < message.size() && (static_cast<unsigned char>(message[from]) & 0xC0) == 0x80) ++from;
  return head + message.substr(from);
}

std::string join(const std::string& source, const std::string& path, const std::string& message) {
  return fmt::format("{}{}{}{}{}", source, source.empty() ? "" : ": ", path, path.empty() ? "" : ": ",
                     message);
}

}  // namespace

// One line, whatever the input held: control characters (a NUL in a JSON string, a newline in a
// file name) written as JSON escapes, so a message is never cut short or split.
std::string one_line(const std::string& text) {
  if (std::none_of(text.begin(), text.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; }))
    return text;
  std::string out;
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else if (u < 0x20 || u == 0x7f) out += fmt::format("\\u{:04x}", u);
    else out += c;
  }
  return out;
}

InputError::InputError(const std::string& source, const std::string& path,
                       const std::string& message)
    : std::runtime_error(join(one_line(excerpt(source)), one_line(excerpt(path)), one_line(cap_message(message)))),
      source_(one_line(excerpt(source))),
      path_(one_line(excerpt(path))),
      detail_(one_line(cap_message(message))) {}

}  // namespace stepsim
