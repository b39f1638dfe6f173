// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: arbitrary bytes -> parse_json_text -> hardware::parse_calibration (the
// overlay files `--calibration` and `calibration` read; issue 13). Only stepsim::InputError may
// leave; an accepted overlay must satisfy what calibration.hpp documents: contiguous half-open
// segments with positive, finite factors.
#include "hardware/calibration_json.hpp"
#include "sim/support/error.hpp"
#include "sim/support/json_reader.hpp"
#include "tests/fuzz/fuzz_common.hpp"

#include <cmath>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace stepsim;
  hardware::CalibrationOverlay o;
  try {
    o = hardware::parse_calibration(parse_json_text(fuzz::as_text(data, size), "fuzz-calibration.json"),
                                    "fuzz-calibration.json");
  } catch (const InputError&) {
    return 0;
  }
  for (const auto& table : o.tables) {
    for (std::size_t i = 0; i < table.segments.size(); ++i) {
      const auto& seg = table.segments[i];
      STEPSIM_FUZZ_CHECK(seg.hi_bytes > seg.lo_bytes, "segment hi > lo");
      STEPSIM_FUZZ_CHECK(std::isfinite(seg.latency_factor) && seg.latency_factor > 0, "latency factor > 0");
      STEPSIM_FUZZ_CHECK(std::isfinite(seg.bandwidth_factor) && seg.bandwidth_factor > 0, "bandwidth factor > 0");
      if (i > 0) STEPSIM_FUZZ_CHECK(table.segments[i - 1].hi_bytes == seg.lo_bytes, "segments contiguous");
    }
  }
  (void)hardware::calibration_json(o);  // an accepted overlay writes back
  return 0;
}
