// SPDX-License-Identifier: Apache-2.0
// Tests of the engine's fluid model (sim::Work): max-min link sharing, compute slowdown in a
// contention domain, and launch queues (CUDA_DEVICE_MAX_CONNECTIONS). Expected times are
// worked out by hand from the max-min closed form (every flow gets capacity / flows on one
// resource; Bertsekas & Gallager §6.5.2) and stated next to each check; tolerance 1 ps.
#include "sim/engine.hpp"
#include "sim/task_graph.hpp"
#include "tests/support/catch.hpp"

#include <map>

using namespace stepsim;
using namespace stepsim::sim;

namespace {

RunOptions queues(std::uint32_t n) {
  RunOptions o;
  o.launch_queues = n;
  return o;
}


constexpr double kUs = 1e-6;

// Prices a task by name: fixed and variable parts, resources, domain (set per test).
class TableCost final : public TaskCostModel {
 public:
  std::map<std::string, Work> works;
  Time duration(const Task& t) const override {
    const Work& w = works.at(t.name);
    return w.fixed + w.variable;
  }
  Work work(const Task& t) const override { return works.at(t.name); }
  bool interacts() const override { return true; }
};

Task task(std::string name, std::uint32_t stream, TaskKind kind = TaskKind::Compute) {
  Task t;
  t.name = std::move(name);
  t.stream = stream;
  t.kind = kind;
  return t;
}

Work on_link(double fixed_us, double variable_us, std::uint32_t resource, double share = 1) {
  Work w{Time::from_seconds(fixed_us * kUs), Time::from_seconds(variable_us * kUs)};
  w.add_use(resource, share);
  return w;
}

Work plain(double us) { return Work{Time(), Time::from_seconds(us * kUs)}; }

bool same(Time a, double us) { return a == Time::from_seconds(us * kUs); }

// a (stream 1, 10 us on resource 7) and, behind c (4 us of compute), b (stream 2, 10 us on
// resource 7): ids a = 0, c = 1, b = 2.
TaskGraph overlap_graph() {
  TaskGraph g;
  g.add_task(task("a", 1, TaskKind::Transfer));
  const auto c = g.add_task(task("c", 0));
  const auto b = g.add_task(task("b", 2, TaskKind::Transfer));
  g.add_dependency(c, b);
  g.freeze("t");
  return g;
}

TableCost overlap_cost() {
  TableCost cost;
  cost.works["a"] = on_link(0, 10, 7);
  cost.works["b"] = on_link(0, 10, 7);
  cost.works["c"] = plain(4);
  return cost;
}

}  // namespace

TEST_CASE("sim::Engine sharing: a lone task on a resource takes exactly fixed + variable", "[sim]") {
  TaskGraph g;
  const auto a = g.add_task(task("a", 1, TaskKind::Transfer));
  g.freeze("t");
  TableCost cost;
  cost.works["a"] = on_link(1.5, 10, 7);
  const Timeline tl = run(g, cost);
  CHECK(same(tl[a].end, 11.5));
  CHECK(tl[a].end == cost.duration(g.task(a)));  // bit-exact: no rate was ever solved below 1
}

TEST_CASE("sim::Engine sharing: two overlapping tasks on one resource each take longer, work is conserved", "[sim]") {
  // a (10 us of link work) starts at 0; b (10 us) starts at 4 us behind a 4 us compute task.
  // Max-min closed form: [0, 4) a alone at rate 1 (6 us left); [4, 16) both at 1/2, a ends at
  // 4 + 6/0.5 = 16 with b 6 us done; [16, 20) b alone at rate 1 → ends at 20.
  // The link is busy at full capacity over [0, 20): 20 us of work = a's 10 + b's 10.
  const TaskGraph g = overlap_graph();
  const TaskId a = 0, b = 2;
  TableCost cost = overlap_cost();
  const Timeline tl = run(g, cost);
  CHECK(same(tl[a].end, 16));
  CHECK(same(tl[b].start, 4));
  CHECK(same(tl[b].end, 20));
  CHECK((tl[a].end - tl[a].start) > cost.duration(g.task(a)));
  CHECK((tl[b].end - tl[b].start) > cost.duration(g.task(b)));
  // Conservation: the resource was saturated from 0 to the last end, so the work done equals
  // the makespan: 10 + 10 = 20 us.
  CHECK(same(tl.makespan(), 10 + 10));

  SECTION("latency parts are not stretched") {
    // a: 2 us latency then 10 us; b: 2 us latency then 10 us, both from 0. Both data phases run
    // over [2, 22) at 1/2 each: ends 22 (not 2 × 12 = 24).
    cost.works["a"] = on_link(2, 10, 7);
    cost.works["b"] = on_link(2, 10, 7);
    cost.works["c"] = plain(0);
    const Timeline t2 = run(g, cost);
    CHECK(same(t2[a].end, 22));
    CHECK(same(t2[b].end, 22));
  }
  SECTION("different resources do not interact") {
    cost.works["b"] = on_link(0, 10, 8);
    const Timeline t2 = run(g, cost);
    CHECK(same(t2[a].end, 10));
    CHECK(same(t2[b].end, 14));
  }
  SECTION("a partial share leaves room: max-min, not equal split") {
    // a uses 1/4 of resource 7 at full rate, b all of it. Progressive filling raises both rates
    // to L until 0.25 L + L = 1: L = 0.8 each (not 1/2). a: 4 us done alone, 6 left at 0.8 →
    // ends at 4 + 7.5 = 11.5, when b has done 6; b's last 4 alone → 15.5.
    cost.works["a"] = on_link(0, 10, 7, 0.25);
    const Timeline t2 = run(g, cost);
    CHECK(same(t2[a].end, 11.5));
    CHECK(same(t2[b].end, 15.5));
  }
}

TEST_CASE("sim::Engine contention: compute slows down while an occupant of its domain runs", "[sim]") {
  // k (10 us, slowdown 1.25 in domain 0) from 0; x occupies domain 0 over [2, 6) (a 2 us task
  // gates it, x lasts 4 us). k: [0, 2) rate 1 → 2 done; [2, 6) rate 0.8 → 3.2 done; the 4.8
  // left at rate 1 → ends at 10.8 us (semantics.md §E rule 96's model with factor 1.25).
  TaskGraph g;
  const auto k = g.add_task(task("k", 0));
  const auto gate = g.add_task(task("gate", 2));
  const auto x = g.add_task(task("x", 1, TaskKind::Transfer));
  g.add_dependency(gate, x);
  g.freeze("t");
  TableCost cost;
  cost.works["k"] = plain(10);
  cost.works["k"].domain = 0;
  cost.works["k"].slowdown = 1.25;
  cost.works["gate"] = plain(2);
  cost.works["x"] = Work{Time::from_seconds(1 * kUs), Time::from_seconds(3 * kUs)};
  cost.works["x"].domain = 0;
  cost.works["x"].occupies = true;
  const Timeline tl = run(g, cost);
  CHECK(same(tl[x].end, 6));
  CHECK(same(tl[k].end, 10.8));
  SECTION("another domain is not slowed") {
    cost.works["x"].domain = 1;
    CHECK(same(run(g, cost)[k].end, 10));
  }
}

TEST_CASE("sim::Engine launch queues: one queue starts tasks in launch order across streams", "[sim]") {
  // DDP-shaped: c0, x0 (after c0), c1, x1 (after c1), c2 in launch order; compute 10 us,
  // collectives 20 us. Per-stream queues: c0 [0,10) c1 [10,20) c2 [20,30), x0 [10,30), x1 [30,50).
  // One queue (rule 97): c2 cannot start before x1 has started, and x1 waits for x0 (its
  // stream) until 30 → c2 runs [30, 40).
  TaskGraph g;
  const auto c0 = g.add_task(task("c0", 0));
  const auto x0 = g.add_task(task("x0", 1, TaskKind::Transfer));
  const auto c1 = g.add_task(task("c1", 0));
  const auto x1 = g.add_task(task("x1", 1, TaskKind::Transfer));
  const auto c2 = g.add_task(task("c2", 0));
  g.add_dependency(c0, x0);
  g.add_dependency(c1, x1);
  g.freeze("t");
  TableCost cost;
  for (const char* n : {"c0", "c1", "c2"}) cost.works[n] = plain(10);
  for (const char* n : {"x0", "x1"}) cost.works[n] = plain(20);
  const Timeline free = run(g, cost);
  CHECK(same(free[c2].start, 20));
  CHECK(same(free[x1].end, 50));
  const Timeline one = run(g, cost, queues(1));
  CHECK(same(one[c1].start, 10));
  CHECK(same(one[x1].start, 30));
  CHECK(same(one[c2].start, 30));
  CHECK(same(one[c2].end, 40));
  CHECK(one[c2].binding == x0);  // x0's end let x1 start, which let c2 start
  // Two queues for two streams: the same as one queue per stream.
  CHECK(run(g, cost, queues(2))[c2].start == free[c2].start);
}

// ---- the one engine's copies (per_rank mode, issue 15 Part 1 item 3) ----

TEST_CASE("sim::Engine copies: each copy solves its own link sharing, as one copy alone", "[sim][per_rank]") {
  // The graph of the sharing test above: a and b overlap on resource 7 over [4, 16). With 3
  // copies each copy's a and b share that copy's link only (resources are each copy's own):
  // every copy ends a at 16 us and b at 20 us, as the single copy does.
  const TaskGraph g = overlap_graph();
  const TaskId a = 0, c = 1, b = 2;
  TableCost cost = overlap_cost();
  RunOptions o;
  o.copies = 3;
  const Timeline tl = run(g, cost, o);
  REQUIRE(tl.size() == 9);
  for (std::uint32_t k = 0; k < 3; ++k) {
    CHECK(same(tl[k * 3 + a].end, 16));
    CHECK(same(tl[k * 3 + b].end, 20));
  }
  // A slow copy (compute × 2: c ends at 8 us) overlaps its own a over [8, 16): a is 8 us done at
  // 8, then 2 us left at 1/2 → ends at 12; b 2 us done at 12, 8 us alone → ends at 20. The other
  // copies are untouched: no rendezvous joins them.
  o.variation.compute_factor = {1.0, 2.0, 1.0};
  const Timeline slow = run(g, cost, o);
  CHECK(same(slow[1 * 3 + c].end, 8));
  CHECK(same(slow[1 * 3 + a].end, 12));
  CHECK(same(slow[1 * 3 + b].end, 20));
  CHECK(same(slow[0 * 3 + a].end, 16));
  CHECK(same(slow[2 * 3 + b].end, 20));
  // The summary of the same run keeps the makespans and the slices byte for byte.
  const ReplicatedSummary sum = run_summary(g, cost, o, {1});
  CHECK(sum.makespans == std::vector<Time>{slow[0 * 3 + b].end, slow[1 * 3 + b].end, slow[2 * 3 + b].end});
  REQUIRE(sum.slices.size() == 1);
  for (TaskId v = 0; v < 3; ++v) {
    CHECK(sum.slices[0][v].start == slow[1 * 3 + v].start);
    CHECK(sum.slices[0][v].end == slow[1 * 3 + v].end);
  }
}

TEST_CASE("sim::Engine copies: launch queues and memory limits act per copy", "[sim][per_rank]") {
  // One launch queue per rank: x (stream 1, 5 us) is launched before y (stream 0, 1 us) and
  // holds it until x starts; x waits for w (2 us). Every copy: y starts at 2 us, not 0.
  TaskGraph g;
  const auto w = g.add_task(task("w", 0));
  const auto x = g.add_task(task("x", 1));
  const auto y = g.add_task(task("y", 0));
  g.add_dependency(w, x);
  g.freeze("t");
  TableCost cost;
  cost.works["w"] = plain(2);
  cost.works["x"] = plain(5);
  cost.works["y"] = plain(1);
  RunOptions o = queues(1);
  o.copies = 4;
  const Timeline tl = run(g, cost, o);
  for (std::uint32_t k = 0; k < 4; ++k) CHECK(same(tl[k * 3 + y].start, 2));

  // Memory: each of a copy's two tasks allocates 60 of a 100-byte limit and frees it at its
  // end, so the second waits for the first; copies do not share the limit (all copies alike).
  TaskGraph m;
  Task m0 = task("m0", 0);
  m0.alloc_bytes[0] = 60;
  m0.free_bytes[0] = 60;
  Task m1 = task("m1", 1);
  m1.alloc_bytes[0] = 60;
  m1.free_bytes[0] = 60;
  const auto i0 = m.add_task(m0);
  const auto i1 = m.add_task(m1);
  m.freeze("m");
  cost.works["m0"] = plain(3);
  cost.works["m1"] = plain(1);
  RunOptions mo;
  mo.copies = 2;
  mo.memory_limits.push_back({1u, 0, 100});
  const Timeline mt = run(m, cost, mo);
  for (std::uint32_t k = 0; k < 2; ++k) {
    CHECK(same(mt[k * 2 + i0].end, 3));
    CHECK(same(mt[k * 2 + i1].start, 3));  // admitted when m0 of the same copy frees
  }
  CHECK(mt.memory_waits().size() == 2);
}
