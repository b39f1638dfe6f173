// SPDX-License-Identifier: Apache-2.0
// Tests of hardware/nccl_model: the NCCL v2.30 tuner mirror (semantics.md §D.2–D.3) against
// its own worked examples and against the public nccl-tests tables (shared/data/nccl/,
// shared/data/small_message_latency.md).
#include "hardware/nccl_model.hpp"
#include "hardware/hardware_profile_json.hpp"
#include "hardware/task_cost.hpp"
#include "sim/support/error.hpp"
#include "tests/support/catch.hpp"

#include <nlohmann/json.hpp>

#include <cmath>

using namespace stepsim;
using namespace stepsim::hardware;
using Catch::Matchers::Contains;

namespace {

const NcclEstimate& cell(const std::vector<NcclEstimate>& t, NcclAlgo a, NcclProto p) {
  for (const auto& e : t)
    if (e.algo == a && e.proto == p) return e;
  FAIL("no cell " << nccl_algo_name(a) << "/" << nccl_proto_name(p));
  return t.front();
}

// `name` at its NICs' line rate: the NCCL tuner mirror alone, without the fabric terms its
// network preset adds (those are fitted and checked in tests/validate/fabric_fit_test.cpp).
HardwareProfile line_rate(const std::string& name) {
  auto hw = load_profile(name);
  hw.fabric_latency_per_log2_nodes_s = 0;
  hw.fabric_bandwidth_efficiency = 1;
  return hw;
}

bool has_cell(const std::vector<NcclEstimate>& t, NcclAlgo a, NcclProto p) {
  for (const auto& e : t)
    if (e.algo == a && e.proto == p) return true;
  return false;
}

// nccl-tests busbw of an AllReduce of `bytes` taking `s` seconds on n ranks, GB/s (§D.5 rule 92).
double allreduce_busbw_gbs(double bytes, double s, int n) { return bytes / s * 2.0 * (n - 1) / n / 1e9; }

}  // namespace

TEST_CASE("nccl model: latency tables reproduce semantics.md's 8xH100 worked example (rule 81)") {
  const auto h100 = load_profile("h100-sxm");
  const GroupShape node{8, 8, 0};
  const auto ar = nccl_tuning_table(h100, CollectiveOp::AllReduce, 0, node);
  CHECK(cell(ar, NcclAlgo::Ring, NcclProto::Simple).latency_us == Approx(56.0));
  CHECK(cell(ar, NcclAlgo::Ring, NcclProto::LL).latency_us == Approx(15.0));
  CHECK(cell(ar, NcclAlgo::Ring, NcclProto::LL128).latency_us == Approx(40.6));
  CHECK(cell(ar, NcclAlgo::Tree, NcclProto::Simple).latency_us == Approx(64.4));
  CHECK(cell(ar, NcclAlgo::Nvls, NcclProto::Simple).latency_us == Approx(25.0));
  // NVLS is Simple only; NVLS_TREE is off on one node; PAT is AG/RS with one GPU per node.
  CHECK_FALSE(has_cell(ar, NcclAlgo::Nvls, NcclProto::LL));
  CHECK_FALSE(has_cell(ar, NcclAlgo::NvlsTree, NcclProto::Simple));
  CHECK_FALSE(has_cell(ar, NcclAlgo::Pat, NcclProto::Simple));
  const auto ag = nccl_tuning_table(h100, CollectiveOp::AllGather, 0, node);
  CHECK(cell(ag, NcclAlgo::Ring, NcclProto::Simple).latency_us == Approx(32.2));
  CHECK_FALSE(has_cell(ag, NcclAlgo::Tree, NcclProto::Simple));  // Tree is AllReduce only

  // Bandwidths (rule 79): 12 search channels x 30 GB/s = 360 GB/s bus.
  CHECK(cell(ar, NcclAlgo::Ring, NcclProto::Simple).bus_bw_gbs == Approx(360.0));
  CHECK(cell(ar, NcclAlgo::Ring, NcclProto::Simple).alg_bw_gbs == Approx(360.0 * 8 / 14));
  CHECK(cell(ar, NcclAlgo::Ring, NcclProto::LL).bus_bw_gbs == Approx(141.0));          // llMaxBw Hopper 1 node
  CHECK(cell(ar, NcclAlgo::Ring, NcclProto::LL128).bus_bw_gbs == Approx(0.92 * 360));  // < 12 x 36.7
  // NVLS: the profile's measured 480 GB/s (nccl-tests#212; the shared 8xH100/H200 logs) replaces
  // NCCL's formula bwIntra·nvlsEff·(nCh−1)/nCh·2 = 561 GB/s, which a profile without it keeps.
  CHECK(cell(ar, NcclAlgo::Nvls, NcclProto::Simple).bus_bw_gbs == Approx(480.0));
  auto formula = h100;
  formula.nccl.nvls_bus_bandwidth_bytes_per_s = 0;
  const auto ar_formula = nccl_tuning_table(formula, CollectiveOp::AllReduce, 0, node);
  CHECK(cell(ar_formula, NcclAlgo::Nvls, NcclProto::Simple).bus_bw_gbs == Approx(360 * 0.85 * 11.0 / 12 * 2));
  // AllGather scales by the same ratio: intraBw × (ppn−1)/ppn = 240 × 7/8.
  CHECK(cell(ag, NcclAlgo::Nvls, NcclProto::Simple).bus_bw_gbs == Approx(240.0 * 7 / 8));
}

TEST_CASE("nccl model: 8xH100 small AllReduce lies between the measured 8xH100 tables") {
  // Ring LL latency 15.0 us (rule 81 worked example) + 4 us host launch (the profile's default
  // nccl.launch_overhead_s, hardware_profile.hpp) = 19.0 us. Measured at 1 KiB
  // (shared/data/small_message_latency.md §1 and shared/data/nccl/): AWS p5 16.43 us (one
  // process per GPU), Azure ND H100 v5 25.6 us (from busbw); the model sits between them, within 25 %.
  const auto h100 = load_profile("h100-sxm");
  const GroupShape node{8, 8, 0};
  const auto at8 = nccl_collective_cost(h100, CollectiveOp::AllReduce, 8, node);
  CHECK(at8.algorithm == "ring");
  CHECK(at8.protocol == "LL");
  CHECK(at8.time_s() * 1e6 == Approx(15.0 + 4.0).epsilon(0.001));
  const auto at1k = nccl_collective_cost(h100, CollectiveOp::AllReduce, 1024, node);
  CHECK(at1k.protocol == "LL");
  CHECK(at1k.time_s() * 1e6 > 16.43);
  CHECK(at1k.time_s() * 1e6 < 25.6);
  CHECK(std::fabs(at1k.time_s() * 1e6 / 16.43 - 1) < 0.25);
  CHECK(std::fabs(at1k.time_s() * 1e6 / 25.6 - 1) < 0.30);
  // A CUDA-graph profile (launch_overhead_s = 0) gets the tuner's 15.0 us back.
  auto graphs = h100;
  graphs.nccl.launch_overhead_s = 0;
  CHECK(nccl_collective_cost(graphs, CollectiveOp::AllReduce, 8, node).time_s() * 1e6 == Approx(15.0).epsilon(0.001));
  // The α-β model's small-message time for comparison stays in the same class (~16 us, seed 000 §4).
  CHECK(collective_cost(h100, CollectiveOp::AllReduce, 1024, node).time_s() * 1e6 == Approx(16.2).epsilon(0.01));
}

TEST_CASE("nccl model: protocol switch points on one 8xH100 node") {
  // Ring LL (15 us + S / 80.6 GB/s) until NVLS (25 us + S / 274.3 GB/s, the profile's 480 GB/s
  // busBw) is faster: S* = 10 us / (1/80.57 - 1/274.3) GB/s^-1 ~= 1.141 MB.
  const auto h100 = load_profile("h100-sxm");
  const GroupShape node{8, 8, 0};
  const double ll_alg = 141.0 * 8 / 14, nvls_alg = 480.0 * 8 / 14;
  const double switch_bytes = 10.0 * 1000 / (1 / ll_alg - 1 / nvls_alg);
  CHECK(switch_bytes == Approx(1.141e6).epsilon(0.01));
  const auto below = nccl_collective_cost(h100, CollectiveOp::AllReduce, 0.99 * switch_bytes, node);
  const auto above = nccl_collective_cost(h100, CollectiveOp::AllReduce, 1.01 * switch_bytes, node);
  CHECK(below.algorithm + "/" + below.protocol == "ring/LL");
  CHECK(above.algorithm + "/" + above.protocol == "nvls/Simple");
  // Without NVLS (A100, NVLink 3): LL → LL128 → Simple as the size grows.
  const auto a100 = load_profile("a100-sxm");
  CHECK(nccl_collective_cost(a100, CollectiveOp::AllReduce, 8, node).protocol == "LL");
  CHECK(nccl_collective_cost(a100, CollectiveOp::AllReduce, 4 << 20, node).protocol == "LL128");
  CHECK(nccl_collective_cost(a100, CollectiveOp::AllReduce, 1 << 30, node).protocol == "Simple");
  CHECK(nccl_collective_cost(a100, CollectiveOp::AllReduce, 1 << 30, node).algorithm == "ring");
  // --algorithm ring restricts the candidates to Ring.
  CHECK(nccl_collective_cost(h100, CollectiveOp::AllReduce, 1 << 30, node, CollectiveAlgorithm::Ring).algorithm ==
        "ring");
}

TEST_CASE("nccl model: large-message busbw near the measured tables") {
  const double v = 8589934592.0;  // 8 GiB, the last row of the 8-rank tables
  // a100_oci_1n_allreduce: 235.14 GB/s busbw at 8 GiB (ring Simple, 12 x 20 GB/s = 240 bus).
  const auto a100 = load_profile("a100-40gb");
  const auto ca = nccl_collective_cost(a100, CollectiveOp::AllReduce, v, {8, 8, 0});
  CHECK(std::fabs(allreduce_busbw_gbs(v, ca.time_s(), 8) / 235.14 - 1) < 0.05);
  // h100_aws_p5_1n_allreduce: 480.43 GB/s at 8 GiB (NVLS). NCCL's nominal NVLS bus bandwidth
  // (561 GB/s) is optimistic by ~17 %.
  const auto h100 = line_rate("h100-sxm");
  const auto ch = nccl_collective_cost(h100, CollectiveOp::AllReduce, v, {8, 8, 0});
  CHECK(ch.algorithm == "nvls");
  CHECK(std::fabs(allreduce_busbw_gbs(v, ch.time_s(), 8) / 480.43 - 1) < 0.20);
  // h100_hgx_ib400_2n_allreduce_nt309a: 468.46 GB/s at 8 GiB on 2 x 8 H100 (NVLS_TREE, capped
  // per NIC channel by perChMaxNVLSTreeBws[Hopper][2 nodes] = 57.7: 8 x 57.7 = 461.6).
  const auto two = nccl_collective_cost(h100, CollectiveOp::AllReduce, v, {16, 8, 0});
  CHECK(two.algorithm == "nvls_tree");
  CHECK(two.protocol == "Simple");
  CHECK(std::fabs(allreduce_busbw_gbs(v, two.time_s(), 16) / 468.46 - 1) < 0.05);
  // h100_ib400_4n_allreduce_nt309b: 324.99 GB/s at 4 GiB on 4 x 8 H100 (8 x 45.5 = 364 cap).
  const double v4 = 4294967296.0;
  const auto four = nccl_collective_cost(h100, CollectiveOp::AllReduce, v4, {32, 8, 0});
  CHECK(std::fabs(allreduce_busbw_gbs(v4, four.time_s(), 32) / 324.99 - 1) < 0.15);
}

TEST_CASE("nccl model: multi-node latency terms (rule 80)") {
  const auto h100 = load_profile("h100-sxm");
  const auto t = nccl_tuning_table(h100, CollectiveOp::AllReduce, 8, {16, 8, 0});
  // Ring LL over 2 nodes: 6.6 + (30 - 2) x max(0.6, 1.0 net overhead) + 2 x 2.7 = 40.0 us.
  CHECK(cell(t, NcclAlgo::Ring, NcclProto::LL).latency_us == Approx(40.0));
  // Tree LL: 6.8 + 2 x (7 x 1.0 + log2(2) x 5.0) = 30.8 us; it wins for tiny messages.
  CHECK(cell(t, NcclAlgo::Tree, NcclProto::LL).latency_us == Approx(30.8));
  CHECK(nccl_collective_cost(h100, CollectiveOp::AllReduce, 8, {16, 8, 0}).algorithm == "tree");
  // NVLS_TREE: 25 + 2 x 1 x 20.9 = 66.8 us.
  CHECK(cell(t, NcclAlgo::NvlsTree, NcclProto::Simple).latency_us == Approx(66.8));
  // PAT only with one GPU per node (AG/RS).
  const auto pat = nccl_tuning_table(h100, CollectiveOp::AllGather, 1 << 20, {4, 1, 0});
  CHECK(cell(pat, NcclAlgo::Pat, NcclProto::Simple).latency_us == Approx(8.0 + 2 * 14.0 / 3.5 + 2.8 * 4));
}

TEST_CASE("nccl model: one rank, profiles without an nccl object, StepCostModel") {
  const auto h100 = load_profile("h100-sxm");
  const auto one = nccl_collective_cost(h100, CollectiveOp::AllReduce, 1e6, {1, 8, 0});
  CHECK(one.time_s() == 0);
  CHECK(one.algorithm == "none");
  const auto tpu = load_profile("tpu-v5p");
  CHECK_THROWS_AS(nccl_collective_cost(tpu, CollectiveOp::AllReduce, 1e6, {8, 4, 0}), InputError);
  CHECK_THROWS_WITH(nccl_collective_cost(tpu, CollectiveOp::AllReduce, 1e6, {8, 4, 0}), Contains("nccl"));
  CHECK(collective_model_name(parse_collective_model("nccl", "--cost-model", "")) == "nccl");
  CHECK_THROWS_WITH(parse_collective_model("nccll", "--cost-model", ""), Contains("alpha-beta or nccl"));

  // The model choice reaches the task cost model.
  sim::Task t;
  t.op = static_cast<std::uint32_t>(OpCode::AllReduce);
  t.bytes = 1024;
  t.group = 0;
  const StepCostModel ab(h100, {{8, 8, 0}}, CollectiveAlgorithm::Auto);
  const StepCostModel nc(h100, {{8, 8, 0}}, CollectiveAlgorithm::Auto, nullptr, CollectiveModel::Nccl);
  CHECK(nc.collective_model() == CollectiveModel::Nccl);
  CHECK(nc.seconds(t) == Approx(nccl_collective_cost(h100, CollectiveOp::AllReduce, 1024, {8, 8, 0}).time_s()));
  CHECK(ab.seconds(t) == Approx(collective_cost(h100, CollectiveOp::AllReduce, 1024, {8, 8, 0}).time_s()));
  CHECK(nc.collective(t).protocol == "LL");
  CHECK(ab.collective(t).protocol.empty());
}

TEST_CASE("nccl model: profile nccl object is validated") {
  auto doc = nlohmann::json::parse(R"({
    "name": "x", "compute": {"peak_flops_per_s": 1e15},
    "memory": {"hbm_bytes": "80GB", "hbm_bandwidth_bytes_per_s": "3TB/s"},
    "node": {"gpus_per_node": 8}, "intra_node": {"bandwidth_bytes_per_s": "450GB/s"},
    "inter_node": {"nics_per_node": 8, "nic_bandwidth_bytes_per_s": "400Gb/s"},
    "nccl": {"arch": "hoper", "ring_channels": 12, "channel_bandwidth_bytes_per_s": "30GB/s"}
  })");
  CHECK_THROWS_WITH(parse_profile(doc, "x.json"), Contains("/nccl/arch") && Contains("hopper"));
  doc["nccl"]["arch"] = "hopper";
  doc["nccl"].erase("ring_channels");
  CHECK_THROWS_WITH(parse_profile(doc, "x.json"), Contains("ring_channels"));
  doc["nccl"]["ring_channels"] = 12;
  CHECK(parse_profile(doc, "x.json").nccl.channel_bandwidth_bytes_per_s == Approx(30e9));
  CHECK(parse_profile(doc, "x.json").nccl.launch_overhead_s == Approx(4e-6));  // default
  doc["nccl"]["launch_overhead_s"] = "0us";
  CHECK(parse_profile(doc, "x.json").nccl.launch_overhead_s == 0);
  doc["nccl"]["launch_overhead_s"] = "2ms";
  CHECK_THROWS_WITH(parse_profile(doc, "x.json"), Contains("/nccl/launch_overhead_s") && Contains("below 1 ms"));
}

TEST_CASE("nccl model: no multi-node AllReduce outruns the nodes' NICs (NVLS_TREE included)", "[nccl][bounds]") {
  // A physical bound: each node's data crosses its NICs at least 2·(N−1)/N times the buffer, so
  // algbw ≤ egress·N / (2·(N−1)). NVLS_TREE's NCCL caps alone let 50 Gb/s NICs carry 346 GB/s.
  for (const char* nic : {"50Gb/s", "100Gb/s", "200Gb/s", "400Gb/s"}) {
    CAPTURE(nic);
    auto doc = profile_document("h100-sxm");
    doc["inter_node"]["nic_bandwidth_bytes_per_s"] = nic;
    const auto hw = parse_profile(doc, "test");
    for (int nodes : {2, 4, 8, 32}) {
      CAPTURE(nodes);
      const double bytes = 1 << 30;
      const auto c = nccl_collective_cost(hw, CollectiveOp::AllReduce, bytes, {nodes * 8, 8, 0});
      const double algbw = bytes / c.time_s();
      const double bound = hw.node_egress_bytes_per_s() * nodes / (2.0 * (nodes - 1));
      CHECK(algbw <= bound * (1 + 1e-9));
    }
  }
  // The measured 2 x 8 H100 table (468 GB/s busBw at 8 GiB) stays reachable: its bound is 750.
  const auto h100 = line_rate("h100-sxm");
  const double v = 8589934592.0;
  const auto two = nccl_collective_cost(h100, CollectiveOp::AllReduce, v, {16, 8, 0});
  CHECK(allreduce_busbw_gbs(v, two.time_s(), 16) > 440);
}
