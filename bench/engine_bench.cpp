// SPDX-License-Identifier: Apache-2.0
// Google Benchmark: engine throughput (events/s), replicated (per_rank) runs, and whole
// scenario runs in symmetric mode at 8 and 16,384 ranks. Figures, not tests (tools/bench.sh).
#include "models/report.hpp"
#include "models/scenario.hpp"
#include "sim/engine.hpp"
#include "sim/replicate.hpp"
#include "sim/task_graph.hpp"

#include <benchmark/benchmark.h>

#include <string>

namespace {

using namespace stepsim;

class FixedCost final : public sim::TaskCostModel {
 public:
  sim::Time duration(const sim::Task& t) const override { return sim::Time::from_ps(static_cast<std::int64_t>(t.fixed_s)); }
};

// A training-step-shaped graph: `layers` compute tasks on stream 0, every 8th followed by a
// collective on stream 1 that waits for it; the last compute task waits for the last collective.
sim::TaskGraph step_graph(std::size_t layers) {
  sim::TaskGraph g;
  sim::RendezvousId next = 0;
  sim::TaskId last_coll = sim::kNoTask;
  for (std::size_t i = 0; i < layers; ++i) {
    sim::Task c;
    c.name = "c";
    c.fixed_s = 1000 + static_cast<double>(i % 7) * 100;  // ps
    const auto id = g.add_task(c);
    if (i % 8 == 7) {
      sim::Task x;
      x.name = "x";
      x.kind = sim::TaskKind::Transfer;
      x.stream = 1;
      x.fixed_s = 3000;
      x.rendezvous = next++;
      last_coll = g.add_task(x);
      g.add_dependency(id, last_coll);
    }
  }
  sim::Task tail;
  tail.name = "tail";
  const auto t = g.add_task(tail);
  if (last_coll != sim::kNoTask) g.add_dependency(last_coll, t);
  g.freeze("bench");
  return g;
}

void BM_EngineEvents(benchmark::State& state) {
  const sim::TaskGraph g = step_graph(static_cast<std::size_t>(state.range(0)));
  std::uint64_t events = 0;
  for (auto _ : state) {
    const sim::Timeline tl = sim::run(g, FixedCost());
    events += tl.events();
    benchmark::DoNotOptimize(tl.makespan());
  }
  state.counters["events_per_s"] = benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_EngineEvents)->Arg(1 << 20)->Unit(benchmark::kMillisecond);

void BM_ReplicatedEvents(benchmark::State& state) {
  const sim::TaskGraph g = step_graph(1024);
  const auto copies = static_cast<std::uint32_t>(state.range(0));
  std::uint64_t events = 0;
  for (auto _ : state) {
    const sim::Timeline tl = sim::run_replicated(g, copies, {}, FixedCost(), sim::RankVariation{});
    events += tl.events();
    benchmark::DoNotOptimize(tl.makespan());
  }
  state.counters["events_per_s"] = benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_ReplicatedEvents)->Arg(1024)->Unit(benchmark::kMillisecond);

// Whole `run()` of the 70B FSDP example in symmetric mode at a given DP degree.
void BM_SymmetricRun(benchmark::State& state) {
  const std::string path = std::string(STEPSIM_SOURCE_DIR) + "/configs/examples/llama3-70b-fsdp-256xh100.json";
  const auto s = models::load_scenario(path, {"parallelism.dp=" + std::to_string(state.range(0)), "cluster.nodes=null"});
  for (auto _ : state) benchmark::DoNotOptimize(models::run(s).step_time_s);
}
BENCHMARK(BM_SymmetricRun)->Arg(8)->Arg(16384)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
