// SPDX-License-Identifier: Apache-2.0
// Future event lists: a binary heap ordered by (time, priority, insertion sequence), and the
// radix heap the engine plays (time, insertion order).
#pragma once

#include "sim/support/error.hpp"
#include "sim/time.hpp"

#include <algorithm>
#include <array>
#include <bit>
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

/// The engine's future event list: a radix heap (Ahuja, Mehlhorn, Orlin & Tarjan, "Faster
/// algorithms for the shortest path problem", JACM 1990) over picosecond instants. The engine
/// never schedules in the past, so keys are monotone: an event goes to the bucket of the highest
/// bit in which its instant differs from the last instant played (bucket 0: equal to it). A push
/// is an append; playing an instant empties bucket 0, refilling it from the lowest non-empty
/// bucket when needed. Equal instants keep insertion order (they always share a bucket and are
/// moved in order), so events play in (time, insertion order), as EventQueue plays events of
/// one priority. Copies of a graph that finish a task at the same instant cost an append each,
/// not a heap operation; events at distinct instants cost O(1) amortised per bit of the time
/// between them.
class RadixQueue {
 public:
  /// Schedules `payload` at `at`. Precondition: at ≥ now() (InternalError otherwise).
  void schedule(Time at, std::uint64_t payload) {
    STEPSIM_ASSERT(at >= now_, "event scheduled in the past ({} ps < now {} ps)", at.ps(), now_.ps());
    const auto key = static_cast<std::uint64_t>(at.ps());
    buckets_[bucket_of(key)].push_back({key, payload});
    ++size_;
  }
  bool empty() const { return size_ == 0; }
  /// Plays the earliest instant: advances now() to it and calls f(payload) for each of its
  /// events in insertion order, including events scheduled at that instant while it runs.
  /// Precondition: !empty().
  template <typename F>
  void play_next(F&& f) {
    if (buckets_[0].empty()) refill();
    now_ = Time::from_ps(static_cast<std::int64_t>(last_));
    auto& due = buckets_[0];
    for (std::size_t i = 0; i < due.size(); ++i) {
      ++processed_;
      f(due[i].payload);
    }
    size_ -= due.size();
    due.clear();
  }
  /// The instant being played (0 before the first).
  Time now() const { return now_; }
  /// Number of events played so far.
  std::uint64_t processed() const { return processed_; }

 private:
  struct Item {
    std::uint64_t key;
    std::uint64_t payload;
  };
  std::size_t bucket_of(std::uint64_t key) const {
    return key == last_ ? 0 : static_cast<std::size_t>(64 - std::countl_zero(key ^ last_));
  }
  // Moves the lowest non-empty bucket down around its smallest instant, which becomes current.
  void refill() {
    std::size_t b = 1;
    while (buckets_[b].empty()) ++b;
    auto& from = buckets_[b];
    std::uint64_t least = from.front().key;
    for (const Item& it : from) least = std::min(least, it.key);
    last_ = least;
    for (const Item& it : from) buckets_[bucket_of(it.key)].push_back(it);
    from.clear();
  }
  std::array<std::vector<Item>, 65> buckets_;
  std::uint64_t last_ = 0;
  std::size_t size_ = 0;
  Time now_;
  std::uint64_t processed_ = 0;
};

}  // namespace stepsim::sim
