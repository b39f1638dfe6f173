// SPDX-License-Identifier: Apache-2.0
// Tests of hardware/: profiles, roofline, α-β collectives, the engine against the closed form.
#include "hardware/collective_model.hpp"
#include "hardware/compute_model.hpp"
#include "hardware/gemm_model.hpp"
#include "hardware/hardware_profile_json.hpp"
#include "hardware/nccl_model.hpp"
#include "hardware/task_cost.hpp"
#include "sim/engine.hpp"
#include "sim/support/error.hpp"
#include "sim/support/json_reader.hpp"
#include "tests/support/catch.hpp"

#include <nlohmann/json.hpp>

#include <cmath>

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
  CHECK(names.size() == 19);  // + h100-hbm2e-500w (issue 14 item 2), + 11 of issue 19
  for (const auto& n : names) CHECK_NOTHROW(load_profile(n));
  const auto h100 = load_profile("h100-sxm");
  CHECK(h100.peak_flops_per_s == 989e12);
  CHECK(h100.intra_node.bandwidth_bytes_per_s == 450e9);
  CHECK(h100.node_egress_bytes_per_s() == 400e9);  // 8 NICs × 400 Gb/s
  CHECK(load_profile("h800").intra_node.bandwidth_bytes_per_s == 200e9);
  CHECK(load_profile("a100-sxm").node_egress_bytes_per_s() == 200e9);
  // Issue 13 item 4: capacities in binary units as the hardware has them, less a reserve.
  CHECK(load_profile("h200").hbm_bytes == 143771.0 * (1 << 20));
  CHECK(h100.hbm_bytes == 80.0 * (1 << 30));
  CHECK(h100.usable_hbm_bytes() == Approx(78.5 * (1 << 30)));
  CHECK(load_profile("a100-sxm").hbm_bytes == 80.0 * (1 << 30));
  CHECK(load_profile("tpu-v5p").hbm_bytes == 95.0 * (1 << 30));
  for (const auto& n : names) {
    const auto p = load_profile(n);
    CAPTURE(n);
    CHECK(p.hbm_reserved_bytes < 0.05 * p.hbm_bytes);
    CHECK(p.usable_hbm_bytes() > 0);
  }
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
  // Axis-by-axis ReduceScatter on shrinking shards, AllGather in reverse, chains rotated over
  // the axes with part sizes that equalise them: exactly the bound 2(N−1)/N·V / (3·W_axis).
  CHECK(three.bandwidth_s == Approx(2 * 8959.0 / 8960 * v / (3 * 1.8e11)).epsilon(1e-9));
  const auto one = collective_cost(tpu, CollectiveOp::AllReduce, v, {28, 4, 1});
  CHECK(one.torus_dims == std::vector<int>{28});
  CHECK(one.bandwidth_s == Approx(2 * 27.0 / 28 * v / 1.8e11));
  CHECK(torus_ring_lengths(tpu, 64, 3) == std::vector<int>{4, 4, 4});
  CHECK(torus_ring_lengths(tpu, 512, 2) == std::vector<int>{16, 32});
}

TEST_CASE("hardware: a 16-chip, 3-axis v5p AllReduce is no faster than its bandwidth bound (issue 13 item 1)",
          "[hardware][invariant]") {
  // Before the multi-axis schedule: 2.10 ms (Σ d/(d−1) over 2×2×4), below the 3.47 ms any
  // algorithm needs: each chip receives (N−1)/N·V twice through at most 3 axes of 1.8e11 B/s.
  const auto tpu = load_profile("tpu-v5p");
  const double v = 1e9;
  const auto c = collective_cost(tpu, CollectiveOp::AllReduce, v, {16, 4, 3});
  CHECK(c.torus_dims == std::vector<int>{2, 2, 4});
  const double bound = 2 * 15.0 / 16 * v / (3 * 1.8e11);
  CHECK(bound == Approx(3.472e-3).epsilon(1e-3));
  CHECK(c.bandwidth_s == Approx(bound).epsilon(1e-9));
  // Two axes (4×4): 2·15/16·V / (2·W_axis); one axis 16: 2·15/16·V / W_axis.
  CHECK(collective_cost(tpu, CollectiveOp::AllReduce, v, {16, 4, 2}).bandwidth_s ==
        Approx(2 * 15.0 / 16 * v / (2 * 1.8e11)).epsilon(1e-9));
  CHECK(collective_cost(tpu, CollectiveOp::ReduceScatter, v, {16, 4, 1}).bandwidth_s ==
        Approx(15.0 / 16 * v / 1.8e11).epsilon(1e-12));
}

TEST_CASE("hardware: each GPU drives its own NIC, so a group's network grows with its GPUs per node (issue 13 item 2)",
          "[hardware]") {
  // NVIDIA/nccl#1250: a 2-node AllReduce took 0.27 / 0.13 / 0.067 s with 1 / 2 / 4 GPUs per node.
  // Before: every group got the node's 8 NICs (1 GB: 2.8 ms with 1 GPU per node, 3.9 ms with 4).
  const auto h100 = load_profile("h100-sxm");
  CHECK(h100.gpus_per_nic == 1);
  const double v = 1e9, nic = 50e9;  // 400 Gb/s
  for (int g : {1, 2, 4, 8}) {
    CAPTURE(g);
    CHECK(h100.group_nics(g) == g);
    CHECK(h100.group_network_bytes_per_s(g) == Approx(g * nic));
    const auto ab = collective_cost(h100, CollectiveOp::AllReduce, v, {2 * g, g, 0});
    if (g == 1) CHECK(ab.bandwidth_s == Approx(2 * 0.5 * v / nic));
    CHECK(ab.bandwidth_s >= 2 * 0.5 * v / (g * nic) * (1 - 1e-12));
  }
  // NCCL's tuner: one channel per NIC the group drives; 1 GPU per node cannot beat one NIC.
  double previous = 1e9;
  for (int g : {1, 2, 4, 8}) {
    CAPTURE(g);
    const auto c = nccl_collective_cost(h100, CollectiveOp::AllReduce, v, {2 * g, g, 0});
    CHECK(c.bandwidth_s >= 0.5 * 2 * v / (g * nic) * (1 - 1e-12));
    CHECK(c.time_s() < previous);
    previous = c.time_s();
  }
  CHECK(nccl_collective_cost(h100, CollectiveOp::AllReduce, v, {2, 1, 0}).time_s() > 20e-3);
  // HSDP: 8 replica groups of 1 GPU per node each use their own NIC; with 2 GPUs per NIC they share.
  CHECK(h100.group_network_bytes_per_s(1, 8) == Approx(nic));
  auto shared = h100;
  shared.nics_per_node = 4;
  shared.gpus_per_nic = 2;
  CHECK(shared.group_network_bytes_per_s(1, 8) == Approx(nic / 2));
  CHECK(shared.group_network_bytes_per_s(8, 1) == Approx(4 * nic));
}

TEST_CASE("hardware: a profile whose NICs leave GPUs unserved is refused", "[hardware]") {
  auto doc = nlohmann::json::parse(R"({
    "name": "x", "compute": {"peak_flops_per_s": 1e15},
    "memory": {"hbm_bytes": "80GB", "hbm_bandwidth_bytes_per_s": "3TB/s"},
    "node": {"gpus_per_node": 8}, "intra_node": {"bandwidth_bytes_per_s": "450GB/s"},
    "inter_node": {"nics_per_node": 4, "gpus_per_nic": 1, "nic_bandwidth_bytes_per_s": "400Gb/s"}})");
  CHECK_THROWS_WITH(parse_profile(doc, "x.json"), Contains("/inter_node/gpus_per_nic") && Contains("without a NIC"));
  doc["inter_node"].erase("gpus_per_nic");
  CHECK(parse_profile(doc, "x.json").gpus_per_nic == 2);  // default: GPUs spread evenly
}

TEST_CASE("hardware: no collective beats its bandwidth lower bound (every profile, op, group, size, model)",
          "[hardware][invariant][property]") {
  std::vector<HardwareProfile> profiles;
  for (const auto& n : builtin_profile_names()) profiles.push_back(load_profile(n));
  profiles.push_back(parse_profile(read_json_file(std::string(STEPSIM_SOURCE_DIR) +
                                                  "/configs/examples/hardware/a100-4nic-cluster.json"),
                                   "a100-4nic-cluster.json"));
  profiles.push_back(flat_ring_64());
  const CollectiveOp ops[] = {CollectiveOp::AllReduce, CollectiveOp::ReduceScatter, CollectiveOp::AllGather};
  const double sizes[] = {1, 64, 4096, 1e5, 1 << 20, 3.3e7, 1e9, 1.6e10, 1e12};
  long checked = 0;
  for (const auto& hw : profiles) {
    std::vector<GroupShape> groups;
    if (hw.is_torus()) {
      for (int axes = 1; axes <= 3; ++axes)
        for (int n : {2, 4, 8, 16, 28, 64, 96, 512, 1000, 4096, 8960}) groups.push_back({n, hw.gpus_per_node, axes});
    } else {
      for (int g = 1; g <= hw.gpus_per_node; g *= 2)
        for (int n : {1, 2, 3, 4, 8, 16, 64, 512, 4096}) {
          if (n < g && n != 1) continue;
          groups.push_back({n, g, 0});
          if (n % g == 0 && g < hw.gpus_per_node) groups.push_back({n, g, 0, hw.gpus_per_node / g});
        }
    }
    for (const auto& grp : groups)
      for (CollectiveOp op : ops)
        for (double v : sizes) {
          const double bound = collective_bandwidth_lower_bound_s(hw, op, v, grp);
          if (grp.ranks > 1) {
            REQUIRE(bound > 0);
          }
          std::vector<CollectiveModel> models{CollectiveModel::AlphaBeta};
          if (!hw.nccl.arch.empty()) models.push_back(CollectiveModel::Nccl);
          for (CollectiveModel m : models)
            for (CollectiveAlgorithm a :
                 {CollectiveAlgorithm::Auto, CollectiveAlgorithm::Ring, CollectiveAlgorithm::Hierarchical}) {
              if (hw.is_torus() && a != CollectiveAlgorithm::Auto) continue;
              CollectiveCost c;
              try {
                c = model_collective_cost(m, hw, op, v, grp, a);
              } catch (const InputError&) {
                continue;  // e.g. no NCCL algorithm for that restriction
              }
              CAPTURE(hw.name, collective_op_name(op), v, grp.ranks, grp.ranks_per_node, grp.torus_axes,
                      grp.concurrent_groups_per_node, collective_model_name(m), c.algorithm, c.protocol,
                      c.bandwidth_s, bound);
              // The bandwidth term alone must not beat the floor (relative slack for rounding only).
              CHECK(c.bandwidth_s >= bound * (1 - 1e-9));
              ++checked;
            }
        }
  }
  CHECK(checked > 5000);
}

// An all-to-all's floor: every rank sends (n − 1)/n of its buffer, at most through its NVLink and
// its share of its node's NICs at once: (n − 1)/n · V / (W_intra + W_nic). Inside one node, the
// closed form: (g − 1)/n · V / W_intra after the intra-node base and n − 1 steps.
TEST_CASE("hardware: an all-to-all moves (n - 1)/n of its buffer and no faster than its links allow",
          "[hardware][invariant][property]") {
  const auto hw = load_profile("h100-sxm");
  const GroupShape node{8, 8, 0, 1};
  const CollectiveCost c = all_to_all_cost(hw, 64e6, node);
  CHECK(c.bandwidth_s == Approx(7.0 / 8 * 64e6 / hw.intra_group_bandwidth_bytes_per_s(8)).epsilon(1e-12));
  CHECK(c.latency_s == Approx(hw.intra_node.base_latency_s + 7 * hw.intra_node.step_latency_s).epsilon(1e-12));
  CHECK(c.intra_share == 1);
  CHECK(c.inter_share == 0);
  CHECK(all_to_all_cost(hw, 64e6, {1, 1, 0, 1}).time_s() == 0);
  long checked = 0;
  for (const auto& name : builtin_profile_names()) {
    const auto p = load_profile(name);
    if (p.is_torus() || p.nics_per_node == 0) continue;
    for (int g = 1; g <= p.gpus_per_node; g *= 2)
      for (int n : {2, 4, 8, 16, 64, 512}) {
        if (n < g || n % g != 0) continue;
        for (double v : {1.0, 4096.0, 1e6, 6.7e7, 1e10}) {
          const GroupShape grp{n, g, 0, std::max(1, p.gpus_per_node / g)};
          const CollectiveCost a = all_to_all_cost(p, v, grp);
          const double nic = n > g ? p.group_network_bytes_per_s(g, grp.concurrent_groups_per_node) / g : 0.0;
          const double intra = g > 1 ? p.intra_group_bandwidth_bytes_per_s(g) : 0.0;
          const double bound = static_cast<double>(n - 1) / n * v / (intra + nic);
          CAPTURE(name, n, g, v, a.bandwidth_s, bound);
          CHECK(a.bandwidth_s >= bound * (1 - 1e-9));
          CHECK(a.latency_s > 0);
          ++checked;
        }
      }
  }
  CHECK(checked > 100);
  // Across nodes the NICs set the pace: 2 nodes of 8, each GPU sending half its buffer off-node.
  const CollectiveCost two = all_to_all_cost(hw, 64e6, {16, 8, 0, 1});
  CHECK(two.inter_share == 1);
  CHECK(two.bandwidth_s > c.bandwidth_s);
  hardware::HardwareProfile none = hw;
  none.nics_per_node = 0;
  CHECK_THROWS_WITH(all_to_all_cost(none, 1e6, {16, 8, 0, 1}), Contains("has no network"));
}

// Public measurements (shared/data/small_message_latency.md §2a: Azure NDv4, 8 x A100 per node,
// 8 x 200 Gb/s HDR, NCCL, nccl-tests at 1 GB): alltoall busbw 254.69 GB/s in one node (AllGather
// 253.59) and 37.80 GB/s on 2 nodes x 8; latency at 1 KB 9.34 and 49.75 us. The a100-40gb
// profile is that machine; the step's cost model (NCCL's) prices the all-to-all tasks.
TEST_CASE("hardware: all-to-all against nccl-tests on 8 and 16 A100s (NDv4)", "[hardware][accuracy]") {
  const auto hw = load_profile("a100-40gb");
  const StepCostModel cost(hw, {GroupShape{8, 8, 0, 1}, GroupShape{16, 8, 0, 1}}, CollectiveAlgorithm::Auto, nullptr,
                           CollectiveModel::Nccl);
  const auto busbw = [&](std::uint32_t group, double bytes, int n) {
    sim::Task t;
    t.kind = sim::TaskKind::Transfer;
    t.op = static_cast<std::uint32_t>(OpCode::AllToAll);
    t.group = group;
    t.bytes = bytes;
    return bytes / cost.collective(t).time_s() * (n - 1) / n;
  };
  const double node = busbw(0, 1e9, 8), two = busbw(1, 1e9, 16);
  CAPTURE(node, two);
  CHECK(node == Approx(254.69e9).epsilon(0.10));
  CHECK(two == Approx(37.80e9).epsilon(0.15));
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
  const auto moe = dp_threshold(h100, {16384, 8, 0}, 128.0 / 4);
  CHECK(moe.tokens_per_gpu == Approx(32 * t.tokens_per_gpu));
}

TEST_CASE("hardware: measured attention kernels interpolate their curves and stay below peak (issue 14 item 2)",
          "[hardware]") {
  const HardwareProfile a100 = load_profile("a100-sxm");
  const AttentionThroughput* fa2 = a100.attention_kernel("flash-attention-2");
  REQUIRE(fa2 != nullptr);
  // kernels.md §2.2 (FlashAttention-2 fwd+bwd on A100): causal hd128 155 TFLOP/s at 2k, 173 at 4k.
  CHECK(attention_flops_per_s(*fa2, true, 128, 2048) == Approx(155e12));
  CHECK(attention_flops_per_s(*fa2, true, 128, 4096) == Approx(173e12));
  CHECK(attention_flops_per_s(*fa2, true, 128, std::sqrt(2048.0 * 4096.0)) == Approx(164e12));  // log2 midpoint
  CHECK(attention_flops_per_s(*fa2, true, 128, 65536) == Approx(189e12));  // beyond 16k: the 16k value
  CHECK(attention_flops_per_s(*fa2, true, 128, 100) == Approx(99e12));     // below 512: the 512 value
  CHECK(attention_flops_per_s(*fa2, true, 96, 2048) == Approx(0.5 * (140e12 + 155e12)));  // between hd64 and hd128
  CHECK(attention_flops_per_s(*fa2, false, 256, 8192) == Approx(201e12));  // above hd128: hd128's
  // A kernel's work: passes × 4·B·S²·D (halved when causal) / rate, nothing else.
  KernelWork w;
  AttentionWork a;
  a.kernel = static_cast<std::size_t>(fa2 - a100.attention.data());
  a.batch = 32;
  a.seq_len = 4096;
  a.head_dim = 128;
  a.causal = true;
  a.passes = 2.5;
  w.attention.push_back(a);
  const double f = 4.0 * 32 * 4096.0 * 4096.0 * 128 / 2;
  CHECK(kernel_work_time_s(a100, a100.gemm_curve, w, 1.0, 0, 0, 0) == Approx(2.5 * f / 173e12));
  // Physical bound: no measured kernel beats its profile's peak, at any length or head dim.
  for (const std::string& name : builtin_profile_names()) {
    const HardwareProfile p = load_profile(name);
    for (const auto& k : p.attention)
      for (const auto& c : k.curves)
        for (double r : c.fwd_bwd_flops_per_s) {
          CAPTURE(name, k.kernel, c.head_dim, c.causal);
          CHECK(r < p.peak_flops_per_s);
        }
  }
}
