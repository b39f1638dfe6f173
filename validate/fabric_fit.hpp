// SPDX-License-Identifier: Apache-2.0
// The fabric terms of a network preset fitted to multi-node nccl-tests logs (issue 19 item 3,
// 5): `stepsim calibrate fabric`. Over a profile's nominal collective model (NCCL's tuner on
// NVIDIA profiles), a collective across N > 1 nodes takes
//     t = L_nom + a · log2(N) + B_nom / η
// (hardware::apply_fabric; no a term where NCCL picks its LL protocol), L_nom and B_nom the nominal latency and bandwidth terms. (a, 1/η)
// enter linearly, so they are the least squares of the rows' relative error (each row
// weighted 1/t_measured², as validate/fit.cpp weighs rows), with a ≥ 0 and η ≤ 1 enforced.
// The holdout rule (AGENTS.md "Truth first", issue 19 item 5): with two or more tables, each
// table is predicted by the terms fitted on the others (leave one table out); a single table is
// fitted on its even-indexed sizes and judged on its odd ones.
#pragma once

#include "hardware/hardware_profile.hpp"
#include "validate/fit.hpp"
#include "validate/nccl_tests.hpp"

#include <string>
#include <vector>

namespace stepsim::validate {

/// One measured row of a multi-node table with the nominal model's terms (fabric terms off).
struct FabricPoint {
  std::size_t table = 0;  ///< index into FabricReport::tables
  int index = 0;          ///< the row's index among its table's rows ≥ min_bytes (even/odd)
  int nodes = 2;          ///< N > 1
  double bytes = 0;
  double measured_s = 0;
  double latency_s = 0;    ///< nominal latency term (NCCL: the chosen estimate's, with launch overhead)
  double bandwidth_s = 0;  ///< nominal bandwidth term
  bool latency_applies = true;  ///< hardware::fabric_latency_applies() to the nominal choice
};

/// Fitted fabric terms.
struct FabricTerms {
  double latency_per_log2_nodes_s = 0;  ///< a ≥ 0
  double bandwidth_efficiency = 1;      ///< η in (0, 1]
  std::size_t points = 0;
};

/// Least squares of (a, 1/η) over `points` (see the file comment). With no point, or a
/// degenerate system, the terms stay at (0, 1).
FabricTerms fit_fabric_terms(const std::vector<FabricPoint>& points);

/// t of `p` under `terms`, s.
double fabric_time_s(const FabricPoint& p, const FabricTerms& terms);

/// One table's errors, sizes ≥ min_bytes.
struct FabricTableReport {
  std::string source, op, gpu;
  int ranks = 0, nodes = 0;
  int rows = 0;
  double nominal_median = 0, nominal_max = 0;    ///< |error| of the nominal model (no fabric terms)
  double fitted_median = 0, fitted_max = 0;      ///< the terms fitted on every table (in-sample)
  double held_out_median = 0, held_out_max = 0;  ///< the holdout prediction
  double given_median = 0, given_max = 0;        ///< the profile's own fabric terms (a preset's, as shipped)
  std::string hardware;                          ///< the profile the table was priced on
  std::string held_out_rule;  ///< "other tables" (leave one out) or "even -> odd rows"
  FabricTerms held_out_terms;
};

struct FabricReport {
  std::string hardware;   ///< the profile's name
  std::string network;    ///< the preset the NICs came from ("" = the profile's)
  std::string cost_model; ///< "nccl" or "alpha-beta"
  double min_bytes = 0;
  FabricTerms terms;      ///< fitted on every table
  FabricTerms given;      ///< the profiles' own fabric terms (the network preset's as shipped)
  std::vector<FabricTableReport> tables;
  std::vector<std::string> warnings;  ///< tables skipped (one node, ops not modelled) and why
};

/// Fits the fabric terms of one network to every multi-node table of `logs` with rows ≥
/// `min_bytes`, each log priced on its own profile (`profiles[i]` for `logs[i]`, so clusters
/// of different GPUs on one kind of network fit together). The profiles' fabric terms are what
/// FabricReport::given reports; the fit runs the nominal model with them at 0 and 1.
/// Preconditions: profiles.size() == logs.size(), every profile on the same network.
/// FabricReport::warnings also says when a fitted term sits at its bound (a = 0, η = 1).
/// @throws InputError naming the log when a multi-node table's rank or node count is unknown
///         (raw logs without '#  Rank' lines and CSVs without their .json sidecar), has more
///         ranks per node than its profile has GPUs, when two logs are the same bytes, when the
///         profiles are on different networks, when a profile has no "nccl" object, or when no
///         table spans several nodes.
FabricReport calibrate_fabric(const std::vector<NcclTestsLog>& logs, const std::vector<hardware::HardwareProfile>& profiles,
                              double min_bytes = 1 << 20);

}  // namespace stepsim::validate
