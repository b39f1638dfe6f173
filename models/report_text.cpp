// SPDX-License-Identifier: Apache-2.0
// Report -> text for the terminal (fixed precision, so golden files do not churn).
#include "models/report.hpp"

#include "hardware/gemm_model.hpp"
#include "models/float8.hpp"
#include "models/simulate.hpp"
#include "models/strategy/strategy.hpp"

#include <fmt/format.h>

#include <cctype>

#include <algorithm>

namespace stepsim::models {

std::string mesh_group_label(const CollectiveSummary& c) {
  std::string label = c.group;
  for (char& ch : label) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  return label;
}

bool reports_mesh(const Scenario& s) {
  const auto& p = s.parallelism;
  return p.tp > 1 || p.pp > 1 || p.cp > 1 || p.ep > 1;
}


namespace {

std::string ms(double s) { return fmt::format("{:10.3f} ms", s * 1e3); }
std::string gb(double b) { return fmt::format("{:8.2f} GB", b / 1e9); }
std::string size(double b) {
  if (b >= 1e9) return fmt::format("{:.2f} GB", b / 1e9);
  if (b >= 1e6) return fmt::format("{:.2f} MB", b / 1e6);
  if (b >= 1e3) return fmt::format("{:.2f} kB", b / 1e3);
  return fmt::format("{:.0f} B", b);
}
std::string count(double n) {
  if (n >= 1e9) return fmt::format("{:.2f} B", n / 1e9);
  if (n >= 1e6) return fmt::format("{:.2f} M", n / 1e6);
  if (n >= 1e3) return fmt::format("{:.2f} k", n / 1e3);
  return fmt::format("{:.0f}", n);
}

std::string buffer_note(const Scenario& s) { return strategy_of(s).buffers_label; }

}  // namespace

std::string group_placement(const Scenario& s, const MeshGroup& group) {
  const RankLayout layout = s.layout();
  const std::int64_t n = layout.members(group);
  const std::int64_t per_node = layout.members_per_node(group);
  if (per_node >= n) return "inside a node";
  if (per_node == layout.gpus_per_node()) return fmt::format("over {} whole nodes", n / per_node);
  return fmt::format("over {} nodes, {} per node", n / per_node, per_node);
}

std::string tp_placement(const Scenario& s) { return group_placement(s, s.layout().whole(MeshDim::TP)); }

std::string placement_line(const Scenario& s) {
  const auto& p = s.parallelism;
  const RankLayout layout = s.layout();
  if (layout.places_as(kMegatronOrder)) return "";
  std::string parts;
  const auto add = [&](const char* name, std::int64_t n, const MeshGroup& g) {
    if (n > 1) parts += fmt::format("{}{} groups of {} {}", parts.empty() ? "" : "; ", name, n, group_placement(s, g));
  };
  add("TP", p.tp, layout.whole(MeshDim::TP));
  add("CP", p.cp, layout.whole(MeshDim::CP));
  add(p.cp > 1 ? "DP x CP" : "DP", s.data_ranks(), layout.data(1, s.data_ranks()));
  add("PP", p.pp, layout.whole(MeshDim::PP));
  if (parts.empty()) return "";
  return fmt::format("order {} (innermost first): {}", mesh_order_name(p.order), parts);
}

std::string report_text(const Report& r) {
  const Scenario& s = r.scenario;
  std::string o;
  auto line = [&o](const std::string& text) { o += text + "\n"; };
  line(fmt::format("stepsim: {} step of {} on {} x {} ({} node{} x {} per node){}",
                   s.parallelism.strategy, s.model.name, s.world_size(), s.hardware.name,
                   s.cluster.nodes, s.cluster.nodes == 1 ? "" : "s", s.gpus_used_per_node(),
                   s.name.empty() ? "" : "  [" + s.name + "]"));
  if (s.parallelism.tp > 1 && s.parallelism.pp == 1 && s.parallelism.cp == 1)
    line(fmt::format("  mesh      dp {} x tp {}{}{}: each TP group of {} GPUs {} (Megatron-LM's column/row-parallel "
                     "linears), {} DP groups of {} across them",
                     s.parallelism.dp, s.parallelism.tp, s.parallelism.sequence_parallel ? " with sequence parallelism" : "",
                     s.parallelism.tp_comm_overlap ? " and TP comm overlap" : "", s.parallelism.tp,
                     tp_placement(s),
                     s.parallelism.tp, s.parallelism.dp == 1 ? std::string("1 rank") : fmt::format("{} ranks", s.parallelism.dp)));
  if (s.parallelism.pp > 1 || s.parallelism.cp > 1) {
    const auto& p = s.parallelism;
    line(fmt::format("  mesh      dp {} x tp {} x cp {} x pp {}{} ({}){}{}",
                     p.dp, p.tp, p.cp, p.pp, p.sequence_parallel ? " with sequence parallelism" : "",
                     s.layout().places_as(kMegatronOrder) ? "Megatron-LM's order tp-cp-dp-pp: TP innermost, PP outermost"
                                               : "order " + mesh_order_name(p.order),
                     p.tp > 1 ? fmt::format("; TP groups of {} {}", p.tp, tp_placement(s)) : std::string(),
                     p.pp > 1 ? fmt::format("; {} pipeline stages of {} GPUs", p.pp, s.stage_ranks()) : std::string()));
  }
  if (const std::string placed = placement_line(s); !placed.empty()) line("  placement " + placed);
  if (s.parallelism.ep > 1) {
    const auto& t = s.model.transformer_shape;
    const std::int64_t experts = t ? t->moe.experts : 0;
    const bool hybrid = strategy_of(s).hybrid;
    const std::int64_t reduce = s.expert_reduce_ranks();
    line(fmt::format("  experts   ep {}: each rank holds {} of every MoE layer's {} routed experts; tokens to them and back "
                     "by all-to-all over {} consecutive {} ranks; expert gradients reduced over {} / ep = {} rank{}{}",
                     s.parallelism.ep, experts / s.parallelism.ep, experts, s.parallelism.ep,
                     s.parallelism.cp > 1 ? "dp x cp" : "DP",
                     hybrid ? "the shard group" : s.parallelism.cp > 1 ? "dp x cp" : "dp", reduce, reduce == 1 ? "" : "s",
                     hybrid ? fmt::format(", then across the {} replicas", s.data_ranks() / s.shard_ranks())
                            : std::string()));
  }
  if (s.parallelism.cp > 1)
    line(fmt::format("  context   cp {} ({}): each rank holds {} of every micro-batch's {} tokens and attends to all of them; "
                     "gradients reduced over dp x cp = {} ranks",
                     s.parallelism.cp, s.parallelism.cp_comm_type == "p2p" ? "p2p: a KV ring beside each attention layer"
                                                                          : "allgather: KV gathered before each attention layer",
                     s.tokens_per_micro_batch() / s.batch.micro_batch_size, s.batch.seq_len, s.data_ranks()));
  if (s.parallelism.pp > 1) {
    const auto& p = s.parallelism;
    std::string blocks;
    for (const auto& st : r.pipeline_stages) blocks += (blocks.empty() ? "" : "/") + std::to_string(st.blocks);
    line(fmt::format("  pipeline  {} schedule, {} micro-batch{} (batch.grad_accum) through {} model chunk{} per PP rank; "
                     "transformer blocks per PP rank {} (the embedding on the first, the norm and head on the last)",
                     p.pipeline_schedule, s.batch.grad_accum, s.batch.grad_accum == 1 ? "" : "es", p.virtual_stages,
                     p.virtual_stages == 1 ? "" : "s", blocks));
  }
  if (!s.hardware.overridden.empty()) {
    std::string fields;
    for (const auto& f : s.hardware.overridden) fields += (fields.empty() ? "" : ", ") + f;
    line(fmt::format("  hardware    profile {}{} with {} set over it (scenario or --set): {}", s.hardware.name,
                     s.hardware.base != s.hardware.name ? " (over " + s.hardware.base + ")" : std::string(),
                     s.hardware.overridden.size() == 1 ? "1 field" : fmt::format("{} fields", s.hardware.overridden.size()),
                     fields));
  }
  if (s.calibration) line("  calibration " + hardware::describe_overlay(*s.calibration));
  // The network across nodes, when the collectives cross one (hardware/networks/, docs/calibration.md).
  if (s.cluster.nodes > 1 && s.hardware.nics_per_node > 0) {
    const bool fabric = s.hardware.fabric_latency_per_log2_nodes_s > 0 || s.hardware.fabric_bandwidth_efficiency < 1;
    const std::string nics = fmt::format("{:g} Gb/s per {}GPU", s.hardware.nic_bandwidth_bytes_per_s * 8 / 1e9,
                                         s.hardware.gpus_per_nic == 1 ? "" : std::to_string(s.hardware.gpus_per_nic) + " ");
    std::string terms = "the NICs' line rate (no fabric terms)";
    if (fabric)
      terms = s.collective_model == hardware::CollectiveModel::Nccl
                  ? fmt::format("+{:.3g} us per doubling of the node count, bandwidth efficiency {:.3g} (fitted on public "
                                "nccl-tests logs)", s.hardware.fabric_latency_per_log2_nodes_s * 1e6,
                                s.hardware.fabric_bandwidth_efficiency)
                  : "its fabric terms correct the nccl cost model, not this run's " +
                        hardware::collective_model_name(s.collective_model) + ": the NICs' line rate";
    line(fmt::format("  network     {}{}; {}", s.hardware.network_preset.empty() ? "" : s.hardware.network_preset + ": ",
                     nics, terms));
  }
  {
    const hardware::GemmCurve& c = hardware::effective_gemm_curve(s.hardware, s.calibration.get());
    if (c.present())
      line(fmt::format("  gemm        curve {} ({})", hardware::describe_gemm_curve(c),
                       s.calibration && s.calibration->gemm ? "calibration" : "profile " + s.hardware.name));
    if (s.hardware.clock_fraction() < 1)
      line(fmt::format("  clocks      {:g} of {:g} MHz sustained (compute.sustained_clock_mhz; how it was chosen: the profile's "
                       "sources): tensor-core work at {:.1f} % of the {:g} TFLOP/s peak; HBM bandwidth not scaled",
                       s.hardware.sustained_clock_mhz, s.hardware.boost_clock_mhz, 100 * s.hardware.clock_fraction(),
                       s.hardware.peak_flops_per_s / 1e12));
    // GEMMs in another arithmetic than BF16/FP16: which, at what peak and efficiency.
    const auto math_text = [&](hardware::GemmMath m) {
      const std::string eff = c.present() ? fmt::format(", curve e_max {:.3g}", c.max_efficiency_for(m))
                                          : fmt::format(", flat efficiency {:.3g}", s.hardware.gemm_efficiency);
      return fmt::format("{:g} TFLOP/s peak{}", s.hardware.peak_for(m) / 1e12, eff);
    };
    using Math = hardware::GemmMath;
    if (s.precision.gemm_math != Math::Tensor16) {
      const char* what = s.precision.gemm_math == Math::Tf32 ? "TF32 tensor cores"
                         : s.precision.gemm_math == Math::Fp8 ? "FP8 tensor cores"
                                                              : "IEEE FP32 on the CUDA cores";
      line(fmt::format("  gemm math   {}: {} ({} tensors{})", what, math_text(s.precision.gemm_math), dtype_name(s.precision.held_dtype),
                       s.precision.gemm_math == Math::Fp32 || s.precision.gemm_math == Math::Tf32
                           ? fmt::format(", fp32_matmul_precision {}", !s.precision.fp32_matmul_tf32 ? "highest"
                                                                         : s.precision.gemm_math == Math::Tf32 ? "high"
                                                                         : "high, but this GPU has no TF32")
                           : std::string()));
    }
    if (s.precision.float8 != PrecisionConfig::Float8::None) {
      const auto [linears, blocks] = float8_linear_total(s);
      const bool gathers = strategy_of(s).family == StrategyFamily::FSDP;
      line(fmt::format("  float8      tensorwise: {} linears in {} blocks run FP8 GEMMs ({}) plus amax/cast kernels{}", linears,
                       blocks, math_text(Math::Fp8),
                       !gathers                        ? ""
                       : s.precision.float8_all_gather ? "; FSDP all-gathers their weights in FP8"
                                                       : "; FSDP all-gathers their weights in " + dtype_name(s.precision.held_dtype) +
                                                             " (float8_all_gather off)"));
    }
    if (s.framework.cuda_graphs)
      line(std::string("  framework   CUDA graphs: kernels and collectives replay from captured graphs; no per-op CPU launch "
                       "cost, no NCCL launch overhead") +
           (s.calibration && s.calibration->host ? " (the calibration overlay's measured host time does not apply)" : ""));
    else if (s.framework.host_op_s > 0)
      line(fmt::format("  framework   {:.3g} us of CPU per {}; a layer takes the longer of its kernels and its launches",
                       s.framework.host_op_s * 1e6,
                       s.framework.host_op_measured ? "launched kernel (measured: calibration overlay; views not charged again)"
                                                    : "op"));
    // Which kernels run: only for models with composites or a loss over logits, naming theirs.
    if (!s.model.eager_composites.empty() || s.model.has_logits_loss()) {
      using Impl = FrameworkConfig::Implementation;
      std::string ops;
      for (const auto& op : s.model.eager_composites) ops += (ops.empty() ? "" : ", ") + op;
      std::string what = s.framework.implementation == Impl::Compile      ? "torch.compile: each elementwise chain one fused kernel"
                         : s.framework.implementation == Impl::MegatronTE ? "Megatron-Core + Transformer Engine: fused kernels"
                         : ops.empty()                                    ? "eager PyTorch"
                                                                          : "eager PyTorch: " + ops + " op by op";
      if (s.framework.implementation != Impl::Eager && !ops.empty()) what += " (" + ops + ")";
      if (s.model.has_logits_loss())
        what += !s.framework.upcast_logits ? "; a fused cross-entropy kernel over the bf16 logits"
                : s.framework.eager()      ? "; logits cast to fp32 for the loss"
                                           : "; the loss in fp32";
      line(fmt::format("  kernels     {} (framework.implementation {}, cross_entropy {})", what,
                       implementation_names().at(static_cast<std::size_t>(s.framework.implementation)),
                       s.framework.upcast_logits ? "upcast" : "fused"));
    }
    if (s.activations.flash_attention && !s.activations.attention_kernel.empty())
      if (const hardware::AttentionThroughput* k = s.hardware.attention_kernel(s.activations.attention_kernel))
        line(fmt::format("  attention   {} at its measured fwd+bwd throughput (profile {}: {})", k->kernel, s.hardware.name,
                         k->source.substr(0, k->source.find(';'))));
  }
  line(s.collective_model == hardware::CollectiveModel::Nccl
           ? (s.framework.cuda_graphs ? "  collectives cost model nccl (NCCL v2.30 tuner: ring/tree/NVLS x LL/LL128/Simple, fastest chosen; "
                                        "no launch overhead under CUDA graphs)"
                                      : "  collectives cost model nccl (NCCL v2.30 tuner: ring/tree/NVLS x LL/LL128/Simple, fastest chosen, + launch overhead)")
           : "  collectives cost model alpha-beta (seeds' ring / hierarchical / torus formulas)");
  if (s.parallelism.torus_axes > 0) {  // torus profiles (issue 13 item 21)
    std::string rings;
    for (int d : hardware::torus_ring_lengths(s.hardware, static_cast<int>(s.parallelism.dp), s.parallelism.torus_axes))
      rings += (rings.empty() ? "" : " x ") + std::to_string(d);
    line(fmt::format("  torus     DP rings over {} of the {} torus axes (parallelism.torus_axes): {} chips",
                     s.parallelism.torus_axes, s.hardware.torus_dims.size(), rings));
  }
  line(fmt::format("  model     {} parameters ({} trainable{}), {} layers, {}", count(static_cast<double>(s.model_parameters)),
                   count(static_cast<double>(s.model_trainable_parameters)),
                   s.parallelism.tp > 1 ? fmt::format("; {} per TP rank", count(static_cast<double>(s.model.parameter_count())))
                   : s.model_active_parameters < s.model_parameters
                       ? fmt::format("; a mixture of experts, {} active per token{}",
                                     count(static_cast<double>(s.model_active_parameters)),
                                     s.parallelism.ep > 1 ? fmt::format(", {} per EP rank",
                                                                        count(static_cast<double>(s.model.parameter_count())))
                                                          : std::string())
                       : std::string(),
                   s.model.layers.size(),
                   s.model.hf_model_type.empty() ? s.model.kind
                                                 : fmt::format("{} from a Hugging Face config.json (model_type {})",
                                                               s.model.kind, s.model.hf_model_type)));
  const std::string unit = s.model.sample_unit();
  if (unit == "images")
    line(fmt::format("  batch     micro_batch_size {} x grad_accum {} = {} images/GPU/step, {} images/step in all",
                     s.batch.micro_batch_size, s.batch.grad_accum, count(static_cast<double>(s.tokens_per_gpu_step())),
                     count(r.tokens_per_step)));
  else
    line(fmt::format("  batch     micro_batch_size {} x seq_len {} x grad_accum {} = {} tokens/{}/step, {} tokens/step in all",
                     s.batch.micro_batch_size, s.batch.seq_len, s.batch.grad_accum,
                     count(static_cast<double>(s.tokens_per_gpu_step())),
                     s.parallelism.cp > 1   ? "GPU (its share of the sequence)"
                     : s.parallelism.pp > 1 ? "pipeline (its stages' GPUs share them)"
                     : s.parallelism.tp > 1 ? "DP rank (its TP group's GPUs share them)"
                                            : "GPU",
                     count(r.tokens_per_step)));
  if (r.bucket_count > 0)  // DDP and ZeRO-1/2 buckets; FSDP and ZeRO-3 have none, so no line
    line(fmt::format("  buckets   {} (first_bucket_mb {:g}, bucket_cap_mb {:g}; largest {}), {} of gradients per sync{}",
                     r.bucket_count, s.parallelism.first_bucket_mb, s.parallelism.bucket_cap_mb,
                     size(r.bucket_bytes_max), size(r.gradient_bytes), s.parallelism.pp > 1 ? " on PP rank 0" : ""));
  line("");
  line(fmt::format("step time        {}{}", ms(r.step_time_s),
                   r.per_rank.present               ? "   (the slowest rank; the breakdown below is rank 0's)"
                   : !r.pipeline_stages.empty() ? "   (the pipeline's last task; the breakdown below is PP rank 0's)"
                                                    : ""));
  line(fmt::format("  forward        {}", ms(r.forward_time_s)));
  line(fmt::format("  backward       {}", ms(r.backward_time_s)));
  line(fmt::format("  optimizer      {}", ms(r.optimizer_time_s)));
  // The strategy's own kernels: FSDP and HSDP copy all-gathered parameters out of the gather
  // buffer (models/strategy/fsdp.cpp); DDP and ZeRO copy gradient buckets.
  line(fmt::format("  framework ops  {}   ({})", ms(r.overhead_time_s), strategy_of(s).framework_ops_label));
  line(fmt::format("  exposed comm   {}   ({:.1f} % of the step)", ms(r.exposed_comm_s),
                   r.step_time_s > 0 ? 100 * r.exposed_comm_s / r.step_time_s : 0.0));
  if (r.offload.present)
    line(fmt::format("  exposed offload {}  ({:.1f} % of the step: PCIe copies, the CPU's optimizer step{} that no GPU "
                     "work overlaps)",
                     ms(r.offload.exposed_time_s), r.step_time_s > 0 ? 100 * r.offload.exposed_time_s / r.step_time_s : 0.0,
                     r.offload.nvme_time_s > 0 ? " and NVMe swaps" : ""));
  if (s.parallelism.pp > 1 || s.parallelism.cp > 1 || s.parallelism.ep > 1) {
    // The exposed time by mesh dimension, in the order it is attributed (run.cpp).
    std::string dims, values;
    for (const auto& [on, name, v] : {std::tuple{s.parallelism.tp > 1, "TP", r.tp_exposed_comm_s},
                                      std::tuple{s.parallelism.cp > 1, "CP", r.cp_exposed_comm_s},
                                      std::tuple{s.parallelism.ep > 1, "EP", r.ep_exposed_comm_s},
                                      std::tuple{s.parallelism.pp > 1, "PP", r.pp_exposed_comm_s},
                                      std::tuple{true, "DP", r.dp_exposed_comm_s}}) {
      if (!on) continue;
      dims += (dims.empty() ? "" : " / ") + std::string(name);
      values += (values.empty() ? "" : " /") + ms(v);
    }
    line(fmt::format("    {}   {} exposed", dims, values));
    if (!r.pipeline_stages.empty())
      line(fmt::format("  bubble         {}   ({:.1f} % of the step: PP rank 0 waiting for its neighbours)",
                       ms(r.pipeline_stages.front().bubble_s),
                       r.step_time_s > 0 ? 100 * r.pipeline_stages.front().bubble_s / r.step_time_s : 0.0));
  } else if (s.parallelism.tp > 1)
    line(fmt::format("    TP / DP      {} / {} exposed   ({})", ms(r.tp_exposed_comm_s),
                     ms(r.dp_exposed_comm_s),
                     s.parallelism.tp_comm_overlap ? "TP collectives beside each layer's compute: tp_comm_overlap"
                                                   : "TP collectives are synchronous on the compute stream"));
  if (r.per_rank.present)  // the rows above add up to the step time (issue 13 item 20)
    line(fmt::format("  waiting        {}   (rank 0 idle: other ranks late to its collectives, then the slowest "
                     "rank's end)", ms(r.wait_time_s)));
  // The GPU family a band is kept for (models/error_band.hpp), or the profile when none covers it.
  const auto family = [&s](const std::string& f) {
    return f == "hopper" ? std::string("Hopper GPUs") : f == "a100" ? std::string("A100") : f == "v100" ? std::string("V100")
                                                                                                          : s.hardware.name;
  };
  // The arithmetic, named when it is not the BF16/FP16 most runs use, and the parallelism
  // beside DP.
  const auto math = [](const RunKind& k) {
    const std::string mesh = k.mesh_label();
    return (k.math == "fp32" ? std::string(", fp32 GEMMs") : k.math == "fp8" ? std::string(", FP8 linears") : std::string()) +
           (mesh.empty() ? std::string() : " + " + mesh);
  };
  if (const CalibrationBand& c = r.calibration_band; c.present()) {
    const std::string high = c.real_over_predicted_high() > 0 ? fmt::format("{:.2f}", c.real_over_predicted_high()) : "inf";
    line(fmt::format("accuracy         calibrated ({}): its fits reproduce their {} measured points within {:.1f} % "
                     "(real {:.2f}-{}x the fitted time of each calibrated GEMM, kernel, collective or host time)",
                     c.overlay, c.points, 100 * c.max_residual, c.real_over_predicted_low(), high));
    if (const ErrorBand& b = r.error_band; b.present())
      line(fmt::format("                 what it does not price keeps the nominal band: {:.2f}-{:.2f}x (p10-p90 of {} {} runs "
                       "on {}, {} DP{})", b.real_over_predicted_low(), b.real_over_predicted_high(), b.rows, b.set,
                       family(b.kind.family), b.kind.sharded ? "sharded" : "replicated", math(b.kind)));
  } else if (const ErrorBand& b = r.error_band; b.present())
    line(fmt::format("accuracy         real steps of this kind took {:.2f}-{:.2f}x this prediction (p10-p90 of {} {} runs on "
                     "{}, {} DP{}; stepsim accuracy)", b.real_over_predicted_low(), b.real_over_predicted_high(), b.rows,
                     b.set, family(b.kind.family), b.kind.sharded ? "sharded" : "replicated", math(b.kind)));
  else if (!r.error_band_withheld.empty())
    line("accuracy         no error band: " + r.error_band_withheld +
         (r.memory.fits ? "" : " (a band describes measured runs that ran)"));
  else
    line(fmt::format("accuracy         no error band: no public measured set has 5 runs or more on {} with {} DP{} yet (stepsim "
                     "accuracy)", family(r.error_band.kind.family), r.error_band.kind.sharded ? "sharded" : "replicated",
                     math(r.error_band.kind)));
  line(fmt::format("communication    {}   ({:.1f} % hidden behind compute)", ms(r.comm_time_s),
                   100 * r.overlap_fraction));
  if (r.checkpoint_present) {
    const CheckpointCost& c = r.checkpoint;
    const std::string storage = c.storage_is_local_nvme
                                    ? fmt::format("the nodes' NVMe, {:.1f} GB/s", c.storage_write_bytes_per_s / 1e9)
                                    : fmt::format("{:.1f} GB/s", c.storage_write_bytes_per_s / 1e9);
    std::string how = c.format == "full"
                          ? fmt::format("{:.2f} GB gathered to rank 0 in {:.3f} ms, copied to its CPU memory in {:.3f} ms, "
                                        "written by it in {:.3f} ms",
                                        c.rank0_host_bytes / 1e9, c.gather_s * 1e3,
                                        c.stage_s * 1e3, c.write_s * 1e3)
                          : fmt::format("{:.2f} GB in all, {:.2f} GB from the busiest rank: staged to CPU in {:.3f} ms, "
                                        "written in {:.3f} ms",
                                        c.total_bytes / 1e9, c.max_rank_bytes / 1e9, c.stage_s * 1e3, c.write_s * 1e3);
    line(fmt::format("checkpoint       {} every {} steps: {:.3f} s per save ({}; storage {}), +{:.3f} ms per step "
                     "amortised: {:.3f} ms a step with checkpoints",
                     c.format, c.interval, c.save_s, how, storage, c.amortised_s * 1e3,
                     (r.step_time_s + c.amortised_s) * 1e3));
    if (c.format == "full")
      line(fmt::format("                 rank 0's host memory holds the whole state, {:.2f} GB of its node's {:.2f} GB",
                       c.rank0_host_bytes / 1e9, c.host_capacity_bytes / 1e9));
  }
  if (r.offload.present) {
    const OffloadSummary& off = r.offload;
    std::string nvme;
    if (off.nvme_time_s > 0)
      nvme = fmt::format("; NVMe read {:.2f} GB + write {:.2f} GB in {:.3f} ms", off.nvme_read_bytes / 1e9,
                         off.nvme_write_bytes / 1e9, off.nvme_time_s * 1e3);
    const bool fsdp = s.sharding.cpu_offload;
    line(fmt::format("offload          {} on {} ({} {:.3f} ms); PCIe device-to-host {:.2f} GB in {:.3f} ms, "
                     "host-to-device {:.2f} GB in {:.3f} ms{}; {}",
                     fsdp ? "parameter shards, gradients and optimizer"
                     : s.sharding.offload_param() ? fmt::format("parameters on {}, optimizer", s.sharding.offload_param_device)
                                                  : std::string("optimizer"),
                     off.device,
                     fsdp ? "torch Adam on the CPU" : "DeepSpeedCPUAdam", off.cpu_optimizer_time_s * 1e3, off.d2h_bytes / 1e9,
                     off.d2h_time_s * 1e3, off.h2d_bytes / 1e9, off.h2d_time_s * 1e3, nvme,
                     fsdp                                         ? "pinned host memory"
                     : s.sharding.offload_optimizer_pin_memory ? "pin_memory true"
                                                               : "pin_memory false (each gradient copy blocks the GPU's stream)"));
  }
  if (r.overlap_slowdown_s > 0 || r.link_sharing_stretch_s > 0)
    line(fmt::format("contention       overlap_model {}: +{:.3f} ms of compute kernel time; link sharing: +{:.3f} ms "
                     "of collective time",
                     s.contention.overlap_model == "factor" ? fmt::format("factor {:g}", s.contention.overlap_compute_slowdown)
                     : s.contention.overlap_model == "sm_partition"
                         ? fmt::format("sm_partition, NCCL holds {} SMs", s.contention.nccl_sms)
                         : s.contention.overlap_model,
                     r.overlap_slowdown_s * 1e3, r.link_sharing_stretch_s * 1e3));
  line(fmt::format("throughput       {} {}/s ({} per GPU), MFU {:.1f} % (model FLOPs / BF16 peak {:.0f} TFLOP/s)",
                   count(r.tokens_per_s), unit, count(r.tokens_per_s / static_cast<double>(s.world_size())), 100 * r.mfu,
                   s.hardware.peak_flops_per_s / 1e12));
  if (r.comm_bound_threshold_tokens_per_gpu > 0) {
    const double tokens = static_cast<double>(s.tokens_per_micro_batch());
    line(fmt::format("comm-bound at    {:.0f} {}/{} per micro-batch for this DP group at peak FLOP/s "
                     "(C/W with ring factors),", r.comm_bound_threshold_tokens_per_gpu, unit,
                     s.parallelism.tp > 1 ? "DP rank" : "GPU"));
    if (r.comm_bound_tokens_per_gpu_effective > 0)
      line(fmt::format("                 {:.0f} at this simulation's kernel speeds; this step has {:.0f} ({:.2f}x the latter)",
                       r.comm_bound_tokens_per_gpu_effective, tokens, tokens / r.comm_bound_tokens_per_gpu_effective));
    else
      line(fmt::format("                 (none at this simulation's kernel speeds: no gradient communication runs in the "
                       "last micro-batch); this step has {:.0f}", tokens));
  }

  if (!r.collectives.empty()) {
    line("");
    line("collectives per step per rank (sizes as nccl-tests counts them)");
    // With tensor parallelism each op names its mesh dimension ("TP AllReduce").
    const bool mesh = reports_mesh(s);
    const std::size_t op_width = mesh ? 19 : 14;
    const auto op_label = [mesh](const CollectiveSummary& c) {
      return mesh ? mesh_group_label(c) + " " + c.op : c.op;
    };
    line(fmt::format("  {:<{}}{:>12}{:>7}{:>13}{:>13}{:>12}{:>12}  {}", "op", op_width, "size", "count", "time each",
                     "total", "algbw", "busbw", "algorithm"));
    std::vector<CollectiveSummary> rows = r.collectives;
    std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
      return a.time_s * static_cast<double>(a.count) > b.time_s * static_cast<double>(b.count);
    });
    const std::size_t shown = std::min<std::size_t>(rows.size(), 6);
    for (std::size_t i = 0; i < shown; ++i) {
      const auto& c = rows[i];
      line(fmt::format("  {:<{}}{:>12}{:>7}{:>10.3f} ms{:>10.3f} ms{:>7.1f} GB/s{:>7.1f} GB/s  {}", op_label(c), op_width,
                       size(c.bytes),
                       c.count, c.time_s * 1e3, c.time_s * 1e3 * static_cast<double>(c.count),
                       c.algbw_bytes_per_s / 1e9, c.busbw_bytes_per_s / 1e9,
                       c.protocol.empty() ? c.algorithm : c.algorithm + "/" + c.protocol));
    }
    if (rows.size() > shown) {
      std::int64_t n = 0;
      double t = 0;
      for (std::size_t i = shown; i < rows.size(); ++i) {
        n += rows[i].count;
        t += rows[i].time_s * static_cast<double>(rows[i].count);
      }
      line(fmt::format("  ... {} more sizes: {} calls, {:.3f} ms", rows.size() - shown, n, t * 1e3));
    }
  }

  if (!r.pipeline_stages.empty()) {
    line("");
    line(fmt::format("pipeline stages (compute + exposed communication + bubble = the step{})",
                     s.parallelism.tp > 1 ? "; parameters per TP rank" : ""));
    line(fmt::format("  {:<8}{:>7}{:>12}{:>14}{:>14}{:>14}{:>10}{:>14}", "PP rank", "blocks", "params", "compute",
                     "exposed comm", "bubble", "bubble %", "peak memory"));
    for (std::size_t k = 0; k < r.pipeline_stages.size(); ++k) {
      const auto& st = r.pipeline_stages[k];
      line(fmt::format("  {:<8}{:>7}{:>12}{:>14}{:>14}{:>14}{:>9.1f}%{:>14}", k, st.blocks, count(st.parameters),
                       ms(st.compute_time_s), ms(st.exposed_comm_s), ms(st.bubble_s),
                       r.step_time_s > 0 ? 100 * st.bubble_s / r.step_time_s : 0.0, gb(st.memory_peak_bytes)));
    }
  }

  const auto& m = r.memory;
  line("");
  line(r.pipeline_stages.empty()
           ? "memory per GPU at its peak (GB = 1e9 bytes; the rows add up to the peak)"
           : fmt::format("memory per GPU at its peak, on PP rank {} (the highest; GB = 1e9 bytes; the rows add up to the "
                         "peak)", r.memory_stage));
  line(fmt::format("  parameters     {}", gb(m.params_bytes)));
  line(fmt::format("  gradients      {}", gb(m.grads_bytes)));
  line(fmt::format("  optimizer      {}", gb(m.optimizer_bytes)));
  if (m.grad_accum_bytes > 0) line(fmt::format("  fp32 grad acc  {}", gb(m.grad_accum_bytes)));
  line(fmt::format("  activations    {}   ({})", gb(m.activations_bytes),
                   r.pipeline_stages.empty() ? "one micro-batch" : "the micro-batches the schedule holds in flight"));
  line(fmt::format("  buffers        {}   ({})", gb(m.buffers_bytes), buffer_note(s)));
  line(fmt::format("  peak           {} of {} usable at {:.3f} ms: {}", gb(m.total_bytes), gb(m.capacity_bytes),
                   m.peak_time_s * 1e3, m.fits ? "fits" : "DOES NOT FIT"));
  line(fmt::format("  usable         {} = {} HBM − {} reserved (CUDA context, workspaces, NCCL buffers)",
                   gb(m.capacity_bytes), gb(m.hbm_bytes), gb(m.reserved_bytes)));
  if (r.offload.present) {
    line(fmt::format("  host memory    {} per node of {}: {} (offloaded states and buffers of its {} GPUs)", gb(m.host_bytes),
                     gb(m.host_capacity_bytes), m.host_bytes <= m.host_capacity_bytes ? "fits" : "DOES NOT FIT",
                     s.gpus_used_per_node()));
    if (m.nvme_bytes > 0)
      line(fmt::format("  NVMe           {} per node of {}: {}", gb(m.nvme_bytes), gb(m.nvme_capacity_bytes),
                       m.nvme_bytes <= m.nvme_capacity_bytes ? "fits" : "DOES NOT FIT"));
  }
  if (m.allocation_waits > 0)
    line(fmt::format("  waits          {} allocations waited for the usable HBM, {:.3f} ms summed (the caching allocator "
                     "frees and retries; the step time includes it)", m.allocation_waits, m.allocation_wait_s * 1e3));
  if (m.allocation_over_limit > 0)
    line(fmt::format("  over limit     {} allocations found no memory and nothing left to run could free any",
                     m.allocation_over_limit));

  line("");
  std::string tail;
  for (const auto& p : r.critical_path_tail) tail += (tail.empty() ? "" : " -> ") + p.name;
  line(fmt::format("critical path    {} tasks, ends: {}", r.critical_path_tasks, tail));
  line(fmt::format("simulated        {} tasks, {} events", r.tasks, r.events));
  if (r.per_rank.present) {
    const auto& pr = r.per_rank;
    const auto msec = [](double sec) { return fmt::format("{:.3f} ms", sec * 1e3); };
    if (pr.pipeline_stages > 1) {
      const std::int64_t replicas = pr.ranks / pr.pipeline_stages;
      // The slowest pipeline's ranks, stage by stage.
      const auto stage_rank = [&](std::int64_t k) { return per_rank_world_rank(s, pr.slowest_copy, k); };
      const std::string ranks = fmt::format("ranks {}, {}, …, {}", stage_rank(0), stage_rank(1), stage_rank(pr.pipeline_stages - 1));
      line(fmt::format("per rank         {} ranks, {} pipelines of {} stages; the step ends between {} and {} (spread {}, {})",
                       pr.ranks, replicas, pr.pipeline_stages, msec(pr.step_time_min_s), msec(pr.step_time_max_s),
                       msec(pr.spread_s),
                       pr.slowest_ties >= replicas ? "every pipeline ends together"
                       : pr.slowest_ties > 1       ? fmt::format("{} pipelines end last, the first of them {}", pr.slowest_ties, ranks)
                                                   : "the slowest pipeline " + ranks));
    } else {
      line(fmt::format("per rank         {} ranks; the step ends between {} and {} (spread {}, {})", pr.ranks,
                       msec(pr.step_time_min_s), msec(pr.step_time_max_s), msec(pr.spread_s),
                       pr.slowest_ties >= pr.ranks ? std::string("every rank ends together")
                       : pr.slowest_ties > 1       ? fmt::format("{} ranks end last, the first of them rank {}", pr.slowest_ties, pr.slowest_rank)
                                                   : fmt::format("slowest rank {}", pr.slowest_rank)));
    }
    line(fmt::format("straggler cost   {} over the no-variation step ({})", msec(pr.straggler_cost_s),
                     msec(pr.no_variation_step_time_s)));
    if (pr.moe_layers > 0)
      line(fmt::format("expert load      each MoE layer's busiest rank takes {:.2f}x its balanced share of tokens, on "
                       "average over {} MoE layers (sim.expert_load cv {:g}{}; busiest over the step: rank {}); every "
                       "all-to-all waits for it",
                       pr.expert_load_busiest, pr.moe_layers, s.variation.expert_load_cv,
                       s.variation.capacity_factor > 0
                           ? fmt::format(", capacity_factor {:g}: {:.2f} % of the routed tokens dropped",
                                         s.variation.capacity_factor, 100 * pr.dropped_token_fraction)
                           : std::string(),
                       pr.busiest_expert_rank));
  }
  for (const auto& w : r.warnings) line("warning: " + w);
  return o;
}

}  // namespace stepsim::models
