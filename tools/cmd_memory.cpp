// SPDX-License-Identifier: Apache-2.0
// `stepsim memory`: model-state memory per GPU under DDP and ZeRO-1/2/3 side by side, from a
// scenario (plus its activations) or from a parameter count.
#include "tools/commands.hpp"

#include "models/memory.hpp"
#include "models/scenario.hpp"
#include "sim/support/error.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <memory>

namespace stepsim::tools {

namespace {

struct MemoryArgs {
  std::string scenario;
  std::vector<std::string> sets;
  double params = 0;
  long long dp = 0;
  double optimizer_bytes_per_param = 12;
  std::string format = "text";
};

int cmd_memory(const MemoryArgs& a) {
  double psi = a.params;
  std::int64_t dp = a.dp;
  double k = a.optimizer_bytes_per_param;
  double activations = -1, capacity = 0;
  std::string hardware;
  if (!a.scenario.empty()) {
    if (a.params != 0 || a.dp != 0)
      throw InputError("--params/--dp", "", "give either a scenario or --params and --dp, not both");
    const models::Scenario s = models::load_scenario(a.scenario, a.sets);
    psi = static_cast<double>(s.model.parameter_count());
    dp = s.parallelism.dp;
    activations = models::activation_bytes(s);
    capacity = s.hardware.hbm_bytes;
    hardware = s.hardware.name;
  } else {
    if (!(psi > 0) || psi > 1e15)
      throw InputError("--params", "", fmt::format("expected a parameter count in (0, 1e15], got {:g}", psi));
    if (dp < 1 || dp > 100'000'000)
      throw InputError("--dp", "", fmt::format("expected an integer in [1, 100000000], got {}", dp));
  }
  if (!(k >= 0) || k > 1000)
    throw InputError("--optimizer-bytes-per-param", "", fmt::format("expected a number in [0, 1000], got {:g}", k));
  nlohmann::ordered_json j;
  j["params"] = psi;
  j["dp"] = dp;
  j["optimizer_bytes_per_param"] = k;
  j["formula"] = "ZeRO paper §3.1 (bf16 params and grads, K bytes/param of optimizer state): ddp 2Ψ+2Ψ+KΨ; "
                 "zero1 2Ψ+2Ψ+KΨ/N; zero2 2Ψ+(2+K)Ψ/N; zero3 (2+2+K)Ψ/N";
  const char* names[] = {"ddp", "zero1", "zero2", "zero3"};
  std::string text = fmt::format("model-state memory per GPU for {:.4g} parameters, N_d = {}, K = {:g} (GB = 1e9 bytes)\n",
                                 psi, dp, k);
  text += fmt::format("  {:<7}{:>12}{:>12}{:>12}{:>12}{}\n", "", "params", "grads", "optimizer", "total",
                      activations >= 0 ? "  + activations" : "");
  for (int stage = 0; stage <= 3; ++stage) {
    const auto m = models::zero_model_states(psi, dp, stage, k);
    nlohmann::ordered_json e = {{"params_bytes", m.params_bytes},
                                {"grads_bytes", m.grads_bytes},
                                {"optimizer_bytes", m.optimizer_bytes},
                                {"total_bytes", m.total_bytes()}};
    std::string extra;
    if (activations >= 0) {
      e["activations_bytes"] = activations;
      e["with_activations_bytes"] = m.total_bytes() + activations;
      e["fits"] = m.total_bytes() + activations <= capacity;
      extra = fmt::format("  {:>9.2f} GB {}", (m.total_bytes() + activations) / 1e9,
                          m.total_bytes() + activations <= capacity ? "fits" : "does not fit");
    }
    j[names[stage]] = e;
    text += fmt::format("  {:<7}{:>9.2f} GB{:>9.2f} GB{:>9.2f} GB{:>9.2f} GB{}\n", names[stage], m.params_bytes / 1e9,
                        m.grads_bytes / 1e9, m.optimizer_bytes / 1e9, m.total_bytes() / 1e9, extra);
  }
  if (activations >= 0) {
    j["hardware"] = hardware;
    j["capacity_bytes"] = capacity;
    text += fmt::format("  activations of one micro-batch: {:.2f} GB; HBM of {}: {:.2f} GB\n", activations / 1e9,
                        hardware, capacity / 1e9);
  }
  print(a.format == "json" ? j.dump(2) + "\n" : text);
  return 0;
}

}  // namespace

void add_memory_command(CLI::App& app, Action& action) {
  auto a = std::make_shared<MemoryArgs>();
  auto* cmd = app.add_subcommand("memory", "model-state memory per GPU under ddp, zero1, zero2, zero3");
  cmd->add_option("scenario", a->scenario, "scenario JSON file (or use --params and --dp)");
  cmd->add_option("--set", a->sets, "override a scenario field: PATH=VALUE (repeatable)");
  cmd->add_option("--params", a->params, "parameter count Ψ, e.g. 7.5e9");
  cmd->add_option("--dp", a->dp, "DP degree N_d");
  cmd->add_option("--optimizer-bytes-per-param", a->optimizer_bytes_per_param,
                  "K: optimizer-state bytes per parameter (Adam with fp32 master weights: 12)");
  cmd->add_option("--format", a->format, "output format")->check(CLI::IsMember({"text", "json"}));
  cmd->callback([a, &action] { action = [a] { return cmd_memory(*a); }; });
}

}  // namespace stepsim::tools
