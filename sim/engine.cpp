// SPDX-License-Identifier: Apache-2.0
// Engine: completion events drive readiness; rendezvous start members together; tasks whose
// work depends on other tasks (shared resources, contention domains) form a fluid model. One
// run plays one or many copies of a graph (per_rank mode): the base graph's adjacency is shared
// in flat arrays, and each copy's state is a counter and a record per task.
#include "sim/engine.hpp"

#include "sim/event_queue.hpp"
#include "sim/sharing/maxmin.hpp"
#include "sim/support/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>

namespace stepsim::sim {

void Work::add_use(std::uint32_t resource, double share) {
  STEPSIM_ASSERT(use_count < kMaxUses, "a task uses more than {} resources", kMaxUses);
  STEPSIM_ASSERT(share > 0 && share <= 1, "resource share {} is not in (0, 1]", share);
  uses[use_count++] = {resource, share};
}

namespace {

constexpr std::int64_t kMaxPs = 9'000'000'000'000'000'000;
constexpr std::uint32_t kNone = std::numeric_limits<std::uint32_t>::max();

// A (copy, base task) pair, numbered task-major: slot = v × copies + c, so the copies of one
// base task, which finish together when they do not vary, sit side by side in memory. With one
// copy a slot is the task id.
using Slot = std::uint32_t;

// Event payload: slot (bits 0–31), kind (bit 32), version (bits 33–63).
enum class EventKind : std::uint64_t { Finish = 0, BeginVariable = 1 };
std::uint64_t payload(Slot s, EventKind kind, std::uint32_t version) {
  return std::uint64_t{s} | (static_cast<std::uint64_t>(kind) << 32) | (std::uint64_t{version} << 33);
}

class Run {
 public:
  Run(const TaskGraph& graph, const TaskCostModel& cost, const RunOptions& options)
      : graph_(graph), cost_(cost), interacts_(cost.interacts()), n_(graph.size()), copies_(options.copies),
        variation_(options.variation) {
    STEPSIM_ASSERT(copies_ >= 1, "run with 0 copies");
    const std::uint64_t total = std::uint64_t{n_} * copies_;
    if (total > std::numeric_limits<TaskId>::max() - 1)
      throw InputError("", "", fmt::format("{} copies of {} tasks is {} tasks; the limit is {}", copies_, n_, total,
                                           std::numeric_limits<TaskId>::max() - 1));
    total_ = total;
    vary_ = !variation_.none();
    // Base adjacency (dependency edges, then the stream successor) in CSR form, and what each
    // task waits for before it is ready.
    succ_begin_.assign(n_ + 1, 0);
    init_pending_.assign(n_, 0);
    std::vector<TaskId> next_in_stream(n_, kNoTask);
    for (TaskId v = 0; v < n_; ++v) {
      init_pending_[v] = static_cast<std::uint32_t>(boost::in_degree(v, graph.graph()));
      const TaskId prev = graph.stream_previous(v);
      if (prev != kNoTask) {
        ++init_pending_[v];
        next_in_stream[prev] = v;
      }
    }
    for (TaskId v = 0; v < n_; ++v) {
      for (auto [it, end] = boost::out_edges(v, graph.graph()); it != end; ++it)
        succ_.push_back(static_cast<TaskId>(boost::target(*it, graph.graph())));
      if (next_in_stream[v] != kNoTask) succ_.push_back(next_in_stream[v]);
      succ_begin_[v + 1] = static_cast<std::uint32_t>(succ_.size());
    }
    init_rendezvous(options.spans);
    if (!options.memory_limits.empty()) init_memory(options.memory_limits);
    if (options.launch_queues > 0) {
      // Tasks of one (rank, queue) start in launch (id) order: each waits for the start of the
      // previous one.
      launch_next_.assign(n_, kNoTask);
      std::unordered_map<std::uint64_t, TaskId> tail;
      for (TaskId v = 0; v < n_; ++v) {
        const Task& t = graph.task(v);
        const std::uint64_t key = (std::uint64_t{t.rank} << 32) | (t.stream % options.launch_queues);
        const auto [it, fresh] = tail.try_emplace(key, v);
        if (!fresh) {
          launch_next_[it->second] = v;
          ++init_pending_[v];
          it->second = v;
        }
      }
    }
    compute_.resize(n_);
    for (TaskId v = 0; v < n_; ++v) compute_[v] = graph.task(v).kind == TaskKind::Compute;
    // Each task priced once, whatever the copies.
    if (interacts_) {
      work_.resize(n_);
      for (TaskId v = 0; v < n_; ++v) {
        work_[v] = cost.work(graph.task(v));
        STEPSIM_ASSERT(work_[v].fixed >= Time() && work_[v].variable >= Time(), "negative duration for task '{}'",
                       graph.task(v).name);
      }
    } else {
      duration_.resize(n_);
      for (TaskId v = 0; v < n_; ++v) {
        duration_[v] = cost.duration(graph.task(v));
        STEPSIM_ASSERT(duration_[v] >= Time(), "negative duration for task '{}'", graph.task(v).name);
      }
    }
    pending_.resize(total_);
    for (TaskId v = 0; v < n_; ++v)
      std::fill_n(pending_.begin() + static_cast<std::ptrdiff_t>(std::size_t{v} * copies_), copies_, init_pending_[v]);
    started_.assign(total_, false);
    if (interacts_) {
      active_.resize(copies_);
      dirty_copy_.assign(copies_, false);
    }
  }

  /// Every record, timeline id c × n + v.
  Timeline play_full() {
    full_ = true;
    records_.assign(total_, TaskRecord{});
    play();
    return Timeline(std::move(records_), queue_.processed(), std::move(memory_waits_));
  }

  /// Makespans of every copy, records of the copies in `keep`.
  ReplicatedSummary play_summary(std::vector<std::uint32_t> keep) {
    std::sort(keep.begin(), keep.end());
    keep.erase(std::unique(keep.begin(), keep.end()), keep.end());
    kept_index_.assign(copies_, kNone);
    for (std::size_t k = 0; k < keep.size(); ++k) {
      if (keep[k] >= copies_)
        throw InputError("", "", fmt::format("copy {} to keep is past the {} copies", keep[k], copies_));
      kept_index_[keep[k]] = static_cast<std::uint32_t>(k);
    }
    slices_.assign(keep.size(), std::vector<TaskRecord>(n_, TaskRecord{}));
    makespans_.assign(copies_, Time());
    play();
    ReplicatedSummary out;
    out.makespans = std::move(makespans_);
    std::vector<std::vector<MemoryWait>> waits(keep.size());
    for (MemoryWait w : memory_waits_) {
      const std::uint32_t k = kept_index_[w.task / n_];
      if (k == kNone) continue;
      w.task %= static_cast<TaskId>(n_);
      waits[k].push_back(w);
    }
    for (std::size_t k = 0; k < keep.size(); ++k)
      out.slices.emplace_back(std::move(slices_[k]), queue_.processed(), std::move(waits[k]));
    out.kept = std::move(keep);
    out.events = queue_.processed();
    return out;
  }

 private:
  // State of a task whose duration depends on others (Work::fixed_length() false).
  struct Fluid {
    Work work;
    double remaining_ps = 0;  // variable work left, at full rate
    double rate = 0;          // current rate of the variable part (0 = not yet solved)
    Time since;               // instant remaining_ps refers to
    std::uint32_t version = 0;
    bool fluid = false;
    bool active = false;      // in its variable part
  };

  TaskId base_of(Slot s) const { return static_cast<TaskId>(s / copies_); }
  std::uint32_t copy_of(Slot s) const { return static_cast<std::uint32_t>(s % copies_); }
  Slot slot(std::uint32_t c, TaskId v) const { return static_cast<Slot>(std::size_t{v} * copies_ + c); }
  TaskId timeline_id(Slot s) const { return static_cast<TaskId>(std::size_t{copy_of(s)} * n_ + base_of(s)); }
  const Task& task_of(Slot s) const { return graph_.task(base_of(s)); }

  // The record of slot `s` (nullptr in summary mode for a copy not kept).
  TaskRecord* record(Slot s) {
    if (full_) return &records_[timeline_id(s)];
    const std::uint32_t k = kept_index_[copy_of(s)];
    return k == kNone ? nullptr : &slices_[k][base_of(s)];
  }

  // Keeps the binding of slot `s`: `by` is a timeline id or kNoTask. In summary mode the slice
  // holds base ids, and a binding to another copy is `other_binding` (the timeline id that held
  // the other copy's task back), as copy_timeline() resolves it.
  void bind(Slot s, TaskId by, TaskId other_binding) {
    if (full_) {
      records_[timeline_id(s)].binding = by;
      return;
    }
    const std::uint32_t k = kept_index_[copy_of(s)];
    if (k == kNone) return;
    TaskId b = by;
    if (b != kNoTask && b / n_ != copy_of(s)) b = other_binding;
    slices_[k][base_of(s)].binding = b == kNoTask ? kNoTask : static_cast<TaskId>(b % n_);
  }

  void init_rendezvous(const std::vector<RendezvousSpan>& spans) {
    std::uint32_t ids = 0;
    for (TaskId v = 0; v < n_; ++v)
      if (graph_.task(v).rendezvous != kNoRendezvous) ids = std::max(ids, graph_.task(v).rendezvous + 1);
    member_begin_.assign(ids + 1, 0);
    for (TaskId v = 0; v < n_; ++v)
      if (graph_.task(v).rendezvous != kNoRendezvous) ++member_begin_[graph_.task(v).rendezvous + 1];
    for (std::uint32_t r = 0; r < ids; ++r) member_begin_[r + 1] += member_begin_[r];
    members_.resize(member_begin_[ids]);
    std::vector<std::uint32_t> fill(member_begin_.begin(), member_begin_.end() - 1);
    for (TaskId v = 0; v < n_; ++v)
      if (graph_.task(v).rendezvous != kNoRendezvous) members_[fill[graph_.task(v).rendezvous]++] = v;
    span_.resize(ids);
    instance_begin_.assign(ids + 1, 0);
    for (std::uint32_t r = 0; r < ids; ++r) {
      RendezvousSpan s = r < spans.size() ? spans[r] : RendezvousSpan{};
      if (s.size == 0) s = {copies_, 1};
      if (s.stride == 0 || std::uint64_t{s.size} * s.stride == 0 || copies_ % (std::uint64_t{s.size} * s.stride) != 0)
        throw InputError("", "", fmt::format("rendezvous {}: a span of {} copies × stride {} does not divide {} copies",
                                             r, s.size, s.stride, copies_));
      span_[r] = s;
      instance_begin_[r + 1] = instance_begin_[r] + copies_ / s.size;
    }
    arrivals_.assign(instance_begin_[ids], 0);
  }

  void play() {
    for (std::uint32_t c = 0; c < copies_; ++c)
      for (TaskId v = 0; v < n_; ++v)
        if (init_pending_[v] == 0) ready(slot(c, v), kNoTask);
    if (!limits_.empty()) {
      for (std::uint32_t c = 0; c < copies_; ++c)
        for (TaskId v = 0; v < n_; ++v)
          if (memory_gated_[v] && pending_[slot(c, v)] == 1) blocked_since_.emplace(slot(c, v), Time());
      for (std::uint32_t q = 0; q < held_.size(); ++q) admit(q, kNoTask);
    }
    if (dirty_) resolve();
    for (;;) {
      if (queue_.empty()) {
        if (admit_over_limit()) continue;
        break;
      }
      queue_.play_next([this](std::uint64_t e) { handle(e); });
    }
    if (finished_ != total_) never_started();
  }

  void handle(std::uint64_t e) {
    const auto s = static_cast<Slot>(e & 0xffffffffu);
    if (!fluid_.empty() && fluid_[s].fluid) {
      if (static_cast<EventKind>((e >> 32) & 1) == EventKind::BeginVariable) {
        begin_variable(s);
        if (dirty_) resolve();
        return;
      }
      if (static_cast<std::uint32_t>(e >> 33) != fluid_[s].version) return;  // stale
      end_fluid(s);
    }
    ++finished_;
    last_finished_ = s;
    const std::uint32_t c = copy_of(s);
    if (!full_) makespans_[c] = std::max(makespans_[c], queue_.now());
    if (!limits_.empty()) free_memory(s);
    const TaskId v = base_of(s);
    const TaskId id = timeline_id(s);
    for (std::uint32_t k = succ_begin_[v]; k < succ_begin_[v + 1]; ++k) release(slot(c, succ_[k]), id);
    if (dirty_) resolve();
  }

  // Names a task that never started: one still waiting for a predecessor or never started (a
  // rendezvous some member never reached, a launch order contradicting the dependencies).
  [[noreturn]] void never_started() const {
    for (std::uint32_t c = 0; c < copies_; ++c)
      for (TaskId v = 0; v < n_; ++v) {
        const Slot s = slot(c, v);
        if (pending_[s] != 0 || !started_[s])
          throw InternalError(fmt::format("engine: task '{}'{} can never start (a rendezvous member is missing, or "
                                          "the launch order contradicts the dependencies)",
                                          graph_.task(v).name, copies_ > 1 ? fmt::format(" of copy {}", c) : ""));
      }
    throw InternalError("engine: a task can never finish");
  }

  void release(Slot s, TaskId by) {
    if (--pending_[s] == 0) {
      ready(s, by);
    } else if (pending_[s] == 1 && !limits_.empty() && memory_gated_[base_of(s)] && !admitted(s)) {
      blocked_since_.emplace(s, queue_.now());  // everything but its memory is there
    }
  }

  void ready(Slot s, TaskId by) {
    const TaskId v = base_of(s);
    const RendezvousId r = graph_.task(v).rendezvous;
    if (r == kNoRendezvous) {
      bind(s, by, kNoTask);
      start(s);
      return;
    }
    const std::uint32_t c = copy_of(s);
    const RendezvousSpan span = span_[r];
    const std::uint32_t block = c / (span.size * span.stride);
    const std::uint32_t lane = c % span.stride;
    const std::uint32_t instance = instance_begin_[r] + block * span.stride + lane;
    const std::uint32_t k = member_begin_[r + 1] - member_begin_[r];
    if (++arrivals_[instance] < std::uint64_t{span.size} * k) return;
    // The last arrival binds every member: nothing could start before it. It keeps its own
    // binding; a member of another copy resolves to that binding (copy_timeline's rule).
    const TaskId id = timeline_id(s);
    const std::uint32_t first = block * span.size * span.stride + lane;
    double link = 1;  // the slowest member's link factor
    if (!variation_.link_factor.empty())
      for (std::uint32_t j = 0; j < span.size; ++j)
        if (const std::uint32_t mc = first + j * span.stride; mc < variation_.link_factor.size())
          link = std::min(link, variation_.link_factor[mc]);
    for (std::uint32_t j = 0; j < span.size; ++j) {
      const std::uint32_t mc = first + j * span.stride;
      for (std::uint32_t m = member_begin_[r]; m < member_begin_[r + 1]; ++m) {
        const Slot ms = slot(mc, members_[m]);
        if (ms == s)
          bind(s, by, kNoTask);
        else
          bind(ms, id, by);
        start(ms, link);
      }
    }
  }

  // A duration of `what` multiplied by `factor`, to the nearest picosecond.
  Time scaled(Time d, double factor, Slot s, const char* what) const {
    if (factor == 1) return d;
    const double x = std::nearbyint(static_cast<double>(d.ps()) * factor);
    if (!(x < static_cast<double>(kMaxPs)))
      throw InputError("", "", fmt::format("task '{}' of copy {} lasts beyond 9e6 s {}", task_of(s).name, copy_of(s), what));
    return Time::from_ps(static_cast<std::int64_t>(x));
  }

  // The extra time link factor `link` (< 1) adds to base task v: its link_bound × (1/link − 1).
  Time link_extra(Slot s, double link, Time d) const {
    const TaskId v = base_of(s);
    if (link == 1 || v >= variation_.link_bound.size()) return Time();
    const double extra = std::nearbyint(static_cast<double>(variation_.link_bound[v].ps()) * (1 / link - 1));
    if (!(extra < static_cast<double>(kMaxPs - d.ps())))
      throw InputError("", "", fmt::format("task '{}' of copy {} lasts beyond 9e6 s on degraded links", task_of(s).name,
                                           copy_of(s)));
    return Time::from_ps(static_cast<std::int64_t>(extra));
  }

  // `link`: the link factor of the slot's rendezvous instance (1 = nominal).
  void start(Slot s, double link = 1) {
    started_[s] = true;
    const Time now = queue_.now();
    const TaskId v = base_of(s);
    const bool compute = vary_ && compute_[v];
    const double factor = compute ? variation_.factor(copy_of(s), v) : 1.0;
    if (!interacts_) {
      Time d = duration_[v];
      d += link_extra(s, link, d);
      d = scaled(d, factor, s, "after variation");
      check_range(s, now, d);
      if (TaskRecord* rec = record(s)) {
        rec->start = now;
        rec->end = now + d;
      }
      queue_.schedule(now + d, payload(s, EventKind::Finish, 0));
      if (!launch_next_.empty() && launch_next_[v] != kNoTask) release(slot(copy_of(s), launch_next_[v]), binding_of(s));
      return;
    }
    Work w = work_[v];
    if (link != 1) {
      if (w.variable > Time())
        w.variable += link_extra(s, link, w.fixed + w.variable);
      else
        w.fixed += link_extra(s, link, w.fixed);
    }
    w.fixed = scaled(w.fixed, factor, s, "after variation");
    w.variable = scaled(w.variable, factor, s, "after variation");
    if (w.fixed.ps() > kMaxPs - w.variable.ps()) check_range(s, now, Time::from_ps(kMaxPs));
    check_range(s, now, w.fixed + w.variable);
    if (TaskRecord* rec = record(s)) {
      rec->start = now;
      rec->end = now + w.fixed + w.variable;
    }
    if (w.fixed_length()) {
      queue_.schedule(now + w.fixed + w.variable, payload(s, EventKind::Finish, 0));
    } else {
      if (fluid_.empty()) fluid_.resize(total_);
      Fluid& f = fluid_[s];
      f.work = w;
      f.fluid = true;
      if (w.occupies && occupancy_[domain_key(s, w.domain)]++ == 0) mark_dirty(copy_of(s));
      if (w.fixed > Time())
        queue_.schedule(now + w.fixed, payload(s, EventKind::BeginVariable, 0));
      else
        begin_variable(s);
    }
    if (!launch_next_.empty() && launch_next_[v] != kNoTask) release(slot(copy_of(s), launch_next_[v]), binding_of(s));
  }

  // The binding just set on slot `s`, as a timeline id (what its launch successor is bound to).
  TaskId binding_of(Slot s) const {
    if (full_) return records_[timeline_id(s)].binding;
    const std::uint32_t k = kept_index_[copy_of(s)];
    if (k == kNone) return kNoTask;
    const TaskId b = slices_[k][base_of(s)].binding;
    return b == kNoTask ? kNoTask : static_cast<TaskId>(std::size_t{copy_of(s)} * n_ + b);
  }

  // ---- memory admission (RunOptions::memory_limits), per (copy, rank) ----
  void init_memory(const std::vector<MemoryLimit>& limits) {
    limits_ = limits;
    for (const MemoryLimit& l : limits_)
      STEPSIM_ASSERT(l.counters != 0 && l.counters < (1u << kMemoryCounters) && l.capacity_bytes > 0 &&
                         l.baseline_bytes >= 0,
                     "bad memory limit (counters {}, capacity {} B)", l.counters, l.capacity_bytes);
    for (TaskId v = 0; v < n_; ++v) ranks_ = std::max(ranks_, graph_.task(v).rank + 1);
    held_.assign(std::size_t{copies_} * ranks_, {});
    allocations_.resize(ranks_);
    cursor_.assign(std::size_t{copies_} * ranks_, 0);
    memory_gated_.assign(n_, false);
    // Every task that allocates on a limited counter holds one more pending count: its
    // admission, which comes in program (id) order on its rank.
    for (TaskId v = 0; v < n_; ++v) {
      const Task& t = graph_.task(v);
      for (const MemoryLimit& l : limits_)
        if (need(t, l) > 0) memory_gated_[v] = true;
      if (!memory_gated_[v]) continue;
      allocations_[t.rank].push_back(v);
      ++init_pending_[v];
    }
  }

  static double need(const Task& t, const MemoryLimit& l) {
    double n = 0;
    for (int c = 0; c < kMemoryCounters; ++c)
      if (l.counters & (1u << c)) n += t.alloc_bytes[c];
    return n;
  }

  // The memory state of slot `s`'s (copy, rank).
  std::uint32_t memory_state(Slot s) const { return copy_of(s) * ranks_ + task_of(s).rank; }

  bool admitted(Slot s) const {
    const std::uint32_t q = memory_state(s);
    const auto& order = allocations_[task_of(s).rank];
    const std::size_t c = cursor_[q];
    return c > 0 && order[c - 1] >= base_of(s);  // ids ascend along order
  }

  // Whether base task v's allocation fits every limit that concerns it in memory state q.
  bool fits(std::uint32_t q, TaskId v) const {
    const Task& t = graph_.task(v);
    const auto& held = held_[q];
    for (const MemoryLimit& l : limits_) {
      const double n = need(t, l);
      if (n <= 0) continue;  // allocates nothing this limit counts
      double in_use = 0;
      for (int c = 0; c < kMemoryCounters; ++c)
        if (l.counters & (1u << c)) in_use += held[static_cast<std::size_t>(c)];
      if (in_use < 0.5) continue;  // nothing held: admitted alone, whatever its size
      if (l.baseline_bytes + in_use + n > l.capacity_bytes) return false;
    }
    return true;
  }

  // Admits, in program order, the allocations of memory state q that fit (the CPU blocks at the
  // first that does not); `by` is the task whose free let them in. With `force`, the first is
  // admitted even if it does not fit.
  void admit(std::uint32_t q, TaskId by, bool force = false) {
    const std::uint32_t copy = q / ranks_;
    const auto& order = allocations_[q % ranks_];
    auto& cursor = cursor_[q];
    while (cursor < order.size() && (force || fits(q, order[cursor]))) {
      const TaskId v = order[cursor++];
      const Task& t = graph_.task(v);
      for (int c = 0; c < kMemoryCounters; ++c) held_[q][static_cast<std::size_t>(c)] += t.alloc_bytes[c];
      const Slot s = slot(copy, v);
      if (const auto it = blocked_since_.find(s); it != blocked_since_.end()) {
        if (force || queue_.now() > it->second) memory_waits_.push_back({timeline_id(s), it->second, queue_.now(), force});
        blocked_since_.erase(it);
      }
      force = false;
      release(s, by);
    }
  }

  // Slot s has ended: its frees take effect, and the allocations they let in are admitted.
  void free_memory(Slot s) {
    const Task& task = task_of(s);
    const std::uint32_t q = memory_state(s);
    bool freed = false;
    for (int c = 0; c < kMemoryCounters; ++c)
      if (task.free_bytes[c] != 0) {
        held_[q][static_cast<std::size_t>(c)] -= task.free_bytes[c];
        freed = true;
      }
    if (freed) admit(q, timeline_id(s));
  }

  // Nothing is left to run: admits over the limit the next allocation of the memory state whose
  // head has been blocked longest (lowest state on ties), so the run goes on. False when none
  // waits.
  bool admit_over_limit() {
    std::uint32_t pick = kNone;
    Time since;
    for (std::uint32_t q = 0; q < held_.size(); ++q) {
      const auto& order = allocations_[q % ranks_];
      if (cursor_[q] == order.size()) continue;
      const auto it = blocked_since_.find(slot(q / ranks_, order[cursor_[q]]));
      const Time at = it != blocked_since_.end() ? it->second : queue_.now();
      if (pick == kNone || at < since) {
        pick = q;
        since = at;
      }
    }
    if (pick == kNone) return false;
    const Slot head = slot(pick / ranks_, allocations_[pick % ranks_][cursor_[pick]]);
    blocked_since_.try_emplace(head, since);
    admit(pick, last_finished_ == kNone ? kNoTask : timeline_id(last_finished_), true);  // bound to the end that left nothing else to run
    if (dirty_) resolve();
    return true;
  }

  // Keeps every instant inside int64 picoseconds (Time's documented range).
  void check_range(Slot s, Time now, Time d) const {
    if (d.ps() > kMaxPs - now.ps())
      throw InputError("", "", fmt::format("the simulated step passes 9e6 s (about 104 days) at task '{}'; "
                                           "the input describes a meaningless step",
                                           task_of(s).name));
  }

  // ---- the fluid model, solved per copy (copies share no resource or domain) ----
  std::uint64_t domain_key(Slot s, std::uint32_t domain) const { return (std::uint64_t{copy_of(s)} << 32) | domain; }

  void mark_dirty(std::uint32_t c) {
    dirty_ = true;
    if (!dirty_copy_[c]) {
      dirty_copy_[c] = true;
      dirty_copies_.push_back(c);
    }
  }

  void begin_variable(Slot s) {
    Fluid& f = fluid_[s];
    f.remaining_ps = static_cast<double>(f.work.variable.ps());
    f.since = queue_.now();
    f.rate = 0;
    f.active = true;
    active_[copy_of(s)].push_back(s);
    mark_dirty(copy_of(s));
  }

  void end_fluid(Slot s) {
    Fluid& f = fluid_[s];
    if (TaskRecord* rec = record(s)) rec->end = queue_.now();
    const std::uint32_t c = copy_of(s);
    if (f.active) {
      f.active = false;
      auto& active = active_[c];
      active.erase(std::find(active.begin(), active.end(), s));
      if (f.work.use_count > 0) mark_dirty(c);
    }
    if (f.work.occupies && --occupancy_[domain_key(s, f.work.domain)] == 0) mark_dirty(c);
  }

  bool occupied(Slot s, std::uint32_t domain) const {
    if (domain == kNoDomain) return false;
    const auto it = occupancy_.find(domain_key(s, domain));
    return it != occupancy_.end() && it->second > 0;
  }

  // Re-solves the rates of the running variable parts of every copy whose set changed, and
  // reschedules the completions whose rate changed (DESIGN.md: rates are recomputed when the
  // set of active activities changes).
  void resolve() {
    dirty_ = false;
    for (const std::uint32_t c : dirty_copies_) {
      dirty_copy_[c] = false;
      solve(c);
    }
    dirty_copies_.clear();
  }

  void solve(std::uint32_t c) {
    const Time now = queue_.now();
    const auto& active = active_[c];
    std::size_t sharing = 0;
    for (const Slot a : active) {
      Fluid& f = fluid_[a];
      f.remaining_ps = std::max(0.0, f.remaining_ps - static_cast<double>((now - f.since).ps()) * f.rate);
      f.since = now;
      if (f.work.use_count > 0) ++sharing;
    }
    std::vector<double> shared_rate;
    if (sharing > 1) {
      // Max-min fair rates over the resources in use (capacity 1 each, every flow bounded by
      // its full rate 1).
      std::vector<std::uint32_t> ids;
      std::vector<sharing::Flow> flows;
      for (const Slot a : active) {
        const Work& w = fluid_[a].work;
        if (w.use_count == 0) continue;
        sharing::Flow flow;
        flow.bound = 1;
        for (std::uint8_t k = 0; k < w.use_count; ++k) {
          auto it = std::find(ids.begin(), ids.end(), w.uses[k].resource);
          if (it == ids.end()) it = ids.insert(ids.end(), w.uses[k].resource);
          flow.uses.push_back({static_cast<std::uint32_t>(it - ids.begin()), w.uses[k].share});
        }
        flows.push_back(std::move(flow));
      }
      shared_rate = sharing::maxmin(std::vector<double>(ids.size(), 1.0), flows);
    }
    std::size_t k = 0;
    for (const Slot a : active) {
      Fluid& f = fluid_[a];
      double rate = 1;
      if (f.work.use_count > 0 && sharing > 1) rate = std::min(1.0, shared_rate[k]);
      if (f.work.use_count > 0) ++k;
      if (occupied(a, f.work.domain)) rate /= f.work.slowdown;
      if (rate == f.rate) continue;  // its completion event is still right
      f.rate = rate;
      ++f.version;
      const double left = std::ceil(f.remaining_ps / rate);
      if (!(left < static_cast<double>(kMaxPs - now.ps()))) check_range(a, now, Time::from_ps(kMaxPs));
      const Time end = now + Time::from_ps(static_cast<std::int64_t>(left));
      if (TaskRecord* rec = record(a)) rec->end = end;
      queue_.schedule(end, payload(a, EventKind::Finish, f.version));
    }
  }

  const TaskGraph& graph_;
  const TaskCostModel& cost_;
  const bool interacts_;  // false: every task is fixed-length (cost_.duration() only)
  std::size_t n_;         // base tasks
  std::uint32_t copies_;
  std::uint64_t total_ = 0;  // slots
  const RankVariation& variation_;
  bool vary_ = false;
  bool full_ = false;
  // base graph
  std::vector<std::uint32_t> succ_begin_;
  std::vector<TaskId> succ_;
  std::vector<std::uint32_t> init_pending_;
  std::vector<TaskId> launch_next_;  // empty without launch queues
  std::vector<Time> duration_;       // !interacts_: each base task's duration
  std::vector<Work> work_;           // interacts_: each base task's work
  std::vector<bool> compute_;        // TaskKind::Compute (variation scales those)
  std::vector<std::uint32_t> member_begin_;
  std::vector<TaskId> members_;
  std::vector<RendezvousSpan> span_;
  std::vector<std::uint32_t> instance_begin_;
  std::vector<std::uint64_t> arrivals_;  // by rendezvous instance
  // by slot
  std::vector<std::uint32_t> pending_;
  std::vector<bool> started_;
  std::vector<Fluid> fluid_;  // empty until the first task that is not fixed_length()
  std::uint64_t finished_ = 0;
  Slot last_finished_ = kNone;
  // records
  std::vector<TaskRecord> records_;              // full mode, by timeline id
  std::vector<std::uint32_t> kept_index_;        // summary mode, by copy
  std::vector<std::vector<TaskRecord>> slices_;  // summary mode, by kept index
  std::vector<Time> makespans_;                  // summary mode, by copy
  // fluid model, by copy
  std::vector<std::vector<Slot>> active_;  // fluid slots in their variable part, in the order they entered it
  std::vector<bool> dirty_copy_;
  std::vector<std::uint32_t> dirty_copies_;   // copies to solve again, in the order they changed
  std::unordered_map<std::uint64_t, std::uint32_t> occupancy_;  // (copy, domain) -> running occupants
  bool dirty_ = false;  // some copy's rates must be solved again before time advances
  // memory admission
  std::vector<MemoryLimit> limits_;                          // empty: no admission
  std::uint32_t ranks_ = 0;                                  // ranks of the base graph
  std::vector<std::array<double, kMemoryCounters>> held_;    // by (copy, rank): allocated − freed
  std::vector<std::vector<TaskId>> allocations_;             // by base rank: allocating tasks, id order
  std::vector<std::size_t> cursor_;                          // by (copy, rank): allocations admitted so far
  std::vector<bool> memory_gated_;                           // by base task: waits for an admission
  std::unordered_map<Slot, Time> blocked_since_;             // gated slots waiting only for memory
  std::vector<MemoryWait> memory_waits_;
  RadixQueue queue_;
};

}  // namespace

Timeline run(const TaskGraph& graph, const TaskCostModel& cost, const RunOptions& options) {
  STEPSIM_ASSERT(graph.frozen(), "engine run on a graph that is not frozen");
  return Run(graph, cost, options).play_full();
}

ReplicatedSummary run_summary(const TaskGraph& graph, const TaskCostModel& cost, const RunOptions& options,
                              std::vector<std::uint32_t> keep) {
  STEPSIM_ASSERT(graph.frozen(), "engine run on a graph that is not frozen");
  return Run(graph, cost, options).play_summary(std::move(keep));
}

}  // namespace stepsim::sim
