// SPDX-License-Identifier: Apache-2.0
// Where the mesh's ranks sit (models/mesh_layout.hpp): Megatron-LM's RankGenerator numbering
// (megatron/core/parallel_state.py; shared/reference/semantics-parallel.md §A8), counted by hand.
#include "models/mesh_layout.hpp"
#include "models/report.hpp"
#include "models/scenario.hpp"
#include "models/simulate.hpp"
#include "tests/support/catch.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

using namespace stepsim;
using namespace stepsim::models;
using Catch::Matchers::Contains;

namespace {
constexpr MeshOrder kTpPpDp{MeshDim::TP, MeshDim::CP, MeshDim::PP, MeshDim::DP};  // --use-tp-pp-dp-mapping

// Llama-3.1-8B under FSDP on 8-GPU H100 nodes, micro-batch 1 × 2048 tokens, 8 micro-batches.
Scenario llama8b(std::int64_t dp, std::int64_t tp, std::int64_t pp, const std::string& order,
                 const std::string& extra = "") {
  return parse_scenario(nlohmann::json::parse(fmt::format(
                            R"({{"model": "llama3-8b", "hardware": "h100-sxm",
    "parallelism": {{"strategy": "fsdp", "dp": {}, "tp": {}, "pp": {}{}}},
    "batch": {{"micro_batch_size": 1, "seq_len": 2048, "grad_accum": 8}}{}}})",
                            dp, tp, pp, order.empty() ? "" : fmt::format(R"(, "order": "{}")", order), extra)),
                        "test.json");
}
}  // namespace

TEST_CASE("mesh layout: Megatron-LM's default order numbers TP fastest and PP slowest", "[models][mesh]") {
  // tp 4 × cp 2 × dp 4 × pp 2 = 64 ranks on 8-GPU nodes.
  const RankLayout l({4, 2, 4, 2}, kMegatronOrder, 8);
  CHECK(l.world() == 64);
  CHECK(l.stride(MeshDim::TP) == 1);
  CHECK(l.stride(MeshDim::CP) == 4);
  CHECK(l.stride(MeshDim::DP) == 8);
  CHECK(l.stride(MeshDim::PP) == 32);
  // Rank 45 = pp 1 (32) + dp 1 (8) + cp 1 (4) + tp 1.
  CHECK(l.coords(45) == std::array<std::int64_t, 4>{1, 1, 1, 1});
  for (std::int64_t r = 0; r < l.world(); ++r) CHECK(l.rank(l.coords(r)) == r);
  CHECK(l.node_of(45) == 5);
  // A node holds one TP × CP block: a TP group of 4 (2 on the node), a CP group of 2 (4 on the
  // node, one per TP rank); each DP group one rank per node, 8 DP groups sharing its NICs.
  CHECK(l.members_per_node(l.whole(MeshDim::TP)) == 4);
  CHECK(l.groups_per_node(l.whole(MeshDim::TP)) == 2);
  CHECK(l.members_per_node(l.whole(MeshDim::CP)) == 2);
  CHECK(l.groups_per_node(l.whole(MeshDim::CP)) == 4);
  CHECK(l.members_per_node(l.whole(MeshDim::DP)) == 1);
  CHECK(l.groups_per_node(l.whole(MeshDim::DP)) == 8);
  // The DP × CP group: the 2 CP ranks of the node, 4 nodes (one per DP rank).
  CHECK(l.members(l.data(1, 8)) == 8);
  CHECK(l.members_per_node(l.data(1, 8)) == 2);
  CHECK(l.groups_per_node(l.data(1, 8)) == 4);
  // HSDP over it with shard groups of 4: shard = cp × 2 DP ranks (2 per node), replicas the rest.
  CHECK(l.members_per_node(l.data(1, 4)) == 2);
  CHECK(l.members(l.data(4, 2)) == 2);
  CHECK(l.members_per_node(l.data(4, 2)) == 1);
  CHECK(l.members_per_node(l.whole(MeshDim::PP)) == 1);
}

TEST_CASE("mesh layout: a smaller TP leaves a node several DP ranks of one group", "[models][mesh]") {
  // tp 2 × dp 16 on 8-GPU nodes: each DP group 4 ranks per node, 2 groups (one per TP rank).
  const RankLayout l({2, 1, 16, 1}, kMegatronOrder, 8);
  CHECK(l.members_per_node(l.data(1, 16)) == 4);
  CHECK(l.groups_per_node(l.data(1, 16)) == 2);
  // Expert parallelism over 8 consecutive DP ranks: 4 per node; every 8th DP rank 1 per node.
  CHECK(l.members_per_node(l.data(1, 8)) == 4);
  CHECK(l.members_per_node(l.data(8, 2)) == 1);
  CHECK(l.groups_per_node(l.data(8, 2)) == 8);
  // TP over whole nodes: tp 16 on 8-GPU nodes, 8 per node, one TP group per node.
  const RankLayout wide({16, 1, 4, 1}, kMegatronOrder, 8);
  CHECK(wide.members_per_node(wide.whole(MeshDim::TP)) == 8);
  CHECK(wide.groups_per_node(wide.whole(MeshDim::TP)) == 1);
  CHECK(wide.members_per_node(wide.data(1, 4)) == 1);
  CHECK(wide.groups_per_node(wide.data(1, 4)) == 8);
  // A job smaller than its node: 4 GPUs used.
  const RankLayout small({2, 1, 2, 1}, kMegatronOrder, 8);
  CHECK(small.gpus_used_per_node() == 4);
  CHECK(small.members_per_node(small.data(1, 2)) == 2);
  CHECK(small.groups_per_node(small.data(1, 2)) == 2);
}

TEST_CASE("mesh layout: tp-cp-pp-dp puts the pipeline inside a node and DP across", "[models][mesh]") {
  // Megatron-LM's --use-tp-pp-dp-mapping order; tp 2 × pp 4 × dp 4 on 8-GPU nodes: a node holds
  // one whole pipeline (tp 2 × pp 4), each DP group one rank per node.
  const RankLayout l({2, 1, 4, 4}, kTpPpDp, 8);
  CHECK(l.stride(MeshDim::PP) == 2);
  CHECK(l.stride(MeshDim::DP) == 8);
  CHECK(l.coords(13) == std::array<std::int64_t, 4>{1, 0, 1, 2});
  for (std::int64_t r = 0; r < l.world(); ++r) CHECK(l.rank(l.coords(r)) == r);
  CHECK(l.members_per_node(l.whole(MeshDim::PP)) == 4);
  CHECK(l.members_per_node(l.data(1, 4)) == 1);
  CHECK(l.groups_per_node(l.data(1, 4)) == 8);
  // With CP between TP and PP, the DP × CP group is two runs: CP (2 on the node) and DP (1).
  const RankLayout c({2, 2, 4, 2}, kTpPpDp, 8);
  const MeshGroup data = c.data(1, 8);
  REQUIRE(data.size() == 2);
  CHECK(c.members(data) == 8);
  CHECK(c.members_per_node(data) == 2);
  CHECK(c.groups_per_node(data) == 4);
  // Its HSDP replica part beyond a shard of the 2 CP ranks: DP only, one per node.
  CHECK(c.members(c.data(2, 4)) == 4);
  CHECK(c.members_per_node(c.data(2, 4)) == 1);
}

TEST_CASE("mesh layout: the placement order moves groups between NVLink and the network", "[models][mesh]") {
  // tp 2 × pp 4 × dp 4 = 32 GPUs on 4 nodes. Default tp-cp-dp-pp: a node holds tp 2 × dp 4 (each
  // DP group 4 GPUs on each of 2 nodes), every stage boundary crosses nodes. tp-cp-pp-dp
  // (Megatron-LM's --use-tp-pp-dp-mapping): a node holds one whole pipeline (tp 2 × pp 4), its
  // sends on NVLink, each DP group one GPU on each of 4 nodes, the node's 8 GPUs in 8 DP groups
  // sharing its NICs.
  SimulatedStep by_default, by_pp;
  const Report d = run(llama8b(4, 2, 4, ""), by_default);
  const Report p = run(llama8b(4, 2, 4, "tp-cp-pp-dp"), by_pp);
  CHECK(by_default.step.groups[0].ranks == 4);
  CHECK(by_default.step.groups[0].ranks_per_node == 4);
  CHECK(by_pp.step.groups[0].ranks == 4);
  CHECK(by_pp.step.groups[0].ranks_per_node == 1);
  CHECK(by_pp.step.groups[0].concurrent_groups_per_node == 8);
  CHECK(d.pp_exposed_comm_s > 2 * p.pp_exposed_comm_s);
  CHECK(p.dp_exposed_comm_s > d.dp_exposed_comm_s);
  CHECK_THAT(report_text(p), Contains("placement order tp-cp-pp-dp (innermost first): TP groups of 2 inside a node; DP "
                                      "groups of 4 over 4 nodes, 1 per node; PP groups of 4 inside a node"));
  CHECK_THAT(report_text(d), !Contains("placement"));
  // dp-tp-cp-pp: DP innermost, dp 8 fills the node, so each TP group's 2 GPUs sit on 2 nodes and
  // its AllReduces cross the network, 8 groups per node sharing the NICs.
  SimulatedStep by_dp;
  const Report t0 = run(llama8b(8, 2, 2, ""));
  const Report t = run(llama8b(8, 2, 2, "dp-tp-cp-pp"), by_dp);
  const auto& tp = by_dp.step.groups[static_cast<std::size_t>(by_dp.step.tp_group)];
  CHECK(tp.ranks_per_node == 1);
  CHECK(tp.concurrent_groups_per_node == 8);
  CHECK(t.tp_exposed_comm_s > 3 * t0.tp_exposed_comm_s);
  CHECK(t.step_time_s > t0.step_time_s);
}

TEST_CASE("mesh layout: per_rank finds a slow GPU by its world rank in any order", "[models][mesh]") {
  // pp 4 × dp 2 on one 8-GPU node: every group inside it, so the order changes only which world
  // rank is which (coordinates dp 1, pp 1: rank 1 + 2 × 1 = 3 in tp-cp-dp-pp, 1 + 4 × 1 = 5 in
  // tp-cp-pp-dp). The same GPU slowed gives the same step.
  const auto slow = [](int rank) {
    return fmt::format(R"(, "sim": {{"rank_mode": "per_rank", "slow_ranks": [{{"rank": {}, "compute_factor": 1.5}}]}})",
                       rank);
  };
  const Scenario sd = llama8b(2, 1, 4, "", slow(3)), sp = llama8b(2, 1, 4, "tp-cp-pp-dp", slow(5));
  CHECK(per_rank_slot(sd, 3) == 1 * 4 + 1);  // copy (dp) 1 × pp 4 + stage 1
  CHECK(per_rank_slot(sp, 5) == 1 * 4 + 1);
  CHECK(per_rank_slot(sd, 6) == 0 * 4 + 3);
  CHECK(per_rank_slot(sp, 6) == 1 * 4 + 2);
  const Report d = run(sd);
  const Report p = run(sp);
  CHECK(p.step_time_s == Approx(d.step_time_s).epsilon(1e-12));
  CHECK(d.step_time_s > 1.2 * run(llama8b(2, 1, 4, "")).step_time_s);
  // The DP reduction ends both pipelines together, and the report says so.
  CHECK(d.per_rank.slowest_rank == 0);
  CHECK(d.per_rank.slowest_ties == 2);
  CHECK_THAT(report_text(d), Contains("(spread 0.000 ms, every pipeline ends together)"));
  // A pipeline's ranks stage by stage: every 2nd rank in tp-cp-dp-pp, consecutive in
  // tp-cp-pp-dp (the report as it would read with dp 1's pipeline alone the slowest).
  Report d1 = d, p1 = p;
  for (Report* r : {&d1, &p1}) {
    r->per_rank.slowest_ties = 1;
    r->per_rank.slowest_copy = 1;
  }
  d1.per_rank.slowest_rank = per_rank_world_rank(sd, 1, 0);
  p1.per_rank.slowest_rank = per_rank_world_rank(sp, 1, 0);
  CHECK(d1.per_rank.slowest_rank == 1);
  CHECK(p1.per_rank.slowest_rank == 4);
  CHECK_THAT(report_text(d1), Contains("the slowest pipeline ranks 1, 3, …, 7)"));
  CHECK_THAT(report_text(p1), Contains("the slowest pipeline ranks 4, 5, …, 7)"));
}

TEST_CASE("mesh layout: the order is read as Megatron-LM writes it, and refused where nodes would split groups",
          "[models][mesh]") {
  MeshOrder o{};
  CHECK(parse_mesh_order("tp-cp-ep-dp-pp", {2, 1, 4, 2}, o).empty());
  CHECK(o == kMegatronOrder);
  CHECK(parse_mesh_order("tp-cp-ep-pp-dp", {2, 1, 4, 2}, o).empty());  // --use-tp-pp-dp-mapping
  CHECK(o == kTpPpDp);
  CHECK(parse_mesh_order("ep-tp-cp-ep-dp-pp", {2, 1, 4, 2}, o) == "'ep' appears twice");
  // Left-out dimensions of degree 1 go outermost, in tp, cp, dp, pp order.
  CHECK(parse_mesh_order("pp-dp", {1, 1, 4, 2}, o).empty());
  CHECK(mesh_order_name(o) == "pp-dp-tp-cp");
  CHECK(parse_mesh_order("pp-dp", {2, 1, 4, 2}, o) == "it leaves out tp, whose degree is 2; name every dimension of size > 1");
  CHECK(parse_mesh_order("tp-dp-tp", {2, 1, 4, 1}, o) == "'tp' appears twice");
  CHECK(parse_mesh_order("tp--dp", {2, 1, 4, 1}, o).find("'' is not a dimension") == 0);
  // tp 2 × pp 3 = 6 ranks inside DP do not divide an 8-GPU node.
  CHECK(RankLayout({2, 1, 16, 3}, kTpPpDp, 8).node_problem() ==
        "tp 2 × pp 3 = 6 ranks inside dp do not divide a node's 8 GPUs, so dp groups would straddle nodes unevenly");
  CHECK(RankLayout({2, 1, 16, 3}, kMegatronOrder, 8).node_problem().empty());
  // dp 4 × tp 4 with DP innermost on 8-GPU nodes: 2 TP ranks a node, TP over 2 nodes: fine;
  // dp 3 inside tp 4 on 6-GPU nodes: 2 of a TP group's 4 ranks per node: fine; on 9-GPU nodes not.
  CHECK(RankLayout({4, 1, 4, 1}, {MeshDim::DP, MeshDim::TP, MeshDim::CP, MeshDim::PP}, 8).node_problem().empty());
  CHECK(RankLayout({4, 1, 3, 1}, {MeshDim::DP, MeshDim::TP, MeshDim::CP, MeshDim::PP}, 6).node_problem().empty());
  CHECK(RankLayout({4, 1, 3, 1}, {MeshDim::DP, MeshDim::TP, MeshDim::CP, MeshDim::PP}, 9).node_problem() ==
        "a node would hold 3 ranks of each tp group of 4, which does not divide it");
  CHECK_THROWS_WITH(llama8b(16, 2, 3, "tp-pp-dp", R"(, "cluster": {"gpus_per_node": 8, "nodes": 12})"),
                    Contains("/parallelism/order: dp × tp × pp (16 × 2 × 3 = 96) placed tp-pp-dp-cp on 8-GPU nodes"));
}
