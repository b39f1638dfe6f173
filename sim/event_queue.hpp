// SPDX-License-Identifier: Apache-2.0
// Future event list: a binary heap ordered by (time, priority, insertion sequence).
#pragma once

#include "sim/time.hpp"

#include <cstdint>
#include <queue>
#include <vector>

namespace stepsim::sim {

/// Lower value runs first among events at the same instant (SimPy's URGENT/NORMAL).
enum class EventPriority : std::uint8_t { Urgent = 0, Normal = 1 };

/// One scheduled event: what happens is the caller's `payload` (e.g. a task index).
struct Event {
  Time time;
  EventPriority priority = EventPriority::Normal;
  std::uint64_t sequence = 0;  ///< insertion order, the final tie-break
  std::uint64_t payload = 0;
};

/// Binary-heap event queue (ns-3 HeapScheduler): O(log n) push and pop. Ties in time break
/// by priority, then by insertion order, so equal inputs always give the same event order.
class EventQueue {
 public:
  /// Schedules `payload` at `at`. Precondition: at ≥ now() (InternalError otherwise).
  void schedule(Time at, EventPriority priority, std::uint64_t payload);
  bool empty() const { return heap_.empty(); }
  std::size_t size() const { return heap_.size(); }
  /// Time of the last popped event (0 before the first).
  Time now() const { return now_; }
  /// Removes and returns the smallest event; advances now(). Precondition: !empty().
  Event pop();
  /// Number of events popped so far.
  std::uint64_t processed() const { return processed_; }

 private:
  struct Later {
    bool operator()(const Event& a, const Event& b) const {
      if (a.time != b.time) return a.time > b.time;
      if (a.priority != b.priority) return a.priority > b.priority;
      return a.sequence > b.sequence;
    }
  };
  std::priority_queue<Event, std::vector<Event>, Later> heap_;
  std::uint64_t next_sequence_ = 0;
  std::uint64_t processed_ = 0;
  Time now_;
};

}  // namespace stepsim::sim
