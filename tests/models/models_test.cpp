// SPDX-License-Identifier: Apache-2.0
// Tests of models/: catalog shapes, bucket assignment, memory, scenario validation.
#include "models/memory.hpp"
#include "models/report.hpp"
#include "models/model_spec_json.hpp"
#include "models/scenario.hpp"
#include "models/strategy/buckets.hpp"
#include "sim/support/error.hpp"
#include "tests/support/catch.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>

using namespace stepsim;
using namespace stepsim::models;
using Catch::Matchers::Contains;

namespace {
constexpr double kMiB = 1024.0 * 1024.0;

Scenario scenario(const std::string& text) { return parse_scenario(nlohmann::json::parse(text), "test.json"); }
}  // namespace

TEST_CASE("models: catalog parameter counts match the public configs", "[models]") {
  CHECK(load_model("llama3.2-1b").parameter_count() == 1'235'814'400);  // HF: 1.24B, tied
  CHECK(load_model("llama3-8b").parameter_count() == 8'030'261'248);    // HF: 8.03B
  CHECK(load_model("llama3-70b").parameter_count() == 70'553'706'496);  // HF: 70.6B
  CHECK(load_model("llama3-405b").parameter_count() == 405'853'388'800);  // HF: 405.9B
  CHECK(load_model("zero-7.5b").parameter_count() == Approx(7.5e9).epsilon(0.01));
  CHECK(load_model("seed-mlp").parameter_count() == 32LL * 2 * 4096 * 16384);
}

TEST_CASE("models: a transformer block's tensors follow HF registration order", "[models]") {
  const auto m = load_model("llama3-8b");
  const auto& block = m.layers[1];
  REQUIRE(block.params.size() == 9);
  CHECK(block.params[0].name == "model.layers.0.self_attn.q_proj.weight");
  CHECK(block.params[6].name == "model.layers.0.mlp.down_proj.weight");
  CHECK(block.params[7].name == "model.layers.0.input_layernorm.weight");
  // Backward produces down_proj's gradient first and input_layernorm's last.
  const auto order = m.ready_order(1);
  CHECK(block.params[order.front()].name == "model.layers.0.mlp.down_proj.weight");
  CHECK(block.params[order.back()].name == "model.layers.0.input_layernorm.weight");
  CHECK(m.layers.back().name == "lm_head");
  CHECK(m.layers.back().params.size() == 1);
  // Tied embeddings: the head has no tensor of its own; the weight lives in embed.
  const auto tied = load_model("llama3.2-1b");
  CHECK(tied.layers.back().params.empty());
  CHECK(tied.layers.front().params[0].name == "model.embed_tokens.weight");
}

TEST_CASE("buckets: close at ≥ limit, limits walk (first, cap), tensors never split (semantics §A.1)", "[models]") {
  const std::vector<BucketInput> in = {{0.6 * kMiB, 0}, {0.6 * kMiB, 0}, {10 * kMiB, 0}, {20 * kMiB, 0},
                                       {30 * kMiB, 0}, {1 * kMiB, 0}};
  const auto b = assign_buckets(in, {1 * kMiB, 25 * kMiB});
  REQUIRE(b.size() == 4);
  CHECK(b[0].tensors == std::vector<std::size_t>{0, 1});  // 1.2 MiB ≥ 1 MiB
  CHECK(b[1].tensors == std::vector<std::size_t>{2, 3});  // 30 MiB ≥ 25 MiB
  CHECK(b[2].tensors == std::vector<std::size_t>{4});     // one tensor larger than the cap
  CHECK(b[3].tensors == std::vector<std::size_t>{5});     // leftover
  CHECK(b[1].bytes == 30 * kMiB);
}

TEST_CASE("buckets: dtypes never share a bucket", "[models]") {
  const std::vector<BucketInput> in = {{10 * kMiB, 0}, {10 * kMiB, 1}, {10 * kMiB, 0}, {10 * kMiB, 1}};
  const auto b = assign_buckets(in, {15 * kMiB});
  REQUIRE(b.size() == 2);
  CHECK(b[0].tensors == std::vector<std::size_t>{0, 2});
  CHECK(b[1].tensors == std::vector<std::size_t>{1, 3});
}

// DeepSpeed's IPG bucket (stage_1_and_2.py rule 56; stage3.py
// reduce_independent_p_g_buckets_and_remove_grads for the partition groups).
TEST_CASE("buckets: DeepSpeed flushes the IPG bucket when full, and under ZeRO-3 at a group change", "[models]") {
  // 40 + 50 fit a bucket of 100; 30 would not; 200 is reduced alone.
  CHECK(deepspeed_ipg_flushes({40, 50, 30, 200, 10}, 100) == std::vector<bool>{false, false, true, true, true});
  // A gradient of another partition group flushes the open bucket first, whatever room is left.
  CHECK(deepspeed_ipg_flushes({10, 10, 10, 10}, 100, {0, 1, 1, 0}) == std::vector<bool>{false, true, false, true});
  CHECK(deepspeed_ipg_flushes({10, 10}, 100, {0, 0}) == std::vector<bool>{false, false});
}

TEST_CASE("memory: DDP keeps 16 bytes of model state per parameter (seed 000 §8)", "[models]") {
  const auto s = scenario(R"({"model": "zero-7.5b", "hardware": "h100-sxm", "parallelism": {"dp": 64,
      "gradient_as_bucket_view": true}, "batch": {"seq_len": 1}})");
  const auto m = static_memory(s);
  const double psi = static_cast<double>(s.model.parameter_count());
  CHECK(m.params_bytes == Approx(2 * psi));
  CHECK(m.grads_bytes == Approx(2 * psi));
  CHECK(m.optimizer_bytes == Approx(12 * psi));
  CHECK(m.buffers_bytes == 0);
  CHECK((m.params_bytes + m.grads_bytes + m.optimizer_bytes) / 1e9 == Approx(120).epsilon(0.01));  // ZeRO table: 120 GB
  const auto none = scenario(R"({"model": "llama3.2-1b", "hardware": "h100-sxm", "parallelism": {"dp": 8},
      "optimizer": "none"})");
  CHECK(static_memory(none).optimizer_bytes == 0);
  CHECK(static_memory(none).buffers_bytes == static_memory(none).grads_bytes);
}

TEST_CASE("scenario: defaults follow PyTorch and the profile", "[models]") {
  const auto s = scenario(R"({"model": "llama3.2-1b", "hardware": "h100-sxm", "parallelism": {"dp": 64}})");
  CHECK(s.parallelism.strategy == "ddp");
  CHECK(s.parallelism.bucket_cap_mb == 25);  // reducer.hpp kDefaultBucketBytesCap
  CHECK(s.parallelism.first_bucket_mb == 1);  // reducer.hpp kDefaultFirstBucketBytes
  CHECK(s.cluster.gpus_per_node == 8);
  CHECK(s.cluster.nodes == 8);
  CHECK(s.batch.grad_accum == 1);
  CHECK(s.ranks_per_node() == 8);
  const auto small = scenario(R"({"model": "llama3.2-1b", "hardware": "h100-sxm", "parallelism": {"dp": 4}})");
  CHECK(small.ranks_per_node() == 4);
  CHECK(small.cluster.nodes == 1);
}

TEST_CASE("scenario: inline model and hardware objects", "[models]") {
  const auto s = scenario(R"({
    "model": {"name": "tiny", "kind": "mlp", "layers": 2, "hidden": 64, "ffn": 256},
    "hardware": {"name": "lab", "compute": {"peak_flops_per_s": "100TFLOP/s"},
                 "memory": {"hbm_bytes": "24GB", "hbm_bandwidth_bytes_per_s": "1TB/s"},
                 "node": {"gpus_per_node": 4},
                 "intra_node": {"bandwidth_bytes_per_s": "25GB/s"},
                 "inter_node": {"nics_per_node": 1, "nic_bandwidth_bytes_per_s": "100Gb/s"}},
    "parallelism": {"dp": 8}})");
  CHECK(s.model_ref == "inline");
  CHECK(s.model.parameter_count() == 2 * 2 * 64 * 256);
  CHECK(s.hardware.node_egress_bytes_per_s() == 12.5e9);
  CHECK(s.cluster.nodes == 2);
}

TEST_CASE("scenario: errors name the path, the value and the expectation", "[models]") {
  CHECK_THROWS_WITH(scenario(R"({"model": "llama3.2-1b", "hardware": "h100-sxm", "parallelism": {"dp": 12}})"),
                    "test.json: /parallelism/dp: dp (12) must be a multiple of /cluster/gpus_per_node (8) when "
                    "the group spans several nodes");
  CHECK_THROWS_WITH(scenario(R"({"model": "llama3.2-1b", "hardware": "h100-sxm", "parallelism": {"dp": 8, "bucket_cap_mb": -1}})"),
                    "test.json: /parallelism/bucket_cap_mb: expected a positive number, got -1");
  CHECK_THROWS_WITH(scenario(R"({"model": "llama3.2-1b", "hardware": "h100-sxm", "parallelism": {"dp": 8}, "batch": {"seqlen": 8}})"),
                    Contains("/batch/seqlen: unknown key 'seqlen' (did you mean 'seq_len'?)"));
  CHECK_THROWS_AS(scenario(R"({"model": "gpt5", "hardware": "h100-sxm", "parallelism": {"dp": 8}})"), InputError);
}

TEST_CASE("scenario echo: a report's resolved scenario runs again to the same step", "[models]") {
  // The JSON report's "scenario" names every default it used; fed back (from the same folder, so
  // relative profile paths resolve alike) it must parse and give the same step time.
  std::size_t checked = 0;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(STEPSIM_SOURCE_DIR) + "/configs/examples")) {
    if (entry.path().extension() != ".json") continue;
    CAPTURE(entry.path().string());
    const Report first = run(load_scenario(entry.path().string(), {}));
    const nlohmann::json echo = nlohmann::json::parse(first.scenario.resolved->dump());
    const Report again = run(parse_scenario(echo, entry.path().string()));
    CHECK(again.step_time_s == first.step_time_s);
    CHECK(again.memory.total_bytes == first.memory.total_bytes);
    ++checked;
  }
  CHECK(checked >= 10);
}
