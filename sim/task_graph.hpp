// SPDX-License-Identifier: Apache-2.0
// TaskGraph: the Boost.Graph DAG of tasks and dependencies, built once, then frozen.
#pragma once

#include "sim/task.hpp"

#include <boost/graph/adjacency_list.hpp>

#include <iosfwd>
#include <string>
#include <unordered_map>
#include <vector>

namespace stepsim::sim {

/// A DAG of Tasks. Edges are dependencies (CUDA events: `after` cannot start before
/// `before` has finished). Besides edges, tasks on the same (rank, stream) run in FIFO order
/// of insertion (CUDA stream semantics); that order is implied, not stored as edges.
///
/// Life cycle: add_task / add_dependency while lowering, then freeze(), which checks that
/// edges plus stream order are acyclic (else InternalError naming a cycle) and computes a
/// topological order. A frozen graph is immutable and can be run many times.
class TaskGraph {
 public:
  /// Vertices, out- and in-edge lists and the graph's edge list in vectors (edges are never
  /// removed): one allocation per growth, not per edge.
  using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS, Task, boost::no_property,
                                      boost::no_property, boost::vecS>;

  /// Appends a task; its position in its stream's FIFO is after every earlier task of the
  /// same (rank, stream). Precondition: not frozen.
  TaskId add_task(Task task);
  /// `after` waits for `before`. Self-edges are rejected; duplicates are harmless.
  void add_dependency(TaskId before, TaskId after);
  /// Checks for cycles (edges + stream order) and freezes. `label` prefixes the error
  /// message, e.g. "ddp: dependency cycle: bwd.L3 -> ar.bucket2 -> bwd.L3".
  /// @throws InternalError on a cycle or when called twice.
  void freeze(const std::string& label);

  bool frozen() const { return frozen_; }
  std::size_t size() const { return boost::num_vertices(graph_); }
  const Task& task(TaskId id) const { return graph_[id]; }
  const Graph& graph() const { return graph_; }
  /// Direct predecessors / successors by dependency edges.
  std::vector<TaskId> predecessors(TaskId id) const;
  std::vector<TaskId> successors(TaskId id) const;
  /// Previous task on the same (rank, stream), or kNoTask.
  TaskId stream_previous(TaskId id) const { return stream_prev_[id]; }
  /// The last task added so far on (rank, stream), kNoTask when none (usable while lowering).
  TaskId stream_tail(std::uint32_t rank, std::uint32_t stream) const {
    const auto it = stream_tail_.find((std::uint64_t{rank} << 32) | stream);
    return it == stream_tail_.end() ? kNoTask : it->second;
  }
  /// Topological order (valid after freeze()).
  const std::vector<TaskId>& topological_order() const { return topo_; }
  /// Number of members of each rendezvous id in use (valid after freeze()).
  std::uint32_t rendezvous_size(RendezvousId r) const { return rendezvous_size_[r]; }
  /// Writes the graph in Graphviz DOT (boost::write_graphviz), one node per task.
  void write_graphviz(std::ostream& out) const;

 private:
  Graph graph_;
  std::vector<TaskId> stream_prev_;
  std::unordered_map<std::uint64_t, TaskId> stream_tail_;  // (rank<<32|stream) -> last task
  std::vector<TaskId> topo_;
  std::vector<std::uint32_t> rendezvous_size_;
  bool frozen_ = false;
};

}  // namespace stepsim::sim
