// SPDX-License-Identifier: Apache-2.0
// Tests of the kernel: time, event queue, task graph, engine semantics, timeline queries.
#include "sim/engine.hpp"
#include "sim/event_queue.hpp"
#include "sim/support/error.hpp"
#include "sim/task_graph.hpp"
#include "tests/support/catch.hpp"

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
