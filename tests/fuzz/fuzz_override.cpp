// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: arbitrary bytes as one `--set PATH=VALUE` assignment -> apply_override on a
// small valid scenario -> models::parse_scenario (issue 13: --set values are input too).
// Only stepsim::InputError may leave; an accepted scenario must echo (dump) without throwing,
// so a value that is not valid UTF-8 or nested past the file limit cannot slip through.
#include "models/scenario.hpp"
#include "sim/support/error.hpp"
#include "sim/support/json_reader.hpp"
#include "tests/fuzz/fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace stepsim;
  const std::string assignment = fuzz::as_text(data, size);
  nlohmann::json doc = nlohmann::json::parse(
      R"({"model": "llama3.2-1b", "hardware": "h100-sxm", "parallelism": {"dp": 8}, "batch": {"seq_len": 1024}})");
  try {
    apply_override(doc, assignment, "--set");
  } catch (const InputError& e) {
    STEPSIM_FUZZ_CHECK(!e.source().empty(), "an override error names its flag");
    return 0;
  }
  // The value is in the document now: it must be printable as JSON (the echo, sweeps' CSV).
  (void)doc.dump();
  if (fuzz::mentions_special_file(doc)) return -1;  // not added to the corpus
  try {
    const models::Scenario s = models::parse_scenario(doc, "fuzz.json");
    STEPSIM_FUZZ_CHECK(s.parallelism.dp >= 1, "dp >= 1");
    STEPSIM_FUZZ_CHECK(s.resolved != nullptr, "resolved scenario echoed");
    (void)s.resolved->dump();
  } catch (const InputError&) {
  }
  return 0;
}
