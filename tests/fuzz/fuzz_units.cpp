// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: arbitrary bytes -> parse_quantity for every Dimension.
// Only stepsim::UnitError may leave it; a value it returns is finite (its own "expected a
// finite number" rule, which must hold after the unit's scale is applied too).
#include "sim/support/units.hpp"
#include "tests/fuzz/fuzz_common.hpp"

#include <cmath>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace stepsim;
  const std::string text = fuzz::as_text(data, size);
  for (Dimension d : {Dimension::Bytes, Dimension::BytesPerSecond, Dimension::Seconds,
                      Dimension::FlopsPerSecond}) {
    try {
      const double v = parse_quantity(text, d);
      STEPSIM_FUZZ_CHECK(std::isfinite(v), "parse_quantity returns a finite number");
    } catch (const UnitError& e) {
      STEPSIM_FUZZ_CHECK(e.what()[0] != '\0', "UnitError has a message");
    }
  }
  return 0;
}
