// SPDX-License-Identifier: Apache-2.0
// The CLI's subcommands: each file registers one (or a family) on the CLI11 app.
#pragma once

#include "hardware/collective_model.hpp"
#include "hardware/hardware_profile.hpp"
#include "models/queries_json.hpp"
#include "sim/support/names.hpp"
#include "validate/gemm_fit.hpp"

#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace stepsim::tools {

/// What main() runs after parsing: the chosen subcommand's body. Returns the exit status;
/// throws InputError (exit 2) or InternalError (exit 1), which only main() maps.
using Action = std::function<int()>;

void add_run_command(CLI::App& app, Action& action);
void add_collective_commands(CLI::App& app, Action& action);  // collective, threshold
void add_list_command(CLI::App& app, Action& action);
void add_memory_command(CLI::App& app, Action& action);
void add_calibrate_command(CLI::App& app, Action& action);  // calibrate nccl-tests | gemm
/// `calibrate gemm`, registered under the `calibrate` subcommand by add_calibrate_command().
void add_calibrate_gemm_command(CLI::App& calibrate, Action& action);
/// Adds `--calibration FILE` to a scenario command: appends "calibration=FILE" to `sets`
/// (same as --set calibration=FILE; the scenario key `calibration`).
void add_calibration_option(CLI::App& cmd, std::vector<std::string>& sets);
/// `calibrate gemm`'s report of a GEMM fit (also printed by `calibrate trace`): text, and JSON
/// (schema stepsim.calibrate-gemm/1).
std::string gemm_fit_text(const validate::GemmFitResult& r, const hardware::HardwareProfile& hw,
                          const hardware::CalibrationOverlay& overlay, const std::string& output);
std::string gemm_fit_json(const validate::GemmFitResult& r, const hardware::HardwareProfile& hw, const std::string& output);
void add_sweep_command(CLI::App& app, Action& action);
void add_batch_command(CLI::App& app, Action& action);
void add_compare_command(CLI::App& app, Action& action);  // compare SCENARIO MEASURED|TRACE...
void add_kineto_command(CLI::App& app, Action& action);   // kineto TRACE...
void add_accuracy_command(CLI::App& app, Action& action);  // accuracy vtrain CSV
void add_plan_command(CLI::App& app, Action& action);      // plan --model --hardware --gpus --global-batch-tokens

/// Writes text to stdout as is.
void print(const std::string& s);

/// "42 s", "3 min 05 s", "1 h 02 min": a duration for a progress line.
std::string duration_text(double seconds);

/// "WHAT: done/total UNIT (P %), R UNIT/s, T left": a progress line after `elapsed_s`.
std::string progress_line(const std::string& what, const std::string& unit, std::uint64_t done, std::uint64_t total,
                          double elapsed_s);

/// A progress display for long work started at `t0` (issue 20 item 5): once the work has taken
/// half a second, progress_line on stderr, rewritten in place at most ten times a second
/// (padded to erase a longer one), ended with a newline when done == total. Empty (no
/// display) when stderr is not a terminal. Calls are expected from one thread at a time.
std::function<void(std::uint64_t, std::uint64_t)> progress_printer(const std::string& what, const std::string& unit,
                                                                   std::chrono::steady_clock::time_point t0);

// Shared with the library's commands (models/queries_json.hpp, sim/support/names.hpp).
using models::algorithm_from;
using models::flag_group_shape;
using models::moe_factor;
using stepsim::count_of;

/// The cluster and MoE flags `threshold` and `batch` share (values as parsed; unset = 0/"").
struct ClusterFlags {
  std::string hardware;         ///< --hardware: profile name or JSON file
  long long ranks = 0;          ///< --ranks: DP degree (GPUs)
  long long gpus_per_node = 0;  ///< --gpus-per-node (0: the profile's)
  int axes = 0;                 ///< --axes: TPU torus axes used for DP (0: all)
  long long moe_experts = 0;    ///< --moe-experts E
  long long moe_topk = 0;       ///< --moe-topk k
  long long moe_ep = 0;         ///< --ep: expert-parallel degree (0: not given)
};

/// A CLI11 check for a flag whose unset value is 0 ("not given"): a given value must be an
/// integer ≥ 1, so `--ranks 0` is refused instead of read as absent (parse error, exit 2).
CLI::Validator given_positive();

/// Adds --hardware, --ranks, --gpus-per-node, --axes, --moe-experts and --moe-topk to `cmd`,
/// bound to `f` (which must outlive parsing); `required` makes --hardware and --ranks required.
/// Validation is flag_group_shape's and moe_factor's.
void add_cluster_flags(CLI::App& cmd, ClusterFlags& f, bool required);


/// Largest -j/--jobs value.
inline constexpr unsigned kMaxJobs = 4096;

/// Adds -j,--jobs to `cmd`, bound to `threads`: an integer in [0, kMaxJobs], 0 = all cores
/// (also the default). `what` says what runs in parallel, for the help text.
/// Anything else ('', -1, 1.5, 100000) is a parse error naming the range (exit 2).
void add_jobs_option(CLI::App& cmd, unsigned& threads, const std::string& what);

/// The flags that name output files: --out, -o/--output, --plot, --trace, --dump-graph, --report.
bool is_output_flag(const CLI::Option& option);

/// Appends "overwritten if it exists, written atomically" to the help of every output flag
/// of every subcommand of `app` (call once, after every command is added).
void describe_output_flags(CLI::App& app);

/// Checks the output flags given to the parsed subcommand(s) of `app` before the command
/// runs: each value is a usable output path (check_output_path: not empty, directory
/// exists, a regular file or absent, not an input file named on the command line: any other
/// argument, or the FILE of a PATH=FILE argument, that is an existing file), and no two
/// outputs are the same file.
/// @throws InputError naming the flag or the path.
void check_output_flags(const CLI::App& app);


}  // namespace stepsim::tools
