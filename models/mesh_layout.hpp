// SPDX-License-Identifier: Apache-2.0
// Where the ranks of a device mesh sit (issue 15 item 4): the world's ranks numbered over the
// dimensions tp, cp, dp and pp in a placement order, innermost first, as Megatron-LM's
// RankGenerator numbers them (megatron/core/parallel_state.py, `order` "tp-cp-ep-dp-pp" by
// default; shared/reference/semantics-parallel.md §A); nodes hold gpus_per_node consecutive
// ranks. Every process group, and how many of its members share a node, follows from it.
//
// A rank's coordinate along dimension d is (rank / stride(d)) % size(d), stride(d) being the
// product of the sizes of the dimensions inside d. A process group varies some coordinates
// (MeshSpan: a dimension, or a part of one) and fixes the others.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace stepsim::models {

/// A dimension of the device mesh (Megatron-LM's names).
enum class MeshDim : std::uint8_t { TP = 0, CP = 1, DP = 2, PP = 3 };

/// The dimensions in placement order, innermost (consecutive ranks) first.
using MeshOrder = std::array<MeshDim, 4>;

/// Megatron-LM's default order tp-cp-(ep-)dp-pp (torchtitan's mesh ["pp", "dp_replicate",
/// "dp_shard", "cp", "tp"] read from the inside out is the same): TP innermost, PP outermost.
inline constexpr MeshOrder kMegatronOrder{MeshDim::TP, MeshDim::CP, MeshDim::DP, MeshDim::PP};

/// Lower-case name of `d` ("tp", "cp", "dp", "pp").
const char* mesh_dim_name(MeshDim d);

/// `order` as Megatron-LM writes it, innermost first: "tp-cp-dp-pp".
std::string mesh_order_name(const MeshOrder& order);

/// Reads a placement order as Megatron-LM's initialize_model_parallel takes it: dimension names
/// joined by '-' (any case; at most 64 characters), innermost first ("tp-cp-ep-dp-pp", its default; "tp-cp-ep-pp-dp" under
/// --use-tp-pp-dp-mapping). "ep" may appear once and places nothing: EP groups are always
/// consecutive data-parallel ranks (Megatron-LM's dense rank generator ignores it too). A dimension
/// left out goes outermost, after the others in tp, cp, dp, pp order, as RankGenerator appends
/// it; `sizes` (indexed by MeshDim) must then be 1 for it.
/// @returns "" and sets `order`, or why `text` is refused (an unknown or repeated name, "ep"
///          a dimension of size > 1 left out).
std::string parse_mesh_order(const std::string& text, const std::array<std::int64_t, 4>& sizes, MeshOrder& order);

/// Part of one dimension a process group varies: the coordinates c0 + m · inner, m in
/// [0, size), of dimension `dim` (inner ≥ 1), i.e. the world ranks r0 + m · inner · stride(dim).
/// A whole dimension is {dim, 1, size(dim)}; inner × size may pass the dimension's size where
/// the dimension placed right outside it continues the run (RankLayout::data()).
struct MeshSpan {
  MeshDim dim = MeshDim::DP;
  std::int64_t inner = 1;
  std::int64_t size = 1;
};

/// A process group's shape: the spans it varies (every other coordinate fixed).
using MeshGroup = std::vector<MeshSpan>;

/// The ranks of a mesh of sizes tp × cp × dp × pp, numbered in `order`, on nodes of
/// gpus_per_node consecutive ranks. Cheap to copy.
class RankLayout {
 public:
  /// @param sizes          the degrees, indexed by MeshDim (each ≥ 1)
  /// @param order          placement order, innermost first (a permutation of the four)
  /// @param gpus_per_node  ranks per node (≥ 1)
  RankLayout(std::array<std::int64_t, 4> sizes, MeshOrder order, int gpus_per_node);

  std::int64_t size(MeshDim d) const { return sizes_[static_cast<int>(d)]; }
  /// Distance in world ranks between consecutive coordinates of `d`.
  std::int64_t stride(MeshDim d) const { return strides_[static_cast<int>(d)]; }
  const MeshOrder& order() const { return order_; }
  std::int64_t world() const { return world_; }
  int gpus_per_node() const { return gpus_per_node_; }
  /// GPUs of a node the job uses: gpus_per_node, or the world when it is smaller.
  int gpus_used_per_node() const;

  /// Ranks of `group` on one node: for each run of spans that are consecutive in world ranks
  /// (stride × size of one = stride of the next), min(size, max(1, gpus_per_node / stride)),
  /// multiplied over the runs. Exact when every node holds a box of the mesh (problem() "");
  /// ≥ 1.
  int members_per_node(const MeshGroup& group) const;
  /// Ranks of `group` in all: the product of its spans' sizes.
  std::int64_t members(const MeshGroup& group) const;
  /// Groups of this shape with ranks on one node: gpus_used_per_node() / members_per_node(),
  /// ≥ 1 (each of a node's GPUs sits in exactly one).
  int groups_per_node(const MeshGroup& group) const;

  /// The whole of dimension `d`.
  MeshGroup whole(MeshDim d) const { return {{d, 1, size(d)}}; }
  /// Part of the data-parallel ranks (dp × cp: the ranks that hold the same weights, CP inner,
  /// DP outer, as Megatron-LM's DP-CP group and torchtitan's dp_shard × cp mesh): the `size`
  /// ranks at data-rank distance `inner`. data(1, cp · dp) is the whole DP × CP group;
  /// HSDP's shard group is data(1, shard), its replica group data(shard, dp · cp / shard).
  /// Precondition: inner × size divides cp · dp and, where a part crosses from CP into DP,
  /// inner divides cp (or cp divides inner).
  MeshGroup data(std::int64_t inner, std::int64_t size) const;

  /// Coordinates of world rank `rank`, indexed by MeshDim.
  std::array<std::int64_t, 4> coords(std::int64_t rank) const;
  /// The world rank at `coords` (the inverse of coords()).
  std::int64_t rank(const std::array<std::int64_t, 4>& coords) const;
  /// Node of world rank `rank`.
  std::int64_t node_of(std::int64_t rank) const { return rank / gpus_per_node_; }

  /// "" when every node holds a box of the mesh (so every group of a dimension has as many
  /// ranks on each of its nodes, members_per_node() exact): for each dimension d of size > 1
  /// that a node boundary cuts (stride(d) < gpus_per_node < stride(d) × size(d)), stride(d)
  /// divides gpus_per_node and gpus_per_node / stride(d) divides size(d). Else why not.
  /// Precondition: the world fits one node or is a multiple of gpus_per_node.
  std::string node_problem() const;

  /// "" when every group of `group`'s shape has as many ranks on each of its nodes (so
  /// members_per_node() is exact): each run of consecutive world ranks (stride s, n members)
  /// lies inside aligned blocks (s × n divides gpus_per_node when s × n < gpus_per_node) or
  /// spreads evenly (s divides gpus_per_node, gpus_per_node / s divides n); a run with
  /// s ≥ gpus_per_node has one member per node. Else why not. Always "" when the world fits one
  /// node.
  std::string group_problem(const MeshGroup& group) const;

  /// True when every dimension of degree > 1 has the same stride under `order` as here: the
  /// two orders place every rank alike.
  bool places_as(const MeshOrder& order) const;

 private:
  std::array<std::int64_t, 4> sizes_{};
  std::array<std::int64_t, 4> strides_{};
  MeshOrder order_;
  std::int64_t world_ = 1;
  int gpus_per_node_ = 1;
};

}  // namespace stepsim::models
