// SPDX-License-Identifier: Apache-2.0
// `stepsim list`: built-in profiles, models and strategies.
#include "tools/commands.hpp"

#include "sim/support/error.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include "models/listing_json.hpp"
#include "models/scenario.hpp"
#include "models/scenario_fields.hpp"
#include "sim/support/names.hpp"

#include <memory>

namespace stepsim::tools {

namespace {

int cmd_list(const std::string& what, const std::string& format) {
  if (format == "markdown") {
    if (what != "fields")
      throw InputError("list", "", fmt::format("--format markdown is the field reference's (stepsim list fields); "
                                               "for '{}' use text or json", what));
    print(models::field_reference_markdown());
    return 0;
  }
  const nlohmann::ordered_json j = models::list_json(what);  // schema "stepsim.list/1"
  if (format == "json") {
    print(j.dump(2) + "\n");
    return 0;
  }
  const auto& items = j.at("items");
  std::string text;
  if (j.at("what") == "fields") {
    std::size_t w = 12;
    for (const auto& f : items) w = std::max(w, f.at("path").get<std::string>().size());
    for (const auto& f : items) {
      std::string line = fmt::format("{:<{}} {}", f.at("path").get<std::string>(), w, f.at("type").get<std::string>());
      if (!f.at("unit").get<std::string>().empty()) line += fmt::format(" ({})", f.at("unit").get<std::string>());
      line += f.at("required").get<bool>() ? ", required" : ", default " + f.at("default").get<std::string>();
      if (!f.at("range").get<std::string>().empty()) line += fmt::format("; {}", f.at("range").get<std::string>());
      if (f.at("applies_to").size() < models::strategy_names().size())
        line += fmt::format("; {} only", f.at("applies_to").get<std::vector<std::string>>().size() == 1
                                             ? f.at("applies_to")[0].get<std::string>()
                                             : join_names(f.at("applies_to").get<std::vector<std::string>>()));
      line.erase(std::remove(line.begin(), line.end(), '`'), line.end());  // Markdown quotes, for the docs
      text += line + "\n";
    }
    text += "(stepsim list fields --format markdown: the same with each field's meaning, as docs/fields.md)\n";
  } else if (j.at("what") == "models") {
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
  auto* list = app.add_subcommand("list", "list built-in profiles, models or strategies, or the scenario's fields");
  list->add_option("what", *what, "profiles | models | strategies | fields")
      ->check(CLI::IsMember({"profiles", "hardware", "models", "strategies", "fields"}));
  list->add_option("--format", *format, "text, json (schema stepsim.list/1) or markdown (fields only: docs/fields.md)")
      ->check(CLI::IsMember({"text", "json", "markdown"}));
  list->callback([what, format, &action] { action = [what, format] { return cmd_list(*what, *format); }; });
}

}  // namespace stepsim::tools
