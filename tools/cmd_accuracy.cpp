// SPDX-License-Identifier: Apache-2.0
// `stepsim accuracy [SET...]`: every measured run of the public sets (validate/accuracy/*.json,
// compiled in, and vTrain's CSV from ../shared/data) simulated and compared with median / mean /
// max |error| per set (validate/accuracy.hpp, docs/accuracy.md). `stepsim accuracy vtrain CSV`
// prints vTrain's own detailed table, as it always did (validate/vtrain.hpp).
#include "tools/commands.hpp"

#include <nlohmann/json.hpp>

#include "sim/support/error.hpp"
#include "validate/accuracy.hpp"
#include "validate/vtrain.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

namespace stepsim::tools {

namespace {

struct AccuracyArgs {
  std::vector<std::string> sets;
  std::string vtrain_csv = "../shared/data/vtrain_dp.csv";
  std::string format = "text";
  unsigned threads = 0;
  bool bands = false;
  std::vector<std::string> overrides;  ///< --set KEY=VALUE on every row
};

bool known_set(const std::string& name) {
  const auto names = validate::accuracy_set_names();
  return std::find(names.begin(), names.end(), name) != names.end();
}

int cmd_accuracy(AccuracyArgs a) {
  // The bands come from every set at once (each kind takes the set with the most runs of it).
  if (a.bands && !a.sets.empty())
    throw InputError("--bands", "", fmt::format("takes the bands of every set at once (each kind takes the set with the most "
                                                "runs of it); drop the set argument '{}'", a.sets.front()));
  // `accuracy vtrain CSV` (a CSV path after "vtrain"): vTrain's detailed report.
  if (a.sets.size() == 2 && a.sets[0] == "vtrain" && !known_set(a.sets[1]) &&
      !(a.sets[1].size() > 5 && a.sets[1].substr(a.sets[1].size() - 5) == ".json")) {
    const validate::VtrainAccuracy acc = validate::vtrain_accuracy(a.sets[1], a.threads);
    if (a.format == "json") print(validate::vtrain_accuracy_json(acc).dump(2) + "\n");
    else print(validate::vtrain_accuracy_text(acc));
    return 0;
  }
  // The bands reports print are those of the sets as published, never of a what-if.
  if (a.bands && !a.overrides.empty())
    throw InputError("--bands", "", fmt::format("prints the error bands of the sets as published; drop --set {}", a.overrides.front()));
  if (a.sets.empty()) a.sets = validate::accuracy_set_names();
  std::vector<validate::AccuracySetResult> results;
  std::vector<std::string> seen;
  for (const std::string& name : a.sets) {
    if (std::find(seen.begin(), seen.end(), name) != seen.end()) continue;  // named twice: once
    seen.push_back(name);
    if (name == "vtrain") {
      results.push_back(validate::vtrain_set_result(validate::vtrain_accuracy(a.vtrain_csv, a.threads, a.overrides)));
      continue;
    }
    validate::AccuracySet set = validate::load_accuracy_set(name);
    for (const auto& r : results)
      if (r.name == set.name)
        throw InputError(set.origin, "/name", fmt::format("'{}' is the name of a set already run; expected each set once",
                                                          set.name));
    results.push_back(validate::run_accuracy_set(set, a.threads, a.overrides));
  }
  validate::check_overrides_apply(results);
  if (a.bands && a.format == "inc") print(validate::error_bands_inc(validate::compute_error_bands(results)));
  else if (a.bands && a.format == "json") print(validate::error_bands_json(validate::compute_error_bands(results)).dump(2) + "\n");
  else if (a.bands) print(validate::error_bands_text(validate::compute_error_bands(results)));
  else if (a.format == "inc") throw InputError("--format", "", "\"inc\" is the C++ table of --bands (models/error_bands.inc); add --bands");
  else if (a.format == "json") print(validate::accuracy_json(results).dump(2) + "\n");
  else print(validate::accuracy_text(results));
  return 0;
}

}  // namespace

void add_accuracy_command(CLI::App& app, Action& action) {
  auto* acc = app.add_subcommand("accuracy", "predicted vs measured step times on every public measured set");
  auto a = std::make_shared<AccuracyArgs>();
  std::string names;
  for (const auto& n : validate::accuracy_set_names()) names += (names.empty() ? "" : ", ") + n;
  acc->add_option("sets", a->sets,
                  "sets to run (default: all): " + names +
                      ", or a set file ending in .json; 'vtrain CSV' prints vTrain's detailed table for that CSV");
  acc->add_option("--vtrain-csv", a->vtrain_csv, "vTrain's measurements for the vtrain set")
      ->capture_default_str();
  acc->add_option("--format", a->format, "output format (inc: --bands as the C++ table models/error_bands.inc)")
      ->check(CLI::IsMember({"text", "json", "inc"}));
  acc->add_flag("--bands", a->bands,
                 "print the error bands the sets give (run with every set; --format inc regenerates models/error_bands.inc)");
  acc->add_option("--set", a->overrides,
                  "KEY=VALUE applied to every row's scenario, as stepsim run --set (what-if: e.g. "
                  "sim.gemm_model=flat, framework.implementation=compile); the guards and --bands mean the sets as published");
  add_jobs_option(*acc, a->threads, "rows simulated");
  acc->callback([a, &action] { action = [a] { return cmd_accuracy(*a); }; });
}

}  // namespace stepsim::tools
