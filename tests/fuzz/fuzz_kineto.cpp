// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: arbitrary bytes -> validate::parse_kineto_trace (a torch.profiler trace,
// plain or gzip). Only stepsim::InputError may leave the reader; every index it keeps points
// inside its tables, every GPU event has a duration ≥ 0, and every step's summary is finite
// and ≥ 0.
#include "sim/support/error.hpp"
#include "tests/fuzz/fuzz_common.hpp"
#include "validate/kineto.hpp"

#include <cmath>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace stepsim;
  validate::KinetoTrace t;
  try {
    t = validate::parse_kineto_trace(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.json");
  } catch (const InputError&) {
    return 0;
  }
  for (const auto& k : t.kernels) {
    STEPSIM_FUZZ_CHECK(k.name < t.names.size(), "kernel names index the name table");
    STEPSIM_FUZZ_CHECK(k.dur_ns >= 0, "durations >= 0");
    STEPSIM_FUZZ_CHECK(k.step >= -1 && k.step < static_cast<std::int32_t>(t.steps.size()), "step index in range");
    STEPSIM_FUZZ_CHECK(k.cpu_op >= -1 && k.cpu_op < static_cast<std::int32_t>(t.ops.size()), "op index in range");
    STEPSIM_FUZZ_CHECK(k.collective >= -1 && k.collective < static_cast<std::int32_t>(t.collectives.size()),
                       "collective index in range");
    STEPSIM_FUZZ_CHECK((k.cls == validate::KernelClass::Nccl) == (k.collective >= 0), "NCCL kernels and only they have a call");
  }
  for (const auto& s : validate::summarize_steps(t)) {
    STEPSIM_FUZZ_CHECK(std::isfinite(s.wall_s) && s.wall_s >= 0 && std::isfinite(s.gpu_span_s) && s.gpu_span_s >= 0,
                       "step times finite and >= 0");
    for (double c : s.class_s) STEPSIM_FUZZ_CHECK(std::isfinite(c) && c >= 0, "class times finite and >= 0");
  }
  (void)validate::kineto_summary_text({t});
  return 0;
}
