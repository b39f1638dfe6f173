// SPDX-License-Identifier: Apache-2.0
// vTrain accuracy data (../shared/data/vtrain_dp.csv): CSV reader, row → scenario mapping, error
// statistics, and malformed input.
#include "tests/support/catch.hpp"
#include "tests/support/shared_data.hpp"

#include "sim/support/error.hpp"
#include "validate/vtrain.hpp"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

using namespace stepsim;
using namespace stepsim::validate;

namespace {

// vTrain's pure-DP rows, read from ../shared/data (never copied into the project).
std::string fixture() { return stepsim::test::shared_data("vtrain_dp.csv"); }

const char* kHeader =
    "set,source_file,source_row,validation_config,model_params_billion,gpu,num_gpus,nodes,gpus_used_per_node,tp,pp,dp,"
    "zero_stage,precision,global_batch,micro_batch,grad_accum_steps_derived,hidden_size,num_layers,attention_heads,"
    "seq_len,activation_checkpointing_vtrain_cfg,iteration_time_ms";

// Writes `text` to a temporary file and returns its path.
std::string temp_csv(const std::string& name, const std::string& text) {
  const auto p = std::filesystem::temp_directory_path() / ("stepsim_vtrain_" + name + ".csv");
  std::ofstream(p) << text;
  return p.string();
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::string message_of(const std::string& path) {
  try {
    read_vtrain_csv(path);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("vtrain: the fixture has 122 rows, 2 of them multi-node") {
  if (!stepsim::test::require_data(fixture())) return;
  const auto rows = read_vtrain_csv(fixture());
  REQUIRE(rows.size() == 122);
  std::size_t multi = 0;
  for (const auto& r : rows) {
    multi += r.multi_node() ? 1 : 0;
    CHECK(r.dp * r.micro_batch * r.grad_accum == r.global_batch);
    CHECK(r.zero_stage == -1);
    CHECK(r.precision == "fp16");
    CHECK(r.checkpointing);
  }
  CHECK(multi == 2);
  const VtrainRow& first = rows.front();
  CHECK(first.line == 2);
  CHECK(first.dp == 4);
  CHECK(first.hidden == 2048);
  CHECK(first.layers == 16);
  CHECK(first.micro_batch == 2);
  CHECK(first.grad_accum == 4);
  CHECK(first.measured_s == Approx(0.406355066));
}

TEST_CASE("vtrain: a row becomes the documented scenario") {
  if (!stepsim::test::require_data(fixture())) return;
  const auto rows = read_vtrain_csv(fixture());
  const models::Scenario s = vtrain_scenario(rows.front(), fixture());
  CHECK(s.parallelism.strategy == "ddp");
  CHECK(s.parallelism.dp == 4);
  CHECK(s.cluster.nodes == 1);
  CHECK(s.cluster.gpus_per_node == 4);
  CHECK(s.batch.micro_batch_size == 2);
  CHECK(s.batch.grad_accum == 4);
  CHECK(s.batch.seq_len == 1024);
  CHECK(s.activations.recompute == models::ActivationConfig::Recompute::Full);
  CHECK_FALSE(s.activations.flash_attention);
  CHECK(s.precision.param_dtype == models::DType::FP16);
  CHECK(s.hardware.name == "a100-sxm");
  // 12·h²·L + 13·h·L (biases, two LayerNorms) + (vocab + seq)·h + 2h (final LayerNorm).
  const std::int64_t h = 2048, L = 16;
  CHECK(s.model.parameter_count() == 12 * h * h * L + 13 * h * L + (kVtrainVocab + 1024) * h + 2 * h);

  VtrainRow z = rows.front();
  z.zero_stage = 1;
  CHECK(vtrain_scenario(z, fixture()).parallelism.strategy == "zero1");
  z.zero_stage = 3;
  CHECK(vtrain_scenario(z, fixture()).parallelism.strategy == "zero3");
}

TEST_CASE("vtrain: error statistics") {
  std::vector<VtrainResult> r(3);
  r[0].rel_error = -0.3;
  r[0].row.line = 2;
  r[1].rel_error = 0.1;
  r[1].row.line = 3;
  r[2].rel_error = 0.2;
  r[2].row.line = 4;
  const ErrorStats s = error_stats(r);
  CHECK(s.count == 3);
  CHECK(s.median_abs == Approx(0.2));
  CHECK(s.mean_abs == Approx(0.2));
  CHECK(s.max_abs == Approx(0.3));
  CHECK(s.max_line == 2);
  CHECK(s.mean_signed == Approx(0.0).margin(1e-12));
  CHECK(error_stats({}).count == 0);
}

TEST_CASE("vtrain: malformed CSV names file, line, column, value and expectation") {
  const std::string good =
      "single,data/ground_truth_single.csv,7,cfg.json,,A100,4,1,4,1,1,4,,,32,2,4,2048,16,16,1024,true,406.355066";
  const std::string hdr = std::string(kHeader) + "\n";
  CHECK(has(message_of(temp_csv("bad_int", hdr + "single,f,7,c,,A100,4,1,4,1,1,4,,,32,2,4,2048,16,sixteen,1024,true,1\n")), "line 2, column "));
  CHECK(has(message_of(temp_csv("bad_int", hdr + "single,f,7,c,,A100,4,1,4,1,1,4,,,32,2,4,2048,16,sixteen,1024,true,1\n")), "(attention_heads): bad value 'sixteen'"));
  CHECK(has(message_of(temp_csv("tp", hdr + "single,f,7,c,,A100,4,1,4,2,1,4,,,32,2,4,2048,16,16,1024,true,1\n")), "(tp): bad value '2'; expected 1"));
  CHECK(has(message_of(temp_csv("ga", hdr + "single,f,7,c,,A100,4,1,4,1,1,4,,,32,2,3,2048,16,16,1024,true,1\n")), "(grad_accum_steps_derived): bad value '3'"));
  CHECK(has(message_of(temp_csv("time", hdr + "single,f,7,c,,A100,4,1,4,1,1,4,,,32,2,4,2048,16,16,1024,true,-5\n")), "(iteration_time_ms): bad value '-5'; expected a positive number"));
  CHECK(has(message_of(temp_csv("zero", hdr + "single,f,7,c,,A100,4,1,4,1,1,4,7,,32,2,4,2048,16,16,1024,true,1\n")), "(zero_stage): bad value '7'; expected an integer in [0, 3]"));
  CHECK(has(message_of(temp_csv("fields", hdr + "single,f,7\n")), "line 2: 3 fields; expected 23"));
  CHECK(has(message_of(temp_csv("quote", hdr + "\"single,f\n")), "line 2, column 1: unterminated quoted field"));
  CHECK(has(message_of(temp_csv("empty", "")), "empty file"));
  CHECK(has(message_of(temp_csv("norows", hdr)), "no data rows"));
  CHECK(has(message_of("/nonexistent/vtrain.csv"), "/nonexistent/vtrain.csv: no such file (expected a vTrain CSV (vtrain_dp.csv))"));
  // Quoted fields and CRLF line ends are accepted.
  const auto rows = read_vtrain_csv(temp_csv("quoted", hdr + "\"single\",\"data/x.csv\"" + good.substr(good.find(",7,")) + "\r\n"));
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].set == "single");
  CHECK(rows[0].measured_s == Approx(0.406355066));
}
