// SPDX-License-Identifier: Apache-2.0
// One profile field without copying the profile (issue 20 item 2): {"base": NAME, fields...} in
// a scenario and `--set hardware.PATH=VALUE` over a named profile
// (hardware::parse_profile_over_base, models::apply_scenario_override).
#include "hardware/hardware_profile_json.hpp"
#include "models/report.hpp"
#include "models/scenario.hpp"
#include "sim/support/error.hpp"
#include "tests/support/catch.hpp"

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

using namespace stepsim;
using namespace stepsim::models;
using Catch::Matchers::Contains;

namespace {

nlohmann::json scenario_doc() {
  return nlohmann::json::parse(R"({"model": "resnet50", "hardware": "v100-sxm2", "cluster": {"gpus_per_node": 8, "nodes": 2},
      "parallelism": {"strategy": "ddp", "dp": 16}, "batch": {"micro_batch_size": 32}, "optimizer": "sgd"})");
}

}  // namespace

TEST_CASE("hardware override: fields merge over the base profile, every check still applies", "[hardware][override]") {
  const auto base = hardware::load_profile("v100-sxm2");
  const auto doc = nlohmann::json::parse(R"({"base": "v100-sxm2", "memory": {"hbm_bytes": "16GiB"},
      "inter_node": {"nics_per_node": 1, "gpus_per_nic": 8}})");
  const auto p = hardware::parse_profile_over_base(doc, "v100-sxm2", "s.json", "/hardware");
  CHECK(p.name == "v100-sxm2");  // the base's name unless the scenario gives one
  CHECK(p.hbm_bytes == 16.0 * (1ull << 30));
  CHECK(p.nics_per_node == 1);
  CHECK(p.gpus_per_nic == 8);
  // Untouched fields are the base's.
  CHECK(p.hbm_bandwidth_bytes_per_s == base.hbm_bandwidth_bytes_per_s);
  CHECK(p.peak_flops_per_s == base.peak_flops_per_s);
  CHECK(p.nic_bandwidth_bytes_per_s == base.nic_bandwidth_bytes_per_s);
  CHECK(p.overridden == std::vector<std::string>{"inter_node.gpus_per_nic", "inter_node.nics_per_node", "memory.hbm_bytes"});
  CHECK(base.overridden.empty());
  // Named, described: metadata is not an override.
  auto named = doc;
  named["name"] = "v100-16gb-1nic";
  named["description"] = "DLPerf's cluster";
  const auto q = hardware::parse_profile_over_base(named, "v100-sxm2", "s.json", "/hardware");
  CHECK(q.name == "v100-16gb-1nic");
  CHECK(q.overridden.size() == 3);
  // The profile's own checks, at the scenario's path.
  auto bad = doc;
  bad["memory"]["hbm_efficiency"] = 1.5;
  CHECK_THROWS_WITH(hardware::parse_profile_over_base(bad, "v100-sxm2", "s.json", "/hardware"),
                    Contains("s.json") && Contains("/hardware/memory/hbm_efficiency"));
  auto typo = doc;
  typo["memory"]["hbm_byte"] = "16GiB";
  CHECK_THROWS_WITH(hardware::parse_profile_over_base(typo, "v100-sxm2", "s.json", "/hardware"),
                    Contains("/hardware/memory") && Contains("hbm_byte") && Contains("did you mean 'hbm_bytes'"));
  CHECK_THROWS_WITH(hardware::parse_profile_over_base(doc, "v100", "s.json", "/hardware"),
                    Contains("/hardware/base") && Contains("no hardware profile 'v100'"));
}

TEST_CASE("hardware override: a scenario's base profile and --set hardware.* on a named one agree", "[models][override]") {
  auto inline_doc = scenario_doc();
  inline_doc["hardware"] = nlohmann::json::parse(R"({"base": "v100-sxm2", "inter_node": {"nics_per_node": 1, "gpus_per_nic": 8}})");
  const Scenario a = parse_scenario(inline_doc, "a.json");
  auto set_doc = scenario_doc();
  apply_scenario_override(set_doc, "hardware.inter_node.nics_per_node=1", "--set");
  apply_scenario_override(set_doc, "hardware.inter_node.gpus_per_nic=8", "--set");
  CHECK(set_doc["hardware"]["base"] == "v100-sxm2");
  const Scenario b = parse_scenario(set_doc, "b.json");
  const Report ra = run(a), rb = run(b);
  CHECK(ra.step_time_s == rb.step_time_s);
  // One NIC for 8 GPUs is slower than the base's 4 x 2: the field acted.
  const Report base = run(parse_scenario(scenario_doc(), "c.json"));
  CHECK(ra.comm_time_s > base.comm_time_s);
  // The report says what was overridden, and its echo runs again to the same step.
  CHECK_THAT(report_text(ra), Contains("hardware    profile v100-sxm2 with 2 fields set over it (scenario or --set): "
                                       "inter_node.gpus_per_nic, inter_node.nics_per_node"));
  const Report again = run(parse_scenario(*ra.scenario.resolved, "echo.json"));
  CHECK(again.step_time_s == ra.step_time_s);
  // Other --set paths on a named profile keep the name.
  auto plain = scenario_doc();
  apply_scenario_override(plain, "parallelism.dp=8", "--set");
  CHECK(plain["hardware"] == "v100-sxm2");
  // base must name a profile.
  auto bad = scenario_doc();
  bad["hardware"] = nlohmann::json::parse(R"({"base": 7})");
  CHECK_THROWS_WITH(parse_scenario(bad, "d.json"), Contains("/hardware/base") && Contains("got 7"));
}

TEST_CASE("hardware override: only changed fields are listed, the base is named, one level only", "[models][override]") {
  // A value equal to the base's, an empty object and a null over an absent key change nothing.
  const auto same = nlohmann::json::parse(R"({"base": "h100-sxm", "memory": {"hbm_bytes": "96GiB"}, "compute": {},
      "torus": null, "inter_node": {"nics_per_node": 8}})");
  const auto p = hardware::parse_profile_over_base(same, "h100-sxm", "s.json", "/hardware");
  CHECK(p.overridden == std::vector<std::string>{"memory.hbm_bytes"});
  CHECK(p.base == "h100-sxm");
  // A new name does not hide the machine: the report names the base.
  auto doc = scenario_doc();
  doc["hardware"] = nlohmann::json::parse(R"({"base": "v100-sxm2", "name": "my-v100", "memory": {"hbm_bytes": "16GiB"}})");
  const Report r = run(parse_scenario(doc, "a.json"));
  CHECK_THAT(report_text(r), Contains("hardware    profile my-v100 (over v100-sxm2) with 1 field set over it (scenario or --set): memory.hbm_bytes"));
  // --set hardware=NAME over a profile with a base changes the base, keeps its fields.
  auto set_doc = scenario_doc();
  apply_scenario_override(set_doc, "hardware.memory.hbm_bytes=16GiB", "--set");
  apply_scenario_override(set_doc, "hardware=h100-sxm", "--set");
  CHECK(set_doc["hardware"] == nlohmann::json::parse(R"({"base": "h100-sxm", "memory": {"hbm_bytes": "16GiB"}})"));
  // A base that is itself over a base is refused, naming the base file.
  const std::string chained =
      (std::filesystem::temp_directory_path() / ("stepsim-chained-base-" + std::to_string(::getpid()) + ".json")).string();
  {
    std::ofstream f(chained);
    f << R"({"base": "h100-sxm", "memory": {"hbm_bytes": "40GiB"}})";
  }
  CHECK_THROWS_WITH(hardware::parse_profile_over_base(nlohmann::json::parse(R"({"base": "x"})"), chained, "s.json", "/hardware"),
                    Contains(chained) && Contains("/base") && Contains("one level"));
  std::remove(chained.c_str());
}
