// SPDX-License-Identifier: Apache-2.0
// Where the mesh's ranks sit (models/mesh_layout.hpp): Megatron-LM's RankGenerator numbering
// (megatron/core/parallel_state.py; shared/reference/semantics-parallel.md §A8), counted by hand.
#include "models/mesh_layout.hpp"
#include "tests/support/catch.hpp"

using namespace stepsim::models;

namespace {
constexpr MeshOrder kTpPpDp{MeshDim::TP, MeshDim::CP, MeshDim::PP, MeshDim::DP};  // --use-tp-pp-dp-mapping
}

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
