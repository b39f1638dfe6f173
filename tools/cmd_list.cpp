// SPDX-License-Identifier: Apache-2.0
// `stepsim list`: built-in profiles, models and strategies.
#include "tools/commands.hpp"

#include "sim/support/error.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include "models/listing_json.hpp"

#include <memory>

namespace stepsim::tools {

namespace {

int cmd_list(const std::string& what, const std::string& format) {
  const nlohmann::ordered_json j = models::list_json(what);  // schema "stepsim.list/1"
  if (format == "json") {
    print(j.dump(2) + "\n");
    return 0;
  }
  const auto& items = j.at("items");
  std::string text;
  if (j.at("what") == "models") {
    std::size_t w = 12;
    for (const auto& m : items) w = std::max(w, m.at("name").get<std::string>().size());
    for (const auto& m : items)
      text += fmt::format("{:<{}} {:>8.3f} B parameters, {} layers ({})\n", m.at("name").get<std::string>(), w,
                          m.at("parameters").get<double>() / 1e9, m.at("layers").get<std::size_t>(),
                          m.at("kind").get<std::string>());
  } else {
    const std::size_t w = j.at("what") == "profiles" ? 12 : 8;
    for (const auto& e : items)
      text += fmt::format("{:<{}} {}\n", e.at("name").get<std::string>(), w, e.at("description").get<std::string>());
  }
  print(text);
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
