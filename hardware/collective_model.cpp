// SPDX-License-Identifier: Apache-2.0
// α-β collective cost model (seed 000 §2.4, §4, §7.2–7.3; DESIGN.md "Core abstractions").
#include "hardware/collective_model.hpp"

#include "sim/support/error.hpp"

#include <algorithm>
#include <cmath>

namespace stepsim::hardware {

const std::vector<CollectiveOpEntry>& collective_ops() {
  static const std::vector<CollectiveOpEntry> ops = {
      {CollectiveOp::AllReduce, "allreduce", "AllReduce", "all_reduce", 2},
      {CollectiveOp::ReduceScatter, "reducescatter", "ReduceScatter", "reduce_scatter", 1},
      {CollectiveOp::AllGather, "allgather", "AllGather", "all_gather", 1},
  };
  return ops;
}

const CollectiveOpEntry& collective_entry(CollectiveOp op) {
  for (const auto& e : collective_ops())
    if (e.op == op) return e;
  throw InternalError("collective op missing from the registry");
}

std::optional<CollectiveOp> collective_op_from(std::string_view text) {
  for (const auto& e : collective_ops())
    if (text == e.name || text == e.label || text == e.nccl_tests) return e.op;
  return std::nullopt;
}

namespace {

std::vector<std::string> op_spellings(const char* CollectiveOpEntry::*spelling) {
  std::vector<std::string> names;
  for (const auto& e : collective_ops()) names.emplace_back(e.*spelling);
  return names;
}

// The algorithms by name, in CollectiveAlgorithm order.
constexpr std::pair<CollectiveAlgorithm, const char*> kAlgorithms[] = {
    {CollectiveAlgorithm::Auto, "auto"}, {CollectiveAlgorithm::Ring, "ring"}, {CollectiveAlgorithm::Hierarchical, "hierarchical"}};

}  // namespace

std::vector<std::string> collective_op_names() { return op_spellings(&CollectiveOpEntry::name); }
std::vector<std::string> collective_op_labels() { return op_spellings(&CollectiveOpEntry::label); }
std::vector<std::string> collective_op_nccl_tests_names() { return op_spellings(&CollectiveOpEntry::nccl_tests); }

std::string collective_op_name(CollectiveOp op) { return collective_entry(op).name; }

std::string collective_op_label(CollectiveOp op) { return collective_entry(op).label; }

double bus_factor(CollectiveOp op, int ranks) {
  STEPSIM_ASSERT(ranks >= 1, "bus_factor: ranks {}", ranks);
  const double n = ranks;
  return collective_entry(op).ring_passes * (n - 1) / n;
}

std::string collective_algorithm_name(CollectiveAlgorithm algorithm) {
  for (const auto& [a, name] : kAlgorithms)
    if (a == algorithm) return name;
  return "?";
}

std::vector<std::string> collective_algorithm_names() {
  std::vector<std::string> names;
  for (const auto& [a, name] : kAlgorithms) names.emplace_back(name);
  return names;
}

std::optional<CollectiveAlgorithm> collective_algorithm_from(std::string_view name) {
  for (const auto& [a, n] : kAlgorithms)
    if (name == n) return a;
  return std::nullopt;
}

namespace {

// AllReduce = ReduceScatter + AllGather: twice the steps and twice the bytes per rank.
double op_multiplier(CollectiveOp op) { return op == CollectiveOp::AllReduce ? 2.0 : 1.0; }

// (k−1)/k, or 1 when the seeds' asymptotic form is asked for.
double ring_factor(int k, bool exact) { return exact ? (k - 1.0) / k : (k > 1 ? 1.0 : 0.0); }

// Multi-axis schedule on a torus (JAX scaling book, "How to think about TPUs", multi-axis
// collectives): a ReduceScatter over axes (a_1, …, a_k) runs a ring along a_1 on the whole
// buffer, then along a_2 on the 1/d_1 shard it left, and so on; the AllGather replays the
// stages in reverse and an AllReduce is the two. One such chain uses one axis at a time, so the
// buffer is split into k parts whose chains start on different axes (cyclic rotations) and run
// at once. Stage p of a part of size f·V moves f·V · (d−1)/d / Π(earlier d) per chip over its
// axis; with every stage pipelined the time is the busiest axis's bytes over W_axis. The part
// sizes f are chosen to equalise the axes' bytes (a k×k linear system); the axes' total is
// (1 − 1/N)·V whatever f is, so equal loads meet the bandwidth bound (1 − 1/N)·V / (k·W_axis)
// exactly. Should equalising need a negative part (it does not for d ≥ 2), equal parts are used.
// `exact` false is the seeds' asymptotic form: every d → ∞, so only each chain's first stage
// carries bytes (1 per part) and the time is V / (k·W_axis).
double torus_axis_load(const std::vector<int>& dims, bool exact) {
  const int k = static_cast<int>(dims.size());
  if (k == 0) return 0;
  // load[j][i]: bytes per chip (per byte of the part) that part j (chain starting at axis j)
  // moves over axis i.
  std::vector<std::vector<double>> load(k, std::vector<double>(k, 0.0));
  for (int j = 0; j < k; ++j) {
    double shard = 1;
    for (int p = 0; p < k; ++p) {
      const int axis = (j + p) % k;
      const int d = dims[axis];
      load[j][axis] = exact ? shard * (d - 1.0) / d : (p == 0 ? 1.0 : 0.0);
      shard /= d;
    }
  }
  // Solve Σ_j f_j load[j][i] = T (every axis i) and Σ_j f_j = 1 by Gaussian elimination with
  // partial pivoting on the (k+1)×(k+1) system in the unknowns (f_0 … f_{k−1}, T).
  const int n = k + 1;
  std::vector<std::vector<double>> a(n, std::vector<double>(n + 1, 0.0));
  for (int i = 0; i < k; ++i) {
    for (int j = 0; j < k; ++j) a[i][j] = load[j][i];
    a[i][k] = -1;
  }
  for (int j = 0; j < k; ++j) a[k][j] = 1;
  a[k][n] = 1;
  bool ok = true;
  for (int c = 0; c < n && ok; ++c) {
    int piv = c;
    for (int r = c + 1; r < n; ++r)
      if (std::fabs(a[r][c]) > std::fabs(a[piv][c])) piv = r;
    if (std::fabs(a[piv][c]) < 1e-12) {
      ok = false;
      break;
    }
    std::swap(a[c], a[piv]);
    for (int r = 0; r < n; ++r) {
      if (r == c) continue;
      const double f = a[r][c] / a[c][c];
      for (int q = c; q <= n; ++q) a[r][q] -= f * a[c][q];
    }
  }
  std::vector<double> f(k, 1.0 / k);
  if (ok) {
    std::vector<double> sol(k);
    for (int j = 0; j < k; ++j) sol[j] = a[j][n] / a[j][j];
    if (std::all_of(sol.begin(), sol.end(), [](double x) { return x >= 0; })) f = sol;
  }
  double busiest = 0;
  for (int i = 0; i < k; ++i) {
    double li = 0;
    for (int j = 0; j < k; ++j) li += f[j] * load[j][i];
    busiest = std::max(busiest, li);
  }
  return busiest;
}

CollectiveCost torus_cost(const HardwareProfile& hw, CollectiveOp op, double bytes,
                          const GroupShape& group, bool exact) {
  CollectiveCost c;
  c.algorithm = "torus";
  const int axes = group.torus_axes > 0 ? group.torus_axes : static_cast<int>(hw.torus_dims.size());
  c.torus_dims = torus_ring_lengths(hw, group.ranks, axes);
  const double m = op_multiplier(op);
  std::vector<int> used;  // axes of length 1 carry nothing
  double steps = 0;
  for (int d : c.torus_dims) {
    if (d <= 1) continue;
    used.push_back(d);
    steps += d - 1;
  }
  c.bandwidth_s = m * bytes * torus_axis_load(used, exact) / hw.torus_axis.bandwidth_bytes_per_s;
  c.latency_s = steps > 0 ? hw.torus_axis.base_latency_s + m * steps * hw.torus_axis.step_latency_s : 0;
  c.bottleneck = "ici torus axes";
  c.intra_share = 1;
  return c;
}

CollectiveCost gpu_cost(const HardwareProfile& hw, CollectiveOp op, double bytes,
                        const GroupShape& group, CollectiveAlgorithm algorithm, bool exact) {
  CollectiveCost c;
  const int n_ranks = group.ranks;
  const int g = std::min(group.ranks_per_node, n_ranks);
  const int nodes = (n_ranks + g - 1) / g;
  const double m = op_multiplier(op);
  // g ≥ 2 below wherever it divides: one rank per node has no intra-node segment (ring_factor(1) = 0).
  const double w_intra = hw.intra_group_bandwidth_bytes_per_s(std::max(g, 2));
  if (nodes == 1) {
    c.algorithm = "ring";
    c.bottleneck = "intra-node fabric";
    c.bandwidth_s = m * ring_factor(n_ranks, exact) * bytes / w_intra;
    c.latency_s = hw.intra_node.base_latency_s + m * (n_ranks - 1) * hw.intra_node.step_latency_s;
    c.intra_share = 1;
    return c;
  }
  // What the group's member GPUs' NICs give on each node (hardware_profile.hpp).
  const double w_node =
      hw.nics_per_node > 0 ? hw.group_network_bytes_per_s(g, std::max(1, group.concurrent_groups_per_node)) : 0.0;
  if (!(w_node > 0))
    throw InputError(hw.name, "/inter_node",
                     fmt::format("a group of {} ranks spans {} nodes, but the profile has no "
                                 "network (nics_per_node × nic_bandwidth_bytes_per_s)",
                                 n_ranks, nodes));
  if (algorithm == CollectiveAlgorithm::Ring) {
    // One flat ring over every rank, spread over as many channels as the group's NICs (NCCL
    // places each channel's node crossing on its own NIC): per rank, min(NVLink, those NICs).
    const double w = std::min(w_intra, w_node);
    c.algorithm = "ring";
    c.bottleneck = w < w_intra ? "node network egress" : "intra-node fabric";
    c.bandwidth_s = m * ring_factor(n_ranks, exact) * bytes / w;
    c.intra_share = w / w_intra;
    c.inter_share = w / w_node;
    c.latency_s = hw.inter_node.base_latency_s +
                  m * (n_ranks - 1) * std::max(hw.intra_node.step_latency_s, hw.inter_node.step_latency_s);
    return c;
  }
  // Hierarchical: intra-node ring and inter-node ring pipeline; the slower sets the time
  // (seed 000 §7.2). Per GPU the inter-node segment moves V/g over its NIC share: V/W_node.
  const double t_intra = ring_factor(g, exact) * bytes / w_intra;
  const double t_inter = ring_factor(nodes, exact) * bytes / w_node;
  c.algorithm = "hierarchical";
  c.bottleneck = t_inter >= t_intra ? "node network egress" : "intra-node fabric";
  c.bandwidth_s = m * std::max(t_intra, t_inter);
  if (const double t = std::max(t_intra, t_inter); t > 0) {
    c.intra_share = t_intra / t;
    c.inter_share = t_inter / t;
  }
  c.latency_s = hw.inter_node.base_latency_s + m * (g - 1) * hw.intra_node.step_latency_s +
                m * (nodes - 1) * hw.inter_node.step_latency_s;
  return c;
}

CollectiveCost cost(const HardwareProfile& hw, CollectiveOp op, double bytes, const GroupShape& group,
                    CollectiveAlgorithm algorithm, bool exact) {
  STEPSIM_ASSERT(group.ranks >= 1 && group.ranks_per_node >= 1, "bad group shape {}x{}",
                 group.ranks, group.ranks_per_node);
  STEPSIM_ASSERT(bytes >= 0 && std::isfinite(bytes), "bad collective size {}", bytes);
  if (hw.is_torus()) {
    long long pod = 1;
    for (int d : hw.torus_dims) pod *= d;
    if (group.ranks > pod)
      throw InputError(hw.name, "/torus/dims",
                       fmt::format("a group of {} chips is larger than the torus ({} chips); "
                                   "multi-slice (DCN) data parallelism is not modelled",
                                   group.ranks, pod));
    if (group.torus_axes > static_cast<int>(hw.torus_dims.size()))
      throw InputError(hw.name, "/torus/dims",
                       fmt::format("{} torus axes asked for, but the torus has {}", group.torus_axes,
                                   hw.torus_dims.size()));
  }
  if (group.ranks == 1) {
    CollectiveCost c;
    c.algorithm = "none";
    c.bottleneck = "none (one rank)";
    return c;
  }
  if (hw.is_torus() && algorithm == CollectiveAlgorithm::Auto)
    return torus_cost(hw, op, bytes, group, exact);
  return gpu_cost(hw, op, bytes, group, algorithm, exact);
}

}  // namespace

bool fabric_latency_applies(const CollectiveCost& cost) { return cost.protocol != "LL"; }

void apply_fabric(const HardwareProfile& hw, int nodes, CollectiveCost& cost) {
  if (nodes <= 1) return;
  if (fabric_latency_applies(cost))
    cost.latency_s += hw.fabric_latency_per_log2_nodes_s * std::log2(static_cast<double>(nodes));
  if (hw.fabric_bandwidth_efficiency > 0 && hw.fabric_bandwidth_efficiency < 1)
    cost.bandwidth_s /= hw.fabric_bandwidth_efficiency;
}

CollectiveCost collective_cost(const HardwareProfile& hw, CollectiveOp op, double bytes,
                               const GroupShape& group, CollectiveAlgorithm algorithm) {
  return cost(hw, op, bytes + 0.0, group, algorithm, true);  // + 0.0 turns -0 into 0
}

double collective_bandwidth_lower_bound_s(const HardwareProfile& hw, CollectiveOp op, double bytes,
                                          const GroupShape& group) {
  const int n_ranks = group.ranks;
  if (n_ranks <= 1 || !(bytes > 0)) return 0;
  const double moved = (n_ranks - 1.0) / n_ranks * bytes;  // per rank, each way, per half
  const double reduce_halves = op == CollectiveOp::AllReduce ? 2.0 : 1.0;
  if (hw.is_torus()) {
    const int axes = group.torus_axes > 0 ? group.torus_axes : static_cast<int>(hw.torus_dims.size());
    int k = 0;
    for (int d : torus_ring_lengths(hw, n_ranks, axes)) k += d > 1 ? 1 : 0;
    return reduce_halves * moved / (k * hw.torus_axis.bandwidth_bytes_per_s);
  }
  const int g = std::min(group.ranks_per_node, n_ranks);
  const int nodes = (n_ranks + g - 1) / g;
  const double w_intra = hw.intra_group_bandwidth_bytes_per_s(g);
  const double w_node =
      nodes > 1 && hw.nics_per_node > 0
          ? hw.group_network_bytes_per_s(g, std::max(1, group.concurrent_groups_per_node))
          : 0.0;
  // In-switch reduction (NVLS) halves what an AllReduce must move inside a node.
  const double intra_halves = op == CollectiveOp::AllReduce && !hw.nccl.nvls ? 2.0 : 1.0;
  double bound = 0;
  if (w_intra + w_node / g > 0) bound = intra_halves * moved / (w_intra + w_node / g);
  if (nodes > 1 && w_node > 0)
    bound = std::max(bound, reduce_halves * (nodes - 1.0) / nodes * bytes / w_node);
  return bound;
}

std::vector<int> torus_ring_lengths(const HardwareProfile& hw, int ranks, int axes) {
  STEPSIM_ASSERT(axes >= 1 && axes <= 3, "torus axes {} not in 1..3", axes);
  if (static_cast<int>(hw.torus_dims.size()) == axes) {
    long long pod = 1;
    for (int d : hw.torus_dims) pod *= d;
    if (pod == ranks) return hw.torus_dims;
  }
  // Most balanced factorisation: peel off the divisor of `rest` closest to its k-th root
  // (divisors found in O(sqrt(rest))).
  std::vector<int> dims;
  int rest = ranks;
  for (int k = axes; k >= 1; --k) {
    if (k == 1) {
      dims.push_back(rest);
      break;
    }
    const double target = std::pow(rest, 1.0 / k);
    int best = 1;
    for (int d = 1; static_cast<long long>(d) * d <= rest; ++d) {
      if (rest % d != 0) continue;
      for (int cand : {d, rest / d})
        if (std::fabs(cand - target) < std::fabs(best - target)) best = cand;
    }
    dims.push_back(best);
    rest /= best;
  }
  std::sort(dims.begin(), dims.end());
  return dims;
}

Threshold dp_threshold(const HardwareProfile& hw, const GroupShape& group, double moe_factor) {
  STEPSIM_ASSERT(moe_factor > 0 && std::isfinite(moe_factor), "bad MoE factor {}", moe_factor);
  const double v = 1e9;  // the threshold does not depend on V; any size gives the ratio
  const auto exact = cost(hw, CollectiveOp::AllReduce, v, group, CollectiveAlgorithm::Auto, true);
  const auto asym = cost(hw, CollectiveOp::AllReduce, v, group, CollectiveAlgorithm::Auto, false);
  Threshold t;
  t.moe_factor = moe_factor;
  t.tokens_per_gpu = hw.peak_flops_per_s * exact.bandwidth_s / (2 * v) * t.moe_factor;
  t.tokens_per_gpu_asymptotic = hw.peak_flops_per_s * asym.bandwidth_s / (2 * v) * t.moe_factor;
  t.min_global_batch_tokens = t.tokens_per_gpu * group.ranks;
  t.min_global_batch_tokens_asymptotic = t.tokens_per_gpu_asymptotic * group.ranks;
  t.bottleneck = exact.bottleneck;
  t.algorithm = exact.algorithm;
  t.torus_dims = exact.torus_dims;
  return t;
}

}  // namespace stepsim::hardware

namespace stepsim::hardware {

CollectiveCost p2p_cost(const HardwareProfile& hw, double bytes, const GroupShape& group) {
  STEPSIM_ASSERT(group.ranks == 2, "a point-to-point group has 2 ranks, not {}", group.ranks);
  STEPSIM_ASSERT(bytes >= 0 && std::isfinite(bytes), "bad message size {}", bytes);
  CollectiveCost c;
  c.algorithm = "p2p";
  if (group.ranks_per_node >= 2) {
    c.bottleneck = "intra-node fabric";
    c.bandwidth_s = bytes / hw.intra_group_bandwidth_bytes_per_s(2);
    c.latency_s = hw.intra_node.base_latency_s + hw.intra_node.step_latency_s;
    c.intra_share = 1;
    return c;
  }
  const double w = hw.nics_per_node > 0 ? hw.group_network_bytes_per_s(1, std::max(1, group.concurrent_groups_per_node)) : 0.0;
  if (!(w > 0))
    throw InputError(hw.name, "/inter_node",
                     "a point-to-point transfer crosses nodes, but the profile has no network (nics_per_node × "
                     "nic_bandwidth_bytes_per_s)");
  c.bottleneck = "node network egress";
  c.bandwidth_s = (bytes + 0.0) / w;
  c.latency_s = hw.inter_node.base_latency_s + hw.inter_node.step_latency_s;
  c.inter_share = 1;
  apply_fabric(hw, 2, c);
  return c;
}

CollectiveCost all_to_all_cost(const HardwareProfile& hw, double bytes, const GroupShape& group,
                               double intra_bus_bytes_per_s) {
  STEPSIM_ASSERT(bytes >= 0 && std::isfinite(bytes), "bad all-to-all size {}", bytes);
  CollectiveCost c;
  c.algorithm = "alltoall";
  const int n = std::max(1, group.ranks);
  if (n == 1) return c;
  const int g = std::max(1, std::min(group.ranks_per_node, n));
  const int nodes = (n + g - 1) / g;
  const double intra_bytes = bytes * static_cast<double>(g - 1) / n;
  const double inter_bytes = bytes * static_cast<double>(n - g) / n;
  const double intra_w = intra_bus_bytes_per_s > 0 ? intra_bus_bytes_per_s : hw.intra_group_bandwidth_bytes_per_s(g);
  const double intra_s = g > 1 ? intra_bytes / intra_w : 0.0;
  double inter_s = 0;
  c.latency_s = hw.intra_node.base_latency_s + (n - 1) * hw.intra_node.step_latency_s;
  if (nodes > 1) {
    // One GPU's share of its node's NICs: the group's g GPUs use group_network_bytes_per_s(g).
    const double w = hw.nics_per_node > 0
                         ? hw.group_network_bytes_per_s(g, std::max(1, group.concurrent_groups_per_node)) / g
                         : 0.0;
    if (!(w > 0))
      throw InputError(hw.name, "/inter_node",
                       "an all-to-all crosses nodes, but the profile has no network (nics_per_node × "
                       "nic_bandwidth_bytes_per_s)");
    inter_s = inter_bytes / w;
    c.latency_s = std::max(c.latency_s, hw.inter_node.base_latency_s + (n - 1) * hw.inter_node.step_latency_s);
  }
  c.bandwidth_s = std::max(intra_s, inter_s);
  if (c.bandwidth_s > 0) {
    c.intra_share = intra_s / c.bandwidth_s;
    c.inter_share = inter_s / c.bandwidth_s;
  }
  c.bottleneck = inter_s > intra_s ? "node network egress" : "intra-node fabric";
  if (nodes > 1) apply_fabric(hw, nodes, c);
  return c;
}

}  // namespace stepsim::hardware
