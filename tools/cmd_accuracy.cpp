// SPDX-License-Identifier: Apache-2.0
// `stepsim accuracy vtrain CSV`: every row of vTrain's measured pure-DP iteration times
// (Megatron-DeepSpeed on A100) simulated and compared, with median / mean / max |error| for
// single-node and multi-node rows (validate/vtrain.hpp, docs/accuracy.md).
#include "tools/commands.hpp"

#include <nlohmann/json.hpp>

#include "validate/vtrain.hpp"

#include <memory>
#include <string>

namespace stepsim::tools {

namespace {

struct AccuracyArgs {
  std::string csv;
  std::string format = "text";
  unsigned threads = 0;
};

int cmd_accuracy_vtrain(const AccuracyArgs& a) {
  const validate::VtrainAccuracy acc = validate::vtrain_accuracy(a.csv, a.threads);
  if (a.format == "json") print(validate::vtrain_accuracy_json(acc).dump(2) + "\n");
  else print(validate::vtrain_accuracy_text(acc));
  return 0;
}

}  // namespace

void add_accuracy_command(CLI::App& app, Action& action) {
  auto* acc = app.add_subcommand("accuracy", "predicted vs measured step times on public measurements");
  acc->require_subcommand(1);
  auto a = std::make_shared<AccuracyArgs>();
  auto* vt = acc->add_subcommand("vtrain", "vTrain's Megatron-DeepSpeed A100 pure-DP iteration times (vtrain_dp.csv)");
  vt->add_option("csv", a->csv, "vtrain_dp.csv (e.g. ../shared/data/vtrain_dp.csv)")->required();
  vt->add_option("--format", a->format, "output format")->check(CLI::IsMember({"text", "json"}));
  add_jobs_option(*vt, a->threads, "rows simulated");
  vt->callback([a, &action] { action = [a] { return cmd_accuracy_vtrain(*a); }; });
}

}  // namespace stepsim::tools
