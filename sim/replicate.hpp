// SPDX-License-Identifier: Apache-2.0
// Replicated runs: one frozen graph played as N copies (one per simulated rank) whose
// rendezvous meet across copies, with per-copy duration variation.
#pragma once

#include "sim/engine.hpp"
#include "sim/task_graph.hpp"
#include "sim/timeline.hpp"

#include <cstdint>
#include <vector>

namespace stepsim::sim {

/// Which copies of a base rendezvous meet: copies c and c' share an instance iff
/// c / (size × stride) == c' / (size × stride) and c % stride == c' % stride. {N, 1} joins all N
/// copies; {g, 1} joins blocks of g consecutive copies; {N/g, g} joins copies equal modulo g.
/// Precondition: size × stride divides the number of copies.
struct RendezvousSpan {
  std::uint32_t size = 0;    ///< copies per instance; 0 = all copies
  std::uint32_t stride = 1;  ///< distance between consecutive members
};

/// Distribution of per-task duration factors (mean 1, coefficient of variation cv).
enum class JitterDistribution : std::uint8_t {
  None,
  Normal,     ///< max(0, 1 + cv·z)
  LogNormal,  ///< exp(μ + σ·z), σ² = ln(1 + cv²), μ = −σ²/2 (mean 1, cv exactly cv)
};

/// Per-copy variation of Compute task durations (Transfer tasks are never scaled: a
/// collective's members start together and share its duration).
///
/// factor(copy, base) = compute_factor[copy] (1 when absent) × jitter draw. The draw for
/// (seed, copy, base task) is counter-based — SplitMix64 (Steele et al., OOPSLA 2014) of the
/// three, two 53-bit uniforms, Box–Muller (1958) — so it does not depend on the order tasks
/// are priced in, nor on the standard library's distributions: the same seed gives the same
/// timeline on every platform.
struct RankVariation {
  std::vector<double> compute_factor;  ///< by copy, each ≥ 0; shorter = 1 for the rest
  JitterDistribution distribution = JitterDistribution::None;
  double cv = 0;                       ///< ≥ 0
  std::uint64_t seed = 0;
  /// Link factor by copy (bandwidth multiplier, each in (0, 1]; 1 for copies past the end). A
  /// rendezvous instance runs at the smallest factor among its member copies (a ring moves at
  /// its slowest link): each member's `link_bound` part lasts 1/factor times longer.
  std::vector<double> link_factor;
  /// By base task: the part of its duration that link_factor stretches (a collective's
  /// bandwidth term), each ≤ the duration; tasks past the end have none.
  std::vector<Time> link_bound;

  /// True when every factor is exactly 1 (the replicated run then equals sim::run on every copy).
  bool none() const;
  /// Duration multiplier of base task `base` (a Compute task) on copy `copy`, ≥ 0.
  double factor(std::uint32_t copy, TaskId base) const;
  /// A standard normal draw for (seed, copy, base): deterministic, platform-independent.
  static double standard_normal(std::uint64_t seed, std::uint32_t copy, TaskId base);
};

/// Plays `copies` copies of the frozen `base` graph. Task `base_id` of copy c has the
/// timeline id c × base.size() + base_id; copy c stands for rank c (the caller decides what
/// that means). Within a copy the rules of sim::run apply (stream FIFO, dependencies); a base
/// rendezvous r meets across the copies that `spans[r]` groups (all copies when r is past the
/// end of `spans` or its size is 0): its members start together when the last of them is
/// ready, and every member but the last is bound to the last (TaskRecord::binding).
///
/// Durations: cost.duration(task) once per base task (the cost model must not depend on
/// task.rank), times variation.factor() for Compute tasks, rounded to the nearest picosecond;
/// a rendezvous member also gets link_bound × (1/f − 1) with f its instance's smallest
/// variation.link_factor.
/// With no variation, each copy's start and end times equal those of sim::run(base, cost).
///
/// Memory: about 30 bytes per replicated task (a TaskRecord and a counter); names and work
/// descriptions stay in `base`.
/// Preconditions: base.frozen(), copies ≥ 1.
/// @throws InputError when copies × base.size() exceeds 2^32 − 2 tasks, when a span does not
///         divide `copies`, or when the step passes sim::Time's range.
/// @throws InternalError when tasks remain that can never start.
Timeline run_replicated(const TaskGraph& base, std::uint32_t copies, const std::vector<RendezvousSpan>& spans,
                        const TaskCostModel& cost, const RankVariation& variation);

/// What run_replicated_summary() keeps: every copy's makespan and the slices of a few copies.
struct ReplicatedSummary {
  std::vector<Time> makespans;        ///< latest end of each copy's tasks, indexed by copy
  std::vector<std::uint32_t> kept;    ///< copies whose slices were kept: ascending, no duplicates
  std::vector<Timeline> slices;       ///< slices[k] == copy_timeline(full run, base.size(), kept[k])
  std::uint64_t events = 0;           ///< events processed (as Timeline::events of the full run)
};

/// The same run as run_replicated(), without keeping every record: returns copy_makespans()
/// and copy_timeline() of the copies in `keep` (any order, duplicates allowed), byte for byte
/// what the full run gives, in O(copies × base.size()) × 4 bytes of state instead of ~28.
/// This is the per_rank path when no trace of every rank is needed (16,384 ranks × 1,291 tasks:
/// 85 MB instead of 590 MB).
/// Preconditions and errors: as run_replicated(); also InputError when a kept copy is ≥ copies.
ReplicatedSummary run_replicated_summary(const TaskGraph& base, std::uint32_t copies,
                                         const std::vector<RendezvousSpan>& spans, const TaskCostModel& cost,
                                         const RankVariation& variation, std::vector<std::uint32_t> keep);

/// The records of copy `copy` of a replicated timeline, as a timeline of `base_size` tasks
/// (ids are base ids). A binding inside the copy keeps its base id; a binding to another copy
/// (a rendezvous that waited for a later member) becomes that member's own binding's base id,
/// so the critical path of the slice follows the path that held the collective back.
Timeline copy_timeline(const Timeline& all, std::size_t base_size, std::uint32_t copy);

/// Makespan of every copy (latest end of its tasks), indexed by copy.
std::vector<Time> copy_makespans(const Timeline& all, std::size_t base_size, std::uint32_t copies);

}  // namespace stepsim::sim
