// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: arbitrary bytes -> parse_json_text -> models::parse_model.
// Only stepsim::InputError may leave the parser; an accepted model has Ψ > 0 (no integer
// overflow on the way: UBSan traps signed overflow) and finite, non-negative per-layer costs.
#include "models/model_spec_json.hpp"
#include "sim/support/error.hpp"
#include "sim/support/json_reader.hpp"
#include "tests/fuzz/fuzz_common.hpp"

#include <cmath>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace stepsim;
  models::ModelSpec m;
  try {
    const nlohmann::json doc = parse_json_text(fuzz::as_text(data, size), "fuzz-model.json");
    m = models::parse_model(doc, "fuzz-model.json", "");
  } catch (const InputError&) {
    return 0;
  }
  STEPSIM_FUZZ_CHECK(!m.layers.empty(), "at least one layer");
  STEPSIM_FUZZ_CHECK(m.parameter_count() > 0, "parameter count > 0");
  STEPSIM_FUZZ_CHECK(m.trainable_parameter_count() >= 0 &&
                         m.trainable_parameter_count() <= m.parameter_count(),
                     "0 <= trainable <= total");
  for (std::size_t l = 0; l < m.layers.size(); ++l) {
    const auto& layer = m.layers[l];
    for (const auto& t : layer.params) STEPSIM_FUZZ_CHECK(t.numel > 0, "numel > 0");
    for (double x : {layer.fwd_gemm_flops_per_token, layer.fwd_attn_flops_per_token_per_seq,
                     layer.fwd_streaming_bytes_per_token, layer.activation_bytes_per_token})
      STEPSIM_FUZZ_CHECK(std::isfinite(x) && x >= 0, "per-token costs finite and >= 0");
    if (layer.fwd_s) STEPSIM_FUZZ_CHECK(std::isfinite(*layer.fwd_s) && *layer.fwd_s >= 0, "fwd_s >= 0");
    if (layer.bwd_s) STEPSIM_FUZZ_CHECK(std::isfinite(*layer.bwd_s) && *layer.bwd_s >= 0, "bwd_s >= 0");
    const auto order = m.ready_order(l);
    STEPSIM_FUZZ_CHECK(order.size() == layer.params.size(), "ready order covers every tensor");
  }
  return 0;
}
