// SPDX-License-Identifier: Apache-2.0
// Convolutional networks (issue 14 item 1, the pytorch-ddp-bench and DLPerf ResNet rows):
// torchvision's ResNet / ResNeXt (models::make_resnet), cuDNN-style implicit-GEMM convolutions
// (LayerGemm::Conv), split-K weight gradients (hardware::split_k_factor) and SGD.
#include "hardware/gemm_model.hpp"
#include "hardware/hardware_profile_json.hpp"
#include "models/memory.hpp"
#include "models/model_spec.hpp"
#include "models/model_spec_json.hpp"
#include "models/report.hpp"
#include "models/scenario.hpp"
#include "models/simulate.hpp"
#include "models/strategy/compute_tasks.hpp"
#include "sim/support/error.hpp"
#include "tests/support/catch.hpp"

#include <nlohmann/json.hpp>

#include <string>

using namespace stepsim;
using namespace stepsim::models;
using hardware::GemmShape;

namespace {

double forward_flops_per_image(const ModelSpec& m) {
  double f = 0;
  for (const auto& l : m.layers) f += l.fwd_gemm_flops_per_token;
  return f;
}

Scenario resnet_scenario(const std::string& model, int dp, const std::string& extra = "{}") {
  auto doc = nlohmann::json::parse(R"({"hardware": "v100-sxm2", "parallelism": {"strategy": "ddp"},
      "batch": {"micro_batch_size": 32}, "precision": {"param_dtype": "fp32"}, "optimizer": "sgd"})");
  doc["model"] = model;
  doc["parallelism"]["dp"] = dp;
  doc["cluster"] = {{"gpus_per_node", dp < 8 ? dp : 8}, {"nodes", dp < 8 ? 1 : dp / 8}};
  doc.merge_patch(nlohmann::json::parse(extra));
  return parse_scenario(doc, "test.json");
}

}  // namespace

TEST_CASE("resnet: torchvision's parameter counts, tensor order and forward FLOPs", "[models][resnet]") {
  // Parameters: torchvision's model documentation (resnet50 25,557,032; resnet101 44,549,160;
  // resnext50_32x4d 25,028,904; resnext101_32x8d 88,791,336). Tensors: len(model.parameters()).
  // Multiply-adds of conv2d and linear at 224x224, counted with forward hooks on torchvision 0.14
  // (Debian python3-torchvision); torchvision's documentation rounds them to 4.09, 7.80, 4.23
  // and 16.41 GFLOPS.
  struct Expected {
    const char* name;
    std::int64_t params;
    std::size_t tensors;
    double macs;
  };
  for (const Expected& e : {Expected{"resnet50", 25557032, 161, 4089184256.0},
                            Expected{"resnet101", 44549160, 314, 7801405440.0},
                            Expected{"resnext50_32x4d", 25028904, 161, 4230479872.0},
                            Expected{"resnext101_32x8d", 88791336, 314, 16414015488.0}}) {
    CAPTURE(e.name);
    const ModelSpec m = load_model(e.name, "test", "/model");
    CHECK(m.kind == "resnet");
    CHECK(m.sample_unit() == "images");
    CHECK(m.parameter_count() == e.params);
    std::size_t tensors = 0;
    for (const auto& l : m.layers) tensors += l.params.size();
    CHECK(tensors == e.tensors);
    CHECK(forward_flops_per_image(m) == Approx(2.0 * e.macs).epsilon(1e-12));
    for (const auto& l : m.layers)
      for (const auto& p : l.params) CHECK(p.dtype == DType::FP32);
  }
  // Registration order (model.parameters()), which DDP's buckets follow.
  const ModelSpec m = load_model("resnet50", "test", "/model");
  REQUIRE(m.layers.size() == 18);  // stem, 16 Bottlenecks, head
  CHECK(m.layers.front().name == "stem");
  CHECK(m.layers.back().name == "head");
  const std::vector<std::string> first = {"conv1.weight", "bn1.weight", "bn1.bias"};
  for (std::size_t i = 0; i < first.size(); ++i) CHECK(m.layers[0].params.at(i).name == first[i]);
  const LayerSpec& block = m.layers[1];
  CHECK(block.name == "layer1.0");
  const std::vector<std::string> names = {
      "layer1.0.conv1.weight", "layer1.0.bn1.weight", "layer1.0.bn1.bias", "layer1.0.conv2.weight",
      "layer1.0.bn2.weight",   "layer1.0.bn2.bias",   "layer1.0.conv3.weight", "layer1.0.bn3.weight",
      "layer1.0.bn3.bias",     "layer1.0.downsample.0.weight", "layer1.0.downsample.1.weight",
      "layer1.0.downsample.1.bias"};
  REQUIRE(block.params.size() == names.size());
  for (std::size_t i = 0; i < names.size(); ++i) CHECK(block.params[i].name == names[i]);
  CHECK(m.layers[2].params.size() == 9);  // no downsample after the first block of a stage
  CHECK(m.layers.back().params.at(0).name == "fc.weight");
  CHECK(m.layers.back().params.at(0).numel == 2048 * 1000);
  CHECK(m.layers.back().params.at(1).name == "fc.bias");
  CHECK(m.layers[16].params.at(3).name == "layer4.2.conv2.weight");
  CHECK(m.layers[16].params.at(3).numel == 512 * 512 * 9);
}

TEST_CASE("resnet: a convolution is an implicit GEMM reading input, weight and output once", "[models][resnet]") {
  const Scenario s = resnet_scenario("resnet50", 1);
  // layer1.0.conv2: 3x3, 64 -> 64 channels at 56x56, 32 images: M = 32·3136, N = 64, K = 64·9.
  const LayerGemm& conv2 = s.model.layers.at(1).gemms.at(1);
  CHECK(conv2.kind == LayerGemm::Kind::Conv);
  CHECK(conv2.rows == 56 * 56);
  CHECK(conv2.n == 64);
  CHECK(conv2.k == 576);
  const double bytes = 4.0 * (32.0 * (64.0 * 3136 + 64.0 * 3136) + 64.0 * 576);
  const hardware::GemmList fwd = layer_gemms(s, 1, false);
  REQUIRE(fwd.size() == 4);  // conv1, conv2, conv3, downsample
  CHECK(fwd[1].shape.m == 32.0 * 3136);
  CHECK(fwd[1].shape.n == 64);
  CHECK(fwd[1].shape.k == 576);
  CHECK(fwd[1].shape.hbm_bytes == Approx(bytes));
  CHECK(fwd[1].shape.math == hardware::GemmMath::Fp32);
  CHECK_FALSE(fwd[1].shape.split_k);
  // Backward: data gradient [M, K, N] and weight gradient [N, K, M] with split-K, per conv.
  const hardware::GemmList bwd = layer_gemms(s, 1, true);
  REQUIRE(bwd.size() == 8);
  CHECK(bwd[2].shape.m == 32.0 * 3136);
  CHECK(bwd[2].shape.n == 576);
  CHECK(bwd[2].shape.k == 64);
  CHECK(bwd[3].shape.m == 64);
  CHECK(bwd[3].shape.n == 576);
  CHECK(bwd[3].shape.k == 32.0 * 3136);
  CHECK(bwd[3].shape.split_k);
  // The stem's conv1 takes the images, which need no gradient: weight gradient only.
  CHECK(layer_gemms(s, 0, true).size() == 1);
  // ResNeXt's grouped 3x3 conv runs one GEMM per group: layer1.0.conv2 of 32x4d has 128
  // channels in 32 groups of 4 (K = 4·9).
  const Scenario x = resnet_scenario("resnext50_32x4d", 1);
  const hardware::GemmShape g = layer_gemms(x, 1, false).at(1).shape;
  CHECK(g.batch == 32);
  CHECK(g.n == 4);
  CHECK(g.k == 36);
  CHECK(hardware::gemm_flops(g) == Approx(32.0 * 2 * 3136 * 128 * 36));
}

TEST_CASE("resnet: split-K fills the SMs a weight gradient's few output tiles leave idle", "[hardware][resnet]") {
  const auto hw = hardware::load_profile("v100-sxm2");  // 80 SMs, 128x128 tiles
  const hardware::GemmCurve& c = hw.gemm_curve;
  GemmShape wgrad{64, 576, 32.0 * 3136, 1, false, hardware::GemmMath::Fp32, 0, true};
  // 1 x 5 tiles: floor(80 / 5) = 16 splits (the reduction allows floor(100352 / 256) = 392).
  CHECK(hardware::split_k_factor(c, wgrad) == 16);
  CHECK(hardware::wave_efficiency(c, wgrad) == Approx(1.0));
  // The reduction bounds the split: K = 1024 allows 4 slices of 256.
  CHECK(hardware::split_k_factor(c, GemmShape{64, 576, 1024, 1, false, hardware::GemmMath::Fp32, 0, true}) == 4);
  // Enough tiles, or no split asked for: one pass.
  CHECK(hardware::split_k_factor(c, GemmShape{2048, 2048, 1e5, 1, false, hardware::GemmMath::Fp32, 0, true}) == 1);
  GemmShape plain = wgrad;
  plain.split_k = false;
  CHECK(hardware::split_k_factor(c, plain) == 1);
  CHECK(hardware::wave_efficiency(c, plain) == Approx(5.0 / 80.0));
  // Splitting is faster here, and it still respects the arithmetic's peak.
  const double split_s = hardware::gemm_time_s(hw, c, wgrad);
  CHECK(split_s < hardware::gemm_time_s(hw, c, plain));
  CHECK(hardware::gemm_flops(wgrad) / split_s <= hw.peak_for(hardware::GemmMath::Fp32));
}

TEST_CASE("resnet: SGD's step and state, and a step that respects the FP32 peak", "[models][resnet]") {
  const Scenario s = resnet_scenario("resnet50", 8);
  CHECK(s.batch.seq_len == 1);
  CHECK(s.tokens_per_micro_batch() == 32);
  sim::Task opt;
  REQUIRE(optimizer_step(s, 1.0, opt));
  CHECK(opt.name == "optimizer.sgd");
  // 11 fp32 passes per parameter (sgd_task): 44 bytes.
  CHECK(opt.bytes == Approx(44.0 * 25557032));
  // One fp32 momentum buffer per parameter.
  CHECK(static_memory(s).optimizer_bytes == Approx(4.0 * 25557032));
  const Report r = run(s);
  // A physical bound: the model's FLOPs cannot run faster than the V100's FP32 peak.
  const double flops = 3.0 * 2.0 * 4089184256.0 * 32;
  CHECK(r.step_time_s >= flops / 15.7e12);
  // PyTorch's DDP benchmark (../shared/data/training_measurements.md §A): resnet50, 1M/8G,
  // p50 0.104 s/iter; stepsim within 5 % (docs/accuracy.md, pytorch-ddp-bench).
  CHECK(r.step_time_s == Approx(0.104).epsilon(0.05));
  // Gradients are fp32, 102 MB in DDP's buckets: five buckets, the first 1 MiB-capped.
  CHECK(r.bucket_count == 5);
}
