// SPDX-License-Identifier: Apache-2.0
// Runs one function per row on a few threads; the first failing row (in row order) is reported.
#pragma once

#include <cstddef>
#include <functional>

namespace stepsim::validate {

/// Calls `fn(i)` for every i in [0, rows) on up to `threads` threads (0 = the hardware's
/// concurrency; never more threads than rows). Every row runs; if some throw, the exception
/// of the lowest i is rethrown after all have finished, so the error reported does not depend
/// on the thread count. `fn` must be safe to call concurrently for distinct i.
/// @throws what fn(i) threw for the lowest failing i; InputError from sim::run_on_threads when
///         threads cannot be created.
void for_each_row(std::size_t rows, unsigned threads, const std::function<void(std::size_t)>& fn);

}  // namespace stepsim::validate
