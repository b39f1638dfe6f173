// SPDX-License-Identifier: Apache-2.0
// Report -> JSON (schema "stepsim.report/1"), keys in a fixed order.
#include "models/report.hpp"

#include "hardware/gemm_model.hpp"
#include "models/float8.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>

namespace stepsim::models {

std::string report_json(const Report& r) {
  using ordered = nlohmann::ordered_json;
  ordered j;
  j["schema"] = r.schema;
  j["scenario"] = ordered::parse(r.scenario.resolved->dump());
  j["model"] = {{"name", r.scenario.model.name},
                {"kind", r.scenario.model.kind},
                {"hf_model_type", r.scenario.model.hf_model_type.empty() ? ordered(nullptr)
                                                                          : ordered(r.scenario.model.hf_model_type)},
                {"parameters", r.scenario.model_parameters},
                {"trainable_parameters", r.scenario.model_trainable_parameters},
                {"layers", r.scenario.model.layers.size()}};
  if (r.scenario.parallelism.tp > 1) j["model"]["parameters_per_tp_rank"] = r.scenario.model.parameter_count();
  if (const auto& t = r.scenario.model.transformer_shape; t && t->moe.experts > 0) {
    // A mixture of experts: what a token uses, the routing, and expert parallelism's split.
    const auto& p = r.scenario.parallelism;
    j["model"]["active_parameters"] = r.scenario.model_active_parameters;
    j["model"]["moe"] = {{"experts", t->moe.experts},
                         {"experts_per_token", t->moe.topk},
                         {"moe_blocks", std::count(t->moe.sparse_blocks.begin(), t->moe.sparse_blocks.end(), true)},
                         {"ep", p.ep},
                         {"experts_per_rank", t->moe.experts / p.ep},
                         {"expert_data_parallel_ranks", r.scenario.expert_data_ranks()},
                         {"parameters_per_ep_rank", r.scenario.model.parameter_count()}};
  }
  j["hardware"] = {{"name", r.scenario.hardware.name},
                   {"peak_flops_per_s", r.scenario.hardware.peak_flops_per_s},
                   {"sustained_flops_per_s", r.scenario.hardware.sustained_flops_per_s()},
                   {"hbm_bytes", r.scenario.hardware.hbm_bytes},
                   {"gpus_per_node", r.scenario.cluster.gpus_per_node},
                   {"nodes", r.scenario.cluster.nodes},
                   {"base", r.scenario.hardware.base.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.scenario.hardware.base)},
                   {"overridden", r.scenario.hardware.overridden},
                   {"network", r.scenario.hardware.network_preset.empty() ? nlohmann::json(nullptr)
                                                                           : nlohmann::json(r.scenario.hardware.network_preset)},
                   {"nic_bandwidth_bytes_per_s", r.scenario.hardware.nic_bandwidth_bytes_per_s},
                   {"gpus_per_nic", r.scenario.hardware.gpus_per_nic},
                   {"fabric_latency_per_log2_nodes_s", r.scenario.hardware.fabric_latency_per_log2_nodes_s},
                   {"fabric_bandwidth_efficiency", r.scenario.hardware.fabric_bandwidth_efficiency}};
  j["cost_model"] = hardware::collective_model_name(r.scenario.collective_model);  // always (issue 13 item 10)
  j["calibration"] = r.scenario.calibration ? ordered(hardware::describe_overlay(*r.scenario.calibration)) : ordered(nullptr);
  const hardware::GemmCurve& curve = hardware::effective_gemm_curve(r.scenario.hardware, r.scenario.calibration.get());
  if (curve.present())
    j["gemm_curve"] = {{"max_efficiency", curve.max_efficiency}, {"overhead_s", curve.overhead_s}, {"tile_m", curve.tile_m},
                       {"tile_n", curve.tile_n}, {"sms", curve.sms},
                       {"from", r.scenario.calibration && r.scenario.calibration->gemm ? "calibration" : "profile"}};
  // The GEMM arithmetics in use beyond BF16/FP16: their peak and efficiency (issue 14 item 5).
  {
    const Scenario& sc = r.scenario;
    auto math_json = [&](hardware::GemmMath m) {
      nlohmann::ordered_json o = {{"math", hardware::gemm_math_name(m)},
                                  {"peak_flops_per_s", sc.hardware.peak_for(m)},
                                  {"sustained_flops_per_s", sc.hardware.sustained_flops_per_s(m)}};
      o["max_efficiency"] = curve.present() ? curve.max_efficiency_for(m) : sc.hardware.gemm_efficiency;
      return o;
    };
    if (sc.precision.gemm_math != hardware::GemmMath::Tensor16) j["gemm_math"] = math_json(sc.precision.gemm_math);
    if (sc.precision.float8 != PrecisionConfig::Float8::None) {
      nlohmann::ordered_json f = math_json(hardware::GemmMath::Fp8);
      f["recipe"] = "tensorwise";
      f["linears"] = float8_linear_total(sc).linears;
      f["all_gather_fp8"] = sc.precision.float8_all_gather;
      j["float8"] = f;
    }
  }
  if (r.scenario.framework.host_op_s > 0) j["host_op_s"] = r.scenario.framework.host_op_s;
  j["step_time_s"] = r.step_time_s;
  {
    const ErrorBand& b = r.error_band;
    nlohmann::ordered_json band = {{"set", b.present() ? nlohmann::ordered_json(b.set) : nlohmann::ordered_json()},
                                   {"family", b.kind.family.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(b.kind.family)},
                                   {"sharded", b.kind.sharded},
                                   {"math", b.kind.math},
                                   {"parallelism", b.kind.mesh_label()}};
    if (!r.error_band_withheld.empty()) band["withheld"] = r.error_band_withheld;
    if (b.present()) {
      band["runs"] = b.rows;
      band["p10_error"] = b.p10;
      band["median_error"] = b.median;
      band["p90_error"] = b.p90;
      band["real_over_predicted"] = {b.real_over_predicted_low(), b.real_over_predicted_high()};
    }
    j["error_band"] = std::move(band);
    if (const CalibrationBand& c = r.calibration_band; c.present()) {
      nlohmann::ordered_json cb = {{"overlay", c.overlay}, {"points", c.points}, {"max_residual", c.max_residual},
                                   {"real_over_predicted_low", c.real_over_predicted_low()}};
      cb["real_over_predicted_high"] =
          c.real_over_predicted_high() > 0 ? nlohmann::ordered_json(c.real_over_predicted_high()) : nlohmann::ordered_json();
      j["calibration_band"] = std::move(cb);
    }
  }
  j["compute_time_s"] = r.compute_time_s;
  j["forward_time_s"] = r.forward_time_s;
  j["backward_time_s"] = r.backward_time_s;
  j["optimizer_time_s"] = r.optimizer_time_s;
  j["overhead_time_s"] = r.overhead_time_s;
  j["comm_time_s"] = r.comm_time_s;
  j["exposed_comm_s"] = r.exposed_comm_s;
  if (r.checkpoint_present) {
    const CheckpointCost& c = r.checkpoint;
    j["checkpoint"] = {{"format", c.format},
                       {"interval", c.interval},
                       {"state_bytes", c.state_bytes},
                       {"total_bytes", c.total_bytes},
                       {"max_rank_bytes", c.max_rank_bytes},
                       {"gather_bytes", c.gather_bytes},
                       {"gather_s", c.gather_s},
                       {"stage_s", c.stage_s},
                       {"write_s", c.write_s},
                       {"storage_write_bytes_per_s", c.storage_write_bytes_per_s},
                       {"save_s", c.save_s},
                       {"amortised_s", c.amortised_s},
                       {"step_time_with_checkpoints_s", r.step_time_s + c.amortised_s},
                       {"rank0_host_bytes", c.rank0_host_bytes}};
  }
  if (r.offload.present) {
    const OffloadSummary& o = r.offload;
    const auto& z = r.scenario.sharding;
    j["offload"] = {{"device", o.device},
                    {"param_device", z.offload_param_device},
                    {"pin_memory", z.cpu_offload || (z.offload_optimizer() && z.offload_optimizer_pin_memory)},
                    {"cpu_optimizer", z.cpu_offload ? "torch.optim.Adam" : "DeepSpeedCPUAdam"},
                    {"d2h_bytes", o.d2h_bytes},
                    {"d2h_time_s", o.d2h_time_s},
                    {"h2d_bytes", o.h2d_bytes},
                    {"h2d_time_s", o.h2d_time_s},
                    {"cpu_optimizer_time_s", o.cpu_optimizer_time_s},
                    {"nvme_read_bytes", o.nvme_read_bytes},
                    {"nvme_write_bytes", o.nvme_write_bytes},
                    {"nvme_time_s", o.nvme_time_s},
                    {"busy_time_s", o.busy_time_s},
                    {"exposed_time_s", o.exposed_time_s}};
  }
  if (r.scenario.parallelism.tp > 1 || r.scenario.parallelism.pp > 1 || r.scenario.parallelism.cp > 1 ||
      r.scenario.parallelism.ep > 1) {
    ordered by_group = ordered::object();
    if (r.scenario.parallelism.tp > 1)
      by_group["tp"] = {{"comm_time_s", r.tp_comm_time_s}, {"exposed_comm_s", r.tp_exposed_comm_s}};
    if (r.scenario.parallelism.cp > 1)
      by_group["cp"] = {{"comm_time_s", r.cp_comm_time_s}, {"exposed_comm_s", r.cp_exposed_comm_s}};
    if (r.scenario.parallelism.ep > 1)
      by_group["ep"] = {{"comm_time_s", r.ep_comm_time_s}, {"exposed_comm_s", r.ep_exposed_comm_s}};
    if (r.scenario.parallelism.pp > 1)
      by_group["pp"] = {{"comm_time_s", r.pp_comm_time_s}, {"exposed_comm_s", r.pp_exposed_comm_s}};
    by_group["dp"] = {{"comm_time_s", r.dp_comm_time_s},
                      {"exposed_comm_s", r.dp_exposed_comm_s}};
    j["comm_by_group"] = std::move(by_group);
  }
  if (!r.pipeline_stages.empty()) {
    const auto& p = r.scenario.parallelism;
    ordered stages = ordered::array();
    for (const auto& st : r.pipeline_stages)
      stages.push_back({{"layers", st.layers},
                        {"blocks", st.blocks},
                        {"parameters", st.parameters},
                        {"compute_time_s", st.compute_time_s},
                        {"exposed_comm_s", st.exposed_comm_s},
                        {"bubble_s", st.bubble_s},
                        {"bubble_fraction", r.step_time_s > 0 ? st.bubble_s / r.step_time_s : 0.0},
                        {"memory_peak_bytes", st.memory_peak_bytes},
                        {"activations_bytes", st.activations_bytes}});
    j["pipeline"] = {{"pp", p.pp},
                     {"schedule", p.pipeline_schedule},
                     {"virtual_stages", p.virtual_stages},
                     {"micro_batches", r.scenario.batch.grad_accum},
                     // PP rank 0's, as the report's other rows (a sweep's CSV column).
                     {"bubble_s", r.pipeline_stages.front().bubble_s},
                     {"bubble_fraction", r.step_time_s > 0 ? r.pipeline_stages.front().bubble_s / r.step_time_s : 0.0},
                     {"stages", std::move(stages)}};
  }
  j["wait_time_s"] = r.wait_time_s;
  j["overlap_slowdown_s"] = r.overlap_slowdown_s;
  j["link_sharing_stretch_s"] = r.link_sharing_stretch_s;
  j["overlap_fraction"] = r.overlap_fraction;
  // What the tokens_* figures count: "tokens", or "images" for a convolutional network.
  j["sample_unit"] = r.scenario.model.sample_unit();
  j["tokens_per_step"] = r.tokens_per_step;
  j["tokens_per_s"] = r.tokens_per_s;
  j["gpus"] = r.scenario.world_size();  // dp × tp × cp × pp
  j["tokens_per_s_per_gpu"] = r.tokens_per_s / static_cast<double>(r.scenario.world_size());
  j["model_flops_per_gpu"] = r.model_flops_per_gpu;
  j["mfu"] = r.mfu;
  j["comm_bound_threshold_tokens_per_gpu"] = r.comm_bound_threshold_tokens_per_gpu;
  j["comm_bound_tokens_per_gpu_effective"] = r.comm_bound_tokens_per_gpu_effective;
  j["buckets"] = {{"count", r.bucket_count},
                  {"max_bytes", r.bucket_bytes_max},
                  {"gradient_bytes", r.gradient_bytes}};
  ordered colls = ordered::array();
  for (const auto& c : r.collectives) {
    colls.push_back({{"op", c.op},
                     {"bytes", c.bytes},
                     {"count", c.count},
                     {"time_s", c.time_s},
                     {"latency_time_s", c.latency_s},
                     {"algbw_bytes_per_s", c.algbw_bytes_per_s},
                     {"busbw_bytes_per_s", c.busbw_bytes_per_s},
                     {"algorithm", c.algorithm},
                     {"ranks", c.ranks},
                     {"spans_nodes", c.spans_nodes}});
    if (!c.protocol.empty()) colls.back()["protocol"] = c.protocol;  // NCCL cost model only
    colls.back()["group"] = c.group;
  }
  j["collectives"] = colls;
  j["comm_bytes_per_rank"] = r.comm_bytes_per_rank;
  j["inter_node_collective_bytes"] = r.inter_node_collective_bytes;
  j["memory"] = {{"params_bytes", r.memory.params_bytes},
                 {"grads_bytes", r.memory.grads_bytes},
                 {"optimizer_bytes", r.memory.optimizer_bytes},
                 {"grad_accum_bytes", r.memory.grad_accum_bytes},
                 {"activations_bytes", r.memory.activations_bytes},
                 {"buffers_bytes", r.memory.buffers_bytes},
                 {"total_bytes", r.memory.total_bytes},
                 {"peak_time_s", r.memory.peak_time_s},
                 {"capacity_bytes", r.memory.capacity_bytes},
                 {"hbm_bytes", r.memory.hbm_bytes},
                 {"reserved_bytes", r.memory.reserved_bytes},
                 {"fits", r.memory.fits},
                 {"allocation_waits", r.memory.allocation_waits},
                 {"allocation_wait_s", r.memory.allocation_wait_s},
                 {"allocation_over_limit", r.memory.allocation_over_limit}};
  if (r.offload.present) {
    j["memory"]["host_bytes"] = r.memory.host_bytes;
    j["memory"]["host_capacity_bytes"] = r.memory.host_capacity_bytes;
    j["memory"]["host_fits"] = r.memory.host_fits;
    if (r.memory.nvme_bytes > 0) {
      j["memory"]["nvme_bytes"] = r.memory.nvme_bytes;
      j["memory"]["nvme_capacity_bytes"] = r.memory.nvme_capacity_bytes;
    }
  }
  ordered tail = ordered::array();
  for (const auto& p : r.critical_path_tail)
    tail.push_back({{"task", p.name}, {"start_s", p.start_s}, {"end_s", p.end_s}});
  j["critical_path"] = {{"tasks", r.critical_path_tasks}, {"tail", tail}};
  if (r.per_rank.present)
    j["per_rank"] = {{"ranks", r.per_rank.ranks},
                     {"step_time_min_s", r.per_rank.step_time_min_s},
                     {"step_time_max_s", r.per_rank.step_time_max_s},
                     {"spread_s", r.per_rank.spread_s},
                     {"slowest_rank", r.per_rank.slowest_rank},
                     {"pipeline_stages", r.per_rank.pipeline_stages},
                     {"no_variation_step_time_s", r.per_rank.no_variation_step_time_s},
                     {"straggler_cost_s", r.per_rank.straggler_cost_s},
                     {"expert_load_busiest", r.per_rank.moe_layers > 0 ? nlohmann::ordered_json(r.per_rank.expert_load_busiest)
                                                                        : nlohmann::ordered_json(nullptr)},
                     {"busiest_expert_rank", r.per_rank.moe_layers > 0 ? nlohmann::ordered_json(r.per_rank.busiest_expert_rank)
                                                                        : nlohmann::ordered_json(nullptr)},
                     {"dropped_token_fraction", r.per_rank.moe_layers > 0 ? nlohmann::ordered_json(r.per_rank.dropped_token_fraction)
                                                                           : nlohmann::ordered_json(nullptr)}};
  j["calibration_extrapolated"] = r.calibration_extrapolated;
  j["warnings"] = r.warnings;
  j["tasks"] = r.tasks;
  j["events"] = r.events;
  return j.dump(2) + "\n";
}

}  // namespace stepsim::models
