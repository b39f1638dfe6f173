// SPDX-License-Identifier: Apache-2.0
// α-β collective cost model: ring within a node, hierarchical across nodes, rings over the
// axes of a TPU torus (DESIGN.md "Core abstractions"; seed 000 §2.4, §4, §7).
#pragma once

#include "hardware/hardware_profile.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace stepsim::hardware {

/// Collective operations. Sizes are the full buffer as nccl-tests counts it (semantics.md
/// §D.5): the reduced array for AllReduce, the gathered (total) array for AllGather and the
/// input array for ReduceScatter.
enum class CollectiveOp { AllReduce, ReduceScatter, AllGather };

/// One collective as every part of stepsim spells it: the registry (collective_ops()) is the
/// only place an op's names and bus factor are written.
struct CollectiveOpEntry {
  CollectiveOp op;
  const char* name;        ///< "allreduce": the CLI's and queries' spelling
  const char* label;       ///< "AllReduce": reports, calibration overlays
  const char* nccl_tests;  ///< "all_reduce": nccl-tests' op (all_reduce_perf)
  /// Ring passes over the buffer: the bus factor is ring_passes × (n − 1) / n (nccl-tests
  /// doc/PERFORMANCE.md: busbw = algbw × 2(n−1)/n for AllReduce, (n−1)/n for ReduceScatter and
  /// AllGather).
  double ring_passes;
};

/// The collectives stepsim prices, in CollectiveOp order.
const std::vector<CollectiveOpEntry>& collective_ops();
/// The entry of `op`.
const CollectiveOpEntry& collective_entry(CollectiveOp op);
/// The op one of whose spellings (name, label or nccl-tests op) is `text`; nullopt when none.
std::optional<CollectiveOp> collective_op_from(std::string_view text);
/// Every op's name ("allreduce", ...), label ("AllReduce", ...) or nccl-tests op ("all_reduce",
/// ...), in registry order: the valid values of a flag or field that takes that spelling.
std::vector<std::string> collective_op_names();
std::vector<std::string> collective_op_labels();
std::vector<std::string> collective_op_nccl_tests_names();

/// "allreduce", "reducescatter", "allgather".
std::string collective_op_name(CollectiveOp op);
/// "AllReduce", "ReduceScatter", "AllGather".
std::string collective_op_label(CollectiveOp op);

/// busbw / algbw of `op` over `ranks` (≥ 1) ranks as nccl-tests defines it: ring_passes ×
/// (n − 1) / n (0 for one rank).
double bus_factor(CollectiveOp op, int ranks);

/// Which algorithm family to use when a group spans several nodes.
enum class CollectiveAlgorithm {
  Auto,          ///< ring in one node; hierarchical across nodes; torus rings on TPU
  Ring,          ///< one flat ring over all ranks (slowest link per step sets the bandwidth)
  Hierarchical,  ///< intra-node ring + inter-node ring, the slower segment sets the time
};

/// "auto", "ring", "hierarchical" (the JSON and CLI spelling).
std::string collective_algorithm_name(CollectiveAlgorithm algorithm);
/// Every algorithm's name, in CollectiveAlgorithm order: "auto", "ring", "hierarchical".
std::vector<std::string> collective_algorithm_names();
/// The algorithm named `name`; nullopt when none.
std::optional<CollectiveAlgorithm> collective_algorithm_from(std::string_view name);

/// Shape of a communicator.
struct GroupShape {
  int ranks = 1;           ///< N ≥ 1
  int ranks_per_node = 1;  ///< g ≥ 1; the group spans ceil(N / g) nodes
  int torus_axes = 0;      ///< TPU: number of torus axes used at once (1–3); 0 = use all of the profile's
  /// Groups of this shape running at once on every node and sharing its NICs (HSDP's replica
  /// groups: one per GPU of the node), ≥ 1.
  int concurrent_groups_per_node = 1;
};

/// Closed-form cost of one collective.
struct CollectiveCost {
  double latency_s = 0;    ///< α terms: base + steps × per-step latency
  double bandwidth_s = 0;  ///< β terms: bytes / bandwidth with the ring factors
  std::string algorithm;   ///< "none", "ring", "hierarchical", "torus"; NCCL model: "ring", "tree", "nvls", "nvls_tree", "pat"
  std::string protocol;    ///< NCCL model: "LL", "LL128" or "Simple"; "" for the α-β model
  std::string bottleneck;  ///< which link sets the bandwidth term
  std::vector<int> torus_dims;  ///< the ring lengths used on a torus
  /// "" for the nominal model; else which calibration segment was applied (calibration.hpp).
  std::string calibration;
  bool calibration_extrapolated = false;  ///< size or rank count outside the fitted range
  /// The overlay has no table of this op on these links; the named op's stood in ("" = none).
  std::string calibration_derived_from;
  /// An overlay was given but has no table in this scope (intra/inter node): nominal cost.
  bool calibration_uncovered = false;
  /// Fraction of one rank's intra-node link (NVLink; ICI on a torus) and of its share of the
  /// node's network egress that the bandwidth term keeps busy, each in [0, 1]: the bottleneck
  /// segment's is 1, a hierarchical collective's other segment's is its time over the
  /// bottleneck's. The engine's link sharing (sim::Work) reads them; 0 = link unused.
  double intra_share = 0;
  double inter_share = 0;
  double time_s() const { return latency_s + bandwidth_s; }
};

/// α-β cost of `op` over `bytes` (≥ 0) on `group`, from the profile's nominal numbers.
///
/// Ring over N ranks, per-step latency α, per-rank bandwidth W:
///   AllReduce 2(N−1)α + 2(N−1)/N · V/W;  ReduceScatter, AllGather (N−1)α + (N−1)/N · V/W.
/// Hierarchical (n nodes of g ranks, node egress W_node), c = 2 for AllReduce else 1:
///   c · max((g−1)/g · V/W_intra, (n−1)/n · V/W_node) + base_inter + c(g−1)α_intra + c(n−1)α_inter.
/// Torus (rings along k axes with lengths d_i > 1; per-axis bidirectional ring bandwidth per chip
///   W_axis): ReduceScatter axis by axis on shrinking shards, AllGather in reverse (JAX scaling
///   book, "How to think about TPUs"), the buffer split into k parts whose chains start on
///   different axes so all axes work at once, part sizes equalising the axes' bytes:
///   c · (1 − 1/N) · V / (k · W_axis), the bandwidth bound; with d_i → ∞ the seeds'
///   c·V/(k·W_axis). Latency base + c·Σ(d_i−1)·α_axis.
/// @throws InputError when the group needs a link the profile lacks (e.g. several nodes but no NICs).
CollectiveCost collective_cost(const HardwareProfile& hw, CollectiveOp op, double bytes,
                               const GroupShape& group,
                               CollectiveAlgorithm algorithm = CollectiveAlgorithm::Auto);

/// Whether the fabric latency term applies to an NCCL-model `cost`: every choice but NCCL's LL
/// protocol. LL carries the smallest messages, and there the public logs show no added latency
/// (the NDR InfiniBand logs at 64-256 KiB, tree/LL: within 3-9 µs of the tuner's estimate);
/// adding the term there took the Lambda B200 log's median error below 1 MiB from 9.7 % to 67 %.
bool fabric_latency_applies(const CollectiveCost& cost);

/// Adds the profile's fabric terms (HardwareProfile::fabric_latency_per_log2_nodes_s,
/// fabric_bandwidth_efficiency) to the NCCL model's `cost` of a group spanning `nodes` nodes:
/// latency_s += a · log2(nodes) where fabric_latency_applies(), bandwidth_s /= η. Nothing for
/// nodes ≤ 1 or a profile without them. The terms were fitted over the NCCL model
/// (validate/fabric_fit.hpp), so only it applies them: the α-β model stays the seeds'
/// datasheet arithmetic, and calibration overlays (fitted over α-β) are unaffected.
void apply_fabric(const HardwareProfile& hw, int nodes, CollectiveCost& cost);

/// One point-to-point message of `bytes` between the two ranks of `group` (group.ranks == 2):
/// NCCL's send/recv moves the bytes once over the path between the peers (nccl-tests
/// doc/PERFORMANCE.md: for sendrecv busbw = algbw). Inside a node (ranks_per_node 2) at the
/// per-GPU NVLink bandwidth after the intra-node base + one step latency; across nodes at the
/// GPU's share of its node's NICs when group.concurrent_groups_per_node pairs of the node send
/// at once (every GPU of a pipeline stage sends to its peer together), after the inter-node
/// base + one step latency and the fabric's latency and efficiency (apply_fabric over 2 nodes).
/// algorithm "p2p"; intra_share / inter_share 1 on the path used.
/// @pre group.ranks == 2, bytes ≥ 0 and finite. @throws InputError when the peers are on two
///      nodes and the profile has no network.
CollectiveCost p2p_cost(const HardwareProfile& hw, double bytes, const GroupShape& group);

/// One all-to-all of `bytes` per rank over `group` (expert parallelism's token dispatch and
/// combine: NCCL's grouped send/recv to every peer, as torch.distributed.all_to_all_single runs
/// it; `bytes` is one rank's send buffer, as nccl-tests' alltoall_perf counts its size, busbw =
/// algbw × (n − 1)/n). Each rank sends bytes/n to every peer: (g − 1)/n of the buffer to the
/// g − 1 peers on its node over NVLink at `intra_bus_bytes_per_s` (the caller passes what
/// NCCL's ring AllGather reaches on those g GPUs: inside a node alltoall and allgather reach the
/// same bus bandwidth, 254.69 vs 253.59 GB/s at 1 GB on 8 A100s, shared/data/
/// small_message_latency.md §2a; 0: the per-GPU link's nominal bandwidth), and (n − g)/n to the peers on
/// other nodes through its share of its node's NICs (every member GPU sending at once; the
/// shape's concurrent_groups_per_node groups share them). The two paths run at once: the
/// bandwidth term is the slower, bottleneck share 1, the other its time over it. Latency: the
/// intra-node base plus one step per peer, (n − 1) · step_latency (a send/recv pair per peer),
/// and, across nodes, the inter-node base and the fabric terms (apply_fabric over the nodes).
/// algorithm "alltoall". 0 bytes or one rank: latency only (none for one rank).
/// @pre bytes ≥ 0 and finite. @throws InputError when the group spans nodes and the profile
///      has no network.
CollectiveCost all_to_all_cost(const HardwareProfile& hw, double bytes, const GroupShape& group,
                               double intra_bus_bytes_per_s = 0);

/// Time (s) below which no algorithm can move the bytes `op` must move over `bytes` on
/// `group`, whatever its latency: a physical floor every cost model must respect (property test
/// hardware_test "no collective beats its bandwidth lower bound").
///   AllGather: every rank receives (N−1)/N·V; ReduceScatter: every rank sends (N−1)/N·V;
///   AllReduce: twice that without in-network reduction (Patarasuk & Yuan, "Bandwidth optimal
///   all-reduce algorithms for clusters of workstations", JPDC 2009), once inside an NVSwitch
///   node with NVLS (the switch reduces; hw.nccl.nvls).
/// Torus: through the k axes of length > 1 at once, k·W_axis per chip (no reduction on ICI).
/// GPUs: per rank through NVLink plus its share of its node's group NICs,
///   W_intra + W_node/g; per node through the NICs of its g member GPUs,
///   W_node = hw.group_network_bytes_per_s(g, concurrent groups): (n−1)/n·V (×2 for AllReduce).
/// The bound is the larger. 0 for one rank or no bytes. Same preconditions as collective_cost().
double collective_bandwidth_lower_bound_s(const HardwareProfile& hw, CollectiveOp op, double bytes,
                                          const GroupShape& group);

/// Ring lengths for `ranks` chips over `axes` torus axes: the profile's pod shape when it
/// matches exactly, else the most balanced factorisation into `axes` factors.
std::vector<int> torus_ring_lengths(const HardwareProfile& hw, int ranks, int axes);

/// Communication-bound threshold of pure DP (seed 000 §7): the tokens per GPU at which the
/// backward pass (4·Ψ·tokens / C, C = peak FLOP/s) equals the bandwidth term of the AllReduce
/// of the bf16 gradients (V = 2Ψ bytes):  tokens = C · t_bw(V) / (2V).
struct Threshold {
  double tokens_per_gpu = 0;             ///< with the exact (k−1)/k ring factors (seed §7.3)
  double tokens_per_gpu_asymptotic = 0;  ///< every (k−1)/k taken as 1: the seeds' C/W
  double moe_factor = 1;                 ///< E/k (seed §7.3; E/(k·ep) under EP), already applied to both
  double min_global_batch_tokens = 0;    ///< tokens_per_gpu × N
  double min_global_batch_tokens_asymptotic = 0;
  std::string bottleneck;
  std::string algorithm;
  std::vector<int> torus_dims;
};

/// @param moe_factor  the gradient bytes a GPU holds per FLOP of its tokens, relative to a dense
///   model's 6·Ψ per token: E/k for a mixture of E experts routing each token to k (seed 000
///   §7.3), E/(k·ep) when expert parallelism leaves each GPU experts / ep of them; 1 for a dense
///   model. Precondition: moe_factor > 0.
Threshold dp_threshold(const HardwareProfile& hw, const GroupShape& group, double moe_factor = 1);

}  // namespace stepsim::hardware
