// SPDX-License-Identifier: Apache-2.0
// Tests of the scenario's field table (models/scenario_fields.hpp, issue 15 Part 1 item 2): each
// field declared once drives parsing, the unknown-key listing, applicability, the echo and the
// reference, and what the reference says is what parsing does.
#include "models/scenario.hpp"
#include "models/scenario_fields.hpp"
#include "models/strategy/strategy.hpp"
#include "sim/support/error.hpp"
#include "tests/support/catch.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <set>

using namespace stepsim;
using namespace stepsim::models;
using Catch::Matchers::Contains;

namespace {

Scenario scenario(const std::string& text) { return parse_scenario(nlohmann::json::parse(text), "test.json"); }

std::string error_of(const std::string& text) {
  try {
    scenario(text);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("fields: every field is declared once and can be read, echoed and documented", "[models][fields]") {
  std::set<std::string> paths;
  for (const auto& f : scenario_fields()) {
    CAPTURE(f.path());
    CHECK(paths.insert(f.path()).second);       // once
    CHECK(std::string(f.doc).size() > 5);       // documented
    const bool by_hand = f.read != nullptr || f.type == FieldType::Object || f.type == FieldType::ObjectList ||
                         f.type == FieldType::Reference || std::string(f.object).find("[]") != std::string::npos;
    if (!by_hand) {
      CHECK(f.get != nullptr);
      CHECK(f.set != nullptr);
    }
    // A default or range that depends on other fields cannot be printed from a default Scenario.
    if (f.fallback) CHECK(f.default_doc != nullptr);
    if (f.max_of) CHECK(f.range_doc != nullptr);
    if (f.type == FieldType::Choice) CHECK(f.choices != nullptr);
    if (f.knob) CHECK(std::string(f.object) == "parallelism");
  }
  CHECK(paths.size() >= 70);
}

TEST_CASE("fields: the strategies' knobs and the knob tables agree", "[models][fields]") {
  // Every knob a strategy takes is declared by some family; every declared knob is taken by one.
  // A knob that is an object (offload_optimizer) declares its own fields beside it, under
  // "parallelism.KNOB"; they apply with it.
  std::set<std::string> declared, objects, nested_parents;
  for (const auto& f : strategy_knob_fields()) {
    if (std::string(f.object) != "parallelism") {
      CAPTURE(f.path());
      CHECK_FALSE(f.knob);
      nested_parents.insert(std::string(f.object).substr(std::string("parallelism.").size()));
      continue;
    }
    if (f.type == FieldType::Object) objects.insert(f.key);
    CHECK(f.knob);
    declared.insert(f.key);
    bool taken = false;
    for (const auto& e : strategy_registry()) taken = taken || e.takes(f.key);
    CHECK(taken);
  }
  for (const auto& e : strategy_registry())
    for (const char* k : e.knobs) {
      CAPTURE(e.name, k);
      CHECK(declared.count(k) == 1);
    }
  CHECK(nested_parents == objects);
  CHECK(objects == std::set<std::string>{"offload_optimizer", "offload_param"});
  CHECK(declared.size() == 24);  // + use_distributed_optimizer, overlap_param_gather (2026-12-04)
}

TEST_CASE("fields: the reference's defaults are the ones parsing uses", "[models][fields]") {
  // Each field whose default the reference prints from the table (no default_doc) is echoed with
  // that value by a scenario that does not set it, under each strategy that takes it.
  std::size_t compared = 0;
  for (const auto& st : strategy_registry()) {
    const Scenario s = scenario(std::string(R"({"model": "llama3.2-1b", "hardware": "h100-sxm", "parallelism": {"dp": 16, "strategy": ")") +
                                st.name + R"("}})");
    const nlohmann::json& echo = *s.resolved;
    for (const auto& f : field_reference_json()) {
      const auto path = f.at("path").get<std::string>();
      const auto& field = field_at(path);
      if (field.default_doc || field.required || !field.get || std::string(field.object).empty()) continue;
      if (path == "parallelism.strategy") continue;  // set by the scenario
      const nlohmann::json ptr_target = echo.value(nlohmann::json::json_pointer("/" + std::string(field.object) + "/" + field.key),
                                                   nlohmann::json());
      if (ptr_target.is_null()) continue;  // not echoed here (another strategy's knob, an fp32-only field)
      CAPTURE(st.name, path, ptr_target.dump());
      const auto printed = f.at("default").get<std::string>();
      const std::string echoed = ptr_target.is_string() ? ptr_target.get<std::string>()
                                 : ptr_target.is_number_float() ? fmt::format("{:g}", ptr_target.get<double>())
                                                                : ptr_target.dump();
      CHECK(echoed == printed);
      ++compared;
    }
  }
  CHECK(compared >= 90);  // 98 when written: 6 strategies × their knobs and the common fields
}

TEST_CASE("fields: the reference rows carry what users look up", "[models][fields]") {
  const auto ref = field_reference_json();
  const auto row = [&ref](const std::string& path) {
    for (const auto& r : ref)
      if (r.at("path") == path) return r;
    FAIL("no row " << path);
    return ref.at(0);
  };
  // PyTorch's reducer.hpp kDefaultBucketBytesCap = 25 MiB; DDP only.
  const auto bucket = row("parallelism.bucket_cap_mb");
  CHECK(bucket.at("default") == "25");
  CHECK(bucket.at("unit") == "MiB");
  CHECK(bucket.at("applies_to") == nlohmann::ordered_json::array({"ddp"}));
  CHECK(bucket.at("range") == "> 0");
  // DeepSpeed zero/config.py: overlap_comm defaults on for stage 3 only.
  CHECK(row("parallelism.overlap_comm").at("default") == "true for zero3, false for zero1 and zero2");
  CHECK(row("parallelism.stage3_max_live_parameters").at("applies_to") == nlohmann::ordered_json::array({"zero3"}));
  CHECK(row("parallelism.sync_every_micro_batch").at("applies_to") == nlohmann::ordered_json::array({"ddp", "fsdp", "hsdp"}));
  CHECK(row("parallelism.dp").at("required") == true);
  CHECK(row("sim.cuda_device_max_connections").at("range") == "[1, 32]");
  CHECK(row("activations.recompute").at("values").size() == 5);
  CHECK(row("framework.host_op_s").at("type") == "number or string with units");
  CHECK(row("sim.slow_ranks[].rank").at("range") == "[0, dp × tp × cp × pp − 1]");  // every world rank, PP stages too
  const std::string md = field_reference_markdown();
  CHECK_THAT(md, Contains("## `parallelism`"));
  CHECK_THAT(md, Contains("| `parallelism.reduce_bucket_size` | number (elements) | 5e+08 | > 0 | zero1, zero2, zero3 |"));
}

TEST_CASE("fields: unknown keys list every field of their object", "[models][fields]") {
  const std::string base = R"({"model": "llama3.2-1b", "hardware": "h100-sxm", "parallelism": {"dp": 8}, )";
  CHECK_THAT(error_of(base + R"("batch": {"seq_length": 8}})"),
             Contains("unknown key 'seq_length' (did you mean 'seq_len'?); known keys here: micro_batch_size, seq_len, "
                      "grad_accum"));
  // A field read only under some settings (ac_freq) is still a known key, with its "did you mean".
  CHECK_THAT(error_of(base + R"("activations": {"ac_frq": 2}})"), Contains("did you mean 'ac_freq'?"));
  // Every knob of every strategy is known under parallelism; one that does not apply is refused by name.
  CHECK_THAT(error_of(R"({"model": "llama3.2-1b", "hardware": "h100-sxm", "parallelism": {"dp": 8, "bucket_cap_mbb": 5}})"),
             Contains("did you mean 'bucket_cap_mb'?"));
  CHECK_THAT(error_of(R"({"model": "llama3.2-1b", "hardware": "h100-sxm", "parallelism": {"dp": 8, "strategy": "fsdp", "bucket_cap_mb": 5}})"),
             Contains("'bucket_cap_mb' does not apply to strategy 'fsdp' (it applies to: ddp)"));
  CHECK_THAT(error_of(base + R"("sim": {"jitter": {"cv": 0.1, "sed": 3}}})"),
             Contains("/sim/jitter/sed: unknown key 'sed' (did you mean 'seed'?)"));
  CHECK_THAT(error_of(base + R"("sim": {"rank_mode": "per_rank", "slow_ranks": [{"rank": 8, "compute_factor": 2}]}})"),
             Contains("/sim/slow_ranks/0/rank: expected an integer in [0, 7], got 8"));
}
