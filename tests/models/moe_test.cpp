// SPDX-License-Identifier: Apache-2.0
// Mixture of experts (issue 16 items 2-3): routed experts as grouped GEMMs on the tokens the
// router sends them, the active experts' FLOPs only, and the MoE layer's routing kernels.
#include "models/queries_json.hpp"
#include "models/report.hpp"
#include "models/scenario.hpp"
#include "models/strategy/compute_tasks.hpp"
#include "models/strategy/strategy.hpp"
#include "sim/support/error.hpp"
#include "tests/support/catch.hpp"

#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>

using namespace stepsim;
using namespace stepsim::models;
using Catch::Matchers::Contains;

namespace {

Scenario scenario(const std::string& text) { return parse_scenario(nlohmann::json::parse(text), "test.json"); }

// Mixtral-8x7B's shape (models/catalog/mixtral-8x7b.json) with `topk` experts per token, FSDP on
// one H100 node, 4096 tokens per GPU.
Scenario mixtral(int topk, const std::string& parallelism = "") {
  return scenario(fmt::format(R"({{"model": {{"hf_config": {{"model_type": "mixtral", "num_experts_per_tok": {}}}}},
    "hardware": "h100-sxm", "parallelism": {{"strategy": "fsdp", "dp": 8{}}},
    "batch": {{"micro_batch_size": 1, "seq_len": 4096}},
    "activations": {{"attention": "flash", "recompute": "full"}}}})",
                              topk, parallelism));
}

}  // namespace

TEST_CASE("moe: model FLOPs count the active experts only", "[models][moe]") {
  const Report two = run(mixtral(2)), eight = run(mixtral(8));
  // Six more experts per token: each 3·4096·14336 weights on every token of 32 blocks, at the
  // 6·Ψ·tokens convention (2 forward + 4 backward FLOPs per weight and token).
  const double expert = 3.0 * 4096 * 14336;
  CHECK(eight.model_flops_per_gpu - two.model_flops_per_gpu == Approx(6.0 * 4096 * 32 * 6 * expert).epsilon(1e-9));
  // The active experts' FLOPs are the dense-equivalent model's: 12.9 B active, not 46.7 B.
  CHECK(two.model_flops_per_gpu < 0.35 * 6.0 * 46.7e9 * 4096);
  CHECK(eight.step_time_s > two.step_time_s);
}

TEST_CASE("moe: the routed experts run as one grouped GEMM each on top-k / E of the tokens", "[models][moe]") {
  const Scenario s = mixtral(2);
  const hardware::GemmList fwd = layer_gemms(s, 1, false);
  int grouped = 0;
  for (const auto& g : fwd) {
    if (g.shape.batch != 8) continue;
    ++grouped;
    CHECK(g.shape.m == 4096.0 * 2 / 8);  // each expert's share of the routed copies
    CHECK((g.shape.n == 14336 || g.shape.n == 4096));
  }
  CHECK(grouped == 3);  // w1, w3 and w2 of the 8 experts
  // The router: a Linear of 8 outputs on every token.
  bool router = false;
  for (const auto& g : fwd) router = router || (g.shape.batch == 1 && g.shape.m == 4096 && g.shape.n == 8);
  CHECK(router);
  // Backward: data and weight gradients of each grouped GEMM, batched the same way.
  int grouped_bwd = 0;
  for (const auto& g : layer_gemms(s, 1, true)) grouped_bwd += g.shape.batch == 8;
  CHECK(grouped_bwd == 3 * 3);  // the recomputed forward (full recomputation), data and weight gradients
}

TEST_CASE("moe: a mixture of experts is comm-bound later by its FLOPs per token (the seeds' E/k)", "[models][moe]") {
  // The threshold of seed 000 §7.3 scales by 6·Ψ over the FLOPs a token costs: about E/k when the
  // experts dominate Ψ.
  const Report two = run(mixtral(2)), eight = run(mixtral(8));
  const double ratio = two.comm_bound_threshold_tokens_per_gpu / eight.comm_bound_threshold_tokens_per_gpu;
  CHECK(ratio == Approx(eight.model_flops_per_gpu / two.model_flops_per_gpu).epsilon(1e-9));
  CHECK(ratio > 3);
  CHECK(ratio < 4);  // E/k = 4 for the experts; attention and embeddings are shared
}

namespace {

std::int64_t count_of(const Report& r, const std::string& group, const std::string& op, double bytes) {
  std::int64_t n = 0;
  for (const auto& c : r.collectives)
    if (c.group == group && c.op == op && c.bytes == bytes) n += c.count;
  return n;
}

double bytes_of(const Report& r, const std::string& group, const std::string& op) {
  double b = 0;
  for (const auto& c : r.collectives)
    if (c.group == group && c.op == op) b += c.bytes * static_cast<double>(c.count);
  return b;
}

// Mixtral-8x7B: 32 MoE blocks of 8 experts of 3 · 4096 · 14336 weights.
constexpr double kExpertWeights = 3.0 * 4096 * 14336;

}  // namespace

TEST_CASE("moe: expert parallelism holds experts / ep and moves the tokens by all-to-all", "[models][moe][ep]") {
  const Scenario s = mixtral(2, R"(, "ep": 4)");
  // One rank's model: 2 of the 8 experts per block; the router still scores all 8.
  const double full = 46'702'792'704.0;
  CHECK(static_cast<double>(s.model.parameter_count()) == full - 32 * 6 * kExpertWeights);
  CHECK(s.model.layers[1].params[4].numel == 8 * 4096);
  // The grouped GEMMs: 2 experts, each on the copies 4 ranks send it: 4096 · 2 · 4 / 8.
  int grouped = 0;
  for (const auto& g : layer_gemms(s, 1, false))
    if (g.shape.batch == 2) {
      ++grouped;
      CHECK(g.shape.m == 4096.0 * 2 * 4 / 8);
    }
  CHECK(grouped == 3);
  const Report r = run(s);
  // Per MoE block and micro-batch: the token counts (8 int64), dispatch and combine of
  // 4096 tokens · top-2 · 4096 wide in bf16; full recomputation re-runs those three in backward,
  // which adds the combine's and the dispatch's gradients.
  const double copies = 4096.0 * 2 * 4096 * 2;
  CHECK(count_of(r, "ep", "AllToAll", copies) == 32 * (2 + 2 + 2));
  CHECK(count_of(r, "ep", "AllToAll", 64) == 32 * 2);
  CHECK(r.ep_comm_time_s > 0);
  CHECK(r.ep_exposed_comm_s > 0);  // on the compute stream: nothing hides it
  CHECK(r.ep_exposed_comm_s <= r.ep_comm_time_s);
  // Same FLOPs per GPU as without EP: the tokens move, the work does not.
  const Report none = run(mixtral(2));
  CHECK(r.model_flops_per_gpu == Approx(none.model_flops_per_gpu).epsilon(1e-12));
}

TEST_CASE("moe: FSDP shards the experts over dp / ep and gathers them over that group", "[models][moe][ep]") {
  const Report none = run(mixtral(2)), ep = run(mixtral(2, R"(, "ep": 4)"));
  // Every tensor is still split over the 8 ranks: the experts 4 ways by EP times 2 by FSDP.
  CHECK(ep.memory.params_bytes == Approx(none.memory.params_bytes).epsilon(1e-12));
  CHECK(ep.memory.optimizer_bytes == Approx(none.memory.optimizer_bytes).epsilon(1e-12));
  // The routed experts' gathers run over 8 / 4 = 2 ranks, each unit's 2 local experts in bf16;
  // the dense tensors' over all 8.
  const double local_experts = 2 * kExpertWeights * 2;
  CHECK(count_of(ep, "edp", "AllGather", local_experts) == 32 * 2);
  CHECK(count_of(ep, "edp", "ReduceScatter", local_experts) == 32);
  for (const auto& c : ep.collectives)
    if (c.group == "edp") CHECK(c.ranks == 2);
  CHECK(bytes_of(none, "edp", "AllGather") == 0);
}

TEST_CASE("moe: DDP reduces the experts' gradients in buckets of their own over dp / ep", "[models][moe][ep]") {
  const Scenario s = scenario(R"({"model": {"hf_config": {"model_type": "mixtral", "num_hidden_layers": 2,
    "hidden_size": 1024, "intermediate_size": 2048, "num_attention_heads": 8, "num_key_value_heads": 8,
    "vocab_size": 32000}}, "hardware": "h100-sxm", "parallelism": {"strategy": "ddp", "dp": 8, "ep": 4},
    "batch": {"micro_batch_size": 1, "seq_len": 2048}})");
  const Report r = run(s);
  // The local experts' bf16 gradients (2 blocks × 2 experts × 3 · 1024 · 2048) go over the
  // expert-data-parallel group of 2, everything else over the 8 DP ranks.
  CHECK(bytes_of(r, "edp", "AllReduce") == 2.0 * 2 * 3 * 1024 * 2048 * 2);
  const double dense = static_cast<double>(s.model.parameter_count()) * 2 - bytes_of(r, "edp", "AllReduce");
  CHECK(bytes_of(r, "dp", "AllReduce") == Approx(dense).epsilon(1e-12));
  for (const auto& c : r.collectives)
    if (c.group == "edp") CHECK(c.ranks == 2);
  // ep = dp: each expert lives on one rank, and nothing reduces its gradients.
  const Report alone = run(scenario(R"({"model": {"hf_config": {"model_type": "mixtral", "num_hidden_layers": 2,
    "hidden_size": 1024, "intermediate_size": 2048, "num_attention_heads": 8, "num_key_value_heads": 8,
    "vocab_size": 32000}}, "hardware": "h100-sxm", "parallelism": {"strategy": "ddp", "dp": 8, "ep": 8},
    "batch": {"micro_batch_size": 1, "seq_len": 2048}})"));
  CHECK(bytes_of(alone, "edp", "AllReduce") == 0);
}

TEST_CASE("moe: expert parallelism's refusals name the rule", "[models][moe][ep]") {
  const auto error = [](const std::string& extra, const std::string& strategy = "fsdp") {
    try {
      scenario(fmt::format(R"({{"model": "mixtral-8x7b", "hardware": "h100-sxm",
        "parallelism": {{"strategy": "{}", "dp": 8{}}}, "batch": {{"micro_batch_size": 1, "seq_len": 1024}}}})",
                           strategy, extra));
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK_THAT(error(R"(, "ep": 3)"), Contains("/parallelism/ep: 3: model 'mixtral-8x7b' has 8 routed experts"));
  CHECK_THAT(error(R"(, "ep": 16)"), Contains("/parallelism/ep: 16: model 'mixtral-8x7b' has 8 routed experts"));
  // hsdp keeps an EP group inside a shard group (torchtitan's dp_shard_in_ep).
  CHECK_THAT(error(R"(, "ep": 8, "shard_group_size": 4)", "hsdp"),
             Contains("/parallelism/ep: 8: under hsdp an EP group lies inside one shard group"));
  for (const char* strategy : {"zero1", "zero2", "zero3", "hsdp"}) CHECK(error(R"(, "ep": 2)", strategy).empty());
  CHECK_THAT(error(R"(, "ep": 2, "tp": 2)"), Contains("tensor parallelism of such a model is not modelled yet"));
  CHECK(error(R"(, "ep": 8)").empty());
}

TEST_CASE("moe: uneven routing makes every all-to-all wait for the busiest rank (per_rank)", "[models][moe][ep]") {
  const auto load = [](const std::string& expert_load) {
    return run(scenario(fmt::format(R"({{"model": {{"hf_config": {{"model_type": "mixtral", "num_hidden_layers": 4}}}},
      "hardware": "h100-sxm", "parallelism": {{"strategy": "fsdp", "dp": 16, "ep": 8}},
      "batch": {{"micro_batch_size": 1, "seq_len": 4096}}, "activations": {{"attention": "flash", "recompute": "full"}},
      "sim": {{"rank_mode": "per_rank"{}}}}})",
                                    expert_load)));
  };
  const Report balanced = load(""), skewed = load(R"(, "expert_load": {"cv": 0.2, "seed": 7})");
  const Report capped = load(R"(, "expert_load": {"cv": 0.2, "seed": 7, "capacity_factor": 1.1})");
  CHECK(balanced.per_rank.straggler_cost_s == 0);
  CHECK(balanced.per_rank.moe_layers == 0);
  // The busiest of 16 ranks draws about 1 + 0.2 · 1.8 (the expected maximum of 16 normals).
  CHECK(skewed.per_rank.moe_layers == 4);
  CHECK(skewed.per_rank.expert_load_busiest > 1.2);
  CHECK(skewed.per_rank.expert_load_busiest < 1.6);
  CHECK(skewed.step_time_s > balanced.step_time_s * 1.05);
  // Every rank waits at the all-to-alls: they end the step together.
  CHECK(skewed.per_rank.spread_s < 1e-3 * skewed.step_time_s);
  // Dropping tokens beyond 1.1x the share caps the busiest rank's work, and with it the wait.
  CHECK(capped.per_rank.expert_load_busiest <= 1.1);
  CHECK(skewed.per_rank.dropped_token_fraction == 0);  // dropless without a capacity factor
  CHECK(capped.per_rank.dropped_token_fraction > 0);
  CHECK(capped.per_rank.dropped_token_fraction < 0.1);  // E[max(0, 0.2·z − 0.1)] ≈ 5 % of the tokens
  CHECK(capped.step_time_s < skewed.step_time_s);
  CHECK(capped.step_time_s > balanced.step_time_s);
  // Same seed, same step; another seed, another draw.
  CHECK(load(R"(, "expert_load": {"cv": 0.2, "seed": 7})").step_time_s == skewed.step_time_s);
  CHECK(load(R"(, "expert_load": {"cv": 0.2, "seed": 8})").step_time_s != skewed.step_time_s);
}

TEST_CASE("moe: sim.expert_load needs per_rank mode and expert parallelism", "[models][moe][ep]") {
  const auto error = [](const std::string& parallelism, const std::string& sim) {
    try {
      scenario(fmt::format(R"({{"model": "mixtral-8x7b", "hardware": "h100-sxm",
        "parallelism": {{"strategy": "fsdp", "dp": 8{}}}, "batch": {{"micro_batch_size": 1, "seq_len": 1024}},
        "sim": {}}})",
                           parallelism, sim));
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK_THAT(error("", R"({"rank_mode": "per_rank", "expert_load": {"cv": 0.2}})"),
             Contains("/sim/expert_load: needs expert parallelism"));
  CHECK_THAT(error(R"(, "ep": 8)", R"({"expert_load": {"cv": 0.2}})"),
             Contains("/sim/expert_load: per-rank variation needs \"rank_mode\": \"per_rank\""));
  CHECK_THAT(error(R"(, "ep": 8)", R"({"rank_mode": "per_rank", "expert_load": {"cv": 0.2, "capacity_factor": 0.5}})"),
             Contains("/sim/expert_load/capacity_factor: expected a factor in [1, 64]"));
  CHECK_THAT(error(R"(, "ep": 8)", R"({"rank_mode": "per_rank", "expert_load": {"cv": 0.9}})"),
             Contains("/sim/expert_load/cv: expected a coefficient of variation in (0, 0.5]"));
  CHECK_THAT(error(R"(, "ep": 8)", R"({"rank_mode": "per_rank", "expert_load": {"cv": 0}})"),
             Contains("/sim/expert_load/cv: expected a coefficient of variation in (0, 0.5]"));
  CHECK(error(R"(, "ep": 8)", R"({"rank_mode": "per_rank", "expert_load": {"cv": 0.2}})").empty());
}

// Rank 0's own draws are its tasks' time alone, not contention (found by a hostile trial: its
// expert load showed as overlap slowdown, negative when its share was light).
TEST_CASE("moe: rank 0's expert load is not counted as contention (per_rank)", "[models][moe][ep]") {
  for (const char* load : {R"({"cv": 0.5, "seed": 3})", R"({"cv": 0.5, "seed": 3, "capacity_factor": 1})"}) {
    INFO(load);
    const Report r = run(scenario(fmt::format(R"({{"model": {{"hf_config": {{"model_type": "mixtral",
      "num_hidden_layers": 2, "hidden_size": 1024, "intermediate_size": 2048, "num_attention_heads": 8,
      "num_key_value_heads": 8, "vocab_size": 32000}}}}, "hardware": "h100-sxm",
      "parallelism": {{"strategy": "zero1", "dp": 16, "ep": 8}}, "batch": {{"micro_batch_size": 1, "seq_len": 2048}},
      "sim": {{"rank_mode": "per_rank", "overlap_model": "off", "expert_load": {}}}}})",
                                              load)));
    REQUIRE(r.per_rank.moe_layers == 2);
    CHECK(r.overlap_slowdown_s >= 0);
    CHECK(r.overlap_slowdown_s < 1e-9);  // no overlap model: nothing slows compute
  }
}

// On the compute stream a layer's backward starts with its all-to-alls (under full
// recomputation the re-run forward's, then the combine's gradient, the dispatch's), and the
// layer's gradients are reduced only after its last segment: no reduction can overtake them.
TEST_CASE("moe: a layer's backward all-to-alls come before its gradients and their reduction", "[models][moe][ep]") {
  for (const char* strategy : {"fsdp", "ddp"}) {
    INFO(strategy);
    const Scenario s = scenario(fmt::format(R"({{"model": {{"hf_config": {{"model_type": "mixtral", "num_hidden_layers": 2,
      "hidden_size": 1024, "intermediate_size": 2048, "num_attention_heads": 8, "num_key_value_heads": 8,
      "vocab_size": 32000}}}}, "hardware": "h100-sxm", "parallelism": {{"strategy": "{}", "dp": 8, "ep": 4}},
      "batch": {{"micro_batch_size": 1, "seq_len": 2048}}}})",
                                            strategy));
    const LoweredStep step = lower_step(s);
    const sim::TaskGraph& g = step.graph;
    sim::TaskId dispatch = sim::kNoTask, first_grad = sim::kNoTask, first_reduction = sim::kNoTask;
    for (sim::TaskId v = 0; v < g.size(); ++v) {
      const std::string& n = g.task(v).name;
      if (n == "ep.bwd.layers.1.dispatch") dispatch = v;
      if (first_grad == sim::kNoTask && n.rfind("bwd.layers.1.", 0) == 0) first_grad = v;
      // The experts' gradient reductions (FSDP's experts ReduceScatter, DDP's expert buckets).
      if (first_reduction == sim::kNoTask &&
          ((n.rfind("reducescatter.", 0) == 0 && n.find(".experts") != std::string::npos) ||
           n.rfind("allreduce.expert_bucket", 0) == 0))
        first_reduction = v;
    }
    REQUIRE(dispatch != sim::kNoTask);
    REQUIRE(first_grad != sim::kNoTask);
    REQUIRE(first_reduction != sim::kNoTask);
    CHECK(g.task(dispatch).stream == g.task(first_grad).stream);
    CHECK(dispatch < first_grad);  // stream order is issue order
    CHECK(dispatch < first_reduction);
  }
}

// ep = dp: each rank holds whole experts nobody else holds: FSDP neither gathers nor reduces
// them (found by a hostile trial: they were gathered over the whole DP group).
TEST_CASE("moe: with ep = dp x cp the experts stay whole on their rank", "[models][moe][ep]") {
  const Report four = run(mixtral(2, R"(, "ep": 4)")), eight = run(mixtral(2, R"(, "ep": 8)"));
  CHECK(bytes_of(eight, "edp", "AllGather") == 0);
  CHECK(bytes_of(eight, "dp", "AllGather") == bytes_of(four, "dp", "AllGather"));  // the dense tensors only
  CHECK(bytes_of(eight, "dp", "ReduceScatter") == bytes_of(four, "dp", "ReduceScatter"));
  // Model state per GPU: one expert of 8 per block, whole, plus the dense tensors over 8 ranks.
  CHECK(eight.memory.params_bytes == Approx(four.memory.params_bytes).epsilon(1e-12));
}

// stepsim memory on an EP scenario agrees with run's model state (found by both trials: it
// sharded the per-EP-rank count a second time).
TEST_CASE("moe: stepsim memory under EP gives run's model state", "[models][moe][ep]") {
  const std::string text = R"({"model": "mixtral-8x7b", "hardware": "h100-sxm", "parallelism": {"strategy": "fsdp",
    "dp": 8, "ep": 4}, "batch": {"micro_batch_size": 1, "seq_len": 4096},
    "activations": {"attention": "flash", "recompute": "full"}})";
  MemoryQuery q;
  q.scenario = "test.json";
  q.scenario_doc = nlohmann::json::parse(text);
  const QueryAnswer a = memory_query(q);
  const Report r = run(scenario(text));
  const double states = r.memory.params_bytes + r.memory.grads_bytes + r.memory.optimizer_bytes;
  CHECK(a.json.at("fsdp").at("total_bytes").get<double>() == Approx(states).epsilon(1e-9));
  CHECK(a.json.at("ep") == 4);
  CHECK(a.json.at("ddp").at("params_bytes").get<double>() == Approx(2.0 * static_cast<double>(r.scenario.model.parameter_count())));
  // Every row is run's model state under that strategy (hsdp's shard group: a node of 8).
  for (const char* strategy : {"ddp", "zero1", "zero2", "zero3", "hsdp"}) {
    INFO(strategy);
    nlohmann::json doc = nlohmann::json::parse(text);
    doc["parallelism"]["strategy"] = strategy;
    const Report rs = run(parse_scenario(doc, "test.json"));
    // zero3 keeps its small tensors whole on every rank (stage3_param_persistence_threshold),
    // which the query's ZeRO-paper formula does not: 2.3 MB of 93.4 GB here.
    CHECK(a.json.at(strategy).at("total_bytes").get<double>() ==
          Approx(rs.memory.params_bytes + rs.memory.grads_bytes + rs.memory.optimizer_bytes)
              .epsilon(std::string(strategy) == "zero3" ? 1e-4 : 1e-9));
  }
}

namespace {

// Two Mixtral-layout blocks of 8 experts (3 · 1024 · 2048 each), bf16, on dp ranks with ep 4.
Scenario small_moe(const std::string& strategy, int dp = 8, const std::string& extra = "") {
  return scenario(fmt::format(R"({{"model": {{"hf_config": {{"model_type": "mixtral", "num_hidden_layers": 2,
    "hidden_size": 1024, "intermediate_size": 2048, "num_attention_heads": 8, "num_key_value_heads": 8,
    "vocab_size": 32000}}}}, "hardware": "h100-sxm", "parallelism": {{"strategy": "{}", "dp": {}, "ep": 4{}}},
    "batch": {{"micro_batch_size": 1, "seq_len": 2048}}}})",
                              strategy, dp, extra));
}

// One rank's routed experts in bf16: 2 blocks × 8 / 4 experts × 3 · 1024 · 2048.
constexpr double kSmallLocalExpertBytes = 2.0 * 2 * 3 * 1024 * 2048 * 2;

}  // namespace

// `stepsim threshold` agrees with run: on a scenario it is run's figure; from the flags the
// seeds' closed form, E/k, and E/(k·ep) under expert parallelism (each GPU holds experts / ep).
TEST_CASE("moe: threshold gives run's comm-bound figure, and E/(k·ep) from the flags", "[models][moe][ep]") {
  const std::string path = std::string(STEPSIM_SOURCE_DIR) + "/configs/examples/deepseek-v3-fsdp-ep64-256xh100.json";
  ThresholdQuery q;
  q.scenario = path;
  const QueryAnswer a = threshold_query(q);
  const Report r = run(load_scenario(path, {}));
  CHECK(a.json.at("tokens_per_gpu").get<double>() == Approx(r.comm_bound_threshold_tokens_per_gpu).epsilon(1e-12));
  CHECK(a.json.at("ep") == 64);
  // DeepSeek-V3: 256 experts, top-8, ep 64: the closed form's 256 / (8 · 64) = 0.5 prices every
  // gradient over the hierarchical AllReduce of all 256 ranks; run's figure prices the experts'
  // (96 % of this rank's parameters) over their expert-data-parallel group of 4 ranks, one per
  // node, at the NIC's pace (found by a new-user trial: 1397 tokens/GPU said a comm-bound step
  // was 2.9x safe), and counts attention and the dense blocks in the FLOPs per token.
  const double exact = a.json.at("moe_factor").get<double>();
  CHECK(exact > 1.0);
  CHECK(exact < 3.0);
  // ep 8: each rank holds 8x the experts, reduced over 32 ranks, one per node: far later.
  q.sets = {"parallelism.ep=8"};
  CHECK(threshold_query(q).json.at("tokens_per_gpu").get<double>() > 5 * a.json.at("tokens_per_gpu").get<double>());
  // ep = dp: each expert whole on its rank, its gradients go nowhere: only the dense ones count.
  q.sets = {"parallelism.ep=256"};
  CHECK(threshold_query(q).json.at("tokens_per_gpu").get<double>() < 0.5 * a.json.at("tokens_per_gpu").get<double>());
  q.sets = {};
  ThresholdQuery flags;
  flags.hardware = "h100-sxm";
  flags.ranks = 256;
  flags.moe_experts = 256;
  flags.moe_topk = 8;
  const double e_over_k = threshold_query(flags).json.at("tokens_per_gpu").get<double>();
  flags.moe_ep = 64;
  CHECK(threshold_query(flags).json.at("tokens_per_gpu").get<double>() == Approx(e_over_k / 64).epsilon(1e-12));
  CHECK(threshold_query(flags).json.at("moe_factor").get<double>() == 0.5);
  flags.moe_ep = 3;
  CHECK_THROWS_WITH(threshold_query(flags), Contains("--ep: each GPU holds experts / ep of them: expected a divisor of 256"));
  // A scenario and the flags together are refused.
  q.hardware = "h100-sxm";
  CHECK_THROWS_WITH(threshold_query(q), Contains("give either a scenario or --hardware and --ranks"));
}

// DeepSpeed ZeRO-1/2 (stage_1_and_2.py: _configure_moe_settings, average_tensor): the experts'
// parameter group is partitioned over expert DP; each IPG bucket reduces its expert slices
// over that group, its dense ones over DP; after step() each group is all-gathered over its own.
TEST_CASE("moe: ZeRO-1/2 reduce and gather the experts over dp / ep", "[models][moe][ep]") {
  for (const char* strategy : {"zero1", "zero2"}) {
    INFO(strategy);
    const Scenario s = small_moe(strategy);
    const Report r = run(s);
    const double all = static_cast<double>(s.model.parameter_count()) * 2;  // bf16
    CHECK(bytes_of(r, "edp", "AllReduce") == kSmallLocalExpertBytes);
    CHECK(bytes_of(r, "dp", "AllReduce") == Approx(all - kSmallLocalExpertBytes).epsilon(1e-12));
    CHECK(bytes_of(r, "edp", "AllGather") == kSmallLocalExpertBytes);
    CHECK(bytes_of(r, "dp", "AllGather") == Approx(all - kSmallLocalExpertBytes).epsilon(1e-12));
    for (const auto& c : r.collectives)
      if (c.group == "edp") CHECK(c.ranks == 2);
    // The optimizer state is split over the 8 ranks in all: the experts 4 ways by EP, 2 by ZeRO.
    const Report none = run(scenario(fmt::format(R"({{"model": {{"hf_config": {{"model_type": "mixtral",
      "num_hidden_layers": 2, "hidden_size": 1024, "intermediate_size": 2048, "num_attention_heads": 8,
      "num_key_value_heads": 8, "vocab_size": 32000}}}}, "hardware": "h100-sxm",
      "parallelism": {{"strategy": "{}", "dp": 8}}, "batch": {{"micro_batch_size": 1, "seq_len": 2048}}}})",
                                                 strategy)));
    CHECK(r.memory.optimizer_bytes == Approx(none.memory.optimizer_bytes).epsilon(1e-12));
  }
}

// ZeRO-3 under AutoEP (stage3.py, partition_parameters.py all_gather_coalesced): one AllGather
// per partition group per fetch, and the experts' gradients reduce-scatter in buckets of their
// own (a gradient of another group flushes the IPG bucket).
TEST_CASE("moe: ZeRO-3 fetches and reduce-scatters the experts over dp / ep", "[models][moe][ep]") {
  const Scenario s = small_moe("zero3");
  const LoweredStep step = lower_step(s);
  double expert_rs = 0, dense_rs = 0;
  for (sim::TaskId v = 0; v < step.graph.size(); ++v) {
    const sim::Task& t = step.graph.task(v);
    if (t.name.rfind("reducescatter.bucket", 0) != 0) continue;
    const bool experts = t.name.find(".experts") != std::string::npos;
    CHECK(experts == (static_cast<std::int32_t>(t.group) == step.edp_group));
    (experts ? expert_rs : dense_rs) += t.bytes;
  }
  CHECK(expert_rs == kSmallLocalExpertBytes);
  CHECK(dense_rs == Approx(static_cast<double>(s.model.parameter_count()) * 2 - kSmallLocalExpertBytes).epsilon(1e-12));
  const Report r = run(s);
  // Every fetch of a block gathers its experts over the 2 ranks holding them.
  const double gathered = bytes_of(r, "edp", "AllGather");
  CHECK(gathered >= kSmallLocalExpertBytes);
  CHECK(std::fmod(gathered, kSmallLocalExpertBytes / 2) == 0);
  // With ep = dp the experts are whole on their rank: neither gathered nor reduced.
  const Report whole = run(small_moe("zero3", 4));
  CHECK(bytes_of(whole, "edp", "AllGather") == 0);
  CHECK(bytes_of(whole, "edp", "ReduceScatter") == 0);
}

// HSDP with EP inside the shard group (torchtitan's dp_replicate × efsdp mesh for the experts):
// the experts reduce-scatter over the shard group's 8 / 4 = 2 ranks holding them, then the
// replicas AllReduce each rank's shard of them beside the dense shard.
TEST_CASE("moe: HSDP reduces the experts over shard / ep, then across replicas", "[models][moe][ep]") {
  const Scenario s = small_moe("hsdp", 16, R"(, "shard_group_size": 8)");
  const Report r = run(s);
  CHECK(bytes_of(r, "edp", "ReduceScatter") == kSmallLocalExpertBytes);
  for (const auto& c : r.collectives)
    if (c.group == "edp") CHECK(c.ranks == 2);
  for (const auto& c : r.collectives)
    if (c.op == "AllReduce") CHECK(c.ranks == 2);  // 16 / 8 replicas
  // The replicas' AllReduces: the dense shard as DP rows, the experts' shard as EDP rows.
  const double dense = static_cast<double>(s.model.parameter_count()) * 2 - kSmallLocalExpertBytes;
  CHECK(bytes_of(r, "dp", "AllReduce") == Approx(dense / 8).epsilon(1e-12));
  CHECK(bytes_of(r, "edp", "AllReduce") == Approx(kSmallLocalExpertBytes / 2).epsilon(1e-12));
  // ep = the shard group: whole experts, reduced across the replicas only.
  const Scenario w = small_moe("hsdp", 8, R"(, "shard_group_size": 4)");
  const Report whole = run(w);
  CHECK(bytes_of(whole, "edp", "ReduceScatter") == 0);
  CHECK(bytes_of(whole, "edp", "AllReduce") == kSmallLocalExpertBytes);
  CHECK(bytes_of(whole, "dp", "AllReduce") ==
        Approx((static_cast<double>(w.model.parameter_count()) * 2 - kSmallLocalExpertBytes) / 4).epsilon(1e-12));
  // per_rank: every rank meets its EDP group (every ep-th rank inside its shard group) and its
  // replicas; a barely slower rank 5 leaves the step as it was.
  nlohmann::json doc = nlohmann::json::parse(R"({"model": {"hf_config": {"model_type": "mixtral", "num_hidden_layers": 2,
    "hidden_size": 1024, "intermediate_size": 2048, "num_attention_heads": 8, "num_key_value_heads": 8,
    "vocab_size": 32000}}, "hardware": "h100-sxm", "parallelism": {"strategy": "hsdp", "dp": 16, "ep": 4,
    "shard_group_size": 8}, "batch": {"micro_batch_size": 1, "seq_len": 2048},
    "sim": {"rank_mode": "per_rank", "slow_ranks": [{"rank": 5, "compute_factor": 1.0001}]}})");
  const Report per_rank = run(parse_scenario(doc, "test.json"));
  CHECK(per_rank.step_time_s == Approx(r.step_time_s).epsilon(1e-3));
  CHECK(per_rank.step_time_s >= r.step_time_s);
}
