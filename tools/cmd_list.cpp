// SPDX-License-Identifier: Apache-2.0
// `stepsim list`: built-in profiles, models and strategies.
#include "tools/commands.hpp"

#include "sim/support/error.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include "hardware/hardware_profile_json.hpp"
#include "models/model_spec_json.hpp"
#include "models/scenario.hpp"
#include "models/strategy/strategy.hpp"

#include <memory>

namespace stepsim::tools {

namespace {

int cmd_list(const std::string& what) {
  if (what == "profiles" || what == "hardware") {
    for (const auto& n : hardware::builtin_profile_names()) {
      const auto p = hardware::load_profile(n);
      print(fmt::format("{:<12} {}\n", n, p.description));
    }
  } else if (what == "models") {
    std::size_t w = 12;
    for (const auto& n : models::builtin_model_names()) w = std::max(w, n.size());
    for (const auto& n : models::builtin_model_names()) {
      const auto m = models::load_model(n);
      print(fmt::format("{:<{}} {:>8.3f} B parameters, {} layers ({})\n", n, w,
                        static_cast<double>(m.parameter_count()) / 1e9, m.layers.size(), m.kind));
    }
  } else {
    for (const auto& s : models::strategy_registry()) print(fmt::format("{:<8} {}\n", s.name, s.description));
  }
  return 0;
}

}  // namespace

void add_list_command(CLI::App& app, Action& action) {
  auto what = std::make_shared<std::string>("strategies");
  auto* list = app.add_subcommand("list", "list built-in profiles, models or strategies");
  list->add_option("what", *what, "profiles | models | strategies")
      ->check(CLI::IsMember({"profiles", "hardware", "models", "strategies"}));
  list->callback([what, &action] { action = [what] { return cmd_list(*what); }; });
}

}  // namespace stepsim::tools
