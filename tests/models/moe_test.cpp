// SPDX-License-Identifier: Apache-2.0
// Mixture of experts (issue 16 items 2-3): routed experts as grouped GEMMs on the tokens the
// router sends them, the active experts' FLOPs only, and the MoE layer's routing kernels.
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
