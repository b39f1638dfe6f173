// SPDX-License-Identifier: Apache-2.0
// Tests of the built-in profiles of the 2026 clusters (issue 19 item 1, 2, 4): their datasheet
// numbers as shared/reference/hardware.md §3.1 gives them, every source tagged with its kind,
// the NVL72 rack as one NVLink domain, and switchless meshes (xGMI, NVLink bridges) per peer.
#include "hardware/collective_model.hpp"
#include "hardware/hardware_profile_json.hpp"
#include "hardware/nccl_model.hpp"
#include "sim/support/error.hpp"
#include "tests/support/catch.hpp"

#include <nlohmann/json.hpp>

using namespace stepsim;
using namespace stepsim::hardware;
using Catch::Matchers::Contains;

namespace {

constexpr double GiB = 1024.0 * 1024 * 1024;

// busbw (nccl-tests definition) of a cost's bandwidth term, bytes/s.
double busbw(const CollectiveCost& c, CollectiveOp op, double bytes, int ranks) {
  return bus_factor(op, ranks) * bytes / c.bandwidth_s;
}

}  // namespace

TEST_CASE("profiles: source kinds are read from each source's tag") {
  CHECK(source_kinds("datasheet: 989 TFLOP/s") == std::vector<std::string>{"datasheet"});
  CHECK(source_kinds("datasheet, measured: a: b") == std::vector<std::string>{"datasheet", "measured"});
  CHECK(source_kinds("derived , fitted: x") == std::vector<std::string>{"derived", "fitted"});
  CHECK(source_kinds("assumed:") == std::vector<std::string>{"assumed"});
  CHECK(source_kinds("compute.peak_flops_per_s: 989").empty());    // a field name is no kind
  CHECK(source_kinds("datasheet measured: x").empty());            // kinds are comma-separated
  CHECK(source_kinds("datasheet, guessed: x").empty());            // every word must be a kind
  CHECK(source_kinds("no colon at all").empty());
}

TEST_CASE("profiles: every built-in profile says what kind of fact each source is") {
  for (const auto& n : builtin_profile_names()) {
    const auto p = load_profile(n);
    CAPTURE(n);
    CHECK(!p.sources.empty());
    for (const auto& s : p.sources) {
      CAPTURE(s);
      CHECK(!source_kinds(s).empty());
    }
  }
}

TEST_CASE("profiles: the accelerators of 2026 with their datasheet numbers (hardware.md §3.1)") {
  // Every accelerator issue 19 names has a profile.
  const auto names = builtin_profile_names();
  for (const char* want : {"b200", "b300", "gb200-nvl72", "gb300-nvl72", "h20", "h200-nvl", "mi300x", "mi325x", "mi355x",
                           "tpu-v6e", "tpu7x"}) {
    CAPTURE(want);
    CHECK(std::find(names.begin(), names.end(), want) != names.end());
  }
  const auto b200 = load_profile("b200");
  CHECK(b200.peak_flops_per_s == 2250e12);
  CHECK(b200.fp8_flops_per_s == 4500e12);
  CHECK(b200.hbm_bytes == 179 * GiB);  // AWS p6-b200: 1,432 GiB / 8
  CHECK(b200.hbm_bandwidth_bytes_per_s == 8e12);
  CHECK(b200.intra_node.bandwidth_bytes_per_s == 900e9);  // NVLink 5, one way
  CHECK(b200.node_egress_bytes_per_s() == 400e9);         // 8 x 400 Gb/s
  CHECK(b200.nccl.arch == "blackwell");
  CHECK(load_profile("b300").nic_bandwidth_bytes_per_s == 100e9);  // 800 Gb/s ConnectX-8
  CHECK(load_profile("b300").hbm_bytes == 268 * GiB);
  const auto gb200 = load_profile("gb200-nvl72");
  CHECK(gb200.gpus_per_node == 72);  // one NVLink domain: 18 trays x 4
  CHECK(gb200.peak_flops_per_s == 2500e12);
  CHECK(gb200.hbm_bytes == 185 * GiB);
  CHECK(load_profile("gb300-nvl72").gpus_per_node == 72);
  CHECK(load_profile("gb300-nvl72").nic_bandwidth_bytes_per_s == 100e9);
  CHECK(load_profile("h20").peak_flops_per_s == 148e12);
  CHECK(load_profile("h200-nvl").peak_flops_per_s == 835e12);
  CHECK_FALSE(load_profile("h200-nvl").nccl.nvls);  // a bridge has no NVSwitch multicast
  const auto mi300x = load_profile("mi300x");
  CHECK(mi300x.peak_flops_per_s == 1307.4e12);
  CHECK(mi300x.hbm_bytes == 192 * GiB);
  CHECK(mi300x.intra_node_fabric == "xgmi");
  CHECK(mi300x.intra_peer_bandwidth_bytes_per_s == 64e9);
  CHECK(default_collective_model(mi300x) == CollectiveModel::AlphaBeta);  // no RCCL tuner yet
  CHECK(load_profile("mi325x").hbm_bandwidth_bytes_per_s == 6e12);
  CHECK(load_profile("mi355x").intra_peer_bandwidth_bytes_per_s == 76.8e9);
  const auto v6e = load_profile("tpu-v6e");
  CHECK(v6e.torus_dims == std::vector<int>{16, 16});
  CHECK(v6e.peak_flops_per_s == 918e12);
  CHECK(v6e.hbm_bytes == 32 * GiB);
  const auto tpu7x = load_profile("tpu7x");
  CHECK(tpu7x.torus_dims[0] * tpu7x.torus_dims[1] * tpu7x.torus_dims[2] == 9216);
  CHECK(tpu7x.fp8_flops_per_s == 4614e12);
}

TEST_CASE("profiles: an NVL72 rack prices collectives of all 72 GPUs on NVLink, the NICs only between racks") {
  const auto rack = load_profile("gb200-nvl72");
  const double bytes = 1 * GiB;
  for (CollectiveModel model : {CollectiveModel::Nccl, CollectiveModel::AlphaBeta}) {
    CAPTURE(collective_model_name(model));
    const auto in_rack = model_collective_cost(model, rack, CollectiveOp::AllReduce, bytes, {72, 72});
    CHECK(in_rack.intra_share == 1);
    CHECK(in_rack.inter_share == 0);
    CHECK(in_rack.bottleneck.find("intra-node") != std::string::npos);
    // NVLink's 900 GB/s per GPU, not a tray's NICs (4 x 50 GB/s), sets the time: busbw above
    // what any NIC could carry.
    CHECK(busbw(in_rack, CollectiveOp::AllReduce, bytes, 72) > 400e9);
    const auto two_racks = model_collective_cost(model, rack, CollectiveOp::AllReduce, bytes, {144, 72});
    CHECK(two_racks.inter_share > 0);
  }
  // NCCL on one NVLink domain of 72 GPUs uses NVLS, as on one HGX node.
  CHECK(nccl_collective_cost(rack, CollectiveOp::AllReduce, bytes, {72, 72}).algorithm == "nvls");
  // The comm-bound threshold and hierarchies follow the domain: 72 ranks on one "node".
  const auto tray_sized = model_collective_cost(CollectiveModel::AlphaBeta, rack, CollectiveOp::AllReduce, bytes, {72, 4});
  CHECK(tray_sized.inter_share > 0);  // only when the scenario says 4 per node does the network appear
}

TEST_CASE("profiles: on a switchless mesh a group uses only its members' links (xGMI, NVLink bridge)") {
  const auto mi300x = load_profile("mi300x");
  const double bytes = 4e9;
  // hardware.md §3.3: a 2-GPU collective on MI300X sees one 64 GB/s link; 8 GPUs all seven.
  CHECK(mi300x.intra_group_bandwidth_bytes_per_s(1) == 0);
  CHECK(mi300x.intra_group_bandwidth_bytes_per_s(2) == 64e9);
  CHECK(mi300x.intra_group_bandwidth_bytes_per_s(4) == 192e9);
  CHECK(mi300x.intra_group_bandwidth_bytes_per_s(8) == 448e9);
  const auto two = collective_cost(mi300x, CollectiveOp::AllReduce, bytes, {2, 8});
  const auto eight = collective_cost(mi300x, CollectiveOp::AllReduce, bytes, {8, 8});
  CHECK(busbw(two, CollectiveOp::AllReduce, bytes, 2) == Approx(64e9));
  CHECK(busbw(eight, CollectiveOp::AllReduce, bytes, 8) == Approx(448e9));
  // ml-engineering measured 47.7 and 312.9 GB/s busbw: the nominal model is an upper bound.
  CHECK(busbw(two, CollectiveOp::AllReduce, bytes, 2) > 47.7e9);
  CHECK(busbw(eight, CollectiveOp::AllReduce, bytes, 8) > 312.9e9);
  CHECK(collective_bandwidth_lower_bound_s(mi300x, CollectiveOp::AllReduce, bytes, {2, 8}) <= two.bandwidth_s * (1 + 1e-12));
  // Behind a switch the group size does not matter.
  const auto h100 = load_profile("h100-sxm");
  CHECK(h100.intra_group_bandwidth_bytes_per_s(2) == 450e9);
  // NCCL model on the H200 NVL bridge: a 2-GPU ring reaches one peer's 150 GB/s, 4 GPUs the
  // search graph's 12 x 30 GB/s.
  const auto nvl = load_profile("h200-nvl");
  const auto ring2 = nccl_tuning_table(nvl, CollectiveOp::AllReduce, bytes, {2, 4}, CollectiveAlgorithm::Ring);
  const auto ring4 = nccl_tuning_table(nvl, CollectiveOp::AllReduce, bytes, {4, 4}, CollectiveAlgorithm::Ring);
  double best2 = 0, best4 = 0;
  for (const auto& e : ring2) best2 = std::max(best2, e.bus_bw_gbs);
  for (const auto& e : ring4) best4 = std::max(best4, e.bus_bw_gbs);
  CHECK(best2 == Approx(150));
  CHECK(best4 == Approx(360));
}

TEST_CASE("profiles: a peer bandwidth above the GPU's whole intra-node bandwidth is refused") {
  nlohmann::json doc = nlohmann::json::parse(R"({"name": "mesh", "compute": {"peak_flops_per_s": 1e15},
    "memory": {"hbm_bytes": "80GiB", "hbm_bandwidth_bytes_per_s": 3e12}, "node": {"gpus_per_node": 8},
    "intra_node": {"fabric": "xgmi", "bandwidth_bytes_per_s": 448e9, "peer_bandwidth_bytes_per_s": 500e9},
    "inter_node": {"nics_per_node": 8, "nic_bandwidth_bytes_per_s": "400Gb/s"}})");
  CHECK_THROWS_WITH(parse_profile(doc, "mesh.json"),
                    Contains("mesh.json") && Contains("/intra_node/peer_bandwidth_bytes_per_s") && Contains("at most"));
  doc["intra_node"]["peer_bandwidth_bytes_per_s"] = 0;
  CHECK_THROWS_WITH(parse_profile(doc, "mesh.json"), Contains("/intra_node/peer_bandwidth_bytes_per_s"));
  doc["intra_node"]["peer_bandwidth_bytes_per_s"] = 64e9;
  CHECK(parse_profile(doc, "mesh.json").intra_group_bandwidth_bytes_per_s(3) == 128e9);
}
