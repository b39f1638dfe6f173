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

int cmd_list(const std::string& what, const std::string& format) {
  // JSON (schema "stepsim.list/1"): {"schema", "what", "items": [...]}, one object per entry.
  nlohmann::ordered_json items = nlohmann::ordered_json::array();
  std::string text;
  if (what == "profiles" || what == "hardware") {
    for (const auto& n : hardware::builtin_profile_names()) {
      const auto p = hardware::load_profile(n);
      text += fmt::format("{:<12} {}\n", n, p.description);
      items.push_back({{"name", n},
                       {"description", p.description},
                       {"peak_flops_per_s", p.peak_flops_per_s},
                       {"hbm_bytes", p.hbm_bytes},
                       {"hbm_bandwidth_bytes_per_s", p.hbm_bandwidth_bytes_per_s},
                       {"gpus_per_node", p.gpus_per_node}});
    }
  } else if (what == "models") {
    std::size_t w = 12;
    for (const auto& n : models::builtin_model_names()) w = std::max(w, n.size());
    for (const auto& n : models::builtin_model_names()) {
      const auto m = models::load_model(n);
      text += fmt::format("{:<{}} {:>8.3f} B parameters, {} layers ({})\n", n, w,
                          static_cast<double>(m.parameter_count()) / 1e9, m.layers.size(), m.kind);
      items.push_back({{"name", n},
                       {"kind", m.kind},
                       {"parameters", m.parameter_count()},
                       {"layers", m.layers.size()},
                       {"sample_unit", m.sample_unit()},
                       {"source", m.source}});
    }
  } else {
    for (const auto& st : models::strategy_registry()) {
      text += fmt::format("{:<8} {}\n", st.name, st.description);
      items.push_back({{"name", st.name}, {"description", st.description}});
    }
  }
  if (format == "json") {
    nlohmann::ordered_json j;
    j["schema"] = "stepsim.list/1";
    j["what"] = what == "hardware" ? "profiles" : what;
    j["items"] = std::move(items);
    print(j.dump(2) + "\n");
  } else {
    print(text);
  }
  return 0;
}

}  // namespace

void add_list_command(CLI::App& app, Action& action) {
  auto what = std::make_shared<std::string>("strategies");
  auto format = std::make_shared<std::string>("text");
  auto* list = app.add_subcommand("list", "list built-in profiles, models or strategies");
  list->add_option("what", *what, "profiles | models | strategies")
      ->check(CLI::IsMember({"profiles", "hardware", "models", "strategies"}));
  list->add_option("--format", *format, "text or json (schema stepsim.list/1)")->check(CLI::IsMember({"text", "json"}));
  list->callback([what, format, &action] { action = [what, format] { return cmd_list(*what, *format); }; });
}

}  // namespace stepsim::tools
