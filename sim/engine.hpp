// SPDX-License-Identifier: Apache-2.0
// Engine: plays a frozen TaskGraph as discrete events under CUDA stream semantics.
#pragma once

#include "sim/task_graph.hpp"
#include "sim/time.hpp"
#include "sim/timeline.hpp"

namespace stepsim::sim {

/// Prices a task: how long it runs once started. Implemented above the kernel (hardware/),
/// so the kernel never knows what a GEMM or an AllReduce is.
class TaskCostModel {
 public:
  virtual ~TaskCostModel() = default;
  /// Duration of `task` once started. Must be ≥ 0 and deterministic.
  virtual Time duration(const Task& task) const = 0;
};

/// Plays `graph` and returns the timeline.
///
/// Rules (CUDA stream + event semantics, DESIGN.md "Core abstractions"):
///  - a task becomes ready when the previous task of its (rank, stream) has finished and all
///    its dependencies have finished;
///  - a ready task without a rendezvous starts at once; tasks sharing a rendezvous id start
///    together when the last member becomes ready (a collective starts when every member
///    rank has reached it);
///  - events are ordered by (time, priority, insertion sequence), so runs are deterministic.
///
/// Precondition: graph.frozen().
/// @throws InternalError when tasks remain that can never start (inconsistent rendezvous).
Timeline run(const TaskGraph& graph, const TaskCostModel& cost);

}  // namespace stepsim::sim
