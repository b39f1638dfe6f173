// SPDX-License-Identifier: Apache-2.0
// `stepsim plan`: the fastest configuration of a model on a cluster that fits (models/plan.hpp).
#include "tools/commands.hpp"

#include "models/batch.hpp"
#include "models/plan.hpp"
#include "sim/support/error.hpp"
#include "tools/mpi_partition.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <optional>

namespace stepsim::tools {

namespace {

struct PlanArgs {
  models::PlanQuery query;
  std::string global_batch_tokens;
  std::string format = "text";
  bool explain = false;
  bool timing = false;
  bool gpus_given = false, seq_len_given = false;
};

models::PlanResult run_plan(PlanArgs& a, const models::PlanProcesses& processes) {
  if (!a.global_batch_tokens.empty())
    a.query.global_batch_tokens = models::parse_count(a.global_batch_tokens, "--global-batch-tokens");
  // 0 is the query's "not given" (the scenario's); given on the command line it is a bad value.
  if (a.gpus_given && a.query.gpus == 0) throw InputError("--gpus", "", "expected 1 to 1048576 GPUs, got 0");
  if (a.seq_len_given && a.query.seq_len == 0) throw InputError("--seq-len", "", "expected 1 to 16777216 tokens, got 0");
  if (!a.global_batch_tokens.empty() && a.query.global_batch_tokens == 0)
    throw InputError("--global-batch-tokens", "", fmt::format("expected 1 to 1e15 tokens, got '{}'", a.global_batch_tokens));
  if (a.query.global_batch_tokens != std::floor(a.query.global_batch_tokens))
    throw InputError("--global-batch-tokens", "",
                     fmt::format("expected a whole number of tokens, got '{}' ({:.10g})", a.global_batch_tokens,
                                 a.query.global_batch_tokens));
  return models::plan(a.query, processes);
}

void print_plan(const PlanArgs& a, const models::PlanResult& r, const std::string& workers) {
  print(a.format == "json" ? models::plan_json(r) : models::plan_text(r, a.explain));
  if (a.timing)
    std::fputs(fmt::format("plan: {} configurations in {:.3f} s ({:.0f} per second), {} simulated{}\n", r.configurations,
                           r.elapsed_s, static_cast<double>(r.configurations) / r.elapsed_s, r.simulated, workers)
                   .c_str(),
               stderr);
}

/// Under mpirun/srun: every rank runs the search, each simulating its share of every batch
/// (models::PlanProcesses, the outcomes all-gathered), so all take the same decisions; rank 0
/// alone prints. A rank that stops (its search ended or failed) answers the exchanges of the
/// others with its stop (models::kPlanStopped) until all have stopped, so no rank waits for
/// one that threw, and ranks whose inputs differ stop together. Rank 0 prints the first failure
/// (its own, else another rank's, named) and carries the status (as `stepsim sweep` does).
int cmd_plan_mpi(PlanArgs& a, const MpiWorld& world) {
  models::PlanProcesses processes;
  processes.part = {static_cast<std::size_t>(world.rank()), static_cast<std::size_t>(world.size())};
  processes.all_gather = [&world](const std::string& bytes) { return world.all_gather(bytes); };
  // This rank's end, as a sweep part's (encode_part: its error, or none), behind the stop mark.
  std::optional<models::PlanResult> result;
  const std::string stop = models::kPlanStopped + models::encode_part([&] {
    result = run_plan(a, processes);
    return std::vector<models::PointOutcome>{};
  });
  std::vector<std::string> parts;
  const auto stopped = [](const std::string& p) { return !p.empty() && p[0] == models::kPlanStopped; };
  do parts = world.all_gather(stop);
  while (!std::all_of(parts.begin(), parts.end(), stopped));
  return finish_on_rank_0(world, [&] {
    for (std::string& p : parts) p.erase(0, 1);
    models::decode_parts(std::move(parts), "rank");  // throws the first failure: this rank's own, else another's, named
    if (world.rank() == 0) print_plan(a, *result, fmt::format(" by {} MPI ranks", world.size()));
  });
}

int cmd_plan(PlanArgs a) {
  std::optional<MpiWorld> world;
  try {
    world.emplace(mpi_launch_from_env());
  } catch (const MpiWorld::Quiet& q) {
    return q.status;  // rank 0 prints the message
  }
  if (world->joined()) return cmd_plan_mpi(a, *world);
  print_plan(a, run_plan(a, {}), "");
  return 0;
}

}  // namespace

void add_plan_command(CLI::App& app, Action& action) {
  auto a = std::make_shared<PlanArgs>();
  auto* cmd = app.add_subcommand("plan", "the fastest configuration that fits: every strategy, tp, pp, cp, ep, micro-batch, "
                                         "recomputation, offload and the best plans' knobs, pruned by bounds, the rest simulated");
  cmd->add_option("scenario", a->query.scenario,
                  "a scenario to plan: its model, hardware, cluster, batch and every other setting are kept, its "
                  "parallelism, micro-batch, accumulation and recomputation searched (optional: the flags below "
                  "give a query alone, and override the scenario)");
  cmd->add_option("--set", a->query.overrides, "PATH=VALUE override applied to the scenario first (repeatable)");
  cmd->add_option("--model", a->query.model, "model: catalog name or file (required without a scenario)");
  cmd->add_option("--hardware", a->query.hardware, "hardware profile: name or file (required without a scenario)");
  cmd->add_option("--gpus", a->query.gpus, "GPUs in all (default: the scenario's cluster)");
  cmd->add_option("--gpus-per-node", a->query.gpus_per_node, "GPUs per node (default: the scenario's, else the profile's)");
  cmd->add_option("--global-batch-tokens", a->global_batch_tokens,
                  "tokens per optimizer step, e.g. 4Mi (= 4194304; 4M is 4,000,000) (default: the scenario's "
                  "dp x micro_batch_size x seq_len x grad_accum)");
  cmd->add_option("--seq-len", a->query.seq_len, "tokens per sequence (default: the scenario's, else 4096)");
  cmd->add_option("--top", a->query.top, "plans to print (default 5)");
  cmd->add_option("-j,--threads", a->query.threads,
                  "simulation threads (default: all cores); under mpirun / srun each rank runs its share of "
                  "every batch of simulations with its threads");
  cmd->add_option("--format", a->format, "output format")->check(CLI::IsMember({"text", "json"}));
  cmd->add_flag("--explain", a->explain, "why each strategy family lost");
  cmd->add_flag("--timing", a->timing, "print the search's speed on stderr");
  cmd->callback([a, &action, cmd] {
    a->gpus_given = cmd->count("--gpus") > 0;
    a->seq_len_given = cmd->count("--seq-len") > 0;
    action = [a] { return cmd_plan(*a); };
  });
}

}  // namespace stepsim::tools
