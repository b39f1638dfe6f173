// SPDX-License-Identifier: Apache-2.0
// `stepsim collective` and `stepsim threshold`: closed-form collective costs and the DP threshold.
#include "tools/commands.hpp"

#include "models/queries_json.hpp"

#include <memory>

namespace stepsim::tools {

namespace {

struct CollectiveArgs : models::CollectiveQuery {
  std::string format = "text";
};

struct ThresholdArgs : ClusterFlags {
  std::string scenario;
  std::vector<std::string> sets;
  std::string format = "text";
};

int cmd_collective(const CollectiveArgs& a) {
  const models::QueryAnswer answer = models::collective_query(a);
  print(a.format == "json" ? answer.json.dump(2) + "\n" : answer.text);
  return 0;
}

int cmd_threshold(const ThresholdArgs& a) {
  const models::QueryAnswer answer =
      models::threshold_query({a.hardware, a.ranks, a.gpus_per_node, a.axes, a.moe_experts, a.moe_topk, a.moe_ep,
                               a.scenario, a.sets});
  print(a.format == "json" ? answer.json.dump(2) + "\n" : answer.text);
  return 0;
}

}  // namespace

namespace {

// Every spelling of every op (allreduce, AllReduce, all_reduce, ...), as the registry has them.
std::vector<std::string> collective_op_spellings() {
  std::vector<std::string> all = hardware::collective_op_names();
  for (const auto& v : {hardware::collective_op_labels(), hardware::collective_op_nccl_tests_names()})
    all.insert(all.end(), v.begin(), v.end());
  return all;
}

}  // namespace

void add_collective_commands(CLI::App& app, Action& action) {
  auto coll = std::make_shared<CollectiveArgs>();
  auto* collective = app.add_subcommand("collective", "closed-form time of one collective");
  collective->add_option("op", coll->op, "allreduce | reducescatter | allgather")
      ->required()
      ->check(CLI::IsMember(collective_op_spellings()));
  collective->add_option("--hardware", coll->hardware, "profile name or JSON file")->required();
  collective->add_option("--ranks", coll->ranks, "ranks in the communicator")->required();
  collective->add_option("--size", coll->size, "buffer size as nccl-tests counts it: bytes or '16GB', '25MiB'")->required();
  collective->add_option("--gpus-per-node", coll->gpus_per_node, "GPUs per node (default: the profile's)")
      ->check(given_positive());
  collective->add_option("--axes", coll->axes, "TPU: torus axes used at once (1-3; default all)")->check(given_positive());
  collective->add_option("--cost-model", coll->cost_model, "collective cost model")->check(CLI::IsMember({"alpha-beta", "nccl"}));
  collective->add_option("--algorithm", coll->algorithm, "auto | ring | hierarchical")
      ->check(CLI::IsMember(hardware::collective_algorithm_names()));
  collective->add_option("--format", coll->format, "output format")->check(CLI::IsMember({"text", "json"}));
  collective->add_option("--calibration", coll->calibration, "calibration overlay JSON (stepsim calibrate nccl-tests -o)");
  collective->add_option("--network", coll->network,
                         "network preset over the profile's NICs: NICs per GPU, their speed and the fabric terms fitted "
                         "on its public nccl-tests logs (stepsim list networks)");
  collective->callback([coll, &action] { action = [coll] { return cmd_collective(*coll); }; });

  auto thr = std::make_shared<ThresholdArgs>();
  auto* threshold = app.add_subcommand("threshold", "tokens per GPU below which pure DP is communication-bound");
  threshold->add_option("scenario", thr->scenario,
                        "scenario JSON file: run's comm-bound figure for it (its DP group and its model's FLOPs per "
                        "token); or use --hardware and --ranks");
  threshold->add_option("--set", thr->sets, "override a scenario field: PATH=VALUE (repeatable)");
  add_cluster_flags(*threshold, *thr, false);
  threshold->add_option("--format", thr->format, "output format")->check(CLI::IsMember({"text", "json"}));
  threshold->callback([thr, &action] { action = [thr] { return cmd_threshold(*thr); }; });
}

}  // namespace stepsim::tools
