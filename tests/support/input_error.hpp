// SPDX-License-Identifier: Apache-2.0
// The message of the InputError a call throws, for negative tests.
#pragma once

#include "sim/support/error.hpp"

#include <string>
#include <utility>

namespace stepsim::test {

/// Runs `f()`; returns the InputError's message (what()) it threw, or `accepted` when it threw
/// none. Other exceptions pass through (a test then fails on them).
template <class F>
std::string input_error_of(F&& f, const std::string& accepted = "(accepted)") {
  try {
    std::forward<F>(f)();
  } catch (const InputError& e) {
    return e.what();
  }
  return accepted;
}

}  // namespace stepsim::test
