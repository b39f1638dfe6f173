// SPDX-License-Identifier: Apache-2.0
// stepsim-validate's bucket plan (validate/cuda/options.cpp, plain C++) must be stepsim's DDP
// bucketing (models/strategy/buckets.cpp) for the MLP; and its argument checking.
#include "tests/support/catch.hpp"

#include "models/strategy/buckets.hpp"
#include "validate/cuda/errors.hpp"
#include "validate/cuda/options.hpp"

#include <filesystem>
#include <string>

#include <unistd.h>

using namespace stepsim;

TEST_CASE("stepsim-validate: bucket plan equals stepsim's DDP buckets", "[validate][cuda]") {
  for (const std::int64_t layers : {1, 2, 7})
    for (const std::int64_t hidden : {64, 1000, 4096})
      for (const double cap : {0.001, 1.0, 4.0, 25.0, 100.0, 1e4})
        for (const double first : {0.5, 1.0, 30.0}) {
          validate::MlpStepOptions o;
          o.layers = layers;
          o.hidden = hidden;
          o.ffn = 4 * hidden;
          o.bucket_mb = cap;
          o.first_bucket_mb = first;
          const validate::BucketPlan plan = validate::make_bucket_plan(o);
          std::vector<models::BucketInput> inputs;
          for (const auto& t : plan.tensors) inputs.push_back({static_cast<double>(t.bytes), 1});
          const auto expect = models::assign_buckets(inputs, {first * 1048576.0, cap * 1048576.0});
          INFO(layers << " layers, hidden " << hidden << ", cap " << cap << ", first " << first);
          REQUIRE(plan.buckets.size() == expect.size());
          std::int64_t offset = 0;
          for (std::size_t b = 0; b < expect.size(); ++b) {
            CHECK(static_cast<double>(plan.buckets[b].bytes) == expect[b].bytes);
            CHECK(plan.buckets[b].count == expect[b].tensors.size());
            CHECK(plan.buckets[b].first == expect[b].tensors.front());
            CHECK(plan.buckets[b].offset_bytes == offset);
            offset += plan.buckets[b].bytes;
          }
          // Ready order: layers reversed, w_out then w_in.
          CHECK(plan.tensors.front().name == "layers." + std::to_string(layers - 1) + ".w_out");
          CHECK(plan.tensors.back().name == "layers.0.w_in");
        }
}

TEST_CASE("stepsim-validate: argument checking", "[validate][cuda]") {
  using validate::UsageError;
  const auto o = validate::parse_mlp_step({"--layers", "3", "--hidden=512", "--ffn", "2048", "--tokens", "128",
                                           "--bucket-mb", "2.5", "--grad-accum", "2", "--iters", "4", "--warmup", "1",
                                           "--out", "m.json"});
  CHECK(o.layers == 3);
  CHECK(o.hidden == 512);
  CHECK(o.bucket_mb == 2.5);
  CHECK(o.grad_accum == 2);
  CHECK_THROWS_WITH(validate::parse_mlp_step({"--layers", "0", "--out", "x"}),
                    "--layers: expected an integer in [1, 4096], got '0'");
  CHECK_THROWS_WITH(validate::parse_mlp_step({"--layers", "2"}), "mlp-step: --out MEASURED.json is required");
  CHECK_THROWS_AS(validate::parse_mlp_step({"--bucket-mb", "-1", "--out", "x"}), UsageError);
  CHECK_THROWS_AS(validate::parse_mlp_step({"--bogus", "--out", "x"}), UsageError);
  CHECK_THROWS_AS(validate::parse_mlp_step({"--layers"}), UsageError);
  CHECK(validate::parse_size("-b", "64M") == 64 << 20);
  CHECK(validate::parse_size("-b", "8") == 8);
  CHECK_THROWS_AS(validate::parse_size("-b", "1X"), UsageError);
  const auto g = validate::parse_gemm_sweep({"--hidden", "1024,2048"});
  CHECK(g.ffn == std::vector<std::int64_t>{4096, 8192});
  CHECK_THROWS_AS(validate::parse_gemm_sweep({"--hidden", "1024,2048", "--ffn", "1"}), UsageError);
  CHECK_THROWS_AS(validate::parse_collective_sweep({"--ops", "alltoall"}), UsageError);
  CHECK_THROWS_AS(validate::parse_collective_sweep({"--min-bytes", "2G", "--max-bytes", "1G"}), UsageError);
}

TEST_CASE("stepsim-validate: a bad --out is refused when parsed, before any device", "[validate][cuda]") {
  // Issue 13 item 23: the output path was checked only when writing, after the GPU probe and
  // the whole run.
  using validate::UsageError;
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("stepsim-validate-out-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string missing = (dir / "no-such-folder" / "m.json").string();
  CHECK_THROWS_WITH(validate::check_output_path("--out", dir.string()),
                    Catch::Contains("is a directory; expected a writable file path"));
  CHECK_THROWS_WITH(validate::check_output_path("--out", missing),
                    Catch::Contains("--out: '" + missing + "': folder '"));
  CHECK_THROWS_WITH(validate::check_output_path("--out", "/dev/null"), Catch::Contains("is not a regular file"));
  CHECK_THROWS_WITH(validate::check_output_path("--out", ""), Catch::Contains("empty"));
  CHECK_NOTHROW(validate::check_output_path("--out", (dir / "m.json").string()));
  // Every subcommand's --out goes through the check as it is parsed.
  CHECK_THROWS_WITH(validate::parse_mlp_step({"--layers", "2", "--out", missing}), Catch::Contains("--out: '"));
  CHECK_THROWS_WITH(validate::parse_mlp_step({"--plan-only", "--out", dir.string()}), Catch::Contains("is a directory"));
  CHECK_THROWS_WITH(validate::parse_gemm_sweep({"--out", missing}), Catch::Contains("--out: '"));
  CHECK_THROWS_WITH(validate::parse_collective_sweep({"--out", dir.string()}), Catch::Contains("is a directory"));
  // write_file_atomic (plain C++ now, used by --plan-only --out) leaves the text and no temp file.
  const fs::path plan = dir / "plan.json";
  validate::write_file_atomic(plan.string(), "{}\n");
  CHECK(fs::file_size(plan) == 3);
  CHECK_FALSE(fs::exists(plan.string() + ".tmp"));
  fs::remove_all(dir);
}
