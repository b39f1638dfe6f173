// SPDX-License-Identifier: Apache-2.0
// run() that also hands back what it simulated (graph and timeline) for traces and graph dumps.
#pragma once

#include "hardware/task_cost.hpp"
#include "models/report.hpp"
#include "models/strategy/strategy.hpp"
#include "sim/timeline.hpp"

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

namespace stepsim::models {

/// The lowered step and the timeline run() played. In symmetric mode the timeline holds the
/// graph's tasks (copies = 1); in per_rank mode it holds every rank's copy of them (copies =
/// dp; task id = rank × step.graph.size() + base id, see sim::run_replicated).
struct SimulatedStep {
  LoweredStep step;
  std::optional<sim::Timeline> timeline;
  std::uint32_t copies = 1;
};

/// Same as run(scenario), and moves the lowered graph and its timeline into `keep`.
/// @throws InputError as run(scenario).
Report run(const Scenario& scenario, SimulatedStep& keep);

/// per_rank mode's slot of world rank `world_rank` (0 ≤ it < s.world_size()): copy × pp +
/// stage, the copies (pipeline replicas under PP, stage_ranks() of them) numbered TP fastest,
/// then CP, then DP, whatever parallelism.order places where; the rank's coordinates come from
/// s.layout(). In the default order tp-cp-dp-pp, rank k × stage_ranks() + c is slot c × pp + k.
std::size_t per_rank_slot(const Scenario& s, std::int64_t world_rank);

/// The world rank of stage `stage` (0 ≤ it < pp) of per_rank copy `copy` (0 ≤ it <
/// s.stage_ranks(); the inverse of per_rank_slot).
std::int64_t per_rank_world_rank(const Scenario& s, std::int64_t copy, std::int64_t stage);

/// Progress of a long run: (tasks finished, tasks in all) of the per_rank play, every rank's
/// copy of the step (sim::RunOptions::progress); symmetric runs take milliseconds and report
/// none.
using RunProgress = std::function<void(std::uint64_t done, std::uint64_t total)>;

/// run(scenario) or run(scenario, *keep) (when `keep` is not null) with a progress callback.
Report run(const Scenario& scenario, SimulatedStep* keep, const RunProgress& progress);

/// The tokens per GPU per micro-batch below which `s`'s gradient reduction over its DP group (the
/// step's group 0: its DP, or under hsdp shard, group) cannot hide behind backward at peak
/// FLOP/s (Report::comm_bound_threshold_tokens_per_gpu is its tokens_per_gpu):
/// hardware::dp_threshold at the peak of the math the linears run in (FP8 under float8), with
/// moe_factor 6·Ψ / (model FLOPs per sample) when a sample is not a dense transformer's token
/// (an image: its convolutions; a token of a mixture of experts: its active experts, the seeds'
/// E/k made exact, about E/(k·ep) under expert parallelism, since Ψ is then this rank's share).
/// Under expert parallelism the routed experts' share of the gradients is priced over the
/// step's expert-data-parallel group (step.edp_group) and the dense share over group 0, the two
/// bandwidth times added; moe_factor is then the combined figure over the dense threshold of
/// group 0. Precondition: step.groups is not empty (tokens_per_gpu is 0 for a group 0 of one rank).
hardware::Threshold comm_bound_threshold(const Scenario& s, const LoweredStep& step);

/// The cost model run() prices a lowered step with: the scenario's profile, calibration overlay
/// and collective model, the kernels of its layers (kernel_work_table()), the framework's per-op host cost,
/// and the contention between a rank's tasks (sim.link_sharing, sim.overlap_model: hardware::Contention).
hardware::StepCostModel step_cost_model(const Scenario& scenario, const LoweredStep& step);

/// Largest number of tasks a per_rank run may hold (graph tasks × dp): about 30 bytes each.
inline constexpr double kMaxPerRankTasks = 1.5e8;
/// Memory per task of a per_rank run: the summary play (makespans and rank 0) and the play that
/// keeps every rank's records for a trace (seven times as much).
inline constexpr double kPerRankBytesPerTask = 30;
inline constexpr double kPerRankTraceBytesPerTask = 7 * kPerRankBytesPerTask;

/// Rank 0's forward and backward compute of one step of `s`, per model layer (seconds; index =
/// layer of s.model.layers): the step's Forward and Backward phase kernels (recomputation
/// included, host tasks and work no layer owns left out) and the collectives a layer runs on the
/// compute stream in line with them (tensor parallelism's, expert parallelism's all-to-alls,
/// context parallelism's synchronous exchange), each priced by step_cost_model() alone, as run()
/// plays it with no contention beside it. One stream runs them one after another: a lower bound
/// of that stream's busy time in run() (stepsim plan's time bound).
/// @throws InputError as run(s) (a scenario that does not lower or prices beyond sim::Time).
std::vector<double> layer_compute_s(const Scenario& s);

/// A lower bound of the memory peak run(s) reports per GPU (bytes), without simulating: over
/// the PP ranks (one without PP), the rank's baseline (static_memory of its layers: model
/// states and persistent buffers, as run() holds them the whole step) plus what its layers keep
/// for backward (layer_activation_bytes) of the micro-batches its schedule holds at once before
/// its first backward: 1F1B min(pp − rank, grad_accum), GPipe grad_accum, 1 otherwise (all of
/// them alive when the last of those forwards starts). run() reports memory.fits false for s
/// whenever this exceeds memory.capacity_bytes. stepsim plan's pre-simulation check.
/// @throws InputError as run(s).
double memory_floor_bytes(const Scenario& s);

}  // namespace stepsim::models
