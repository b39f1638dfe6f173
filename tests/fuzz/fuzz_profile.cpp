// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: arbitrary bytes -> parse_json_text -> hardware::parse_profile.
// Only stepsim::InputError may leave the parser; an accepted profile must satisfy the
// invariants hardware_profile.hpp documents (bandwidths, peak, capacity > 0 and finite;
// efficiencies in (0, 1]; latencies >= 0; gpus_per_node >= 1).
#include "hardware/hardware_profile_json.hpp"
#include "sim/support/error.hpp"
#include "sim/support/json_reader.hpp"
#include "tests/fuzz/fuzz_common.hpp"

#include <cmath>

namespace {

bool positive(double x) { return std::isfinite(x) && x > 0; }
bool non_negative(double x) { return std::isfinite(x) && x >= 0; }
bool fraction(double x) { return std::isfinite(x) && x > 0 && x <= 1; }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace stepsim;
  hardware::HardwareProfile p;
  try {
    const nlohmann::json doc = parse_json_text(fuzz::as_text(data, size), "fuzz-hw.json");
    p = hardware::parse_profile(doc, "fuzz-hw.json");
  } catch (const InputError&) {
    return 0;
  }
  STEPSIM_FUZZ_CHECK(positive(p.peak_flops_per_s), "peak_flops_per_s > 0");
  STEPSIM_FUZZ_CHECK(fraction(p.gemm_efficiency), "gemm_efficiency in (0, 1]");
  STEPSIM_FUZZ_CHECK(positive(p.hbm_bytes), "hbm_bytes > 0");
  STEPSIM_FUZZ_CHECK(positive(p.hbm_bandwidth_bytes_per_s), "hbm bandwidth > 0");
  STEPSIM_FUZZ_CHECK(fraction(p.hbm_efficiency), "hbm_efficiency in (0, 1]");
  STEPSIM_FUZZ_CHECK(p.gpus_per_node >= 1, "gpus_per_node >= 1");
  STEPSIM_FUZZ_CHECK(positive(p.intra_node.bandwidth_bytes_per_s), "intra-node bandwidth > 0");
  STEPSIM_FUZZ_CHECK(non_negative(p.intra_node.base_latency_s) && non_negative(p.intra_node.step_latency_s),
                     "intra-node latencies >= 0");
  if (p.is_torus()) {
    STEPSIM_FUZZ_CHECK(p.torus_dims.size() <= 3, "1 to 3 torus dims");
    for (int d : p.torus_dims) STEPSIM_FUZZ_CHECK(d >= 1, "torus dims >= 1");
    STEPSIM_FUZZ_CHECK(positive(p.torus_axis.bandwidth_bytes_per_s), "torus axis bandwidth > 0");
  } else {
    STEPSIM_FUZZ_CHECK(p.nics_per_node >= 1, "nics_per_node >= 1");
    STEPSIM_FUZZ_CHECK(positive(p.nic_bandwidth_bytes_per_s), "per-NIC bandwidth > 0");
    STEPSIM_FUZZ_CHECK(positive(p.node_egress_bytes_per_s()), "node egress finite and > 0");
    STEPSIM_FUZZ_CHECK(non_negative(p.inter_node.base_latency_s) && non_negative(p.inter_node.step_latency_s),
                       "inter-node latencies >= 0");
  }
  return 0;
}
