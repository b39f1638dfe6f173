// SPDX-License-Identifier: Apache-2.0
// run_on_threads (a joined pool whose failures are exceptions) and the memory limit.
#include "sim/support/resources.hpp"

#include "sim/support/error.hpp"

#include <fmt/format.h>

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

namespace stepsim {

void run_on_threads(unsigned threads, const std::function<void(const std::function<bool()>& stop)>& work,
                    const std::string& flag) {
  std::atomic<bool> stopped{false};
  std::exception_ptr first;
  std::mutex first_mutex;
  const std::function<bool()> stop = [&] { return stopped.load(); };
  const auto guarded = [&] {
    try {
      work(stop);
    } catch (...) {
      const std::lock_guard<std::mutex> lock(first_mutex);
      if (!first) first = std::current_exception();
      stopped = true;
    }
  };
  std::vector<std::thread> pool;
  // Nothing may allocate until every started thread is joined: memory is what ran out when a
  // start fails, and an exception leaving this function with a joinable thread in `pool` would
  // terminate the process (std::thread's destructor) instead of reporting one line.
  enum class Refused { None, Threads, Memory } refused = Refused::None;
  std::error_code why;
  try {
    pool.reserve(threads > 0 ? threads - 1 : 0);
    for (unsigned t = 1; t < threads; ++t) pool.emplace_back(guarded);
  } catch (const std::system_error& e) {
    stopped = true;
    refused = Refused::Threads;
    why = e.code();
  } catch (const std::bad_alloc&) {
    stopped = true;
    refused = Refused::Memory;
  }
  if (refused == Refused::None) guarded();
  for (auto& t : pool) t.join();
  if (refused == Refused::Threads)
    throw InputError(flag, "", fmt::format("could not start thread {} of {} ({}); the system allows fewer threads to this "
                                           "process (ulimit -u / -v): use a smaller {}", pool.size() + 2, threads,
                                           why.message(), flag));
  if (refused == Refused::Memory)
    throw InputError(flag, "", fmt::format("out of memory while starting {} threads; use a smaller {}", threads, flag));
  if (first) std::rethrow_exception(first);
}

std::optional<double> memory_limit_bytes() {
  std::optional<double> limit;
  const auto lower = [&](double v) { limit = limit ? std::min(*limit, v) : v; };
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  if (pages > 0 && page > 0) lower(static_cast<double>(pages) * static_cast<double>(page));
  for (const int resource : {RLIMIT_AS, RLIMIT_DATA}) {
    struct rlimit rl {};
    if (::getrlimit(resource, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) lower(static_cast<double>(rl.rlim_cur));
  }
  return limit;
}

void check_memory_need(double need_bytes, const std::string& source, const std::string& path,
                       const std::string& what, const std::string& advice) {
  const auto limit = memory_limit_bytes();
  if (!limit || need_bytes <= *limit) return;
  throw InputError(source, path,
                   fmt::format("{} needs about {:.3g} GB of memory, more than the {:.3g} GB this process may use "
                               "(RAM, ulimit -v); {}", what, need_bytes / 1e9, *limit / 1e9, advice));
}

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

}  // namespace stepsim
