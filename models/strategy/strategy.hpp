// SPDX-License-Identifier: Apache-2.0
// Strategy: lowers a Scenario (model + parallelism) into a TaskGraph, and the registry.
#pragma once

#include "hardware/collective_model.hpp"
#include "sim/task_graph.hpp"

#include <string>
#include <vector>

namespace stepsim::models {

struct Scenario;

/// Report categories stored in sim::Task::phase by every strategy.
enum class Phase : std::uint32_t {
  Forward = 0,
  Backward = 1,
  Communication = 2,
  Optimizer = 3,
  Overhead = 4,  ///< bucket copies and other framework kernels
};

/// One gradient bucket as a strategy built it (for reports and tests).
struct BucketInfo {
  double bytes = 0;
  std::size_t tensors = 0;
};

/// What a strategy produces: the frozen graph, the communicator shapes its collective tasks
/// refer to (sim::Task::group indexes `groups`), and its buckets.
struct LoweredStep {
  sim::TaskGraph graph;
  std::vector<hardware::GroupShape> groups;
  std::vector<BucketInfo> buckets;
};

/// The communicator shape of `ranks` ranks, `ranks_per_node` of them per node, for `scenario`:
/// on a torus its rings use parallelism.torus_axes axes (issue 13 item 21). Every strategy
/// builds its LoweredStep::groups with it.
hardware::GroupShape group_shape(const Scenario& scenario, int ranks, int ranks_per_node);

/// A registry row: name as written in `parallelism.strategy`, a one-line description, and
/// the function that lowers a scenario.
struct StrategyEntry {
  const char* name;
  const char* description;
  LoweredStep (*lower)(const Scenario&);
};

/// The explicit table of strategies (no static-constructor registration).
const std::vector<StrategyEntry>& strategy_registry();

/// Looks up `name`. Precondition: the name was validated by parse_scenario (InternalError otherwise).
const StrategyEntry& find_strategy(const std::string& name);

/// PyTorch DDP (semantics.md §A): see ddp.cpp.
LoweredStep lower_ddp(const Scenario& scenario);
/// DeepSpeed ZeRO-1/2 (semantics.md §C.2): see zero.cpp.
LoweredStep lower_zero12(const Scenario& scenario);
/// DeepSpeed ZeRO-3 (semantics.md §C.3): see zero.cpp.
LoweredStep lower_zero3(const Scenario& scenario);
/// PyTorch FSDP2/FSDP1 and HSDP (semantics.md §B): see fsdp.cpp.
LoweredStep lower_fsdp(const Scenario& scenario);

}  // namespace stepsim::models
