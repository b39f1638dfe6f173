// SPDX-License-Identifier: Apache-2.0
// Tests of hardware/: profiles, roofline, α-β collectives, the engine against the closed form.
#include "hardware/collective_model.hpp"
#include "hardware/compute_model.hpp"
#include "hardware/hardware_profile_json.hpp"
#include "hardware/task_cost.hpp"
#include "sim/engine.hpp"
#include "sim/support/error.hpp"
#include "tests/support/catch.hpp"

#include <nlohmann/json.hpp>

using namespace stepsim;
using namespace stepsim::hardware;
using Catch::Matchers::Contains;

namespace {

// One flat ring of 64 ranks at 50 GiB/s and 1 us per step, described by a user (issue 2).
HardwareProfile flat_ring_64() {
  const auto doc = nlohmann::json::parse(R"({
    "name": "flat-ring-64",
    "compute": {"peak_flops_per_s": 1e15},
    "memory": {"hbm_bytes": "80GB", "hbm_bandwidth_bytes_per_s": "3TB/s"},
    "node": {"gpus_per_node": 64},
    "intra_node": {"bandwidth_bytes_per_s": "50GiB/s", "step_latency_s": "1us"},
    "inter_node": {"nics_per_node": 1, "nic_bandwidth_bytes_per_s": "400Gb/s"}
  })");
  return parse_profile(doc, "flat-ring-64.json");
}

}  // namespace

TEST_CASE("hardware: every built-in profile loads with DESIGN.md's nominal numbers", "[hardware]") {
  const auto names = builtin_profile_names();
  CHECK(names.size() == 7);
  for (const auto& n : names) CHECK_NOTHROW(load_profile(n));
  const auto h100 = load_profile("h100-sxm");
  CHECK(h100.peak_flops_per_s == 989e12);
  CHECK(h100.intra_node.bandwidth_bytes_per_s == 450e9);
  CHECK(h100.node_egress_bytes_per_s() == 400e9);  // 8 NICs × 400 Gb/s
  CHECK(load_profile("h800").intra_node.bandwidth_bytes_per_s == 200e9);
  CHECK(load_profile("a100-sxm").node_egress_bytes_per_s() == 200e9);
  CHECK(load_profile("h200").hbm_bytes == 141e9);
  const auto tpu = load_profile("tpu-v5p");
  CHECK(tpu.torus_dims == std::vector<int>{16, 20, 28});
  CHECK(tpu.peak_flops_per_s == 459e12);
  CHECK_THROWS_WITH(load_profile("h100"), Contains("did you mean"));
}

TEST_CASE("hardware: roofline picks the slower of compute and memory", "[hardware]") {
  const auto h100 = load_profile("h100-sxm");
  const double eff_flops = 989e12 * h100.gemm_efficiency;
  CHECK(kernel_time_s(h100, 1e12, 0) == Approx(1e12 / eff_flops));
  CHECK(kernel_time_s(h100, 0, 3.35e9) == Approx(3.35e9 / (3.35e12 * h100.hbm_efficiency)));
  CHECK(sequence_time_s(h100, 1e12, 3.35e9) ==
        Approx(kernel_time_s(h100, 1e12, 0) + kernel_time_s(h100, 0, 3.35e9)));
}

TEST_CASE("hardware: ring AllReduce closed form 2(N-1)α + 2(N-1)/N·V/W", "[hardware]") {
  const auto hw = flat_ring_64();
  const double v = 1e9, w = 50.0 * 1024 * 1024 * 1024;
  const auto c = collective_cost(hw, CollectiveOp::AllReduce, v, {64, 64, 0});
  CHECK(c.algorithm == "ring");
  CHECK(c.bandwidth_s == Approx(2.0 * 63 / 64 * v / w).epsilon(1e-12));
  CHECK(c.latency_s == Approx(2.0 * 63 * 1e-6).epsilon(1e-12));
  const auto rs = collective_cost(hw, CollectiveOp::ReduceScatter, v, {64, 64, 0});
  CHECK(rs.bandwidth_s == Approx(63.0 / 64 * v / w).epsilon(1e-12));
  CHECK(rs.latency_s == Approx(63 * 1e-6).epsilon(1e-12));
  const auto ag = collective_cost(hw, CollectiveOp::AllGather, v, {64, 64, 0});
  CHECK(ag.time_s() == rs.time_s());
  CHECK(collective_cost(hw, CollectiveOp::AllReduce, v, {1, 1, 0}).time_s() == 0);
}

TEST_CASE("hardware: hierarchical takes the slower segment (seed 000 §7.2)", "[hardware]") {
  const auto h100 = load_profile("h100-sxm");
  const double v = 16e9;
  // 2 nodes: NVLink segment 7/8·V/450e9 is slower than 1/2·V/400e9.
  const auto two = collective_cost(h100, CollectiveOp::AllReduce, v, {16, 8, 0});
  CHECK(two.algorithm == "hierarchical");
  CHECK(two.bottleneck == "intra-node fabric");
  CHECK(two.bandwidth_s == Approx(2 * 7.0 / 8 * v / 450e9));
  // 8 nodes: network segment 7/8·V/400e9 is slower.
  const auto eight = collective_cost(h100, CollectiveOp::AllReduce, v, {64, 8, 0});
  CHECK(eight.bottleneck == "node network egress");
  CHECK(eight.bandwidth_s == Approx(2 * 7.0 / 8 * v / 400e9));
  // Fewer NICs is one edit and slows the network segment.
  auto half = h100;
  half.nics_per_node = 4;
  CHECK(collective_cost(half, CollectiveOp::AllReduce, v, {64, 8, 0}).bandwidth_s == Approx(2 * 7.0 / 8 * v / 200e9));
  // A flat ring across nodes is bounded by min(NVLink, node egress).
  const auto ring = collective_cost(h100, CollectiveOp::AllReduce, v, {64, 8, 0}, CollectiveAlgorithm::Ring);
  CHECK(ring.bandwidth_s == Approx(2 * 63.0 / 64 * v / 400e9));  // channels spread over the 8 NICs
}

TEST_CASE("hardware: TPU torus rings over k axes", "[hardware]") {
  const auto tpu = load_profile("tpu-v5p");
  const double v = 1e9;
  const auto three = collective_cost(tpu, CollectiveOp::AllReduce, v, {8960, 4, 3});
  CHECK(three.torus_dims == std::vector<int>{16, 20, 28});
  const double capacity = 16.0 / 15 + 20.0 / 19 + 28.0 / 27;
  CHECK(three.bandwidth_s == Approx(2 * v / (1.8e11 * capacity)));
  const auto one = collective_cost(tpu, CollectiveOp::AllReduce, v, {28, 4, 1});
  CHECK(one.torus_dims == std::vector<int>{28});
  CHECK(one.bandwidth_s == Approx(2 * 27.0 / 28 * v / 1.8e11));
  CHECK(torus_ring_lengths(tpu, 64, 3) == std::vector<int>{4, 4, 4});
  CHECK(torus_ring_lengths(tpu, 512, 2) == std::vector<int>{16, 32});
}

TEST_CASE("hardware: multi-node group on a profile without a network is an input error", "[hardware]") {
  auto hw = load_profile("h100-sxm");
  hw.nics_per_node = 0;
  CHECK_THROWS_WITH(collective_cost(hw, CollectiveOp::AllReduce, 1e6, {16, 8, 0}), Contains("has no network"));
}

TEST_CASE("hardware: the engine finishes a lone collective at exactly the closed-form time", "[hardware][invariant]") {
  const auto hw = flat_ring_64();
  sim::TaskGraph g;
  sim::Task t;
  t.kind = sim::TaskKind::Transfer;
  t.name = "allreduce";
  t.op = static_cast<std::uint32_t>(OpCode::AllReduce);
  t.bytes = 123456789.0;
  t.rendezvous = 0;
  const auto id = g.add_task(t);
  g.freeze("lone");
  const StepCostModel cost(hw, {{64, 64, 0}}, CollectiveAlgorithm::Auto);
  const auto tl = sim::run(g, cost);
  const double w = 50.0 * 1024 * 1024 * 1024;
  const double closed = 2.0 * 63 * 1e-6 + 2.0 * 63 / 64 * t.bytes / w;
  CHECK(tl[id].start.ps() == 0);
  CHECK(tl[id].end == sim::Time::from_seconds(closed));
}

TEST_CASE("hardware: DP threshold equals C/W with ring factors (seed 000 §7)", "[hardware]") {
  const auto h100 = load_profile("h100-sxm");
  const auto t = dp_threshold(h100, {16384, 8, 0});
  CHECK(t.tokens_per_gpu == Approx(989e12 / 400e9 * 2047.0 / 2048));
  CHECK(t.tokens_per_gpu_asymptotic == Approx(989e12 / 400e9));
  CHECK(t.min_global_batch_tokens == Approx(t.tokens_per_gpu * 16384));
  const auto moe = dp_threshold(h100, {16384, 8, 0}, 128, 4);
  CHECK(moe.tokens_per_gpu == Approx(32 * t.tokens_per_gpu));
}
