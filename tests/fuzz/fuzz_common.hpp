// SPDX-License-Identifier: Apache-2.0
// Shared helpers of the libFuzzer targets in tests/fuzz/ (issue 8: bad input never crashes and
// never passes silently). Each target feeds arbitrary bytes to one parser and lets every
// exception other than stepsim::InputError (or UnitError for parse_quantity) escape, so
// libFuzzer reports it as a crash with the stack of the throw. After a successful parse the
// target checks the documented invariants of the result; a violation aborts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

namespace stepsim::fuzz {

/// Aborts with a message when a parsed value breaks a documented invariant (the parser
/// accepted input it should have rejected).
#define STEPSIM_FUZZ_CHECK(cond, what)                                                   \
  do {                                                                                   \
    if (!(cond)) {                                                                       \
      std::fprintf(stderr, "fuzz invariant violated: %s (%s) at %s:%d\n", what, #cond,   \
                   __FILE__, __LINE__);                                                  \
      std::abort();                                                                      \
    }                                                                                    \
  } while (false)

inline std::string as_text(const std::uint8_t* data, std::size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

/// True when a string field names something outside the working tree that reading could
/// block on or never finish (/dev/zero, /dev/stdin, /proc/...). Such references are skipped:
/// the fuzzer's job is the parser, not the filesystem (the non-regular-file case is a known,
/// separately reported limitation of read_json_file).
inline bool names_special_file(const nlohmann::json& v) {
  if (!v.is_string()) return false;
  const auto& s = v.get_ref<const std::string&>();
  return s.find("/dev") != std::string::npos || s.find("/proc") != std::string::npos ||
         s.find("/sys") != std::string::npos || s.rfind("/", 0) == 0 || s.find("..") != std::string::npos;
}

/// True when any string anywhere in `doc` names such a file (model, hardware, calibration, ...).
inline bool mentions_special_file(const nlohmann::json& doc) {
  if (doc.is_string()) return names_special_file(doc);
  if (doc.is_structured())
    for (const auto& v : doc) if (mentions_special_file(v)) return true;
  return false;
}

}  // namespace stepsim::fuzz
