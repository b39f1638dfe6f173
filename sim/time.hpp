// SPDX-License-Identifier: Apache-2.0
// Simulated time: an integer number of picoseconds (style.md rule 4).
#pragma once

#include <compare>
#include <cstdint>

namespace stepsim::sim {

/// A simulated instant or duration in integer picoseconds. Integer time makes runs
/// bit-for-bit deterministic; conversions to and from seconds are explicit.
/// Range: ±9.2e6 s (about 106 days), far beyond any training step.
class Time {
 public:
  constexpr Time() = default;
  static constexpr Time from_ps(std::int64_t ps) { return Time(ps); }
  /// Rounds to the nearest picosecond.
  /// @throws InputError when `s` is negative, not finite, or beyond the range above
  ///         (a duration that large means the input describes something meaningless).
  static Time from_seconds(double s);
  constexpr std::int64_t ps() const { return ps_; }
  constexpr double seconds() const { return static_cast<double>(ps_) * 1e-12; }

  constexpr Time operator+(Time o) const { return Time(ps_ + o.ps_); }
  constexpr Time operator-(Time o) const { return Time(ps_ - o.ps_); }
  constexpr Time& operator+=(Time o) {
    ps_ += o.ps_;
    return *this;
  }
  constexpr auto operator<=>(const Time&) const = default;

 private:
  constexpr explicit Time(std::int64_t ps) : ps_(ps) {}
  std::int64_t ps_ = 0;
};

}  // namespace stepsim::sim
