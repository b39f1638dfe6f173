// SPDX-License-Identifier: Apache-2.0
// Engine: completion events drive readiness; rendezvous start members together.
#include "sim/engine.hpp"

#include "sim/event_queue.hpp"
#include "sim/support/error.hpp"

namespace stepsim::sim {

namespace {

class Run {
 public:
  Run(const TaskGraph& graph, const TaskCostModel& cost)
      : graph_(graph), cost_(cost), records_(graph.size()), pending_(graph.size(), 0),
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
  }

  Timeline play() {
    for (TaskId v = 0; v < graph_.size(); ++v)
      if (pending_[v] == 0) ready(v, kNoTask);
    std::size_t finished = 0;
    while (!queue_.empty()) {
      const Event e = queue_.pop();
      const auto t = static_cast<TaskId>(e.payload);
      ++finished;
      for (auto [it, end] = boost::out_edges(t, graph_.graph()); it != end; ++it)
        release(static_cast<TaskId>(boost::target(*it, graph_.graph())), t);
      if (next_in_stream_[t] != kNoTask) release(next_in_stream_[t], t);
    }
    if (finished != graph_.size()) {
      for (TaskId v = 0; v < graph_.size(); ++v)
        if (pending_[v] != 0 || !started_[v])
          throw InternalError("engine: task '" + graph_.task(v).name +
                              "' can never start (a rendezvous member is missing)");
    }
    return Timeline(std::move(records_), queue_.processed());
  }

 private:
  void release(TaskId v, TaskId by) {
    if (--pending_[v] == 0) ready(v, by);
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
    const Time d = cost_.duration(graph_.task(v));
    STEPSIM_ASSERT(d >= Time(), "negative duration for task '{}'", graph_.task(v).name);
    // Keep every instant inside int64 picoseconds (Time's documented range).
    constexpr std::int64_t kMaxPs = 9'000'000'000'000'000'000;
    if (d.ps() > kMaxPs - now.ps())
      throw InputError("", "", fmt::format("the simulated step passes 9e6 s (about 104 days) at task '{}'; "
                                           "the input describes a meaningless step",
                                           graph_.task(v).name));
    records_[v].start = now;
    records_[v].end = now + d;
    queue_.schedule(records_[v].end, EventPriority::Normal, v);
  }

  const TaskGraph& graph_;
  const TaskCostModel& cost_;
  std::vector<TaskRecord> records_;
  std::vector<std::uint32_t> pending_;
  std::vector<TaskId> next_in_stream_;
  std::vector<std::vector<TaskId>> waiting_;
  std::vector<bool> started_;
  EventQueue queue_;
};

}  // namespace

Timeline run(const TaskGraph& graph, const TaskCostModel& cost) {
  STEPSIM_ASSERT(graph.frozen(), "engine run on a graph that is not frozen");
  return Run(graph, cost).play();
}

}  // namespace stepsim::sim
