// SPDX-License-Identifier: Apache-2.0
// Replicated runs: one frozen graph played as N copies (one per simulated rank) whose
// rendezvous meet across copies, with per-copy duration variation — the per_rank entry points
// of the one engine (sim::run with RunOptions::copies), and slicing its timeline by copy.
#pragma once

#include "sim/engine.hpp"
#include "sim/task_graph.hpp"
#include "sim/timeline.hpp"

#include <cstdint>
#include <vector>

namespace stepsim::sim {

/// sim::run(base, cost, options) with options.copies = `copies`, options.spans = `spans` and
/// options.variation = `variation`: `copies` copies of the frozen `base` graph, task `base_id`
/// of copy c at timeline id c × base.size() + base_id, copy c standing for rank c (the caller
/// decides what that means). See sim::run for the rules, durations under variation and errors.
/// With no variation, each copy's start and end times equal those of sim::run(base, cost).
Timeline run_replicated(const TaskGraph& base, std::uint32_t copies, const std::vector<RendezvousSpan>& spans,
                        const TaskCostModel& cost, const RankVariation& variation);

/// sim::run_summary() of the same run: each copy's makespan and the slices of the copies in
/// `keep`, byte for byte what copy_makespans() and copy_timeline() give on run_replicated().
ReplicatedSummary run_replicated_summary(const TaskGraph& base, std::uint32_t copies,
                                         const std::vector<RendezvousSpan>& spans, const TaskCostModel& cost,
                                         const RankVariation& variation, std::vector<std::uint32_t> keep);

/// The records of copy `copy` of a replicated timeline, as a timeline of `base_size` tasks
/// (ids are base ids). A binding inside the copy keeps its base id; a binding to another copy
/// (a rendezvous that waited for a later member) becomes that member's own binding's base id,
/// so the critical path of the slice follows the path that held the collective back. The
/// slice's memory waits are the copy's, by base id.
Timeline copy_timeline(const Timeline& all, std::size_t base_size, std::uint32_t copy);

/// Makespan of every copy (latest end of its tasks), indexed by copy.
std::vector<Time> copy_makespans(const Timeline& all, std::size_t base_size, std::uint32_t copies);

}  // namespace stepsim::sim
