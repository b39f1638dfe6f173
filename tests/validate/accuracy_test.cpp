// SPDX-License-Identifier: Apache-2.0
// `stepsim accuracy` over the public measured sets (issue 14 item 1): the set files, their
// parsing and errors, and the CI guard on each built-in set's median |error|.
#include "sim/support/error.hpp"
#include "tests/support/catch.hpp"
#include "tests/support/shared_data.hpp"
#include "validate/accuracy.hpp"
#include "models/error_band.hpp"
#include "models/report.hpp"
#include "hardware/calibration.hpp"

#include <algorithm>

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <iostream>

#include <map>

using namespace stepsim;
using namespace stepsim::validate;
using namespace stepsim::test;
using Catch::Matchers::Contains;

namespace {

nlohmann::json small_set() {
  return nlohmann::json::parse(R"({
    "name": "tiny", "description": "two rows", "sources": ["test"], "metric": "tokens_per_s_per_gpu",
    "defaults": {"model": "llama3.2-1b", "hardware": "h100-sxm", "parallelism": {"strategy": "fsdp", "dp": 8},
                 "batch": {"seq_len": 2048}},
    "rows": [
      {"id": "a", "source": "made up", "scenario": {}, "measured": 10000},
      {"id": "b", "source": "made up", "scenario": {"batch": {"micro_batch_size": 2}}, "measured": 10000},
      {"id": "c", "source": "made up", "scenario": {}, "measured": 5, "requires": "a feature"}
    ]})");
}

std::string error_of(const nlohmann::json& doc) {
  try {
    parse_accuracy_set(doc, "set.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("accuracy: a set's rows run over its defaults; the error is on step time", "[validate][accuracy]") {
  const AccuracySet set = parse_accuracy_set(small_set(), "set.json");
  REQUIRE(set.rows.size() == 3);
  CHECK(set.rows[1].scenario["batch"]["micro_batch_size"] == 2);
  CHECK(set.rows[1].scenario["batch"]["seq_len"] == 2048);  // merged over the defaults
  const AccuracySetResult r = run_accuracy_set(set, 1);
  REQUIRE(r.rows.size() == 3);
  CHECK(r.stats.count == 2);
  CHECK_FALSE(r.rows[2].simulated);
  for (std::size_t i = 0; i < 2; ++i) {
    const auto& row = r.rows[i];
    CAPTURE(row.id);
    // tokens/s/GPU: measured step = tokens per GPU step / measured throughput.
    const double tokens = 2048.0 * static_cast<double>(i + 1);
    CHECK(row.measured_step_s == Approx(tokens / 10000));
    CHECK(row.predicted == Approx(tokens / row.predicted_step_s));
    CHECK(row.rel_error == Approx(row.predicted_step_s / row.measured_step_s - 1));
    CHECK(row.rel_error == Approx(10000 / row.predicted - 1));
  }
  CHECK(r.rows[0].fit_split);
  CHECK_FALSE(r.rows[1].fit_split);
  CHECK(r.check_stats.count == 1);
  const auto j = accuracy_json({r});
  CHECK(j["sets"][0]["rows"] == 3);
  CHECK(j["sets"][0]["simulated"] == 2);
  CHECK(j["sets"][0]["rows_detail"][1]["split"] == "check");
  CHECK(j["sets"][0]["rows_detail"][2]["requires"] == "a feature");
  CHECK(j["sets"][0]["median_abs_error"].get<double>() == Approx(r.stats.median_abs));
  CHECK_THAT(accuracy_text({r}), Contains("not simulated: a feature") && Contains("tiny"));
}

TEST_CASE("accuracy: a bad set file names the field and what was expected", "[validate][accuracy]") {
  auto doc = small_set();
  doc["rows"][1]["id"] = "a";
  CHECK_THAT(error_of(doc), Contains("/rows/1/id") && Contains("already the id"));
  doc = small_set();
  doc["rows"][0]["measured"] = 0;
  CHECK_THAT(error_of(doc), Contains("/rows/0/measured"));
  doc = small_set();
  doc["metric"] = "tflops";
  CHECK_THAT(error_of(doc), Contains("/metric"));
  doc = small_set();
  doc["rows"][0].erase("scenario");
  CHECK_THAT(error_of(doc), Contains("/rows/0/scenario"));
  doc = small_set();
  doc["rows"][0]["scenario"] = "llama";
  CHECK_THAT(error_of(doc), Contains("expected a scenario object"));
  doc = small_set();
  doc["rows"][0]["measurd"] = 1;
  CHECK_THAT(error_of(doc), Contains("measurd"));
  // A row whose scenario stepsim refuses names the set and the row.
  doc = small_set();
  doc["rows"][0]["scenario"] = nlohmann::json::parse(R"({"parallelism": {"dp": 0}})");
  try {
    run_accuracy_set(parse_accuracy_set(doc, "set.json"), 1);
    FAIL("expected an InputError");
  } catch (const InputError& e) {
    CHECK_THAT(std::string(e.what()), Contains("set.json row 'a'") && Contains("/parallelism/dp"));
  }
  CHECK_THROWS_WITH(load_accuracy_set("no-such-set"), Contains("unknown accuracy set 'no-such-set'") && Contains("torchtitan"));
}

namespace {

// The two tests that simulate every row of every set take half a minute in the Release build and
// tens of minutes under AddressSanitizer (the megatron set's 1T / 530B pipelines): under
// tools/check-sanitize.sh (which exports ASAN_OPTIONS) they say so and step aside; the README's
// Release pass runs them in full, and the other accuracy tests run the same code under ASan.
bool skip_under_sanitizer() {
  if (std::getenv("ASAN_OPTIONS") == nullptr) return false;
  std::cout << "SKIPPED: every row of every set under AddressSanitizer (the Release pass runs it)\n";
  return true;
}

}  // namespace

TEST_CASE("accuracy: every built-in set stays under its guard (issue 14 item 1)", "[validate][accuracy]") {
  // The guards are each set's median |error| when it was reached plus one point
  // (docs/accuracy.md): lower them as the model improves, never raise them to let a change in.
  // vtrain's guard lives in accuracy.vtrain_median (it reads ../shared/data).
  // A set none of whose rows stepsim can simulate yet has no guard (-1): once one becomes
  // simulatable, this test asks for its guard.
  if (skip_under_sanitizer()) return;
  const std::map<std::string, double> guards = {
      // 16.5 % on all 46 rows (2026-12-05): Megatron-LM's MP_1x16x1 and MP_1x32x1 joined once TP
      // groups could span whole nodes (-34.4 %, -45.8 %: the one EDR NIC carrying 8 GPUs' TP
      // AllReduces, its PCIe/SMP path not modelled); before them 15.2 % on 44.
      // 17.0 % on 21 simulated rows (2026-12-03): V100's GEMM curve and FP32 peak took it to 15.4 %
      // (the 8 fp32 BERT rows joined), then the host model that lets the CPU launch ahead within a
      // layer (hardware::kernel_work_time_s; vTrain 9.7 -> 4.5 %) cost it 1.6 points: the per-kernel
      // launch bound had slowed its GPU-bound rows by accident. Before: 31.8 % on 13 rows.
      // 16.6 % on all 33 rows (2026-12-02): the 12 ResNet-50 rows joined (fp32 within 8.2 %, NGC AMP
      // -30 ... -38 %, as AMP BERT).
      {"dlperf", 0.176},
      {"llm-foundry", 0.075},
      // 5.6 % on 29 rows (2026-12-04): the README's 175B iteration time joined (-11.2 %).
      // 5.2 % on all 28 rows (2026-12-04): Megatron-Core's 9 H100 rows joined with Megatron-LM's
      // distributed optimizer (parallelism.use_distributed_optimizer, overlap_param_gather).
      // Before: 4.8 % on 19 rows (issue 15 item 9): Korthikanti et al.'s A100 iteration times and
      // the 2021 A100 table.
      {"megatron", 0.062},        // 6.5 % on 209 simulated rows (2026-12-02, Hopper GEMM curve; 7.1 % before it,
                                     // 19.4 % before the attention kernels)
      // 15.5 % on 44 rows (2026-12-02): the torchvision ResNets as implicit-GEMM convolutions with
      // split-K weight gradients and SGD; ResNet-50/101 within 12.7 %, ResNeXt's grouped convs
      // 18-31 % too fast (docs/accuracy.md). Before: no convolutional model, no row simulated.
      {"pytorch-ddp-bench", 0.165},
      // Before: 10.7 % on 12 simulated rows (2026-12-02): the H100 rows on profile h100-hbm2e-500w (Grand
      // Teton: 2.4 TB/s HBM2e, 1400 of 1830 MHz chosen on the even rows). Before: 13.4 %; eager
      // PyTorch's op-by-op kernels (issue 14 item 3)
      // took the 10 rows from 21.1 % to 12.5 %, then the 2 torch.compile rows joined (-26, -28 %).
      // Before: 21.1 % when the 7 selective-AC rows had just become simulatable; 16.1 % on the 3 rows
      // simulated before that, 15.3 % before FlashAttention-2's table.
      // 8.3 % on 17 rows (2026-12-03): the 5 float8 rows joined (issue 14 item 5), within 8.3 %.
      {"torchtitan", 0.093},
  };
  REQUIRE_FALSE(detail::embedded_accuracy_sets().empty());
  for (const auto& f : detail::embedded_accuracy_sets()) {
    CAPTURE(f.name);
    const auto guard = guards.find(f.name);
    REQUIRE(guard != guards.end());  // a new set comes with its guard
    const AccuracySetResult r = run_accuracy_set(load_accuracy_set(f.name));
    if (guard->second < 0) {
      CHECK(r.stats.count == 0);
    } else {
      REQUIRE(r.stats.count > 0);
      CHECK(r.stats.median_abs <= guard->second);
    }
    for (const auto& row : r.rows) {
      CAPTURE(row.id);
      CHECK_FALSE(row.source.empty());
      if (!row.simulated) CHECK_FALSE(row.unsupported.empty());
    }
  }
}

TEST_CASE("accuracy: the error bands reports print are those the sets give now (issue 14 item 6)", "[validate][accuracy]") {
  // models/error_bands.inc is what `stepsim accuracy --bands` printed; a model change that moves
  // the sets must regenerate it (the band a report shows is then the truth of this build).
  if (skip_under_sanitizer()) return;
  const std::string csv = shared_data("vtrain_dp.csv");
  if (!require_data(csv)) return;
  std::vector<AccuracySetResult> sets;
  for (const auto& f : detail::embedded_accuracy_sets()) sets.push_back(run_accuracy_set(load_accuracy_set(f.name)));
  sets.push_back(vtrain_set_result(vtrain_accuracy(csv)));
  std::sort(sets.begin(), sets.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  const auto fresh = compute_error_bands(sets);
  const auto& built = models::error_bands();
  REQUIRE(fresh.size() == built.size());
  for (std::size_t i = 0; i < fresh.size(); ++i) {
    CAPTURE(fresh[i].set, fresh[i].kind.family, fresh[i].kind.sharded);
    CHECK(built[i].set == fresh[i].set);
    CHECK(built[i].kind == fresh[i].kind);
    CHECK(built[i].rows == fresh[i].rows);
    CHECK(built[i].p10 == Approx(fresh[i].p10).margin(1e-4));
    CHECK(built[i].median == Approx(fresh[i].median).margin(1e-4));
    CHECK(built[i].p90 == Approx(fresh[i].p90).margin(1e-4));
  }
  CHECK(models::quantile({1, 2, 3, 4}, 0.5) == Approx(2.5));
  CHECK(models::quantile({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, 0.1) == Approx(2));
}

TEST_CASE("accuracy: --set overrides every row's scenario (what-if runs, issue 14)", "[validate][accuracy]") {
  const AccuracySet set = load_accuracy_set("torchtitan");
  const AccuracySetResult base = run_accuracy_set(set);
  const AccuracySetResult flat = run_accuracy_set(set, 0, {"sim.gemm_model=flat"});
  REQUIRE(base.rows.size() == flat.rows.size());
  std::size_t moved = 0;
  for (std::size_t i = 0; i < base.rows.size(); ++i) {
    CAPTURE(base.rows[i].id);
    CHECK(base.rows[i].simulated == flat.rows[i].simulated);
    if (base.rows[i].simulated && base.rows[i].predicted_step_s != flat.rows[i].predicted_step_s) ++moved;
  }
  CHECK(moved == base.stats.count);  // every simulated row has a GEMM curve to drop (A100, H100)
  // The same override twice gives the same bytes; a bad one names the set, the row and itself.
  CHECK(run_accuracy_set(set, 0, {"sim.gemm_model=flat"}).rows[0].predicted_step_s == flat.rows[0].predicted_step_s);
  // (refused by every row, it is refused once the sets have run: check_overrides_apply)
  CHECK_THROWS_WITH(check_overrides_apply({run_accuracy_set(set, 0, {"activations.recompute=bogus"})}),
                    Contains("torchtitan.json row 'd1-t1-llama3.1-8b-8xh100-fsdp-eager' (--set activations.recompute=bogus)") &&
                        Contains("/activations/recompute"));
}

TEST_CASE("accuracy: a calibrated run reports its calibration's residuals (issue 14 item 6)", "[validate][accuracy]") {
  models::Scenario s = models::load_scenario(std::string(STEPSIM_SOURCE_DIR) + "/configs/examples/default.json",
                                             {"hardware=a100-sxm"});
  CHECK_FALSE(models::calibration_band_for(s).present());
  auto overlay = std::make_shared<hardware::CalibrationOverlay>();
  overlay->name = "cal.json";
  overlay->hardware = "a100-sxm";
  overlay->gemm = hardware::GemmCalibration{};
  overlay->gemm->curve = s.hardware.gemm_curve;
  overlay->gemm->points = 12;
  overlay->gemm->max_residual = 0.04;
  hardware::CalibrationTable t;
  t.segments = {hardware::CalibrationSegment{0, 1e6, 1, 1, 5, 0.06}, hardware::CalibrationSegment{1e6, 1e9, 1, 1, 7, 0.02}};
  overlay->tables = {t};
  s.calibration = overlay;
  const models::CalibrationBand b = models::calibration_band_for(s);
  CHECK(b.overlay == "cal.json");
  CHECK(b.points == 24);          // 12 GEMMs + 5 + 7 collective sizes
  CHECK(b.max_residual == 0.06);  // the worst of them
  CHECK(b.real_over_predicted_low() == Approx(1 / 1.06));
  CHECK(b.real_over_predicted_high() == Approx(1 / 0.94));
  // The report shows it in place of the set's band, and keeps the set's band for the rest.
  s.collective_model = hardware::CollectiveModel::AlphaBeta;
  const std::string text = models::report_text(models::run(s));
  CHECK_THAT(text, Catch::Matchers::Contains("calibrated (cal.json): its fits reproduce their 24 measured points within 6.0 %"));
  CHECK_THAT(text, Catch::Matchers::Contains("what it does not price keeps the nominal band"));
}

TEST_CASE("accuracy: an override with nothing to act on in a row leaves that row as built", "[validate][accuracy]") {
  // dlperf holds transformers and ResNets: framework.implementation acts on the first only.
  const AccuracySetResult built = run_accuracy_set(load_accuracy_set("dlperf"));
  const AccuracySetResult compiled = run_accuracy_set(load_accuracy_set("dlperf"), 1, {"framework.implementation=compile"});
  REQUIRE(built.rows.size() == compiled.rows.size());
  std::size_t kept = 0, moved = 0;
  for (std::size_t i = 0; i < built.rows.size(); ++i) {
    CAPTURE(built.rows[i].id);
    const bool resnet = built.rows[i].id.find("resnet") != std::string::npos;
    CHECK(compiled.rows[i].override_not_applicable == resnet);
    if (resnet) {
      CHECK(compiled.rows[i].predicted_step_s == built.rows[i].predicted_step_s);
      ++kept;
    } else if (compiled.rows[i].predicted_step_s != built.rows[i].predicted_step_s) {
      ++moved;
    }
  }
  CHECK(kept == 12);
  CHECK(moved > 0);
  // A set none of whose rows can take the override keeps them all as built; with no other set
  // taking it, the override is refused (check_overrides_apply, as `stepsim accuracy` runs it).
  const AccuracySetResult none = run_accuracy_set(load_accuracy_set("pytorch-ddp-bench"), 1, {"framework.implementation=compile"});
  for (const auto& row : none.rows) CHECK(row.override_not_applicable);
  REQUIRE(none.override_refusal.has_value());
  CHECK_THROWS_WITH(check_overrides_apply({none}), Contains("/framework/implementation"));
  CHECK_NOTHROW(check_overrides_apply({none, compiled}));
}
