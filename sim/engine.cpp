// SPDX-License-Identifier: Apache-2.0
// Engine: completion events drive readiness; rendezvous start members together; tasks whose
// work depends on other tasks (shared resources, contention domains) form a fluid model.
#include "sim/engine.hpp"

#include "sim/event_queue.hpp"
#include "sim/sharing/maxmin.hpp"
#include "sim/support/error.hpp"

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

constexpr std::uint32_t kNoRank = std::numeric_limits<std::uint32_t>::max();
constexpr std::int64_t kMaxPs = 9'000'000'000'000'000'000;

// Event payload: task id (bits 0–31), kind (bit 32), version (bits 33–63).
enum class EventKind : std::uint64_t { Finish = 0, BeginVariable = 1 };
std::uint64_t payload(TaskId t, EventKind kind, std::uint32_t version) {
  return std::uint64_t{t} | (static_cast<std::uint64_t>(kind) << 32) | (std::uint64_t{version} << 33);
}

class Run {
 public:
  Run(const TaskGraph& graph, const TaskCostModel& cost, const RunOptions& options)
      : graph_(graph), cost_(cost), interacts_(cost.interacts()), records_(graph.size()), pending_(graph.size(), 0),
        next_in_stream_(graph.size(), kNoTask), started_(graph.size(), false) {
    for (TaskId v = 0; v < graph.size(); ++v) {
      pending_[v] = static_cast<std::uint32_t>(boost::in_degree(v, graph.graph()));
      const TaskId prev = graph.stream_previous(v);
      if (prev != kNoTask) {
        ++pending_[v];
        next_in_stream_[prev] = v;
      }
    }
    for (TaskId v = 0; v < graph.size(); ++v) {
      const RendezvousId r = graph.task(v).rendezvous;
      if (r != kNoRendezvous && r >= waiting_.size()) waiting_.resize(r + 1);
    }
    if (!options.memory_limits.empty()) {
      limits_ = options.memory_limits;
      for (const MemoryLimit& l : limits_)
        STEPSIM_ASSERT(l.counters != 0 && l.counters < (1u << kMemoryCounters) && l.capacity_bytes > 0 &&
                           l.baseline_bytes >= 0,
                       "bad memory limit (counters {}, capacity {} B)", l.counters, l.capacity_bytes);
      std::uint32_t ranks = 0;
      for (TaskId v = 0; v < graph.size(); ++v) ranks = std::max(ranks, graph.task(v).rank + 1);
      held_.assign(ranks, {});
      allocations_.resize(ranks);
      cursor_.assign(ranks, 0);
      memory_gated_.assign(graph.size(), false);
      // Every task that allocates on a limited counter holds one more pending count: its
      // admission, which comes in program (id) order on its rank.
      for (TaskId v = 0; v < graph.size(); ++v) {
        const Task& t = graph.task(v);
        for (const MemoryLimit& l : limits_)
          if (need(t, l) > 0) memory_gated_[v] = true;
        if (!memory_gated_[v]) continue;
        allocations_[t.rank].push_back(v);
        ++pending_[v];
      }
    }
    if (options.launch_queues > 0) {
      // Tasks of one (rank, queue) start in launch (id) order: each waits for the start of the
      // previous one.
      launch_next_.assign(graph.size(), kNoTask);
      std::unordered_map<std::uint64_t, TaskId> tail;
      for (TaskId v = 0; v < graph.size(); ++v) {
        const Task& t = graph.task(v);
        const std::uint64_t key = (std::uint64_t{t.rank} << 32) | (t.stream % options.launch_queues);
        const auto [it, fresh] = tail.try_emplace(key, v);
        if (!fresh) {
          launch_next_[it->second] = v;
          ++pending_[v];
          it->second = v;
        }
      }
    }
  }

  Timeline play() {
    for (TaskId v = 0; v < graph_.size(); ++v)
      if (pending_[v] == 0) ready(v, kNoTask);
    for (TaskId v = 0; v < graph_.size(); ++v)
      if (!memory_gated_.empty() && memory_gated_[v] && pending_[v] == 1) blocked_since_.emplace(v, Time());
    for (std::uint32_t rank = 0; rank < allocations_.size(); ++rank) admit(rank, kNoTask);
    if (dirty_) resolve();
    std::size_t finished = 0;
    for (;;) {
      if (queue_.empty()) {
        if (admit_over_limit()) continue;
        break;
      }
      const Event e = queue_.pop();
      const auto t = static_cast<TaskId>(e.payload & 0xffffffffu);
      if (!fluid_.empty() && fluid_[t].fluid) {
        if (static_cast<EventKind>((e.payload >> 32) & 1) == EventKind::BeginVariable) {
          begin_variable(t);
          if (dirty_) resolve();
          continue;
        }
        if (static_cast<std::uint32_t>(e.payload >> 33) != fluid_[t].version) continue;  // stale
        end_fluid(t);
      }
      ++finished;
      last_finished_ = t;
      if (!limits_.empty()) free_memory(t);
      for (auto [it, end] = boost::out_edges(t, graph_.graph()); it != end; ++it)
        release(static_cast<TaskId>(boost::target(*it, graph_.graph())), t);
      if (next_in_stream_[t] != kNoTask) release(next_in_stream_[t], t);
      if (dirty_) resolve();
    }
    if (finished != graph_.size()) {
      for (TaskId v = 0; v < graph_.size(); ++v)
        if (pending_[v] != 0 || !started_[v])
          throw InternalError("engine: task '" + graph_.task(v).name +
                              "' can never start (a rendezvous member is missing, or the launch order "
                              "contradicts the dependencies)");
    }
    return Timeline(std::move(records_), queue_.processed(), std::move(memory_waits_));
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

  void release(TaskId v, TaskId by) {
    if (--pending_[v] == 0) {
      ready(v, by);
    } else if (pending_[v] == 1 && !memory_gated_.empty() && memory_gated_[v] && !admitted(v)) {
      blocked_since_.emplace(v, queue_.now());  // everything but its memory is there
    }
  }

  void ready(TaskId v, TaskId by) {
    records_[v].binding = by;
    const RendezvousId r = graph_.task(v).rendezvous;
    if (r == kNoRendezvous) {
      start(v);
      return;
    }
    auto& members = waiting_[r];
    members.push_back(v);
    if (members.size() == graph_.rendezvous_size(r)) {
      // The last arrival binds every member: nothing could start before it.
      for (TaskId m : members) {
        records_[m].binding = v == m ? by : v;
        start(m);
      }
      members.clear();
    }
  }

  void start(TaskId v) {
    started_[v] = true;
    const Time now = queue_.now();
    if (!interacts_) {
      const Time d = cost_.duration(graph_.task(v));
      STEPSIM_ASSERT(d >= Time(), "negative duration for task '{}'", graph_.task(v).name);
      check_range(v, now, d);
      records_[v].start = now;
      records_[v].end = now + d;
      queue_.schedule(records_[v].end, EventPriority::Normal, v);
      if (!launch_next_.empty() && launch_next_[v] != kNoTask) release(launch_next_[v], records_[v].binding);
      return;
    }
    const Work w = cost_.work(graph_.task(v));
    STEPSIM_ASSERT(w.fixed >= Time() && w.variable >= Time(), "negative duration for task '{}'", graph_.task(v).name);
    if (w.fixed.ps() > kMaxPs - w.variable.ps()) check_range(v, now, Time::from_ps(kMaxPs));
    check_range(v, now, w.fixed + w.variable);
    records_[v].start = now;
    records_[v].end = now + w.fixed + w.variable;
    if (w.fixed_length()) {
      queue_.schedule(records_[v].end, EventPriority::Normal, v);
    } else {
      if (fluid_.empty()) fluid_.resize(graph_.size());
      Fluid& f = fluid_[v];
      f.work = w;
      f.fluid = true;
      if (w.occupies && occupancy_[w.domain]++ == 0) dirty_ = true;
      if (w.fixed > Time())
        queue_.schedule(now + w.fixed, EventPriority::Normal, payload(v, EventKind::BeginVariable, 0));
      else
        begin_variable(v);
    }
    if (!launch_next_.empty() && launch_next_[v] != kNoTask) release(launch_next_[v], records_[v].binding);
  }

  // ---- memory admission (RunOptions::memory_limits) ----
  static double need(const Task& t, const MemoryLimit& l) {
    double n = 0;
    for (int c = 0; c < kMemoryCounters; ++c)
      if (l.counters & (1u << c)) n += t.alloc_bytes[c];
    return n;
  }

  bool admitted(TaskId v) const {
    const Task& t = graph_.task(v);
    const auto& order = allocations_[t.rank];
    const std::size_t c = cursor_[t.rank];
    return c > 0 && order[c - 1] >= v;  // ids ascend along order
  }

  // Whether task v's allocation fits every limit that concerns it on its rank.
  bool fits(TaskId v) const {
    const Task& t = graph_.task(v);
    const auto& held = held_[t.rank];
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

  // Admits, in program order, the allocations of `rank` that fit (the CPU blocks at the first
  // that does not); `by` is the task whose free let them in. With `force`, the first is
  // admitted even if it does not fit.
  void admit(std::uint32_t rank, TaskId by, bool force = false) {
    const auto& order = allocations_[rank];
    auto& cursor = cursor_[rank];
    while (cursor < order.size() && (force || fits(order[cursor]))) {
      const TaskId v = order[cursor++];
      const Task& t = graph_.task(v);
      for (int c = 0; c < kMemoryCounters; ++c) held_[rank][static_cast<std::size_t>(c)] += t.alloc_bytes[c];
      if (const auto it = blocked_since_.find(v); it != blocked_since_.end()) {
        if (force || queue_.now() > it->second) memory_waits_.push_back({v, it->second, queue_.now(), force});
        blocked_since_.erase(it);
      }
      force = false;
      release(v, by);
    }
  }

  // Task t has ended: its frees take effect, and the allocations they let in are admitted.
  void free_memory(TaskId t) {
    const Task& task = graph_.task(t);
    bool freed = false;
    for (int c = 0; c < kMemoryCounters; ++c)
      if (task.free_bytes[c] != 0) {
        held_[task.rank][static_cast<std::size_t>(c)] -= task.free_bytes[c];
        freed = true;
      }
    if (freed) admit(task.rank, t);
  }

  // Nothing is left to run: admits over the limit the next allocation of the rank whose head
  // has been blocked longest (lowest rank on ties), so the run goes on. False when none waits.
  bool admit_over_limit() {
    std::uint32_t pick = kNoRank;
    Time since;
    for (std::uint32_t rank = 0; rank < allocations_.size(); ++rank) {
      if (cursor_[rank] == allocations_[rank].size()) continue;
      const auto it = blocked_since_.find(allocations_[rank][cursor_[rank]]);
      const Time at = it != blocked_since_.end() ? it->second : queue_.now();
      if (pick == kNoRank || at < since) {
        pick = rank;
        since = at;
      }
    }
    if (pick == kNoRank) return false;
    const TaskId head = allocations_[pick][cursor_[pick]];
    blocked_since_.try_emplace(head, since);
    admit(pick, last_finished_, true);  // bound to the end that left nothing else to run
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

  void begin_variable(TaskId v) {
    Fluid& f = fluid_[v];
    f.remaining_ps = static_cast<double>(f.work.variable.ps());
    f.since = queue_.now();
    f.rate = 0;
    f.active = true;
    active_.push_back(v);
    dirty_ = true;
  }

  void end_fluid(TaskId t) {
    Fluid& f = fluid_[t];
    records_[t].end = queue_.now();
    if (f.active) {
      f.active = false;
      active_.erase(std::find(active_.begin(), active_.end(), t));
      if (f.work.use_count > 0) dirty_ = true;
    }
    if (f.work.occupies && --occupancy_[f.work.domain] == 0) dirty_ = true;
  }

  bool occupied(std::uint32_t domain) const {
    if (domain == kNoDomain) return false;
    const auto it = occupancy_.find(domain);
    return it != occupancy_.end() && it->second > 0;
  }

  // Re-solves the rates of every running variable part and reschedules the completions whose
  // rate changed (DESIGN.md: rates are recomputed when the set of active activities changes).
  void resolve() {
    dirty_ = false;
    const Time now = queue_.now();
    std::size_t sharing = 0;
    for (const TaskId a : active_) {
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
      for (const TaskId a : active_) {
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
    for (const TaskId a : active_) {
      Fluid& f = fluid_[a];
      double rate = 1;
      if (f.work.use_count > 0 && sharing > 1) rate = std::min(1.0, shared_rate[k]);
      if (f.work.use_count > 0) ++k;
      if (occupied(f.work.domain)) rate /= f.work.slowdown;
      if (rate == f.rate) continue;  // its completion event is still right
      f.rate = rate;
      ++f.version;
      const double left = std::ceil(f.remaining_ps / rate);
      if (!(left < static_cast<double>(kMaxPs - now.ps()))) check_range(a, now, Time::from_ps(kMaxPs));
      records_[a].end = now + Time::from_ps(static_cast<std::int64_t>(left));
      queue_.schedule(records_[a].end, EventPriority::Normal, payload(a, EventKind::Finish, f.version));
    }
  }

  const TaskGraph& graph_;
  const TaskCostModel& cost_;
  const bool interacts_;  // false: every task is fixed-length (cost_.duration() only)
  std::vector<TaskRecord> records_;
  std::vector<std::uint32_t> pending_;
  std::vector<TaskId> next_in_stream_;
  std::vector<TaskId> launch_next_;  // empty without launch queues
  std::vector<std::vector<TaskId>> waiting_;
  std::vector<bool> started_;
  std::vector<Fluid> fluid_;  // by task; empty until the first task that is not fixed_length()
  std::vector<TaskId> active_;  // fluid tasks in their variable part, in the order they entered it
  std::unordered_map<std::uint32_t, std::uint32_t> occupancy_;  // domain -> running occupants
  bool dirty_ = false;  // rates must be solved again before time advances
  std::vector<MemoryLimit> limits_;                          // empty: no admission
  std::vector<std::array<double, kMemoryCounters>> held_;    // by rank: allocated − freed
  std::vector<std::vector<TaskId>> allocations_;             // by rank: allocating tasks, id order
  std::vector<std::size_t> cursor_;                          // by rank: allocations admitted so far
  std::vector<bool> memory_gated_;                           // by task: waits for an admission
  std::unordered_map<TaskId, Time> blocked_since_;           // gated tasks waiting only for memory
  TaskId last_finished_ = kNoTask;
  std::vector<MemoryWait> memory_waits_;
  EventQueue queue_;
};

}  // namespace

Timeline run(const TaskGraph& graph, const TaskCostModel& cost, const RunOptions& options) {
  STEPSIM_ASSERT(graph.frozen(), "engine run on a graph that is not frozen");
  return Run(graph, cost, options).play();
}

}  // namespace stepsim::sim
