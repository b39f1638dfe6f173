// SPDX-License-Identifier: Apache-2.0
// `stepsim memory`: model-state memory per GPU under DDP and ZeRO-1/2/3 side by side, from a
// scenario (plus its activations) or from a parameter count.
#include "tools/commands.hpp"

#include "hardware/hardware_profile_json.hpp"
#include "models/memory.hpp"
#include "models/scenario.hpp"
#include "sim/support/error.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <memory>
#include <optional>

namespace stepsim::tools {

namespace {

struct MemoryArgs {
  std::string scenario;
  std::vector<std::string> sets;
  double params = 0;
  long long dp = 0;
  long long shard_group_size = 0;  // HSDP's row; 0 = the scenario's, else the node's GPUs
  std::string hardware;            // --hardware (parameter-count form): capacity for "fits" and the largest model
  double optimizer_bytes_per_param = 12;
  bool optimizer_bytes_given = false;  ///< --optimizer-bytes-per-param was given
  std::string format = "text";
};

// Seed 000 §8: even keeping only bf16 parameters and fp32 Adam m and v (10 bytes/param, no
// gradients, no activations), pure DP holds at most HBM / 10 parameters (96 GB v5p: about 9B).
constexpr double kSeedPureDpBytesPerParam = 10;

int cmd_memory(const MemoryArgs& a) {
  double psi = a.params;
  std::int64_t dp = a.dp;
  double k = a.optimizer_bytes_per_param;
  double param_bytes = 2;
  double activations = -1;
  std::optional<hardware::HardwareProfile> hw;
  std::int64_t group = a.shard_group_size;
  if (!a.scenario.empty()) {
    if (a.params != 0 || a.dp != 0 || !a.hardware.empty())
      throw InputError("--params/--dp/--hardware", "", "give either a scenario or --params and --dp (and --hardware), not both");
    const models::Scenario s = models::load_scenario(a.scenario, a.sets);
    psi = static_cast<double>(s.model.parameter_count());
    // The scenario's parameter dtype and optimizer: Adam keeps m and v (8 bytes), SGD one momentum
    // buffer (4), none nothing, plus an fp32 master copy (4) of low-precision parameters
    // (models::static_memory), unless --optimizer-bytes-per-param says otherwise.
    param_bytes = models::dtype_bytes(s.precision.held_dtype);
    if (!a.optimizer_bytes_given) k = models::optimizer_state_bytes_per_param(s.optimizer, s.precision.held_dtype);
    dp = s.parallelism.dp;
    activations = models::activation_bytes(s);
    hw = s.hardware;
    if (group == 0) group = s.parallelism.strategy == "hsdp" ? s.shard_ranks() : s.ranks_per_node();
  } else {
    if (!a.sets.empty())
      throw InputError("--set", "", fmt::format("'{}' overrides a scenario's field, and none was given (with --params and "
                                                "--dp, use --optimizer-bytes-per-param for K)", a.sets.front()));
    if (!(psi > 0) || psi > 1e15)
      throw InputError("--params", "", fmt::format("expected a parameter count in (0, 1e15], got {:g}", psi));
    if (dp < 1 || dp > 100'000'000)
      throw InputError("--dp", "", fmt::format("expected an integer in [1, 100000000], got {}", dp));
    if (!a.hardware.empty()) hw = hardware::load_profile(a.hardware, "--hardware", "");
    if (group == 0) group = std::min<std::int64_t>(dp, hw ? hw->gpus_per_node : 8);
  }
  if (group < 1 || group > dp || dp % group != 0)
    throw InputError("--shard-group-size", "",
                     fmt::format("expected a divisor of the DP degree {} (HSDP shards inside groups of that many "
                                 "ranks), got {}", dp, group));
  if (!(k >= 0) || k > 1000)
    throw InputError("--optimizer-bytes-per-param", "", fmt::format("expected a number in [0, 1000], got {:g}", k));
  const double capacity = hw ? hw->usable_hbm_bytes() : 0;
  nlohmann::ordered_json j;
  j["schema"] = "stepsim.memory/1";
  j["params"] = psi;
  j["dp"] = dp;
  j["shard_group_size"] = group;
  j["optimizer_bytes_per_param"] = k;
  j["param_bytes"] = param_bytes;
  j["formula"] = "ZeRO paper §3.1 (B bytes per param and per grad, 2 for bf16, 4 for fp32; K bytes/param of optimizer "
                 "state): ddp BΨ+BΨ+KΨ; zero1 BΨ+BΨ+KΨ/N; zero2 BΨ+(B+K)Ψ/N; zero3 and fsdp (FULL_SHARD) (B+B+K)Ψ/N; "
                 "hsdp (B+B+K)Ψ/G over a shard group of G ranks";
  std::string text = fmt::format("model-state memory per GPU for {:.4g} parameters, N_d = {}, B = {:g}, K = {:g}, HSDP "
                                 "shard group G = {} (GB = 1e9 bytes)\n", psi, dp, param_bytes, k, group);
  text += fmt::format("  {:<7}{:>12}{:>12}{:>12}{:>12}{}{}\n", "", "params", "grads", "optimizer", "total",
                      activations >= 0 ? "  + activations" : "", hw ? "   largest model" : "");
  for (const auto& row : models::strategy_model_states(psi, dp, group, k, param_bytes)) {
    const auto& m = row.states;
    nlohmann::ordered_json e = {{"params_bytes", m.params_bytes},
                                {"grads_bytes", m.grads_bytes},
                                {"optimizer_bytes", m.optimizer_bytes},
                                {"total_bytes", m.total_bytes()}};
    std::string extra;
    if (activations >= 0) {
      e["activations_bytes"] = activations;
      e["with_activations_bytes"] = m.total_bytes() + activations;
      e["fits"] = m.total_bytes() + activations <= capacity;
      extra = fmt::format("  {:>9.2f} GB {:<12}", (m.total_bytes() + activations) / 1e9,
                          m.total_bytes() + activations <= capacity ? "fits" : "does not fit");
    }
    if (hw) {
      // Model states scale with Ψ: the most parameters whose states (no activations) fit.
      const double largest = capacity / (m.total_bytes() / psi);
      e["largest_params"] = largest;
      extra += fmt::format("  {:>9.4g} params", largest);
    }
    j[row.strategy] = e;
    text += fmt::format("  {:<7}{:>9.2f} GB{:>9.2f} GB{:>9.2f} GB{:>9.2f} GB{}\n", row.strategy, m.params_bytes / 1e9,
                        m.grads_bytes / 1e9, m.optimizer_bytes / 1e9, m.total_bytes() / 1e9, extra);
  }
  if (activations >= 0) {
    j["activations_bytes"] = activations;
    text += fmt::format("  activations of one micro-batch: {:.2f} GB\n", activations / 1e9);
  }
  if (hw) {
    j["hardware"] = hw->name;
    j["capacity_bytes"] = capacity;
    j["hbm_bytes"] = hw->hbm_bytes;
    j["reserved_bytes"] = hw->hbm_reserved_bytes;
    const double seed_bound = hw->hbm_bytes / kSeedPureDpBytesPerParam;
    j["largest_pure_dp_params_seed"] = seed_bound;
    text += fmt::format("  usable HBM of {}: {:.2f} GB = {:.2f} GB − {:.2f} GB reserved; largest model = usable / (total / Ψ)\n",
                        hw->name, capacity / 1e9, hw->hbm_bytes / 1e9, hw->hbm_reserved_bytes / 1e9);
    text += fmt::format("  pure-DP upper bound (seed 000 §8: bf16 params + fp32 Adam m, v = 10 bytes/param, no "
                        "gradients or activations): HBM / 10 = {:.3g} parameters\n", seed_bound);
  }
  print(a.format == "json" ? j.dump(2) + "\n" : text);
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
