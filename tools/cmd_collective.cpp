// SPDX-License-Identifier: Apache-2.0
// `stepsim collective` and `stepsim threshold`: closed-form collective costs and the DP threshold.
#include "tools/commands.hpp"

#include "sim/support/error.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include "hardware/calibration.hpp"
#include "hardware/calibration_json.hpp"
#include "hardware/hardware_profile_json.hpp"
#include "hardware/nccl_model.hpp"
#include "sim/support/units.hpp"

#include <memory>

namespace stepsim::tools {

namespace {

using ordered = nlohmann::ordered_json;

struct CollectiveArgs {
  std::string op;
  std::string hardware;
  long long ranks = 0;
  std::string size;
  long long gpus_per_node = 0;
  int axes = 0;
  std::string cost_model;  ///< "" = the profile's default (alpha-beta with --calibration)
  std::string algorithm = "auto";
  std::string format = "text";
  std::string calibration;  ///< overlay JSON ("" = nominal)
};

struct ThresholdArgs : ClusterFlags {
  std::string format = "text";
};

int cmd_collective(const CollectiveArgs& a) {
  const auto hw = hardware::load_profile(a.hardware, "--hardware");
  double bytes = 0;
  try {
    bytes = parse_quantity(a.size, Dimension::Bytes);
  } catch (const UnitError& e) {
    throw InputError("--size", "", e.what());
  }
  // A buffer is a whole number of bytes; "-0" is a sign error, not an empty buffer.
  if (!(bytes >= 0) || std::signbit(bytes) || bytes > 1e18 || bytes != std::floor(bytes))
    throw InputError("--size", "", fmt::format("expected a whole number of bytes in [0, 1e18] (e.g. 1024, '25MiB'), "
                                               "got '{}'{}", a.size, bytes >= 0 && bytes != std::floor(bytes)
                                               ? fmt::format(" = {:g} bytes", bytes) : ""));
  const auto group = group_shape(hw, a.ranks, a.gpus_per_node, a.axes);
  const hardware::CollectiveOp op = a.op == "allreduce"       ? hardware::CollectiveOp::AllReduce
                                    : a.op == "reducescatter" ? hardware::CollectiveOp::ReduceScatter
                                                              : hardware::CollectiveOp::AllGather;
  std::shared_ptr<const hardware::CalibrationOverlay> overlay;
  if (!a.calibration.empty())
    overlay = std::make_shared<const hardware::CalibrationOverlay>(hardware::read_calibration(a.calibration));
  if (overlay && overlay->hardware != hw.name)
    throw InputError("--calibration", "",
                     fmt::format("overlay '{}' was fitted over profile '{}', but --hardware is '{}'; its factors "
                                 "are relative to that profile's nominal numbers", a.calibration, overlay->hardware, hw.name));
  // A GEMM-only overlay says nothing about collectives: the nominal model stays in charge.
  if (overlay && overlay->tables.empty()) overlay.reset();
  hardware::CollectiveModel model = overlay ? hardware::CollectiveModel::AlphaBeta : hardware::default_collective_model(hw);
  if (!a.cost_model.empty()) model = hardware::parse_collective_model(a.cost_model, "--cost-model", "");
  if (overlay && model != hardware::CollectiveModel::AlphaBeta)
    throw InputError("--cost-model", "",
                     fmt::format("'{}' cannot be combined with --calibration '{}': overlays are fitted over the "
                                 "alpha-beta model (expected alpha-beta)", a.cost_model, a.calibration));
  if (model == hardware::CollectiveModel::Nccl && hw.nccl.arch.empty())
    throw InputError("--cost-model", "",
                     fmt::format("'nccl' needs a profile with an \"nccl\" object (GPU generation and NCCL channels); "
                                 "profile '{}' has none (expected alpha-beta)", hw.name));
  if (model == hardware::CollectiveModel::Nccl && a.algorithm != "auto")
    throw InputError("--algorithm", "",
                     fmt::format("'{}' is an alpha-beta algorithm; the nccl cost model picks NCCL's own algorithm and "
                                 "protocol (use --cost-model alpha-beta, or --algorithm auto)", a.algorithm));
  const std::string model_name = hardware::collective_model_name(model);
  const auto c = overlay ? hardware::calibrated_collective_cost(hw, overlay.get(), op, bytes, group, algorithm_from(a.algorithm))
                         : hardware::model_collective_cost(model, hw, op, bytes, group, algorithm_from(a.algorithm));
  const double n = group.ranks;
  const double bus = n <= 1 ? 0 : (op == hardware::CollectiveOp::AllReduce ? 2 * (n - 1) / n : (n - 1) / n);
  const double algbw = c.time_s() > 0 ? bytes / c.time_s() : 0;
  ordered j;
  j["schema"] = "stepsim.collective/1";
  j["op"] = hardware::collective_op_label(op);
  j["hardware"] = hw.name;
  j["cost_model"] = model_name;
  j["ranks"] = group.ranks;
  j["gpus_per_node"] = group.ranks_per_node;
  j["nodes"] = (group.ranks + group.ranks_per_node - 1) / group.ranks_per_node;
  j["bytes"] = bytes;
  j["time_s"] = c.time_s();
  j["bandwidth_time_s"] = c.bandwidth_s;
  j["latency_time_s"] = c.latency_s;
  j["algbw_bytes_per_s"] = algbw;
  j["busbw_bytes_per_s"] = algbw * bus;
  j["algorithm"] = c.algorithm;
  if (!c.protocol.empty()) j["protocol"] = c.protocol;
  j["bottleneck"] = c.bottleneck;
  if (!c.torus_dims.empty()) j["torus_dims"] = c.torus_dims;
  j["calibration"] = overlay ? ordered(hardware::describe_overlay(*overlay)) : ordered(nullptr);
  if (overlay) {
    j["calibration_segment"] = c.calibration;
    j["calibration_extrapolated"] = c.calibration_extrapolated;
  }
  if (a.format == "json") {
    print(j.dump(2) + "\n");
  } else {
    const auto ms = [](double sec) { return fmt::format("{:.4f} ms", sec * 1e3); };
    print(fmt::format("{} of {} over {} ({} per node) on {} [{} / {}]\n", j["op"].get<std::string>(),
                      bytes >= 1e6 ? fmt::format("{:.2f} MB", bytes / 1e6) : fmt::format("{:.0f} B", bytes),
                      count_of(static_cast<std::size_t>(group.ranks), "rank"), group.ranks_per_node, hw.name, model_name,
                      c.protocol.empty() ? c.algorithm : c.algorithm + " / " + c.protocol));
    print(fmt::format("  time        {} = bandwidth {} + latency {}\n", ms(c.time_s()), ms(c.bandwidth_s),
                      ms(c.latency_s)));
    print(fmt::format("  algbw       {:.3g} GB/s   busbw {:.3g} GB/s (nccl-tests definitions)\n", algbw / 1e9,
                      algbw * bus / 1e9));
    print(fmt::format("  bottleneck  {}\n", c.bottleneck));
    print(fmt::format("  calibration {}\n", overlay ? hardware::describe_overlay(*overlay) : "none (nominal profile)"));
    if (overlay) print(fmt::format("  segment     {}\n", c.calibration));
    if (c.calibration_extrapolated)
      print("  warning: calibration_extrapolated: size or rank count outside the fitted range; the nearest "
            "segment's factors were used\n");
  }
  return 0;
}

int cmd_threshold(const ThresholdArgs& a) {
  const auto hw = hardware::load_profile(a.hardware, "--hardware");
  const auto group = group_shape(hw, a.ranks, a.gpus_per_node, a.axes);
  const bool moe = a.moe_experts != 0 || a.moe_topk != 0;
  const auto [experts, topk] = moe_shape(a.moe_experts, a.moe_topk);
  const auto t = hardware::dp_threshold(hw, group, experts, topk);
  ordered j;
  j["schema"] = "stepsim.threshold/1";
  j["hardware"] = hw.name;
  j["ranks"] = group.ranks;
  j["gpus_per_node"] = group.ranks_per_node;
  j["peak_flops_per_s"] = hw.peak_flops_per_s;
  j["tokens_per_gpu"] = t.tokens_per_gpu;
  j["tokens_per_gpu_asymptotic"] = t.tokens_per_gpu_asymptotic;
  j["moe_factor"] = t.moe_factor;
  j["min_global_batch_tokens"] = t.min_global_batch_tokens;
  j["min_global_batch_tokens_asymptotic"] = t.min_global_batch_tokens_asymptotic;
  j["bottleneck"] = t.bottleneck;
  j["algorithm"] = t.algorithm;
  if (!t.torus_dims.empty()) j["torus_dims"] = t.torus_dims;
  j["formula"] = "tokens/GPU = C * t_bw(AllReduce of V) / (2V): backward 4*Psi*tokens/C equals the "
                 "bandwidth time of the bf16 gradient AllReduce (seed 000 §7.1, §7.3, §7.4)";
  if (a.format == "json") {
    print(j.dump(2) + "\n");
  } else {
    print(fmt::format("DP communication-bound threshold on {} x {} ({})\n", group.ranks, hw.name, t.algorithm));
    print(fmt::format("  tokens per GPU      {:.0f}   (exact ring factors)\n", t.tokens_per_gpu));
    print(fmt::format("  asymptotic (C/W)    {:.0f}   (every (k-1)/k taken as 1)\n", t.tokens_per_gpu_asymptotic));
    if (moe) print(fmt::format("  MoE factor E/k      {:g}   (already applied)\n", t.moe_factor));
    print(fmt::format("  min global batch    {:.4g} tokens  (asymptotic {:.4g})\n", t.min_global_batch_tokens,
                      t.min_global_batch_tokens_asymptotic));
    print(fmt::format("  bottleneck          {}\n", t.bottleneck));
    if (!t.torus_dims.empty()) {
      std::string dims;
      for (int d : t.torus_dims) dims += (dims.empty() ? "" : "x") + std::to_string(d);
      print(fmt::format("  torus rings         {}\n", dims));
    }
    print("  below this many tokens per GPU per micro-batch, the gradient AllReduce cannot hide behind backward\n");
  }
  return 0;
}

}  // namespace

void add_collective_commands(CLI::App& app, Action& action) {
  auto coll = std::make_shared<CollectiveArgs>();
  auto* collective = app.add_subcommand("collective", "closed-form time of one collective");
  collective->add_option("op", coll->op, "allreduce | reducescatter | allgather")
      ->required()
      ->check(CLI::IsMember({"allreduce", "reducescatter", "allgather"}));
  collective->add_option("--hardware", coll->hardware, "profile name or JSON file")->required();
  collective->add_option("--ranks", coll->ranks, "ranks in the communicator")->required();
  collective->add_option("--size", coll->size, "buffer size as nccl-tests counts it: bytes or '16GB', '25MiB'")->required();
  collective->add_option("--gpus-per-node", coll->gpus_per_node, "GPUs per node (default: the profile's)")
      ->check(given_positive());
  collective->add_option("--axes", coll->axes, "TPU: torus axes used at once (1-3; default all)")->check(given_positive());
  collective->add_option("--cost-model", coll->cost_model, "collective cost model")->check(CLI::IsMember({"alpha-beta", "nccl"}));
  collective->add_option("--algorithm", coll->algorithm, "auto | ring | hierarchical")
      ->check(CLI::IsMember({"auto", "ring", "hierarchical"}));
  collective->add_option("--format", coll->format, "output format")->check(CLI::IsMember({"text", "json"}));
  collective->add_option("--calibration", coll->calibration, "calibration overlay JSON (stepsim calibrate nccl-tests -o)");
  collective->callback([coll, &action] { action = [coll] { return cmd_collective(*coll); }; });

  auto thr = std::make_shared<ThresholdArgs>();
  auto* threshold = app.add_subcommand("threshold", "tokens per GPU below which pure DP is communication-bound");
  add_cluster_flags(*threshold, *thr, true);
  threshold->add_option("--format", thr->format, "output format")->check(CLI::IsMember({"text", "json"}));
  threshold->callback([thr, &action] { action = [thr] { return cmd_threshold(*thr); }; });
}

}  // namespace stepsim::tools
