// SPDX-License-Identifier: Apache-2.0
// Task: one unit of work on one stream of one simulated rank (plain data).
#pragma once

#include <cstdint>
#include <limits>
#include <string>

namespace stepsim::sim {

/// Dense task index (the Boost.Graph vertex descriptor of a vecS graph).
using TaskId = std::uint32_t;
inline constexpr TaskId kNoTask = std::numeric_limits<TaskId>::max();
/// Rendezvous id: tasks sharing one start together, once every member is ready.
using RendezvousId = std::uint32_t;
inline constexpr RendezvousId kNoRendezvous = std::numeric_limits<RendezvousId>::max();
/// Memory counters a task can allocate on (Task::alloc_bytes / free_bytes).
inline constexpr int kMemoryCounters = 2;
/// Work-description index: none.
inline constexpr std::uint32_t kNoWork = std::numeric_limits<std::uint32_t>::max();

/// What kind of resource a task occupies. The kernel treats them alike (only variation scales
/// Compute tasks); reports and cost models distinguish them.
enum class TaskKind : std::uint8_t {
  Compute,   ///< runs on the processor (kernels)
  Transfer,  ///< moves data between ranks (a collective's share on one rank)
  Host,      ///< host-side work of a rank: PCIe copies, the CPU's optimizer step, NVMe I/O (offload)
};

/// A task of the graph. The kernel reads `rank`, `stream` and `rendezvous`; everything else
/// is a work description for the cost model (TaskCostModel) and for reports. The graph holds
/// no durations: the same graph can be priced under several cost models.
struct Task {
  TaskKind kind = TaskKind::Compute;
  std::string name;                          ///< human-readable, unique within a graph by convention
  std::uint32_t rank = 0;                    ///< simulated rank (class representative)
  std::uint32_t stream = 0;                  ///< stream index on that rank; FIFO per (rank, stream)
  RendezvousId rendezvous = kNoRendezvous;   ///< members start together
  std::uint32_t op = 0;                      ///< operation code, meaning owned by the cost model
  std::uint32_t group = 0;                   ///< communicator/group code for the cost model
  std::uint32_t phase = 0;                   ///< report category, meaning owned by the caller
  std::int32_t layer = -1;                   ///< model layer index, -1 when none
  double flops = 0;                          ///< floating-point operations (≥ 0)
  double bytes = 0;                          ///< bytes moved or read+written (≥ 0)
  double fixed_s = 0;                        ///< a measured duration to replay as is (≥ 0)
  /// Index into a table of detailed work descriptions the cost model holds (e.g. the GEMM
  /// shapes of a layer), kNoWork when the task has none; meaning owned by the cost model.
  std::uint32_t work = kNoWork;
  double work_share = 1;                     ///< fraction of that work this task does, (0, 1]
  /// Memory the task allocates when it starts and frees when it ends, on counters whose
  /// meaning the caller owns (e.g. 0 = activations, 1 = buffers). Bytes, ≥ 0.
  double alloc_bytes[kMemoryCounters] = {0, 0};
  double free_bytes[kMemoryCounters] = {0, 0};
};

}  // namespace stepsim::sim
