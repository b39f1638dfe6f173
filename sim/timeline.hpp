// SPDX-License-Identifier: Apache-2.0
// Timeline: start and end of every task, the events processed, and the critical path.
#pragma once

#include "sim/task.hpp"
#include "sim/time.hpp"

#include <cstdint>
#include <functional>
#include <vector>

namespace stepsim::sim {

class TaskGraph;

/// When one task ran, and which finishing task let it start (its binding predecessor: the
/// last of its stream predecessor and dependencies to finish; kNoTask for tasks ready at 0).
struct TaskRecord {
  Time start;
  Time end;
  TaskId binding = kNoTask;
};

/// Half-open interval [begin, end) of simulated time.
struct Interval {
  Time begin;
  Time end;
};

/// A task that waited for memory (sim::MemoryLimit, engine.hpp): from when it was ready to when it was admitted.
struct MemoryWait {
  TaskId task = kNoTask;
  Time since;
  Time until;
  /// True when nothing left to run could free memory and the task was admitted over the
  /// limit (the run needs more memory than the limit allows).
  bool over_limit = false;
};

/// Result of Engine::run: one record per task (indexed by TaskId).
class Timeline {
 public:
  Timeline(std::vector<TaskRecord> records, std::uint64_t events, std::vector<MemoryWait> memory_waits = {})
      : records_(std::move(records)), events_(events), memory_waits_(std::move(memory_waits)) {}
  const TaskRecord& operator[](TaskId id) const { return records_[id]; }
  std::size_t size() const { return records_.size(); }
  /// Latest end over all tasks (the makespan); 0 for an empty graph.
  Time makespan() const;
  /// Number of discrete events the engine processed.
  std::uint64_t events() const { return events_; }
  /// Chain of binding predecessors ending at the task that finishes last (ties: the highest
  /// id), in execution order. Every gap on the chain is time nothing on it was waiting for.
  std::vector<TaskId> critical_path() const;
  /// Tasks that waited for memory (RunOptions::memory_limits), in the order they were admitted.
  const std::vector<MemoryWait>& memory_waits() const { return memory_waits_; }

 private:
  std::vector<TaskRecord> records_;
  std::uint64_t events_ = 0;
  std::vector<MemoryWait> memory_waits_;
};

/// Peak of a memory counter over the run and the instant it was first reached.
struct MemoryPeak {
  double bytes = 0;  ///< peak of the summed counters selected, including the baseline
  Time at;           ///< first instant the peak was reached
  double counter_bytes[2] = {0, 0};  ///< each counter's value at that instant (without baseline)
};

/// Memory of one rank over time: `baseline` plus, for the selected counters, every task's
/// alloc_bytes at its start minus its free_bytes at its end. At equal instants frees come first
/// (memory freed by one kernel is reusable by the next). Counters: bit i of `counters` selects i.
MemoryPeak memory_peak(const TaskGraph& graph, const Timeline& timeline, std::uint32_t rank,
                       double baseline, unsigned counters = 3);

/// Union of the intervals of the tasks selected by `pick`, merged and sorted.
std::vector<Interval> busy_intervals(const TaskGraph& graph, const Timeline& timeline,
                                     const std::function<bool(const Task&)>& pick);
/// Total length of a sorted, merged interval list.
Time total_length(const std::vector<Interval>& merged);
/// Length of `a` not covered by `b` (both sorted and merged).
Time uncovered_length(const std::vector<Interval>& a, const std::vector<Interval>& b);

}  // namespace stepsim::sim
