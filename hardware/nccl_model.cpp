// SPDX-License-Identifier: Apache-2.0
// NCCL tuner mirror (semantics.md §D.1–D.3; NVIDIA/nccl v2.30.7 src/graph/tuning.cc,
// src/enqueue.cc). Every constant below is a transcription of the table named next to it.
#include "hardware/nccl_model.hpp"

#include "sim/support/error.hpp"

#include <algorithm>
#include <array>
#include <cmath>

namespace stepsim::hardware {

std::string collective_model_name(CollectiveModel model) {
  return model == CollectiveModel::Nccl ? "nccl" : "alpha-beta";
}

CollectiveModel parse_collective_model(const std::string& name, const std::string& source,
                                       const std::string& pointer) {
  if (name == "alpha-beta") return CollectiveModel::AlphaBeta;
  if (name == "nccl") return CollectiveModel::Nccl;
  throw InputError(source, pointer,
                   fmt::format("unknown collective cost model '{}'; expected alpha-beta or nccl", name));
}

CollectiveModel default_collective_model(const HardwareProfile& hw) {
  return hw.nccl.arch.empty() ? CollectiveModel::AlphaBeta : CollectiveModel::Nccl;
}

std::string nccl_algo_name(NcclAlgo algo) {
  switch (algo) {
    case NcclAlgo::Tree: return "tree";
    case NcclAlgo::Ring: return "ring";
    case NcclAlgo::Nvls: return "nvls";
    case NcclAlgo::NvlsTree: return "nvls_tree";
    case NcclAlgo::Pat: return "pat";
  }
  return "?";
}

std::string nccl_proto_name(NcclProto proto) {
  switch (proto) {
    case NcclProto::LL: return "LL";
    case NcclProto::LL128: return "LL128";
    case NcclProto::Simple: return "Simple";
  }
  return "?";
}

namespace {

// Row index of the algorithm tables below: NCCL's enum order Tree, Ring, CollNetDirect,
// CollNetChain, NVLS, NVLS_TREE, PAT (semantics.md §D.1 rule 74).
constexpr int kAlgos = 7;
constexpr int kProtos = 3;
using AlgoTable = std::array<std::array<double, kProtos>, kAlgos>;

// baseLat[algo][proto], µs — semantics.md §D.2 rule 81 "baseLat" table
// (v2.30.7 src/graph/tuning.cc, ncclTunerConstantsDefaults.baseLat).
constexpr AlgoTable kBaseLatUs = {{
    {6.8, 14.0, 8.4},  // Tree
    {6.6, 14.0, 8.4},  // Ring
    {0, 0, 0},         // CollNetDirect
    {0, 0, 0},         // CollNetChain
    {0, 0, 0},         // NVLS
    {0, 0, 0},         // NVLS_TREE
    {8.0, 8.0, 8.0},   // PAT
}};

// hwLat[link][algo][proto], µs — semantics.md §D.2 rule 81 "hwLat" table
// (v2.30.7 ncclTunerConstantsDefaults.hwLat; link rows NCCL_HW_NVLINK, NCCL_HW_PCI, NCCL_HW_NET).
enum HwLink { kNvlink = 0, kPci = 1, kNet = 2 };
constexpr std::array<AlgoTable, 3> kHwLatUs = {{
    {{{0.6, 1.25, 4.0}, {0.6, 1.9, 3.4}, {0, 0, 3.7}, {0, 0, 2.8}, {0, 0, 25}, {0, 0, 25}, {0, 0, 4.0}}},    // NVLink
    {{{1.0, 1.9, 4.0}, {1.0, 2.5, 5.7}, {0, 0, 3.7}, {0, 0, 2.8}, {0, 0, 0}, {0, 0, 0}, {0, 0, 4.0}}},       // PCI
    {{{5.0, 8.5, 14}, {2.7, 4.0, 14.0}, {0, 0, 31}, {0, 0, 30}, {0, 0, 18}, {0, 0, 20.9}, {0, 0, 14}}},     // NET
}};

// Per-generation tables [arch][nNodes bucket 1 / 2 / ≥3], GB/s — semantics.md §D.2 rule 81
// "Per-GPU-generation bandwidth caps" (v2.30.7 tuning.cc llMaxBws, perChMaxRingLL128Bws,
// perChMaxTreeLL128Bws, perChMaxTreeBws, perChMaxNVLSTreeBws). Arch rows Volta, Ampere, Hopper,
// Blackwell. llMaxBws' multi-node columns are indexed by CPU vendor (Intel = row 0): see ll_max_bw().
using GenTable = std::array<std::array<double, 3>, 4>;
constexpr GenTable kLlMaxBws = {{{39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {141.0, 45.0, 35.0}, {282, 90, 70}}};
constexpr GenTable kPerChMaxRingLL128Bws = {{{20, 20, 20}, {20, 20, 20}, {36.7, 36.7, 36.7}, {40, 40, 40}}};
constexpr GenTable kPerChMaxTreeLL128Bws = {{{20, 20, 20}, {20, 20, 20}, {36.7, 36.7, 29.0}, {55.6, 31.67, 20.0}}};
constexpr GenTable kPerChMaxTreeBws = {{{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}, {70.0, 42.8, 24.0}}};
constexpr GenTable kPerChMaxNVLSTreeBws = {{{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {0, 57.7, 45.5}, {0, 96, 80}}};

// nvlsEfficiency[arch] — semantics.md §D.2 rule 79 (v2.30.7 src/tuning/nvls.cc): 0.85 Hopper, 0.74 Blackwell.
constexpr std::array<double, 4> kNvlsEfficiency = {0.0, 0.0, 0.85, 0.74};

// treeCorrectionFactor[proto][log2(nBytes/64)] — semantics.md §D.2 rule 81 (tuning.cc); the
// first 23 entries (64 B … 256 MiB) are used.
constexpr std::array<std::array<double, 24>, 3> kTreeCorrectionFactor = {{
    {1, 1, 1, 1, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1, 1, 1, 1, 1},
    {1, 1, 1, 1, 1, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1, 1, 1},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9, .9},
}};

// Other constants of §D.2 rules 79–80.
constexpr double kRingLL128Factor = 0.92;          // Ring LL128: min(0.92·busBw, …) (v2.30; 0.7 for ppn<2 in v2.21)
constexpr double kTreeBwFactor = 0.92;             // Tree AllReduce: min(0.92·busBw, nCh·perChMaxTreeBw)
constexpr double kTreeLLDivisor = 3.8;             // Tree LL: busBw / 3.8
constexpr double kPatBwFactor = 0.75;              // PAT: ×0.75
constexpr double kNetOverheadUs = 1.0;             // NCCL_NET_OVERHEAD default on Intel/other CPUs (×3 for Simple)
constexpr double kRingSimpleMultiNodeLat = 1.4;    // Ring Simple AllReduce across nodes, sm80+ (1.9 before)
constexpr double kRingSimpleMultiNodeLatPreSm80 = 1.9;

int arch_index(const HardwareProfile& hw) {
  const std::string& a = hw.nccl.arch;
  if (a == "volta") return 0;
  if (a == "ampere") return 1;
  if (a == "hopper") return 2;
  if (a == "blackwell") return 3;
  throw InputError(hw.name, "/nccl",
                   "the NCCL cost model needs the profile's \"nccl\" object (arch, ring_channels, "
                   "channel_bandwidth_bytes_per_s); this profile has none — use the alpha-beta cost model");
}

int log2i(long long v) {
  int l = -1;
  while (v > 0) {
    v >>= 1;
    ++l;
  }
  return l;
}

int idx(NcclAlgo a) { return static_cast<int>(a); }
int idx(NcclProto p) { return static_cast<int>(p); }

struct Setup {
  int n = 1, ppn = 1, nodes = 1, bucket = 0, arch = 0;
  int ch = 1;              // search-graph channels of the graph in use
  double bw = 0;           // GB/s per channel (bwIntra for nNodes ≤ 2, bwInter beyond: equal here)
  int intra_ch = 1;        // intra-node graph's channels (NVLS)
  double intra_bw = 0;     // intra-node graph's GB/s per channel
  int runtime_ch = 2;      // min(64, 2·search channels) (rule 85)
  HwLink intra_link = kNvlink;
  bool ll128 = true;
  double lat_inter_us = 0;
  double nvls_bus_gbs = 0;  // profile's measured NVLS AllReduce busBw, GB/s (0 = NCCL's formula)
};

Setup make_setup(const HardwareProfile& hw, const GroupShape& group) {
  Setup s;
  s.arch = arch_index(hw);
  s.n = group.ranks;
  s.ppn = std::min(group.ranks_per_node, s.n);
  s.nodes = (s.n + s.ppn - 1) / s.ppn;
  s.bucket = s.nodes == 1 ? 0 : s.nodes == 2 ? 1 : 2;
  s.intra_ch = std::max(1, hw.nccl.ring_channels);
  s.intra_bw = hw.nccl.channel_bandwidth_bytes_per_s / 1e9;
  s.intra_link = hw.nccl.intra_link == "pci" ? kPci : kNvlink;
  s.lat_inter_us = hw.nccl.net_latency_s * 1e6;
  s.nvls_bus_gbs = hw.nccl.nvls_bus_bandwidth_bytes_per_s / 1e9;
  if (s.nodes == 1) {
    s.ch = s.intra_ch;
    // On a point-to-point mesh (no switch) a small group reaches only its members' links
    // (HardwareProfile::intra_group_bandwidth_bytes_per_s); behind a switch this is no cap.
    s.bw = std::min(s.intra_bw, hw.intra_group_bandwidth_bytes_per_s(std::max(s.ppn, 2)) / 1e9 / s.ch);
  } else {
    if (!(hw.nics_per_node > 0 && hw.nic_bandwidth_bytes_per_s > 0))
      throw InputError(hw.name, "/inter_node",
                       fmt::format("a group of {} ranks spans {} nodes, but the profile has no network "
                                   "(nics_per_node × nic_bandwidth_bytes_per_s)", s.n, s.nodes));
    // One channel per NIC the group's GPUs drive (each GPU its own, hardware_profile.hpp
    // group_nics); a channel cannot go faster than its NIC's share nor than its share of NVLink.
    const int concurrent = std::max(1, group.concurrent_groups_per_node);
    const double nic = hw.nic_bandwidth_bytes_per_s * hw.group_nic_share(s.ppn, concurrent) / 1e9;
    s.ch = hw.group_nics(s.ppn);
    s.bw = std::min(nic, s.intra_ch * s.intra_bw / s.ch);
  }
  s.runtime_ch = std::min(64, 2 * s.ch);
  // LL128 (rule 77): intra path must be NVLink (≤ NVB) on every generation.
  s.ll128 = s.intra_link == kNvlink;
  return s;
}

// llMaxBw: one node indexes by GPU generation; several nodes by CPU vendor, taken as Intel
// (row 0) — the usual x86 host; AMD hosts would use the other rows' 2-node/≥3-node columns.
double ll_max_bw(const Setup& s) { return s.nodes == 1 ? kLlMaxBws[s.arch][0] : kLlMaxBws[0][s.bucket]; }

bool enabled(const HardwareProfile& hw, const Setup& s, CollectiveOp op, NcclAlgo a, NcclProto p) {
  const bool ar = op == CollectiveOp::AllReduce;
  if (p == NcclProto::LL128 && !s.ll128) return false;
  switch (a) {
    case NcclAlgo::Ring: return true;
    case NcclAlgo::Tree: return ar;
    case NcclAlgo::Nvls:  // Simple only, ≥ 2 channels, one node (multi-node NVLS needs CollNet)
      return p == NcclProto::Simple && hw.nccl.nvls && kNvlsEfficiency[s.arch] > 0 && s.nodes == 1 &&
             s.ppn >= 2 && s.intra_ch >= 2;
    case NcclAlgo::NvlsTree:  // AllReduce, Simple only, disabled on one node
      return ar && p == NcclProto::Simple && hw.nccl.nvls && kNvlsEfficiency[s.arch] > 0 && s.nodes > 1 &&
             s.ppn >= 2 && s.intra_ch >= 2;
    case NcclAlgo::Pat:  // AG/RS, Simple only, one GPU per node
      return !ar && p == NcclProto::Simple && s.nodes == s.n && s.n > 1;
  }
  return false;
}

NcclEstimate estimate(const Setup& s, CollectiveOp op, double bytes, NcclAlgo a, NcclProto p) {
  const bool ar = op == CollectiveOp::AllReduce;
  const int ai = idx(a), pi = idx(p);
  const int b = s.bucket;
  NcclEstimate e;
  e.algo = a;
  e.proto = p;

  // Bandwidth (rule 79).
  double bus = s.ch * s.bw;
  if (a == NcclAlgo::Ring && p == NcclProto::LL) bus = std::min(ll_max_bw(s), 0.5 * bus);
  if (a == NcclAlgo::Ring && p == NcclProto::LL128)
    bus = std::min(kRingLL128Factor * bus, s.ch * kPerChMaxRingLL128Bws[s.arch][b]);
  if (a == NcclAlgo::Tree && ar) bus = std::min(kTreeBwFactor * bus, s.ch * kPerChMaxTreeBws[s.arch][b]);
  if (a == NcclAlgo::Tree && p == NcclProto::LL) bus = std::min(bus / kTreeLLDivisor, ll_max_bw(s));
  if (a == NcclAlgo::Tree && p == NcclProto::LL128)
    bus = std::min(bus * (s.nodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0), s.ch * kPerChMaxTreeLL128Bws[s.arch][b]);
  if (a == NcclAlgo::Pat) bus *= kPatBwFactor;
  if (a == NcclAlgo::Nvls || a == NcclAlgo::NvlsTree) {
    // intraBw = bwIntra·nvlsEff·(nCh−1)/nCh over the intra-node graph (its nCh·bw total),
    // ×2 for AllReduce (reduce and multicast pipeline), else ×(ppn−1)/ppn.
    double intra = s.intra_ch * s.intra_bw * kNvlsEfficiency[s.arch] * (s.intra_ch - 1.0) / s.intra_ch;
    // A profile's measured one-node NVLS AllReduce busBw rescales the formula (hardware_profile.hpp).
    if (s.nvls_bus_gbs > 0) intra = s.nvls_bus_gbs / 2.0;
    intra *= ar ? 2.0 : (s.ppn - 1.0) / s.ppn;
    bus = intra;
    // Across nodes, a physical bound (not NCCL's formula, whose per-channel caps assume NICs
    // as fast as the nodes they join): every node's data must cross its NICs at least
    // 2·(N−1)/N times the buffer (reduce-scatter, then all-gather among the N nodes), so the
    // algorithm bandwidth is at most egress·N / (2·(N−1)), egress = Setup::ch · Setup::bw, or in
    // bus terms (× 2·(n−1)/n) egress·N·(n−1) / ((N−1)·n). Hierarchical AllReduce can exceed the
    // NIC in busBw: 2 × 8 H100 on 8 × 400 Gb/s measure 468 GB/s (h100_hgx_ib400_2n), under the
    // bound's 750.
    if (s.nodes > 1) {
      const double nodes = s.nodes, ranks = s.n;
      bus = std::min(bus, s.ch * s.bw * nodes * (ranks - 1.0) / ((nodes - 1.0) * ranks));
    }
    // NVLS_TREE: the inter-node tree is capped per NIC channel by perChMaxNVLSTreeBw.
    if (a == NcclAlgo::NvlsTree) bus = std::min(bus, s.ch * kPerChMaxNVLSTreeBws[s.arch][b]);
  }
  e.bus_bw_gbs = bus;
  // Bus → algorithm bandwidth (rule 79).
  const int nsteps = ar ? 2 * (s.n - 1) : s.n - 1;
  double alg = bus;
  if (a == NcclAlgo::Ring || a == NcclAlgo::Nvls || a == NcclAlgo::NvlsTree)
    alg = bus * s.n / nsteps;
  else if (a == NcclAlgo::Tree)
    alg = bus * 0.5;
  // Tree AllReduce correction on bandwidth, 64 B … 256 MiB (rule 78).
  if (a == NcclAlgo::Tree && ar) {
    const int l = log2i(static_cast<long long>(bytes) >> 6);
    if (l >= 0 && l < 23) alg *= kTreeCorrectionFactor[pi][l];
  }
  e.alg_bw_gbs = alg;
  e.bytes_us = alg > 0 ? bytes / (1000.0 * alg) : 0;

  // Latency (rule 80).
  const double net_overhead = s.nodes > 1 ? kNetOverheadUs * (p == NcclProto::Simple ? 3 : 1) : 0;
  const double intra_lat = std::max(kHwLatUs[s.intra_link][ai][pi], net_overhead);
  const double inter_lat = (s.ppn == 1 && a == NcclAlgo::Ring ? kHwLatUs[kNet][idx(NcclAlgo::Tree)][pi]
                                                                : kHwLatUs[kNet][ai][pi]) +
                           s.lat_inter_us * (p == NcclProto::Simple ? 2 : 1);
  double lat = kBaseLatUs[ai][pi];
  const int log_nodes = log2i(s.nodes);
  switch (a) {
    case NcclAlgo::Ring: {
      const int inter_steps = s.nodes > 1 ? (ar ? 2 * (s.nodes - 1) : s.nodes - 1) : 0;
      lat += (nsteps - inter_steps) * intra_lat + inter_steps * inter_lat;
      if (ar && p == NcclProto::Simple && s.nodes > 1 && bytes / (s.runtime_ch * s.n) >= 64)
        lat *= s.arch >= 1 ? kRingSimpleMultiNodeLat : kRingSimpleMultiNodeLatPreSm80;
      break;
    }
    case NcclAlgo::Tree: lat += 2 * ((s.ppn - 1) * intra_lat + log_nodes * inter_lat); break;
    case NcclAlgo::Nvls: lat += intra_lat + (s.nodes > 1 ? inter_lat : 0); break;
    case NcclAlgo::NvlsTree: lat += intra_lat + 2 * log_nodes * inter_lat; break;
    case NcclAlgo::Pat: lat += log_nodes * inter_lat / 3.5 + 2.8 * s.n; break;
  }
  e.latency_us = lat;  // latCount = 1: one collective, no aggregation (rule 78, 86)
  return e;
}

bool allowed(CollectiveAlgorithm restrict, NcclAlgo a) {
  switch (restrict) {
    case CollectiveAlgorithm::Auto: return true;
    case CollectiveAlgorithm::Ring: return a == NcclAlgo::Ring;
    case CollectiveAlgorithm::Hierarchical: return a == NcclAlgo::Tree || a == NcclAlgo::NvlsTree;
  }
  return true;
}

}  // namespace

std::vector<NcclEstimate> nccl_tuning_table(const HardwareProfile& hw, CollectiveOp op, double bytes,
                                            const GroupShape& group, CollectiveAlgorithm algorithm) {
  STEPSIM_ASSERT(group.ranks >= 1 && group.ranks_per_node >= 1, "bad group shape {}x{}", group.ranks,
                 group.ranks_per_node);
  STEPSIM_ASSERT(bytes >= 0 && std::isfinite(bytes), "bad collective size {}", bytes);
  const Setup s = make_setup(hw, group);
  std::vector<NcclEstimate> table;
  if (s.n < 2) return table;
  for (NcclAlgo a : {NcclAlgo::Tree, NcclAlgo::Ring, NcclAlgo::Nvls, NcclAlgo::NvlsTree, NcclAlgo::Pat})
    for (NcclProto p : {NcclProto::LL, NcclProto::LL128, NcclProto::Simple})
      if (allowed(algorithm, a) && enabled(hw, s, op, a, p)) table.push_back(estimate(s, op, bytes, a, p));
  return table;
}

CollectiveCost nccl_collective_cost(const HardwareProfile& hw, CollectiveOp op, double bytes,
                                    const GroupShape& group, CollectiveAlgorithm algorithm) {
  bytes += 0.0;  // -0 → 0
  if (group.ranks == 1) {
    arch_index(hw);  // still refuse profiles without an "nccl" object
    CollectiveCost c;
    c.algorithm = "none";
    c.bottleneck = "none (one rank)";
    return c;
  }
  const auto table = nccl_tuning_table(hw, op, bytes, group, algorithm);
  if (table.empty())
    throw InputError(hw.name, "/nccl",
                     fmt::format("no NCCL algorithm is enabled for {} over {} ranks with the algorithm asked for",
                                 collective_op_label(op), group.ranks));
  const NcclEstimate* best = &table.front();
  for (const auto& e : table)
    if (e.time_us() < best->time_us()) best = &e;  // strict: ties keep the lower index (rule 83)
  CollectiveCost c;
  // The host launch cost is the same for every candidate, so it does not change the choice.
  c.latency_s = best->latency_us * 1e-6 + hw.nccl.launch_overhead_s;
  c.bandwidth_s = best->bytes_us * 1e-6;
  c.algorithm = nccl_algo_name(best->algo);
  c.protocol = nccl_proto_name(best->proto);
  const int ppn = std::min(group.ranks_per_node, group.ranks);
  const int nodes = (group.ranks + ppn - 1) / ppn;
  const bool multi = nodes > 1;
  // The fabric's losses are the same for every candidate's network part; NCCL's tuner does not
  // know them, so they come after its choice (hardware_profile.hpp).
  apply_fabric(hw, nodes, c);
  // The tuner gives one bus bandwidth: its bottleneck link is the only one counted as busy.
  (multi ? c.inter_share : c.intra_share) = 1;
  c.bottleneck = fmt::format("{} (NCCL {}/{} busBw {:.4g} GB/s{})", multi ? "node network egress" : "intra-node fabric",
                             c.algorithm, c.protocol, best->bus_bw_gbs,
                             multi && hw.fabric_bandwidth_efficiency < 1
                                 ? fmt::format(" x fabric efficiency {:g}", hw.fabric_bandwidth_efficiency)
                                 : std::string());
  return c;
}

CollectiveCost model_collective_cost(CollectiveModel model, const HardwareProfile& hw, CollectiveOp op,
                                     double bytes, const GroupShape& group, CollectiveAlgorithm algorithm) {
  return model == CollectiveModel::Nccl ? nccl_collective_cost(hw, op, bytes, group, algorithm)
                                        : collective_cost(hw, op, bytes, group, algorithm);
}

}  // namespace stepsim::hardware
