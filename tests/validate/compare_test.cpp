// SPDX-License-Identifier: Apache-2.0
// MEASURED.json reader and `stepsim compare` on the hand-made fixture
// (tests/fixtures/measured/, written by make_measured.py).
#include "tests/support/catch.hpp"

#include "models/scenario.hpp"
#include "sim/support/error.hpp"
#include "validate/compare.hpp"
#include "validate/measured_timeline.hpp"

#include <fstream>
#include <sstream>

using namespace stepsim;
using namespace stepsim::validate;

namespace {

std::string fixture(const std::string& name) {
  return std::string(STEPSIM_SOURCE_DIR) + "/tests/fixtures/measured/" + name;
}

std::string fixture_text() {
  std::ifstream in(fixture("mlp_2gpu.json"));
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

/// The fixture with the first occurrence of `from` replaced by `to`.
std::string edited(const std::string& from, const std::string& to) {
  std::string t = fixture_text();
  const auto pos = t.find(from);
  REQUIRE(pos != std::string::npos);
  return t.replace(pos, from.size(), to);
}

std::string error_of(const std::string& text) {
  try {
    parse_measured_timeline(text, "m.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("measured timeline: the fixture reads back", "[validate][measured]") {
  const MeasuredTimeline m = read_measured_timeline(fixture("mlp_2gpu.json"));
  CHECK(m.config.layers == 2);
  CHECK(m.config.hidden == 1024);
  CHECK(m.config.ranks == 2);
  CHECK(m.buckets.size() == 4);
  REQUIRE(m.iterations.size() == 2);
  REQUIRE(m.iterations[0].ranks.size() == 2);
  const auto& tasks = m.iterations[0].ranks[0].tasks;
  REQUIRE(tasks.size() == 12);
  CHECK(tasks[0].name == "fwd.layers.0");
  CHECK(tasks[0].phase == MeasuredPhase::Forward);
  CHECK(tasks[0].kernels.size() == 3);
  CHECK(tasks.back().name == "optimizer.adam");
  CHECK(m.environment.device == "NVIDIA H200");
}

TEST_CASE("measured timeline: phases of one rank", "[validate][measured]") {
  const MeasuredTimeline m = read_measured_timeline(fixture("mlp_2gpu.json"));
  const PhaseTimes p = phase_times(m.iterations[0].ranks[0].tasks);  // scale 1 (make_measured.py)
  CHECK(p.forward_s == Approx(0.40e-3));
  CHECK(p.backward_s == Approx(0.88e-3));
  CHECK(p.comm_s == Approx(0.24e-3));
  // Only the last bucket's AllReduce (after the last backward segment) is exposed.
  CHECK(p.exposed_comm_s == Approx(0.06e-3));
  CHECK(p.overhead_s == Approx(0.02e-3));
  CHECK(p.optimizer_s == Approx(0.14e-3));
  CHECK(p.step_s == Approx(1.50e-3));
}

TEST_CASE("measured timeline: median over iterations of the mean over ranks", "[validate][measured]") {
  const PhaseTimes p = measured_phase_times(read_measured_timeline(fixture("mlp_2gpu.json")));
  // Rank r and iteration i scale compute by (1 + 0.02 r)(1 + 0.01 i); two iterations: the mean.
  CHECK(p.forward_s == Approx(0.5 * (0.404e-3 + 0.404e-3 * 1.01)));
  CHECK(p.exposed_comm_s == Approx(0.06e-3));
  // Step: the slowest rank (r = 1): 1.44 ms × scale + 0.06 ms of exposed AllReduce.
  CHECK(p.step_s == Approx(0.5 * ((1.44e-3 * 1.02 + 0.06e-3) + (1.44e-3 * 1.02 * 1.01 + 0.06e-3))));
}

TEST_CASE("measured timeline: bad input names file, path, value and expectation", "[validate][measured]") {
  CHECK_THAT(error_of(edited("stepsim.measured/1", "stepsim.report/1")),
             Catch::Contains("m.json: /schema: expected \"stepsim.measured/1\""));
  CHECK_THAT(error_of(edited("\"phase\": \"forward\"", "\"phase\": \"fwd\"")),
             Catch::Contains("/iterations/0/ranks/0/tasks/0/phase"));
  CHECK_THAT(error_of(edited("\"ranks\": 2", "\"ranks\": 3")), Catch::Contains("expected 3 ranks"));
  CHECK_THAT(error_of(edited("\"stream\": \"compute\"", "\"stream\": \"compute\", \"colour\": 1")),
             Catch::Contains("unknown key 'colour'"));
  CHECK_THAT(error_of(edited("\"name\": \"fwd.layers.1\"", "\"name\": \"fwd.layers.0\"")),
             Catch::Contains("duplicate task name 'fwd.layers.0'"));
  CHECK_THAT(error_of(edited("\"start_s\": 0.0,", "\"start_s\": -1,")), Catch::Contains("start_s"));
  CHECK_THAT(error_of("{"), Catch::Contains("m.json:"));
  CHECK_THROWS_AS(read_measured_timeline(fixture("missing.json")), InputError);
}

TEST_CASE("compare: the fixture against its scenario", "[validate][compare]") {
  const models::Scenario s = models::load_scenario(fixture("mlp_2gpu_scenario.json"), {});
  const Comparison c = compare(s, read_measured_timeline(fixture("mlp_2gpu.json")));
  CHECK(c.warnings.empty());
  CHECK(c.predicted_only.empty());
  CHECK(c.measured_only.empty());
  CHECK(c.tasks.size() == 12);
  REQUIRE(c.phases.size() == 7);
  CHECK(c.phases[0].name == "forward");
  CHECK(c.phases[6].name == "step");
  for (const CompareRow& r : c.phases) {
    INFO(r.name);
    CHECK(r.measured_s > 0);
    CHECK(r.predicted_s > 0);
    CHECK(r.rel_error == Approx((r.predicted_s - r.measured_s) / r.measured_s));
  }
  const std::string text = comparison_text(c, true);
  CHECK_THAT(text, Catch::Contains("exposed comm"));
  CHECK_THAT(text, Catch::Contains("allreduce.bucket3"));
}

TEST_CASE("compare: a scenario that differs from the run is flagged", "[validate][compare]") {
  const models::Scenario s =
      models::load_scenario(fixture("mlp_2gpu_scenario.json"), {"parallelism.bucket_cap_mb=25", "parallelism.dp=8"});
  const Comparison c = compare(s, read_measured_timeline(fixture("mlp_2gpu.json")));
  std::string all;
  for (const auto& w : c.warnings) all += w + "\n";
  CHECK_THAT(all, Catch::Contains("parallelism.dp: scenario 8, measured run 2"));
  CHECK_THAT(all, Catch::Contains("parallelism.bucket_cap_mb: scenario 25, measured run 4"));
  CHECK(relative_error(1, 0) == std::numeric_limits<double>::infinity());
  CHECK(relative_error(0, 0) == 0);
}
