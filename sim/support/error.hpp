// SPDX-License-Identifier: Apache-2.0
// Error types shared by every stepsim library: bad input vs broken invariant.
#pragma once

#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace stepsim {

/// Bad input: a malformed file, a value out of range, an unknown name, an impossible
/// combination. The message is one line: "SOURCE: /json/path: what is wrong". `tools/`
/// prints it and exits with status 2. Library code never prints or exits.
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
