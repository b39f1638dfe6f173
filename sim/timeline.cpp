// SPDX-License-Identifier: Apache-2.0
// Timeline queries: makespan, critical path, interval arithmetic.
#include "sim/timeline.hpp"

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
  for (TaskId t = last; t != kNoTask; t = records_[t].binding) path.push_back(t);
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
