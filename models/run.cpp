// SPDX-License-Identifier: Apache-2.0
// run(): lower, simulate, derive the report.
#include "hardware/collective_model.hpp"
#include "hardware/compute_model.hpp"
#include "hardware/task_cost.hpp"
#include "models/expert_parallel.hpp"
#include "models/pipeline.hpp"
#include "models/report.hpp"
#include "models/simulate.hpp"
#include "models/strategy/compute_tasks.hpp"
#include "models/strategy/strategy.hpp"
#include "sim/engine.hpp"
#include "sim/replicate.hpp"
#include "sim/support/error.hpp"
#include "sim/support/resources.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <utility>
#include <optional>

namespace stepsim::models {

namespace {

std::string gb(double bytes) { return fmt::format("{:.1f} GB", bytes / 1e9); }

// Engine options and per-rank contention from the scenario's sim.* keys (semantics.md §E).
hardware::Contention contention_of(const Scenario& s) {
  hardware::Contention c;
  const ContentionConfig& cfg = s.contention;
  c.link_sharing = cfg.link_sharing;
  if (cfg.overlap_model == "factor") c.compute_slowdown = cfg.overlap_compute_slowdown;
  if (cfg.overlap_model == "sm_partition")
    c.compute_slowdown = hardware::sm_partition_slowdown(s.hardware.sm_count, static_cast<int>(cfg.nccl_sms));
  return c;
}

// Why a step does not fit, naming the largest part of its peak first (issue 13 item 6: at
// seq_len 131072 activations, not model state, are what overflow).
std::string does_not_fit_message(const Scenario& s, const MemoryBreakdown& m) {
  const double states = m.params_bytes + m.grads_bytes + m.optimizer_bytes + m.grad_accum_bytes;
  struct Part {
    double bytes;
    std::string what;
  };
  // Per parameter of what this rank's share covers: the whole model (s.model_parameters) when
  // everything is sharded (under EP too: every tensor is split over dp × cp ranks in all), this
  // rank's tensors when its parameters stay whole (ddp, zero1, zero2).
  const bool ep = s.parallelism.ep > 1;
  const int stage = strategy_of(s).zero_stage;
  const double per_param = states / std::max(1.0, static_cast<double>(stage < 3 || !ep ? s.model.parameter_count()
                                                                                       : s.model_parameters));
  const std::string of_rank = ep ? " of this rank's, the routed experts split ep ways" : "";
  std::vector<Part> parts = {
      {states, stage == 0   ? fmt::format("model state ({:.1f} bytes per parameter{}; pure DP keeps a full copy of "
                                          "parameters, gradients and optimizer state on every GPU: shard it with "
                                          "zero1-3 or fsdp)", per_param, of_rank)
               : stage < 3 ? fmt::format("model state ({:.1f} bytes per parameter{}; zero{} keeps whole parameters{} on "
                                          "every GPU, whatever the ranks: zero3 or fsdp shard them too, or offload)",
                                          per_param, of_rank, stage, stage == 1 ? " and gradients" : "")
                           : fmt::format("model state ({:.2f} bytes per parameter after sharding over {} ranks: more "
                                          "ranks or offload)", per_param, s.shard_ranks())},
      {m.activations_bytes,
       fmt::format("activations ({} tokens per micro-batch: lower batch.micro_batch_size or batch.seq_len{})",
                   s.tokens_per_micro_batch(),
                   s.activations.recompute == ActivationConfig::Recompute::Full
                       ? "; recompute is already full"
                       : ", or set activations.recompute \"full\"")},
      {m.buffers_bytes, "framework buffers (gradient buckets, unsharded parameters and gradients in flight)"}};
  std::stable_sort(parts.begin(), parts.end(), [](const Part& a, const Part& b) { return a.bytes > b.bytes; });
  return fmt::format("does not fit: {} per GPU needed at the peak, {} usable ({} HBM less {} reserved); the largest "
                     "part is {} {}, then {} {}",
                     gb(m.total_bytes), gb(m.capacity_bytes), gb(m.hbm_bytes), gb(m.reserved_bytes), gb(parts[0].bytes),
                     parts[0].what, gb(parts[1].bytes),
                     parts[1].what.substr(0, parts[1].what.find(" (")));
}

// Model states and persistent buffers: held the whole step (the memory peak's baseline).
double baseline_bytes(const MemoryBreakdown& m) {
  return m.params_bytes + m.grads_bytes + m.optimizer_bytes + m.grad_accum_bytes + m.buffers_bytes;
}

// Launch queues, and the usable HBM as a memory limit over activations and buffers on top of
// the baseline: every allocation is admitted in program order within it, as the CUDA caching
// allocator, out of memory, frees its cached blocks once their streams have passed them and
// retries (c10/cuda/CUDACachingAllocator.cpp: release_cached_blocks → synchronize_and_free_events)
// instead of failing while frees are still to come (issue 13 item 3).
sim::RunOptions run_options(const Scenario& s, const LoweredStep& step, const MemoryBreakdown& memory,
                            const std::vector<MemoryBreakdown>& stage_memory = {}) {
  const sim::TaskGraph& g = step.graph;
  std::uint32_t streams = 0;
  for (sim::TaskId v = 0; v < g.size(); ++v) streams = std::max(streams, g.task(v).stream + 1);
  const auto connections = static_cast<std::uint32_t>(s.contention.cuda_device_max_connections);
  sim::RunOptions options;
  options.launch_queues = connections < streams ? connections : 0u;  // one queue per stream: no cross-stream order
  if (memory.capacity_bytes > 0) {
    options.memory_limits.push_back({(1u << kActivationCounter) | (1u << kBufferCounter), baseline_bytes(memory),
                                     memory.capacity_bytes, {}});
    // Under PP each stage's rank admits against its own states (found by a trial: every rank
    // had been held to the largest stage's).
    for (const MemoryBreakdown& m : stage_memory) options.memory_limits.back().rank_baseline_bytes.push_back(baseline_bytes(m));
  }
  return options;
}

// `copies` copies of the one-copy timeline `one` of a graph of n tasks (each copy's bindings and
// memory waits in its own ids, as sim::run numbers copies), counting `events_of` copies' events.
sim::Timeline replicate_timeline(const sim::Timeline& one, std::size_t n, std::uint32_t copies, std::uint32_t events_of) {
  std::vector<sim::TaskRecord> records(n * copies);
  std::vector<sim::MemoryWait> waits;
  for (std::uint32_t c = 0; c < copies; ++c) {
    const auto offset = static_cast<sim::TaskId>(std::size_t{c} * n);
    for (sim::TaskId v = 0; v < n; ++v) {
      sim::TaskRecord rec = one[v];
      if (rec.binding != sim::kNoTask) rec.binding += offset;
      records[offset + v] = rec;
    }
    for (sim::MemoryWait w : one.memory_waits()) {
      w.task += offset;
      waits.push_back(w);
    }
  }
  return sim::Timeline(std::move(records), one.events() * events_of, std::move(waits));
}

}  // namespace

std::size_t per_rank_slot(const Scenario& s, std::int64_t world_rank) {
  const auto c = s.layout().coords(world_rank);  // indexed by MeshDim: tp, cp, dp, pp
  const std::int64_t copy = c[0] + s.parallelism.tp * (c[1] + s.parallelism.cp * c[2]);
  return static_cast<std::size_t>(copy * s.parallelism.pp + c[3]);
}

std::int64_t per_rank_world_rank(const Scenario& s, std::int64_t copy, std::int64_t stage) {
  const std::int64_t tp = s.parallelism.tp, cp = s.parallelism.cp;
  return s.layout().rank({copy % tp, copy / tp % cp, copy / (tp * cp), stage});
}

namespace {

// per_rank mode: every rank is a copy of the step in one engine run (sim::run with
// RunOptions::copies), priced by the same cost model as the symmetric play: each rank's link
// sharing, compute slowdown under overlap, launch queues and memory admission are its own and
// are solved again under its variation; its collectives meet the ranks of their communicator.
// Fills r.per_rank and returns rank 0's timeline for the per-rank breakdown. Without variation
// every rank plays the symmetric step `sym` (identical copies reach every collective together),
// which is then the answer for every rank unless a trace of every rank is asked. With
// `keep_all` (traces) every rank's records go to `all`; otherwise only makespans and rank 0 are
// kept (sim::run_summary). `rank0_factor` gets, by task, the duration multiplier rank 0's
// variation gave it (sim::RankVariation::factor; 1 for transfers and without variation).
sim::Timeline simulate_per_rank(const Scenario& s, const LoweredStep& step, const hardware::StepCostModel& cost,
                                const sim::RunOptions& symmetric_options, const sim::Timeline& sym, Report& r,
                                bool keep_all, std::optional<sim::Timeline>& all, const RunProgress& progress,
                                std::vector<double>& rank0_factor) {
  const sim::TaskGraph& g = step.graph;
  // Under PP the lowered step is one pipeline replica (a rank per stage, Task::rank): a copy is
  // a replica, stage_ranks() of them. Copies are numbered TP fastest, then CP, then DP (so the
  // rendezvous spans below hold in any placement order); a world rank reaches its copy and
  // stage through its mesh coordinates (Scenario::layout(): in the default order tp-cp-dp-pp,
  // stage k of copy c is world rank k × stage_ranks() + c).
  const auto pp = static_cast<std::uint32_t>(s.parallelism.pp);
  const auto copies = static_cast<std::uint32_t>(s.stage_ranks());
  const auto slot_of_rank = [&](std::int64_t world_rank) { return per_rank_slot(s, world_rank); };
  const double tasks = static_cast<double>(copies) * static_cast<double>(g.size());
  const std::string copies_text = fmt::format("{} {}", copies, pp > 1 ? "pipeline replicas" : "ranks");
  if (tasks > kMaxPerRankTasks)
    throw InputError(s.source, "/sim/rank_mode",
                     fmt::format("per_rank: {} × {} tasks = {:.3g} tasks; the limit is {:.3g} (use \"symmetric\", "
                                 "fewer ranks or fewer micro-batches)", copies_text, g.size(), tasks, kMaxPerRankTasks));
  check_memory_need(tasks * (keep_all ? kPerRankTraceBytesPerTask : kPerRankBytesPerTask), s.source, "/sim/rank_mode",
                    fmt::format("per_rank{}: {} × {} tasks", keep_all ? " with a trace" : "", copies_text, g.size()),
                    keep_all ? "drop --trace, or use \"symmetric\" or fewer ranks" : "use \"symmetric\" or fewer ranks");
  // A collective meets the ranks of its communicator. Ranks are numbered TP innermost (rank =
  // dp index × tp + tp index, Megatron-LM's order): a TP group is a block of tp consecutive
  // ranks; a DP-side group takes every tp-th rank, in consecutive blocks of its size; HSDP's
  // replica group every (world / ranks)-th rank.
  std::vector<sim::RendezvousSpan> spans;
  for (sim::TaskId v = 0; v < g.size(); ++v) {
    const sim::Task& t = g.task(v);
    if (t.rendezvous == sim::kNoRendezvous) continue;
    if (t.rendezvous >= spans.size()) spans.resize(t.rendezvous + 1);
    const hardware::GroupShape& shape = step.groups.at(t.group);
    const auto size = static_cast<std::uint32_t>(shape.ranks);
    const auto group = static_cast<std::int32_t>(t.group);
    const auto tp = static_cast<std::uint32_t>(s.parallelism.tp);
    // A CP group takes every tp-th rank, in consecutive blocks of its size (tp-cp-dp order).
    // The expert-data-parallel group takes every ep-th rank (in blocks of its size: under hsdp
    // inside a shard group); the experts' replica group is the replica group's (every
    // (world / ranks)-th rank).
    // A point-to-point group (the tied embedding's AllReduce between two stages) stays inside
    // its replica.
    if (step.is_pp_group(t.group)) {
      spans[t.rendezvous] = {1, 1};
      continue;
    }
    spans[t.rendezvous] = {size, group == step.tp_group                                     ? 1u
                                 : group == step.replica_group || group == step.edp_replica_group ? copies / size
                                 : group == step.edp_group ? static_cast<std::uint32_t>(s.parallelism.ep) * tp
                                                           : tp};
  }
  sim::RankVariation var;
  const RankVariationConfig& cfg = s.variation;
  if (pp > 1) {
    var.ranks_per_copy = pp;
    var.task_rank.resize(g.size());
    for (sim::TaskId v = 0; v < g.size(); ++v) var.task_rank[v] = g.task(v).rank;
  }
  if (!cfg.slow_ranks.empty()) {
    var.compute_factor.assign(std::size_t{copies} * pp, 1.0);
    for (const auto& [rank, factor] : cfg.slow_ranks) var.compute_factor[slot_of_rank(rank)] = factor;
  }
  var.distribution = cfg.jitter_distribution == "normal"      ? sim::JitterDistribution::Normal
                     : cfg.jitter_distribution == "lognormal" ? sim::JitterDistribution::LogNormal
                                                              : sim::JitterDistribution::None;
  var.cv = cfg.jitter_cv;
  var.seed = cfg.jitter_seed;
  if (cfg.expert_load_cv > 0) {
    // Uneven routing (sim.expert_load): each MoE layer's compute tasks scale in their expert
    // share with the rank's load of that layer, one draw per rank and layer for the step.
    var.load_cv = cfg.expert_load_cv;
    var.load_cap = cfg.capacity_factor;
    var.load_seed = cfg.expert_load_seed;
    var.load_share.assign(g.size(), 0.0);
    var.load_key.assign(g.size(), 0);
    std::vector<double> share(s.model.layers.size(), -1.0);
    for (sim::TaskId v = 0; v < g.size(); ++v) {
      const sim::Task& t = g.task(v);
      if (t.kind != sim::TaskKind::Compute || t.layer < 0) continue;
      const auto l = static_cast<std::size_t>(t.layer);
      if (share[l] < 0) share[l] = expert_compute_share(s, l);
      var.load_share[v] = share[l];
      var.load_key[v] = static_cast<std::uint32_t>(l);
    }
  }
  if (!cfg.degraded_links.empty()) {
    // Ranks fill nodes in order; only collectives that cross the network stretch, and only
    // their bandwidth part (the variable part of their work: sharing then stretches it further).
    const auto per_node = static_cast<std::uint32_t>(s.gpus_used_per_node());
    var.link_factor.assign(std::size_t{copies} * pp, 1.0);
    for (const auto& [node, factor] : cfg.degraded_links)
      for (std::uint32_t k = 0; k < per_node; ++k)
        var.link_factor[slot_of_rank(static_cast<std::int64_t>(node) * per_node + k)] = factor;
    var.link_bound.assign(g.size(), sim::Time());
    for (sim::TaskId v = 0; v < g.size(); ++v) {
      const sim::Task& t = g.task(v);
      if (t.kind != sim::TaskKind::Transfer || !(hardware::is_collective(t.op) || hardware::is_all_to_all(t.op))) continue;
      const hardware::GroupShape& shape = step.groups.at(t.group);
      if (shape.ranks <= shape.ranks_per_node) continue;
      var.link_bound[v] = cost.work(t).variable;
    }
  }
  sim::RunOptions options = symmetric_options;
  options.copies = copies;
  options.spans = std::move(spans);
  options.variation = std::move(var);
  options.progress = progress;
  const sim::RankVariation& variation = options.variation;
  rank0_factor.assign(g.size(), 1.0);
  if (!variation.none())
    for (sim::TaskId v = 0; v < g.size(); ++v)
      if (g.task(v).kind == sim::TaskKind::Compute) rank0_factor[v] = variation.factor(0, v);
  std::vector<sim::Time> ends;
  std::optional<sim::Timeline> rank0;
  if (variation.none()) {
    // Without variation every rank plays exactly the symmetric step: identical copies reach
    // every collective at the same instant, so each copy's records are `sym`'s (tests/models
    // trace_json_test: the engine's 64 copies equal the symmetric play record for record). The
    // run is not repeated: every rank takes `sym`, and its events once per rank.
    ends.assign(copies, sym.makespan());
    rank0.emplace(replicate_timeline(sym, g.size(), 1, copies));
    if (keep_all) all.emplace(replicate_timeline(sym, g.size(), copies, copies));
  } else if (keep_all) {
    all.emplace(sim::run(g, cost, options));
    ends = sim::copy_makespans(*all, g.size(), copies);
    rank0.emplace(sim::copy_timeline(*all, g.size(), 0));
  } else {
    sim::ReplicatedSummary sum = sim::run_summary(g, cost, options, {0});
    ends = std::move(sum.makespans);
    rank0.emplace(std::move(sum.slices.front()));
  }
  const auto [lo, hi] = std::minmax_element(ends.begin(), ends.end());
  auto& pr = r.per_rank;
  pr.present = true;
  pr.ranks = std::int64_t{copies} * pp;
  pr.pipeline_stages = pp;
  pr.step_time_min_s = lo->seconds();
  pr.step_time_max_s = hi->seconds();
  pr.spread_s = (*hi - *lo).seconds();
  // The slowest copy's world rank (of its first stage under PP).
  const std::int64_t slowest = std::find(ends.begin(), ends.end(), *hi) - ends.begin();
  pr.slowest_copy = slowest;
  pr.slowest_rank = per_rank_world_rank(s, slowest, 0);
  pr.slowest_ties = std::count(ends.begin(), ends.end(), *hi);
  pr.no_variation_step_time_s = variation.none() ? pr.step_time_max_s : sym.makespan().seconds();
  pr.straggler_cost_s = pr.step_time_max_s - pr.no_variation_step_time_s;
  if (variation.load_cv > 0) {
    // The busiest rank's load of each MoE layer (the draws the engine used), averaged; the rank
    // busiest on average; and the share of routed tokens the capacity factor drops.
    sim::RankVariation uncapped = variation;
    uncapped.load_cap = 0;
    double sum = 0, routed = 0, dropped = 0;
    std::vector<double> by_rank(copies, 0.0);
    for (std::size_t l = 0; l < s.model.layers.size(); ++l) {
      if (s.model.layers[l].routing.experts <= 0) continue;
      double busiest = 0;
      for (std::uint32_t c = 0; c < copies; ++c) {
        const double load = variation.load(c, static_cast<std::uint32_t>(l));
        const double wanted = uncapped.load(c, static_cast<std::uint32_t>(l));
        busiest = std::max(busiest, load);
        by_rank[c] += load;
        routed += wanted;
        dropped += wanted - load;
      }
      sum += busiest;
      ++pr.moe_layers;
    }
    if (pr.moe_layers > 0) {
      pr.expert_load_busiest = sum / static_cast<double>(pr.moe_layers);
      pr.busiest_expert_rank =
          per_rank_world_rank(s, std::max_element(by_rank.begin(), by_rank.end()) - by_rank.begin(), 0);
      pr.dropped_token_fraction = routed > 0 ? dropped / routed : 0.0;
    }
  }
  return std::move(*rank0);
}

// The simulator's clock is int64 picoseconds (about 9.2e6 s in all): a step of compute beyond
// this is refused before it plays, naming the model field that made it so long.
constexpr double kMaxStepComputeSeconds = 1e6;

// Where layer `layer` of the scenario's model was written: the model file (or the catalog
// file) with /layers/N, or the scenario's /model/layers/N when it is inline.
std::pair<std::string, std::string> layer_location(const Scenario& s, std::int32_t layer) {
  const std::string tail = layer >= 0 ? fmt::format("/layers/{}", layer) : std::string();
  if (s.model_ref == "inline") return {s.source, "/model" + tail};
  const bool file = s.model_ref.size() > 5 && s.model_ref.substr(s.model_ref.size() - 5) == ".json";
  return {file ? s.model_ref : "models/catalog/" + s.model_ref + ".json", tail.empty() ? "/" : tail};
}

// Prices every compute task once (rank 0's copy is every rank's in the lowered graph) and
// refuses a task or a step too long for sim::Time, naming the layer's file and JSON path
// (fwd_s / bwd_s, or FLOPs and bytes per token over the profile's rates).
// Optimizer offload's rows (Report::offload): rank 0's host tasks by resource, and what of them
// neither its compute nor its communication covers.
void offload_summary(const Scenario& s, const sim::TaskGraph& g, const sim::Timeline& tl, Report& r) {
  using hardware::OpCode;
  OffloadSummary& o = r.offload;
  o.present = true;
  // Stages 1/2 treat any device but none as cpu (stage_1_and_2.py): what runs is cpu.
  o.device = s.sharding.cpu_offload || s.zero_stage() < 3 ? "cpu" : s.sharding.offload_optimizer_device;
  const auto of = [&](std::initializer_list<OpCode> ops) {
    return sim::busy_intervals(g, tl, [ops](const sim::Task& t) {
      if (t.rank != 0 || t.kind != sim::TaskKind::Host) return false;
      for (const OpCode op : ops)
        if (t.op == static_cast<std::uint32_t>(op)) return true;
      return false;
    });
  };
  o.d2h_time_s = sim::total_length(of({OpCode::DeviceToHost})).seconds();
  o.h2d_time_s = sim::total_length(of({OpCode::HostToDevice})).seconds();
  o.cpu_optimizer_time_s = sim::total_length(of({OpCode::CpuOptimizer, OpCode::CpuTorchOptimizer})).seconds();
  o.nvme_time_s = sim::total_length(of({OpCode::NvmeRead, OpCode::NvmeWrite})).seconds();
  const auto host = sim::busy_intervals(g, tl, [](const sim::Task& t) { return t.rank == 0 && t.kind == sim::TaskKind::Host; });
  const auto gpu = sim::busy_intervals(g, tl, [](const sim::Task& t) { return t.rank == 0 && t.kind != sim::TaskKind::Host; });
  o.busy_time_s = sim::total_length(host).seconds();
  o.exposed_time_s = sim::uncovered_length(host, gpu).seconds();
  for (sim::TaskId id = 0; id < g.size(); ++id) {
    const sim::Task& t = g.task(id);
    if (t.rank != 0 || t.kind != sim::TaskKind::Host) continue;
    switch (static_cast<OpCode>(t.op)) {
      case OpCode::DeviceToHost: o.d2h_bytes += t.bytes; break;
      case OpCode::HostToDevice: o.h2d_bytes += t.bytes; break;
      case OpCode::NvmeRead: o.nvme_read_bytes += t.bytes; break;
      case OpCode::NvmeWrite: o.nvme_write_bytes += t.bytes; break;
      default: break;
    }
  }
}

void check_compute_durations(const Scenario& s, const sim::TaskGraph& g, const hardware::StepCostModel& cost) {
  double total = 0;
  for (sim::TaskId id = 0; id < g.size(); ++id) {
    const sim::Task& t = g.task(id);
    if (t.kind != sim::TaskKind::Compute || t.rank != 0) continue;
    const double d = cost.seconds(t);
    total += std::isfinite(d) ? d : kMaxStepComputeSeconds * 2;
    if (!(d <= kMaxStepComputeSeconds) || total > kMaxStepComputeSeconds) {
      const auto [file, path] = layer_location(s, t.layer);
      const std::string layer = t.layer >= 0 ? fmt::format("layer '{}'", s.model.layers[t.layer].name) : "the model";
      throw InputError(file, path,
                       fmt::format("{} makes task '{}' take {:.3g} s on '{}' ({:.3g} s of compute so far this step); "
                                   "expected at most {:g} s of compute per step (check fwd_s / bwd_s, or the FLOPs and "
                                   "bytes per token against the profile's rates)",
                                   layer, t.name, d, s.hardware.name, total, kMaxStepComputeSeconds));
    }
  }
}

Report run_impl(const Scenario& s, SimulatedStep* keep, const RunProgress& progress = {}) {
  const auto wall_start = std::chrono::steady_clock::now();
  Report r;
  r.scenario = s;
  LoweredStep step = lower_step(s);
  const hardware::StepCostModel cost = step_cost_model(s, step);
  std::optional<sim::Timeline> all;  // per_rank: every rank's records
  // Under PP each stage holds its own layers' states; the memory limit takes the largest.
  const int pp = static_cast<int>(s.parallelism.pp);
  std::vector<Scenario> stage_scenarios;  // each PP rank's layers (pipeline_rank_scenario), once
  std::vector<MemoryBreakdown> stage_memory;
  for (int k = 0; pp > 1 && k < pp; ++k) {
    stage_scenarios.push_back(pipeline_rank_scenario(s, k));
    stage_memory.push_back(static_memory(stage_scenarios.back()));
  }
  r.memory = static_memory(s);
  if (pp > 1)
    r.memory = *std::max_element(stage_memory.begin(), stage_memory.end(), [](const MemoryBreakdown& a, const MemoryBreakdown& b) {
      return baseline_bytes(a) < baseline_bytes(b);
    });
  const sim::RunOptions options = run_options(s, step, r.memory, stage_memory);
  check_compute_durations(s, step.graph, cost);
  sim::Timeline tl = sim::run(step.graph, cost, options);
  const sim::TaskGraph& g = step.graph;
  // per_rank: rank 0's copy of the same step, played among every rank's.
  // per_rank: rank 0's own variation (slow rank, jitter, expert load) is its tasks' time alone,
  // not contention (found by a hostile trial: an expert load showed as overlap slowdown, < 0
  // when rank 0's share was light).
  std::vector<double> rank0_factor;
  if (s.rank_mode == "per_rank")
    tl = simulate_per_rank(s, step, cost, options, tl, r, keep != nullptr, all, progress, rank0_factor);
  for (sim::TaskId id = 0; id < g.size(); ++id) {
    // What contention added to rank 0's tasks beyond their time alone (sim::Work's fluid model).
    const sim::Task& t = g.task(id);
    if (t.rank != 0) continue;
    const double alone = cost.duration(t).seconds() * (rank0_factor.empty() ? 1.0 : rank0_factor[id]);
    double stretch = (tl[id].end - tl[id].start).seconds() - alone;
    // A varied duration is rounded to the engine's picoseconds: no contention makes a task shorter.
    if (!rank0_factor.empty()) stretch = std::max(0.0, stretch);
    if (t.kind == sim::TaskKind::Host) continue;  // offload tasks: their own rows (r.offload)
    (t.kind == sim::TaskKind::Transfer ? r.link_sharing_stretch_s : r.overlap_slowdown_s) += stretch;
  }
  // Allocation waits of rank 0, or of every PP rank (a stage that waits for memory stalls its
  // neighbours too).
  for (const sim::MemoryWait& w : tl.memory_waits()) {
    if (pp == 1 && step.graph.task(w.task).rank != 0) continue;
    if (w.over_limit) {
      ++r.memory.allocation_over_limit;
      continue;
    }
    ++r.memory.allocation_waits;
    r.memory.allocation_wait_s += (w.until - w.since).seconds();
  }

  r.step_time_s = r.per_rank.present ? r.per_rank.step_time_max_s : tl.makespan().seconds();
  r.error_band = error_band_for(s);
  r.calibration_band = calibration_band_for(s);
  // The overlay's residuals describe this step only when it prices part of it: its GEMM curve
  // (any GEMM), its memory-bound efficiency (any streaming kernel), its host time (when the
  // run takes it) or a collective it has a table for (set below).
  bool calibrated_any = s.calibration && (s.calibration->gemm.has_value() || s.calibration->memory.has_value() ||
                                          s.framework.host_op_measured);
  const auto compute = sim::busy_intervals(g, tl, [](const sim::Task& t) { return t.kind == sim::TaskKind::Compute && t.rank == 0; });
  const auto comm = sim::busy_intervals(g, tl, [](const sim::Task& t) { return t.kind == sim::TaskKind::Transfer && t.rank == 0; });
  r.compute_time_s = sim::total_length(compute).seconds();
  r.comm_time_s = sim::total_length(comm).seconds();
  r.exposed_comm_s = sim::uncovered_length(comm, compute).seconds();
  r.overlap_fraction = r.comm_time_s > 0 ? 1.0 - r.exposed_comm_s / r.comm_time_s : 1.0;
  if (s.sharding.offloads()) offload_summary(s, g, tl, r);
  // Exposure by mesh dimension, attributed in turn so that the parts add up: TP (what compute
  // leaves), CP (what compute and TP leave), EP (what those leave), PP (what those leave), then
  // DP (the rest; the expert-data-parallel reductions with it).
  if (step.tp_group >= 0 || pp > 1 || step.cp_group >= 0 || step.ep_group >= 0) {
    const auto tp_group = step.tp_group, ep_group = step.ep_group;
    const auto is_tp = [tp_group](const sim::Task& t) {
      return t.kind == sim::TaskKind::Transfer && tp_group >= 0 && t.group == static_cast<std::uint32_t>(tp_group);
    };
    const auto is_ep = [ep_group](const sim::Task& t) {
      return t.kind == sim::TaskKind::Transfer && ep_group >= 0 && t.group == static_cast<std::uint32_t>(ep_group);
    };
    const auto is_pp = [&step](const sim::Task& t) { return t.kind == sim::TaskKind::Transfer && step.is_pp_group(t.group); };
    const auto is_cp = [&step](const sim::Task& t) { return t.kind == sim::TaskKind::Transfer && step.is_cp_group(t.group); };
    const auto tp_comm = sim::busy_intervals(g, tl, [&](const sim::Task& t) { return t.rank == 0 && is_tp(t); });
    const auto cp_comm = sim::busy_intervals(g, tl, [&](const sim::Task& t) { return t.rank == 0 && is_cp(t); });
    const auto ep_comm = sim::busy_intervals(g, tl, [&](const sim::Task& t) { return t.rank == 0 && is_ep(t); });
    const auto pp_comm = sim::busy_intervals(g, tl, [&](const sim::Task& t) { return t.rank == 0 && is_pp(t); });
    const auto compute_tp = sim::busy_intervals(g, tl, [&](const sim::Task& t) {
      return t.rank == 0 && (t.kind == sim::TaskKind::Compute || is_tp(t));
    });
    const auto compute_tp_cp = sim::busy_intervals(g, tl, [&](const sim::Task& t) {
      return t.rank == 0 && (t.kind == sim::TaskKind::Compute || is_tp(t) || is_cp(t));
    });
    const auto compute_tp_cp_ep = sim::busy_intervals(g, tl, [&](const sim::Task& t) {
      return t.rank == 0 && (t.kind == sim::TaskKind::Compute || is_tp(t) || is_cp(t) || is_ep(t));
    });
    r.tp_comm_time_s = sim::total_length(tp_comm).seconds();
    r.tp_exposed_comm_s = sim::uncovered_length(tp_comm, compute).seconds();
    r.cp_comm_time_s = sim::total_length(cp_comm).seconds();
    r.cp_exposed_comm_s = sim::uncovered_length(cp_comm, compute_tp).seconds();
    r.ep_comm_time_s = sim::total_length(ep_comm).seconds();
    r.ep_exposed_comm_s = sim::uncovered_length(ep_comm, compute_tp_cp).seconds();
    r.pp_comm_time_s = sim::total_length(pp_comm).seconds();
    r.pp_exposed_comm_s = sim::uncovered_length(pp_comm, step.ep_group >= 0 ? compute_tp_cp_ep : compute_tp_cp).seconds();
    r.dp_comm_time_s = sim::total_length(sim::busy_intervals(g, tl, [&](const sim::Task& t) {
                                           return t.rank == 0 && t.kind == sim::TaskKind::Transfer && !is_tp(t) &&
                                                  !is_pp(t) && !is_cp(t) && !is_ep(t);
                                         })).seconds();
    // The rest of the exposed time; rounding of the picosecond sums can leave −1e-19.
    r.dp_exposed_comm_s = std::max(0.0, r.exposed_comm_s - r.tp_exposed_comm_s - r.cp_exposed_comm_s -
                                            r.ep_exposed_comm_s - r.pp_exposed_comm_s);
  }
  // per_rank: rank 0 is idle while it waits at a collective for ranks that reach it later, and
  // from its last task until the slowest rank ends the step; that wait is the rest of the step
  // (issue 13 item 20). Symmetric mode: every rank is rank 0, the step is compute ∪ comm.
  if (r.per_rank.present)
    r.wait_time_s = std::max(0.0, r.step_time_s - r.compute_time_s - r.exposed_comm_s - r.offload.exposed_time_s);

  for (sim::TaskId id = 0; id < g.size(); ++id) {
    const sim::Task& t = g.task(id);
    if (t.rank != 0) continue;
    const double d = (tl[id].end - tl[id].start).seconds();
    // The GPU's phases; offload's host tasks have their own rows (r.offload).
    if (t.kind != sim::TaskKind::Host) switch (static_cast<Phase>(t.phase)) {
      case Phase::Forward: r.forward_time_s += d; break;
      case Phase::Backward: r.backward_time_s += d; break;
      case Phase::Optimizer: r.optimizer_time_s += d; break;
      case Phase::Overhead: r.overhead_time_s += d; break;
      case Phase::Communication: break;
    }
    if (t.kind != sim::TaskKind::Transfer) continue;
    const auto c = cost.collective(t);
    calibrated_any = calibrated_any || !c.calibration.empty();
    const bool p2p = hardware::is_p2p(t.op), a2a = hardware::is_all_to_all(t.op);
    // A point-to-point message moves its bytes once (bus factor 1, as nccl-tests' sendrecv); an
    // all-to-all (n − 1)/n of them (nccl-tests' alltoall), as AllGather's factor.
    const hardware::CollectiveOp cop = p2p || a2a ? hardware::CollectiveOp::AllGather
                                                  : hardware::collective_of(static_cast<hardware::OpCode>(t.op));
    const std::string op = p2p ? "SendRecv" : a2a ? "AllToAll" : hardware::collective_op_label(cop);
    const auto& shape = step.groups[t.group];
    const double factor = p2p ? 1.0 : hardware::bus_factor(cop, shape.ranks);
    const std::string group = static_cast<std::int32_t>(t.group) == step.tp_group ? "tp"
                              : step.is_pp_group(t.group)                         ? "pp"
                              : step.is_cp_group(t.group)                         ? "cp"
                              : static_cast<std::int32_t>(t.group) == step.ep_group ? "ep"
                              : step.is_edp_group(t.group)                        ? "edp"
                                                                                  : "dp";
    auto it = std::find_if(r.collectives.begin(), r.collectives.end(), [&](const CollectiveSummary& x) {
      return x.op == op && x.bytes == t.bytes && x.ranks == shape.ranks && x.algorithm == c.algorithm &&
             x.group == group;
    });
    if (it == r.collectives.end()) {
      CollectiveSummary cs;
      cs.op = op;
      cs.group = group;
      cs.bytes = t.bytes;
      cs.time_s = c.time_s();
      cs.latency_s = c.latency_s;
      cs.algorithm = c.algorithm;
      cs.protocol = c.protocol;
      cs.algbw_bytes_per_s = cs.time_s > 0 ? t.bytes / cs.time_s : 0;
      cs.busbw_bytes_per_s = cs.algbw_bytes_per_s * factor;
      r.calibration_extrapolated = r.calibration_extrapolated || c.calibration_extrapolated;
      if (c.calibration_extrapolated)
        r.warnings.push_back(fmt::format("calibration_extrapolated: {} of {:.0f} B over {} ranks is outside what "
                                         "'{}' measured; used {}", op, t.bytes, step.groups[t.group].ranks,
                                         s.calibration_ref, c.calibration));
      // Once per op and scope: what the overlay does not cover (issue 13 item 8, 10).
      const std::string scope = shape.ranks > shape.ranks_per_node ? "inter_node" : "intra_node";
      auto once = [&](const std::string& w) {
        if (std::find(r.warnings.begin(), r.warnings.end(), w) == r.warnings.end()) r.warnings.push_back(w);
      };
      if (!c.calibration_derived_from.empty())
        once(fmt::format("calibration_derived: '{}' has no {} {} table; {} takes its {} fit over the same links "
                         "(AllReduce = ReduceScatter + AllGather: same bus bandwidth, same per-step latency)",
                         s.calibration_ref, op, scope, op, c.calibration_derived_from));
      if (c.calibration_uncovered)
        once(fmt::format("calibration_uncovered: '{}' has no {} table for any op; {} {} is priced by the nominal "
                         "alpha-beta model", s.calibration_ref, scope, op, scope));
      cs.ranks = shape.ranks;
      cs.spans_nodes = shape.ranks > shape.ranks_per_node;
      r.collectives.push_back(cs);
      it = r.collectives.end() - 1;
    }
    ++it->count;
    r.comm_bytes_per_rank += t.bytes * factor;
    if (it->spans_nodes) r.inter_node_collective_bytes += t.bytes;
  }

  r.tokens_per_step = static_cast<double>(s.data_ranks()) * static_cast<double>(s.tokens_per_gpu_step());
  r.tokens_per_s = r.step_time_s > 0 ? r.tokens_per_step / r.step_time_s : 0;
  r.model_flops_per_gpu = model_flops_per_gpu_step(s) / static_cast<double>(pp);  // the stages share the model
  r.mfu = r.step_time_s > 0 ? r.model_flops_per_gpu / (r.step_time_s * s.hardware.peak_flops_per_s) : 0;
  if (!step.groups.empty() && step.groups[0].ranks > 1)
    r.comm_bound_threshold_tokens_per_gpu = comm_bound_threshold(s, step).tokens_per_gpu;
  // The last micro-batch (the one that synchronises gradients) against its own backward: its
  // communication is one sync's, plus, under ZeRO-3 / FSDP / HSDP, its AllGathers.
  {
    // Under PP, PP rank 0's last micro-batch (pipeline.cpp names its tasks "s0.mbN.").
    const std::string last =
        (pp > 1 ? "s0." : "") + micro_batch_prefix(s.batch.grad_accum - 1, s.batch.grad_accum);
    const auto in_last = [&last](const sim::Task& t) { return t.rank == 0 && t.name.compare(0, last.size(), last) == 0; };
    const double comm_last = sim::total_length(sim::busy_intervals(g, tl, [&](const sim::Task& t) {
                                                 // Gradient (and FSDP gather) traffic only: PP's messages and
                                                 // EP's all-to-alls do not shrink with fewer tokens.
                                                 return in_last(t) && t.kind == sim::TaskKind::Transfer &&
                                                        !step.is_pp_group(t.group) &&
                                                        static_cast<std::int32_t>(t.group) != step.ep_group;
                                               })).seconds();
    double backward_last = 0;
    for (sim::TaskId id = 0; id < g.size(); ++id)
      if (in_last(g.task(id)) && static_cast<Phase>(g.task(id).phase) == Phase::Backward)
        backward_last += (tl[id].end - tl[id].start).seconds();
    if (backward_last > 0 && comm_last > 0)
      r.comm_bound_tokens_per_gpu_effective = static_cast<double>(s.tokens_per_micro_batch()) * comm_last / backward_last;
  }
  r.bucket_count = step.buckets.size();
  for (const auto& b : step.buckets) {
    r.bucket_bytes_max = std::max(r.bucket_bytes_max, b.bytes);
    r.gradient_bytes += b.bytes;
  }
  std::uint32_t peak_rank = 0;
  if (pp > 1) {
    // Every stage's share of the step and its memory peak; the report's memory rows are the
    // highest stage's.
    double highest = -1;
    for (int k = 0; k < pp; ++k) {
      const auto rank = static_cast<std::uint32_t>(k);
      const auto stage_compute = sim::busy_intervals(g, tl, [rank](const sim::Task& t) {
        return t.kind == sim::TaskKind::Compute && t.rank == rank;
      });
      const auto stage_comm = sim::busy_intervals(g, tl, [rank](const sim::Task& t) {
        return t.kind == sim::TaskKind::Transfer && t.rank == rank;
      });
      PipelineStageSummary st;
      const Scenario& stage_s = stage_scenarios[static_cast<std::size_t>(k)];
      st.layers = stage_s.model.layers.size();
      st.blocks = static_cast<std::size_t>(std::count_if(stage_s.model.layers.begin(), stage_s.model.layers.end(),
                                                         [](const LayerSpec& l) { return !l.root; }));
      st.parameters = static_cast<double>(stage_s.model.parameter_count());
      st.compute_time_s = sim::total_length(stage_compute).seconds();
      st.exposed_comm_s = sim::uncovered_length(stage_comm, stage_compute).seconds();
      st.bubble_s = std::max(0.0, r.step_time_s - st.compute_time_s - st.exposed_comm_s);
      const sim::MemoryPeak p = sim::memory_peak(g, tl, rank, baseline_bytes(stage_memory[static_cast<std::size_t>(k)]));
      st.memory_peak_bytes = p.bytes;
      st.activations_bytes = std::max(0.0, p.counter_bytes[kActivationCounter]);
      if (p.bytes > highest) {
        highest = p.bytes;
        peak_rank = rank;
      }
      r.pipeline_stages.push_back(st);
    }
    // The peak rank's states; the allocation waits counted above stay (every PP rank's).
    const MemoryBreakdown waits = r.memory;
    r.memory = stage_memory[peak_rank];
    r.memory.allocation_waits = waits.allocation_waits;
    r.memory.allocation_wait_s = waits.allocation_wait_s;
    r.memory.allocation_over_limit = waits.allocation_over_limit;
    r.memory_stage = peak_rank;
  }
  const sim::MemoryPeak peak = sim::memory_peak(g, tl, peak_rank, baseline_bytes(r.memory));
  // Every row is its value at the peak instant, so the rows add up to the peak (issue 13 item 5).
  // Allocations and frees of one counter cancel to within rounding (−1e-5 bytes): never below 0.
  r.memory.activations_bytes = std::max(0.0, peak.counter_bytes[kActivationCounter]);
  r.memory.buffers_bytes += std::max(0.0, peak.counter_bytes[kBufferCounter]);
  r.memory.total_bytes = peak.bytes;
  r.memory.peak_time_s = peak.at.seconds();
  r.memory.fits = r.memory.total_bytes <= r.memory.capacity_bytes;
  r.tasks = g.size();
  r.events = tl.events();

  const auto path = tl.critical_path();
  r.critical_path_tasks = path.size();
  const std::size_t tail = std::min<std::size_t>(path.size(), 4);
  for (std::size_t i = path.size() - tail; i < path.size(); ++i)
    r.critical_path_tail.push_back({g.task(path[i]).name, tl[path[i]].start.seconds(), tl[path[i]].end.seconds()});

  if (!r.memory.fits) r.warnings.push_back(does_not_fit_message(s, r.memory));
  if (s.checkpoint.enabled) {
    r.checkpoint_present = true;
    r.checkpoint = checkpoint_cost(s);
    if (r.checkpoint.rank0_host_bytes > r.checkpoint.host_capacity_bytes)
      r.warnings.push_back(fmt::format("a full state dict gathers {:.1f} GB into rank 0's host memory, more than the {:.1f} "
                                       "GB of profile '{}' (host.memory_bytes): save it sharded (DCP) instead",
                                       r.checkpoint.rank0_host_bytes / 1e9, r.checkpoint.host_capacity_bytes / 1e9,
                                       s.hardware.name));
  }
  if (r.memory.host_bytes > r.memory.host_capacity_bytes)
    r.warnings.push_back(fmt::format("the offloaded states need {:.1f} GB of host memory per node ({} GPUs' partitions "
                                     "and buffers), more than the {:.1f} GB of profile '{}' (host.memory_bytes)",
                                     r.memory.host_bytes / 1e9, s.gpus_used_per_node(), r.memory.host_capacity_bytes / 1e9,
                                     s.hardware.name));
  if (r.memory.nvme_bytes > r.memory.nvme_capacity_bytes)
    r.warnings.push_back(fmt::format("the states swapped to NVMe need {:.1f} GB per node, more than the {:.1f} GB of "
                                     "drives of profile '{}' (host.nvme_bytes)",
                                     r.memory.nvme_bytes / 1e9, r.memory.nvme_capacity_bytes / 1e9, s.hardware.name));
  if (s.sharding.offload_optimizer_device == "nvme" && s.zero_stage() < 3)
    r.warnings.push_back(fmt::format("offload_optimizer device \"nvme\" under {}: DeepSpeed's stage 1/2 optimizer treats any "
                                     "device but \"none\" as cpu (stage_1_and_2.py), so the states stay in host memory; "
                                     "NVMe swapping (ZeRO-Infinity) is stage 3 only",
                                     s.parallelism.strategy));
  for (const auto& n : s.model.not_modelled) r.warnings.push_back(fmt::format("model '{}': {}", s.model.name, n));
  if (s.model.context_length > 0 && s.batch.seq_len > s.model.context_length)
    r.warnings.push_back(fmt::format("seq_len {} is beyond the {} positions model '{}' declares "
                                     "(max_position_embeddings): it runs, but the model was not configured for it",
                                     s.batch.seq_len, s.model.context_length, s.model.name));
  if (!s.activations.flash_attention) {
    const double seq = static_cast<double>(s.batch.seq_len);
    for (const auto& l : s.model.layers)
      if (l.attention_keys(seq) < seq) {
        r.warnings.push_back(fmt::format(
            "model '{}' has sliding-window attention, but eager attention (activations.attention eager) computes the "
            "whole masked {}x{} scores; a flash kernel would skip the masked keys", s.model.name, s.batch.seq_len,
            s.batch.seq_len));
        break;
      }
  }
  // A band describes runs that ran: a step that does not fit gets none.
  if (!r.memory.fits && r.error_band.present()) {
    r.error_band.set.clear();
    r.error_band_withheld = "the step does not fit in memory";
  }
  if (!calibrated_any) r.calibration_band = CalibrationBand{};
  if (!s.variation.degraded_links.empty() && r.inter_node_collective_bytes == 0)
    r.warnings.push_back(
        "degraded_links: no collective of this step crosses the network (every communicator stays inside a "
        "node), so a degraded node's NICs change nothing");
  const double tokens_mb = static_cast<double>(s.tokens_per_micro_batch());
  if (r.comm_bound_tokens_per_gpu_effective > 0 && tokens_mb < r.comm_bound_tokens_per_gpu_effective)
    r.warnings.push_back(fmt::format(
        "communication-bound: {:.0f} tokens per GPU per micro-batch is below the {:.0f} at which this "
        "step's backward lasts as long as its gradient communication ({:.0f} at peak FLOP/s); "
        "gradient traffic cannot hide behind backward",
        tokens_mb, r.comm_bound_tokens_per_gpu_effective, r.comm_bound_threshold_tokens_per_gpu));
  // An order that puts several PP stages on a node whose DP groups cross the network: the node's
  // DP groups from different stages are priced as sharing its NICs at once (GroupShape's
  // concurrent groups), though the schedule staggers the stages' last backwards.
  if (const RankLayout layout = s.layout(); s.parallelism.pp > 1) {
    const int stages_per_node = layout.members_per_node(layout.whole(MeshDim::PP));
    const MeshGroup data = layout.data(1, s.data_ranks());
    if (stages_per_node > 1 && layout.members_per_node(data) < s.data_ranks())
      r.warnings.push_back(fmt::format(
          "placement: {} PP stages share each node, and their DP groups cross the network; the node's {} DP groups are "
          "priced as sharing its NICs at once, though the schedule ends the stages' backwards at different times (an "
          "upper bound on that sharing)",
          stages_per_node, layout.groups_per_node(data)));
  }
  // Expert parallelism's all-to-alls sit on the compute stream: nothing hides them, and more
  // tokens per GPU grow them with the compute.
  if (r.step_time_s > 0 && r.ep_exposed_comm_s > 0.2 * r.step_time_s) {
    const int gpn = s.ranks_per_node();  // the data ranks on a node
    r.warnings.push_back(fmt::format(
        "expert parallelism: the all-to-alls take {:.1f} % of the step ({:.3f} ms, none hidden: they sit between the "
        "router and the experts){}",
        100 * r.ep_exposed_comm_s / r.step_time_s, r.ep_exposed_comm_s * 1e3,
        s.parallelism.ep > gpn ? fmt::format("; ep {} spans nodes, so most tokens cross the network: ep {} would keep "
                                             "them on NVLink, but each rank would then hold and reduce {}x the experts "
                                             "over more nodes (run both)", s.parallelism.ep, gpn, s.parallelism.ep / gpn)
                               : std::string()));
  }
  r.wall_time_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  if (keep != nullptr) {
    keep->copies = all ? static_cast<std::uint32_t>(s.stage_ranks()) : 1;  // under PP a copy is a pipeline
    keep->timeline.emplace(all ? std::move(*all) : std::move(tl));
    keep->step = std::move(step);
  }
  return r;
}

}  // namespace

double memory_floor_bytes(const Scenario& s) {
  const int pp = static_cast<int>(s.parallelism.pp);
  const auto schedule = pipeline_schedule_of(s.parallelism.pipeline_schedule);
  double floor = 0;
  for (int k = 0; k < pp; ++k) {
    const Scenario stage = pp > 1 ? pipeline_rank_scenario(s, k) : s;
    double kept = 0;
    for (std::size_t l = 0; l < stage.model.layers.size(); ++l) kept += layer_activation_bytes(stage, l);
    const std::int64_t m = s.batch.grad_accum;
    const std::int64_t in_flight = pp == 1                                      ? 1
                                   : schedule == PipelineSchedule::OneFOneB ? std::min<std::int64_t>(pp - k, m)
                                   : schedule == PipelineSchedule::GPipe    ? m
                                                                            : 1;
    floor = std::max(floor, baseline_bytes(static_memory(stage)) + kept * static_cast<double>(in_flight));
  }
  return floor;
}

std::vector<double> layer_compute_s(const Scenario& s) {
  const LoweredStep step = lower_step(s);
  const hardware::StepCostModel cost = step_cost_model(s, step);
  check_compute_durations(s, step.graph, cost);
  std::vector<double> out(s.model.layers.size(), 0.0);
  for (sim::TaskId id = 0; id < step.graph.size(); ++id) {
    const sim::Task& t = step.graph.task(id);
    const auto phase = static_cast<Phase>(t.phase);
    if (t.rank != 0 || t.layer < 0 || static_cast<std::size_t>(t.layer) >= out.size()) continue;
    // The layer's kernels, and the mesh's collectives the compute stream runs in line with them.
    const bool kernel = t.kind == sim::TaskKind::Compute && (phase == Phase::Forward || phase == Phase::Backward);
    const bool in_line = t.kind == sim::TaskKind::Transfer && t.stream == kComputeStream;
    if (!kernel && !in_line) continue;
    out[static_cast<std::size_t>(t.layer)] += cost.seconds(t);
  }
  return out;
}

hardware::StepCostModel step_cost_model(const Scenario& s, const LoweredStep& step) {
  hardware::StepCostModel cost(s.hardware, step.groups, s.algorithm, s.calibration, s.collective_model,
                               contention_of(s));
  cost.set_kernel_work(kernel_work_table(s), s.framework.host_op_s);
  cost.set_host_ranks(s.gpus_used_per_node());
  cost.cache_collectives(step.graph);
  return cost;
}

hardware::Threshold comm_bound_threshold(const Scenario& s, const LoweredStep& step) {
  const hardware::GroupShape& dp_group = step.groups.at(0);
  // "At peak FLOP/s": the peak of the arithmetic the linears run in (FP8 under float8).
  hardware::HardwareProfile peak = s.hardware;
  peak.peak_flops_per_s = s.hardware.peak_for(s.precision.float8 != PrecisionConfig::Float8::None ? hardware::GemmMath::Fp8
                                                                                                 : s.precision.gemm_math);
  // The threshold prices a sample at the seeds' 6·Ψ FLOPs (a token of a transformer); an image
  // of a CNN costs its convolutions' FLOPs (3 × forward), and a token of a mixture of experts
  // only its active experts' (the seeds' E/k factor, §7.3, here exact: shared experts, dense
  // blocks and attention included), so the same compute time covers 6·Ψ / (FLOPs per sample)
  // as many samples.
  const double flops = model_flops_per_gpu_step(s) / static_cast<double>(s.parallelism.pp);  // the stages share the model
  const double per_sample = flops / static_cast<double>(s.tokens_per_gpu_step());
  // Under expert parallelism the routed experts' gradients reduce over their own group (the
  // expert-data-parallel ranks, fewer per node, so often at the NIC's pace): each part's bytes
  // at its group's bandwidth, the two times added, as the step runs them one after the other.
  // With no such group (ep = dp × cp) each expert is whole on its rank and its gradients move
  // nowhere.
  const double total = static_cast<double>(s.model.trainable_parameter_count());
  double experts = 0;
  for (const auto& l : s.model.layers)
    for (const auto& p : l.params)
      if (p.trainable && expert_partitioned(s, p)) experts += static_cast<double>(p.numel);
  const double dense = total - experts;
  const bool scaled = (s.model.sample_unit() == "images" || s.model.has_experts()) && per_sample > 0;
  const double factor = scaled ? 6.0 * total / per_sample : 1.0;
  hardware::Threshold t = hardware::dp_threshold(peak, dp_group, factor);
  if (experts <= 0 || !(total > 0)) return t;
  // Each group's share of the factor: its parameters' share of this rank's.
  hardware::Threshold e;  // none without an expert group
  if (step.edp_group >= 0)
    e = hardware::dp_threshold(peak, step.groups.at(static_cast<std::size_t>(step.edp_group)), factor * experts / total);
  const double dense_share = dense / total;
  t.tokens_per_gpu = t.tokens_per_gpu * dense_share + e.tokens_per_gpu;
  t.tokens_per_gpu_asymptotic = t.tokens_per_gpu_asymptotic * dense_share + e.tokens_per_gpu_asymptotic;
  t.moe_factor = t.tokens_per_gpu / hardware::dp_threshold(peak, dp_group).tokens_per_gpu;
  t.min_global_batch_tokens = t.tokens_per_gpu * dp_group.ranks;
  t.min_global_batch_tokens_asymptotic = t.tokens_per_gpu_asymptotic * dp_group.ranks;
  return t;
}

Report run(const Scenario& s) { return run_impl(s, nullptr); }

Report run(const Scenario& s, SimulatedStep& keep) { return run_impl(s, &keep); }

Report run(const Scenario& s, SimulatedStep* keep, const RunProgress& progress) { return run_impl(s, keep, progress); }

}  // namespace stepsim::models
