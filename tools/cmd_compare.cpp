// SPDX-License-Identifier: Apache-2.0
// `stepsim compare SCENARIO.json MEASURED.json`: the simulated step next to the one
// stepsim-validate measured, per phase (forward, backward, comm, exposed comm, optimizer,
// overhead, step) with relative errors, and per task matched by name.
#include "tools/commands.hpp"

#include "models/scenario.hpp"
#include "validate/compare.hpp"
#include "validate/kineto.hpp"
#include "validate/measured_timeline.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <memory>

namespace stepsim::tools {

namespace {

struct CompareArgs {
  std::string scenario;
  std::vector<std::string> measured;
  std::vector<std::string> sets;
  bool tasks = false;
  std::string format = "text";
};

nlohmann::ordered_json rows_json(const std::vector<validate::CompareRow>& rows) {
  nlohmann::ordered_json a = nlohmann::ordered_json::array();
  for (const auto& r : rows)
    a.push_back({{"name", r.name},
                 {"predicted_s", r.predicted_s},
                 {"measured_s", r.measured_s},
                 {"rel_error", std::isfinite(r.rel_error) ? nlohmann::ordered_json(r.rel_error) : nlohmann::ordered_json()}});
  return a;
}

int cmd_compare(const CompareArgs& a) {
  const models::Scenario s = models::load_scenario(a.scenario, a.sets);
  // MEASURED.json from stepsim-validate, or PyTorch profiler traces (one per rank, or folders).
  const bool traces = a.measured.size() > 1 || validate::looks_like_kineto_trace(a.measured.front());
  const validate::MeasuredTimeline m = traces ? validate::measured_timeline_from_traces(validate::read_kineto_traces(a.measured))
                                              : validate::read_measured_timeline(a.measured.front());
  validate::Comparison c = validate::compare(s, m);
  c.scenario_source = s.calibration ? fmt::format("{}, calibration {}", a.scenario, s.calibration_ref) : a.scenario;
  if (a.format == "json") {
    nlohmann::ordered_json j;
    j["schema"] = "stepsim.compare/1";
    j["scenario"] = a.scenario;
    j["calibration"] = s.calibration ? nlohmann::ordered_json(s.calibration_ref) : nlohmann::ordered_json();
    j["measured"] = c.measured_source;
    j["iterations"] = c.iterations;
    j["ranks"] = c.ranks;
    j["phases"] = rows_json(c.phases);
    j["tasks"] = rows_json(c.tasks);  // empty against traces: their tasks are kernels
    if (traces) j["kernel_classes"] = rows_json(c.kernel_classes);
    j["predicted_only"] = c.predicted_only;
    j["measured_only"] = c.measured_only;
    j["warnings"] = c.warnings;
    print(j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n");
  } else {
    print(validate::comparison_text(c, a.tasks));
  }
  return 0;
}

}  // namespace

void add_compare_command(CLI::App& app, Action& action) {
  auto a = std::make_shared<CompareArgs>();
  auto* cmd = app.add_subcommand(
      "compare", "predicted vs measured step, per phase: a stepsim-validate mlp-step run, or PyTorch profiler traces");
  cmd->add_option("scenario", a->scenario, "scenario JSON matching the measured run")->required();
  cmd->add_option("measured", a->measured,
                  "MEASURED.json written by stepsim-validate mlp-step, or torch.profiler (Kineto) traces: .json / "
                  ".json.gz files, one per rank, or folders of them")
      ->required();
  cmd->add_option("--set", a->sets, "override a scenario field before validation: PATH=VALUE (repeatable)");
  add_calibration_option(*cmd, a->sets);
  cmd->add_flag("--tasks", a->tasks, "also list every task matched by name");
  cmd->add_option("--format", a->format, "output format")->check(CLI::IsMember({"text", "json"}));
  cmd->callback([a, &action] { action = [a] { return cmd_compare(*a); }; });
}

namespace {

struct KinetoArgs {
  std::vector<std::string> traces;
  std::string format = "text";
};

}  // namespace

void add_kineto_command(CLI::App& app, Action& action) {
  auto a = std::make_shared<KinetoArgs>();
  auto* cmd = app.add_subcommand("kineto", "what PyTorch profiler (Kineto) traces show: steps, GPU time by kernel class, "
                                           "NCCL calls, unclassified kernels");
  cmd->add_option("traces", a->traces, "trace files (.json or .json.gz, as torch.profiler writes them) or folders of them")
      ->required();
  cmd->add_option("--format", a->format, "output format")->check(CLI::IsMember({"text", "json"}));
  cmd->callback([a, &action] {
    action = [a] {
      const auto traces = validate::read_kineto_traces(a->traces);
      print(a->format == "json" ? validate::kineto_summary_json(traces) : validate::kineto_summary_text(traces));
      return 0;
    };
  });
}

}  // namespace stepsim::tools
