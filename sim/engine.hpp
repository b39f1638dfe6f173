// SPDX-License-Identifier: Apache-2.0
// Engine: plays a frozen TaskGraph as discrete events under CUDA stream semantics.
#pragma once

#include "sim/task_graph.hpp"
#include "sim/time.hpp"
#include "sim/timeline.hpp"

#include <array>
#include <cstdint>
#include <limits>
#include <vector>

namespace stepsim::sim {

/// One shared resource the variable part of a task uses (a link, a NIC: the kernel only sees an
/// id). Every resource has capacity 1; at full rate the task takes `share` of it (sharing::Use).
struct ResourceUse {
  std::uint32_t resource = 0;  ///< resource id, any value; ids are global to one run
  double share = 1;            ///< fraction of the capacity used at full rate, in (0, 1]
};

/// No contention domain (see Work::domain).
inline constexpr std::uint32_t kNoDomain = std::numeric_limits<std::uint32_t>::max();

/// How a task runs once started (DESIGN.md "TaskCostModel ... Work{latency, demands, rate}").
///
/// The task first spends `fixed` (never stretched), then a variable part of `variable` at full
/// rate. The variable part's rate r ∈ (0, 1] is
///   r = m / (slowdown if some task occupying `domain` is running, else 1),
/// where m is the task's weighted max-min fair rate (sharing::maxmin, weight 1, bound 1) over the
/// resources in `uses` among every running task in its variable part, or 1 without uses.
/// A task running alone with nothing in its domain therefore lasts exactly fixed + variable.
/// A task with `occupies` marks `domain` occupied from its start to its end (e.g. a
/// communication kernel resident on a GPU, semantics.md §E rules 94–96).
struct Work {
  static constexpr std::size_t kMaxUses = 4;
  Time fixed;                       ///< ≥ 0
  Time variable;                    ///< ≥ 0, at full rate
  std::array<ResourceUse, kMaxUses> uses{};
  std::uint8_t use_count = 0;       ///< ≤ kMaxUses
  std::uint32_t domain = kNoDomain;  ///< contention domain (e.g. one GPU), any id
  bool occupies = false;            ///< marks `domain` occupied while the task runs
  double slowdown = 1;              ///< ≥ 1: rate divisor while `domain` is occupied

  /// True when the task's duration cannot depend on other tasks (the engine's fast path).
  bool fixed_length() const {
    return !occupies && (variable == Time() || (use_count == 0 && (domain == kNoDomain || slowdown == 1)));
  }
  /// Appends a resource use. Precondition: use_count < kMaxUses, share in (0, 1].
  void add_use(std::uint32_t resource, double share);
};

/// Prices a task: how long it runs once started. Implemented above the kernel (hardware/),
/// so the kernel never knows what a GEMM or an AllReduce is.
class TaskCostModel {
 public:
  virtual ~TaskCostModel() = default;
  /// Duration of `task` once started, alone. Must be ≥ 0 and deterministic.
  virtual Time duration(const Task& task) const = 0;
  /// How `task` runs (shared resources, contention). Default: a fixed duration(task).
  /// Must satisfy work.fixed + work.variable == duration(task).
  virtual Work work(const Task& task) const { return Work{duration(task), Time()}; }
  /// False when every task's work() is fixed_length(): the engine then calls duration() only
  /// (its fast path). Models that override work() with shared resources or contention
  /// domains return true.
  virtual bool interacts() const { return false; }
};

/// A memory limit the engine enforces while it plays (issue 13 item 3). The tasks of one rank
/// that allocate on the limit's counters are admitted in program (task id) order, as a CPU
/// that issues in order and blocks in the allocator: the next one is admitted once
///   baseline_bytes + Σ_{c ∈ counters} held[c] + Σ_{c ∈ counters} task.alloc_bytes[c] ≤ capacity_bytes,
/// where held[c] is what the rank's admitted tasks allocated on counter c minus what its
/// finished tasks freed (a free takes effect at its task's end, when the stream has passed
/// it). A task starts only once admitted (it is not ready before), and everything after it in
/// program order waits too. An allocation alone larger than the limit is admitted once
/// nothing is held on the limit's counters. Admission precedes the task's start, so the
/// memory a rank really uses never exceeds what is held: with every allocation admitted
/// within its limits, the rank's peak stays within capacity_bytes.
struct MemoryLimit {
  unsigned counters = 0;       ///< bit c selects counter c (< kMemoryCounters)
  double baseline_bytes = 0;   ///< held for the whole run (model states), ≥ 0
  double capacity_bytes = 0;   ///< > 0
};

/// Options of sim::run.
struct RunOptions {
  /// Hardware launch queues per rank (CUDA_DEVICE_MAX_CONNECTIONS, semantics.md §E rule 97):
  /// stream s of a rank feeds queue s mod launch_queues, and the tasks of one queue start in
  /// launch order (task id order): a task cannot start before every task launched before it
  /// into the same queue has started. 0 = one queue per stream (no cross-stream order).
  std::uint32_t launch_queues = 0;
  /// Limits on the memory counters, enforced by admission (MemoryLimit); empty = none.
  std::vector<MemoryLimit> memory_limits;
};

/// Plays `graph` and returns the timeline.
///
/// Rules (CUDA stream + event semantics, DESIGN.md "Core abstractions"):
///  - a task becomes ready when the previous task of its (rank, stream) has finished and all
///    its dependencies have finished;
///  - a ready task without a rendezvous starts at once; tasks sharing a rendezvous id start
///    together when the last member becomes ready (a collective starts when every member
///    rank has reached it);
///  - a started task runs as cost.work(task) says: tasks whose Work is fixed_length() end
///    after their duration (no further bookkeeping); the others form a fluid model (SimGrid's,
///    reference/style.md): whenever the set of running variable parts on shared resources or
///    the occupancy of a contention domain changes, the rates of the running variable parts are
///    solved again (sharing::maxmin) and their completions rescheduled from their remaining
///    work (stale completion events are dropped by a per-task version);
///  - with options.launch_queues > 0, tasks of streams that share a launch queue start in task
///    id order (see RunOptions);
///  - with options.memory_limits, a task that allocates on a limited counter also waits for its
///    admission (MemoryLimit), in program order on its rank; when the admission comes last, the
///    task whose free allowed it is its binding predecessor. When nothing left to run could
///    free memory, the next allocation of the rank blocked longest is admitted over the limit
///    (Timeline::memory_waits marks it), so the run always ends;
///  - events are ordered by (time, priority, insertion sequence), so runs are deterministic.
///
/// Precondition: graph.frozen().
/// @throws InternalError when tasks remain that can never start (inconsistent rendezvous, or
///         a launch order that contradicts the dependencies).
/// @throws InputError when the step passes sim::Time's range.
Timeline run(const TaskGraph& graph, const TaskCostModel& cost, const RunOptions& options = {});

}  // namespace stepsim::sim
