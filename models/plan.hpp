// SPDX-License-Identifier: Apache-2.0
// `stepsim plan` (issue 17 item 4): the fastest configuration of a model on a cluster that
// fits, searched over every strategy, mesh, micro-batch, recomputation policy and offload,
// pruned by bounds before simulating, the survivors simulated through the sweep machinery.
#pragma once

#include "models/sweep.hpp"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace stepsim::models {

/// What to plan for: a model, a profile, a GPU count and a global batch, or a scenario whose
/// parallelism is left to the search (its model, hardware, cluster, sequence length, precision,
/// optimizer, framework, checkpoints and every other setting kept; its `parallelism`,
/// `batch.micro_batch_size`, `batch.grad_accum`, `activations.recompute` and `ac_freq` are what
/// the search chooses). A field given here overrides the scenario's.
struct PlanQuery {
  std::string scenario;           ///< scenario file ("" = none: model, hardware, gpus and the batch are required)
  std::vector<std::string> overrides;  ///< "path=value" applied to the scenario first (as `run --set`)
  std::string model;              ///< catalog name or model file (as a scenario's `model`; "" = the scenario's)
  std::string hardware;           ///< profile name or file ("" = the scenario's)
  std::int64_t gpus = 0;          ///< GPUs in all, ≥ 1 (0 = the scenario's cluster: nodes × gpus_per_node)
  std::int64_t gpus_per_node = 0; ///< 0 = the scenario's cluster, else the profile's
  /// Tokens per optimizer step, > 0 (0 = the scenario's: dp × micro_batch_size × seq_len ×
  /// grad_accum, when it gives a parallelism).
  double global_batch_tokens = 0;
  std::int64_t seq_len = 0;       ///< tokens per sequence (0 = the scenario's batch.seq_len, else 4096)
  std::int64_t top = 5;           ///< plans to keep, ≥ 1
  unsigned threads = 0;           ///< simulation threads (0 = all cores)
};

/// One configuration of the search: the scenario overrides that make it and its simulated figures.
struct Plan {
  std::string strategy;
  std::int64_t dp = 1, tp = 1, pp = 1, cp = 1, ep = 1;
  std::int64_t shard_group_size = 0;   ///< hsdp only
  std::int64_t micro_batch_size = 1, grad_accum = 1;
  std::string recompute = "none";
  std::string offload = "none";        ///< "none", or "cpu" (offload_optimizer / cpu_offload)
  /// fsdp / hsdp with grad_accum > 1: reduce every micro-batch (parallelism.sync_every_micro_batch)
  /// instead of accumulating unsharded gradients until the last.
  bool sync_every_micro_batch = false;
  /// The strategy's knobs tuned away from their defaults ("bucket_cap_mb=100",
  /// "overlap_comm=true", ...: parallelism.KEY=VALUE, VALUE as JSON); empty: the defaults.
  std::vector<std::string> knobs;
  std::vector<std::string> overrides;  ///< "path=value", applied to the base scenario
  double memory_lower_bound_bytes = 0; ///< model states + a lower bound of the activations
  double time_lower_bound_s = 0;       ///< model FLOPs at the sustained peak (+ the CPU's step when offloading)
  // Simulated (when `simulated`):
  bool simulated = false;
  bool fits = false;                   ///< GPU memory and host memory
  std::string error;                   ///< the scenario was refused (the rule it broke)
  double step_time_s = 0, tokens_per_s = 0, mfu = 0;
  double memory_bytes = 0, capacity_bytes = 0;
  double exposed_comm_s = 0, exposed_offload_s = 0;
  double checkpoint_s = 0;             ///< checkpoint saves amortised per step (the scenario's `checkpoint`; 0 without)
  double allocation_wait_s = 0;        ///< time allocations waited for the usable HBM (memory.allocation_wait_s)
  /// What the ranking compares: the step and its share of the checkpoint saves.
  double time_per_step_s() const { return step_time_s + checkpoint_s; }
  /// "zero3 dp64 tp2 mbs2 ga4 full": how reports name it (tp, pp, cp, ep only above 1).
  std::string label() const;
  /// The mesh and strategy family it belongs to (for --explain): "zero3", "fsdp + tp", "fsdp + cp", ...
  std::string family() const;
};

/// Why a family (strategy with or without TP/PP, with or without offload) did not win.
struct PlanFamily {
  std::string name;
  std::int64_t configurations = 0;
  std::int64_t over_memory_bound = 0;  ///< dropped by the memory bound, unsimulated
  std::int64_t simulated = 0;
  std::int64_t did_not_fit = 0;        ///< simulated, over GPU or host memory
  std::int64_t refused = 0;            ///< invalid for the model or the mesh (a rule)
  double best_step_time_s = 0;         ///< its fastest fitting plan (0: none)
  std::string best_label;
  double least_miss_bytes = 0;         ///< the smallest amount by which its configurations missed memory
  std::string reason;                  ///< one line: why it lost (or "best")
};

/// Configurations left out of the space because the scenario's rules refuse them for this model
/// (a mesh, a pipeline split, a recomputation policy): how many, one of them, and the rule.
struct PlanRuledOut {
  std::int64_t configurations = 0;
  std::string example;
  std::string reason;
};

/// The search's answer.
struct PlanResult {
  PlanQuery query;                     ///< as resolved: the scenario's values filled in
  std::string model_name, hardware_name;
  /// What the batch and throughput count: "tokens", or "images" for a convolutional network
  /// (global_batch_tokens and tokens_per_s then count images).
  std::string sample_unit = "tokens";
  double parameters = 0;               ///< the whole model's
  /// Searched in all: the space the scenario's rules allow (not_searched apart), knob variants
  /// not counted.
  std::int64_t configurations = 0;
  std::int64_t pruned_by_memory = 0;   ///< over the memory bound, not simulated
  std::int64_t pruned_by_time = 0;     ///< time bound above the K-th best found: not simulated
  std::int64_t simulated = 0;
  std::int64_t refused = 0;            ///< searched, then refused by the scenario's rules when loaded
  std::vector<PlanRuledOut> not_searched;  ///< refused before the search, by rule; most configurations first
  std::vector<PlanRuledOut> refused_rules; ///< the rules that refused searched configurations; most first
  std::int64_t knob_variants = 0;      ///< the best plans' knob variants simulated (not in `configurations`)
  std::vector<Plan> plans;             ///< the best `top` that fit, fastest first
  /// The closest miss among the configurations that did not fit (bytes over the usable HBM, or
  /// over the host's memory); 0 when none was dropped.
  double best_miss_bytes = 0;
  std::string best_miss_label;
  std::string best_miss_kind;          ///< "of GPU memory by its lower bound", "of host memory, simulated", ...
  std::int64_t gpus_per_node = 0;      ///< as used (the query's or the profile's)
  std::vector<PlanFamily> families;
  std::string why;                     ///< a paragraph: why the best wins and what the runner-up trades
  double elapsed_s = 0;                ///< wall time of the search (not in the JSON: not deterministic)
};

/// How one search is shared by several processes (MPI ranks; tools/ supplies the exchange, the
/// models know no MPI). Every process runs the whole search; each batch of simulations is a
/// sweep grid of which this process runs `part` (points i with i % parts == part.index), and
/// the processes' outcomes are then exchanged so that every one of them takes the same next
/// decision. The default is one process. The result does not depend on the number of parts.
struct PlanProcesses {
  SweepPart part;
  /// Collective, called once per batch by every process in the same order: every process's
  /// `bytes`, in part order (MpiWorld::all_gather). Empty with one part.
  std::function<std::vector<std::string>(const std::string& bytes)> all_gather;
};

/// How a process that has stopped (its search ended or failed) answers the exchanges of those
/// still searching, until all have stopped (tools/cmd_plan.cpp): its part is kPlanStopped, then
/// its end as encode_part writes it ('O' finished, or 'I' / 'X' and the message of the input or
/// internal error that stopped it). A search meeting such a part stops with that error (or,
/// for a finished one, with one saying the processes disagree on the search). Each batch's part also carries the batch's fingerprint:
/// processes whose inputs differ (files or arguments not the same on every node) stop at the
/// first batch they disagree on, all of them, instead of exchanging outcomes that do not match.
inline constexpr char kPlanStopped = 'S';

/// Searches every configuration of `q` (see plan.cpp's header comment for the space and the
/// bounds) and returns the best `q.top` that fit, ranked by tokens per second. With several
/// `processes`, each simulates its share of every batch (see PlanProcesses): every process
/// must call plan with the same query, and all return the same result.
/// @throws InputError naming the flag when the query is invalid (GPUs, batch, a model or
///         profile that does not load, a scenario that does not read or lacks what the flags
///         do not give), or when no configuration can make the global batch; on every process,
///         with the message of the first process that failed, when a batch fails on one.
PlanResult plan(const PlanQuery& q, const PlanProcesses& processes = {});

/// `stepsim plan --format json`: {"schema": "stepsim.plan/1", "query", "search", "plans": [...],
/// "families": [...], "why"}; best plan first. Deterministic: the same query, the same bytes.
std::string plan_json(const PlanResult& r);
/// The terminal table, the paragraph and (with `explain`) each family's line.
std::string plan_text(const PlanResult& r, bool explain);

}  // namespace stepsim::models
