// SPDX-License-Identifier: Apache-2.0
// per_rank mode (symmetric equality, a straggler at every collective, spread and straggler
// cost) and the Chrome trace of the default scenario, checked structurally.
#include "models/report.hpp"
#include "models/scenario.hpp"
#include "models/simulate.hpp"
#include "sim/replicate.hpp"
#include "sim/support/error.hpp"
#include "sim/trace_chrome.hpp"
#include "tests/support/catch.hpp"

#include <nlohmann/json.hpp>

#include <map>
#include <set>

using namespace stepsim;
using namespace stepsim::models;
using Catch::Matchers::Contains;

namespace {

const std::string kDefault = std::string(STEPSIM_SOURCE_DIR) + "/configs/examples/default.json";

Scenario load(std::vector<std::string> sets) { return load_scenario(kDefault, sets); }

}  // namespace

TEST_CASE("per_rank: identical to symmetric without variation", "[per_rank]") {
  for (const std::string strategy : {"ddp", "fsdp"}) {
    SimulatedStep sym, per;
    const Report a = run(load({"parallelism.strategy=" + strategy}), sym);
    const Report b = run(load({"parallelism.strategy=" + strategy, "sim.rank_mode=per_rank"}), per);
    REQUIRE(per.copies == 64);
    const std::size_t n = sym.step.graph.size();
    REQUIRE(per.timeline->size() == n * 64);
    for (std::uint32_t rank = 0; rank < 64; ++rank)
      for (std::size_t v = 0; v < n; ++v) {
        const auto& x = (*sym.timeline)[static_cast<sim::TaskId>(v)];
        const auto& y = (*per.timeline)[static_cast<sim::TaskId>(rank * n + v)];
        REQUIRE(x.start == y.start);
        REQUIRE(x.end == y.end);
      }
    CHECK(a.step_time_s == b.step_time_s);
    CHECK(a.exposed_comm_s == b.exposed_comm_s);
    CHECK(a.memory.total_bytes == b.memory.total_bytes);
    // Every rank plays the symmetric step's events, its fluid model's rescheduled completions
    // (compute slowdown, link sharing) included.
    CHECK(b.events == 64 * a.events);
    CHECK(a.events >= n);
    CHECK_FALSE(a.per_rank.present);
    CHECK(b.per_rank.present);
    CHECK(b.per_rank.spread_s == 0);
    CHECK(b.per_rank.straggler_cost_s == 0);
  }
}

TEST_CASE("per_rank: the engine's copies of a step equal the symmetric play, fluid model and launch queues included",
          "[per_rank]") {
  // What lets per_rank without variation take the symmetric play for every rank: the one
  // engine playing 64 copies of the lowered step under the step's own cost model (link
  // sharing, compute slowdown under overlap) and one launch queue per rank gives every copy
  // the symmetric records.
  for (const std::string strategy : {"ddp", "fsdp", "zero3"}) {
    CAPTURE(strategy);
    const Scenario s = load({"parallelism.strategy=" + strategy});
    const LoweredStep step = find_strategy(s.parallelism.strategy).lower(s);
    const hardware::StepCostModel cost = step_cost_model(s, step);
    REQUIRE(cost.interacts());
    sim::RunOptions options;
    options.launch_queues = 1;
    const sim::Timeline one = sim::run(step.graph, cost, options);
    options.copies = 64;
    const sim::Timeline all = sim::run(step.graph, cost, options);
    const std::size_t n = step.graph.size();
    for (std::uint32_t rank = 0; rank < 64; ++rank)
      for (std::size_t v = 0; v < n; ++v) {
        REQUIRE(all[static_cast<sim::TaskId>(rank * n + v)].start == one[static_cast<sim::TaskId>(v)].start);
        REQUIRE(all[static_cast<sim::TaskId>(rank * n + v)].end == one[static_cast<sim::TaskId>(v)].end);
      }
    CHECK(all.events() >= 64 * one.events());  // more re-solves where a collective waits for the last copy
  }
}

TEST_CASE("per_rank: one rank 20 % slower holds every collective back", "[per_rank]") {
  const std::vector<std::string> base = {"parallelism.dp=8", "cluster.nodes=1", "sim.rank_mode=per_rank"};
  auto with = [&](std::vector<std::string> extra) {
    auto sets = base;
    sets.insert(sets.end(), extra.begin(), extra.end());
    return load(sets);
  };
  SimulatedStep kept;
  const Report slow = run(with({R"(sim.slow_ranks=[{"rank": 3, "compute_factor": 1.2}])"}), kept);
  const Report all_slow = run(with({R"(sim.slow_ranks=[{"rank":0,"compute_factor":1.2},{"rank":1,"compute_factor":1.2},)"
                                    R"({"rank":2,"compute_factor":1.2},{"rank":3,"compute_factor":1.2},)"
                                    R"({"rank":4,"compute_factor":1.2},{"rank":5,"compute_factor":1.2},)"
                                    R"({"rank":6,"compute_factor":1.2},{"rank":7,"compute_factor":1.2}])"}));
  const Report none = run(with({}));
  // The group runs at the slow rank's pace: exactly as if every rank were 20 % slower.
  CHECK(slow.step_time_s == all_slow.step_time_s);
  CHECK(slow.per_rank.slowest_rank == 3);
  CHECK(slow.per_rank.no_variation_step_time_s == none.step_time_s);
  CHECK(slow.per_rank.straggler_cost_s == Approx(all_slow.step_time_s - none.step_time_s).epsilon(1e-12));
  CHECK(slow.per_rank.straggler_cost_s > 0.1 * none.compute_time_s);
  // Every collective starts at the same instant on every rank, and the fast ranks wait for rank 3.
  const auto& g = kept.step.graph;
  const auto& tl = *kept.timeline;
  const std::size_t n = g.size();
  int collectives = 0, bound_to_slow = 0;
  for (sim::TaskId v = 0; v < n; ++v) {
    if (g.task(v).rendezvous == sim::kNoRendezvous) continue;
    ++collectives;
    for (std::uint32_t rank = 1; rank < 8; ++rank) REQUIRE(tl[static_cast<sim::TaskId>(rank * n + v)].start == tl[v].start);
    const auto b = tl[v].binding;  // rank 0's member
    if (b != sim::kNoTask && b / n == 3) ++bound_to_slow;
  }
  CHECK(collectives > 0);
  CHECK(bound_to_slow == collectives);  // rank 3 arrives last at every collective
}

TEST_CASE("per_rank: rank 0's rows add up to the step, its wait for a slow rank included", "[per_rank]") {
  // Issue 13 item 20: README's per_rank example (64 H100, rank 3 1.2x slower). Rank 0's
  // forward, backward, optimizer, framework ops and exposed communication left its wait for
  // rank 3 in no row, so they summed to less than the step.
  const auto rows = [](const Report& r) {
    return r.forward_time_s + r.backward_time_s + r.optimizer_time_s + r.overhead_time_s + r.exposed_comm_s +
           r.wait_time_s;
  };
  for (const std::string strategy : {"ddp", "fsdp"}) {
    CAPTURE(strategy);
    const Report slow = run(load({"parallelism.strategy=" + strategy, "sim.rank_mode=per_rank",
                                  R"(sim.slow_ranks=[{"rank": 3, "compute_factor": 1.2}])"}));
    const Report none = run(load({"parallelism.strategy=" + strategy, "sim.rank_mode=per_rank"}));
    const Report sym = run(load({"parallelism.strategy=" + strategy}));
    CHECK(rows(slow) == Approx(slow.step_time_s).epsilon(1e-9));
    CHECK(rows(none) == Approx(none.step_time_s).epsilon(1e-9));
    CHECK(rows(sym) == Approx(sym.step_time_s).epsilon(1e-9));
    // Rank 0 waits about what rank 3's extra 20 % of compute costs; nobody waits without variation.
    CHECK(slow.wait_time_s > 0.05 * none.compute_time_s);
    CHECK(none.wait_time_s == Approx(0).margin(1e-12));
    CHECK(sym.wait_time_s == 0);
    const std::string text = report_text(slow);
    CHECK_THAT(text, Contains("  waiting   "));
    CHECK_THAT(report_json(slow), Contains("\"wait_time_s\": "));
    CHECK_THAT(report_text(sym), !Contains("  waiting   "));
  }
}

TEST_CASE("per_rank: a degraded node slows every collective that crosses it (sim.degraded_links)", "[per_rank]") {
  // DDP on 8 nodes, one 4 GiB bucket: its AllReduce runs after the whole backward, fully
  // exposed, so the step grows by exactly its extra bandwidth time. Node 5's network at half
  // speed: the ring moves at its slowest link, bandwidth term × 1/0.5 (latency unchanged), for
  // every rank of the group (they wait at the same collective). Compute slowdown off: the
  // collective overlaps nothing. Tolerance: 1 ps per rounded duration.
  const std::vector<std::string> base = {"parallelism.bucket_cap_mb=4096", "parallelism.first_bucket_mb=4096",
                                         "sim.overlap_model=off", "sim.rank_mode=per_rank"};
  auto sets = base;
  const Report nominal = run(load(sets));
  sets.push_back(R"(sim.degraded_links=[{"node": 5, "bandwidth_factor": 0.5}])");
  const Report slow = run(load(sets));
  REQUIRE(slow.collectives.size() == 1);
  const double bandwidth_s = slow.collectives[0].time_s - slow.collectives[0].latency_s;
  CHECK(bandwidth_s > 1e-3);
  CHECK(slow.per_rank.no_variation_step_time_s == nominal.step_time_s);
  CHECK(slow.per_rank.straggler_cost_s == Approx(bandwidth_s).margin(1e-11));
  CHECK(slow.step_time_s == Approx(nominal.step_time_s + bandwidth_s).margin(1e-11));
  CHECK(slow.per_rank.spread_s == 0);  // every rank waits for the same AllReduce
  // Within one node nothing crosses the network: a single-node job is unaffected.
  sets = base;
  sets.insert(sets.end(), {"parallelism.dp=8", R"(sim.degraded_links=[{"node": 0, "bandwidth_factor": 0.5}])"});
  CHECK(run(load(sets)).per_rank.straggler_cost_s == 0);
}

TEST_CASE("per_rank: scenario keys are validated", "[per_rank]") {
  CHECK_THROWS_WITH(load({R"(sim.slow_ranks=[{"rank": 3, "compute_factor": 1.2}])"}),
                    Contains("/sim/slow_ranks") && Contains("per_rank"));
  CHECK_THROWS_WITH(load({"sim.rank_mode=per_rank", R"(sim.slow_ranks=[{"rank": 64, "compute_factor": 1.2}])"}),
                    Contains("/sim/slow_ranks/0/rank"));
  CHECK_THROWS_WITH(load({"sim.rank_mode=per_rank", R"(sim.jitter={"cv": 0.1, "distribution": "uniform"})"}),
                    Contains("/sim/jitter/distribution"));
  const Report j1 = run(load({"sim.rank_mode=per_rank", R"(sim.jitter={"cv": 0.05, "seed": 1})"}));
  const Report j2 = run(load({"sim.rank_mode=per_rank", R"(sim.jitter={"cv": 0.05, "seed": 1})"}));
  CHECK(j1.step_time_s == j2.step_time_s);
  CHECK(j1.per_rank.spread_s >= 0);
  CHECK(j1.per_rank.straggler_cost_s > 0);  // the slowest of 64 jittered ranks sets the pace
}

TEST_CASE("chrome trace of the default scenario is valid trace-event JSON", "[trace]") {
  SimulatedStep kept;
  run(load({}), kept);
  sim::ChromeTraceOptions o;
  o.stream_names = {"compute", "communication"};
  o.counter_names = {"activations_bytes", "buffers_bytes"};
  const auto doc = nlohmann::json::parse(sim::chrome_trace_json(kept.step.graph, *kept.timeline, o));
  REQUIRE(doc.at("traceEvents").is_array());
  std::size_t complete = 0, counters = 0, flows_s = 0, flows_f = 0;
  std::set<std::uint64_t> ids;
  for (const auto& e : doc["traceEvents"]) {
    REQUIRE(e.contains("ph"));
    REQUIRE(e.contains("pid"));
    const auto ph = e["ph"].get<std::string>();
    if (ph == "X") {
      ++complete;
      REQUIRE(e["name"].is_string());
      REQUIRE(e["ts"].is_number());
      REQUIRE(e["dur"].is_number());
      REQUIRE(e["dur"].get<double>() >= 0);
      REQUIRE(e["pid"] == 0);
      REQUIRE((e["tid"] == 0 || e["tid"] == 1));
      for (const char* k : {"layer", "bytes", "flops", "id"}) REQUIRE(e["args"].contains(k));
      ids.insert(e["args"]["id"].get<std::uint64_t>());
      const auto id = static_cast<sim::TaskId>(e["args"]["id"].get<std::uint64_t>());
      CHECK(e["name"] == kept.step.graph.task(id).name);
      CHECK(e["ts"].get<double>() == Approx((*kept.timeline)[id].start.seconds() * 1e6).epsilon(1e-12));
    } else if (ph == "C") {
      ++counters;
      REQUIRE(e["args"].contains("activations_bytes"));
      REQUIRE(e["args"].contains("buffers_bytes"));
    } else if (ph == "s") {
      ++flows_s;
    } else if (ph == "f") {
      ++flows_f;
      CHECK(e["bp"] == "e");
    } else {
      REQUIRE(ph == "M");
    }
  }
  CHECK(complete == kept.step.graph.size());  // one event per task
  CHECK(ids.size() == complete);
  CHECK(counters > 0);
  CHECK(flows_s == flows_f);
  CHECK(flows_s > 0);  // gradient hooks -> AllReduce cross streams
}

TEST_CASE("chrome trace of a per_rank run: selected ranks and rendezvous arrows", "[trace]") {
  SimulatedStep kept;
  run(load({"parallelism.dp=8", "cluster.nodes=1", "sim.rank_mode=per_rank",
            R"(sim.slow_ranks=[{"rank": 3, "compute_factor": 1.2}])"}),
      kept);
  sim::ChromeTraceOptions o;
  o.copies = kept.copies;
  o.ranks = {0, 3};
  o.dependency_flows = false;
  const auto doc = nlohmann::json::parse(sim::chrome_trace_json(kept.step.graph, *kept.timeline, o));
  std::map<int, std::size_t> per_pid;
  std::size_t rendezvous = 0;
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] == "X") ++per_pid[e["pid"].get<int>()];
    if (e["ph"] == "s") {
      CHECK(e["pid"] == 3);  // the slow rank binds rank 0
      CHECK(e["cat"] == "rendezvous");
      ++rendezvous;
    }
  }
  CHECK(per_pid == std::map<int, std::size_t>{{0, kept.step.graph.size()}, {3, kept.step.graph.size()}});
  std::size_t collectives = 0;
  for (sim::TaskId v = 0; v < kept.step.graph.size(); ++v)
    collectives += kept.step.graph.task(v).rendezvous != sim::kNoRendezvous;
  CHECK(rendezvous == collectives);
}

TEST_CASE("per_rank: a step over its memory limit with variation runs its ranks side by side", "[per_rank]") {
  // A hostile trial found per_rank runs that do not fit, with any variation, forcing one rank's
  // allocation over the limit at a time (the ranks ran in series: 865 ms -> 40 s) and, with a
  // trace or report, a binding chain that looped. Each copy's memory is its own: every blocked
  // rank is admitted over its limit together, bound within its own copy.
  const std::vector<std::string> base = {"batch.micro_batch_size=4", "parallelism.dp=16", "cluster.nodes=2"};
  const Report sym = run(load(base));
  REQUIRE_FALSE(sym.memory.fits);
  auto with = base;
  with.insert(with.end(), {"sim.rank_mode=per_rank", R"(sim.jitter={"cv": 0.01, "seed": 2})"});
  SimulatedStep kept;
  const Report pr = run(load(with), kept);
  CHECK(pr.step_time_s < 1.02 * sym.step_time_s);
  CHECK(pr.step_time_s > 0.98 * sym.step_time_s);
  CHECK(pr.critical_path_tasks > 0);
  CHECK(run(load(with)).step_time_s == pr.step_time_s);  // the summary play agrees with the full one
}
