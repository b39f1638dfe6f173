// SPDX-License-Identifier: Apache-2.0
// `stepsim memory`: model-state memory per GPU under DDP and ZeRO-1/2/3 side by side, from a
// scenario (plus its activations) or from a parameter count.
#include "tools/commands.hpp"

#include "models/queries_json.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <memory>
#include <optional>

namespace stepsim::tools {

namespace {

struct MemoryArgs : models::MemoryQuery {
  std::string format = "text";
};

int cmd_memory(const MemoryArgs& a) {
  const models::QueryAnswer answer = models::memory_query(a);
  print(a.format == "json" ? answer.json.dump(2) + "\n" : answer.text);
  return 0;
}

}  // namespace

void add_memory_command(CLI::App& app, Action& action) {
  auto a = std::make_shared<MemoryArgs>();
  auto* cmd = app.add_subcommand("memory", "model-state memory per GPU under ddp, zero1, zero2, zero3, fsdp, hsdp");
  cmd->add_option("scenario", a->scenario, "scenario JSON file (or use --params and --dp)");
  cmd->add_option("--set", a->sets, "override a scenario field: PATH=VALUE (repeatable)");
  cmd->add_option("--params", a->params, "parameter count Ψ, e.g. 7.5e9");
  cmd->add_option("--dp", a->dp, "DP degree N_d");
  cmd->add_option("--hardware", a->hardware, "profile (with --params): usable HBM, fits and the largest model per row");
  cmd->add_option("--shard-group-size", a->shard_group_size,
                  "HSDP's shard group G (default: the scenario's, else the GPUs of a node, at most N_d)");
  auto* k_opt = cmd->add_option("--optimizer-bytes-per-param", a->optimizer_bytes_per_param,
                                 "K: optimizer-state bytes per parameter (Adam with fp32 master weights: 12; a scenario "
                                 "with fp32 parameters: 8)");
  cmd->add_option("--format", a->format, "output format")->check(CLI::IsMember({"text", "json"}));
  cmd->callback([a, k_opt, &action] {
    a->optimizer_bytes_given = k_opt->count() > 0;
    action = [a] { return cmd_memory(*a); };
  });
}

}  // namespace stepsim::tools
