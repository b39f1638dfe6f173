// SPDX-License-Identifier: Apache-2.0
// Accuracy against public measurements: vTrain's measured Megatron-DeepSpeed iteration times on
// A100 for pure data parallelism (VIA-Research/vTrain, MIT; provenance in tests/fixtures/vtrain/vtrain_dp.md).
// Every CSV row becomes a Scenario (GPT-style transformer, a100-sxm, fp16, full activation
// recomputation, the row's micro-batch / accumulation / DP), is simulated with models::run(),
// and is compared with the measured time (`stepsim accuracy vtrain CSV`, docs/accuracy.md).
#pragma once

#include "models/scenario.hpp"

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace stepsim::validate {

/// One measured point of vtrain_dp.csv (columns described in tests/fixtures/vtrain/vtrain_dp.md).
struct VtrainRow {
  std::size_t line = 0;          ///< 1-based line in the CSV (the header is line 1)
  std::string set;               ///< "single" | "multi" (the vTrain file it came from)
  std::string source_row;        ///< data-row number in that file, as given ("" when absent)
  std::int64_t num_gpus = 0;
  std::int64_t nodes = 0;
  std::int64_t gpus_per_node = 0;  ///< GPUs used on each node (column gpus_used_per_node)
  std::int64_t dp = 0;
  /// DeepSpeed ZeRO stage 0..3; -1 when the column is blank (treated as stage 0, see
  /// vtrain_scenario_json()).
  int zero_stage = -1;
  std::string precision;         ///< "fp16" | "bf16" | "fp32"; blank → "fp16"
  std::int64_t global_batch = 0;
  std::int64_t micro_batch = 0;
  std::int64_t grad_accum = 0;
  std::int64_t hidden = 0;
  std::int64_t layers = 0;
  std::int64_t heads = 0;
  std::int64_t seq_len = 0;
  bool checkpointing = true;     ///< activation checkpointing (blank → true, vTrain's setting)
  double measured_s = 0;         ///< iteration time, seconds

  /// True when the DP group spans more than one node.
  bool multi_node() const { return nodes > 1; }
};

/// Reads a vtrain_dp.csv file: a header naming the columns (any order, extra columns ignored),
/// then one row per measurement. Quoted fields (RFC 4180) are accepted; blank lines are skipped.
/// Checks each row: tp = pp = 1, dp = num_gpus = nodes × gpus_used_per_node,
/// gpus_used_per_node ≤ 8, global_batch = dp × micro_batch × grad_accum, hidden divisible by
/// heads, a positive iteration time.
/// @throws InputError naming `path`, "line L, column C (NAME)", the bad value and what was
///         expected; or the missing column; or as read_input_file (expecting "a vTrain CSV
///         (vtrain_dp.csv)", at most 1 GiB) for a missing, non-regular, unreadable or larger file.
std::vector<VtrainRow> read_vtrain_csv(const std::string& path);

/// Model vocabulary used for every row: GPT-2's 50,257 tokens padded by Megatron to a multiple
/// of 128 (`--make-vocab-size-divisible-by` default 128 × tp = 1) = 50,304.
inline constexpr std::int64_t kVtrainVocab = 50304;
/// Hardware profile used for every row (A100 SXM4 80 GB, 8 per NVSwitch node, 8 × HDR IB):
/// the multi-node 3.6B rows run plain data parallelism, whose 16–18 bytes/parameter of model
/// state (≈ 60 GB) do not fit a 40 GB A100.
inline constexpr const char* kVtrainHardware = "a100-sxm";
/// CPU time per eager PyTorch op of Megatron-DeepSpeed (scenario `framework.host_op_s`): the
/// Python, autograd and dispatcher path before each kernel launch. 37 µs, chosen on the even
/// (fit) rows of the set (26 to 60 µs scanned; the odd rows are the check): the rows that are
/// bound by the CPU (hidden 1024, micro-batch 1) measure ≈ 3.3 ms per layer and micro-batch for
/// the ≈ 90 ops stepsim counts there, 37 µs each. Above the 5–25 µs per op of published
/// breakdowns of PyTorch's dispatch path: the difference stands for ops stepsim does not count
/// (docs/accuracy.md, "The largest misses").
inline constexpr double kVtrainHostOpS = 37e-6;

/// The scenario JSON of one row (every choice is in docs/accuracy.md):
///  - model: inline transformer — hidden, layers, heads from the row, ffn = 4·hidden, non-gated
///    GeLU MLP, LayerNorm, biases, learned positions (max_positions = seq_len), tied embeddings,
///    vocab kVtrainVocab;
///  - hardware kVtrainHardware; cluster nodes × gpus_used_per_node;
///  - precision: param_dtype = the row's precision (blank → fp16);
///  - ZeRO stage blank or 0 → `ddp` with one gradient bucket (DeepSpeed stage 0 and Megatron's
///    local DDP both all-reduce the whole gradient buffer once, after the last micro-batch's
///    backward, without overlap); 1/2/3 → `zero1`/`zero2`/`zero3` with DeepSpeed's defaults;
///  - activations: eager attention (Megatron-DeepSpeed's default without --use-flash-attn),
///    recompute "full" when checkpointing;
///  - framework.host_op_s = kVtrainHostOpS;
///  - batch: micro_batch, seq_len, grad_accum from the row; optimizer adam.
nlohmann::json vtrain_scenario_json(const VtrainRow& row);

/// vtrain_scenario_json() parsed into a Scenario; `csv_path` names the source in messages.
/// @throws InputError when the scenario is rejected (the message names the CSV line).
models::Scenario vtrain_scenario(const VtrainRow& row, const std::string& csv_path,
                                 const std::vector<std::string>& overrides = {});

/// `doc` with each of `overrides` applied in order (sim/support apply_override, as --set).
/// @throws InputError on a malformed override.
nlohmann::json with_overrides(nlohmann::json doc, const std::vector<std::string>& overrides);
/// " (--set A --set B)" naming the overrides in messages, "" when there are none.
std::string overrides_label(const std::vector<std::string>& overrides);

/// Predicted vs measured for one row.
struct VtrainResult {
  VtrainRow row;
  double predicted_s = 0;
  double rel_error = 0;           ///< (predicted − measured) / measured
  double forward_s = 0;           ///< simulated phases of the step (models::Report)
  double backward_s = 0;
  double optimizer_s = 0;
  double exposed_comm_s = 0;
  bool fits = true;               ///< simulated peak memory fits the profile's HBM
};

/// |relative error| statistics over a group of rows (all zero when `count` is 0).
struct ErrorStats {
  std::size_t count = 0;
  double median_abs = 0;          ///< median of |rel_error|
  double mean_abs = 0;            ///< mean of |rel_error| (vTrain's published metric)
  double max_abs = 0;             ///< max |rel_error|
  double mean_signed = 0;         ///< mean rel_error (< 0: the simulator is too fast)
  std::size_t max_line = 0;       ///< CSV line of the row with the largest |rel_error|
};

/// |error| statistics of relative errors, `lines[i]` naming where `rel_errors[i]` came from
/// (max_line; ties in max keep the first). Precondition: equal sizes.
ErrorStats error_stats(const std::vector<double>& rel_errors, const std::vector<std::size_t>& lines);

/// error_stats() of `results`' rel_error, by CSV line.
ErrorStats error_stats(const std::vector<VtrainResult>& results);

/// Everything `stepsim accuracy vtrain` prints.
struct VtrainAccuracy {
  std::string source;                 ///< the CSV path
  std::vector<VtrainResult> rows;     ///< CSV order
  ErrorStats single_node, multi_node, all;
};

/// Reads `csv_path`, simulates every row (rows in parallel on up to `threads` threads; 0 = the
/// hardware's concurrency; results do not depend on it) and summarises.
/// @throws InputError from read_vtrain_csv() or from a row's scenario.
/// `overrides` ("a.b=VALUE") are applied to every row's scenario (run_accuracy_set).
VtrainAccuracy vtrain_accuracy(const std::string& csv_path, unsigned threads = 0,
                               const std::vector<std::string>& overrides = {});

/// Fixed-width table: one line per row, then median / mean / max |error| for single-node,
/// multi-node and all rows, and the assumptions.
std::string vtrain_accuracy_text(const VtrainAccuracy& a);

/// JSON rendering, schema "stepsim.accuracy.vtrain/1": assumptions, rows, summary
/// (single_node, multi_node, all).
nlohmann::ordered_json vtrain_accuracy_json(const VtrainAccuracy& a);

}  // namespace stepsim::validate
