// SPDX-License-Identifier: Apache-2.0
// Chrome trace-event JSON writer (fmt only; no JSON library in the kernel).
#include "sim/trace_chrome.hpp"

#include "sim/support/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>

namespace stepsim::sim {

namespace {

void append_escaped(fmt::memory_buffer& out, const std::string& s) {
  out.push_back('"');
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"': out.append(std::string_view("\\\"")); break;
      case '\\': out.append(std::string_view("\\\\")); break;
      case '\n': out.append(std::string_view("\\n")); break;
      case '\t': out.append(std::string_view("\\t")); break;
      default:
        if (c < 0x20)
          fmt::format_to(std::back_inserter(out), "\\u{:04x}", static_cast<unsigned>(c));
        else
          out.push_back(ch);
    }
  }
  out.push_back('"');
}

// Microseconds with 6 decimals: exact for integer picoseconds (times are ≥ 0).
void append_us(fmt::memory_buffer& out, Time t) {
  const std::int64_t ps = t.ps();
  fmt::format_to(std::back_inserter(out), "{}.{:06}", ps / 1'000'000, ps % 1'000'000);
}

double finite_or_zero(double v) { return std::isfinite(v) ? v : 0.0; }

}  // namespace

std::string chrome_trace_json(const TaskGraph& graph, const Timeline& timeline, const ChromeTraceOptions& options) {
  STEPSIM_ASSERT(graph.frozen(), "chrome trace of a graph that is not frozen");
  STEPSIM_ASSERT(options.copies >= 1, "chrome trace with 0 copies");
  const std::size_t n = graph.size();
  STEPSIM_ASSERT(timeline.size() == n * options.copies, "timeline has {} records, expected {} × {}",
                 timeline.size(), n, options.copies);

  std::uint32_t stride = 1;
  for (TaskId v = 0; v < n; ++v) stride = std::max(stride, graph.task(v).rank + 1);
  const auto rank_of = [&](std::uint32_t copy, TaskId base) { return copy * stride + graph.task(base).rank; };
  const std::uint64_t all_ranks = std::uint64_t{stride} * options.copies;
  std::vector<bool> selected(all_ranks, options.ranks.empty());
  for (const std::uint32_t r : options.ranks)
    if (r < all_ranks) selected[r] = true;
  std::vector<std::uint32_t> copies;  // copies holding at least one selected rank
  for (std::uint32_t c = 0; c < options.copies; ++c)
    for (std::uint32_t k = 0; k < stride; ++k)
      if (selected[std::uint64_t{c} * stride + k]) {
        copies.push_back(c);
        break;
      }

  fmt::memory_buffer out;
  auto it = std::back_inserter(out);
  out.append(std::string_view("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n"));
  bool first = true;
  const auto begin_event = [&] {
    if (!first) out.append(std::string_view(",\n"));
    first = false;
  };

  // Metadata: one process per rank, one thread per stream in use.
  std::uint32_t streams = 0;
  for (TaskId v = 0; v < n; ++v) streams = std::max(streams, graph.task(v).stream + 1);
  std::vector<bool> used(std::size_t{stride} * streams, false);
  for (TaskId v = 0; v < n; ++v) used[std::size_t{graph.task(v).rank} * streams + graph.task(v).stream] = true;
  for (const std::uint32_t c : copies)
    for (std::uint32_t k = 0; k < stride; ++k) {
      const std::uint32_t rank = c * stride + k;
      if (!selected[rank]) continue;
      begin_event();
      fmt::format_to(it, R"({{"name":"process_name","ph":"M","pid":{},"tid":0,"args":{{"name":)", rank);
      append_escaped(out, rank < options.rank_labels.size() ? options.rank_labels[rank]
                                                            : fmt::format("{} {}", options.rank_name, rank));
      fmt::format_to(it, "}}}}");
      begin_event();
      fmt::format_to(it, R"({{"name":"process_sort_index","ph":"M","pid":{},"tid":0,"args":{{"sort_index":{}}}}})", rank, rank);
      for (std::uint32_t s = 0; s < streams; ++s) {
        if (!used[std::size_t{k} * streams + s]) continue;
        begin_event();
        fmt::format_to(it, R"({{"name":"thread_name","ph":"M","pid":{},"tid":{},"args":{{"name":)", rank, s);
        append_escaped(out, s < options.stream_names.size() ? options.stream_names[s] : fmt::format("stream {}", s));
        out.append(std::string_view("}}"));
      }
    }

  // One complete event per task.
  for (const std::uint32_t c : copies)
    for (TaskId v = 0; v < n; ++v) {
      const Task& t = graph.task(v);
      const std::uint32_t rank = rank_of(c, v);
      if (!selected[rank]) continue;
      const TaskId id = static_cast<TaskId>(std::size_t{c} * n + v);
      const TaskRecord& rec = timeline[id];
      begin_event();
      out.append(std::string_view("{\"name\":"));
      append_escaped(out, t.name);
      fmt::format_to(it, R"(,"cat":"{}","ph":"X","pid":{},"tid":{},"ts":)",
                     t.kind == TaskKind::Compute ? "compute" : t.kind == TaskKind::Host ? "host" : "transfer", rank, t.stream);
      append_us(out, rec.start);
      out.append(std::string_view(",\"dur\":"));
      append_us(out, rec.end - rec.start);
      fmt::format_to(it, R"(,"args":{{"id":{},"layer":{},"bytes":{},"flops":{},"op":{},"group":{},"phase":{}}}}})", id,
                     t.layer, finite_or_zero(t.bytes), finite_or_zero(t.flops), t.op, t.group, t.phase);
    }

  // Flow arrows.
  std::uint64_t flow_id = 0;
  const auto flow = [&](const char* cat, TaskId from, std::uint32_t from_rank, TaskId to, std::uint32_t to_rank) {
    ++flow_id;
    const Task& a = graph.task(static_cast<TaskId>(from % n));
    const Task& b = graph.task(static_cast<TaskId>(to % n));
    begin_event();
    fmt::format_to(it, R"({{"name":"{}","cat":"{}","ph":"s","id":{},"pid":{},"tid":{},"ts":)", cat, cat, flow_id,
                   from_rank, a.stream);
    append_us(out, timeline[from].start);
    out.append(std::string_view("}"));
    begin_event();
    fmt::format_to(it, R"({{"name":"{}","cat":"{}","ph":"f","bp":"e","id":{},"pid":{},"tid":{},"ts":)", cat, cat,
                   flow_id, to_rank, b.stream);
    append_us(out, timeline[to].start);
    out.append(std::string_view("}"));
  };
  for (const std::uint32_t c : copies)
    for (TaskId v = 0; v < n; ++v) {
      const Task& t = graph.task(v);
      const std::uint32_t rank = rank_of(c, v);
      if (!selected[rank]) continue;
      const TaskId id = static_cast<TaskId>(std::size_t{c} * n + v);
      // Rendezvous: the member that arrived last binds the others.
      const TaskId b = timeline[id].binding;
      if (t.rendezvous != kNoRendezvous && b != kNoTask && b != id &&
          graph.task(static_cast<TaskId>(b % n)).rendezvous == t.rendezvous) {
        const std::uint32_t b_rank = rank_of(static_cast<std::uint32_t>(b / n), static_cast<TaskId>(b % n));
        if (selected[b_rank]) flow("rendezvous", b, b_rank, id, rank);
      }
      if (!options.dependency_flows) continue;
      for (auto [e, end] = boost::out_edges(v, graph.graph()); e != end; ++e) {
        const auto w = static_cast<TaskId>(boost::target(*e, graph.graph()));
        const Task& u = graph.task(w);
        if (u.stream == t.stream && u.rank == t.rank) continue;
        const std::uint32_t w_rank = rank_of(c, w);
        if (selected[w_rank]) flow("dependency", id, rank, static_cast<TaskId>(std::size_t{c} * n + w), w_rank);
      }
    }

  // Memory counters: one track per rank, a point at every change.
  struct Delta {
    Time at;
    bool alloc;
    int counter;
    double bytes;
  };
  std::vector<Delta> deltas;
  for (const std::uint32_t c : copies)
    for (std::uint32_t k = 0; k < stride; ++k) {
      const std::uint32_t rank = c * stride + k;
      if (!selected[rank]) continue;
      deltas.clear();
      for (TaskId v = 0; v < n; ++v) {
        const Task& t = graph.task(v);
        if (t.rank != k) continue;
        const TaskRecord& rec = timeline[static_cast<TaskId>(std::size_t{c} * n + v)];
        for (int i = 0; i < 2; ++i) {
          if (t.alloc_bytes[i] != 0) deltas.push_back({rec.start, true, i, t.alloc_bytes[i]});
          if (t.free_bytes[i] != 0) deltas.push_back({rec.end, false, i, -t.free_bytes[i]});
        }
      }
      if (deltas.empty()) continue;
      std::stable_sort(deltas.begin(), deltas.end(), [](const Delta& a, const Delta& b) {
        return a.at < b.at || (a.at == b.at && !a.alloc && b.alloc);
      });
      double current[2] = {0, 0};
      for (std::size_t i = 0; i < deltas.size(); ++i) {
        current[deltas[i].counter] += deltas[i].bytes;
        if (i + 1 < deltas.size() && deltas[i + 1].at == deltas[i].at) continue;  // one point per instant
        begin_event();
        out.append(std::string_view("{\"name\":"));
        append_escaped(out, options.counter_track);
        fmt::format_to(it, R"(,"ph":"C","pid":{},"tid":0,"ts":)", rank);
        append_us(out, deltas[i].at);
        out.append(std::string_view(",\"args\":{"));
        append_escaped(out, options.counter_names[0]);
        fmt::format_to(it, ":{},", finite_or_zero(current[0]));
        append_escaped(out, options.counter_names[1]);
        fmt::format_to(it, ":{}}}}}", finite_or_zero(current[1]));
      }
    }

  out.append(std::string_view("\n]}\n"));
  return fmt::to_string(out);
}

}  // namespace stepsim::sim
