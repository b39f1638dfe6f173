// SPDX-License-Identifier: Apache-2.0
// Predicted vs measured (`stepsim compare SCENARIO.json MEASURED.json`): the scenario is
// simulated, the measured timeline is reduced to the same per-phase figures, and tasks are
// matched by name.
#pragma once

#include "models/scenario.hpp"
#include "validate/measured_timeline.hpp"

#include <string>
#include <vector>

namespace stepsim::validate {

/// Per-phase figures of one step on one rank, in seconds, defined as in models::Report:
/// forward / backward / optimizer / overhead are sums of task durations of that phase;
/// comm is the union of communication intervals; exposed_comm is the part of that union not
/// covered by any compute-stream task; step is the latest task end (times start at 0).
struct PhaseTimes {
  double forward_s = 0;
  double backward_s = 0;
  double comm_s = 0;
  double exposed_comm_s = 0;
  double optimizer_s = 0;
  double overhead_s = 0;
  double step_s = 0;
};

/// Phase figures of one rank's tasks in one iteration.
PhaseTimes phase_times(const std::vector<MeasuredTask>& tasks);

/// Phase figures of a whole measurement: per iteration, the mean over ranks (the step: the
/// slowest rank; a rank's step is MeasuredRank::step_s when set, else its latest task end), then
/// the median over iterations (robust to one slow step).
PhaseTimes measured_phase_times(const MeasuredTimeline& m);

/// One row of the comparison: predicted and measured seconds and (predicted − measured) /
/// measured (0 when both are 0; +inf when only the prediction is non-zero).
struct CompareRow {
  std::string name;
  double predicted_s = 0;
  double measured_s = 0;
  double rel_error = 0;
};

/// Everything `stepsim compare` prints.
struct Comparison {
  std::string scenario_source, measured_source;
  std::size_t iterations = 0;
  std::int64_t ranks = 0;
  /// forward, backward, comm (busy), exposed comm, optimizer, overhead, step — in that order.
  std::vector<CompareRow> phases;
  /// Tasks present in both, in the simulator's order (median measured duration over
  /// iterations, mean over ranks; predicted: rank 0).
  std::vector<CompareRow> tasks;
  /// Against a profiler trace (MeasuredTimeline::command "torch.profiler"): GPU time per step by
  /// kernel class, grouped as stepsim prices kernels (kernel_class_rows); empty otherwise.
  std::vector<CompareRow> kernel_classes;
  std::vector<std::string> predicted_only;  ///< simulated task names the run did not record
  std::vector<std::string> measured_only;   ///< recorded task names the simulation lacks
  /// Differences between the scenario and the run's configuration (layers, parameters,
  /// tokens, DP degree, buckets, ...): the comparison is still made, the table says why it
  /// may not mean much.
  std::vector<std::string> warnings;
};

/// Predicted vs measured GPU time per step by kernel class. Measured: each class's summed
/// kernel durations (tasks named by validate::KernelClass, as measured_timeline_from_traces
/// writes them), per iteration the mean over ranks, then the median over iterations, grouped
/// "matmul" (gemm, conv), "attention", "memory-bound" (elementwise, reduction, norm, optimizer,
/// device memcpy, memset), "communication" (NCCL kernels, summed; the phases' comm row is their
/// union) and "unknown, host copies" (unknown kernels, copies to or from the host: nothing
/// stepsim prices). Predicted:
/// rank 0's compute tasks split by hardware::StepCostModel::split (GEMM; attention; streaming),
/// and `predicted_comm_s`, the simulated step's communication busy time (models::Report::
/// comm_time_s); the CPU launch bound and contention are not in these rows.
std::vector<CompareRow> kernel_class_rows(const models::Scenario& scenario, const MeasuredTimeline& measured,
                                          double predicted_comm_s);

/// Simulates `scenario` and compares it with `measured`. A profiler trace's timeline (command
/// "torch.profiler") gets the kernel-class rows instead of tasks matched by name (its tasks are
/// kernels, not stepsim's tasks), and warnings when the traced GPU is another model than the
/// scenario's profile or the DP degree differs from its ranks.
/// @throws InputError when the scenario cannot be simulated (as models::run).
Comparison compare(const models::Scenario& scenario, const MeasuredTimeline& measured);

/// Relative error (predicted − measured) / measured with the conventions of CompareRow.
double relative_error(double predicted_s, double measured_s);

/// Fixed-width text table: phases, then (when `with_tasks`) every matched task, then the
/// unmatched names and the warnings.
std::string comparison_text(const Comparison& c, bool with_tasks);

}  // namespace stepsim::validate
