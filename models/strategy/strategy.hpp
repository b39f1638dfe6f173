// SPDX-License-Identifier: Apache-2.0
// Strategy: lowers a Scenario (model + parallelism) into a TaskGraph, and the registry.
#pragma once

#include "hardware/collective_model.hpp"
#include "models/mesh_layout.hpp"
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
  /// Index in `groups` of the tensor-parallel communicator (add_tensor_parallel_group); -1
  /// without tensor parallelism. Every other group is a DP-side one.
  std::int32_t tp_group = -1;
  /// Index of HSDP's replica communicator (its members are every (shard × tp)-th rank); -1 when
  /// none. The other DP-side groups take every tp-th rank.
  std::int32_t replica_group = -1;
  /// Under pipeline parallelism: the index of the first point-to-point communicator (two
  /// ranks of neighbouring stages inside one node; the next index: across nodes). Every group
  /// from it on is a PP one; -1 without PP.
  std::int32_t pp_group = -1;
  /// Index of the context-parallel communicator (add_mesh_groups; the next index is the 2-rank
  /// link of its ring); -1 without CP.
  std::int32_t cp_group = -1;
  /// Index of the expert-parallel communicator (add_mesh_groups: the all-to-alls of token
  /// dispatch and combine) and of the expert-data-parallel one (the routed experts' gradient
  /// reductions and FSDP's gathers of them); -1 without expert parallelism.
  std::int32_t ep_group = -1;
  std::int32_t edp_group = -1;
  /// Under hsdp with expert parallelism: the replica communicator of the routed experts' shards
  /// (the replica group's shape, reported with the EDP rows); -1 otherwise.
  std::int32_t edp_replica_group = -1;
  /// True when group `g` carries routed experts' gradients or gathers (reported as "edp").
  bool is_edp_group(std::uint32_t g) const {
    return (edp_group >= 0 && static_cast<std::int32_t>(g) == edp_group) ||
           (edp_replica_group >= 0 && static_cast<std::int32_t>(g) == edp_replica_group);
  }
  /// True when group `g` is a context-parallel one (the CP group or its ring link).
  bool is_cp_group(std::uint32_t g) const {
    return cp_group >= 0 && (static_cast<std::int32_t>(g) == cp_group || static_cast<std::int32_t>(g) == cp_group + 1);
  }
  /// True when group `g` is a pipeline-parallel (point-to-point) communicator.
  bool is_pp_group(std::uint32_t g) const { return pp_group >= 0 && static_cast<std::int32_t>(g) >= pp_group; }
};

/// The communicator shape of the process group `group` of `scenario`'s mesh
/// (Scenario::layout()): its ranks, how many of them share a node, and how many such groups run
/// at once on a node, sharing its NICs (GroupShape::concurrent_groups_per_node: every GPU of a
/// node sits in one group of each shape); on a torus its rings use parallelism.torus_axes axes
/// (issue 13 item 21). Every strategy builds its LoweredStep::groups with it.
hardware::GroupShape group_shape(const Scenario& scenario, const MeshGroup& group);

/// The framework whose rules and knobs a strategy follows.
enum class StrategyFamily { DDP, DeepSpeed, FSDP };

/// A DP strategy as one object (issue 15 item 1), registered once in strategy_registry(): the
/// rest of stepsim asks it what it is (what it shards, its family, its knobs, its labels)
/// rather than comparing its name.
struct StrategyEntry {
  const char* name;         ///< as written in `parallelism.strategy`
  const char* description;  ///< one line, for `stepsim list strategies`
  LoweredStep (*lower)(const Scenario&);  ///< the step as a task graph
  StrategyFamily family;
  /// What is sharded across the shard group, as ZeRO's stages count it (ZeRO paper §3.1): 0
  /// nothing (DDP), 1 optimizer state, 2 + gradients, 3 + parameters (ZeRO-3, FSDP FULL_SHARD).
  int zero_stage;
  /// Sharded inside a shard group and replicated across groups (HSDP); else the shard group is
  /// the whole DP group (or nothing, stage 0).
  bool hybrid;
  /// The report's memory "buffers" row: what it holds under this strategy.
  const char* buffers_label;
  /// The report's "framework ops" row: which of the strategy's own kernels it sums.
  const char* framework_ops_label;
  /// Its memory model's own terms (models/memory.cpp static_memory adds them to the ZeRO
  /// stage's sharded states): the persistent framework buffers, in bytes, given the trainable
  /// parameters' gradient bytes (nullptr: none); and whether a tensor of `numel` elements stays
  /// unsharded on every rank (nullptr: none does).
  double (*buffer_bytes)(const Scenario&, double trainable_grad_bytes);
  bool (*persistent_param)(const Scenario&, double numel);
  /// The `parallelism.*` knobs that apply to it (others are refused, not ignored); each is
  /// declared once in its family's knob table (ddp_knob_fields, zero_knob_fields,
  /// fsdp_knob_fields in models/scenario_fields.hpp), which reads and echoes it.
  std::vector<const char*> knobs;

  /// True when the knob `key` of `parallelism` applies to this strategy.
  bool takes(const std::string& key) const;
};

/// The explicit table of strategies (no static-constructor registration).
const std::vector<StrategyEntry>& strategy_registry();

/// Looks up `name`. Precondition: the name was validated by parse_scenario (InternalError otherwise).
const StrategyEntry& find_strategy(const std::string& name);

/// The strategy `scenario` runs (find_strategy of parallelism.strategy).
const StrategyEntry& strategy_of(const Scenario& scenario);


/// The families' memory terms (StrategyEntry::buffer_bytes, persistent_param): DDP's bucket
/// buffers (ddp.cpp), DeepSpeed's IPG buffer and ZeRO-3's persistent small tensors (zero.cpp).
double ddp_buffer_bytes(const Scenario& scenario, double trainable_grad_bytes);
double zero_buffer_bytes(const Scenario& scenario, double trainable_grad_bytes);
bool zero3_persistent_param(const Scenario& scenario, double numel);

/// PyTorch DDP (semantics.md §A): see ddp.cpp.
LoweredStep lower_ddp(const Scenario& scenario);
/// DeepSpeed ZeRO-1/2 (semantics.md §C.2): see zero.cpp.
LoweredStep lower_zero12(const Scenario& scenario);
/// DeepSpeed ZeRO-3 (semantics.md §C.3): see zero.cpp.
LoweredStep lower_zero3(const Scenario& scenario);
/// PyTorch FSDP2/FSDP1 and HSDP (semantics.md §B): see fsdp.cpp.
LoweredStep lower_fsdp(const Scenario& scenario);
/// Pipeline parallelism (parallelism.pp > 1) under ddp, fsdp or hsdp: one graph rank per PP
/// stage (semantics-parallel.md §B): see pipeline.cpp.
LoweredStep lower_pipeline(const Scenario& scenario);

/// The step of `scenario` as a task graph: lower_pipeline under pipeline parallelism, else its
/// strategy's own lowering (StrategyEntry::lower).
LoweredStep lower_step(const Scenario& scenario);

}  // namespace stepsim::models
