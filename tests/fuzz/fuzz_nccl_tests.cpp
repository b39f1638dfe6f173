// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: arbitrary bytes -> validate::parse_nccl_tests (raw nccl-tests stdout).
// Only stepsim::InputError may leave the parser; every line it could not read is reported
// with a line number inside the input, and every row it kept has a size ≥ 0 and finite,
// non-negative times and bandwidths.
#include "sim/support/error.hpp"
#include "tests/fuzz/fuzz_common.hpp"
#include "validate/nccl_tests.hpp"

#include <algorithm>
#include <cmath>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace stepsim;
  const std::string text = fuzz::as_text(data, size);
  validate::NcclTestsLog log;
  try {
    log = validate::parse_nccl_tests(text, "fuzz.log");
  } catch (const InputError&) {
    return 0;
  }
  const auto lines = static_cast<int>(std::count(text.begin(), text.end(), '\n')) + 1;
  for (const auto& u : log.unreadable)
    STEPSIM_FUZZ_CHECK(u.line >= 1 && u.line <= lines, "unreadable line numbers lie inside the input");
  auto ok = [](const std::optional<double>& v) { return !v || (std::isfinite(*v) && *v >= 0); };
  for (const auto& run : log.runs) {
    STEPSIM_FUZZ_CHECK(run.ranks >= 0 && run.nodes >= 0, "ranks and nodes >= 0");
    for (const auto& r : run.rows) {
      STEPSIM_FUZZ_CHECK(r.size_bytes >= 0, "size >= 0");
      STEPSIM_FUZZ_CHECK(ok(r.oop_time_us) && ok(r.ip_time_us) && ok(r.oop_algbw_GBps) &&
                             ok(r.oop_busbw_GBps) && ok(r.ip_algbw_GBps) && ok(r.ip_busbw_GBps),
                         "times and bandwidths finite and >= 0");
    }
  }
  return 0;
}
