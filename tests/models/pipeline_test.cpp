// SPDX-License-Identifier: Apache-2.0
// Pipeline parallelism (issue 15 item 6): the stage split, the schedules' programs
// (shared/reference/semantics-parallel.md §B1, B3, B8–B10), the bubble the simulation produces
// against the closed forms (B20), and the rules a scenario with parallelism.pp must obey.
#include "models/pipeline.hpp"
#include "models/report.hpp"
#include "models/scenario.hpp"
#include "models/strategy/compute_tasks.hpp"
#include "models/strategy/strategy.hpp"
#include "sim/support/error.hpp"
#include "tests/support/catch.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <set>

using namespace stepsim;
using namespace stepsim::models;
using Catch::Matchers::Contains;

namespace {

Scenario scenario(const std::string& text) { return parse_scenario(nlohmann::json::parse(text), "test.json"); }

// Llama-3.2-1B (16 blocks) on one H100 node per stage group.
Scenario llama1b(std::int64_t dp, std::int64_t pp, std::int64_t m, const std::string& parallel_extra = "",
                 const std::string& strategy = "ddp", const std::string& extra = "") {
  return scenario(fmt::format(R"({{"model": "llama3.2-1b", "hardware": "h100-sxm",
    "parallelism": {{"strategy": "{}", "dp": {}, "pp": {}{}}},
    "batch": {{"micro_batch_size": 1, "seq_len": 2048, "grad_accum": {}}}{}}})",
                              strategy, dp, pp, parallel_extra, m, extra));
}

// Every block takes 1 ms forward and 2 ms backward; the embedding, norm and head nothing; no
// optimizer step: the step is the schedule alone (and its point-to-point messages).
Scenario uniform_blocks(Scenario s) {
  for (auto& l : s.model.layers) {
    l.fwd_s = l.root ? 0.0 : 1e-3;
    l.bwd_s = l.root ? 0.0 : 2e-3;
  }
  s.optimizer = "none";
  s.contention.overlap_model = "off";  // the receives do not slow the blocks
  s.parallelism.gradient_as_bucket_view = true;  // no bucket copy-back kernel
  return s;
}

// Each (micro-batch, chunk) once forward and once backward, the backward after the forward.
void check_program(const std::vector<PipelineAction>& prog, std::int64_t m, int chunks) {
  std::set<std::pair<std::int64_t, int>> fwd, bwd;
  for (const auto& a : prog) {
    const std::pair<std::int64_t, int> key{a.micro_batch, a.chunk};
    if (a.backward) {
      CHECK(fwd.count(key) == 1);
      CHECK(bwd.insert(key).second);
    } else {
      CHECK(fwd.insert(key).second);
    }
  }
  CHECK(fwd.size() == static_cast<std::size_t>(m * chunks));
  CHECK(bwd.size() == static_cast<std::size_t>(m * chunks));
}

}  // namespace

TEST_CASE("pipeline: 1F1B warms up pp - rank forwards, then alternates backward and forward", "[models][pp]") {
  // Megatron-LM forward_backward_pipelining_without_interleaving: W = min(p − r − 1, m) warm-up
  // forwards plus the first steady-state forward; torch Schedule1F1B: min(m, p − stage).
  const auto progs = pipeline_programs(PipelineSchedule::OneFOneB, 4, 1, 8);
  REQUIRE(progs.size() == 4);
  for (int r = 0; r < 4; ++r) {
    const auto& p = progs[static_cast<std::size_t>(r)];
    check_program(p, 8, 1);
    const auto warmup = std::find_if(p.begin(), p.end(), [](const PipelineAction& a) { return a.backward; }) - p.begin();
    CHECK(warmup == 4 - r);
  }
  // The last stage: F0 B0 F1 B1 …
  const auto& last = progs[3];
  for (std::size_t i = 0; i < last.size(); ++i) CHECK(last[i] == PipelineAction{i % 2 == 1, static_cast<std::int64_t>(i / 2), 0});
  // Fewer micro-batches than stages: every forward is warm-up.
  CHECK(pipeline_programs(PipelineSchedule::OneFOneB, 4, 1, 2)[0][1] == PipelineAction{false, 1, 0});
}

TEST_CASE("pipeline: GPipe runs every forward then every backward; Interleaved1F1B loops chunks by rounds", "[models][pp]") {
  const auto gpipe = pipeline_programs(PipelineSchedule::GPipe, 3, 1, 5);
  for (const auto& p : gpipe) {
    check_program(p, 5, 1);
    for (std::size_t i = 0; i < 5; ++i) CHECK(p[i] == PipelineAction{false, static_cast<std::int64_t>(i), 0});
  }
  // B10: p = 2, v = 2, m = 4: rounds 2, 2 micro-batches per round; rank 0 warms up
  // (v − 1)·2 + 2·(p − 1) = 4 forwards: chunk 0 for micro-batches 0, 1, then chunk 1.
  const auto inter = pipeline_programs(PipelineSchedule::Interleaved1F1B, 2, 2, 4);
  for (const auto& p : inter) check_program(p, 4, 2);
  // Then a forward and a backward in turn (B3's steady state: forward first).
  const std::vector<PipelineAction> head = {{false, 0, 0}, {false, 1, 0}, {false, 0, 1}, {false, 1, 1},
                                            {false, 2, 0}, {true, 0, 1},  {false, 3, 0}, {true, 1, 1}};
  CHECK(std::vector<PipelineAction>(inter[0].begin(), inter[0].begin() + 8) == head);
  // Rank 1 warms up (v − 1)·2 = 2 forwards, then runs chunk 1 of micro-batch 0 and its backward.
  CHECK(inter[1][2] == PipelineAction{false, 0, 1});
  CHECK(inter[1][3] == PipelineAction{true, 0, 1});
}

TEST_CASE("pipeline: Megatron-LM splits blocks evenly; torchtitan counts the embedding and the head as a layer", "[models][pp]") {
  const Scenario ddp = llama1b(1, 4, 4);
  const auto stages = pipeline_stage_layers(ddp);
  REQUIRE(stages.size() == 4);
  // 16 blocks: 4 each; the embedding (layer 0) first, the norm and head last.
  CHECK(stages[0].front() == 0);
  CHECK(stages[0].size() == 5);
  CHECK(stages[1].size() == 4);
  CHECK(stages[3].size() == 4 + 2);
  CHECK(stages[3].back() == ddp.model.layers.size() - 1);
  // Llama-3.1-405B (126 blocks) on pp 8 as torchtitan's 405B runs split it
  // (generate_llm_fqn_per_model_part): 128 effective layers, 16 per stage, so 15 blocks on the
  // first and last stages, 16 on the others; interleaved over 16 stages: 7 and 8.
  const auto big = [](const std::string& extra) {
    return scenario(fmt::format(R"({{"model": "llama3-405b", "hardware": "h100-sxm",
      "parallelism": {{"strategy": "fsdp", "dp": 1, "tp": 8, "pp": 8{}}},
      "batch": {{"micro_batch_size": 1, "seq_len": 8192, "grad_accum": 32}}}})", extra));
  };
  const auto titan = pipeline_stage_layers(big(""));
  REQUIRE(titan.size() == 8);
  CHECK(titan[0].size() == 1 + 15);
  for (std::size_t k = 1; k < 7; ++k) CHECK(titan[k].size() == 16);
  CHECK(titan[7].size() == 15 + 2);
  const auto inter = pipeline_stage_layers(big(R"(, "pipeline_schedule": "Interleaved1F1B")"));
  REQUIRE(inter.size() == 16);
  CHECK(inter[0].size() == 1 + 7);
  CHECK(inter[8].size() == 8);
  CHECK(inter[15].size() == 7 + 2);
}

TEST_CASE("pipeline: the simulated bubble matches the closed forms on uniform stages", "[models][pp]") {
  // B20 (Narayanan et al. 2021): 1F1B and GPipe take (m + p − 1)(t_f + t_b); interleaving
  // with v chunks per rank (m + (p − 1)/v)(t_f + t_b), t_f and t_b a whole stage's per
  // micro-batch. Stages of 4 blocks: t_f = 4 ms, t_b = 8 ms. Point-to-point messages of
  // 2048 × 2048 × 2 B = 8 MB add a few percent at most.
  const double tf = 4e-3, tb = 8e-3;
  for (const std::int64_t m : {4, 8, 16}) {
    for (const std::string sched : {"1F1B", "GPipe"}) {
      const Report r = run(uniform_blocks(llama1b(1, 4, m, fmt::format(R"(, "pipeline_schedule": "{}")", sched))));
      INFO(sched << " m=" << m);
      const double ideal = (static_cast<double>(m) + 3) * (tf + tb);
      CHECK(r.step_time_s >= ideal);
      CHECK(r.step_time_s == Approx(ideal).epsilon(0.03));
      REQUIRE(r.pipeline_stages.size() == 4);
      // Every stage computes m (t_f + t_b); the rest of the step is its bubble, (p − 1)(t_f + t_b) ideally.
      for (const auto& st : r.pipeline_stages) CHECK(st.compute_time_s == Approx(static_cast<double>(m) * (tf + tb)));
      CHECK(r.pipeline_stages[0].bubble_s == Approx(3 * (tf + tb)).epsilon(0.1));
    }
    const Report inter =
        run(uniform_blocks(llama1b(1, 4, m, R"(, "pipeline_schedule": "Interleaved1F1B", "virtual_stages": 2)")));
    INFO("Interleaved1F1B m=" << m);
    const double ideal = (static_cast<double>(m) + 3.0 / 2) * (tf + tb);
    CHECK(inter.step_time_s >= ideal);
    CHECK(inter.step_time_s == Approx(ideal).epsilon(0.06));
  }
}

TEST_CASE("pipeline: GPipe holds every micro-batch's activations, 1F1B at most pp on stage 0", "[models][pp]") {
  // B2, B8: 1F1B stage r holds min(p − r, m) micro-batches; GPipe all m.
  const Report gpipe = run(llama1b(1, 4, 16, R"(, "pipeline_schedule": "GPipe")"));
  const Report one = run(llama1b(1, 4, 16));
  const double a_gpipe = gpipe.pipeline_stages[1].activations_bytes;
  const double a_one = one.pipeline_stages[1].activations_bytes;
  CHECK(a_gpipe / a_one == Approx(16.0 / 3).epsilon(0.02));  // stage 1: 3 in flight under 1F1B
  CHECK(one.pipeline_stages[0].activations_bytes > one.pipeline_stages[3].activations_bytes);
}

TEST_CASE("pipeline: point-to-point messages are [s, b, h] in the parameter dtype, m per boundary each way", "[models][pp]") {
  const Report r = run(llama1b(2, 4, 8));
  const double bytes = 2048.0 * 1 * 2048 * 2;  // seq × micro-batch × hidden × bf16 (B7)
  std::int64_t messages = 0;
  for (const auto& c : r.collectives)
    if (c.group == "pp" && c.op == "SendRecv") {
      CHECK(c.bytes == bytes);
      CHECK(c.busbw_bytes_per_s == c.algbw_bytes_per_s);
      messages += c.count;
    }
  // Stage 0 receives the gradients of its 8 micro-batches (the report counts stage 0's).
  CHECK(messages == 8);
  // dp 2 × pp 4 = 8 GPUs in one node: every boundary inside it (NVLink).
  CHECK(r.scenario.world_size() == 8);
}

TEST_CASE("pipeline: FSDP under PP gathers each unit once a step and reduce-scatters it once", "[models][pp]") {
  // torchtitan (B18, B19): reshard_after_forward False under PP; REDUCE_GRAD after the last backward.
  const Report r = run(llama1b(8, 2, 4, "", "fsdp", R"(, "cluster": {"nodes": 2})"));
  std::int64_t ag = 0, rs = 0;
  for (const auto& c : r.collectives) {
    if (c.group != "dp") continue;
    if (c.op == "AllGather") ag += c.count;
    if (c.op == "ReduceScatter") rs += c.count;
  }
  // Stage 0: the embedding unit and 9 blocks (18 effective layers over 2 stages: 9 each, less the embedding's weight: 8)…
  const auto stages = pipeline_stage_layers(r.scenario);
  const std::int64_t units = static_cast<std::int64_t>(stages[0].size());  // unit_layers 1: one unit per layer
  CHECK(ag == units);
  CHECK(rs == units);
  CHECK(r.pipeline_stages.size() == 2);
  CHECK(r.step_time_s > 0);
}

TEST_CASE("pipeline: scenarios refuse what is not modelled, naming the field", "[models][pp]") {
  CHECK_THROWS_WITH(llama1b(8, 2, 4, "", "zero3"), Contains("/parallelism/pp") && Contains("ZeRO-3"));
  CHECK_THROWS_WITH(llama1b(8, 2, 4, R"(, "pipeline_schedule": "GPipe")", "zero1"), Contains("TrainSchedule only"));
  CHECK_THROWS_WITH(llama1b(1, 3, 4), Contains("16 transformer blocks do not split evenly"));
  CHECK_THROWS_WITH(llama1b(1, 4, 4, R"(, "virtual_stages": 2)"), Contains("Interleaved1F1B"));
  CHECK_THROWS_WITH(llama1b(1, 4, 9, R"(, "pipeline_schedule": "Interleaved1F1B")"), Contains("rounds"));
  CHECK_THROWS_WITH(llama1b(2, 1, 4, R"(, "pipeline_schedule": "GPipe")"), Contains("needs pp > 1"));
  // (per_rank mode runs under PP since 2026-12-05: "per_rank plays every pipeline replica" below.)
  CHECK_THROWS_WITH(llama1b(16, 2, 4, R"(, "sync_every_micro_batch": true)"), Contains("sync_every_micro_batch"));
  // The world is dp × pp here (the message names the mesh's dimensions above 1).
  CHECK_THROWS_WITH(llama1b(8, 2, 4, "", "ddp", R"(, "cluster": {"nodes": 1})"), Contains("dp × pp (8 × 2 = 16)"));
}

TEST_CASE("pipeline: tied embeddings put a copy on the last stage and all-reduce its gradient", "[models][pp]") {
  // Megatron-LM (shared_embedding_or_output_weight, _allreduce_word_embedding_grads): Llama-3.2-1B
  // ties lm_head to embed_tokens (128256 × 2048 bf16).
  const Scenario s = llama1b(2, 4, 8);
  const double embedding = 128256.0 * 2048;
  const double first = static_cast<double>(pipeline_rank_scenario(s, 0).model.parameter_count());
  const double last = static_cast<double>(pipeline_rank_scenario(s, 3).model.parameter_count());
  const double middle = static_cast<double>(pipeline_rank_scenario(s, 1).model.parameter_count());
  CHECK(first - middle == Approx(embedding));
  CHECK(last - middle == Approx(embedding).epsilon(1e-4));  // + the final norm
  const Report r = run(s);
  bool found = false;
  for (const auto& c : r.collectives)
    if (c.group == "pp" && c.op == "AllReduce") {
      found = true;
      CHECK(c.bytes == embedding * 2);  // bf16 gradients (reduce dtype = param dtype)
      CHECK(c.count == 1);
      CHECK(c.ranks == 2);
    }
  CHECK(found);
  // An untied model has none.
  const Report untied = run(scenario(R"({"model": "llama3-8b", "hardware": "h100-sxm",
    "parallelism": {"strategy": "ddp", "dp": 2, "pp": 4}, "batch": {"micro_batch_size": 1, "seq_len": 1024, "grad_accum": 4}})"));
  for (const auto& c : untied.collectives) CHECK_FALSE((c.group == "pp" && c.op == "AllReduce"));
}

TEST_CASE("pipeline: exposure splits into PP, TP and DP parts that add up, none negative", "[models][pp]") {
  // Found by a hostile trial: DP's exposed time came out negative when PP and TP transfers overlapped.
  const Report r = run(scenario(R"({"model": "llama3-8b", "hardware": "mi300x",
    "parallelism": {"strategy": "ddp", "dp": 1, "tp": 2, "pp": 2, "pipeline_schedule": "Interleaved1F1B"},
    "batch": {"micro_batch_size": 1, "seq_len": 8192, "grad_accum": 8}})"));
  CHECK(r.tp_exposed_comm_s >= 0);
  CHECK(r.pp_exposed_comm_s >= 0);
  CHECK(r.dp_exposed_comm_s >= 0);
  CHECK(r.tp_exposed_comm_s + r.pp_exposed_comm_s + r.dp_exposed_comm_s == Approx(r.exposed_comm_s).margin(1e-12));
}

TEST_CASE("pipeline: 1F1B at pp 1 is plain gradient accumulation, so a base scenario naming it sweeps over pp = 1", "[models][pp]") {
  const Report named = run(llama1b(8, 1, 4, R"(, "pipeline_schedule": "1F1B")"));
  const Report plain = run(llama1b(8, 1, 4));
  CHECK(named.step_time_s == plain.step_time_s);
  CHECK(named.pipeline_stages.empty());
}

TEST_CASE("pipeline: ZeRO-1 under DeepSpeed's pipeline engine reduces after the last backward, then gathers", "[models][pp]") {
  // deepspeed/runtime/pipe/engine.py: ReduceGrads once after the schedule, then OptimizerStep,
  // whose ZeRO-1 step ends with one AllGather of the stage's parameters (semantics.md §C.2).
  const Scenario s = llama1b(8, 2, 4, "", "zero1", R"(, "cluster": {"nodes": 2})");
  const Report r = run(s);
  const double stage_bytes = static_cast<double>(pipeline_rank_scenario(s, 0).model.parameter_count()) * 2;
  double reduced = 0, gathered = 0;
  for (const auto& c : r.collectives) {
    if (c.group != "dp") continue;
    if (c.op == "AllReduce") reduced += c.bytes * static_cast<double>(c.count);
    if (c.op == "AllGather") gathered += c.bytes * static_cast<double>(c.count);
  }
  CHECK(reduced == Approx(stage_bytes));  // every gradient of PP rank 0 once (bf16), not per micro-batch
  CHECK(gathered == Approx(stage_bytes));
  // Adam over 1/8 of the stage: its states are sharded as ZeRO-1's.
  const Report ddp = run(llama1b(8, 2, 4, "", "ddp", R"(, "cluster": {"nodes": 2})"));
  CHECK(r.memory.optimizer_bytes == Approx(ddp.memory.optimizer_bytes / 8));
  CHECK(r.step_time_s > 0);
}

namespace {

// A rank's program as torch.distributed.pipelining prints it: stage, F / I / W / B, micro-batch.
std::string program_text(const std::vector<PipelineAction>& prog, int pp, int rank) {
  std::string out;
  for (const PipelineAction& a : prog) {
    const char kind = !a.backward ? 'F' : a.part == BackwardPart::Input ? 'I' : a.part == BackwardPart::Weight ? 'W' : 'B';
    out += fmt::format("{}{}{}{}", out.empty() ? "" : " ", a.chunk * pp + rank, kind, a.micro_batch);
  }
  return out;
}

}  // namespace

TEST_CASE("pipeline: InterleavedZeroBubble splits each backward into I and W as PyTorch orders them", "[models][pp]") {
  // B12. Expected orders from a Python transcription of torch/distributed/pipelining/schedules.py
  // (ScheduleInterleavedZeroBubble._calculate_single_rank_operations with _get_warmup_ops'
  // multiply_factor 1, then _get_1f1b_rank_ops(enable_zero_bubble=True,
  // num_1f1b_microbatches=rank); the idle slots dropped): p = 4, v = 1 (ZB-H1), m = 4, and
  // p = 2, v = 2, m = 4.
  const auto zbh1 = pipeline_programs(PipelineSchedule::InterleavedZeroBubble, 4, 1, 4);
  CHECK(program_text(zbh1[0], 4, 0) == "0F0 0F1 0F2 0F3 0I0 0W0 0I1 0W1 0I2 0W2 0I3 0W3");
  CHECK(program_text(zbh1[1], 4, 1) == "1F0 1F1 1F2 1I0 1F3 1I1 1W0 1I2 1W1 1I3 1W2 1W3");
  CHECK(program_text(zbh1[2], 4, 2) == "2F0 2F1 2I0 2F2 2I1 2F3 2I2 2W0 2I3 2W1 2W2 2W3");
  CHECK(program_text(zbh1[3], 4, 3) == "3F0 3I0 3F1 3I1 3F2 3I2 3F3 3I3 3W0 3W1 3W2 3W3");
  const auto zb1p = pipeline_programs(PipelineSchedule::InterleavedZeroBubble, 2, 2, 4);
  CHECK(program_text(zb1p[0], 2, 0) ==
        "0F0 0F1 2F0 2F1 2I0 2W0 0F2 2I1 2W1 0F3 0I0 0W0 2F2 0I1 0W1 2F3 2I2 2W2 2I3 2W3 0I2 0W2 0I3 0W3");
  CHECK(program_text(zb1p[1], 2, 1) ==
        "1F0 1F1 3F0 3I0 3F1 3I1 3W0 1F2 1I0 3W1 1F3 1I1 1W0 3F2 3I2 1W1 3F3 3I3 3W2 1I2 3W3 1I3 1W2 1W3");
  // Activations live from a forward to its W: ZB-H1 holds p micro-batches on every stage (1F1B: p − r).
  const Scenario s = llama1b(1, 4, 8, R"(, "pipeline_schedule": "InterleavedZeroBubble", "virtual_stages": 1)");
  for (int r = 0; r < 4; ++r) CHECK(pipeline_micro_batches_in_flight(s, r) == 4.0);
}

TEST_CASE("pipeline: ZB-H1's bubble shrinks by the weight-gradient passes, as the closed form says", "[models][pp]") {
  // B20 (arXiv 2401.10241): 1F1B's bubble (p − 1)(t_f + t_b); ZB-H1's (p − 1)(t_f + t_i − t_w)
  // with t_b = t_i + t_w. Stages of 4 uniform blocks (t_f = 4 ms, t_b = 8 ms); the W pass holds
  // the weight-gradient GEMMs' share of the backward, w = wgrad / (dgrad + wgrad + attention).
  const Scenario base = uniform_blocks(llama1b(1, 4, 8));
  const SplitBackward split = backward_split(base, 1, "", 0.0);
  double w_s = 0;
  for (const auto& seg : split.weight) w_s += seg.task.fixed_s;
  const double w = w_s / 2e-3;
  CHECK(split.input.fixed_s + w_s == Approx(2e-3));
  CHECK(w > 0.25);
  CHECK(w < 0.5);
  const double tf = 4e-3, tb = 8e-3, ti = (1 - w) * tb, tw = w * tb;
  const Report one = run(base);
  const Report zb = run(uniform_blocks(llama1b(1, 4, 8, R"(, "pipeline_schedule": "InterleavedZeroBubble", "virtual_stages": 1)")));
  const double ideal = 8 * (tf + tb) + 3 * (tf + ti - tw);
  CHECK(zb.step_time_s >= ideal);
  CHECK(zb.step_time_s == Approx(ideal).epsilon(0.03));
  CHECK(zb.step_time_s < one.step_time_s - 3 * 2 * tw * 0.9);
  for (const auto& st : zb.pipeline_stages) CHECK(st.compute_time_s == Approx(8 * (tf + tb)));
}

TEST_CASE("pipeline: a split backward keeps the whole backward's work and frees the activations at W", "[models][pp]") {
  const Scenario s = llama1b(1, 1, 1);
  for (std::size_t l : {std::size_t{0}, std::size_t{3}, s.model.layers.size() - 1}) {
    INFO("layer " << l);
    const auto full = backward_segments(s, l, "", 0.0);
    const SplitBackward split = backward_split(s, l, "", 0.0);
    double flops = 0, bytes = 0, freed = 0, share = 0;
    for (const auto& seg : full) flops += seg.task.flops, bytes += seg.task.bytes, freed += seg.task.free_bytes[kActivationCounter];
    double sflops = split.input.flops, sbytes = split.input.bytes, sfreed = split.input.free_bytes[kActivationCounter];
    share = split.input.work_share;
    for (const auto& seg : split.weight) {
      sflops += seg.task.flops, sbytes += seg.task.bytes, sfreed += seg.task.free_bytes[kActivationCounter];
      share += seg.task.work_share;
      CHECK(seg.produces_grad == full[&seg - split.weight.data()].produces_grad);
    }
    CHECK(sflops == Approx(flops));
    CHECK(sbytes == Approx(bytes));
    CHECK(sfreed == Approx(freed));
    CHECK(share == Approx(1.0));
    CHECK(split.weight.size() == (full.front().has_param ? full.size() : 0));  // a layer without parameters: all in I
    if (!split.weight.empty()) CHECK(split.input.free_bytes[kActivationCounter] == 0);
  }
}

TEST_CASE("pipeline: ZBVZeroBubble runs two chunks per rank in a V, as PyTorch orders them", "[models][pp]") {
  // B13. Expected orders from a Python transcription of torch/distributed/pipelining/schedules.py
  // (ScheduleZBVZeroBubble._calculate_single_rank_operations; idle slots and the padding
  // micro-batches m … max(2p − 1, m) − 1 dropped). Stage numbers: rank r holds r and 2p − 1 − r.
  const auto text = [](const std::vector<PipelineAction>& prog, int pp, int rank) {
    std::string out;
    for (const PipelineAction& a : prog) {
      const char kind = !a.backward ? 'F' : a.part == BackwardPart::Input ? 'I' : a.part == BackwardPart::Weight ? 'W' : 'B';
      out += fmt::format("{}{}{}{}", out.empty() ? "" : " ", pipeline_stage_of(PipelineSchedule::ZBVZeroBubble, pp, a.chunk, rank),
                         kind, a.micro_batch);
    }
    return out;
  };
  const auto p2 = pipeline_programs(PipelineSchedule::ZBVZeroBubble, 2, 2, 4);
  CHECK(text(p2[0], 2, 0) == "0F0 0F1 0F2 3F0 3I0 3W0 3F1 3I1 3W1 0F3 0I0 0W0 3F2 3I2 3W2 0I1 0W1 3F3 3I3 3W3 0I2 0W2 0I3 0W3");
  CHECK(text(p2[1], 2, 1) == "1F0 2F0 1F1 2F1 2I0 2W0 1F2 1I0 1W0 2F2 2I1 2W1 1F3 1I1 1W1 2F3 2I2 2W2 1I2 2I3 1I3 1W2 2W3 1W3");
  const auto p3 = pipeline_programs(PipelineSchedule::ZBVZeroBubble, 3, 2, 3);
  CHECK(text(p3[0], 3, 0) == "0F0 0F1 0F2 5F0 5I0 5W0 5F1 5I1 5W1 5F2 5I2 5W2 0I0 0W0 0I1 0W1 0I2 0W2");
  CHECK(text(p3[1], 3, 1) == "1F0 1F1 1F2 4F0 4F1 4I0 4W0 4F2 4I1 4W1 1I0 1W0 4I2 4W2 1I1 1W1 1I2 1W2");
  CHECK(text(p3[2], 3, 2) == "2F0 3F0 2F1 3F1 2F2 3F2 3I0 3W0 2I0 2W0 3I1 3W1 2I1 2W1 3I2 3W2 2I2 2W2");
  for (int st = 0; st < 6; ++st)
    CHECK(pipeline_stage_of(PipelineSchedule::ZBVZeroBubble, 3, st < 3 ? 0 : 1, pipeline_stage_rank(PipelineSchedule::ZBVZeroBubble, 3, st)) == st);

  // The V puts the embedding (stage 0) and the head (the last stage) on rank 0: tied embeddings
  // are one tensor there, with no copy and no AllReduce.
  const Scenario s = uniform_blocks(llama1b(1, 4, 8, R"(, "pipeline_schedule": "ZBVZeroBubble")"));
  CHECK(s.parallelism.virtual_stages == 2);
  const auto rank0 = pipeline_rank_layers(s, 0);
  CHECK(rank0.front() == 0);
  CHECK(rank0.back() == s.model.layers.size() - 1);
  CHECK(pipeline_tied_embedding(s) == nullptr);
  // Stages 3 and 4 sit on rank 3: their activations pass without a message. Every other
  // boundary (6 of 7) sends m activations and m gradients.
  const LoweredStep step = lower_step(s);
  std::size_t recvs = 0, local = 0;
  for (sim::TaskId id = 0; id < step.graph.size(); ++id) {
    const std::string& name = step.graph.task(id).name;
    recvs += name.find(".recv.") != std::string::npos;
    local += name.find(".local.") != std::string::npos;
  }
  CHECK(recvs == 6 * 2 * 8);
  CHECK(local == 2 * 8);
  // Uniform stages: ZB-V's bubble is a small part of the step, well under ZB1P's and 1F1B's.
  const Report zbv = run(s);
  const Report zb1p = run(uniform_blocks(llama1b(1, 4, 8, R"(, "pipeline_schedule": "InterleavedZeroBubble")")));
  const Report one = run(uniform_blocks(llama1b(1, 4, 8)));
  const double compute = 8 * 12e-3;  // m (t_f + t_b) on every rank: 4 blocks of 1 + 2 ms
  for (const auto& st : zbv.pipeline_stages) CHECK(st.compute_time_s == Approx(compute));
  CHECK(zbv.step_time_s >= compute);
  CHECK(zbv.step_time_s < zb1p.step_time_s);
  CHECK(zb1p.step_time_s < one.step_time_s);
  INFO("ZBV " << zbv.step_time_s << " ZB1P " << zb1p.step_time_s << " 1F1B " << one.step_time_s);
  CHECK(zbv.step_time_s < 1.12 * compute);
}

TEST_CASE("pipeline: per_rank plays every pipeline replica, a slow GPU slowing its own stage", "[models][pp]") {
  // sim.rank_mode per_rank under PP: each copy of the lowered step is one pipeline replica
  // (its PP ranks = its stages), dp replicas; world rank k × dp + c is stage k of replica c (PP
  // outermost). Uniform stages of 4 blocks: t_f = 4 ms, t_b = 8 ms per micro-batch.
  const std::string extra = R"(, "cluster": {"nodes": 1, "gpus_per_node": 8})";
  const Scenario sym = uniform_blocks(llama1b(2, 4, 8, "", "ddp", extra));
  Scenario per = uniform_blocks(llama1b(2, 4, 8, "", "ddp", extra + R"(, "sim": {"rank_mode": "per_rank"})"));
  const Report a = run(sym), b = run(per);
  REQUIRE(b.per_rank.present);
  CHECK(b.per_rank.ranks == 8);
  CHECK(b.per_rank.pipeline_stages == 4);
  CHECK(b.step_time_s == a.step_time_s);  // no variation: every replica plays the symmetric step
  CHECK_THAT(report_text(b), Contains("8 ranks, 2 pipelines of 4 stages"));
  // World rank 3 = stage 1 of replica 1, 1.5x slower: that stage does m micro-batches at 1.5x
  // (a lower bound on the step), and the step grows by at most its extra time over the fill,
  // the steady state and the drain, 0.5 (m + p − 1)(t_f + t_b).
  const double tf = 4e-3, tb = 8e-3;
  per.variation.slow_ranks = {{3, 1.5}};
  const Report slow = run(per);
  CHECK(slow.step_time_s >= 1.5 * 8 * (tf + tb));
  CHECK(slow.step_time_s <= a.step_time_s + 0.5 * (8 + 3) * (tf + tb));
  CHECK(slow.per_rank.straggler_cost_s > 0.3 * 8 * (tf + tb));
  // The same GPU slower in the other replica costs the same (the replicas are symmetric).
  per.variation.slow_ranks = {{2, 1.5}};
  CHECK(run(per).step_time_s == Approx(slow.step_time_s).epsilon(1e-9));
}

TEST_CASE("pipeline: the zero-bubble schedules' activations are counted chunk by chunk", "[models][pp]") {
  // ZBV p = 4, m = 8 with chunk 0 holding 1 B and chunk 1 10 B per micro-batch: walking the
  // programs (the Python transcription of ScheduleZBVZeroBubble above), rank 0 peaks at 7 chunk-0
  // and 1 chunk-1 micro-batches (17 B), rank 3 at 4 and 4 (44 B).
  const Scenario s = llama1b(1, 4, 8, R"(, "pipeline_schedule": "ZBVZeroBubble")");
  CHECK(pipeline_peak_activation_bytes(s, 0, {1, 10}) == 17);
  CHECK(pipeline_peak_activation_bytes(s, 3, {1, 10}) == 44);
  // Equal chunks: the micro-batch count the memory command used before.
  for (int r = 0; r < 4; ++r)
    CHECK(pipeline_peak_activation_bytes(s, r, {1, 1}) / 2 == pipeline_micro_batches_in_flight(s, r));
}
