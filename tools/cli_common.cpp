// SPDX-License-Identifier: Apache-2.0
// Helpers shared by subcommands.
#include "tools/commands.hpp"

#include "sim/support/atomic_file.hpp"
#include "sim/support/error.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <filesystem>

namespace stepsim::tools {

void print(const std::string& s) { std::fwrite(s.data(), 1, s.size(), stdout); }

CLI::Validator given_positive() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        long long v = 0;
        const char* end = text.data() + text.size();
        const auto [ptr, ec] = std::from_chars(text.data(), end, v);
        if (ec != std::errc() || ptr != end || v >= 1) return "";  // not an integer: CLI11's conversion says so
        return fmt::format("expected a positive integer, got {}", text);
      },
      "POSITIVE");
}

void add_cluster_flags(CLI::App& cmd, ClusterFlags& f, bool required) {
  auto* hw = cmd.add_option("--hardware", f.hardware, "profile name or JSON file");
  auto* ranks = cmd.add_option("--ranks", f.ranks, "DP degree (GPUs)")->check(given_positive());
  if (required) {
    hw->required();
    ranks->required();
  }
  cmd.add_option("--gpus-per-node", f.gpus_per_node, "GPUs per node (default: the profile's)")->check(given_positive());
  cmd.add_option("--axes", f.axes, "TPU: torus axes used for DP (1-3; default all)")->check(given_positive());
  cmd.add_option("--moe-experts", f.moe_experts, "MoE: experts per layer E")->check(given_positive());
  cmd.add_option("--moe-topk", f.moe_topk, "MoE: experts per token k")->check(given_positive());
}

hardware::GroupShape group_shape(const hardware::HardwareProfile& hw, long long ranks,
                                 long long gpus_per_node, int axes) {
  if (ranks < 1 || ranks > 100'000'000)
    throw InputError("--ranks", "", fmt::format("expected an integer in [1, 100000000], got {}", ranks));
  if (gpus_per_node != 0)  // 0: not given, the profile's
    if (const std::string why = hardware::gpus_per_node_problem(gpus_per_node); !why.empty())
      throw InputError("--gpus-per-node", "", why);
  if (axes != 0 && !hw.is_torus())
    throw InputError("--axes", "", fmt::format("profile '{}' has no torus; --axes applies to TPU profiles", hw.name));
  if (axes < 0 || axes > 3) throw InputError("--axes", "", fmt::format("expected 1, 2 or 3 torus axes, got {}", axes));
  if (hw.is_torus()) {
    long long pod = 1;
    for (const int d : hw.torus_dims) pod *= d;
    if (ranks > pod)
      throw InputError("--ranks", "", fmt::format("{} ranks is more than one {} pod holds: at most {} chips ({} torus); "
                                                  "DP across pods (DCN) is not modelled", ranks, hw.name, pod,
                                                  fmt::join(hw.torus_dims, "x")));
  }
  const int g = gpus_per_node > 0 ? static_cast<int>(gpus_per_node) : hw.gpus_per_node;
  const long long ranks_per_node = std::min<long long>(g, ranks);
  if (ranks > g && ranks % g != 0 && !hw.is_torus())
    throw InputError("--ranks", "", fmt::format("{} ranks is not a whole number of {}-GPU nodes", ranks, g));
  return {static_cast<int>(ranks), static_cast<int>(ranks_per_node), axes};
}

std::pair<int, int> moe_shape(long long experts, long long topk) {
  if (experts == 0 && topk == 0) return {1, 1};
  if (experts < 1 || topk < 1 || topk > experts || experts > (1 << 20))
    throw InputError("--moe-experts/--moe-topk", "",
                     fmt::format("expected 1 ≤ topk ≤ experts (both given), got experts {} topk {}", experts, topk));
  return {static_cast<int>(experts), static_cast<int>(topk)};
}

void add_calibration_option(CLI::App& cmd, std::vector<std::string>& sets) {
  cmd.add_option_function<std::string>(
      "--calibration", [&sets](const std::string& file) { sets.push_back("calibration=" + file); },
      "calibration overlay (stepsim calibrate nccl-tests | gemm -o); same as --set calibration=FILE");
}

void add_jobs_option(CLI::App& cmd, unsigned& threads, const std::string& what) {
  cmd.add_option_function<std::string>(
         "-j,--jobs",
         [&threads](const std::string& text) {
           const bool digits = !text.empty() && text.size() <= 6 &&
                               std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
           if (!digits || std::stoul(text) > kMaxJobs)
             throw CLI::ValidationError("-j/--jobs", fmt::format("expected an integer in [0, {}] (0 = all cores), got '{}'",
                                                                 kMaxJobs, text));
           threads = static_cast<unsigned>(std::stoul(text));
         },
         fmt::format("{} in parallel: 1 to {}, 0 = all cores (the default); the output does not depend on it",
                     what, kMaxJobs))
      ->type_name("N");
}

bool is_output_flag(const CLI::Option& option) {
  for (const auto& name : {"out", "output", "plot", "trace", "dump-graph"})
    if (option.check_lname(name)) return true;
  return false;
}

void describe_output_flags(CLI::App& app) {
  for (CLI::App* cmd : app.get_subcommands([](CLI::App*) { return true; })) {
    for (CLI::Option* o : cmd->get_options())
      if (is_output_flag(*o)) o->description(o->get_description() + "; overwritten if it exists, written atomically");
    describe_output_flags(*cmd);
  }
}

void check_output_flags(const CLI::App& app) {
  for (const CLI::App* cmd : app.get_subcommands()) {  // the parsed ones
    std::vector<std::pair<std::string, std::string>> outputs;
    std::vector<std::string> inputs;
    for (const CLI::Option* o : cmd->get_options()) {
      if (o->count() == 0) continue;
      for (const auto& v : o->results()) {
        if (is_output_flag(*o)) {
          outputs.emplace_back(o->get_name(), v);
          continue;
        }
        std::error_code ec;
        if (std::filesystem::is_regular_file(v, ec)) inputs.push_back(v);
        if (const auto eq = v.find('='); eq != std::string::npos && std::filesystem::is_regular_file(v.substr(eq + 1), ec))
          inputs.push_back(v.substr(eq + 1));  // --set calibration=FILE
      }
    }
    for (const auto& [flag, path] : outputs) check_output_path(path, flag, inputs);
    check_distinct_outputs(outputs);
    check_output_flags(*cmd);
  }
}

std::string count_of(std::size_t n, const std::string& noun) {
  return fmt::format("{} {}{}", n, noun, n == 1 ? "" : "s");
}

hardware::CollectiveAlgorithm algorithm_from(const std::string& name) {
  if (name == "ring") return hardware::CollectiveAlgorithm::Ring;
  if (name == "hierarchical") return hardware::CollectiveAlgorithm::Hierarchical;
  return hardware::CollectiveAlgorithm::Auto;
}

}  // namespace stepsim::tools
