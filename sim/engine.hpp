// SPDX-License-Identifier: Apache-2.0
// Engine: plays a frozen TaskGraph as discrete events under CUDA stream semantics.
#pragma once

#include "sim/task_graph.hpp"
#include "sim/time.hpp"
#include "sim/timeline.hpp"

#include <array>
#include <cstdint>
#include <functional>
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
  /// By Task::rank, each rank's own baseline (a pipeline stage holds its own layers' states),
  /// each ≥ 0; ranks past the end take baseline_bytes.
  std::vector<double> rank_baseline_bytes;
};

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
  std::vector<double> compute_factor;  ///< by slot (slot()), each ≥ 0; shorter = 1 for the rest
  JitterDistribution distribution = JitterDistribution::None;
  double cv = 0;                       ///< ≥ 0
  std::uint64_t seed = 0;
  /// Link factor by slot (bandwidth multiplier, each in (0, 1]; 1 for slots past the end). A
  /// rendezvous instance runs at the smallest factor among its members (a ring moves at its
  /// slowest link): each member's `link_bound` part lasts 1/factor times longer.
  std::vector<double> link_factor;
  /// By base task: the part of its duration that link_factor stretches (a collective's
  /// bandwidth term), each ≤ the duration; tasks past the end have none.
  std::vector<Time> link_bound;
  /// Load variation (a mixture of experts' uneven routing): by base task, the share of its
  /// duration that scales with its copy's load (0 for tasks past the end), and the draw it
  /// shares with other tasks (tasks of one key on one copy see the same load). A copy's load
  /// for key k is max(0, 1 + load_cv · z), z = standard_normal(load_seed, copy, k), capped at
  /// load_cap when that is > 0; the task's factor is 1 − share + share · load.
  std::vector<double> load_share;
  std::vector<std::uint32_t> load_key;
  double load_cv = 0;
  double load_cap = 0;
  std::uint64_t load_seed = 0;

  /// A copy that holds several ranks (the stages of a pipeline: Task::rank 0 … ranks_per_copy −
  /// 1) varies by rank: compute_factor and link_factor are then indexed by slot(copy, task) =
  /// copy × ranks_per_copy + task_rank[task]. 1 (the default): by copy.
  std::uint32_t ranks_per_copy = 1;
  std::vector<std::uint32_t> task_rank;  ///< by base task, its Task::rank (ranks_per_copy > 1)
  /// The index of base task `base` of copy `copy` into compute_factor and link_factor.
  std::size_t slot(std::uint32_t copy, TaskId base) const {
    if (ranks_per_copy <= 1) return copy;
    return std::size_t{copy} * ranks_per_copy + (base < task_rank.size() ? task_rank[base] : 0);
  }

  /// True when every factor is exactly 1 (the replicated run then equals sim::run on every copy).
  bool none() const;
  /// Copy `copy`'s load for load key `key` (load_cv's draw, capped at load_cap), ≥ 0.
  double load(std::uint32_t copy, std::uint32_t key) const;
  /// Duration multiplier of base task `base` (a Compute task) on copy `copy`, ≥ 0.
  double factor(std::uint32_t copy, TaskId base) const;
  /// A standard normal draw for (seed, copy, base): deterministic, platform-independent.
  static double standard_normal(std::uint64_t seed, std::uint32_t copy, TaskId base);
};

/// Options of sim::run.
struct RunOptions {
  /// Hardware launch queues per rank (CUDA_DEVICE_MAX_CONNECTIONS, semantics.md §E rule 97):
  /// stream s of a rank feeds queue s mod launch_queues, and the tasks of one queue start in
  /// launch order (task id order): a task cannot start before every task launched before it
  /// into the same queue has started. 0 = one queue per stream (no cross-stream order).
  std::uint32_t launch_queues = 0;
  /// Limits on the memory counters, enforced by admission (MemoryLimit); empty = none. With
  /// copies, each copy's ranks have their own counters.
  std::vector<MemoryLimit> memory_limits;
  /// Copies of the graph played side by side (per_rank mode: one per simulated rank). Task v of
  /// copy c has the timeline id c × graph.size() + v. Within a copy every rule below applies;
  /// copies share nothing but their rendezvous: base rendezvous r meets across the copies that
  /// spans[r] groups (all copies when r is past the end of `spans` or its size is 0).
  /// Resources (Work::uses) and contention domains are each copy's own.
  std::uint32_t copies = 1;
  std::vector<RendezvousSpan> spans;
  /// Per-copy duration variation (RankVariation); none by default.
  RankVariation variation;
  /// Called with (tasks finished, tasks of every copy) every 2^16 finished tasks and once at the
  /// end, from the thread that runs; for a progress display. May be empty. It must not throw.
  std::function<void(std::uint64_t, std::uint64_t)> progress;
};

/// What run_summary() keeps: every copy's makespan and the slices of a few copies.
struct ReplicatedSummary {
  std::vector<Time> makespans;        ///< latest end of each copy's tasks, indexed by copy
  std::vector<std::uint32_t> kept;    ///< copies whose slices were kept: ascending, no duplicates
  std::vector<Timeline> slices;       ///< slices[k] == copy_timeline(full run, base.size(), kept[k])
  std::uint64_t events = 0;           ///< events processed (as Timeline::events of the full run)
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
///  - with options.copies > 1, the copies play together as above; a rendezvous instance
///    (RendezvousSpan) starts its members, copy by copy in ascending order and base id order
///    within a copy, when the last of them is ready, and every member but the last is bound to
///    the last (TaskRecord::binding, a timeline id);
///  - options.variation changes durations per copy: a Compute task's fixed and variable parts
///    are multiplied by variation.factor(copy, task) (each rounded to the nearest picosecond);
///    a rendezvous member's variable part (its fixed duration when it has none) gains
///    link_bound × (1/f − 1), with f its instance's smallest link factor;
///  - events are ordered by (time, insertion order), so runs are deterministic.
///
/// Memory: about 30 bytes per task of every copy (a TaskRecord, counters) besides the graph.
/// Preconditions: graph.frozen(), options.copies ≥ 1.
/// @throws InternalError when tasks remain that can never start (inconsistent rendezvous, or
///         a launch order that contradicts the dependencies).
/// @throws InputError when the step passes sim::Time's range, when copies × graph.size()
///         exceeds 2^32 − 2 tasks, or when a span does not divide the copies.
Timeline run(const TaskGraph& graph, const TaskCostModel& cost, const RunOptions& options = {});

/// The same run as run(), keeping each copy's makespan and the records of the copies in `keep`
/// (any order, duplicates allowed) only, byte for byte what copy_timeline() and
/// copy_makespans() (sim/replicate.hpp) give on the full run, in about 4 bytes per task of
/// every copy instead of ~30 (the per_rank path without a trace of every rank: 16,384 ranks ×
/// 1,291 tasks in 85 MB instead of 590 MB). A slice's memory waits are its copy's, by base id.
/// Preconditions and errors: as run(); also InputError when a kept copy is ≥ options.copies.
ReplicatedSummary run_summary(const TaskGraph& graph, const TaskCostModel& cost, const RunOptions& options,
                              std::vector<std::uint32_t> keep);

}  // namespace stepsim::sim
