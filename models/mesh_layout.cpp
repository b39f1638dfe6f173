// SPDX-License-Identifier: Apache-2.0
#include "models/mesh_layout.hpp"

#include "sim/support/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
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

std::string mesh_order_name(const MeshOrder& order) {
  std::string s;
  for (MeshDim d : order) s += (s.empty() ? "" : "-") + std::string(mesh_dim_name(d));
  return s;
}

std::string parse_mesh_order(const std::string& given, const std::array<std::int64_t, 4>& sizes, MeshOrder& order) {
  if (given.size() > 64) return fmt::format("{} characters; expected at most 64", given.size());
  std::string text = given;  // Megatron-LM's RankGenerator lower-cases the order
  for (char& ch : text) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  std::vector<std::string> names;
  for (std::size_t at = 0;;) {
    const std::size_t dash = text.find('-', at);
    names.push_back(text.substr(at, dash == std::string::npos ? std::string::npos : dash - at));
    if (dash == std::string::npos) break;
    at = dash + 1;
  }
  std::vector<MeshDim> dims;
  std::array<bool, 4> named{};
  bool ep = false;
  for (std::size_t i = 0; i < names.size(); ++i) {
    const std::string& n = names[i];
    if (n == "ep") {
      if (ep) return "'ep' appears twice";
      ep = true;
      continue;
    }
    MeshDim d{};
    if (n == "tp") d = MeshDim::TP;
    else if (n == "cp") d = MeshDim::CP;
    else if (n == "dp") d = MeshDim::DP;
    else if (n == "pp") d = MeshDim::PP;
    else
      return fmt::format("'{}' is not a dimension; expected tp, cp, ep, dp and pp joined by '-', innermost first "
                         "(Megatron-LM's default tp-cp-ep-dp-pp)", n);
    if (named[static_cast<int>(d)]) return fmt::format("'{}' appears twice", n);
    named[static_cast<int>(d)] = true;
    dims.push_back(d);
  }
  for (MeshDim d : kMegatronOrder) {
    if (named[static_cast<int>(d)]) continue;
    if (sizes[static_cast<int>(d)] > 1)
      return fmt::format("it leaves out {}, whose degree is {}; name every dimension of size > 1", mesh_dim_name(d),
                         sizes[static_cast<int>(d)]);
    dims.push_back(d);  // outermost, as Megatron-LM's RankGenerator appends a size-1 dimension
  }
  std::copy(dims.begin(), dims.end(), order.begin());
  return "";
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

namespace {

// `group`'s spans as runs of world ranks (stride, members), innermost first; spans that
// continue one another in world ranks merge into one run.
std::vector<std::pair<std::int64_t, std::int64_t>> world_runs(const RankLayout& l, const MeshGroup& group) {
  std::vector<std::pair<std::int64_t, std::int64_t>> runs;
  for (const MeshSpan& p : group)
    if (p.size > 1) runs.emplace_back(l.stride(p.dim) * p.inner, p.size);
  std::sort(runs.begin(), runs.end());
  std::vector<std::pair<std::int64_t, std::int64_t>> merged;
  for (const auto& r : runs) {
    if (!merged.empty() && merged.back().first * merged.back().second == r.first)
      merged.back().second *= r.second;
    else
      merged.push_back(r);
  }
  return merged;
}

}  // namespace

std::string RankLayout::group_problem(const MeshGroup& group) const {
  const std::int64_t g = gpus_per_node_;
  if (world_ <= g) return "";
  for (const auto& [s, n] : world_runs(*this, group)) {
    if (s >= g) continue;
    if (s * n <= g ? g % (s * n) != 0 : g % s != 0 || n % (g / s) != 0)
      return fmt::format("its {} ranks {} apart would sit unevenly on nodes of {} GPUs", n, s, g);
  }
  return "";
}

bool RankLayout::places_as(const MeshOrder& order) const {
  const RankLayout other(sizes_, order, gpus_per_node_);
  for (int i = 0; i < 4; ++i)
    if (sizes_[i] > 1 && strides_[i] != other.strides_[i]) return false;
  return true;
}

int RankLayout::members_per_node(const MeshGroup& group) const {
  // Each run's members on a node are the node's G ranks / its stride, at most its size.
  std::int64_t n = 1;
  for (const auto& [stride_ranks, size] : world_runs(*this, group))
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

std::string RankLayout::node_problem() const {
  const std::int64_t g = gpus_per_node_;
  std::string inner;  // "tp 2 × cp 3": the dimensions inside d
  for (MeshDim d : order_) {
    const std::int64_t s = stride(d), n = size(d);
    if (n > 1 && s < g && s * n > g) {
      if (g % s != 0)
        return fmt::format("{} = {} ranks inside {} do not divide a node's {} GPUs, so {} groups would straddle nodes "
                           "unevenly", inner, s, mesh_dim_name(d), g, mesh_dim_name(d));
      if (n % (g / s) != 0)
        return fmt::format("a node would hold {} ranks of each {} group of {}, which does not divide it", g / s,
                           mesh_dim_name(d), n);
    }
    if (n > 1) inner += fmt::format("{}{} {}", inner.empty() ? "" : " × ", mesh_dim_name(d), n);
  }
  return "";
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
