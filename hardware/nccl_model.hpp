// SPDX-License-Identifier: Apache-2.0
// Nominal collective cost model that mirrors NCCL's own tuner (NVIDIA/nccl v2.30.7
// src/graph/tuning.cc :: ncclTopoTuneModel / ncclTopoGetAlgoTime, src/enqueue.cc ::
// topoGetAlgoInfo), as transcribed in shared/reference/semantics.md §D.1–D.3.
//
// For every (algorithm, protocol) NCCL would consider — Tree, Ring, NVLS, NVLS_TREE, PAT ×
// LL, LL128, Simple — it estimates
//     time_us = lat[algo][proto] + nBytes / (1000 · algBw[algo][proto])      (§D.2 rule 78)
// with lat from the base and per-hop latency tables (rule 80–81) and algBw from the search
// graph's channels × per-channel bandwidth, capped by the per-generation per-channel tables and
// converted from bus to algorithm bandwidth (rule 79), then picks the fastest (§D.3 rule 83).
// The search graph (channels, GB/s per channel) comes from the profile's "nccl" object
// (HardwareProfile::nccl); across nodes its per-channel bandwidth is the NICs' (one channel per
// NIC the group's GPUs drive, HardwareProfile::group_nics).
#pragma once

#include "hardware/collective_model.hpp"
#include "hardware/hardware_profile.hpp"

#include <string>
#include <vector>

namespace stepsim::hardware {

/// Which nominal collective model prices collectives.
enum class CollectiveModel {
  AlphaBeta,  ///< the seeds' α-β model (collective_model.hpp)
  Nccl,       ///< NCCL's tuner (this file)
};

/// "alpha-beta" or "nccl" (the CLI and JSON spelling).
std::string collective_model_name(CollectiveModel model);
/// Inverse of collective_model_name().
/// @throws InputError(source, pointer, ...) for any other name, listing the valid ones.
CollectiveModel parse_collective_model(const std::string& name, const std::string& source,
                                       const std::string& pointer);
/// The default for a profile: CollectiveModel::Nccl for profiles with an "nccl" object (the
/// NVIDIA GPUs), CollectiveModel::AlphaBeta otherwise (TPU). The NCCL model is closer to the
/// public nccl-tests logs at both < 1 MiB and ≥ 1 MiB (docs/calibration.md "Nominal cost
/// models"); the seeds' reference figures name alpha-beta explicitly.
CollectiveModel default_collective_model(const HardwareProfile& hw);

/// NCCL algorithms, in NCCL's enum order (src/include/plugin/nccl_tuner.h; §D.1 rule 74).
/// CollNet is not modelled (needs a SHARP plugin).
enum class NcclAlgo { Tree = 0, Ring = 1, Nvls = 4, NvlsTree = 5, Pat = 6 };
/// NCCL protocols in enum order (§D.1 rule 74).
enum class NcclProto { LL = 0, LL128 = 1, Simple = 2 };

/// "tree", "ring", "nvls", "nvls_tree", "pat".
std::string nccl_algo_name(NcclAlgo algo);
/// "LL", "LL128", "Simple".
std::string nccl_proto_name(NcclProto proto);

/// One cell of NCCL's tuning table for a given (op, size, group).
struct NcclEstimate {
  NcclAlgo algo = NcclAlgo::Ring;
  NcclProto proto = NcclProto::Simple;
  double latency_us = 0;      ///< lat · latCount (rule 78, 80), µs
  double bus_bw_gbs = 0;      ///< busBw after the rule-79 refinements, GB/s (1e9 B/s)
  double alg_bw_gbs = 0;      ///< algorithm bandwidth (bus → alg conversion of rule 79), GB/s
  double bytes_us = 0;        ///< nBytes / (1000 · alg_bw_gbs), µs
  /// NCCL's estimate (rule 78): latency_us + bytes_us, µs.
  double time_us() const { return latency_us + bytes_us; }
};

/// Every (algorithm, protocol) NCCL enables for `op` on `group` (§D.1 rule 75–77), with its
/// estimate for a buffer of `bytes` (nccl-tests' size S: the total array for AG/RS, rule 78).
/// Order: NCCL's enum order (algorithm, then protocol), so the first minimum is NCCL's choice.
/// `algorithm` restricts the candidates: Ring → Ring only; Hierarchical → Tree and NVLS_TREE
/// (NCCL's hierarchical algorithms); Auto → all.
/// @throws InputError naming the profile and "/nccl" when it has no "nccl" object (e.g. a TPU)
///         or the group spans several nodes of a profile without NICs.
std::vector<NcclEstimate> nccl_tuning_table(const HardwareProfile& hw, CollectiveOp op, double bytes,
                                            const GroupShape& group,
                                            CollectiveAlgorithm algorithm = CollectiveAlgorithm::Auto);

/// NCCL's choice (§D.3 rule 83: the minimum time; ties to the lower algorithm, then protocol
/// index) as a CollectiveCost: latency_s = latency_us·1e-6 + the profile's
/// nccl.launch_overhead_s (host launch cost that nccl-tests' time includes, §D.5 rule 90, and
/// the tuner omits; 4 µs unless the profile says otherwise), bandwidth_s = bytes_us·1e-6,
/// algorithm = nccl_algo_name(), protocol = nccl_proto_name(). One rank costs 0 ("none").
/// @throws InputError as nccl_tuning_table(), or when no candidate is enabled.
CollectiveCost nccl_collective_cost(const HardwareProfile& hw, CollectiveOp op, double bytes,
                                    const GroupShape& group,
                                    CollectiveAlgorithm algorithm = CollectiveAlgorithm::Auto);

/// collective_cost() for CollectiveModel::AlphaBeta, nccl_collective_cost() for Nccl.
CollectiveCost model_collective_cost(CollectiveModel model, const HardwareProfile& hw, CollectiveOp op,
                                     double bytes, const GroupShape& group,
                                     CollectiveAlgorithm algorithm = CollectiveAlgorithm::Auto);

}  // namespace stepsim::hardware
