// SPDX-License-Identifier: Apache-2.0
// Activation-checkpointing policies (issue 14 item 4; models/recompute.hpp;
// semantics-parallel.md §G2–G4, §G6).
#include "models/memory.hpp"
#include "models/recompute.hpp"
#include "models/report.hpp"
#include "models/scenario.hpp"
#include "tests/support/catch.hpp"

#include <nlohmann/json.hpp>

using namespace stepsim;
using namespace stepsim::models;

namespace {

// Llama-3-8B (h 4096, kv 1024, ffn 14336, 32 heads, 32 blocks), seq 8192, one micro-batch.
// Fused kernels (framework.implementation compile: Korthikanti's accounting) unless `eager`.
Scenario llama(const std::string& activations, std::int64_t dp = 8, bool eager = false) {
  auto doc = nlohmann::json::parse(R"({"hardware": "h100-sxm", "model": "llama3-8b",
      "parallelism": {"strategy": "ddp"}, "batch": {"seq_len": 8192}})");
  doc["parallelism"]["dp"] = dp;
  doc["activations"] = nlohmann::json::parse(activations);
  doc["framework"] = {{"implementation", eager ? "eager" : "compile"}};
  doc["sim"] = {{"gemm_model", "flat"}};  // GEMMs at the flat efficiency: the timing cases count FLOPs
  return parse_scenario(doc, "test.json");
}

constexpr double h = 4096, kv = 1024, f = 14336, heads = 32, tokens = 8192;
// Korthikanti accounting of one block without recompute (models/model_spec.hpp): 2·(5h + 2kv + 3f).
constexpr double block_none = 2 * (5 * h + 2 * kv + 3 * f);

}  // namespace

TEST_CASE("recompute: selective_op keeps the block input, wq, wv, w1, w2 and SDPA's output (§G3)", "[models]") {
  const Scenario s = llama(R"({"recompute": "selective_op"})");
  // Layer 0 is the embedding (root), 1..32 the blocks, then the final norm and the LM head.
  REQUIRE(s.model.layers.size() == 35);
  CHECK(layer_recompute(s, 0) == LayerRecompute::None);
  CHECK(layer_recompute(s, 33) == LayerRecompute::None);
  CHECK(layer_recompute(s, 34) == LayerRecompute::None);
  for (std::size_t b = 1; b <= 32; ++b) CHECK(layer_recompute(s, b) == LayerRecompute::SelectiveOp);
  // Kept: input h, wq h, wv kv, SDPA output h (bf16) and its fp32 logsumexp 4 B per head, w1 f, w2 h.
  const double kept = 2 * (h + h + kv + h + f + h) + 4 * heads;
  CHECK(kept_activation_bytes_per_token(s, 1) == Approx(kept).epsilon(1e-12));
  CHECK(recomputed_activation_bytes_per_token(s, 1) == Approx(block_none - kept).epsilon(1e-12));
  // The 2nd, 4th, 6th matmuls re-run: wk, wo, w3 (gemms 1, 3, 5 of q k v o gate up down).
  const RecomputeWork w = recompute_work(s, 1);
  CHECK(w.gemms == std::vector<std::size_t>{1, 3, 5});
  CHECK(w.linear_flops_share == Approx((h * kv + h * h + h * f) / (2 * h * h + 2 * h * kv + 3 * h * f)));
  CHECK(w.attention == 0);
  CHECK(w.streaming == 1);
  // The peak: every block's kept bytes, the root layers', and one block rebuilt at a time.
  const Scenario none = llama(R"({"recompute": "none"})");
  const double root = kept_activation_bytes_per_token(none, 0) + kept_activation_bytes_per_token(none, 33) +
                      kept_activation_bytes_per_token(none, 34);
  CHECK(activation_bytes(s) == Approx((32 * kept + root + (block_none - kept)) * tokens).epsilon(1e-12));
}

TEST_CASE("recompute: selective_layer fully recomputes the ac_freq-th, 2·ac_freq-th … block (§G4)", "[models]") {
  const Scenario two = llama(R"({"recompute": "selective_layer"})");  // torchtitan's default "2"
  CHECK(two.activations.ac_freq == 2);
  for (std::size_t b = 1; b <= 32; ++b)
    CHECK(layer_recompute(two, b) == (b % 2 == 0 ? LayerRecompute::Full : LayerRecompute::None));
  CHECK(layer_recompute(two, 0) == LayerRecompute::None);
  const Scenario three = llama(R"({"recompute": "selective_layer", "ac_freq": 3})");
  int full = 0;
  for (std::size_t b = 1; b <= 32; ++b) full += layer_recompute(three, b) == LayerRecompute::Full ? 1 : 0;
  CHECK(full == 10);  // blocks 3, 6, … 30
  CHECK(layer_recompute(three, 3) == LayerRecompute::Full);
  // ac_freq 1 is full AC on every block, the root layers keeping theirs.
  const Scenario one = llama(R"({"recompute": "selective_layer", "ac_freq": 1})");
  const Scenario none = llama(R"({"recompute": "none"})");
  const double root = kept_activation_bytes_per_token(none, 0) + kept_activation_bytes_per_token(none, 33) +
                      kept_activation_bytes_per_token(none, 34);
  CHECK(activation_bytes(one) == Approx((32 * 2 * h + root + block_none - 2 * h) * tokens).epsilon(1e-12));
  CHECK(activation_bytes(two) == Approx((16 * 2 * h + 16 * block_none + root + block_none - 2 * h) * tokens).epsilon(1e-12));
}

TEST_CASE("recompute: megatron_selective re-runs the attention core; with flash it stored nothing of it (§G6)",
          "[models]") {
  const Scenario flash = llama(R"({"recompute": "megatron_selective"})");
  const Scenario none = llama(R"({"recompute": "none"})");
  CHECK(activation_bytes(flash) == Approx(activation_bytes(none)).epsilon(1e-12));
  CHECK(recompute_work(flash, 1).gemms == std::vector<std::size_t>{7, 8});  // Scores and Values
  CHECK(recompute_work(flash, 1).attention == 1);
  // Eager attention: the a·s bf16 scores per token are no longer kept, only rebuilt one block at a time.
  const Scenario eager = llama(R"({"recompute": "megatron_selective", "attention": "eager"})");
  const Scenario eager_none = llama(R"({"recompute": "none", "attention": "eager"})");
  const double scores = 2 * heads * 8192;
  CHECK(activation_bytes(eager_none) - activation_bytes(eager) == Approx((32 - 1) * scores * tokens).epsilon(1e-9));
}

TEST_CASE("recompute: selective_op adds exactly the re-run matmuls and one forward of the streaming kernels",
          "[models]") {
  // One GPU (no communication), the flat roofline of h100-sxm (sim.gemm_model flat): backward time
  // grows by the re-run GEMM FLOPs at peak·gemm_efficiency plus one forward's streaming bytes at
  // hbm_bandwidth·hbm_efficiency, per block.
  const Scenario none = llama(R"({"recompute": "none"})", 1);
  const Scenario sel = llama(R"({"recompute": "selective_op"})", 1);
  const Scenario full = llama(R"({"recompute": "full"})", 1);
  const Report rn = run(none), rs = run(sel), rf = run(full);
  const auto& hw = none.hardware;
  REQUIRE_FALSE(hw.gemm_curve.present());
  const double rerun_flops = 2 * (h * kv + h * h + h * f) * tokens * 32;
  const double streaming = 2 * (10 * h + 2 * (h + kv) + 3 * f) * tokens * 32;
  const double expected = rerun_flops / (hw.peak_flops_per_s * hw.gemm_efficiency) +
                          streaming / (hw.hbm_bandwidth_bytes_per_s * hw.hbm_efficiency);
  CHECK(rs.backward_time_s - rn.backward_time_s == Approx(expected).epsilon(1e-6));
  CHECK(rn.forward_time_s == Approx(rs.forward_time_s).epsilon(1e-12));
  CHECK(rn.step_time_s < rs.step_time_s);
  CHECK(rs.step_time_s < rf.step_time_s);
  // Memory: between full and none.
  CHECK(rf.memory.activations_bytes < rs.memory.activations_bytes);
  CHECK(rs.memory.activations_bytes < rn.memory.activations_bytes);
}

TEST_CASE("recompute: under eager PyTorch selective_op re-runs the op-by-op composites too", "[models]") {
  // Eager (models/model_spec.hpp): each RMSNorm moves (2+4)+8+4+8+(4+2)+2·2 = 36 B per element
  // instead of 4, rotary 20 instead of 4 on q and k, repeat_kv copies k and v (2·2·(kv + h)),
  // SwiGLU 10 B per ffn element instead of 6; the kept bytes are the same (mm and SDPA outputs).
  const Scenario none = llama(R"({"recompute": "none"})", 1, true);
  const Scenario sel = llama(R"({"recompute": "selective_op"})", 1, true);
  CHECK(kept_activation_bytes_per_token(sel, 1) == Approx(2 * (4 * h + kv + f) + 4 * heads).epsilon(1e-12));
  // Eager RMSNorm keeps its fp32 input and bf16 output: 8h more bytes per block without recompute.
  CHECK(kept_activation_bytes_per_token(none, 1) == Approx(block_none + 8 * h).epsilon(1e-12));
  const Report rn = run(none), rs = run(sel);
  const auto& hw = none.hardware;
  const double rerun_flops = 2 * (h * kv + h * h + h * f) * tokens * 32;
  const double fused = 2 * (10 * h + 2 * (h + kv) + 3 * f);
  const double eager_extra = 2 * h * 32 + 16 * (h + kv) + 4 * (kv + h) + 4 * f;
  const double expected = rerun_flops / (hw.peak_flops_per_s * hw.gemm_efficiency) +
                          (fused + eager_extra) * tokens * 32 / (hw.hbm_bandwidth_bytes_per_s * hw.hbm_efficiency);
  CHECK(rs.backward_time_s - rn.backward_time_s == Approx(expected).epsilon(1e-6));
}

TEST_CASE("recompute: a fused cross-entropy keeps the bf16 logits, an upcast loss fp32 log-probabilities (hostile trial)",
          "[models]") {
  // Llama-3-8B's LM head (layer 34), vocab 128256: fp32 log-probabilities 4·V bytes per token
  // under "upcast"; flash-attn's fused kernel keeps the bf16 logits, 2·V, under any implementation
  // and under full recompute (the logits are the head's kept input).
  auto with = [](const std::string& ce, const std::string& impl, const std::string& rc) {
    auto doc = nlohmann::json::parse(R"({"hardware": "h100-sxm", "model": "llama3-8b", "parallelism": {"strategy": "ddp", "dp": 8},
                                         "batch": {"seq_len": 8192}})");
    doc["framework"] = {{"implementation", impl}, {"cross_entropy", ce}};
    doc["activations"] = {{"recompute", rc}};
    return parse_scenario(doc, "test.json");
  };
  for (const char* impl : {"eager", "compile"})
    for (const char* rc : {"none", "full"}) {
      CAPTURE(impl, rc);
      CHECK(kept_activation_bytes_per_token(with("upcast", impl, rc), 34) == Approx(4.0 * 128256));
      CHECK(kept_activation_bytes_per_token(with("fused", impl, rc), 34) == Approx(2.0 * 128256));
      CHECK(activation_bytes(with("upcast", impl, rc)) - activation_bytes(with("fused", impl, rc)) ==
            Approx(2.0 * 128256 * tokens).epsilon(1e-9));
    }
}
