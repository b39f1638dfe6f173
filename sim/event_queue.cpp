// SPDX-License-Identifier: Apache-2.0
// Future event list.
#include "sim/event_queue.hpp"

#include "sim/support/error.hpp"

namespace stepsim::sim {

void EventQueue::schedule(Time at, EventPriority priority, std::uint64_t payload) {
  STEPSIM_ASSERT(at >= now_, "event scheduled in the past ({} ps < now {} ps)", at.ps(), now_.ps());
  heap_.push(Event{at, priority, next_sequence_++, payload});
}

Event EventQueue::pop() {
  STEPSIM_ASSERT(!heap_.empty(), "pop from an empty event queue");
  Event e = heap_.top();
  heap_.pop();
  now_ = e.time;
  ++processed_;
  return e;
}

}  // namespace stepsim::sim
