// SPDX-License-Identifier: Apache-2.0
// `stepsim memory`, `collective` and `threshold` as library calls (models/queries_json.hpp).
#include "models/queries_json.hpp"

#include "models/pipeline.hpp"

#include "hardware/calibration.hpp"
#include "hardware/calibration_json.hpp"
#include "hardware/hardware_profile_json.hpp"
#include "hardware/nccl_model.hpp"
#include "models/memory.hpp"
#include "models/scenario.hpp"
#include "models/simulate.hpp"
#include "models/strategy/strategy.hpp"
#include "sim/support/error.hpp"
#include "sim/support/names.hpp"
#include "sim/support/units.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <memory>
#include <string_view>

namespace stepsim::models {

namespace {

// Seed 000 §8: even keeping only bf16 parameters and fp32 Adam m and v (10 bytes/param, no
// gradients, no activations), pure DP holds at most HBM / 10 parameters (96 GB v5p: about 9B).
constexpr double kSeedPureDpBytesPerParam = 10;

}  // namespace

QueryAnswer memory_query(const MemoryQuery& a) {
  double psi = a.params;
  std::int64_t dp = a.dp;
  double k = a.optimizer_bytes_per_param;
  double param_bytes = 2;
  double activations = -1;
  std::optional<hardware::HardwareProfile> hw;
  std::int64_t group = a.shard_group_size;
  // Under tensor parallelism a GPU holds one TP rank's share (the scenario's model); the
  // largest model is tp times what that share's states allow.
  std::int64_t tp = 1;
  double model_params = 0;
  // Under pipeline parallelism a GPU holds one PP rank's layers: the rank with the most
  // parameters, and the activations of the micro-batches its schedule holds at once.
  std::int64_t pp = 1;
  double in_flight = 1;
  std::string schedule;
  std::int64_t cp = 1;  // context parallelism: the states shard over dp × cp ranks
  // Expert parallelism: a rank holds the dense tensors and experts / ep of the routed ones
  // (psi, unsharded); a sharded state covers the dense tensors over dp × cp and the experts over
  // dp × cp / ep, which is the whole model over dp × cp (zero_model_states' sharded_psi).
  std::int64_t ep = 1;
  bool dist_opt = false;  // ddp with Megatron-LM's distributed optimizer: its row at stage 1
  if (!a.scenario.empty() || a.scenario_doc) {
    if (a.params != 0 || a.dp != 0 || !a.hardware.empty())
      throw InputError("--params/--dp/--hardware", "", "give either a scenario or --params and --dp (and --hardware), not both");
    const Scenario s = a.scenario_doc ? load_scenario_doc(*a.scenario_doc, a.scenario, a.sets)
                                      : load_scenario(a.scenario, a.sets);
    psi = static_cast<double>(s.model.parameter_count());
    tp = s.parallelism.tp;
    model_params = static_cast<double>(s.model_parameters);
    // The scenario's parameter dtype and optimizer: Adam keeps m and v (8 bytes), SGD one momentum
    // buffer (4), none nothing, plus an fp32 master copy (4) of low-precision parameters
    // (static_memory), unless --optimizer-bytes-per-param says otherwise.
    param_bytes = dtype_bytes(s.precision.held_dtype);
    if (!a.optimizer_bytes_given) k = optimizer_state_bytes_per_param(s.optimizer, s.precision.held_dtype);
    dp = s.data_ranks();  // the ranks the states shard over: dp × cp
    cp = s.parallelism.cp;
    ep = s.parallelism.ep;
    dist_opt = s.parallelism.use_distributed_optimizer;
    if (ep > 1) model_params = static_cast<double>(s.model_parameters);
    activations = activation_bytes(s);
    pp = s.parallelism.pp;
    if (pp > 1) {
      schedule = s.parallelism.pipeline_schedule;
      psi = 0;
      activations = 0;
      for (int r = 0; r < static_cast<int>(pp); ++r) {
        const Scenario rank_s = pipeline_rank_scenario(s, r);
        psi = std::max(psi, static_cast<double>(rank_s.model.parameter_count()));
        double flight = pipeline_micro_batches_in_flight(s, r);
        double held = activation_bytes(rank_s) * flight;
        const PipelineSchedule schedule_kind = pipeline_schedule_of(s.parallelism.pipeline_schedule);
        if (schedule_kind == PipelineSchedule::InterleavedZeroBubble || schedule_kind == PipelineSchedule::ZBVZeroBubble) {
          // Chunk by chunk: the V's two chunks of a rank differ (found by a trial: ZBV's rank 0 was
          // counted as 4 equal micro-batches where its program holds 7 of chunk 0 and 1 of chunk 1).
          const auto stages = pipeline_stage_layers(s);
          std::vector<double> chunk_bytes;
          for (int c = 0; c < static_cast<int>(s.parallelism.virtual_stages); ++c) {
            Scenario chunk_s = s;
            chunk_s.model.layers.clear();
            for (std::size_t l : stages[static_cast<std::size_t>(pipeline_stage_of(schedule_kind, static_cast<int>(pp), c, r))])
              chunk_s.model.layers.push_back(s.model.layers[l]);
            chunk_bytes.push_back(activation_bytes(chunk_s));
          }
          held = pipeline_peak_activation_bytes(s, r, chunk_bytes);
          const double per_micro_batch = activation_bytes(rank_s);
          flight = per_micro_batch > 0 ? held / per_micro_batch : flight;
        }
        if (held > activations) {
          activations = held;
          in_flight = flight;
        }
      }
    }
    hw = s.hardware;
    if (group == 0) group = strategy_of(s).hybrid ? s.shard_ranks() : s.ranks_per_node();
  } else {
    if (!a.sets.empty())
      throw InputError("--set", "", fmt::format("'{}' overrides a scenario's field, and none was given (with --params and "
                                                "--dp, use --optimizer-bytes-per-param for K)", a.sets.front()));
    if (!(psi > 0) || psi > 1e15)
      throw InputError("--params", "", fmt::format("expected a parameter count in (0, 1e15], got {:g}", psi));
    if (dp < 1 || dp > 100'000'000)
      throw InputError("--dp", "", fmt::format("expected an integer in [1, 100000000], got {}", dp));
    if (!a.hardware.empty()) hw = hardware::load_profile(a.hardware, "--hardware", "");
    if (group == 0) group = std::min<std::int64_t>(dp, hw ? hw->gpus_per_node : 8);
  }
  if (group < 1 || group > dp || dp % group != 0)
    throw InputError("--shard-group-size", "",
                     fmt::format("expected a divisor of the DP degree {} (HSDP shards inside groups of that many "
                                 "ranks), got {}", dp, group));
  if (!(k >= 0) || k > 1000)
    throw InputError("--optimizer-bytes-per-param", "", fmt::format("expected a number in [0, 1000], got {:g}", k));
  const double capacity = hw ? hw->usable_hbm_bytes() : 0;
  nlohmann::ordered_json j;
  j["schema"] = "stepsim.memory/1";
  j["params"] = psi;
  if (tp > 1 || pp > 1 || ep > 1) {
    j["tp"] = tp;
    j["pp"] = pp;
    j["model_params"] = model_params;
  }
  if (ep > 1) j["ep"] = ep;
  j["dp"] = dp;  // dp × cp under context parallelism
  if (cp > 1) j["cp"] = cp;
  j["shard_group_size"] = group;
  j["optimizer_bytes_per_param"] = k;
  j["param_bytes"] = param_bytes;
  j["formula"] = "ZeRO paper §3.1 (B bytes per param and per grad, 2 for bf16, 4 for fp32; K bytes/param of optimizer "
                 "state): ddp BΨ+BΨ+KΨ; zero1 BΨ+BΨ+KΨ/N; zero2 BΨ+(B+K)Ψ/N; zero3 and fsdp (FULL_SHARD) (B+B+K)Ψ/N; "
                 "hsdp (B+B+K)Ψ/G over a shard group of G ranks";
  const std::string subject =
      pp > 1   ? fmt::format("{:.4g} parameters on the largest PP rank (the model's {:.4g} over pp {}{})", psi, model_params,
                             pp, tp > 1 ? fmt::format(" and tp {}", tp) : std::string())
      : tp > 1 ? fmt::format("{:.4g} parameters per TP rank (the model's {:.4g} over tp {})", psi, model_params, tp)
      : ep > 1 ? fmt::format("{:.4g} parameters, {:.4g} per EP rank (the routed experts over ep {}; the sharded states "
                             "of each over the ranks holding it: dp / ep, or the shard group / ep under hsdp)",
                             model_params, psi, ep)
               : fmt::format("{:.4g} parameters", psi);
  std::string text = fmt::format("model-state memory per GPU for {}, N_d = {}{}, B = {:g}, K = {:g}, HSDP "
                                 "shard group G = {} (GB = 1e9 bytes)\n", subject,
                                 cp > 1 ? fmt::format("dp × cp = {} × {} = ", dp / cp, cp) : std::string(), dp, param_bytes,
                                 k, group);
  text += fmt::format("  {:<7}{:>12}{:>12}{:>12}{:>12}{}{}\n", "", "params", "grads", "optimizer", "total",
                      activations >= 0 ? "  + activations" : "", hw ? "   largest model" : "");
  for (auto row : strategy_model_states(psi, dp, group, k, param_bytes, ep > 1 ? model_params : -1)) {
    if (dist_opt && std::string_view(row.strategy) == "ddp") {
      // The scenario's ddp runs Megatron-LM's distributed optimizer: the optimizer states shard
      // (ZeRO stage 1's accounting, Megatron's dist_optimizer.md table).
      row.states = zero_model_states(psi, dp, 1, k, param_bytes, ep > 1 ? model_params : -1);
      j["ddp_distributed_optimizer"] = true;
      text += "  (ddp: with the scenario's use_distributed_optimizer, Megatron-LM's: optimizer states sharded over N_d)\n";
    }
    // hsdp keeps an EP group inside a shard group: no row when ep does not divide it, and a line
    // that says why (found by both trials: the row went missing without a word).
    if (ep > 1 && std::string_view(row.strategy) == "hsdp" && group % ep != 0) {
      const std::string why = fmt::format("ep {} does not divide the shard group G = {}: an EP group lies inside one "
                                          "shard group (set --shard-group-size or parallelism.shard_group_size to a "
                                          "multiple of ep)", ep, group);
      j["hsdp_omitted"] = why;
      text += fmt::format("  {:<7}(none: {})\n", "hsdp", why);
      continue;
    }
    const auto& m = row.states;
    nlohmann::ordered_json e = {{"params_bytes", m.params_bytes},
                                {"grads_bytes", m.grads_bytes},
                                {"optimizer_bytes", m.optimizer_bytes},
                                {"total_bytes", m.total_bytes()}};
    std::string extra;
    if (activations >= 0) {
      e["activations_bytes"] = activations;
      e["with_activations_bytes"] = m.total_bytes() + activations;
      e["fits"] = m.total_bytes() + activations <= capacity;
      extra = fmt::format("  {:>9.2f} GB {:<12}", (m.total_bytes() + activations) / 1e9,
                          m.total_bytes() + activations <= capacity ? "fits" : "does not fit");
    }
    if (hw) {
      // Model states scale with Ψ: the most parameters whose states (no activations) fit.
      // Under EP, in parameters of the whole model (its states scale with it).
      const double largest = ep > 1 ? capacity / (m.total_bytes() / model_params)
                                    : capacity / (m.total_bytes() / psi) * static_cast<double>(tp * pp);
      e["largest_params"] = largest;
      extra += fmt::format("  {:>9.4g} params", largest);
    }
    j[row.strategy] = e;
    text += fmt::format("  {:<7}{:>9.2f} GB{:>9.2f} GB{:>9.2f} GB{:>9.2f} GB{}\n", row.strategy, m.params_bytes / 1e9,
                        m.grads_bytes / 1e9, m.optimizer_bytes / 1e9, m.total_bytes() / 1e9, extra);
  }
  if (activations >= 0) {
    j["activations_bytes"] = activations;
    if (pp > 1)
      text += fmt::format("  activations of the {:.3g} micro-batches its {} schedule holds at once on the busiest PP rank: "
                          "{:.2f} GB\n", in_flight, schedule, activations / 1e9);
    else
      text += fmt::format("  activations of one micro-batch: {:.2f} GB\n", activations / 1e9);
    // Found by a new-user trial: this table said "fits" where run's peak did not.
    text += "  model states and activations only: the step's peak (stepsim run) also holds its buffers (DDP's "
            "gradient buckets, ZeRO's IPG buffer, FSDP's gathered unit) and what is alive when it peaks\n";
  }
  if (hw) {
    j["hardware"] = hw->name;
    j["capacity_bytes"] = capacity;
    j["hbm_bytes"] = hw->hbm_bytes;
    j["reserved_bytes"] = hw->hbm_reserved_bytes;
    const double seed_bound = hw->hbm_bytes / kSeedPureDpBytesPerParam;
    j["largest_pure_dp_params_seed"] = seed_bound;
    text += fmt::format("  usable HBM of {}: {:.2f} GB = {:.2f} GB − {:.2f} GB reserved; largest model = usable / (total / Ψ){}\n",
                        hw->name, capacity / 1e9, hw->hbm_bytes / 1e9, hw->hbm_reserved_bytes / 1e9,
                        tp * pp > 1 ? fmt::format(" × {}", pp > 1 ? fmt::format("tp × pp = {}", tp * pp)
                                                                  : fmt::format("tp {}", tp))
                                    : std::string());
    text += fmt::format("  pure-DP upper bound (seed 000 §8: bf16 params + fp32 Adam m, v = 10 bytes/param, no "
                        "gradients or activations): HBM / 10 = {:.3g} parameters\n", seed_bound);
  }
  return {std::move(j), std::move(text)};
}

QueryAnswer collective_query(const CollectiveQuery& a) {
  // What CLI11 checks on the command line (IsMember over the same registry), for callers
  // without it (the Python module).
  if (!hardware::collective_op_from(a.op))
    throw InputError("op", "", fmt::format("expected {} (or {}), got '{}'", join_names(hardware::collective_op_names()),
                                           join_names(hardware::collective_op_labels()), a.op));
  if (!hardware::collective_algorithm_from(a.algorithm))
    throw InputError("algorithm", "", fmt::format("expected {}, got '{}'", join_names(hardware::collective_algorithm_names()),
                                                  a.algorithm));
  auto hw = hardware::load_profile(a.hardware, "--hardware");
  if (a.network) hardware::apply_network_flag(hw, *a.network, "--network");
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
  const auto group = flag_group_shape(hw, a.ranks, a.gpus_per_node, a.axes);
  const hardware::CollectiveOp op = *hardware::collective_op_from(a.op);
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
  const double bus = hardware::bus_factor(op, group.ranks);
  const double algbw = c.time_s() > 0 ? bytes / c.time_s() : 0;
  nlohmann::ordered_json j;
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
  j["calibration"] = overlay ? nlohmann::ordered_json(hardware::describe_overlay(*overlay)) : nlohmann::ordered_json(nullptr);
  // The network the NICs came from, when a preset set them (hardware/networks/).
  if (!hw.network_preset.empty()) j["network"] = hw.network_preset;
  if (overlay) {
    j["calibration_segment"] = c.calibration;
    j["calibration_extrapolated"] = c.calibration_extrapolated;
  }
  std::string text;
  {
    const auto ms = [](double sec) { return fmt::format("{:.4f} ms", sec * 1e3); };
    text += (fmt::format("{} of {} over {} ({} per node) on {} [{} / {}]\n", j["op"].get<std::string>(),
                      bytes >= 1e6 ? fmt::format("{:.2f} MB", bytes / 1e6) : fmt::format("{:.0f} B", bytes),
                      count_of(static_cast<std::size_t>(group.ranks), "rank"), group.ranks_per_node, hw.name, model_name,
                      c.protocol.empty() ? c.algorithm : c.algorithm + " / " + c.protocol));
    text += (fmt::format("  time        {} = bandwidth {} + latency {}\n", ms(c.time_s()), ms(c.bandwidth_s),
                      ms(c.latency_s)));
    text += (fmt::format("  algbw       {:.3g} GB/s   busbw {:.3g} GB/s (nccl-tests definitions)\n", algbw / 1e9,
                      algbw * bus / 1e9));
    text += (fmt::format("  bottleneck  {}\n", c.bottleneck));
    if (c.algorithm == "nvls" || c.algorithm == "nvls_tree")
      text += "  (NVLS: the NVSwitch reduces in the switch, so AllReduce busbw can exceed the GPU's one-way NVLink "
              "bandwidth; it is NCCL's formula unless the profile gives nccl.nvls_bus_bandwidth_bytes_per_s, measured)\n";
    if (!hw.network_preset.empty() && j["nodes"].get<int>() > 1)
      text += model == hardware::CollectiveModel::Nccl
                  ? fmt::format("  network     {}: +{:.3g} us per doubling of the node count, bandwidth efficiency {:.3g}\n",
                                hw.network_preset, hw.fabric_latency_per_log2_nodes_s * 1e6, hw.fabric_bandwidth_efficiency)
                  : fmt::format("  network     {}: its NICs; its fabric terms correct the nccl cost model, not {}\n",
                                hw.network_preset, model_name);
    text += (fmt::format("  calibration {}\n", overlay ? hardware::describe_overlay(*overlay) : "none (nominal profile)"));
    if (overlay) text += (fmt::format("  segment     {}\n", c.calibration));
    if (c.calibration_extrapolated)
      text += ("  warning: calibration_extrapolated: size or rank count outside the fitted range; the nearest "
            "segment's factors were used\n");
  }
  return {std::move(j), std::move(text)};
}

QueryAnswer threshold_query(const ThresholdQuery& a) {
  std::optional<Scenario> s;
  hardware::HardwareProfile hw;
  hardware::GroupShape group;
  hardware::Threshold t;
  bool moe = a.moe_experts != 0 || a.moe_topk != 0;
  if (!a.scenario.empty()) {
    std::vector<std::string> given;
    for (const auto& [flag, set] : {std::pair{"--hardware", !a.hardware.empty()}, std::pair{"--ranks", a.ranks != 0},
                                    std::pair{"--gpus-per-node", a.gpus_per_node != 0}, std::pair{"--axes", a.axes != 0},
                                    std::pair{"--moe-experts", a.moe_experts != 0}, std::pair{"--moe-topk", a.moe_topk != 0},
                                    std::pair{"--ep", a.moe_ep != 0}})
      if (set) given.emplace_back(flag);
    if (!given.empty())
      throw InputError(given.front(), "", fmt::format("give either a scenario or --hardware and --ranks (and the MoE "
                                                      "flags), not both: the scenario sets them (override its fields "
                                                      "with --set, e.g. --set {})",
                                                      given.front() == "--ep" ? "parallelism.ep=N"
                                                      : given.front() == "--ranks" ? "parallelism.dp=N"
                                                                                   : "hardware=NAME"));
    s = load_scenario(a.scenario, a.sets);
    hw = s->hardware;
    const LoweredStep step = lower_step(*s);
    group = step.groups.at(0);
    t = comm_bound_threshold(*s, step);
    moe = s->model.has_experts();
  } else {
    if (!a.sets.empty())
      throw InputError("--set", "", fmt::format("'{}' overrides a scenario's field, and none was given", a.sets.front()));
    if (a.hardware.empty() || a.ranks == 0)
      throw InputError("--hardware/--ranks", "", "expected a scenario, or --hardware and --ranks");
    hw = hardware::load_profile(a.hardware, "--hardware");
    group = flag_group_shape(hw, a.ranks, a.gpus_per_node, a.axes);
    const double factor = moe_factor(a.moe_experts, a.moe_topk, a.moe_ep);
    check_flag_ep(hw, a.ranks, a.moe_ep);
    t = hardware::dp_threshold(hw, group, factor);
  }
  nlohmann::ordered_json j;
  j["schema"] = "stepsim.threshold/1";
  j["hardware"] = hw.name;
  j["ranks"] = group.ranks;
  j["gpus_per_node"] = group.ranks_per_node;
  if (s) {
    j["scenario"] = a.scenario;
    j["model"] = s->model.name;
    if (s->parallelism.ep > 1) j["ep"] = s->parallelism.ep;
  }
  // A CNN's samples are images (run says images/GPU); the keys keep their names.
  const std::string unit = s ? s->model.sample_unit() : "tokens";
  if (s) j["sample_unit"] = unit;
  j["peak_flops_per_s"] = hw.peak_flops_per_s;
  j["tokens_per_gpu"] = t.tokens_per_gpu;
  j["tokens_per_gpu_asymptotic"] = t.tokens_per_gpu_asymptotic;
  j["moe_factor"] = t.moe_factor;
  if (!s && a.moe_ep > 1) j["ep"] = a.moe_ep;
  j["min_global_batch_tokens"] = t.min_global_batch_tokens;
  j["min_global_batch_tokens_asymptotic"] = t.min_global_batch_tokens_asymptotic;
  j["bottleneck"] = t.bottleneck;
  j["algorithm"] = t.algorithm;
  if (!t.torus_dims.empty()) j["torus_dims"] = t.torus_dims;
  j["formula"] = "tokens/GPU = C * t_bw(AllReduce of V) / (2V): backward 4*Psi*tokens/C equals the "
                 "bandwidth time of the bf16 gradient AllReduce (seed 000 §7.1, §7.3, §7.4)";
  std::string text;
  {
    text += (fmt::format("DP communication-bound threshold on {} x {} ({}){}\n", group.ranks, hw.name, t.algorithm,
                         s ? fmt::format(" for {} (run's figure)", s->model.name) : std::string()));
    text += (fmt::format("  {:<20}{:.{}f}   (exact ring factors)\n", unit + " per GPU", t.tokens_per_gpu,
                         t.tokens_per_gpu < 10 ? 2 : 0));
    text += (fmt::format("  asymptotic (C/W)    {:.{}f}   (every (k-1)/k taken as 1)\n", t.tokens_per_gpu_asymptotic,
                         t.tokens_per_gpu_asymptotic < 10 ? 2 : 0));
    if (moe && s)
      text += fmt::format("  MoE factor          {:.4g}   (already applied: 6·Ψ of this rank over the FLOPs of a token{})\n",
                          t.moe_factor, s->parallelism.ep > 1 ? fmt::format(", ep {}", s->parallelism.ep) : "");
    else if (s && t.moe_factor != 1)
      text += fmt::format("  sample factor       {:.4g}   (already applied: 6·Ψ over the FLOPs of one {})\n", t.moe_factor,
                          unit == "images" ? "image" : "sample");
    else if (moe)
      text += a.moe_ep > 1 ? fmt::format("  MoE factor E/(k·ep) {:g}   (already applied: each GPU holds experts / ep {}; the "
                                         "seeds' closed form prices every gradient over the DP group: on a scenario, "
                                         "run's figure reduces the experts' over their own group)\n",
                                         t.moe_factor, a.moe_ep)
                           : fmt::format("  MoE factor E/k      {:g}   (already applied)\n", t.moe_factor);
    text += (fmt::format("  min global batch    {:.4g} {}  (asymptotic {:.4g})\n", t.min_global_batch_tokens, unit,
                         t.min_global_batch_tokens_asymptotic));
    text += (fmt::format("  bottleneck          {}\n", t.bottleneck));
    if (!t.torus_dims.empty()) {
      std::string dims;
      for (int d : t.torus_dims) dims += (dims.empty() ? "" : "x") + std::to_string(d);
      text += (fmt::format("  torus rings         {}\n", dims));
    }
    text += fmt::format("  below this many {} per GPU per micro-batch, the gradient AllReduce cannot hide behind backward\n",
                        unit);
  }
  return {std::move(j), std::move(text)};
}


hardware::GroupShape flag_group_shape(const hardware::HardwareProfile& hw, long long ranks, long long gpus_per_node,
                                      int axes) {
  if (ranks < 1 || ranks > 100'000'000)
    throw InputError("--ranks", "", fmt::format("expected an integer in [1, 100000000], got {}", ranks));
  if (gpus_per_node != 0)  // 0: not given, the profile's
    if (const std::string why = hardware::gpus_per_node_problem(gpus_per_node); !why.empty())
      throw InputError("--gpus-per-node", "", why);
  if (axes != 0 && !hw.is_torus())
    throw InputError("--axes", "", fmt::format("profile '{}' has no torus; --axes applies to TPU profiles", hw.name));
  if (axes < 0 || axes > 3) throw InputError("--axes", "", fmt::format("expected 1, 2 or 3 torus axes, got {}", axes));
  if (hw.is_torus()) {
    long long pod = 1;
    for (const int d : hw.torus_dims) pod *= d;
    if (ranks > pod)
      throw InputError("--ranks", "", fmt::format("{} ranks is more than one {} pod holds: at most {} chips ({} torus); "
                                                  "DP across pods (DCN) is not modelled", ranks, hw.name, pod,
                                                  fmt::join(hw.torus_dims, "x")));
  }
  const int g = gpus_per_node > 0 ? static_cast<int>(gpus_per_node) : hw.gpus_per_node;
  const long long ranks_per_node = std::min<long long>(g, ranks);
  if (ranks > g && ranks % g != 0 && !hw.is_torus())
    throw InputError("--ranks", "", fmt::format("{} ranks is not a whole number of {}-GPU nodes", ranks, g));
  return {static_cast<int>(ranks), static_cast<int>(ranks_per_node), axes};
}

void check_flag_ep(const hardware::HardwareProfile& hw, long long ranks, long long ep) {
  if (ep <= 1) return;
  if (hw.is_torus())
    throw InputError("--ep", "", fmt::format("expert parallelism on the {} torus is not modelled (run refuses it too); "
                                             "expected no --ep", hw.name));
  if (ranks != 0 && ranks % ep != 0)
    throw InputError("--ep", "", fmt::format("an EP group is ep of the DP ranks: expected a divisor of --ranks {}, got {}",
                                             ranks, ep));
}

double moe_factor(long long experts, long long topk, long long ep) {
  if (experts == 0 && topk == 0) {
    if (ep != 0)
      throw InputError("--ep", "", fmt::format("expert parallelism spreads a mixture's experts: give --moe-experts and "
                                               "--moe-topk with it, got --ep {} alone", ep));
    return 1.0;
  }
  if (experts < 1 || topk < 1 || topk > experts || experts > (1 << 20))
    throw InputError("--moe-experts/--moe-topk", "",
                     fmt::format("expected 1 ≤ topk ≤ experts ≤ 2^20 (both given), got experts {} topk {}", experts, topk));
  if (ep != 0 && (ep < 1 || experts % ep != 0))
    throw InputError("--ep", "", fmt::format("each GPU holds experts / ep of them: expected a divisor of {}, got {}",
                                             experts, ep));
  return static_cast<double>(experts) / static_cast<double>(topk) / static_cast<double>(ep > 0 ? ep : 1);
}

hardware::CollectiveAlgorithm algorithm_from(const std::string& name) {
  return hardware::collective_algorithm_from(name).value_or(hardware::CollectiveAlgorithm::Auto);
}


}  // namespace stepsim::models
