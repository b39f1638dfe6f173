// SPDX-License-Identifier: Apache-2.0
// `stepsim plan` (issue 17 items 4-5): the seeds' FAQ as tests (seed 002's last section: "a 30B
// model, 8 x A100 80 GB — how would you train it?"; "ZeRO-Offload is for when communication is
// not the bottleneck"), the bounds it prunes by, and the search's consistency.
#include "models/plan.hpp"
#include "sim/support/error.hpp"
#include "tests/support/catch.hpp"

#include <set>

using namespace stepsim;
using namespace stepsim::models;
using Catch::Matchers::Contains;

namespace {

PlanQuery query(const std::string& model, const std::string& hardware, std::int64_t gpus, double tokens) {
  PlanQuery q;
  q.model = model;
  q.hardware = hardware;
  q.gpus = gpus;
  q.global_batch_tokens = tokens;
  q.seq_len = 4096;
  q.top = 3;
  return q;
}

// The bounds the search pruned by hold against the simulation of a plan it kept.
void check_bounds(const Plan& p) {
  CAPTURE(p.label());
  CHECK(p.memory_lower_bound_bytes <= p.memory_bytes * (1 + 1e-9));
  CHECK(p.time_lower_bound_s <= p.step_time_s * (1 + 1e-9));
}

}  // namespace

TEST_CASE("plan: a 30B-class model on 8 x A100 80 GB shards everything and recomputes or offloads (seed FAQ)",
          "[models][plan][figure]") {
  const PlanResult r = plan(query("qwen2.5-32b", "a100-sxm", 8, 1 << 20));
  REQUIRE_FALSE(r.plans.empty());
  for (const Plan& p : r.plans) {
    CAPTURE(p.label());
    // Parameters, gradients and optimizer state sharded (ZeRO-3 / FSDP FULL_SHARD), and the
    // activations recomputed or the states offloaded: nothing else fits.
    CHECK((p.strategy == "zero3" || p.strategy == "fsdp" || p.strategy == "hsdp"));
    CHECK((p.recompute != "none" || p.offload != "none"));
    CHECK(p.memory_bytes <= p.capacity_bytes);
    check_bounds(p);
  }
  // "Not DDP: 480 GB of state" — 16 B per parameter on every GPU (here 32.8B parameters: 524 GB).
  CHECK_THAT(r.why, Contains("DDP is out") && Contains("524 GB") && Contains("16 B"));
  bool ddp_out = false;
  for (const auto& f : r.families)
    if (f.name == "ddp") ddp_out = f.reason.find("no configuration fits") != std::string::npos;
  CHECK(ddp_out);
  CHECK(r.configurations > 1000);
  CHECK(r.pruned_by_memory > 0);
}

TEST_CASE("plan: a model too large for GPU memory without offload chooses offload, and shows its PCIe time",
          "[models][plan][figure]") {
  // Qwen2.5-72B on 8 x A100 80 GB: ZeRO-3 alone needs 16 B x 72.7B / 8 = 145 GB per GPU.
  PlanQuery q = query("qwen2.5-72b", "a100-sxm", 8, 1 << 18);
  q.top = 2;
  const PlanResult r = plan(q);
  REQUIRE_FALSE(r.plans.empty());
  for (const Plan& p : r.plans) {
    CHECK(p.offload == "cpu");
    CHECK(p.exposed_offload_s > 0);
  }
  CHECK_THAT(plan_text(r, false), Contains("offload_optimizer cpu pinned"));
}

TEST_CASE("plan: the bounds only prune what cannot win, and the answer does not depend on threads", "[models][plan]") {
  PlanQuery q = query("llama3.2-1b", "h100-sxm", 8, 1 << 19);
  q.top = 1;
  q.threads = 1;
  const PlanResult one = plan(q);
  q.top = 40;
  const PlanResult many = plan(q);
  REQUIRE_FALSE(one.plans.empty());
  REQUIRE(many.plans.size() >= 2);
  // Simulating more never finds a faster plan than the pruned search's best.
  CHECK(many.plans.front().label() == one.plans.front().label());
  CHECK(many.plans.front().step_time_s == one.plans.front().step_time_s);
  for (std::size_t i = 1; i < many.plans.size(); ++i) CHECK(many.plans[i].step_time_s >= many.plans[i - 1].step_time_s);
  CHECK(many.simulated > one.simulated);
  // Same query, same bytes, whatever the thread count.
  q.top = 3;
  q.threads = 1;
  const std::string a = plan_json(plan(q));
  q.threads = 2;
  CHECK(plan_json(plan(q)) == a);
}

TEST_CASE("plan: the time bound holds for every plan simulated whole, pipelines and their bubble included",
          "[models][plan]") {
  // The best 200 plans, simulated whole (all 1,029 configurations with top 1000, checked once,
  // hold too; the memory bound failed there for 132 of them while it counted one layer's
  // recomputation on top of every layer's kept activations): the pipeline bound
  // T(0) + ... + T(k-1) + ga·T(k) over the stages is below each simulated step, and tighter
  // than ga/pp of the model's compute alone by the bubble.
  PlanQuery q = query("llama3.2-1b", "h100-sxm", 8, 1 << 18);
  q.top = 200;
  const PlanResult r = plan(q);
  std::int64_t pipelines = 0;
  for (const Plan& p : r.plans) {
    CAPTURE(p.label());
    check_bounds(p);
    if (p.pp > 1) {
      ++pipelines;
      // Within 35 % of the simulated step (it leaves out communication and the optimizer).
      CHECK(p.time_lower_bound_s >= 0.65 * p.step_time_s);
    }
  }
  CHECK(pipelines >= 10);
  CHECK(r.plans.size() == 200);
}

TEST_CASE("plan: a scenario with its parallelism left open keeps everything else, and its own batch by default",
          "[models][plan]") {
  const std::string source = std::string(STEPSIM_SOURCE_DIR) + "/configs/examples/default.json";
  // default.json: Llama-3.2-1B, DDP over 64 H100, micro-batch 1 of 8192 tokens, no accumulation.
  PlanQuery from_scenario;
  from_scenario.scenario = source;
  from_scenario.top = 2;
  const PlanResult a = plan(from_scenario);
  CHECK(a.query.gpus == 64);
  CHECK(a.query.global_batch_tokens == 64.0 * 8192);
  CHECK(a.query.seq_len == 8192);
  CHECK(a.query.model == "llama3.2-1b");
  PlanQuery flags = query("llama3.2-1b", "h100-sxm", 64, 64.0 * 8192);
  flags.seq_len = 8192;
  flags.top = 2;
  const PlanResult b = plan(flags);
  REQUIRE_FALSE(a.plans.empty());
  REQUIRE_FALSE(b.plans.empty());
  CHECK(a.plans.front().label() == b.plans.front().label());
  CHECK(a.plans.front().step_time_s == b.plans.front().step_time_s);
  CHECK_THAT(plan_text(a, false), Contains("the rest as " + source));
  // The best plans' strategy knobs are tuned: FSDP / HSDP keeping a 1B model's units gathered
  // through backward (reshard_after_forward false) saves the second AllGather of each.
  PlanQuery five = from_scenario;
  five.top = 5;
  const PlanResult tuned = plan(five);
  REQUIRE_FALSE(tuned.plans.front().knobs.empty());
  CHECK(tuned.plans.front().knobs.front() == "reshard_after_forward=false");
  CHECK_THAT(plan_json(tuned), Contains("\"reshard_after_forward\\\":false"));
  bool base_listed = false;
  for (const Plan& p : tuned.plans)
    if (p.knobs.empty() && p.strategy == tuned.plans.front().strategy &&
        p.shard_group_size == tuned.plans.front().shard_group_size && p.micro_batch_size == tuned.plans.front().micro_batch_size) {
      base_listed = true;
      CHECK(p.step_time_s > tuned.plans.front().step_time_s);
    }
  CHECK(base_listed);

  // Its other settings are kept: an optimizer with no state (SGD without momentum keeps none)
  // lets plain DDP hold more than Adam does; flags and --set override the scenario.
  PlanQuery sgd = from_scenario;
  sgd.overrides = {"optimizer=\"sgd\"", "batch.seq_len=2048"};
  sgd.global_batch_tokens = 1 << 20;
  const PlanResult c = plan(sgd);
  CHECK(c.query.seq_len == 2048);
  CHECK(c.query.global_batch_tokens == 1 << 20);
  CHECK(c.parameters == a.parameters);

  // A per_rank variation of the scenario (a slow last rank) is the job's: the references that
  // price one rank's layers leave it out, the candidates keep it (their step is the slow rank's).
  PlanQuery slow = from_scenario;
  slow.overrides = {"sim.rank_mode=\"per_rank\"", "sim.slow_ranks=[{\"rank\":63,\"compute_factor\":1.5}]"};
  const PlanResult d = plan(slow);
  REQUIRE_FALSE(d.plans.empty());
  CHECK(d.not_searched.empty());
  CHECK(d.plans.front().step_time_s > 1.4 * a.plans.front().step_time_s);
  // A convolutional network's scenario: its sequence length is the model's (1), its batch in images.
  PlanQuery cnn;
  cnn.scenario = std::string(STEPSIM_SOURCE_DIR) + "/configs/examples/resnet50-ddp-16xv100.json";
  cnn.top = 1;
  const PlanResult e = plan(cnn);
  CHECK(e.query.seq_len == 1);
  CHECK(e.sample_unit == "images");
  CHECK_THAT(plan_text(e, false), Contains("images/s"));

  // A full state dict saved every 50 steps: each plan is ranked with its amortised save, and
  // ZeRO-3, which DeepSpeed saves sharded only, is refused by that rule, the family saying so.
  PlanQuery saved = from_scenario;
  saved.overrides = {"checkpoint={\"interval\":50,\"format\":\"full\"}"};
  saved.top = 3;
  const PlanResult f = plan(saved);
  REQUIRE_FALSE(f.plans.empty());
  CHECK(f.plans.front().checkpoint_s > 0);
  CHECK(f.plans.front().time_per_step_s() == f.plans.front().step_time_s + f.plans.front().checkpoint_s);
  CHECK_THAT(f.why, Contains("checkpoint saves add"));
  bool zero3_refused = false;
  for (const auto& fam : f.families)
    if (fam.name == "zero3") zero3_refused = fam.reason.find("refused") != std::string::npos &&
                                             fam.reason.find("expected \"sharded\"") != std::string::npos;
  CHECK(zero3_refused);
  REQUIRE_FALSE(f.refused_rules.empty());
  CHECK_THAT(plan_text(f, false), Contains("refused by the scenario's rules when loaded"));

  // What it lacks, the flags must give.
  PlanQuery open;
  open.scenario = source;
  open.overrides = {"parallelism=null"};
  CHECK_THROWS_WITH(plan(open), Contains("--gpus") && Contains("required"));
  open.gpus = 16;
  CHECK_THROWS_WITH(plan(open), Contains("--global-batch-tokens") && Contains("required"));
  open.global_batch_tokens = 1 << 20;
  CHECK(plan(open).query.gpus == 16);
  PlanQuery stray = flags;
  stray.overrides = {"optimizer=\"sgd\""};
  CHECK_THROWS_WITH(plan(stray), Contains("--set") && Contains("give the scenario"));
}

TEST_CASE("plan: a scenario whose precision needs FSDP2 (float8 all-gather) is planned, its rule refusing the rest",
          "[models][plan]") {
  // torchtitan's enable_fsdp_float8_all_gather: only FSDP2 (fsdp, hsdp) may run it, and
  // default.json is a DDP scenario. The search used to probe the model with DDP and refuse the
  // whole query.
  PlanQuery q;
  q.scenario = std::string(STEPSIM_SOURCE_DIR) + "/configs/examples/default.json";
  q.overrides = {"precision.float8=tensorwise", "precision.float8_all_gather=true"};
  q.gpus = 16;
  q.top = 3;
  const PlanResult r = plan(q);
  REQUIRE(r.plans.size() == 3);
  for (const Plan& p : r.plans) {
    CAPTURE(p.label());
    CHECK((p.strategy == "fsdp" || p.strategy == "hsdp"));
    check_bounds(p);
  }
  REQUIRE_FALSE(r.refused_rules.empty());
  CHECK_THAT(r.refused_rules.front().reason, Contains("expected strategy fsdp or hsdp"));
  // DDP is out by that rule, not by its model state (20 GB of 84 GB usable).
  CHECK_THAT(r.why, Contains("DDP is out: ") && Contains("refused") && !Contains("whole model state"));
}

TEST_CASE("plan: long sequences are split by context parallelism, mixtures of experts by expert parallelism",
          "[models][plan]") {
  // Llama-3-8B at 32k tokens per sequence on one H100 node: one sequence's activations do not
  // fit a GPU without recomputing or splitting it; the fastest splits it over CP ranks.
  PlanQuery longseq = query("llama3-8b", "h100-sxm", 8, 1 << 20);
  longseq.seq_len = 32768;
  const PlanResult a = plan(longseq);
  REQUIRE_FALSE(a.plans.empty());
  CHECK(a.plans.front().cp > 1);
  CHECK(a.plans.front().dp * a.plans.front().cp * a.plans.front().tp * a.plans.front().pp == 8);
  CHECK_THAT(plan_json(a), Contains("\"cp\": " + std::to_string(a.plans.front().cp)));
  for (const Plan& p : a.plans) check_bounds(p);
  // Mixtral 8x7B on 16 H100: its experts spread over EP ranks in every plan kept; tensor
  // parallelism of a mixture of experts is not modelled, so those configurations are not
  // searched, and the answer says so once.
  const PlanResult b = plan(query("mixtral-8x7b", "h100-sxm", 16, 1 << 20));
  REQUIRE_FALSE(b.plans.empty());
  for (const Plan& p : b.plans) {
    CAPTURE(p.label());
    CHECK(p.ep > 1);
    CHECK(p.tp == 1);
    check_bounds(p);
  }
  REQUIRE(b.not_searched.size() == 1);
  CHECK(b.not_searched.front().configurations > 100);
  CHECK_THAT(b.not_searched.front().reason, Contains("tensor parallelism"));
  CHECK_THAT(plan_text(b, false), Contains("not searched, the scenario's rules refuse them"));
}

TEST_CASE("plan: without a sequence length, a model with learned positions runs at its table's length",
          "[models][plan]") {
  // GPT-2's wpe holds 1,024 positions (config.json n_positions); the default 4,096 cannot run.
  PlanQuery q = query("gpt2", "h100-sxm", 8, 1 << 17);
  q.seq_len = 0;
  q.top = 1;
  const PlanResult r = plan(q);
  CHECK(r.query.seq_len == 1024);
  REQUIRE(r.plans.size() == 1);
  CHECK(r.plans.front().tokens_per_s > 0);
}

TEST_CASE("plan: refuses queries it cannot answer, naming the flag", "[models][plan]") {
  CHECK_THROWS_WITH(plan(query("llama3.2-1b", "h100-sxm", 12, 1 << 19)), Contains("no whole number of nodes of 8"));
  CHECK_THROWS_WITH(plan(query("llama3.2-1b", "h100-sxm", 8, 1000)),
                    Contains("no configuration makes a global batch of 1000 tokens"));
  CHECK_THROWS_WITH(plan(query("llama3.2-1b", "h100-sxm", 0, 1 << 19)), Contains("--gpus"));
  CHECK_THROWS_WITH(plan(query("no-such-model", "h100-sxm", 8, 1 << 19)), Contains("no-such-model"));
}
