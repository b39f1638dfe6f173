// SPDX-License-Identifier: Apache-2.0
#include "models/mesh_layout.hpp"

#include "sim/support/error.hpp"

#include <algorithm>
#include <utility>

namespace stepsim::models {

const char* mesh_dim_name(MeshDim d) {
  switch (d) {
    case MeshDim::TP: return "tp";
    case MeshDim::CP: return "cp";
    case MeshDim::DP: return "dp";
    case MeshDim::PP: return "pp";
  }
  return "?";
}

RankLayout::RankLayout(std::array<std::int64_t, 4> sizes, MeshOrder order, int gpus_per_node)
    : sizes_(sizes), order_(order), gpus_per_node_(std::max(1, gpus_per_node)) {
  std::int64_t stride = 1;
  for (MeshDim d : order_) {
    const auto i = static_cast<int>(d);
    STEPSIM_ASSERT(sizes_[i] >= 1, "mesh dimension {} of size {}", mesh_dim_name(d), sizes_[i]);
    strides_[i] = stride;
    stride *= sizes_[i];
  }
  world_ = stride;
}

int RankLayout::gpus_used_per_node() const {
  return static_cast<int>(std::min<std::int64_t>(gpus_per_node_, world_));
}

std::int64_t RankLayout::members(const MeshGroup& group) const {
  std::int64_t n = 1;
  for (const MeshSpan& p : group) n *= p.size;
  return n;
}

int RankLayout::members_per_node(const MeshGroup& group) const {
  // The group's spans as (world stride, size), innermost first; spans that continue one another
  // in world ranks merge into one run, whose members on a node are the node's G ranks / stride.
  std::vector<std::pair<std::int64_t, std::int64_t>> runs;
  for (const MeshSpan& p : group)
    if (p.size > 1) runs.emplace_back(stride(p.dim) * p.inner, p.size);
  std::sort(runs.begin(), runs.end());
  std::vector<std::pair<std::int64_t, std::int64_t>> merged;
  for (const auto& r : runs) {
    if (!merged.empty() && merged.back().first * merged.back().second == r.first)
      merged.back().second *= r.second;
    else
      merged.push_back(r);
  }
  std::int64_t n = 1;
  for (const auto& [stride_ranks, size] : merged)
    n *= std::clamp<std::int64_t>(gpus_per_node_ / stride_ranks, 1, size);
  return static_cast<int>(std::min<std::int64_t>(n, gpus_per_node_));
}

int RankLayout::groups_per_node(const MeshGroup& group) const {
  return std::max(1, gpus_used_per_node() / members_per_node(group));
}

MeshGroup RankLayout::data(std::int64_t inner, std::int64_t size) const {
  const std::int64_t cp = sizes_[static_cast<int>(MeshDim::CP)];
  // CP right inside DP: the data ranks are one run of world ranks.
  if (stride(MeshDim::DP) == stride(MeshDim::CP) * cp) return {{MeshDim::CP, inner, size}};
  MeshGroup g;
  if (inner < cp) {
    // Starts inside CP; what CP cannot hold continues in DP.
    const std::int64_t in_cp = std::min(size, std::max<std::int64_t>(1, cp / inner));
    g.push_back({MeshDim::CP, inner, in_cp});
    if (size > in_cp) g.push_back({MeshDim::DP, 1, size / in_cp});
  } else {
    g.push_back({MeshDim::DP, inner / cp, size});
  }
  return g;
}

std::array<std::int64_t, 4> RankLayout::coords(std::int64_t rank) const {
  std::array<std::int64_t, 4> c{};
  for (int i = 0; i < 4; ++i) c[i] = rank / strides_[i] % sizes_[i];
  return c;
}

std::int64_t RankLayout::rank(const std::array<std::int64_t, 4>& c) const {
  std::int64_t r = 0;
  for (int i = 0; i < 4; ++i) r += c[i] * strides_[i];
  return r;
}

}  // namespace stepsim::models
