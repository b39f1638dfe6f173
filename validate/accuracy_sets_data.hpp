// SPDX-License-Identifier: Apache-2.0
// The accuracy set files (validate/accuracy/*.json), compiled into the binary by
// cmake/embed_text_files.cmake so `stepsim accuracy` works from any folder.
#pragma once

#include <vector>

namespace stepsim::validate {

/// One embedded file: its name without ".json", and its text.
struct EmbeddedText {
  const char* name;
  const char* text;
};

/// Every validate/accuracy/*.json at build time, sorted by name.
const std::vector<EmbeddedText>& embedded_accuracy_sets();

}  // namespace stepsim::validate
