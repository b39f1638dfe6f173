// SPDX-License-Identifier: Apache-2.0
// `stepsim list`: built-in profiles, models and strategies.
#include "tools/commands.hpp"

#include "sim/support/error.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include "hardware/hardware_profile.hpp"
#include "models/listing_json.hpp"
#include "models/scenario.hpp"
#include "models/scenario_fields.hpp"
#include "sim/support/names.hpp"

#include <memory>

namespace stepsim::tools {

namespace {

// `stepsim list profiles [NAME...]`: a table of the facts a user compares accelerators by, with
// how many of each profile's sources are datasheet values, measurements, derivations, fits and
// assumptions; with names, each profile's description, numbers and every source.
std::string profiles_text(const nlohmann::ordered_json& items, const std::vector<std::string>& names) {
  const auto num = [](const nlohmann::ordered_json& v, double scale, const char* fmtspec) -> std::string {
    return v.is_null() ? "-" : fmt::format(fmt::runtime(fmtspec), v.get<double>() / scale);
  };
  const auto kinds_of = [](const nlohmann::ordered_json& e) {
    std::vector<int> counts(hardware::source_kind_names().size(), 0);
    int untagged = 0;
    for (const auto& s : e.at("sources")) {
      if (s.at("kinds").empty()) ++untagged;
      for (const auto& k : s.at("kinds")) {
        const auto& all = hardware::source_kind_names();
        ++counts[static_cast<std::size_t>(std::find(all.begin(), all.end(), k.get<std::string>()) - all.begin())];
      }
    }
    std::string text;
    for (std::size_t i = 0; i < counts.size(); ++i) text += fmt::format("{}{}", i ? "/" : "", counts[i]);
    if (untagged) text += fmt::format(" +{} untagged", untagged);
    return text;
  };
  const auto domain = [](const nlohmann::ordered_json& e) {
    const auto& dims = e.at("torus_dims");
    if (!dims.empty()) {
      std::string shape;
      for (const auto& d : dims) shape += (shape.empty() ? "" : "x") + std::to_string(d.get<int>());
      return fmt::format("{} ici torus", shape);
    }
    return fmt::format("{} {}", e.at("gpus_per_node").get<int>(), e.at("intra_node_fabric").get<std::string>());
  };
  std::string text;
  if (names.empty()) {
    text += fmt::format("{:<16} {:>6} {:>6} {:>6} {:>6}  {:<18} {:>9} {:>8}  {}\n", "profile", "BF16", "FP8", "HBM", "HBM",
                        "scale-up domain", "scale-up", "NIC", "sources");
    text += fmt::format("{:<16} {:>6} {:>6} {:>6} {:>6}  {:<18} {:>9} {:>8}  {}\n", "", "TF/s", "TF/s", "GiB", "TB/s", "",
                        "GB/s", "Gb/s/GPU", "datasheet/measured/derived/fitted/assumed");
    for (const auto& e : items) {
      std::string scale_up = num(e.at("intra_node_bandwidth_bytes_per_s"), 1e9, "{:.0f}");
      if (!e.at("intra_node_peer_bandwidth_bytes_per_s").is_null())
        scale_up += num(e.at("intra_node_peer_bandwidth_bytes_per_s"), 1e9, "/{:.0f}");
      text += fmt::format("{:<16} {:>6} {:>6} {:>6} {:>6}  {:<18} {:>9} {:>8}  {}\n", e.at("name").get<std::string>(),
                          num(e.at("peak_flops_per_s"), 1e12, "{:.0f}"), num(e.at("fp8_flops_per_s"), 1e12, "{:.0f}"),
                          num(e.at("hbm_bytes"), 1024.0 * 1024 * 1024, "{:.0f}"),
                          num(e.at("hbm_bandwidth_bytes_per_s"), 1e12, "{:.2f}"), domain(e), scale_up,
                          num(e.at("nic_bandwidth_bytes_per_s_per_gpu"), 1e9 / 8, "{:.0f}"), kinds_of(e));
    }
    text += "(dense peaks; scale-up GB/s one way per GPU, aggregate/per peer on a switchless mesh; stepsim list profiles "
            "NAME: a profile's description and every source; --format json: all of it)\n";
    return text;
  }
  for (const auto& want : names) {
    const nlohmann::ordered_json* found = nullptr;
    for (const auto& e : items)
      if (e.at("name") == want) found = &e;
    if (!found) {
      std::vector<std::string> all;
      for (const auto& e : items) all.push_back(e.at("name").get<std::string>());
      throw InputError("list profiles", "", fmt::format("no built-in profile '{}'; known profiles: {}{}", excerpt(want),
                                                        join_names(all), did_you_mean(want, all)));
    }
    const auto& e = *found;
    text += fmt::format("{}: {}\n", e.at("name").get<std::string>(), e.at("description").get<std::string>());
    text += fmt::format("  BF16 {} TFLOP/s, FP8 {} TFLOP/s (dense); HBM {} GiB at {} TB/s; scale-up domain {}, {} GB/s one way "
                        "per GPU{}; network {} Gb/s per GPU{}; collectives priced by the {} model\n",
                        num(e.at("peak_flops_per_s"), 1e12, "{:g}"), num(e.at("fp8_flops_per_s"), 1e12, "{:g}"),
                        num(e.at("hbm_bytes"), 1024.0 * 1024 * 1024, "{:.4g}"),
                        num(e.at("hbm_bandwidth_bytes_per_s"), 1e12, "{:g}"), domain(e),
                        num(e.at("intra_node_bandwidth_bytes_per_s"), 1e9, "{:g}"),
                        e.at("intra_node_peer_bandwidth_bytes_per_s").is_null()
                            ? std::string()
                            : num(e.at("intra_node_peer_bandwidth_bytes_per_s"), 1e9, " ({:g} to any one peer)"),
                        num(e.at("nic_bandwidth_bytes_per_s_per_gpu"), 1e9 / 8, "{:g}"),
                        e.at("fabric_bandwidth_efficiency").get<double>() < 1 ||
                                e.at("fabric_latency_per_log2_nodes_s").get<double>() > 0
                            ? fmt::format(" ({}fabric +{:.3g} us per doubling of the node count, bandwidth efficiency {:.3g})",
                                          e.at("network").is_null() ? "" : e.at("network").get<std::string>() + ": ",
                                          e.at("fabric_latency_per_log2_nodes_s").get<double>() * 1e6,
                                          e.at("fabric_bandwidth_efficiency").get<double>())
                            : std::string(" (line rate, no fabric terms)"),
                        e.at("collective_model").get<std::string>());
    if (const auto& h = e.at("host"); !h.is_null())
      text += fmt::format("  host: PCIe Gen{} x{}, {:g} / {:g} GB/s host-to-device / device-to-host per GPU, {} GPUs per switch; "
                          "{:g} GB memory, {} cores, CPU Adam {:.3g} parameters/s per node; NVMe {}\n",
                          h.at("pcie_generation").get<int>(), h.at("pcie_lanes").get<int>(),
                          h.at("h2d_bytes_per_s").get<double>() / 1e9, h.at("d2h_bytes_per_s").get<double>() / 1e9,
                          h.at("gpus_per_pcie_switch").get<int>(), h.at("memory_bytes").get<double>() / 1e9,
                          h.at("cpu_cores").get<int>(), h.at("cpu_adam_params_per_s").get<double>(),
                          h.at("nvme_bytes").is_null()
                              ? std::string("none given")
                              : fmt::format("{:g} TB, {:g} / {:g} GB/s read / write", h.at("nvme_bytes").get<double>() / 1e12,
                                            h.at("nvme_read_bytes_per_s").get<double>() / 1e9,
                                            h.at("nvme_write_bytes_per_s").get<double>() / 1e9));
    else
      text += "  host: none given (offload and checkpoints need the profile's \"host\" object)\n";
    text += fmt::format("  sources ({}: datasheet/measured/derived/fitted/assumed):\n", kinds_of(e));
    for (const auto& src : e.at("sources")) text += fmt::format("  - {}\n", src.at("text").get<std::string>());
  }
  return text;
}

int cmd_list(const std::string& what, const std::vector<std::string>& asked, const std::string& format) {
  std::vector<std::string> names;  // each asked-for profile once, in the order asked
  for (const auto& n : asked)
    if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
  if (what == "tensors") {
    if (names.size() != 1)
      throw InputError("list", "", "'list tensors' takes one model: a catalog name, a model .json, a Hugging Face "
                                   "config.json or a folder holding one");
    if (format == "markdown")
      throw InputError("list", "", "--format markdown is the field reference's (stepsim list fields); for 'tensors' "
                                   "use text or json");
    const nlohmann::ordered_json j = models::tensors_json(names.front());
    if (format == "json") {
      print(j.dump(2) + "\n");
      return 0;
    }
    std::size_t w = 8;
    for (const auto& t : j.at("tensors")) w = std::max(w, t.at("name").get<std::string>().size());
    std::string text = fmt::format("{} ({}): {} parameters{} in {} tensors, registration order\n",
                                   j.at("model").get<std::string>(), j.at("kind").get<std::string>(),
                                   j.at("parameters").get<std::int64_t>(),
                                   j.at("active_parameters") != j.at("parameters")
                                       ? fmt::format(", {} active per token", j.at("active_parameters").get<std::int64_t>())
                                       : std::string(),
                                   j.at("tensors").size());
    for (const auto& t : j.at("tensors"))
      text += fmt::format("{:<{}} {:>14} {}{}\n", t.at("name").get<std::string>(), w, t.at("numel").get<std::int64_t>(),
                          t.at("dtype").get<std::string>(), t.at("trainable").get<bool>() ? "" : " frozen");
    print(text);
    return 0;
  }
  if (!names.empty() && what != "profiles" && what != "hardware")
    throw InputError("list", "", fmt::format("names ('{}') go with 'list profiles' and 'list tensors' only; 'list {}' "
                                             "takes none", excerpt(names.front()), what));
  if (format == "markdown") {
    if (what != "fields")
      throw InputError("list", "", fmt::format("--format markdown is the field reference's (stepsim list fields); "
                                               "for '{}' use text or json", what));
    print(models::field_reference_markdown());
    return 0;
  }
  nlohmann::ordered_json j = models::list_json(what);  // schema "stepsim.list/1"
  if (!names.empty()) {
    profiles_text(j.at("items"), names);  // refuses unknown names
    nlohmann::ordered_json kept = nlohmann::ordered_json::array();
    for (const auto& n : names)
      for (const auto& e : j.at("items"))
        if (e.at("name") == n) kept.push_back(e);
    j["items"] = std::move(kept);
  }
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
    for (const auto& m : items) {
      const double all = m.at("parameters").get<double>(), active = m.at("active_parameters").get<double>();
      text += fmt::format("{:<{}} {:>8.3f} B parameters, {} layers ({}{})\n", m.at("name").get<std::string>(), w,
                          all / 1e9, m.at("layers").get<std::size_t>(), m.at("kind").get<std::string>(),
                          active < all ? fmt::format("; mixture of experts, {:.3f} B active per token", active / 1e9) : "");
    }
  } else if (j.at("what") == "profiles") {
    text = profiles_text(items, names);
  } else if (j.at("what") == "networks") {
    for (const auto& n : items) {
      text += fmt::format("{:<16} {}\n", n.at("name").get<std::string>(), n.at("description").get<std::string>());
      text += fmt::format("{:<16} NIC {:g} Gb/s per {}GPU{}; fabric: +{:.3g} us per doubling of the node count, bandwidth "
                          "efficiency {:.3g}\n", "", n.at("nic_bandwidth_bytes_per_s").get<double>() * 8 / 1e9,
                          n.at("gpus_per_nic").get<int>() == 1 ? std::string() : std::to_string(n.at("gpus_per_nic").get<int>()) + " ", n.at("gpus_per_nic").get<int>() == 1 ? "" : "s",
                          n.at("fabric_latency_per_log2_nodes_s").get<double>() * 1e6,
                          n.at("fabric_bandwidth_efficiency").get<double>());
    }
    text += "(a profile picks one with \"network\": NAME; a scenario with --set hardware.network=NAME or \"hardware\": "
            "{\"base\": PROFILE, \"network\": NAME}; stepsim collective with --network NAME; --format json: each "
            "preset's sources)\n";
  } else {
    const std::size_t w = 8;
    for (const auto& e : items)
      text += fmt::format("{:<{}} {}\n", e.at("name").get<std::string>(), w, e.at("description").get<std::string>());
  }
  print(text);
  return 0;
}

}  // namespace

void add_list_command(CLI::App& app, Action& action) {
  auto what = std::make_shared<std::string>("strategies");
  auto names = std::make_shared<std::vector<std::string>>();
  auto format = std::make_shared<std::string>("text");
  auto* list = app.add_subcommand("list", "list built-in profiles, networks, models or strategies, the scenario's fields, "
                                          "or a model's tensors");
  list->add_option("what", *what, "profiles | networks | models | strategies | fields | tensors")
      ->check(CLI::IsMember({"profiles", "hardware", "networks", "models", "strategies", "fields", "tensors"}));
  list->add_option("names", *names,
                   "profiles: the built-in profiles to show in full, with every source; tensors: the model (a catalog "
                   "name, a model .json, a config.json or its folder) whose tensors to list");
  list->add_option("--format", *format, "text, json (schema stepsim.list/1) or markdown (fields only: docs/fields.md)")
      ->check(CLI::IsMember({"text", "json", "markdown"}));
  list->callback([what, names, format, &action] { action = [what, names, format] { return cmd_list(*what, *names, *format); }; });
}

}  // namespace stepsim::tools
