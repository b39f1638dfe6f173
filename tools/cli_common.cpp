// SPDX-License-Identifier: Apache-2.0
// Helpers shared by subcommands.
#include "tools/commands.hpp"

#include "sim/support/error.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstdio>

namespace stepsim::tools {

void print(const std::string& s) { std::fwrite(s.data(), 1, s.size(), stdout); }

void add_cluster_flags(CLI::App& cmd, ClusterFlags& f, bool required) {
  auto* hw = cmd.add_option("--hardware", f.hardware, "profile name or JSON file");
  auto* ranks = cmd.add_option("--ranks", f.ranks, "DP degree (GPUs)");
  if (required) {
    hw->required();
    ranks->required();
  }
  cmd.add_option("--gpus-per-node", f.gpus_per_node, "GPUs per node (default: the profile's)");
  cmd.add_option("--axes", f.axes, "TPU: torus axes used for DP (1-3; default all)");
  cmd.add_option("--moe-experts", f.moe_experts, "MoE: experts per layer E");
  cmd.add_option("--moe-topk", f.moe_topk, "MoE: experts per token k");
}

hardware::GroupShape group_shape(const hardware::HardwareProfile& hw, long long ranks,
                                 long long gpus_per_node, int axes) {
  if (ranks < 1 || ranks > 100'000'000)
    throw InputError("--ranks", "", fmt::format("expected an integer in [1, 100000000], got {}", ranks));
  if (gpus_per_node < 0 || gpus_per_node > (1 << 20))
    throw InputError("--gpus-per-node", "", fmt::format("expected a positive integer, got {}", gpus_per_node));
  if (axes != 0 && !hw.is_torus())
    throw InputError("--axes", "", fmt::format("profile '{}' has no torus; --axes applies to TPU profiles", hw.name));
  if (axes < 0 || axes > 3) throw InputError("--axes", "", fmt::format("expected 1, 2 or 3 torus axes, got {}", axes));
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

hardware::CollectiveAlgorithm algorithm_from(const std::string& name) {
  if (name == "ring") return hardware::CollectiveAlgorithm::Ring;
  if (name == "hierarchical") return hardware::CollectiveAlgorithm::Hierarchical;
  return hardware::CollectiveAlgorithm::Auto;
}

}  // namespace stepsim::tools
