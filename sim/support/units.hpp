// SPDX-License-Identifier: Apache-2.0
// Quantities with units in strings: "25MiB", "16GB", "400GB/s", "400Gb/s", "16us", "989TFLOP/s".
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace stepsim {

/// Physical dimension a field expects. A number without a unit means the field's own SI unit.
enum class Dimension { Bytes, BytesPerSecond, Seconds, FlopsPerSecond };

/// Name used in messages: "bytes", "a bandwidth", "a duration", "a compute rate".
std::string_view dimension_name(Dimension d);

/// Thrown by parse_quantity; JsonReader turns it into an InputError naming the field.
class UnitError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Largest magnitude of a number stepsim reads from any input (a quantity with or without a
/// unit, a JSON number): no size, rate, FLOP count or duration it models comes within 10^6 of
/// it, so a larger one (a 300-digit figure) is a typo, refused where it is read.
inline constexpr double kMaxMagnitude = 1e24;

/// Parses "<number><unit>" into SI units (bytes, bytes/s, seconds, FLOP/s).
/// Decimal prefixes k/K, M, G, T, P are powers of 1000; binary Ki, Mi, Gi, Ti are powers of
/// 1024 (DESIGN.md "Units and names"). Byte units use "B", bit units "b" (÷8), so
/// "400Gb/s" = 50e9 B/s. Time units: s, ms, us, µs, ns, ps. Compute: FLOP/s, FLOPS.
/// @throws UnitError when the text is not a number with a unit of dimension `expected`,
///         e.g. "expected bytes, got a bandwidth '400GB/s'", or its value in SI units is
///         larger in magnitude than kMaxMagnitude.
double parse_quantity(std::string_view text, Dimension expected);

}  // namespace stepsim
