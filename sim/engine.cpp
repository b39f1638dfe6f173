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
        variation_(options.variation), progress_(options.progress) {
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
      fluid_of_.assign(total_, kNone);
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
  // State of a running task whose duration depends on others (Work::fixed_length() false).
  struct Fluid {
    Work work;
    double remaining_ps = 0;  // variable work left, at full rate
    double rate = 0;          // current rate of the variable part (0 = not yet solved)
    Time since;               // instant remaining_ps refers to
    std::uint32_t version = 0;
    std::uint32_t c = 0;      // its copy
    TaskId v = 0;             // its base task
    bool active = false;      // in its variable part
  };

  // A slot with its copy and base task (dividing by the copies once, where an event arrives).
  struct Ref {
    Slot s;
    std::uint32_t c;
    TaskId v;
  };
  Slot slot(std::uint32_t c, TaskId v) const { return static_cast<Slot>(std::size_t{v} * copies_ + c); }
  Ref ref(std::uint32_t c, TaskId v) const { return {slot(c, v), c, v}; }
  Ref ref_of(Slot s) const {
    const auto v = static_cast<TaskId>(s / copies_);
    return {s, static_cast<std::uint32_t>(s - std::size_t{v} * copies_), v};
  }
  TaskId timeline_id(const Ref& x) const { return static_cast<TaskId>(std::size_t{x.c} * n_ + x.v); }

  // The record of slot `x` (nullptr in summary mode for a copy not kept).
  TaskRecord* record(const Ref& x) {
    if (full_) return &records_[timeline_id(x)];
    const std::uint32_t k = kept_index_[x.c];
    return k == kNone ? nullptr : &slices_[k][x.v];
  }

  // Keeps the binding of slot `s`: `by` is a timeline id or kNoTask. In summary mode the slice
  // holds base ids, and a binding to another copy is `other_binding` (the timeline id that held
  // the other copy's task back), as copy_timeline() resolves it.
  void bind(const Ref& x, TaskId by, TaskId other_binding) {
    if (full_) {
      records_[timeline_id(x)].binding = by;
      return;
    }
    const std::uint32_t k = kept_index_[x.c];
    if (k == kNone) return;
    TaskId b = by;
    if (b != kNoTask && b / n_ != x.c) b = other_binding;
    slices_[k][x.v].binding = b == kNoTask ? kNoTask : static_cast<TaskId>(b % n_);
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
        if (init_pending_[v] == 0) ready(ref(c, v), kNoTask);
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
    if (progress_) progress_(finished_, total_);
  }

  void handle(std::uint64_t e) {
    const auto s = static_cast<Slot>(e & 0xffffffffu);
    if (static_cast<EventKind>((e >> 32) & 1) == EventKind::BeginVariable) {
      begin_variable(s);
      if (dirty_) resolve();
      return;
    }
    const Ref x = ref_of(s);
    // A fluid task's completions carry a version ≥ 1 (solve() numbers them); a fixed-length
    // task's carries 0. One of an ended task, or of an older rate, is stale.
    if (const auto version = static_cast<std::uint32_t>(e >> 33); version != 0) {
      if (fluid_of_[s] == kNone || version != fluid(s).version) return;
      end_fluid(x);
    }
    ++finished_;
    if ((finished_ & 0xffff) == 0 && progress_) progress_(finished_, total_);
    last_finished_ = s;
    if (!limits_.empty()) last_finished_in_[x.c] = s;
    if (!full_) makespans_[x.c] = std::max(makespans_[x.c], queue_.now());
    if (!limits_.empty()) free_memory(x);
    const TaskId id = timeline_id(x);
    for (std::uint32_t k = succ_begin_[x.v]; k < succ_begin_[x.v + 1]; ++k) release(ref(x.c, succ_[k]), id);
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

  void release(const Ref& x, TaskId by) {
    if (--pending_[x.s] == 0) {
      ready(x, by);
    } else if (pending_[x.s] == 1 && !limits_.empty() && memory_gated_[x.v] && !admitted(x)) {
      blocked_since_.emplace(x.s, queue_.now());  // everything but its memory is there
    }
  }

  void ready(const Ref& x, TaskId by) {
    const RendezvousId r = graph_.task(x.v).rendezvous;
    if (r == kNoRendezvous) {
      bind(x, by, kNoTask);
      start(x);
      return;
    }
    const std::uint32_t c = x.c;
    const RendezvousSpan span = span_[r];
    const std::uint32_t block = c / (span.size * span.stride);
    const std::uint32_t lane = c % span.stride;
    const std::uint32_t instance = instance_begin_[r] + block * span.stride + lane;
    const std::uint32_t k = member_begin_[r + 1] - member_begin_[r];
    if (++arrivals_[instance] < std::uint64_t{span.size} * k) return;
    // The last arrival binds every member: nothing could start before it. It keeps its own
    // binding; a member of another copy resolves to that binding (copy_timeline's rule).
    const TaskId id = timeline_id(x);
    const std::uint32_t first = block * span.size * span.stride + lane;
    double link = 1;  // the slowest member's link factor
    if (!variation_.link_factor.empty())
      for (std::uint32_t j = 0; j < span.size; ++j)
        for (std::uint32_t m = member_begin_[r]; m < member_begin_[r + 1]; ++m)
          if (const std::size_t at = variation_.slot(first + j * span.stride, members_[m]); at < variation_.link_factor.size())
            link = std::min(link, variation_.link_factor[at]);
    for (std::uint32_t j = 0; j < span.size; ++j) {
      const std::uint32_t mc = first + j * span.stride;
      for (std::uint32_t m = member_begin_[r]; m < member_begin_[r + 1]; ++m) {
        const Ref member = ref(mc, members_[m]);
        if (member.s == x.s)
          bind(x, by, kNoTask);
        else
          bind(member, id, by);
        start(member, link);
      }
    }
  }

  // A duration of `what` multiplied by `factor`, to the nearest picosecond.
  Time scaled(Time d, double factor, const Ref& x, const char* what) const {
    if (factor == 1) return d;
    const double ps = std::nearbyint(static_cast<double>(d.ps()) * factor);
    if (!(ps < static_cast<double>(kMaxPs)))
      throw InputError("", "", fmt::format("task '{}' of copy {} lasts beyond 9e6 s {}", graph_.task(x.v).name, x.c, what));
    return Time::from_ps(static_cast<std::int64_t>(ps));
  }

  // The extra time link factor `link` (< 1) adds to base task v: its link_bound × (1/link − 1).
  Time link_extra(const Ref& x, double link, Time d) const {
    if (link == 1 || x.v >= variation_.link_bound.size()) return Time();
    const double extra = std::nearbyint(static_cast<double>(variation_.link_bound[x.v].ps()) * (1 / link - 1));
    if (!(extra < static_cast<double>(kMaxPs - d.ps())))
      throw InputError("", "", fmt::format("task '{}' of copy {} lasts beyond 9e6 s on degraded links",
                                           graph_.task(x.v).name, x.c));
    return Time::from_ps(static_cast<std::int64_t>(extra));
  }

  // `link`: the link factor of the slot's rendezvous instance (1 = nominal).
  void start(const Ref& x, double link = 1) {
    started_[x.s] = true;
    const Time now = queue_.now();
    const TaskId v = x.v;
    const bool compute = vary_ && compute_[v];
    const double factor = compute ? variation_.factor(x.c, v) : 1.0;
    if (!interacts_) {
      Time d = duration_[v];
      d += link_extra(x, link, d);
      d = scaled(d, factor, x, "after variation");
      check_range(v, now, d);
      if (TaskRecord* rec = record(x)) {
        rec->start = now;
        rec->end = now + d;
      }
      queue_.schedule(now + d, payload(x.s, EventKind::Finish, 0));
      if (!launch_next_.empty() && launch_next_[v] != kNoTask) release(ref(x.c, launch_next_[v]), binding_of(x));
      return;
    }
    Work w = work_[v];
    if (link != 1) {
      if (w.variable > Time())
        w.variable += link_extra(x, link, w.fixed + w.variable);
      else
        w.fixed += link_extra(x, link, w.fixed);
    }
    w.fixed = scaled(w.fixed, factor, x, "after variation");
    w.variable = scaled(w.variable, factor, x, "after variation");
    if (w.fixed.ps() > kMaxPs - w.variable.ps()) check_range(v, now, Time::from_ps(kMaxPs));
    check_range(v, now, w.fixed + w.variable);
    if (TaskRecord* rec = record(x)) {
      rec->start = now;
      rec->end = now + w.fixed + w.variable;
    }
    if (w.fixed_length()) {
      queue_.schedule(now + w.fixed + w.variable, payload(x.s, EventKind::Finish, 0));
    } else {
      Fluid& f = new_fluid(x);
      f.work = w;
      if (w.occupies && occupancy_[domain_key(x.c, w.domain)]++ == 0) mark_dirty(x.c);
      if (w.fixed > Time())
        queue_.schedule(now + w.fixed, payload(x.s, EventKind::BeginVariable, 0));
      else
        begin_variable(x.s);
    }
    if (!launch_next_.empty() && launch_next_[v] != kNoTask) release(ref(x.c, launch_next_[v]), binding_of(x));
  }

  // The binding just set on slot `x`, as a timeline id (what its launch successor is bound to).
  TaskId binding_of(const Ref& x) const {
    if (full_) return records_[timeline_id(x)].binding;
    const std::uint32_t k = kept_index_[x.c];
    if (k == kNone) return kNoTask;
    const TaskId b = slices_[k][x.v].binding;
    return b == kNoTask ? kNoTask : static_cast<TaskId>(std::size_t{x.c} * n_ + b);
  }

  // ---- memory admission (RunOptions::memory_limits), per (copy, rank) ----
  void init_memory(const std::vector<MemoryLimit>& limits) {
    limits_ = limits;
    for (const MemoryLimit& l : limits_)
      STEPSIM_ASSERT(l.counters != 0 && l.counters < (1u << kMemoryCounters) && l.capacity_bytes > 0 &&
                         l.baseline_bytes >= 0 &&
                         std::all_of(l.rank_baseline_bytes.begin(), l.rank_baseline_bytes.end(), [](double b) { return b >= 0; }),
                     "bad memory limit (counters {}, capacity {} B)", l.counters, l.capacity_bytes);
    for (TaskId v = 0; v < n_; ++v) ranks_ = std::max(ranks_, graph_.task(v).rank + 1);
    held_.assign(std::size_t{copies_} * ranks_, {});
    allocations_.resize(ranks_);
    cursor_.assign(std::size_t{copies_} * ranks_, 0);
    last_finished_in_.assign(copies_, kNone);
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

  // The memory state of slot `x`'s (copy, rank).
  std::uint32_t memory_state(const Ref& x) const { return x.c * ranks_ + graph_.task(x.v).rank; }

  bool admitted(const Ref& x) const {
    const std::uint32_t q = memory_state(x);
    const auto& order = allocations_[graph_.task(x.v).rank];
    const std::size_t c = cursor_[q];
    return c > 0 && order[c - 1] >= x.v;  // ids ascend along order
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
      const std::uint32_t rank = q % ranks_;
      const double baseline = rank < l.rank_baseline_bytes.size() ? l.rank_baseline_bytes[rank] : l.baseline_bytes;
      if (baseline + in_use + n > l.capacity_bytes) return false;
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
      const Ref x = ref(copy, v);
      if (const auto it = blocked_since_.find(x.s); it != blocked_since_.end()) {
        if (force || queue_.now() > it->second) memory_waits_.push_back({timeline_id(x), it->second, queue_.now(), force});
        blocked_since_.erase(it);
      }
      force = false;
      release(x, by);
    }
  }

  // Slot x has ended: its frees take effect, and the allocations they let in are admitted.
  void free_memory(const Ref& x) {
    const Task& task = graph_.task(x.v);
    const std::uint32_t q = memory_state(x);
    bool freed = false;
    for (int c = 0; c < kMemoryCounters; ++c)
      if (task.free_bytes[c] != 0) {
        held_[q][static_cast<std::size_t>(c)] -= task.free_bytes[c];
        freed = true;
      }
    if (freed) admit(q, timeline_id(x));
  }

  // Nothing is left to run: admits over the limit the next allocation of the memory state whose
  // head has been blocked longest (lowest state on ties), so the run goes on; with several
  // copies, every blocked state's next allocation at once (each copy's memory is its own: one
  // copy over its limit must not wait for another's), each bound to its own copy's last end.
  // False when none waits.
  bool admit_over_limit() {
    if (copies_ > 1) {
      bool any = false;
      for (std::uint32_t q = 0; q < held_.size(); ++q) {
        const auto& order = allocations_[q % ranks_];
        if (cursor_[q] == order.size()) continue;
        const std::uint32_t copy = q / ranks_;
        const Slot head = slot(copy, order[cursor_[q]]);
        blocked_since_.try_emplace(head, queue_.now());
        const Slot by = last_finished_in_[copy];
        admit(q, by == kNone ? kNoTask : timeline_id(ref_of(by)), true);
        any = true;
      }
      if (dirty_) resolve();
      return any;
    }
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
    admit(pick, last_finished_ == kNone ? kNoTask : timeline_id(ref_of(last_finished_)), true);  // bound to the end that left nothing else to run
    if (dirty_) resolve();
    return true;
  }

  // Keeps every instant inside int64 picoseconds (Time's documented range).
  void check_range(TaskId v, Time now, Time d) const {
    if (d.ps() > kMaxPs - now.ps())
      throw InputError("", "", fmt::format("the simulated step passes 9e6 s (about 104 days) at task '{}'; "
                                           "the input describes a meaningless step",
                                           graph_.task(v).name));
  }

  // ---- the fluid model, solved per copy (copies share no resource or domain) ----
  static std::uint64_t domain_key(std::uint32_t c, std::uint32_t domain) { return (std::uint64_t{c} << 32) | domain; }

  void mark_dirty(std::uint32_t c) {
    dirty_ = true;
    if (!dirty_copy_[c]) {
      dirty_copy_[c] = true;
      dirty_copies_.push_back(c);
    }
  }

  Fluid& fluid(Slot s) { return pool_[fluid_of_[s]]; }

  Fluid& new_fluid(const Ref& x) {
    if (pool_free_.empty()) {
      pool_free_.push_back(static_cast<std::uint32_t>(pool_.size()));
      pool_.emplace_back();
    }
    fluid_of_[x.s] = pool_free_.back();
    pool_free_.pop_back();
    Fluid& f = pool_[fluid_of_[x.s]];
    f = Fluid{};
    f.c = x.c;
    f.v = x.v;
    return f;
  }

  void begin_variable(Slot s) {
    Fluid& f = fluid(s);
    f.remaining_ps = static_cast<double>(f.work.variable.ps());
    f.since = queue_.now();
    f.rate = 0;
    f.active = true;
    active_[f.c].push_back(s);
    mark_dirty(f.c);
  }

  // The slot's fluid task has ended: its entry goes back to the pool (events still queued for
  // it are stale, and find no entry).
  void end_fluid(const Ref& x) {
    Fluid& f = fluid(x.s);
    if (TaskRecord* rec = record(x)) rec->end = queue_.now();
    const std::uint32_t c = x.c;
    if (f.active) {
      f.active = false;
      auto& active = active_[c];
      active.erase(std::find(active.begin(), active.end(), x.s));
      if (f.work.use_count > 0) mark_dirty(c);
    }
    if (f.work.occupies && --occupancy_[domain_key(c, f.work.domain)] == 0) mark_dirty(c);
    pool_free_.push_back(fluid_of_[x.s]);
    fluid_of_[x.s] = kNone;
  }

  bool occupied(std::uint32_t c, std::uint32_t domain) const {
    if (domain == kNoDomain) return false;
    const auto it = occupancy_.find(domain_key(c, domain));
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
      Fluid& f = fluid(a);
      f.remaining_ps = std::max(0.0, f.remaining_ps - static_cast<double>((now - f.since).ps()) * f.rate);
      f.since = now;
      if (f.work.use_count > 0) ++sharing;
    }
    std::vector<double> shared_rate;
    if (sharing > 1) {
      // Max-min fair rates over the resources in use (capacity 1 each, every flow bounded by
      // its full rate 1).
      ids_.clear();
      flows_.clear();
      for (const Slot a : active) {
        const Work& w = fluid(a).work;
        if (w.use_count == 0) continue;
        sharing::Flow flow;
        flow.bound = 1;
        for (std::uint8_t k = 0; k < w.use_count; ++k) {
          auto it = std::find(ids_.begin(), ids_.end(), w.uses[k].resource);
          if (it == ids_.end()) it = ids_.insert(ids_.end(), w.uses[k].resource);
          flow.uses.push_back({static_cast<std::uint32_t>(it - ids_.begin()), w.uses[k].share});
        }
        flows_.push_back(std::move(flow));
      }
      shared_rate = sharing::maxmin(std::vector<double>(ids_.size(), 1.0), flows_);
    }
    std::size_t k = 0;
    for (const Slot a : active) {
      Fluid& f = fluid(a);
      double rate = 1;
      if (f.work.use_count > 0 && sharing > 1) rate = std::min(1.0, shared_rate[k]);
      if (f.work.use_count > 0) ++k;
      if (occupied(c, f.work.domain)) rate /= f.work.slowdown;
      if (rate == f.rate) continue;  // its completion event is still right
      f.rate = rate;
      if (++f.version == (1u << 31)) f.version = 1;  // 31 bits in the payload, never 0
      const double left = std::ceil(f.remaining_ps / rate);
      if (!(left < static_cast<double>(kMaxPs - now.ps()))) check_range(f.v, now, Time::from_ps(kMaxPs));
      const Time end = now + Time::from_ps(static_cast<std::int64_t>(left));
      if (TaskRecord* rec = record(Ref{a, f.c, f.v})) rec->end = end;
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
  const std::function<void(std::uint64_t, std::uint64_t)>& progress_;
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
  // Fluid state lives in a pool while its task runs (a few per copy at any time): fluid_of_
  // maps a slot to its entry (kNone when none), 4 bytes per slot, only when interacts_.
  std::vector<std::uint32_t> fluid_of_;
  std::vector<Fluid> pool_;
  std::vector<std::uint32_t> pool_free_;
  // Scratch of solve(), reused.
  std::vector<std::uint32_t> ids_;
  std::vector<sharing::Flow> flows_;
  std::uint64_t finished_ = 0;
  Slot last_finished_ = kNone;
  std::vector<Slot> last_finished_in_;  // memory limits: by copy, its last finished slot
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
