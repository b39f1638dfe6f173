// SPDX-License-Identifier: Apache-2.0
// Simulated time conversions.
#include "sim/time.hpp"

#include "sim/support/error.hpp"

#include <cmath>

namespace stepsim::sim {

Time Time::from_seconds(double s) {
  // 9.0e6 s keeps sums of many such durations inside int64 picoseconds.
  constexpr double kMaxSeconds = 9.0e6;
  if (!std::isfinite(s) || s < 0 || s > kMaxSeconds)
    throw InputError("", "",
                     fmt::format("a simulated duration of {} s is outside the simulator's range "
                                 "[0, {:g}] s; the input describes a meaningless step",
                                 s, kMaxSeconds));
  return Time(std::llround(s * 1e12));
}

}  // namespace stepsim::sim
