// SPDX-License-Identifier: Apache-2.0
// Tests of the kernel: time, event queue, task graph, engine semantics, timeline queries.
#include "sim/engine.hpp"
#include "sim/event_queue.hpp"
#include "sim/support/error.hpp"
#include "sim/task_graph.hpp"
#include "tests/support/catch.hpp"

#include <fmt/format.h>

#include <map>

using namespace stepsim;
using namespace stepsim::sim;
using Catch::Matchers::Contains;

namespace {

// Prices a task as fixed_s seconds.
class FixedCost final : public TaskCostModel {
 public:
  Time duration(const Task& t) const override { return Time::from_seconds(t.fixed_s); }
};

Task task(std::string name, std::uint32_t rank, std::uint32_t stream, double seconds,
          RendezvousId r = kNoRendezvous) {
  Task t;
  t.name = std::move(name);
  t.rank = rank;
  t.stream = stream;
  t.fixed_s = seconds;
  t.rendezvous = r;
  return t;
}

}  // namespace

TEST_CASE("sim::Time: integer picoseconds, rounding to nearest", "[sim]") {
  CHECK(Time::from_seconds(1e-12).ps() == 1);
  CHECK(Time::from_seconds(1.4e-12).ps() == 1);
  CHECK(Time::from_seconds(1.6e-12).ps() == 2);
  CHECK(Time::from_seconds(0.0622222).ps() == 62222200000);
  CHECK(Time::from_ps(1500).seconds() == Approx(1.5e-9));
  CHECK_THROWS_AS(Time::from_seconds(-1.0), InputError);
  CHECK_THROWS_AS(Time::from_seconds(1e30), InputError);
}

TEST_CASE("sim::EventQueue: equal times run by priority, then insertion order", "[sim]") {
  EventQueue q;
  q.schedule(Time::from_ps(10), EventPriority::Normal, 1);
  q.schedule(Time::from_ps(5), EventPriority::Normal, 2);
  q.schedule(Time::from_ps(10), EventPriority::Urgent, 3);
  q.schedule(Time::from_ps(10), EventPriority::Normal, 4);
  std::vector<std::uint64_t> order;
  while (!q.empty()) order.push_back(q.pop().payload);
  CHECK(order == std::vector<std::uint64_t>{2, 3, 1, 4});
  CHECK(q.processed() == 4);
  CHECK(q.now() == Time::from_ps(10));
  CHECK_THROWS_AS(q.schedule(Time::from_ps(1), EventPriority::Normal, 0), InternalError);
}

TEST_CASE("sim::TaskGraph: a dependency cycle is named", "[sim]") {
  TaskGraph g;
  const auto a = g.add_task(task("a", 0, 0, 1));
  const auto b = g.add_task(task("b", 0, 1, 1));
  const auto c = g.add_task(task("c", 0, 2, 1));
  g.add_dependency(a, b);
  g.add_dependency(b, c);
  g.add_dependency(c, a);
  CHECK_THROWS_WITH(g.freeze("test"), "test: dependency cycle: a -> b -> c -> a");
}

TEST_CASE("sim::TaskGraph: a cycle through stream order is found too", "[sim]") {
  TaskGraph g;
  const auto a = g.add_task(task("a", 0, 0, 1));
  const auto b = g.add_task(task("b", 0, 0, 1));  // after a on the same stream
  g.add_dependency(b, a);
  CHECK_THROWS_WITH(g.freeze("test"), Contains("dependency cycle"));
}

TEST_CASE("sim::Engine: stream FIFO, cross-stream dependencies, overlap", "[sim]") {
  // compute: c1 (1 s), c2 (1 s); comm: x (1.5 s) waits for c1; c3 waits for x.
  TaskGraph g;
  const auto c1 = g.add_task(task("c1", 0, 0, 1.0));
  const auto c2 = g.add_task(task("c2", 0, 0, 1.0));
  const auto x = g.add_task(task("x", 0, 1, 1.5));
  const auto c3 = g.add_task(task("c3", 0, 0, 0.25));
  g.add_dependency(c1, x);
  g.add_dependency(x, c3);
  g.freeze("t");
  const Timeline tl = run(g, FixedCost{});
  CHECK(tl[c2].start.seconds() == Approx(1.0));
  CHECK(tl[x].start.seconds() == Approx(1.0));  // overlaps c2
  CHECK(tl[c3].start.seconds() == Approx(2.5));  // waits for x, not just c2
  CHECK(tl.makespan().seconds() == Approx(2.75));
  CHECK(tl.events() == 4);
  // Critical path: c1 -> x -> c3.
  CHECK(tl.critical_path() == std::vector<TaskId>{c1, x, c3});
  // Exposed part of x: [2, 2.5) is not covered by compute.
  const auto compute = busy_intervals(g, tl, [](const Task& t) { return t.stream == 0; });
  const auto comm = busy_intervals(g, tl, [](const Task& t) { return t.stream == 1; });
  CHECK(total_length(compute).seconds() == Approx(2.25));
  CHECK(uncovered_length(comm, compute).seconds() == Approx(0.5));
}

TEST_CASE("sim::Engine: a rendezvous starts when its last member is ready", "[sim]") {
  TaskGraph g;
  const auto a0 = g.add_task(task("work0", 0, 0, 1.0));
  const auto a1 = g.add_task(task("work1", 1, 0, 3.0));
  const auto r0 = g.add_task(task("coll@0", 0, 1, 0.5, 0));
  const auto r1 = g.add_task(task("coll@1", 1, 1, 0.5, 0));
  g.add_dependency(a0, r0);
  g.add_dependency(a1, r1);
  g.freeze("t");
  const Timeline tl = run(g, FixedCost{});
  CHECK(tl[r0].start.seconds() == Approx(3.0));
  CHECK(tl[r1].start.seconds() == Approx(3.0));
  CHECK(tl[r0].end == tl[r1].end);
}

TEST_CASE("sim::Engine: a rendezvous with a missing member is reported", "[sim]") {
  TaskGraph g;
  const auto a = g.add_task(task("a", 0, 0, 1.0));
  const auto r = g.add_task(task("coll@0", 0, 1, 0.5, 0));
  const auto b = g.add_task(task("b", 1, 0, 1.0));
  const auto r1 = g.add_task(task("coll@1", 1, 1, 0.5, 0));
  g.add_dependency(a, r);
  g.add_dependency(b, r1);
  g.add_dependency(r, b);  // r1 can never be ready before r starts: deadlock
  g.freeze("t");
  CHECK_THROWS_WITH(run(g, FixedCost{}), Contains("can never start"));
}

TEST_CASE("sim::Engine: identical inputs give identical timelines", "[sim]") {
  auto build = [] {
    TaskGraph g;
    for (int i = 0; i < 50; ++i) {
      const auto c = g.add_task(task("c" + std::to_string(i), 0, 0, 0.001 * (i % 7 + 1)));
      const auto x = g.add_task(task("x" + std::to_string(i), 0, 1, 0.0015));
      g.add_dependency(c, x);
    }
    g.freeze("t");
    return g;
  };
  const TaskGraph g1 = build(), g2 = build();
  const Timeline t1 = run(g1, FixedCost{}), t2 = run(g2, FixedCost{});
  for (TaskId i = 0; i < g1.size(); ++i) {
    CHECK(t1[i].start == t2[i].start);
    CHECK(t1[i].end == t2[i].end);
  }
}

namespace {

// A forward that runs ahead: AllGathers g0..g3 (1 s each, 10 B of buffer each) on stream 1,
// computes c0..c3 (3 s each) on stream 0, ci after gi, ci freeing gi's buffer at its end.
// Tasks are added in program order: g0 c0 g1 c1 g2 c2 g3 c3.
struct RunAhead {
  TaskGraph g;
  TaskId gather[4], compute[4];
  RunAhead() {
    for (int i = 0; i < 4; ++i) {
      Task a = task(fmt::format("g{}", i), 0, 1, 1.0);
      a.alloc_bytes[1] = 10;
      gather[i] = g.add_task(std::move(a));
      Task c = task(fmt::format("c{}", i), 0, 0, 3.0);
      c.free_bytes[1] = 10;
      compute[i] = g.add_task(std::move(c));
      g.add_dependency(gather[i], compute[i]);
    }
    g.freeze("run-ahead");
  }
};

RunOptions limited(double capacity, double baseline = 0) {
  RunOptions o;
  o.memory_limits.push_back({1u << 1, baseline, capacity});
  return o;
}

}  // namespace

TEST_CASE("sim::Engine: an allocation waits for memory, in program order (issue 13 item 3)", "[sim]") {
  RunAhead ra;
  // Before: nothing bounds the AllGathers; all four buffers are alive at t = 3 (40 B).
  const Timeline free = run(ra.g, FixedCost{});
  CHECK(free[ra.gather[3]].start.seconds() == Approx(3.0));
  CHECK(memory_peak(ra.g, free, 0, 0).bytes == 40);
  CHECK(free.memory_waits().empty());
  // 25 B (5 B of it held by the baseline): two buffers at a time. g2 is ready at 2 but waits
  // for c0's free at 4; g3 for c1's at 7.
  const Timeline tl = run(ra.g, FixedCost{}, limited(25, 5));
  CHECK(tl[ra.gather[2]].start.seconds() == Approx(4.0));
  CHECK(tl[ra.gather[2]].binding == ra.compute[0]);
  CHECK(tl[ra.gather[3]].start.seconds() == Approx(7.0));
  CHECK(memory_peak(ra.g, tl, 0, 5).bytes == 25);
  REQUIRE(tl.memory_waits().size() == 2);
  CHECK(tl.memory_waits()[0].task == ra.gather[2]);
  CHECK(tl.memory_waits()[0].since.seconds() == Approx(2.0));
  CHECK(tl.memory_waits()[0].until.seconds() == Approx(4.0));
  CHECK_FALSE(tl.memory_waits()[0].over_limit);
  // Compute never waited: the step is as long as before (1 + 4 × 3 s).
  CHECK(tl.makespan() == free.makespan());
  // Program order: with room for one buffer, g1 waits for c0 and g2 cannot pass it.
  const Timeline one = run(ra.g, FixedCost{}, limited(10));
  CHECK(one[ra.gather[1]].start.seconds() == Approx(4.0));
  CHECK(one[ra.gather[2]].start.seconds() == Approx(8.0));
  CHECK(memory_peak(ra.g, one, 0, 0).bytes == 10);
  CHECK(one.makespan().seconds() == Approx(16.0));
}

TEST_CASE("sim::Engine: each rank admits against its own baseline (pipeline stages)", "[sim]") {
  // Two ranks, each gathering two 10 B buffers ahead of its compute, capacity 25 B. Rank 0 holds
  // 5 B of states: two buffers fit (the run-ahead above). Rank 1 holds 15 B: one at a time.
  TaskGraph g;
  TaskId gather[2][2], compute[2][2];
  for (std::uint32_t r = 0; r < 2; ++r)
    for (int i = 0; i < 2; ++i) {
      Task a = task(fmt::format("r{}.g{}", r, i), r, 1, 1.0);
      a.alloc_bytes[1] = 10;
      gather[r][i] = g.add_task(std::move(a));
      Task c = task(fmt::format("r{}.c{}", r, i), r, 0, 3.0);
      c.free_bytes[1] = 10;
      compute[r][i] = g.add_task(std::move(c));
      g.add_dependency(gather[r][i], compute[r][i]);
    }
  g.freeze("two-stages");
  RunOptions o = limited(25, 15);
  o.memory_limits.back().rank_baseline_bytes = {5, 15};
  const Timeline tl = run(g, FixedCost{}, o);
  CHECK(tl[gather[0][1]].start.seconds() == Approx(1.0));  // rank 0: both fit
  CHECK(tl[gather[1][1]].start.seconds() == Approx(4.0));  // rank 1: after c0 frees its buffer
  REQUIRE(tl.memory_waits().size() == 1);
  CHECK(tl.memory_waits()[0].task == gather[1][1]);
  // One baseline for both (the largest stage's, as before): rank 0 waits too.
  const Timeline both = run(g, FixedCost{}, limited(25, 15));
  CHECK(both[gather[0][1]].start.seconds() == Approx(4.0));
  (void)compute;
}

TEST_CASE("sim::Engine: an allocation that can never fit is admitted over the limit, and the run ends", "[sim]") {
  RunAhead ra;
  // 5 B: every buffer alone is larger. Each is admitted when nothing is held, so the step is
  // serial, and no allocation is over the limit.
  const Timeline alone = run(ra.g, FixedCost{}, limited(5));
  CHECK(alone.makespan().seconds() == Approx(16.0));
  for (const auto& w : alone.memory_waits()) CHECK_FALSE(w.over_limit);
  // A buffer nobody frees: h holds 10 B for the whole run; g1 must then go over the limit
  // once nothing left could free memory.
  TaskGraph g;
  Task h = task("h", 0, 0, 1.0);
  h.alloc_bytes[0] = 10;
  const TaskId hid = g.add_task(std::move(h));
  Task a = task("a", 0, 1, 1.0);
  a.alloc_bytes[1] = 10;
  const TaskId aid = g.add_task(std::move(a));
  g.freeze("never");
  RunOptions o;
  o.memory_limits.push_back({3u, 0, 15});
  const Timeline tl = run(g, FixedCost{}, o);
  CHECK(tl[aid].start.seconds() == Approx(1.0));
  CHECK(tl[aid].binding == hid);
  REQUIRE(tl.memory_waits().size() == 1);
  CHECK(tl.memory_waits()[0].over_limit);
}
