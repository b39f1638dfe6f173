// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: arbitrary bytes -> parse_quantity for every Dimension.
// Only stepsim::UnitError may leave it and a value it returns is never NaN. It may return
// +-infinity when the unit's scale overflows a finite number ("1e308GB"): every caller rejects
// non-finite values (JsonReader::number, `collective --size`), and tests/errors row
// hw_peak_overflow pins that; parse_quantity itself checks finiteness only before scaling.
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
      STEPSIM_FUZZ_CHECK(!std::isnan(v), "parse_quantity never returns NaN");
    } catch (const UnitError& e) {
      STEPSIM_FUZZ_CHECK(e.what()[0] != '\0', "UnitError has a message");
    }
  }
  return 0;
}
