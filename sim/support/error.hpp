// SPDX-License-Identifier: Apache-2.0
// Error types shared by every stepsim library: bad input vs broken invariant.
#pragma once

#include <fmt/format.h>

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>

namespace stepsim {

/// The most bytes of one echoed value (a source, a JSON path, a value quoted in a message)
/// that an error line repeats; longer ones are cut with "...".
inline constexpr std::size_t kMaxEchoBytes = 120;

/// Length of the well-formed UTF-8 sequence at `p` (1-4 bytes; rejects overlong forms,
/// surrogates and code points above U+10FFFF), or 0 when the bytes there are not valid UTF-8.
/// @pre n > 0 (bytes available at p)
std::size_t utf8_sequence_length(const unsigned char* p, std::size_t n);

/// Offset of the first byte of `text` that is not part of valid UTF-8, or npos when it is all
/// valid.
std::size_t invalid_utf8_offset(std::string_view text);

/// `text` cut to at most `max` bytes on a UTF-8 sequence boundary, with "..." appended when
/// it was cut. Used for every value echoed in an error line.
std::string excerpt(std::string_view text, std::size_t max = kMaxEchoBytes);

/// `text` on one line whatever it holds: control characters (a NUL, a newline, an escape
/// sequence in a file or kernel name) written as JSON escapes (\n, \u001b), so that neither a
/// message nor a table row is cut short, split or turned into terminal commands.
std::string one_line(const std::string& text);

/// Bad input: a malformed file, a value out of range, an unknown name, an impossible
/// combination. The message is one line: "SOURCE: /json/path: what is wrong". `tools/`
/// prints it and exits with status 2. Library code never prints or exits.
/// Echoes are capped here, once: the source and the path to kMaxEchoBytes each, every quoted
/// value in the message ('...') to kMaxEchoBytes, the whole message to 4 × kMaxEchoBytes (its
/// head and tail kept), so no input, however large, is repeated.
class InputError : public std::runtime_error {
 public:
  /// @param source   file name, "--set", "--vary" or a CLI flag ("" when none applies)
  /// @param path     JSON pointer of the bad field ("" when none applies)
  /// @param message  what is wrong: the bad value and what was expected
  InputError(const std::string& source, const std::string& path, const std::string& message);
  const std::string& source() const { return source_; }
  const std::string& path() const { return path_; }
  const std::string& detail() const { return detail_; }

 private:
  std::string source_, path_, detail_;
};

/// A broken internal invariant (a bug in stepsim, not in the input). `tools/` prints
/// "internal error (please report)" and exits with status 1.
class InternalError : public std::logic_error {
 public:
  explicit InternalError(const std::string& message) : std::logic_error(message) {}
};

/// Always-on invariant check (never compiled out, unlike assert()). Throws InternalError
/// with file:line and the formatted message.
#define STEPSIM_ASSERT(cond, ...)                                                      \
  do {                                                                                 \
    if (!(cond))                                                                       \
      throw ::stepsim::InternalError(                                                  \
          ::fmt::format("{}:{}: assertion '{}' failed: {}", __FILE__, __LINE__, #cond, \
                        ::fmt::format(__VA_ARGS__)));                                  \
  } while (false)

}  // namespace stepsim
