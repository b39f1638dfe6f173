// SPDX-License-Identifier: Apache-2.0
// TaskGraph: construction, cycle check (naming the cycle), topological order, DOT export.
#include "sim/task_graph.hpp"

#include "sim/support/error.hpp"

#include <boost/graph/graphviz.hpp>

#include <algorithm>
#include <ostream>

namespace stepsim::sim {

TaskId TaskGraph::add_task(Task task) {
  STEPSIM_ASSERT(!frozen_, "add_task on a frozen graph");
  const std::uint64_t key = (std::uint64_t{task.rank} << 32) | task.stream;
  const auto id = static_cast<TaskId>(boost::add_vertex(std::move(task), graph_));
  const auto [it, inserted] = stream_tail_.try_emplace(key, id);
  stream_prev_.push_back(inserted ? kNoTask : it->second);
  it->second = id;
  return id;
}

void TaskGraph::add_dependency(TaskId before, TaskId after) {
  STEPSIM_ASSERT(!frozen_, "add_dependency on a frozen graph");
  STEPSIM_ASSERT(before < size() && after < size(), "dependency on an unknown task");
  STEPSIM_ASSERT(before != after, "task '{}' cannot depend on itself", graph_[before].name);
  boost::add_edge(before, after, graph_);
}

std::vector<TaskId> TaskGraph::predecessors(TaskId id) const {
  std::vector<TaskId> out;
  for (auto [it, end] = boost::in_edges(id, graph_); it != end; ++it)
    out.push_back(static_cast<TaskId>(boost::source(*it, graph_)));
  return out;
}

std::vector<TaskId> TaskGraph::successors(TaskId id) const {
  std::vector<TaskId> out;
  for (auto [it, end] = boost::out_edges(id, graph_); it != end; ++it)
    out.push_back(static_cast<TaskId>(boost::target(*it, graph_)));
  return out;
}

void TaskGraph::freeze(const std::string& label) {
  STEPSIM_ASSERT(!frozen_, "{}: graph frozen twice", label);
  // Edges plus stream order together: a cycle through stream FIFO order deadlocks the engine
  // just as an edge cycle does. Kahn's algorithm over both (no second graph is built).
  const std::size_t n = size();
  std::vector<TaskId> stream_next(n, kNoTask);
  std::vector<std::uint32_t> waiting(n, 0);  // unsorted predecessors
  for (TaskId v = 0; v < n; ++v) {
    waiting[v] = static_cast<std::uint32_t>(boost::in_degree(v, graph_));
    if (stream_prev_[v] != kNoTask) {
      stream_next[stream_prev_[v]] = v;
      ++waiting[v];
    }
  }
  topo_.clear();
  topo_.reserve(n);
  for (TaskId v = 0; v < n; ++v)
    if (waiting[v] == 0) topo_.push_back(v);
  for (std::size_t head = 0; head < topo_.size(); ++head) {
    const TaskId v = topo_[head];
    for (auto [it, end] = boost::out_edges(v, graph_); it != end; ++it) {
      const auto w = static_cast<TaskId>(boost::target(*it, graph_));
      if (--waiting[w] == 0) topo_.push_back(w);
    }
    if (const TaskId w = stream_next[v]; w != kNoTask && --waiting[w] == 0) topo_.push_back(w);
  }
  if (topo_.size() < n) {
    // Some tasks wait on a cycle: find one by DFS to name it.
    std::vector<int> color(n, 0);  // 0 white, 1 on stack, 2 done
    std::vector<TaskId> stack;
    std::string cycle;
    auto dfs = [&](auto&& self, TaskId v) -> bool {
      color[v] = 1;
      stack.push_back(v);
      std::vector<TaskId> next = successors(v);
      if (stream_next[v] != kNoTask) next.push_back(stream_next[v]);
      for (const TaskId w : next) {
        if (color[w] == 1) {
          auto from = std::find(stack.begin(), stack.end(), w);
          for (auto p = from; p != stack.end(); ++p) cycle += graph_[*p].name + " -> ";
          cycle += graph_[w].name;
          return true;
        }
        if (color[w] == 0 && self(self, w)) return true;
      }
      stack.pop_back();
      color[v] = 2;
      return false;
    };
    for (TaskId v = 0; v < n && cycle.empty(); ++v)
      if (color[v] == 0 && waiting[v] > 0) dfs(dfs, v);
    topo_.clear();
    throw InternalError(label + ": dependency cycle: " + cycle);
  }

  for (TaskId v = 0; v < n; ++v) {
    const RendezvousId r = graph_[v].rendezvous;
    if (r == kNoRendezvous) continue;
    if (r >= rendezvous_size_.size()) rendezvous_size_.resize(r + 1, 0);
    ++rendezvous_size_[r];
  }
  frozen_ = true;
}

void TaskGraph::write_graphviz(std::ostream& out) const {
  boost::write_graphviz(out, graph_, [this](std::ostream& o, auto v) {
    o << "[label=\"" << graph_[v].name << "\"]";
  });
}

}  // namespace stepsim::sim
