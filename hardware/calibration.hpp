// SPDX-License-Identifier: Apache-2.0
// Calibration overlay: size-segmented latency and bandwidth factors over the nominal collective
// model, fitted from measurements (style.md §2.1.1 SimGrid's network factors, §3.3).
// A profile keeps the datasheet numbers; an overlay keeps the fit and where it came from.
#pragma once

#include "hardware/collective_model.hpp"
#include "hardware/hardware_profile.hpp"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace stepsim::hardware {

/// Where a collective's traffic goes, as SimGrid's factor callbacks tell local from remote
/// routes (style.md §3.3 rule 2): all ranks in one node, or spanning several nodes.
enum class CalibrationScope { IntraNode, InterNode };

/// "intra_node" or "inter_node" (the JSON spelling).
std::string calibration_scope_name(CalibrationScope scope);

/// Scope of a communicator: IntraNode when ceil(ranks / ranks_per_node) == 1.
CalibrationScope scope_of(const GroupShape& group);

/// One size segment: collectives of total size V (nccl-tests' S) with lo_bytes ≤ V < hi_bytes
/// (half-open) take
///   t = latency_factor · α_nom + bandwidth_s_nom / bandwidth_factor,
/// i.e. SimGrid's `lat_factor(S)·L + S/(bw_factor(S)·B)` (style.md §2.1.1).
struct CalibrationSegment {
  double lo_bytes = 0;          ///< inclusive
  double hi_bytes = 0;          ///< exclusive; > lo_bytes
  double latency_factor = 1;    ///< fitted intercept ÷ nominal α (> 0)
  double bandwidth_factor = 1;  ///< nominal β-slope ÷ fitted slope = fitted busbw ÷ nominal busbw (> 0)
  int points = 0;               ///< measurements the segment was fitted on
  double max_residual = 0;      ///< max |t_fit − t_meas| / t_meas over those points
};

/// The segments of one (op, scope, ranks) key, contiguous and sorted: segment k's hi_bytes
/// equals segment k+1's lo_bytes. [segments.front().lo_bytes, segments.back().hi_bytes) is the
/// measured range.
struct CalibrationTable {
  CollectiveOp op = CollectiveOp::AllReduce;
  CalibrationScope scope = CalibrationScope::IntraNode;
  int ranks = 0;           ///< communicator size the table was fitted at
  int ranks_per_node = 0;  ///< GPUs per node of that communicator
  std::string source;      ///< file name of the measurement it came from
  std::vector<CalibrationSegment> segments;
};

/// Provenance of one measurement file an overlay was fitted on.
struct CalibrationSource {
  std::string file;          ///< file name as given
  std::string sha256;        ///< hex SHA-256 of its bytes
  std::string format;        ///< "nccl-tests" (raw stdout) or "nccl-tests-csv"
  std::string gpu;           ///< GPU model as printed ("" when not printed)
  int ranks = 0;
  int nodes = 0;             ///< 0 when unknown
  std::string nccl_version;  ///< "" when not printed
};

/// A fitted GEMM curve (`stepsim calibrate gemm`): it replaces the profile's GEMM pricing for
/// every task that carries GEMM shapes (hardware/gemm_model.hpp).
struct GemmCalibration {
  GemmCurve curve;
  int points = 0;               ///< measured GEMMs the curve was fitted on
  double median_residual = 0;   ///< median |t_fit − t_meas| / t_meas over them
  double max_residual = 0;      ///< max |t_fit − t_meas| / t_meas over them
  CalibrationSource source;     ///< the measurement file (format "gemm-sweep" or "mlp-step"; gpu = device)
};

/// The achieved fraction of HBM bandwidth of memory-bound kernels, measured (JSON section
/// `memory_bound`; `stepsim calibrate trace`): it replaces the profile's memory.hbm_efficiency.
struct MemoryCalibration {
  double hbm_efficiency = 0;    ///< (0, 1]
  int points = 0;               ///< measured kernels it was fitted on
  double median_residual = 0;   ///< median |t_fit − t_meas| / t_meas over them
  double max_residual = 0;      ///< max |t_fit − t_meas| / t_meas over them
  CalibrationSource source;     ///< the measurement (format "torch.profiler"; gpu = device)
};

/// The CPU time per launched GPU op, measured (JSON section `host`; `stepsim calibrate trace`):
/// a scenario run with the overlay takes it as its `framework.host_op_s` (models/scenario.hpp).
/// Mean CPU time between one thread's consecutive launches, the CPU's waits for the GPU taken
/// out (validate::fit_host_time has the rule).
struct HostCalibration {
  double host_op_s = 0;         ///< (0, 0.01] s
  int points = 0;               ///< launch intervals it was measured on
  int steps = 0;                ///< profiler steps they came from
  double median_residual = 0;   ///< median over the steps of |intervals × host_op_s − their CPU time| / that time
  double max_residual = 0;      ///< max of the same
  CalibrationSource source;     ///< the measurement (format "torch.profiler"; gpu = device)
};

/// A fitted overlay. Invariants (checked by the JSON reader and by fit code): at least one
/// table, a gemm, a memory_bound or a host section; every table has ≥ 1 segment, segments contiguous with lo < hi, factors > 0 and finite.
struct CalibrationOverlay {
  std::string name;                  ///< file it was read from, or the -o path when fitted
  std::string hardware;              ///< nominal profile name the factors are relative to
  std::string cost_model = "alpha-beta";  ///< nominal model the factors are relative to
  /// Nominal algorithm family the factors are relative to (JSON `algorithm`: "auto", "ring" or
  /// "hierarchical"; "auto" for overlays written before it was recorded). A scenario must use it.
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::Auto;
  std::vector<CalibrationSource> sources;
  std::vector<CalibrationTable> tables;  ///< collective factors (may be empty with a gemm section)
  std::optional<GemmCalibration> gemm;  ///< GEMM curve, or none (JSON section `gemm`)
  std::optional<MemoryCalibration> memory;  ///< memory-bound efficiency, or none (JSON `memory_bound`)
  std::optional<HostCalibration> host;      ///< host time per op, or none (JSON `host`)
};

/// The GEMM curve a cost model uses: the overlay's fitted one, else the profile's
/// `compute.gemm_curve`, else an absent curve (flat gemm_efficiency). An overlay fitted on a
/// BF16 sweep gives no TF32 / FP32 / FP8 efficiency; those it leaves out stay the profile's.
GemmCurve effective_gemm_curve(const HardwareProfile& hw, const CalibrationOverlay* overlay);

/// The segment a lookup chose.
struct CalibrationMatch {
  const CalibrationTable* table = nullptr;      ///< nullptr when the overlay has no table for the op and scope
  const CalibrationSegment* segment = nullptr;
  bool size_extrapolated = false;   ///< V outside the table's measured range: nearest segment used
  bool ranks_extrapolated = false;  ///< no table at this (ranks, ranks_per_node): the nearest used
  /// Set when the overlay has no table for the op in this scope and the table of another op
  /// over the same links stands in (AllReduce = ReduceScatter + AllGather over the same ring:
  /// same bus bandwidth, same per-step latency): that op.
  std::optional<CollectiveOp> derived_from;
};

/// Lookup rule (one rule, unit-tested at lo−1, lo, hi−1, hi):
///  * tables of the same op and scope, else (derived_from) of the op's sibling on the same
///    links: AllReduce's for ReduceScatter and AllGather; ReduceScatter's, then AllGather's, for
///    AllReduce;
///  * among them the one with equal ranks and ranks_per_node, else the nearest by
///    |Δlog2 ranks| + |Δlog2 ranks_per_node| (ties: the larger ranks), flagged ranks_extrapolated;
///  * in it, the segment with lo ≤ V < hi; V below the first lo uses the first segment and V
///    at or above the last hi uses the last, flagged size_extrapolated.
CalibrationMatch find_calibration(const CalibrationOverlay& overlay, CollectiveOp op,
                                  const GroupShape& group, double bytes);

/// Applies `segment`'s factors to a nominal cost: latency × latency_factor, bandwidth ÷
/// bandwidth_factor. Algorithm and bottleneck are kept.
CollectiveCost apply_factors(const CollectiveCost& nominal, const CalibrationSegment& segment);

/// The nominal collective_cost() with the overlay's matching segment applied on top
/// (SimGrid's factor mechanism). With `overlay` == nullptr returns the nominal cost; with no
/// table for the scope at all, the nominal cost with CollectiveCost::calibration_uncovered set.
/// Sets CollectiveCost::calibration, ::calibration_extrapolated and ::calibration_derived_from.
///
/// Other communicator shapes (issue 13 item 9): a table fitted at n_fit ranks (g_fit per node)
/// applied to n ranks keeps its fitted bandwidth (bandwidth_s_nom(n) ÷ bandwidth_factor) and its
/// fitted latency at n_fit, moved by how NCCL's latency changes between the two shapes:
///   latency = latency_factor · α_nom(n_fit) + L_nccl(n) − L_nccl(n_fit)   (≥ 0),
/// L_nccl = nccl_collective_cost()'s latency (the α-β latency on profiles without "nccl").
/// @throws InputError as collective_cost().
CollectiveCost calibrated_collective_cost(const HardwareProfile& hw, const CalibrationOverlay* overlay,
                                          CollectiveOp op, double bytes, const GroupShape& group,
                                          CollectiveAlgorithm algorithm = CollectiveAlgorithm::Auto);

/// One-line description of an overlay for reports: "NAME (over HW MODEL; covers AllReduce
/// intra_node n=8, ...; fitted on FILE sha256 PREFIX…, GPU, N ranks / M nodes, NCCL V)".
std::string describe_overlay(const CalibrationOverlay& overlay);

/// Checks the invariants above; `source` names the overlay in the message.
/// @throws InputError naming the table and segment that break them.
void check_overlay(const CalibrationOverlay& overlay, const std::string& source);

}  // namespace stepsim::hardware
