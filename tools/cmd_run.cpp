// SPDX-License-Identifier: Apache-2.0
// `stepsim run`: simulate one step of a scenario and print its report.
#include "tools/commands.hpp"

#include "sim/support/error.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include "models/report.hpp"
#include "models/scenario.hpp"

#include <memory>

namespace stepsim::tools {

namespace {

struct RunArgs {
  std::string scenario;
  std::vector<std::string> sets;
  std::string format = "text";
};

int cmd_run(const RunArgs& a) {
  const models::Scenario s = models::load_scenario(a.scenario, a.sets);
  const models::Report r = models::run(s);
  print(a.format == "json" ? models::report_json(r) : models::report_text(r));
  return 0;
}

}  // namespace

void add_run_command(CLI::App& app, Action& action) {
  auto a = std::make_shared<RunArgs>();
  auto* run = app.add_subcommand("run", "simulate one training step of a scenario");
  run->add_option("scenario", a->scenario, "scenario JSON file")->required();
  run->add_option("--set", a->sets, "override a scenario field before validation: PATH=VALUE (repeatable)");
  run->add_option("--format", a->format, "output format")->check(CLI::IsMember({"text", "json"}));
  run->callback([a, &action] { action = [a] { return cmd_run(*a); }; });
}

}  // namespace stepsim::tools
