// SPDX-License-Identifier: Apache-2.0
// Context parallelism (issue 15 item 7): the sequence split over CP ranks, the KV transfers of
// each attention layer (shared/reference/semantics-parallel.md §C3, C4, C7), gradients reduced
// over dp × cp (C6), and the rules a scenario with parallelism.cp must obey.
#include "models/context_parallel.hpp"
#include "models/report.hpp"
#include "models/scenario.hpp"
#include "models/strategy/compute_tasks.hpp"
#include "sim/support/error.hpp"
#include "tests/support/catch.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

using namespace stepsim;
using namespace stepsim::models;
using Catch::Matchers::Contains;

namespace {

Scenario scenario(const std::string& text) { return parse_scenario(nlohmann::json::parse(text), "test.json"); }

// Llama-3.1-8B (8 KV heads of 128) on one H100 node: dp × cp = 8.
Scenario llama8b(std::int64_t dp, std::int64_t cp, std::int64_t seq, const std::string& extra = "",
                 const std::string& strategy = "fsdp", const std::string& rest = "") {
  return scenario(fmt::format(R"({{"model": "llama3-8b", "hardware": "h100-sxm",
    "parallelism": {{"strategy": "{}", "dp": {}, "cp": {}{}}},
    "batch": {{"micro_batch_size": 1, "seq_len": {}}},
    "activations": {{"attention": "flash", "recompute": "full"}}{}}})",
                              strategy, dp, cp, extra, seq, rest));
}

std::int64_t count_of(const Report& r, const std::string& group, const std::string& op, double bytes) {
  std::int64_t n = 0;
  for (const auto& c : r.collectives)
    if (c.group == group && c.op == op && c.bytes == bytes) n += c.count;
  return n;
}

}  // namespace

TEST_CASE("context parallel: a rank holds seq_len / cp tokens and 1/cp of the attention's work", "[models][cp]") {
  const Scenario one = llama8b(8, 1, 32768), two = llama8b(4, 2, 65536), four = llama8b(2, 4, 131072);
  CHECK(two.tokens_per_micro_batch() == 32768);
  CHECK(four.tokens_per_micro_batch() == 32768);
  CHECK(two.world_size() == 8);
  CHECK(two.data_ranks() == 8);
  // Model FLOPs per GPU: the linears' on the same 32768 tokens; attention's grow with the
  // whole sequence's keys (queries × keys, so × 2 from cp 1 at 32768 to cp 2 at 65536).
  const Report r1 = run(one), r2 = run(two);
  CHECK(r2.model_flops_per_gpu > r1.model_flops_per_gpu);
  CHECK(r2.model_flops_per_gpu < 2 * r1.model_flops_per_gpu);
  // The same sequence over twice the CP ranks: half the work per GPU, everything included.
  const Report same = run(llama8b(2, 4, 65536));
  CHECK(same.model_flops_per_gpu == Approx(r2.model_flops_per_gpu / 2).epsilon(1e-12));
  // Tokens per step count every sequence once: dp × micro-batch × seq_len.
  CHECK(r2.tokens_per_step == Approx(4.0 * 65536));
}

TEST_CASE("context parallel: KV bytes and the transfers of p2p and allgather per layer", "[models][cp]") {
  // KV of one rank and layer: 2 (K, V) × micro-batch 1 × 65536 / 2 tokens × 8 KV heads × 128 × bf16.
  const Scenario titan = llama8b(4, 2, 65536);
  const double kv = 2.0 * 32768 * 8 * 128 * 2;
  CHECK(context_parallel_kv_bytes(titan) == kv);
  CHECK(titan.parallelism.cp_comm_type == "allgather");  // torchtitan's default under fsdp
  // allgather (C7): forward one AllGather of KV (output cp × kv); backward, under full
  // recomputation, the forward's again, the AllGather of KV and dK/dV around the ring in fp32.
  const auto fwd = context_parallel_transfers(titan, 1, false);
  REQUIRE(fwd.size() == 1);
  CHECK_FALSE(fwd[0].ring);
  CHECK(fwd[0].bytes == 2 * kv);
  const auto bwd = context_parallel_transfers(titan, 1, true);
  REQUIRE(bwd.size() == 3);
  CHECK(bwd[0].recompute);
  CHECK(bwd[2].ring);
  CHECK(bwd[2].count == 1);
  CHECK(bwd[2].bytes == 2 * kv);  // fp32 dK, dV: twice the bf16 KV
  // The embedding has no attention: nothing.
  CHECK(context_parallel_transfers(titan, 0, false).empty());
  // p2p (C3, C4; Megatron-LM's default under ddp): cp − 1 = 3 ring messages forward, 3 of KV and
  // 3 of dKV backward (plus the forward's again under full recomputation).
  const Scenario mega = llama8b(2, 4, 65536, "", "ddp");
  CHECK(mega.parallelism.cp_comm_type == "p2p");
  const double kv4 = 2.0 * 16384 * 8 * 128 * 2;
  const auto f = context_parallel_transfers(mega, 1, false);
  REQUIRE(f.size() == 1);
  CHECK(f[0].ring);
  CHECK(f[0].count == 3);
  CHECK(f[0].bytes == kv4);
  int messages = 0;
  for (const auto& t : context_parallel_transfers(mega, 1, true)) messages += t.ring ? t.count : 0;
  CHECK(messages == 9);
  // In the step: 32 blocks; forward + recomputation + backward AllGathers under allgather.
  const Report r = run(titan);
  CHECK(count_of(r, "cp", "AllGather", 2 * kv) == 32 * 3);
  CHECK(count_of(r, "cp", "SendRecv", 2 * kv) == 32);
  CHECK(r.cp_comm_time_s > 0);
  CHECK(r.tp_exposed_comm_s + r.cp_exposed_comm_s + r.pp_exposed_comm_s + r.dp_exposed_comm_s ==
        Approx(r.exposed_comm_s).margin(1e-12));
}

TEST_CASE("context parallel: gradients are reduced and FSDP shards over dp × cp ranks", "[models][cp]") {
  // C6 (Megatron-LM's DP×CP group), C7 (torchtitan's dp_shard × cp).
  for (const char* strategy : {"fsdp", "ddp"}) {
    INFO(strategy);
    const Report r = run(llama8b(2, 4, 16384, "", strategy));
    bool seen = false;
    for (const auto& c : r.collectives)
      if (c.group == "dp") {
        CHECK(c.ranks == 8);
        seen = true;
      }
    CHECK(seen);
  }
  // Model states per GPU under FSDP: the same as FSDP over 8 ranks without CP.
  const Report cp = run(llama8b(2, 4, 16384));
  const Report dp = run(llama8b(8, 1, 16384));
  CHECK(cp.memory.params_bytes == Approx(dp.memory.params_bytes));
  CHECK(cp.memory.optimizer_bytes == Approx(dp.memory.optimizer_bytes));
}

TEST_CASE("context parallel: per_rank plays the CP collectives among the right ranks", "[models][cp]") {
  const std::string per_rank = R"(, "sim": {"rank_mode": "per_rank"})";
  const Report sym = run(llama8b(2, 4, 16384));
  const Report per = run(llama8b(2, 4, 16384, "", "fsdp", per_rank));
  CHECK(per.step_time_s == Approx(sym.step_time_s).epsilon(1e-9));
  // With TP 2 too: CP groups take every other rank.
  const Report sym2 = run(llama8b(1, 4, 16384, R"(, "tp": 2, "sequence_parallel": true)"));
  const Report per2 = run(llama8b(1, 4, 16384, R"(, "tp": 2, "sequence_parallel": true)", "fsdp", per_rank));
  CHECK(per2.step_time_s == Approx(sym2.step_time_s).epsilon(1e-9));
}

TEST_CASE("context parallel: scenarios refuse what is not modelled, naming the field", "[models][cp]") {
  CHECK_THROWS_WITH(llama8b(2, 4, 16384, "", "zero1"), Contains("/parallelism/cp: 4 under strategy 'zero1'"));
  CHECK_THROWS_WITH(llama8b(2, 4, 16380), Contains("/batch/seq_len: 16380 does not divide into 2 × cp = 8"));
  CHECK_THROWS_WITH(scenario(R"({"model": "llama3-8b", "hardware": "h100-sxm", "parallelism": {"dp": 2, "cp": 4},
    "batch": {"seq_len": 8192}, "activations": {"attention": "eager"}})"),
                    Contains("eager attention"));
  CHECK_THROWS_WITH(scenario(R"({"model": "resnet50", "hardware": "h100-sxm", "parallelism": {"dp": 2, "cp": 4}})"),
                    Contains("not a transformer"));
  // Sequence parallelism splits each CP rank's share tp ways.
  CHECK_THROWS_WITH(llama8b(1, 2, 32764, R"(, "tp": 4, "sequence_parallel": true)"), Contains("tp × cp = 8"));
  // At cp 1 the KV exchange has nothing to act on: accepted, not echoed (a sweep's base may name it).
  CHECK(llama8b(8, 1, 8192, R"(, "cp_comm_type": "p2p")").parallelism.cp == 1);
}
