// SPDX-License-Identifier: Apache-2.0
// Accuracy over every public measured set (issue 14 item 1): each set is a JSON file of
// measured runs (validate/accuracy/*.json, compiled into the binary), each row a stepsim
// scenario and the number its source measured; vTrain's CSV is read from ../shared/data.
// `stepsim accuracy [SET...]` simulates them and compares (docs/accuracy.md).
#pragma once

#include "validate/vtrain.hpp"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace stepsim::validate {

/// What a set's `measured` numbers are. The error is always on step time.
enum class AccuracyMetric {
  StepTimeS,          ///< "step_time_s": seconds per training step (iteration)
  SamplesPerS,        ///< "samples_per_s": the job's samples per second, dp × mbs × accum / step
  TokensPerSPerGpu,   ///< "tokens_per_s_per_gpu": mbs × seq_len × accum / step
};

/// One measured run of a set file.
struct AccuracyRow {
  std::string id;        ///< unique within the set
  std::string source;    ///< where the number comes from (section, table, row)
  nlohmann::json scenario;  ///< the row's scenario merged over the set's defaults (RFC 7396)
  double measured = 0;   ///< in the set's metric, > 0
  std::string unsupported;  ///< non-empty: stepsim cannot simulate it yet, and why
  std::string note;
};

/// A set file: {"name", "description", "sources": [..], "metric", "defaults": {..},
/// "rows": [{"id", "source", "scenario", "measured", "requires"?, "note"?}], "notes"?: [..]}.
struct AccuracySet {
  std::string name;
  std::string description;
  std::vector<std::string> sources;
  AccuracyMetric metric = AccuracyMetric::StepTimeS;
  std::vector<AccuracyRow> rows;
  std::string origin;  ///< the file (or "built-in NAME") errors name
};

/// Parses a set document. `origin` names it in errors.
/// @throws InputError naming origin, the JSON path, the bad value and what was expected
///         (missing or mistyped fields, an unknown metric, a duplicate id, a measured value
///         that is not a positive number, a row scenario that is not an object).
AccuracySet parse_accuracy_set(const nlohmann::json& doc, const std::string& origin);

/// Names of the sets compiled into the binary (validate/accuracy/*.json), sorted, plus "vtrain".
std::vector<std::string> accuracy_set_names();

/// The built-in set `name` (not "vtrain"), or the set file at `name` when it ends in ".json".
/// @throws InputError for an unknown name (listing the known ones) or an unreadable file.
AccuracySet load_accuracy_set(const std::string& name);

/// One row compared.
struct AccuracyRowResult {
  std::string id, source, unsupported, note;
  double measured = 0;                 ///< in the set's metric
  double predicted = 0;                ///< in the set's metric (0 when not simulated)
  double measured_step_s = 0;          ///< step time the measurement implies
  double predicted_step_s = 0;
  double rel_error = 0;                ///< (predicted_step − measured_step) / measured_step
  bool simulated = false;
  bool fits = true;                    ///< the simulated peak fits the usable HBM
  bool fit_split = true;               ///< even row (0-based): "fit"; odd: "check"
};

/// A set compared: its rows, and |error| statistics over the simulated ones.
struct AccuracySetResult {
  std::string name, description, metric;
  std::vector<std::string> sources;
  std::vector<AccuracyRowResult> rows;
  ErrorStats stats;        ///< every simulated row (max_line: 1-based row number)
  ErrorStats check_stats;  ///< the odd ("check") simulated rows
};

/// Simulates every row that has no `requires` (rows in parallel on `threads`; results do not
/// depend on it).
/// @throws InputError when a row's scenario is rejected (naming the set and the row id).
AccuracySetResult run_accuracy_set(const AccuracySet& set, unsigned threads = 0);

/// vTrain's CSV as a set result (ids "line N", metric step_time_s).
AccuracySetResult vtrain_set_result(const VtrainAccuracy& a);

/// Text: a summary table over the sets, then each set's rows (predicted vs measured).
std::string accuracy_text(const std::vector<AccuracySetResult>& sets);

/// JSON: {"sets": [{"name", "description", "metric", "sources", "rows", "simulated",
/// "median_abs_error", "mean_abs_error", "max_abs_error", "mean_error", "check_median_abs_error",
/// "rows_detail": [{"id", "source", "split", "measured", "predicted", "measured_step_time_s",
/// "predicted_step_time_s", "error", "fits", "requires"?, "note"?}]}]}.
nlohmann::ordered_json accuracy_json(const std::vector<AccuracySetResult>& sets);

}  // namespace stepsim::validate
