// SPDX-License-Identifier: Apache-2.0
// What the machine lets this process have: threads (a failed thread creation or an exception
// inside a worker becomes an ordinary exception of the caller, never std::terminate) and
// memory (a run that would exhaust it is refused up front, with the figure).
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>

namespace stepsim {

/// Runs `work` on `threads` threads at once (the calling thread is one of them) and returns
/// when all have returned. `work` takes its items from shared state (an atomic counter) and
/// must return soon once `stop()` is true; `stop` becomes true after the first exception.
/// @pre threads ≥ 1
/// @param flag  the option that chose the thread count ("-j"), for messages
/// @throws InputError naming `flag` when the system refuses to start a thread (std::thread's
///         std::system_error: a process or address-space limit), after the started threads
///         have been joined.
/// @throws the first exception a worker threw (std::bad_alloc included), after every thread
///         has been joined.
void run_on_threads(unsigned threads, const std::function<void(const std::function<bool()>& stop)>& work,
                    const std::string& flag);

/// Calls `fn(i)` for every i in [0, rows) on up to `threads` threads (0 = the hardware's
/// concurrency; never more threads than rows). Every row runs; if some throw, the exception
/// of the lowest i is rethrown after all have finished, so the error reported does not depend
/// on the thread count. `fn` must be safe to call concurrently for distinct i.
/// @throws what fn(i) threw for the lowest failing i; InputError naming -j (run_on_threads)
///         when threads cannot be created.
void for_each_row(std::size_t rows, unsigned threads, const std::function<void(std::size_t)>& fn);

/// The most memory this process may use, in bytes: the smaller of the physical RAM and the
/// address-space / data-segment limits (ulimit -v, -d); nullopt when none is known.
std::optional<double> memory_limit_bytes();

/// Refuses a run that would need more memory than memory_limit_bytes() allows, before it
/// starts (instead of std::bad_alloc half-way).
/// @param need_bytes  the estimate
/// @param what        what needs it, for the message ("a sweep of 1000000 points")
/// @param advice      how to need less ("sweep fewer values")
/// @throws InputError{source, path, "WHAT needs about X GB ..., more than the Y GB this
///         process may use (RAM, ulimit -v); ADVICE"} when need_bytes exceeds the limit.
void check_memory_need(double need_bytes, const std::string& source, const std::string& path,
                       const std::string& what, const std::string& advice);

}  // namespace stepsim
