// SPDX-License-Identifier: Apache-2.0
// Chrome trace-event JSON of a played graph (opens in Perfetto and chrome://tracing).
#pragma once

#include "sim/task_graph.hpp"
#include "sim/timeline.hpp"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace stepsim::sim {

/// What to write and how to label it. The kernel has no names for streams or counters; the
/// caller gives them.
struct ChromeTraceOptions {
  /// Copies of `graph` the timeline holds (1 for sim::run; N for sim::run_replicated, whose
  /// task id is copy × graph.size() + base id).
  std::uint32_t copies = 1;
  /// Ranks (trace pids) to write; empty = all. A rank is copy × rank_stride + task.rank, where
  /// rank_stride is the graph's largest task.rank + 1.
  std::vector<std::uint32_t> ranks;
  /// Processes are named "<rank_name> N" (e.g. "PP rank 3" when the graph's ranks are pipeline
  /// stages).
  std::string rank_name = "rank";
  /// Process names by trace rank (copy × rank_stride + task.rank), replacing "<rank_name> N"
  /// where given (e.g. the world rank a per_rank copy plays); empty = none.
  std::vector<std::string> rank_labels;
  /// Thread names by stream index; streams past the end are named "stream N".
  std::vector<std::string> stream_names;
  /// Names of the two memory counters (sim::Task::alloc_bytes / free_bytes), as counter series.
  std::array<std::string, 2> counter_names = {"counter0", "counter1"};
  /// Name of the counter track (one per rank).
  std::string counter_track = "memory";
  /// Also draw an arrow for every dependency edge that crosses streams or ranks.
  bool dependency_flows = true;
};

/// Renders `timeline` (played from `graph`) as Chrome trace-event JSON
/// (https://docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKxaoZAQ4 format):
///  - pid = rank, tid = stream, with process_name / thread_name metadata;
///  - one complete event ("ph":"X") per task of the selected ranks: ts and dur in microseconds
///    (exact to the picosecond, 6 decimals), cat "compute" or "transfer", args {id, layer,
///    bytes, flops, op, group, phase} (id = timeline task id);
///  - flow arrows ("ph":"s" at the source's start, "ph":"f" with "bp":"e" at the target's
///    start): cat "rendezvous" from the member that arrived last to every other member that
///    waited for it (both ranks selected), and, with dependency_flows, cat "dependency" for
///    edges between different streams or ranks;
///  - one counter event ("ph":"C") per rank and instant where a memory counter changes, with
///    both counters' values in bytes (allocations at a task's start, frees at its end; frees
///    first at equal instants, as sim::memory_peak counts).
/// Deterministic: the same inputs give the same bytes.
/// Preconditions: graph.frozen(); timeline.size() == graph.size() × copies.
/// @throws InternalError when the preconditions do not hold.
std::string chrome_trace_json(const TaskGraph& graph, const Timeline& timeline, const ChromeTraceOptions& options);

}  // namespace stepsim::sim
