// SPDX-License-Identifier: Apache-2.0
#include "validate/parallel_rows.hpp"

#include "sim/support/resources.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>

namespace stepsim::validate {

void for_each_row(std::size_t rows, unsigned threads, const std::function<void(std::size_t)>& fn) {
  if (rows == 0) return;
  unsigned n = threads ? threads : std::max(1u, std::thread::hardware_concurrency());
  n = std::max(1u, static_cast<unsigned>(std::min<std::size_t>(n, rows)));
  std::atomic<std::size_t> next{0};
  std::mutex error_mutex;
  std::exception_ptr first_error;
  std::size_t first_error_index = rows;
  auto work = [&](const std::function<bool()>& /*stop: every row runs, the first bad one is reported*/) {
    for (std::size_t i = next++; i < rows; i = next++) {
      try {
        fn(i);
      } catch (...) {
        const std::lock_guard<std::mutex> lock(error_mutex);
        if (i < first_error_index) {
          first_error_index = i;
          first_error = std::current_exception();
        }
      }
    }
  };
  run_on_threads(n, work, "-j");
  if (first_error) std::rethrow_exception(first_error);
}

}  // namespace stepsim::validate
