// SPDX-License-Identifier: Apache-2.0
// Timeline queries: makespan, critical path, interval arithmetic.
#include "sim/timeline.hpp"

#include "sim/support/error.hpp"

#include "sim/task_graph.hpp"

#include <algorithm>

namespace stepsim::sim {

Time Timeline::makespan() const {
  Time m;
  for (const auto& r : records_) m = std::max(m, r.end);
  return m;
}

std::vector<TaskId> Timeline::critical_path() const {
  std::vector<TaskId> path;
  if (records_.empty()) return path;
  TaskId last = 0;
  for (TaskId i = 0; i < records_.size(); ++i)
    if (records_[i].end >= records_[last].end) last = i;
  for (TaskId t = last; t != kNoTask; t = records_[t].binding) {
    path.push_back(t);
    // Bindings point to tasks that ended no later: a chain longer than the timeline loops.
    if (path.size() > records_.size()) throw InternalError("timeline: the binding chain of the critical path loops");
  }
  std::reverse(path.begin(), path.end());
  return path;
}

std::vector<Interval> busy_intervals(const TaskGraph& graph, const Timeline& timeline,
                                     const std::function<bool(const Task&)>& pick) {
  std::vector<Interval> all;
  for (TaskId i = 0; i < graph.size(); ++i)
    if (pick(graph.task(i)) && timeline[i].end > timeline[i].start)
      all.push_back({timeline[i].start, timeline[i].end});
  std::sort(all.begin(), all.end(), [](const Interval& a, const Interval& b) {
    return a.begin < b.begin || (a.begin == b.begin && a.end < b.end);
  });
  std::vector<Interval> merged;
  for (const auto& iv : all) {
    if (!merged.empty() && iv.begin <= merged.back().end)
      merged.back().end = std::max(merged.back().end, iv.end);
    else
      merged.push_back(iv);
  }
  return merged;
}

MemoryPeak memory_peak(const TaskGraph& graph, const Timeline& timeline, std::uint32_t rank,
                       double baseline, unsigned counters) {
  struct Delta {
    Time at;
    bool alloc;  // frees (false) sort first at equal times
    int counter;
    double bytes;
  };
  std::vector<Delta> deltas;
  for (TaskId i = 0; i < graph.size(); ++i) {
    const Task& t = graph.task(i);
    if (t.rank != rank) continue;
    for (int c = 0; c < 2; ++c) {
      if (!(counters & (1u << c))) continue;
      if (t.alloc_bytes[c] != 0) deltas.push_back({timeline[i].start, true, c, t.alloc_bytes[c]});
      if (t.free_bytes[c] != 0) deltas.push_back({timeline[i].end, false, c, -t.free_bytes[c]});
    }
  }
  std::stable_sort(deltas.begin(), deltas.end(), [](const Delta& a, const Delta& b) {
    return a.at < b.at || (a.at == b.at && !a.alloc && b.alloc);
  });
  MemoryPeak peak;
  peak.bytes = baseline;
  double current[2] = {0, 0};
  for (const auto& d : deltas) {
    current[d.counter] += d.bytes;
    const double total = baseline + current[0] + current[1];
    if (total > peak.bytes) {
      peak.bytes = total;
      peak.at = d.at;
      peak.counter_bytes[0] = current[0];
      peak.counter_bytes[1] = current[1];
    }
  }
  return peak;
}

Time total_length(const std::vector<Interval>& merged) {
  Time t;
  for (const auto& iv : merged) t += iv.end - iv.begin;
  return t;
}

Time uncovered_length(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  Time out;
  std::size_t j = 0;
  for (const auto& iv : a) {
    Time cursor = iv.begin;
    while (j < b.size() && b[j].end <= cursor) ++j;
    for (std::size_t k = j; k < b.size() && b[k].begin < iv.end; ++k) {
      if (b[k].begin > cursor) out += b[k].begin - cursor;
      cursor = std::max(cursor, b[k].end);
      if (cursor >= iv.end) break;
    }
    if (cursor < iv.end) out += iv.end - cursor;
  }
  return out;
}

}  // namespace stepsim::sim
