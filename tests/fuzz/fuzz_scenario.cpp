// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: arbitrary bytes -> parse_json_text -> models::parse_scenario.
// Only stepsim::InputError may leave the parser; a scenario it accepts must satisfy the
// cross-field rules it documents (scenario.hpp, README "Scenario keys").
#include "models/scenario.hpp"
#include "sim/support/error.hpp"
#include "sim/support/json_reader.hpp"
#include "tests/fuzz/fuzz_common.hpp"

#include <cmath>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace stepsim;
  nlohmann::json doc;
  try {
    doc = parse_json_text(fuzz::as_text(data, size), "fuzz.json");
  } catch (const InputError&) {
    return 0;
  }
  if (fuzz::mentions_special_file(doc)) return -1;  // not added to the corpus
  models::Scenario s;
  try {
    s = models::parse_scenario(doc, "fuzz.json");
  } catch (const InputError& e) {
    STEPSIM_FUZZ_CHECK(std::string(e.what()).find("fuzz.json") != std::string::npos ||
                           !e.source().empty(),
                       "an InputError names its source");
    return 0;
  }
  const auto& p = s.parallelism;
  STEPSIM_FUZZ_CHECK(p.dp >= 1, "dp >= 1");
  STEPSIM_FUZZ_CHECK(std::isfinite(p.bucket_cap_mb) && p.bucket_cap_mb > 0, "bucket_cap_mb > 0");
  STEPSIM_FUZZ_CHECK(std::isfinite(p.first_bucket_mb) && p.first_bucket_mb > 0, "first_bucket_mb > 0");
  STEPSIM_FUZZ_CHECK(s.cluster.gpus_per_node >= 1 && s.cluster.nodes >= 1, "cluster shape >= 1");
  if (p.dp > s.cluster.gpus_per_node)
    STEPSIM_FUZZ_CHECK(static_cast<std::int64_t>(s.cluster.nodes) * s.cluster.gpus_per_node == p.dp,
                       "nodes x gpus_per_node == dp");
  else
    STEPSIM_FUZZ_CHECK(s.cluster.nodes == 1, "one node when dp fits in it");
  STEPSIM_FUZZ_CHECK(s.batch.micro_batch_size >= 1 && s.batch.seq_len >= 1 && s.batch.grad_accum >= 1,
                     "batch fields >= 1");
  STEPSIM_FUZZ_CHECK(s.tokens_per_gpu_step() > 0, "tokens per GPU step > 0 (no overflow)");
  STEPSIM_FUZZ_CHECK(s.model.parameter_count() > 0, "the model has parameters");
  STEPSIM_FUZZ_CHECK(s.resolved != nullptr, "resolved scenario echoed");
  (void)s.resolved->dump();
  return 0;
}
