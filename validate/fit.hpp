// SPDX-License-Identifier: Apache-2.0
// Fitting a calibration overlay to nccl-tests measurements, and measuring the fit's own error
// (style.md §3.3 "Fitting" and "Check"; SimGrid's calibration tutorial, §2.1.1).
#pragma once

#include "hardware/calibration.hpp"
#include "hardware/collective_model.hpp"
#include "hardware/hardware_profile.hpp"
#include "validate/nccl_tests.hpp"

#include <optional>
#include <string>
#include <vector>

namespace stepsim::validate {

/// One measured collective: total size V (nccl-tests S) and its time.
struct Measurement {
  double bytes = 0;
  double time_s = 0;  ///< > 0
  int line = 0;       ///< where it was read (0 = synthetic)
};

/// The nominal model's prediction for one (op, group) as a line t = α + V·c: collective_cost()
/// is affine in V for every algorithm it has (collective_model.hpp).
struct NominalLine {
  double alpha_s = 0;           ///< latency term, independent of V
  double seconds_per_byte = 0;  ///< bandwidth term ÷ V
};

/// collective_cost() of (op, group) written as a line.
/// @throws InputError as collective_cost().
NominalLine nominal_line(const hardware::HardwareProfile& hw, hardware::CollectiveOp op,
                         const hardware::GroupShape& group, hardware::CollectiveAlgorithm algorithm);

/// Knobs of the segmented fit.
struct FitOptions {
  int max_segments = 8;         ///< upper bound on segments per table
  int min_points = 2;           ///< measurements per segment
  double noise_floor = 0.005;    ///< relative noise of nccl-tests times; segments are not added to fit below it
  double max_bandwidth_factor = 1e3;  ///< cap for flat (latency-only) segments
  /// A point whose |relative residual| after the first fit exceeds max(this, 5 × the median)
  /// is an outlier: it is left out of a second fit (and reported). 0 disables.
  double outlier_threshold = 0.15;
  /// A point more than this fraction slower than both neighbouring sizes (the next one, for the
  /// smallest size) is a spike and is left out before the first fit (and reported): NCCL picks
  /// the fastest algorithm/protocol at every size (semantics.md §D.3 rule 83), so time does not
  /// fall as the message grows. 0 disables.
  double monotone_tolerance = 0.15;
  /// Exact number of segments: the largest feasible count ≤ this one and ≤ max_segments.
  /// 0 lets BIC choose up to max_segments.
  int segments = 0;
};

/// Fits segments to `points` against `nominal` (style.md §3.3 step 3):
///  * sorts by size; for every K ≤ max_segments, dynamic programming finds the K contiguous
///    runs of ≥ min_points points minimising Σ ((a_k + b_k·V − t)/t)² (least squares on the
///    relative error, a_k ≥ 0, b_k ≥ c_nom / max_bandwidth_factor);
///  * K is chosen by BIC, n·ln(max(SSE/n, noise_floor²)) + (3K − 1)·ln n, so breakpoints appear
///    where the data bends (NCCL's protocol and algorithm switches) and not to chase noise
///    (FitOptions::segments > 0 fixes K instead);
///  * rows slower than both neighbouring sizes by more than FitOptions::monotone_tolerance are
///    left out first (spikes; appended to `*outliers`);
///  * a boundary sits where the two neighbouring segments' lines cross when that lies between
///    the neighbouring measured sizes (the model is then continuous there: NCCL switches
///    protocol where the faster one changes), else at the geometric mean of those sizes; the
///    first segment starts at the smallest size and the last ends one byte past the largest;
///  * latency_factor = a_k / α_nom, bandwidth_factor = c_nom / b_k;
///  * when leading spikes were left out, sizes below the smallest kept one get a flat segment
///    (bandwidth_factor = max_bandwidth_factor) at the fitted time of that size: a collective
///    below its smallest reliable size is latency-bound;
///  * with ≥ 6 points, outliers (FitOptions::outlier_threshold) are dropped and the fit is
///    repeated once; they are appended to `*outliers` when given.
/// @throws InputError (source = `source`) when there are fewer than 2 points, or α_nom or
///         c_nom is not positive.
hardware::CalibrationTable fit_table(std::vector<Measurement> points, const NominalLine& nominal,
                                     const FitOptions& options, const std::string& source,
                                     std::vector<Measurement>* outliers = nullptr);

/// A warning when the GPU a log names (e.g. "NVIDIA H200") is another model than the profile's
/// (name, else description: "h100-sxm"), or nothing when they agree or either is unknown.
/// The built-in profile of the GPU a log names ("NVIDIA H100 80GB HBM3" → "h100-sxm",
/// "NVIDIA A100-SXM4-40GB" → "a100-40gb", "NVIDIA B200" → "b200"); "" when no profile is that
/// GPU's (L40S, RTX 4090, an unnamed device).
std::string builtin_profile_for_gpu(const std::string& gpu);

std::optional<std::string> gpu_profile_mismatch(const std::string& gpu, const hardware::HardwareProfile& hw);

/// Most distinct sizes one table is fitted on: beyond it calibrate() bins sizes (pool_sizes).
inline constexpr std::size_t kMaxFitSizes = 2048;

/// Sorts `points` by size and pools them: a size measured several times (repeated runs) takes
/// the median time; when more than `max_sizes` distinct sizes remain, they are merged into
/// `max_sizes` bins of equal width in log size, each the median size and median time of its
/// points (the segmented fit is O(n²·K): 10,000 sizes took 8 s). `max_sizes` < 2 = no binning.
std::vector<Measurement> pool_sizes(std::vector<Measurement> points, std::size_t max_sizes);

/// Leaves out rows more than `tolerance` slower than both neighbouring sizes (the next size
/// only, for the smallest): the spike rule of fit_table (FitOptions::monotone_tolerance).
/// `sorted` is sorted by size; spikes are appended to `*spikes` when given. When fewer than 2
/// rows would remain, or `tolerance` ≤ 0, every row is kept.
std::vector<Measurement> drop_spikes(const std::vector<Measurement>& sorted, double tolerance,
                                     std::vector<Measurement>* spikes = nullptr);

/// Plain interpolation between measured sizes: the reference a fit's even→odd error is read
/// against (a log that interpolation cannot predict either is noise-limited at its size step).
enum class Interpolation {
  Linear,               ///< t linear in V between neighbouring sizes
  LogLog,               ///< ln t linear in ln V
  MonotoneCubicLogLog,  ///< Fritsch–Carlson monotone cubic (PCHIP) of ln t over ln V
};

/// Time at `bytes` interpolated between `points` (sorted by size, ≥ 2 distinct sizes, times
/// > 0). Below the smallest size the time is held flat (latency-bound, as fit_table does);
/// above the largest, the last interval's line is extended in the method's coordinates (a
/// linear extension floored at 1 % of the largest size's time).
/// @throws std::invalid_argument when fewer than 2 points are given.
double interpolate_time(const std::vector<Measurement>& points, double bytes, Interpolation how);

/// Median and maximum |relative error| of predictions, split at 1 MiB (the split).
struct ErrorSummary {
  int large_points = 0;    ///< sizes ≥ 1 MiB
  double large_median = 0, large_max = 0;
  int small_points = 0;    ///< sizes < 1 MiB
  double small_median = 0, small_max = 0;
};

/// `errors` are (bytes, (predicted − measured)/measured) pairs.
ErrorSummary summarize_errors(const std::vector<std::pair<double, double>>& errors);

/// The even→odd check of calibrate() with plain interpolation in place of the fit: `points`
/// sorted by size; the even-indexed ones, spikes dropped by drop_spikes(monotone_tolerance),
/// predict the odd-indexed ones. Empty summary when fewer than 2 even rows remain.
ErrorSummary cross_check_interpolation(const std::vector<Measurement>& points, Interpolation how,
                                       double monotone_tolerance);

/// What `stepsim calibrate` was asked to do.
struct CalibrateOptions {
  int ranks = 0;              ///< override the rank count of every run (0: from the log)
  int gpus_per_node = 0;      ///< override GPUs per node (0: from the log's hosts, else the profile's)
  std::string op;             ///< override the op of every run ("" : from the log)
  hardware::CollectiveAlgorithm algorithm = hardware::CollectiveAlgorithm::Auto;
  FitOptions fit;
};

/// One measured row compared with the models.
struct RowComparison {
  int line = 0;
  double bytes = 0;
  double measured_s = 0;
  double nominal_s = 0;
  double fitted_s = 0;                 ///< the overlay fitted on all rows
  std::optional<double> cross_s;       ///< odd rows: predicted by the fit on even rows only
  std::string segment;                 ///< "[lo, hi)" of the fitted segment used
  /// The NCCL-tuner nominal model (hardware/nccl_model.hpp) on the same row, when the profile
  /// has an "nccl" object; with the algorithm/protocol it picked ("ring/LL128").
  std::optional<double> nccl_s;
  std::string nccl_choice;
};

/// One fitted table with its rows and error summaries.
struct TableReport {
  std::string source;        ///< log file
  std::string op;            ///< nccl-tests name ("all_reduce")
  hardware::GroupShape group;
  int nodes = 1;
  double bus_factor = 0;     ///< busbw / algbw for this op and rank count
  hardware::CalibrationTable table;
  std::vector<RowComparison> rows;
  ErrorSummary nominal;      ///< every row, nominal model
  ErrorSummary fitted;       ///< every row, the fit on all rows (in-sample)
  ErrorSummary cross;        ///< odd rows, the fit on even rows (out-of-sample)
  ErrorSummary cross_nominal;  ///< odd rows, nominal model (same rows as `cross`)
  /// Odd rows, linear interpolation between the even rows (cross_check_interpolation): the
  /// reference for `cross`: when neither meets a bar, the log's odd rows are off any smooth
  /// curve through its even rows.
  ErrorSummary cross_interpolation;
  /// Every row, the NCCL-tuner nominal model (empty when the profile has no "nccl" object).
  std::optional<ErrorSummary> nccl;
};

/// The overlay and everything needed to judge it.
struct CalibrationResult {
  hardware::CalibrationOverlay overlay;
  std::vector<TableReport> tables;
  std::vector<std::string> warnings;  ///< skipped runs (ops the model lacks), unreadable lines
};

/// Fits one table per (log, run) of a modelled op (all_reduce, all_gather, reduce_scatter);
/// other ops are listed in `warnings`, as is every unreadable line. The overlay's provenance
/// records each log's name, SHA-256, GPU, ranks, nodes and NCCL version.
/// @param overlay_name  recorded as the overlay's name (the -o path)
/// @throws InputError when a run's rank count is unknown, its ranks do not split into whole
///         nodes, or a run has fewer than 2 timed rows.
CalibrationResult calibrate(const std::vector<NcclTestsLog>& logs, const hardware::HardwareProfile& hw,
                            const CalibrateOptions& options, const std::string& overlay_name);

/// Collective op of an nccl-tests op name; empty for ops the model lacks (alltoall, broadcast, reduce).
std::optional<hardware::CollectiveOp> modelled_op(const std::string& nccl_op);

}  // namespace stepsim::validate
