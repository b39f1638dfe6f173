// SPDX-License-Identifier: Apache-2.0
// Error types: message assembly.
#include "sim/support/error.hpp"

namespace stepsim {

namespace {
std::string join(const std::string& source, const std::string& path, const std::string& message) {
  return fmt::format("{}{}{}{}{}", source, source.empty() ? "" : ": ", path, path.empty() ? "" : ": ",
                     message);
}
}  // namespace

InputError::InputError(const std::string& source, const std::string& path,
                       const std::string& message)
    : std::runtime_error(join(source, path, message)),
      source_(source),
      path_(path),
      detail_(message) {}

}  // namespace stepsim
