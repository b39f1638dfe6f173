// SPDX-License-Identifier: Apache-2.0
// Atomic output files: written to a temporary name in the same directory, then renamed.
#pragma once

#include <string>

namespace stepsim {

/// Writes `content` to `path` atomically: a temporary file next to it is written, flushed
/// and renamed over `path`, so readers never see a half-written file and a failure leaves
/// any existing file untouched.
/// @throws InputError when the directory does not exist or the file cannot be written.
void write_file_atomically(const std::string& path, const std::string& content);

}  // namespace stepsim
