// SPDX-License-Identifier: Apache-2.0
// Tests of the DDP strategy and run(): schedule rules of semantics.md §A and report invariants.
#include "models/report.hpp"
#include "models/scenario.hpp"
#include "models/strategy/strategy.hpp"
#include "tests/support/catch.hpp"

#include <nlohmann/json.hpp>

using namespace stepsim;
using namespace stepsim::models;

namespace {

Scenario scenario(const std::string& extra_sets_json) {
  auto doc = nlohmann::json::parse(R"({"model": "llama3.2-1b", "hardware": "h100-sxm",
      "parallelism": {"dp": 64}, "batch": {"seq_len": 2048}})");
  doc.merge_patch(nlohmann::json::parse(extra_sets_json));
  return parse_scenario(doc, "test.json");
}

std::int64_t allreduce_count(const Report& r) {
  std::int64_t n = 0;
  for (const auto& c : r.collectives) n += c.count;
  return n;
}

}  // namespace

TEST_CASE("ddp: no_sync communicates only on the last micro-batch (semantics §A.6 rule 24)", "[models]") {
  const Report one = run(scenario("{}"));
  const Report accum = run(scenario(R"({"batch": {"grad_accum": 4}})"));
  const Report every = run(scenario(R"({"batch": {"grad_accum": 4}, "parallelism": {"sync_every_micro_batch": true}})"));
  CHECK(allreduce_count(accum) == allreduce_count(one));
  CHECK(allreduce_count(every) == 4 * allreduce_count(one));
  CHECK(accum.comm_time_s == Approx(one.comm_time_s));
  CHECK(every.comm_time_s == Approx(4 * one.comm_time_s));
  CHECK(every.step_time_s > accum.step_time_s);
}

TEST_CASE("ddp: bucket sizes follow bucket_cap_mb; tiny caps give one bucket per tensor", "[models]") {
  const Report def = run(scenario("{}"));
  CHECK(def.bucket_count == 49);
  const Report tiny = run(scenario(R"({"parallelism": {"bucket_cap_mb": 0.05, "first_bucket_mb": 0.05}})"));
  // Llama-3.2-1B: 16 blocks × 9 tensors + final norm + tied embedding = 146 tensors; norms
  // (4 kB) pair up with their neighbour until 0.05 MB is reached.
  CHECK(tiny.bucket_count == 113);
  const Report huge = run(scenario(R"({"parallelism": {"bucket_cap_mb": 1e6, "first_bucket_mb": 1e6}})"));
  CHECK(huge.bucket_count == 1);
  CHECK(huge.gradient_bytes == Approx(2.0 * 1'235'814'400));
}

TEST_CASE("ddp: one whole-model bucket is fully exposed after backward (seed 000 §2.5)", "[models][invariant]") {
  const Report huge = run(scenario(R"({"parallelism": {"bucket_cap_mb": 1e6, "first_bucket_mb": 1e6}})"));
  REQUIRE(huge.collectives.size() == 1);
  CHECK(huge.exposed_comm_s == Approx(huge.collectives[0].time_s).epsilon(1e-9));
  CHECK(huge.step_time_s == Approx(huge.compute_time_s + huge.exposed_comm_s).epsilon(1e-9));
}

TEST_CASE("ddp: step time = compute + exposed communication on one rank", "[models][invariant]") {
  for (const char* patch : {"{}", R"({"batch": {"grad_accum": 3}})", R"({"batch": {"seq_len": 512}})"}) {
    const Report r = run(scenario(patch));
    CHECK(r.step_time_s == Approx(r.compute_time_s + r.exposed_comm_s).epsilon(1e-9));
    CHECK(r.compute_time_s == Approx(r.forward_time_s + r.backward_time_s + r.optimizer_time_s + r.overhead_time_s).epsilon(1e-9));
  }
}

TEST_CASE("ddp: more network bandwidth is never slower", "[models][invariant]") {
  auto doc = nlohmann::json::parse(R"({"model": "llama3.2-1b", "parallelism": {"dp": 64}, "batch": {"seq_len": 1024},
    "hardware": {"name": "x", "compute": {"peak_flops_per_s": 989e12}, "memory": {"hbm_bytes": 80e9,
      "hbm_bandwidth_bytes_per_s": 3.35e12}, "node": {"gpus_per_node": 8},
      "intra_node": {"bandwidth_bytes_per_s": 450e9, "step_latency_s": 1e-6},
      "inter_node": {"nics_per_node": 2, "nic_bandwidth_bytes_per_s": 50e9, "step_latency_s": 4e-6}}})");
  double previous = 1e30;
  for (int nics : {2, 4, 8}) {
    doc["hardware"]["inter_node"]["nics_per_node"] = nics;
    const Report r = run(parse_scenario(doc, "test.json"));
    CHECK(r.step_time_s <= previous);
    previous = r.step_time_s;
  }
}

TEST_CASE("ddp: tied embedding gradient is ready only at the end of backward", "[models]") {
  // Under the seeds' alpha-beta model (explicit: NVIDIA profiles default to nccl, whose
  // slower 2-node AllReduces keep the stream busy, so bucket 47's AllReduce, not the embedding
  // backward, is what bucket 48's AllReduce waits for).
  const Report r = run(scenario(R"({"collectives": {"cost_model": "alpha-beta"}})"));
  // The critical path ends: embedding backward -> its AllReduce -> copy-back -> Adam.
  REQUIRE(r.critical_path_tail.size() == 4);
  CHECK(r.critical_path_tail[0].name == "bwd.embed.model.embed_tokens.weight");
  CHECK(r.critical_path_tail[1].name.rfind("allreduce.bucket", 0) == 0);
  CHECK(r.critical_path_tail[2].name == "ddp.copy_bucket_to_grad");
  CHECK(r.critical_path_tail[3].name == "optimizer.adam");
}

TEST_CASE("ddp: frozen parameters get no gradient, bucket or optimizer state", "[models]") {
  auto doc = nlohmann::json::parse(R"({"hardware": "h100-sxm", "parallelism": {"dp": 8},
    "model": {"name": "adapter", "kind": "layers", "layers": [
      {"name": "frozen", "params": [{"name": "w0", "numel": 1000000, "trainable": false}], "fwd_flops_per_token": 2e6},
      {"name": "lora", "params": [{"name": "w1", "numel": 1000}], "fwd_flops_per_token": 2e3}]}})");
  const Report r = run(parse_scenario(doc, "test.json"));
  CHECK(r.gradient_bytes == 2000);
  CHECK(r.bucket_count == 1);
  CHECK(r.memory.grads_bytes == 2000);
  CHECK(r.memory.optimizer_bytes == 12 * 1000);
  CHECK(r.memory.params_bytes == 2 * 1001000);
}

TEST_CASE("ddp: measured layer times are replayed as given", "[models]") {
  auto doc = nlohmann::json::parse(R"({"hardware": "h100-sxm", "parallelism": {"dp": 1}, "optimizer": "none",
    "model": {"name": "measured", "kind": "layers", "layers": [
      {"name": "a", "params": [{"name": "w", "numel": 1000}], "fwd_s": 0.010, "bwd_s": 0.020},
      {"name": "b", "params": [{"name": "w", "numel": 1000}], "fwd_s": 0.005, "bwd_s": 0.015}]}})");
  const Report r = run(parse_scenario(doc, "test.json"));
  CHECK(r.forward_time_s == Approx(0.015));
  CHECK(r.backward_time_s == Approx(0.035));
  CHECK(r.comm_time_s == 0);  // dp = 1: AllReduce over one rank costs nothing
}

TEST_CASE("ddp: same scenario, same report bytes, wall time included nowhere (issue 13 item 19)", "[models]") {
  const std::string json = report_json(run(scenario("{}")));
  CHECK(json == report_json(run(scenario("{}"))));
  CHECK(json.find("wall_time") == std::string::npos);
  CHECK(report_text(run(scenario("{}"))) == report_text(run(scenario("{}"))));
}

TEST_CASE("ddp: gradient accumulation adds each new gradient into .grad from the second micro-batch on") {
  // PyTorch AccumulateGrad: .grad += new (read both, write one) = 3 bytes per gradient byte; the
  // bucket copy (2) runs only when hooks are armed (last micro-batch under no_sync).
  const Scenario s = scenario(R"({"batch": {"grad_accum": 3}})");
  const LoweredStep step = find_strategy("ddp").lower(s);
  auto bytes = [&](const std::string& name) {
    for (sim::TaskId id = 0; id < step.graph.size(); ++id)
      if (step.graph.task(id).name == name) return step.graph.task(id).bytes;
    FAIL("no task " << name);
    return 0.0;
  };
  const std::string t = "bwd.layers.3.mlp.down_proj.weight";
  const double grad = 2.0 * 2048 * 8192;  // Llama-3.2-1B down_proj, bf16
  CHECK(bytes("mb1." + t) - bytes("mb0." + t) == Approx(3 * grad).epsilon(1e-9));
  CHECK(bytes("mb2." + t) - bytes("mb0." + t) == Approx(5 * grad).epsilon(1e-9));
}

TEST_CASE("ddp: precision.fp32_grad_accum prices the fp32 accumulation buffer's traffic (issue 13 item 18)") {
  // With an fp32 buffer every micro-batch adds the bf16 gradient into it: the first reads the
  // gradient and writes the buffer (2 + 4 bytes per element), later ones also read the buffer
  // (2 + 8); the step time follows (it was unchanged before: memory only).
  const Scenario plain = scenario(R"({"batch": {"grad_accum": 3}})");
  const Scenario fp32 = scenario(R"({"batch": {"grad_accum": 3}, "precision": {"fp32_grad_accum": true}})");
  const LoweredStep a = find_strategy("ddp").lower(plain), b = find_strategy("ddp").lower(fp32);
  auto bytes = [](const LoweredStep& step, const std::string& name) {
    for (sim::TaskId id = 0; id < step.graph.size(); ++id)
      if (step.graph.task(id).name == name) return step.graph.task(id).bytes;
    FAIL("no task " << name);
    return 0.0;
  };
  const std::string t = "bwd.layers.3.mlp.down_proj.weight";
  const double numel = 2048.0 * 8192;
  CHECK(bytes(b, "mb0." + t) - bytes(a, "mb0." + t) == Approx(6 * numel).epsilon(1e-9));
  CHECK(bytes(b, "mb1." + t) - bytes(a, "mb1." + t) == Approx((10 - 6) * numel).epsilon(1e-9));
  CHECK(run(fp32).backward_time_s > run(plain).backward_time_s);
  // One micro-batch: nothing to accumulate, the same time.
  CHECK(run(scenario(R"({"precision": {"fp32_grad_accum": true}})")).step_time_s == run(scenario("{}")).step_time_s);
}

TEST_CASE("scenario: a model with no trainable parameter is refused (issue 13 item 16)", "[models]") {
  auto doc = nlohmann::json::parse(R"({"hardware": "h100-sxm", "parallelism": {"dp": 8},
    "model": {"name": "frozen", "kind": "layers", "layers": [
      {"name": "l", "params": [{"name": "w", "numel": 1000, "trainable": false}], "fwd_flops_per_token": 2e3}]}})");
  CHECK_THROWS_WITH(parse_scenario(doc, "test.json"),
                    Catch::Matchers::Contains("test.json: /model: model 'frozen' has no trainable parameter"));
}

TEST_CASE("run: a step too long for the simulator's clock names the model field (issue 13 item 17)", "[models]") {
  auto doc = nlohmann::json::parse(R"({"hardware": "h100-sxm", "parallelism": {"dp": 8},
    "model": {"name": "slow", "kind": "layers", "layers": [
      {"name": "l0", "params": [{"name": "w", "numel": 1000}], "fwd_s": 1e-3, "bwd_s": 1e-3},
      {"name": "l1", "params": [{"name": "w", "numel": 1000}], "fwd_s": 2e6, "bwd_s": 1e-3}]}})");
  CHECK_THROWS_WITH(run(parse_scenario(doc, "test.json")),
                    Catch::Matchers::Contains("test.json: /model/layers/1: layer 'l1' makes task 'fwd.l1' take 2e+06 s"));
}

namespace {

std::int64_t op_count(const Report& r, const std::string& op, double* bytes = nullptr) {
  std::int64_t n = 0;
  for (const auto& c : r.collectives)
    if (c.op == op && c.group == "dp") {
      n += c.count;
      if (bytes != nullptr) *bytes += c.bytes * static_cast<double>(c.count);
    }
  return n;
}

}  // namespace

TEST_CASE("ddp: Megatron-LM's distributed optimizer reduce-scatters the buckets, shards the optimizer, gathers the "
          "parameters (semantics-parallel.md §A9-A11)", "[models]") {
  // Llama-3.2-1B, bf16 on 64 H100: 1,235,814,400 parameters, bf16 gradients and parameters.
  const Report ddp = run(scenario("{}"));
  const Report dist = run(scenario(R"({"parallelism": {"use_distributed_optimizer": true}})"));
  const Report ahead = run(scenario(R"({"parallelism": {"use_distributed_optimizer": true,
      "overlap_param_gather": true}})"));
  // The same buckets, each reduce-scattered instead of all-reduced.
  double ar_bytes = 0, rs_bytes = 0, ag_bytes = 0, ahead_ag_bytes = 0;
  CHECK(op_count(ddp, "AllReduce", &ar_bytes) == 49);
  CHECK(op_count(dist, "AllReduce") == 0);
  CHECK(op_count(dist, "ReduceScatter", &rs_bytes) == 49);
  CHECK(rs_bytes == Approx(ar_bytes));
  CHECK(rs_bytes == Approx(2.0 * 1'235'814'400));
  // Then every bucket's parameters (bf16) gathered: after the step, or ahead of the forward.
  CHECK(op_count(dist, "AllGather", &ag_bytes) == 49);
  CHECK(ag_bytes == Approx(2.0 * 1'235'814'400));
  CHECK(op_count(ahead, "AllGather", &ahead_ag_bytes) == 49);
  CHECK(ahead_ag_bytes == Approx(ag_bytes));
  // The optimizer states (fp32 master + Adam's m and v: 12 B per bf16 parameter) are 1/64 of DDP's,
  // and so is the optimizer's work; parameters and gradients stay whole.
  CHECK(dist.memory.optimizer_bytes == Approx(ddp.memory.optimizer_bytes / 64));
  CHECK(ddp.memory.optimizer_bytes == Approx(12.0 * 1'235'814'400));
  CHECK(dist.memory.params_bytes == Approx(ddp.memory.params_bytes));
  CHECK(dist.memory.grads_bytes == Approx(ddp.memory.grads_bytes));
  CHECK(dist.optimizer_time_s < ddp.optimizer_time_s / 8);
  // Gathered after the step, the parameters are on the critical path; ahead of the forward,
  // each layer waits only for its own bucket, so less is exposed; both still add up.
  CHECK(ahead.exposed_comm_s < dist.exposed_comm_s);
  CHECK(ahead.step_time_s < dist.step_time_s);
  for (const Report* r : {&dist, &ahead})
    CHECK(r->step_time_s == Approx(r->compute_time_s + r->exposed_comm_s).epsilon(1e-9));
  // A gather after the step needs at least its ring's time on top of compute and the reductions.
  double after_gathers = 0;
  for (const auto& c : dist.collectives)
    if (c.op == "AllGather") after_gathers += c.time_s * static_cast<double>(c.count);
  CHECK(dist.exposed_comm_s >= after_gathers * (1 - 1e-9));
}

TEST_CASE("ddp: the distributed optimizer under pipeline parallelism (Megatron-LM, §A9-A11)", "[models]") {
  const Report pp = run(scenario(R"({"parallelism": {"dp": 16, "pp": 4, "use_distributed_optimizer": true,
      "overlap_param_gather": true}, "batch": {"grad_accum": 8}})"));
  const Report plain = run(scenario(R"({"parallelism": {"dp": 16, "pp": 4}, "batch": {"grad_accum": 8}})"));
  CHECK(op_count(pp, "AllReduce") == 0);
  CHECK(op_count(pp, "ReduceScatter") == op_count(plain, "AllReduce"));
  CHECK(op_count(pp, "AllGather") == op_count(plain, "AllReduce"));
  CHECK(pp.memory.optimizer_bytes == Approx(plain.memory.optimizer_bytes / 16));
}

TEST_CASE("ddp: overlap_param_gather needs the distributed optimizer; both are ddp's knobs", "[models]") {
  CHECK_THROWS_WITH(scenario(R"({"parallelism": {"overlap_param_gather": true}})"),
                    Catch::Contains("/parallelism/overlap_param_gather") &&
                        Catch::Contains("use_distributed_optimizer"));
  CHECK_THROWS_WITH(scenario(R"({"parallelism": {"strategy": "fsdp", "use_distributed_optimizer": true}})"),
                    Catch::Contains("does not apply to strategy 'fsdp'"));
}
