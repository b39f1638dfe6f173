// SPDX-License-Identifier: Apache-2.0
// Calibration overlay (lookup rule, JSON round trip, application) and the segmented fit.
#include "tests/support/catch.hpp"
#include "tests/support/shared_data.hpp"

#include "hardware/calibration.hpp"
#include "hardware/calibration_json.hpp"
#include "hardware/hardware_profile_json.hpp"
#include "hardware/nccl_model.hpp"
#include "hardware/task_cost.hpp"
#include "models/report.hpp"
#include "models/scenario.hpp"
#include "models/sweep.hpp"
#include "sim/support/atomic_file.hpp"
#include "sim/support/error.hpp"
#include "validate/fit.hpp"
#include "validate/nccl_tests.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iterator>
#include <stdexcept>

using namespace stepsim;
using namespace stepsim::hardware;
using namespace stepsim::validate;


namespace {

// Hand-made fixtures (tests/fixtures/nccl/).
std::string fixture(const std::string& name) { return std::string(STEPSIM_SOURCE_DIR) + "/tests/fixtures/nccl/" + name; }
using stepsim::test::generated_nccl_log;
using stepsim::test::require_data;
using stepsim::test::shared_data;

CalibrationOverlay two_segment_overlay() {
  CalibrationOverlay o;
  o.name = "test";
  o.hardware = "h100-sxm";
  CalibrationTable t;
  t.op = CollectiveOp::AllReduce;
  t.scope = CalibrationScope::IntraNode;
  t.ranks = 8;
  t.ranks_per_node = 8;
  t.segments = {{1000, 5000, 2.0, 0.5, 3, 0.01}, {5000, 9000, 1.0, 0.8, 3, 0.02}};
  o.tables.push_back(t);
  return o;
}

}  // namespace

TEST_CASE("hardware.calibration.lookup is half-open (lo inclusive, hi exclusive), tested at lo-1, lo, hi-1, hi") {
  const auto o = two_segment_overlay();
  const GroupShape g{8, 8, 0};
  auto seg = [&](double v) { return find_calibration(o, CollectiveOp::AllReduce, g, v); };
  // lo − 1 of the first segment: below the measured range → first segment, extrapolated.
  CHECK(seg(999).segment == &o.tables[0].segments[0]);
  CHECK(seg(999).size_extrapolated);
  CHECK(seg(1000).segment == &o.tables[0].segments[0]);
  CHECK_FALSE(seg(1000).size_extrapolated);
  CHECK(seg(4999).segment == &o.tables[0].segments[0]);
  CHECK(seg(5000).segment == &o.tables[0].segments[1]);  // hi is exclusive (SimGrid's code and docs disagree here)
  CHECK(seg(8999).segment == &o.tables[0].segments[1]);
  CHECK_FALSE(seg(8999).size_extrapolated);
  CHECK(seg(9000).segment == &o.tables[0].segments[1]);
  CHECK(seg(9000).size_extrapolated);
  // Other scope: no table.
  CHECK(find_calibration(o, CollectiveOp::AllReduce, GroupShape{16, 8, 0}, 2000).table == nullptr);
  // Other op on the same links: AllReduce's table stands in (issue 13 item 8), flagged.
  const auto ag = find_calibration(o, CollectiveOp::AllGather, g, 2000);
  CHECK(ag.table == &o.tables[0]);
  REQUIRE(ag.derived_from);
  CHECK(*ag.derived_from == CollectiveOp::AllReduce);
  CHECK_FALSE(seg(2000).derived_from);
  // Other rank count in the same scope: nearest table, flagged.
  const auto m4 = find_calibration(o, CollectiveOp::AllReduce, GroupShape{4, 8, 0}, 2000);
  CHECK(m4.table == &o.tables[0]);
  CHECK(m4.ranks_extrapolated);
}

TEST_CASE("hardware.calibration.an overlay says what it covers; uncovered ops take a sibling's fit, uncovered scopes are flagged (issue 13 item 8)") {
  // Before: an AllReduce-only overlay priced FSDP's AllGathers and ReduceScatters silently with
  // the plain alpha-beta model (llama3.1-8b FSDP: comm 155.5 -> 105.1 ms, no warning).
  const auto hw = load_profile("h100-sxm");
  const auto o = two_segment_overlay();
  const GroupShape g{8, 8, 0};
  CHECK_THAT(describe_overlay(o), Catch::Matchers::Contains("covers AllReduce intra_node n=8"));
  const auto rs = calibrated_collective_cost(hw, &o, CollectiveOp::ReduceScatter, 2000, g);
  const auto rs_nom = collective_cost(hw, CollectiveOp::ReduceScatter, 2000, g);
  CHECK(rs.calibration_derived_from == "AllReduce");
  CHECK(rs.latency_s == Approx(2.0 * rs_nom.latency_s));     // the AllReduce fit's factors
  CHECK(rs.bandwidth_s == Approx(rs_nom.bandwidth_s / 0.5));
  CHECK_THAT(rs.calibration, Catch::Matchers::Contains("standing in for ReduceScatter"));
  const auto inter = calibrated_collective_cost(hw, &o, CollectiveOp::AllReduce, 2000, GroupShape{16, 8, 0});
  CHECK(inter.calibration_uncovered);
  CHECK(inter.time_s() == collective_cost(hw, CollectiveOp::AllReduce, 2000, GroupShape{16, 8, 0}).time_s());
}

TEST_CASE("hardware.calibration.a table extends to other rank counts with its fitted bandwidth and NCCL's latency change (issue 13 item 9)") {
  // Before: a 2-node fit applied at 8 nodes multiplied the α-β latency, which grows with every
  // node, by the fitted factor (33.5 MB AllReduce 0.457 -> 1.005 ms). The rule at the NICs'
  // line rate first (no fabric terms); the profile's network below.
  auto hw = load_profile("h100-sxm");
  const double fabric_latency = hw.fabric_latency_per_log2_nodes_s;
  hw.fabric_latency_per_log2_nodes_s = 0;
  hw.fabric_bandwidth_efficiency = 1;
  CalibrationOverlay o = two_segment_overlay();
  o.tables[0].scope = CalibrationScope::InterNode;
  o.tables[0].ranks = 16;
  o.tables[0].segments = {{1, 1e12, 3.0, 0.8, 10, 0.01}};
  const GroupShape fit{16, 8, 0}, big{64, 8, 0};
  const double v = 33.5e6;
  const auto at_fit = calibrated_collective_cost(hw, &o, CollectiveOp::AllReduce, v, fit);
  const auto at_big = calibrated_collective_cost(hw, &o, CollectiveOp::AllReduce, v, big);
  CHECK_FALSE(at_fit.calibration_extrapolated);
  CHECK(at_big.calibration_extrapolated);
  CHECK(at_big.bandwidth_s == Approx(collective_cost(hw, CollectiveOp::AllReduce, v, big).bandwidth_s / 0.8));
  const double nccl_moved = nccl_collective_cost(hw, CollectiveOp::AllReduce, v, big).latency_s -
                            nccl_collective_cost(hw, CollectiveOp::AllReduce, v, fit).latency_s;
  CHECK(at_big.latency_s == Approx(at_fit.latency_s + nccl_moved));
  // Far less than the fitted factor times the α-β latency at 8 nodes.
  CHECK(at_big.latency_s < 3.0 * collective_cost(hw, CollectiveOp::AllReduce, v, big).latency_s);
  // Ranks per node count in the lookup: a table at 16 ranks x 8 is an extrapolation for 16 x 2.
  CHECK(find_calibration(o, CollectiveOp::AllReduce, GroupShape{16, 2, 0}, v).ranks_extrapolated);
  // On its network (infiniband-ndr) NCCL's latency change includes the fabric's: a per doubling
  // of the node count, 2 -> 8 nodes = 2 doublings.
  const auto net = load_profile("h100-sxm");
  REQUIRE(fabric_latency > 0);
  const auto net_big = calibrated_collective_cost(net, &o, CollectiveOp::AllReduce, v, big);
  const auto net_fit = calibrated_collective_cost(net, &o, CollectiveOp::AllReduce, v, fit);
  CHECK(net_big.latency_s - net_fit.latency_s == Approx(nccl_moved + 2 * fabric_latency));
}

TEST_CASE("hardware.calibration.factors scale latency and bandwidth terms of the nominal cost") {
  const auto hw = load_profile("h100-sxm");
  const auto o = two_segment_overlay();
  const GroupShape g{8, 8, 0};
  const auto nom = collective_cost(hw, CollectiveOp::AllReduce, 2000, g);
  const auto cal = calibrated_collective_cost(hw, &o, CollectiveOp::AllReduce, 2000, g);
  CHECK(cal.latency_s == Approx(2.0 * nom.latency_s));
  CHECK(cal.bandwidth_s == Approx(nom.bandwidth_s / 0.5));
  CHECK(cal.calibration.find("[1000, 5000)") != std::string::npos);
  // No overlay: exactly the nominal model (the seeds' figures stay pinned to it).
  const auto none = calibrated_collective_cost(hw, nullptr, CollectiveOp::AllReduce, 2000, g);
  CHECK(none.time_s() == nom.time_s());
  CHECK(none.calibration.empty());
  // StepCostModel takes the overlay.
  sim::Task t;
  t.op = static_cast<std::uint32_t>(OpCode::AllReduce);
  t.bytes = 2000;
  t.group = 0;
  const StepCostModel plain(hw, {g}, CollectiveAlgorithm::Auto);
  const StepCostModel fitted(hw, {g}, CollectiveAlgorithm::Auto, std::make_shared<const CalibrationOverlay>(o));
  CHECK(plain.collective(t).time_s() == Approx(nom.time_s()));
  CHECK(fitted.collective(t).time_s() == Approx(cal.time_s()));
}

TEST_CASE("hardware.calibration.JSON round trip and bad files") {
  const auto o = two_segment_overlay();
  const auto dir = std::filesystem::temp_directory_path() / "stepsim_calibration_test";
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "overlay.json").string();
  write_file_atomically(path, calibration_json(o));
  const auto back = read_calibration(path);
  CHECK(back.name == path);
  CHECK(back.hardware == "h100-sxm");
  REQUIRE(back.tables.size() == 1);
  CHECK(back.tables[0].segments.size() == 2);
  CHECK(back.tables[0].segments[1].bandwidth_factor == 0.8);
  CHECK(back.tables[0].segments[0].hi_bytes == 5000);

  const std::string bad = (dir / "bad.json").string();
  write_file_atomically(bad, R"({"hardware": "h100-sxm", "tables": [{"op": "AllReduce", "scope": "intra_node",
    "ranks": 8, "segments": [{"lo_bytes": 0, "hi_bytes": 10, "latency_factor": 1, "bandwidth_factor": 1},
                             {"lo_bytes": 20, "hi_bytes": 30, "latency_factor": 1, "bandwidth_factor": 1}]}]})");
  CHECK_THROWS_WITH(read_calibration(bad), Catch::Matchers::Contains("/tables/0/segments/1/lo_bytes") && Catch::Matchers::Contains("contiguous"));
  write_file_atomically(bad, R"({"hardware": "h100-sxm", "tables": [{"op": "AllReduce", "scope": "intra_node",
    "ranks": 8, "segments": [{"lo_bytes": 0, "hi_bytes": 10, "latency_factr": 1, "bandwidth_factor": 1}]}]})");
  CHECK_THROWS_WITH(read_calibration(bad), Catch::Matchers::Contains("latency_factor"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("validate.fit.recovers known factors and finds the kink") {
  // Synthetic α-β data with a protocol switch at 64 KiB: below, t = 2α + V·c/0.1; above,
  // t = 1.5α + V·c/0.9. Exact data: the fit must put the boundary between the two measured
  // sizes around the switch and return the factors to 1e-6.
  const NominalLine nom{10e-6, 1.0 / 400e9};
  std::vector<Measurement> pts;
  for (double v = 1024; v <= 1 << 30; v *= 2) {
    const bool small = v <= 65536;
    const double t = small ? 2.0 * nom.alpha_s + v * nom.seconds_per_byte / 0.1
                           : 1.5 * nom.alpha_s + v * nom.seconds_per_byte / 0.9;
    pts.push_back({v, t, 0});
  }
  const auto table = fit_table(pts, nom, FitOptions{}, "synthetic");
  REQUIRE(table.segments.size() == 2);
  CHECK(table.segments[0].lo_bytes == 1024);
  CHECK(table.segments[0].hi_bytes > 65536);
  CHECK(table.segments[0].hi_bytes <= 131072);
  CHECK(table.segments[1].hi_bytes == (1 << 30) + 1.0);
  CHECK(table.segments[0].latency_factor == Approx(2.0).epsilon(1e-6));
  CHECK(table.segments[0].bandwidth_factor == Approx(0.1).epsilon(1e-6));
  CHECK(table.segments[1].latency_factor == Approx(1.5).epsilon(1e-6));
  CHECK(table.segments[1].bandwidth_factor == Approx(0.9).epsilon(1e-6));
  CHECK(table.segments[0].points == 7);
  CHECK(table.segments[1].max_residual < 1e-9);
  CHECK_THROWS_AS(fit_table({{8, 1e-5, 0}}, nom, FitOptions{}, "one point"), InputError);
}

TEST_CASE("validate.fit.a library caller's near-zero time is refused, not fitted (issue 13 item 11)") {
  const NominalLine nominal{5e-6, 1 / 100e9};
  std::vector<Measurement> pts;
  for (double v = 1024; v <= 1 << 20; v *= 2) pts.push_back({v, 5e-6 + v / 100e9, 0});
  pts[0].time_s = 1e-207;
  CHECK_THROWS_WITH(fit_table(pts, nominal, FitOptions{}, "lib"), Catch::Matchers::Contains("outside what a fit can use"));
}

TEST_CASE("validate.fit.isolated spikes are left out, step-down plateaus are kept") {
  // Exact α-β data (latency factor 1.5, bandwidth factor 0.9) with the 64 KiB row 3x slower:
  // more than 15 % above both neighbours, so it is left out, reported, and the factors come
  // back to 1e-6 (fit.hpp FitOptions::monotone_tolerance).
  const NominalLine nom{10e-6, 1.0 / 400e9};
  auto line = [&](double v) { return 1.5 * nom.alpha_s + v * nom.seconds_per_byte / 0.9; };
  std::vector<Measurement> pts;
  for (double v = 1024; v <= 1 << 30; v *= 2) pts.push_back({v, (v == 65536 ? 3.0 : 1.0) * line(v), 0});
  std::vector<Measurement> outliers;
  const auto table = fit_table(pts, nom, FitOptions{}, "spike", &outliers);
  REQUIRE(outliers.size() == 1);
  CHECK(outliers[0].bytes == 65536);
  REQUIRE(table.segments.size() == 1);
  CHECK(table.segments[0].lo_bytes == 1024);
  CHECK(table.segments[0].latency_factor == Approx(1.5).epsilon(1e-6));
  CHECK(table.segments[0].bandwidth_factor == Approx(0.9).epsilon(1e-6));
  // The smallest row has one neighbour: 3x the next size is a spike too.
  pts = {};
  for (double v = 1024; v <= 1 << 30; v *= 2) pts.push_back({v, (v == 1024 ? 3.0 : 1.0) * line(v), 0});
  outliers.clear();
  fit_table(pts, nom, FitOptions{}, "first", &outliers);
  REQUIRE(outliers.size() == 1);
  CHECK(outliers[0].bytes == 1024);
  // The kink test's data steps down by 30 % at 64 KiB (a plateau, not one row): nothing is
  // left out there (see "recovers known factors and finds the kink").
}

TEST_CASE("validate.fit.boundary sits where neighbouring segment lines cross") {
  // NCCL's choice is the faster protocol: t = min(2α + V·c/0.1, 4α + V·c/0.9). The lines cross
  // at V* = 2α / (c·(10 − 1/0.9)) = 900,000 B, between the measured 512 KiB and 1 MiB, so the
  // first segment ends at floor(V*) rather than at the geometric mean (741,455 B).
  const NominalLine nom{10e-6, 1.0 / 400e9};
  std::vector<Measurement> pts;
  for (double v = 1024; v <= 1 << 30; v *= 2)
    pts.push_back({v, std::min(2 * nom.alpha_s + v * nom.seconds_per_byte / 0.1,
                               4 * nom.alpha_s + v * nom.seconds_per_byte / 0.9), 0});
  const auto table = fit_table(pts, nom, FitOptions{}, "crossing");
  REQUIRE(table.segments.size() == 2);
  CHECK(table.segments[0].hi_bytes == Approx(900000).margin(1));
  CHECK(table.segments[1].lo_bytes == table.segments[0].hi_bytes);
  CHECK(table.segments[0].bandwidth_factor == Approx(0.1).epsilon(1e-6));
  CHECK(table.segments[1].latency_factor == Approx(4.0).epsilon(1e-6));
}

TEST_CASE("validate.fit.a fixed segment count overrides BIC") {
  // The kink data of "recovers known factors": BIC picks 2 segments; segments = 1 forces one
  // line through both regimes, segments = 3 splits one regime (still exact, so max_residual ~ 0).
  const NominalLine nom{10e-6, 1.0 / 400e9};
  std::vector<Measurement> pts;
  for (double v = 1024; v <= 1 << 30; v *= 2)
    pts.push_back({v, v <= 65536 ? 2.0 * nom.alpha_s + v * nom.seconds_per_byte / 0.1
                                 : 1.5 * nom.alpha_s + v * nom.seconds_per_byte / 0.9, 0});
  for (int k : {1, 3, 5}) {
    FitOptions o;
    o.segments = k;
    o.outlier_threshold = 0;  // a forced single line leaves large residuals; keep every point
    CHECK(fit_table(pts, nom, o, "fixed").segments.size() == static_cast<std::size_t>(k));
  }
  FitOptions o;
  o.segments = 100;  // more than the points allow (21 points, 2 per segment, max_segments 8): the largest feasible
  CHECK(fit_table(pts, nom, o, "fixed").segments.size() == 8);
}

TEST_CASE("validate.fit.plain interpolation between measured sizes") {
  // t = 5 us + V / 100 GB/s at 1, 4, 16 MiB: linear interpolation is exact in between and
  // beyond (a line); log-log interpolation of a power law t = 1e-9 · V^0.5 is exact; the
  // monotone cubic passes through the nodes and stays between them.
  const double mib = 1 << 20;
  auto affine = [](double v) { return 5e-6 + v / 100e9; };
  const std::vector<Measurement> a{{mib, affine(mib), 0}, {4 * mib, affine(4 * mib), 0}, {16 * mib, affine(16 * mib), 0}};
  for (double v : {2 * mib, 8 * mib, 32 * mib})
    CHECK(interpolate_time(a, v, Interpolation::Linear) == Approx(affine(v)).epsilon(1e-12));
  // Below the smallest size the time is held flat (latency-bound), in every method.
  for (auto how : {Interpolation::Linear, Interpolation::LogLog, Interpolation::MonotoneCubicLogLog})
    CHECK(interpolate_time(a, 0.5 * mib, how) == affine(mib));
  // A falling linear extension above the range is floored at 1 % of the largest size's time.
  const std::vector<Measurement> falling{{1000, 100e-6, 0}, {2000, 1e-6, 0}};
  CHECK(interpolate_time(falling, 5000, Interpolation::Linear) == Approx(1e-8));
  auto power = [](double v) { return 1e-9 * std::sqrt(v); };
  const std::vector<Measurement> p{{1e3, power(1e3), 0}, {1e5, power(1e5), 0}, {1e7, power(1e7), 0}};
  for (double v : {1e4, 3e6, 1e9})  // inside and above the range
    CHECK(interpolate_time(p, v, Interpolation::LogLog) == Approx(power(v)).epsilon(1e-12));
  for (const auto& m : a) CHECK(interpolate_time(a, m.bytes, Interpolation::MonotoneCubicLogLog) == Approx(m.time_s).epsilon(1e-12));
  // A step (flat, then a jump, then flat): the cubic stays within [lo, hi] (no overshoot).
  const std::vector<Measurement> step{{1, 1e-5, 0}, {2, 1e-5, 0}, {4, 5e-5, 0}, {8, 5e-5, 0}};
  for (double v = 1; v <= 8; v += 0.25) {
    const double t = interpolate_time(step, v, Interpolation::MonotoneCubicLogLog);
    CHECK(t >= 1e-5 * (1 - 1e-12));
    CHECK(t <= 5e-5 * (1 + 1e-12));
  }
  CHECK_THROWS_AS(interpolate_time({{1, 1e-5, 0}}, 2, Interpolation::Linear), std::invalid_argument);
  // drop_spikes: the 3x row goes, the rest stay in order.
  const std::vector<Measurement> spiky{{1, 1e-5, 1}, {2, 3e-5, 2}, {4, 1.1e-5, 3}, {8, 1.2e-5, 4}};
  std::vector<Measurement> spikes;
  const auto kept = drop_spikes(spiky, 0.15, &spikes);
  REQUIRE(kept.size() == 3);
  CHECK(kept[1].line == 3);
  REQUIRE(spikes.size() == 1);
  CHECK(spikes[0].line == 2);
  CHECK(drop_spikes(spiky, 0).size() == 4);
}

TEST_CASE("validate.fit.the interpolation reference on the odd rows of a log") {
  // cross_check_interpolation on exact affine data: every odd row predicted exactly.
  std::vector<Measurement> pts;
  for (double v = 1024; v <= 1 << 26; v *= 2) pts.push_back({v, 5e-6 + v / 100e9, 0});
  const auto s = cross_check_interpolation(pts, Interpolation::Linear, 0.15);
  CHECK(s.large_points == 3);   // 2, 8, 32 MiB
  CHECK(s.small_points == 5);   // 2, 8, 32, 128, 512 KiB
  CHECK(s.large_max < 1e-12);
  CHECK(s.small_max < 1e-12);
  CHECK(cross_check_interpolation({pts[0], pts[1]}, Interpolation::Linear, 0.15).large_points == 0);
}

TEST_CASE("validate.fit.even/odd cross-validation on real logs meets the issue's bar") {
  // Issue 5: fit the even-indexed sizes, predict the odd ones; median |error| ≤ 3 % at ≥ 1 MiB
  // and ≤ 10 % below. Measured with this fit (tests/fixtures/nccl/README.md: logs made from ../shared/data):
  // 8xH100 AWS p5 1.4 % / 1.2 %; 2x8 H100 IB400 2.0 % / 3.9 %; A100 OCI 1.9 % / 0.6 %.
  const auto hw_h100 = load_profile("h100-sxm");
  const auto hw_a100 = load_profile("a100-40gb");
  struct Case {
    const char* file;
    const HardwareProfile* hw;
  };
  for (const Case c : {Case{"h100_aws_p5_1n_all_reduce_perf.log", &hw_h100},
                       Case{"h100_hgx_ib400_2n_all_reduce_perf_mpi.log", &hw_h100},
                       Case{"a100_oci_1n_all_reduce_perf_srun_error.log", &hw_a100},
                       Case{"h100_a3mega_2n_all_gather_perf_ts_noredop.log", &hw_h100}}) {
    INFO(c.file);
    if (!require_data(generated_nccl_log(c.file))) return;
    const auto result = calibrate({read_nccl_tests_file(generated_nccl_log(c.file))}, *c.hw, CalibrateOptions{}, "out.json");
    REQUIRE(result.tables.size() == 1);
    const auto& t = result.tables[0];
    CHECK(t.cross.large_median <= 0.03);
    CHECK(t.cross.small_median <= 0.10);
    // The fit is much closer than the nominal profile on the same rows.
    CHECK(t.cross.large_median < t.cross_nominal.large_median);
    CHECK(t.fitted.large_median <= 0.03);
  }
}

namespace {

// The profile each public log is fitted over (docs/calibration.md "Error on the public logs"):
// H200 → h200, A100 40 GB → a100-40gb, other A100 → a100-sxm, everything else (H100, and B200,
// L40S, RTX 4090 that have no profile) → h100-sxm.
std::string profile_for_gpu(const std::string& gpu) {
  // The GPU's built-in profile (B200 has one since issue 19); h100-sxm stands in for GPUs
  // without one (L40S, RTX 4090).
  const std::string p = builtin_profile_for_gpu(gpu);
  return p.empty() ? "h100-sxm" : p;
}

// Every multi-rank table of ../shared/data/nccl/, sorted by id, with the profile it is fitted
// over; empty when the shared data is not there (require_data: a skip, or a failure under CI=true).
struct SharedTable {
  std::string id;
  NcclTestsLog log;
  HardwareProfile hw;
};

std::vector<SharedTable> shared_tables() {
  const std::filesystem::path dir = shared_data("nccl");
  if (!require_data(dir.string())) return {};
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".csv") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  std::vector<SharedTable> out;
  for (const auto& f : files) {
    auto log = read_nccl_tests_file(f.string());
    REQUIRE(log.runs.size() == 1);
    if (log.runs[0].ranks == 1) continue;  // one GPU: nothing to communicate, nothing to fit
    auto hw = load_profile(profile_for_gpu(log.runs[0].gpu));
    out.push_back({f.stem().string(), std::move(log), std::move(hw)});
  }
  return out;
}

bool meets_bar(const ErrorSummary& s) { return s.large_median <= 0.03 && s.small_median <= 0.10; }

}  // namespace

TEST_CASE("validate.fit.even/odd cross-validation on every shared table, bar or documented miss") {
  // Issue 5's bar on every table of ../shared/data/nccl/: fit the even-indexed sizes, predict
  // the odd ones, median |error| ≤ 3 % at ≥ 1 MiB and ≤ 10 % below. The tables listed here
  // miss it; docs/calibration.md says why (multi-node noise: non-monotone rows of ±10–50 % at
  // odd sizes, or a protocol switch between two even sizes). For them the test pins the
  // measured medians (+0.5 point) so the fit cannot get silently worse.
  struct Miss {
    const char* id;
    double large, small;  // even→odd median |error| with this fit
  };
  const Miss misses[] = {
      {"a100_azure_ndv4_echo_16n_allreduce", 0.033, 0.061},
      {"a100_azure_ndv4_echo_2gpu_1n_allreduce", 0.050, 0.011},
      {"a100_azure_ndv4_echo_2n_allreduce", 0.040, 0.005},
      {"a100_azure_ndv4_echo_8n_allreduce", 0.096, 0.061},
      {"b200_lambda_2n_allreduce", 0.040, 0.033},
      {"h100_nebius_2n_ib_allreduce", 0.075, 0.093},
      {"h100_unresolved_2n_allreduce", 0.032, 0.012},
  };
  const auto shared = shared_tables();
  if (shared.empty()) return;
  int tables = 0, meet = 0;
  for (const auto& [id, log, hw] : shared) {
    INFO(id);
    const auto result = calibrate({log}, hw, CalibrateOptions{}, "out.json");
    REQUIRE(result.tables.size() == 1);
    const auto& c = result.tables[0].cross;
    ++tables;
    const auto miss = std::find_if(std::begin(misses), std::end(misses), [&](const Miss& m) { return id == m.id; });
    if (miss == std::end(misses)) {
      CHECK(c.large_median <= 0.03);
      CHECK(c.small_median <= 0.10);
      meet += meets_bar(c);
    } else {
      CHECK(c.large_median <= miss->large + 0.005);
      CHECK(c.small_median <= miss->small + 0.005);
      CHECK_FALSE(meets_bar(c));  // a table that starts meeting the bar leaves this list
    }
  }
  CHECK(tables == 38);
  CHECK(meet == tables - static_cast<int>(std::size(misses)));
}

TEST_CASE("validate.fit.two shared tables miss the bar under every predictor tried, even one chosen in hindsight") {
  // Why issue 5's bar stays out of reach (docs/calibration.md "Is the bar reachable?"): for
  // each table, 12 ways to predict the odd rows from the even ones: the segmented fit with
  // its BIC choice and with every fixed segment count 1..8, and plain interpolation (linear,
  // log-log, monotone cubic in log-log; spikes among the even rows dropped as the fit does).
  // Choosing, per table, whichever does best on the very odd rows being predicted (which no
  // honest method can) still leaves two tables that no predictor brings within ≤ 3 %
  // (≥ 1 MiB) and ≤ 10 % (< 1 MiB): their odd rows are off every smooth curve through their
  // even rows. Measured: 36 of 38 reachable in hindsight; the fit (BIC) meets 31, linear
  // interpolation 30.
  const auto shared = shared_tables();
  if (shared.empty()) return;
  std::vector<std::string> unreachable;
  int reachable = 0, by_fit = 0, by_linear = 0;
  for (const auto& [id, log, hw] : shared) {
    INFO(id);
    std::vector<ErrorSummary> tried;
    const auto bic = calibrate({log}, hw, CalibrateOptions{}, "out.json");
    REQUIRE(bic.tables.size() == 1);
    tried.push_back(bic.tables[0].cross);
    std::vector<Measurement> points;
    for (const auto& row : bic.tables[0].rows) points.push_back({row.bytes, row.measured_s, row.line});
    const ErrorSummary linear = cross_check_interpolation(points, Interpolation::Linear, FitOptions{}.monotone_tolerance);
    CHECK(linear.large_median == Approx(bic.tables[0].cross_interpolation.large_median));  // the report's reference
    CHECK(linear.small_median == Approx(bic.tables[0].cross_interpolation.small_median));
    by_fit += meets_bar(tried[0]);
    by_linear += meets_bar(linear);
    if (meets_bar(tried[0])) {  // reachable: the other predictors need not be tried
      ++reachable;
      continue;
    }
    tried.push_back(linear);
    for (int k = 1; k <= 8; ++k) {
      CalibrateOptions o;
      o.fit.segments = k;
      tried.push_back(calibrate({log}, hw, o, "out.json").tables.at(0).cross);
    }
    for (auto how : {Interpolation::LogLog, Interpolation::MonotoneCubicLogLog})
      tried.push_back(cross_check_interpolation(points, how, FitOptions{}.monotone_tolerance));
    if (std::any_of(tried.begin(), tried.end(), meets_bar))
      ++reachable;
    else
      unreachable.push_back(id);
  }
  CHECK(by_fit == 31);
  CHECK(by_linear == 30);
  CHECK(reachable == 36);
  CHECK(unreachable == std::vector<std::string>{"a100_azure_ndv4_echo_8n_allreduce", "b200_lambda_2n_allreduce"});
}

TEST_CASE("validate.fit.nominal nccl model is closer than alpha-beta to the shared tables at both size ranges") {
  // Issue 5 item 4: the NCCL-tuner model (with the 4 us host launch term) against the seeds'
  // alpha-beta model, both uncalibrated, on every table of ../shared/data/nccl/: median over
  // tables of each table's median |error|, sizes >= 1 MiB and < 1 MiB. Measured (docs/calibration.md):
  // alpha-beta 36.6 % / 40.4 %, nccl 11.8 % / 38.5 % (each profile on its network preset; at the
  // NICs' line rate nccl had 21.0 % at >= 1 MiB; B200 logs on b200, was h100-sxm: alpha-beta 36.9 / 40.3).
  const auto shared = shared_tables();
  if (shared.empty()) return;
  std::vector<double> ab_large, ab_small, nccl_large, nccl_small;
  for (const auto& [id, log, hw] : shared) {
    const auto result = calibrate({log}, hw, CalibrateOptions{}, "out.json");
    const auto& t = result.tables.at(0);
    REQUIRE(t.nccl);
    if (t.nominal.large_points > 0) ab_large.push_back(t.nominal.large_median), nccl_large.push_back(t.nccl->large_median);
    if (t.nominal.small_points > 0) ab_small.push_back(t.nominal.small_median), nccl_small.push_back(t.nccl->small_median);
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
  };
  REQUIRE(ab_large.size() == 38);
  REQUIRE(ab_small.size() == 23);
  CHECK(median(ab_large) == Approx(0.366).margin(0.001));
  CHECK(median(ab_small) == Approx(0.404).margin(0.001));
  CHECK(median(nccl_large) == Approx(0.118).margin(0.001));
  CHECK(median(nccl_small) == Approx(0.385).margin(0.001));
  CHECK(median(nccl_large) < median(ab_large));
  CHECK(median(nccl_small) < median(ab_small));
}

TEST_CASE("validate.fit.a scenario run with a fitted overlay prices each collective as the fit says") {
  // Issue 5 "Done when": calibrate the public 2 x 8 H100 NDR log (h100_hgx_ib400_2n_allreduce_nt309a,
  // NCCL 2.26.2) over h100-sxm, then run default.json (Llama-3.2-1B DDP) at dp 16, i.e. the
  // same 2 x 8 H100, nominal (alpha-beta) and with the overlay. Every AllReduce of the run must
  // cost exactly what the fitted segment gives, land within 3 % of the log's own time at that
  // size (the fit's in-sample error at >= 1 MiB is at most 2.7 %; the log is interpolated
  // linearly between its sizes), and the step's comm time must move by the sum of the changes.
  const std::filesystem::path log_path = shared_data("nccl/h100_hgx_ib400_2n_allreduce_nt309a.csv");
  if (!require_data(log_path.string())) return;
  const auto hw = load_profile("h100-sxm");
  const auto log = read_nccl_tests_file(log_path.string());
  const auto fitted = calibrate({log}, hw, CalibrateOptions{}, "fitted.json");
  const auto dir = std::filesystem::temp_directory_path() / "stepsim_fit_scenario_test";
  std::filesystem::create_directories(dir);
  const std::string overlay_path = (dir / "fitted.json").string();
  write_file_atomically(overlay_path, calibration_json(fitted.overlay));
  const std::string scenario = std::string(STEPSIM_SOURCE_DIR) + "/configs/examples/default.json";
  const auto nominal = models::run(models::load_scenario(scenario, {"parallelism.dp=16", "collectives.cost_model=alpha-beta"}));
  const auto with_fit = models::run(models::load_scenario(scenario, {"parallelism.dp=16", "calibration=" + overlay_path}));
  std::filesystem::remove_all(dir);

  std::vector<Measurement> measured;
  for (const auto& row : fitted.tables.at(0).rows) measured.push_back({row.bytes, row.measured_s, row.line});
  REQUIRE(with_fit.collectives.size() == nominal.collectives.size());
  REQUIRE(with_fit.collectives.size() >= 3);
  double change_s = 0;
  const GroupShape g{16, 8, 0};
  for (std::size_t i = 0; i < with_fit.collectives.size(); ++i) {
    const auto& c = with_fit.collectives[i];
    INFO(c.bytes);
    REQUIRE(c.op == "AllReduce");
    REQUIRE(c.ranks == 16);
    REQUIRE(nominal.collectives[i].bytes == c.bytes);
    CHECK(c.time_s == Approx(calibrated_collective_cost(hw, &fitted.overlay, CollectiveOp::AllReduce, c.bytes, g).time_s()).epsilon(1e-9));
    CHECK(c.time_s == Approx(interpolate_time(measured, c.bytes, Interpolation::Linear)).epsilon(0.03));
    // The nominal alpha-beta profile is 10-42 % fast on this fabric at these sizes.
    CHECK(nominal.collectives[i].time_s < 0.95 * c.time_s);
    change_s += c.count * (c.time_s - nominal.collectives[i].time_s);
  }
  CHECK(with_fit.comm_time_s - nominal.comm_time_s == Approx(change_s).epsilon(1e-6));
  CHECK(with_fit.comm_time_s > 1.3 * nominal.comm_time_s);
  CHECK(with_fit.step_time_s > nominal.step_time_s);
}

TEST_CASE("validate.fit.overlay provenance and warnings") {
  const auto hw = load_profile("h100-sxm");
  const auto log = read_nccl_tests_file(fixture("multi_run_variants.log"));
  const auto r = calibrate({log}, hw, CalibrateOptions{}, "fitted.json");
  REQUIRE(r.overlay.sources.size() == 1);
  CHECK(r.overlay.sources[0].sha256 == log.sha256);
  CHECK(r.overlay.sources[0].sha256.size() == 64);
  CHECK(r.overlay.sources[0].nccl_version == "2.18.5");
  CHECK(r.overlay.sources[0].ranks == 4);
  CHECK(r.overlay.sources[0].gpu == "NVIDIA H100 80GB HBM3");
  REQUIRE(r.overlay.tables.size() == 1);
  CHECK(r.overlay.tables[0].scope == CalibrationScope::IntraNode);
  // Unreadable lines 17 and 31 and the skipped alltoall table are all reported.
  int unreadable = 0, skipped = 0;
  for (const auto& w : r.warnings) {
    if (w.find("unreadable") != std::string::npos) ++unreadable;
    if (w.find("alltoall table") != std::string::npos) ++skipped;
  }
  CHECK(unreadable == 2);
  CHECK(skipped == 1);
}

TEST_CASE("validate.fit.repeated runs are pooled by median per size; too many sizes are binned (issue 13 item 10)") {
  // Before: a second run of the same table was dropped with a warning, and 10,000 distinct
  // sizes made the O(n²·K) segmentation take 8 s.
  std::vector<Measurement> pts = {{1024, 3e-6, 1}, {1024, 9e-6, 2}, {1024, 4e-6, 3}, {2048, 5e-6, 4}};
  const auto pooled = pool_sizes(pts, kMaxFitSizes);
  REQUIRE(pooled.size() == 2);
  CHECK(pooled[0].bytes == 1024);
  CHECK(pooled[0].time_s == 4e-6);  // median of 3, 9, 4 us
  std::vector<Measurement> many;
  for (int i = 0; i < 10000; ++i) {
    const double v = 1024.0 * std::pow(2.0, i / 500.0);
    many.push_back({std::round(v), 5e-6 + v / 100e9, i});
  }
  const auto binned = pool_sizes(many, kMaxFitSizes);
  CHECK(binned.size() <= kMaxFitSizes);
  CHECK(binned.size() > kMaxFitSizes / 2);
  CHECK(std::is_sorted(binned.begin(), binned.end(), [](const Measurement& a, const Measurement& b) { return a.bytes < b.bytes; }));
  // Two runs of one table in two files: one table, pooled, and said so.
  const std::string table =
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
      "     1048576        262144     float     sum      -1    20.00   52.17   78.25      0    20.00   52.69   79.04      0\n"
      "     2097152        524288     float     sum      -1    30.00   68.99  103.48      0    30.00   68.99  103.48      0\n"
      "     4194304       1048576     float     sum      -1    50.00   68.99  103.48      0    50.00   68.99  103.48      0\n";
  auto a = parse_nccl_tests(table, "a.log");
  auto b = parse_nccl_tests(table, "b.log");
  for (auto* l : {&a, &b}) {
    l->runs[0].op = "all_reduce";
    l->runs[0].ranks = 8;
    l->runs[0].nodes = 1;
    l->runs[0].gpu = "NVIDIA H200";
  }
  const auto hw = load_profile("h100-sxm");
  const auto r = calibrate({a, b}, hw, CalibrateOptions{}, "out.json");
  CHECK(r.overlay.tables.size() == 1);
  CHECK(r.tables.at(0).rows.size() == 3);
  auto has = [&](const std::string& part) {
    return std::any_of(r.warnings.begin(), r.warnings.end(), [&](const std::string& w) { return w.find(part) != std::string::npos; });
  };
  CHECK(has("b.log:1: a repeated all_reduce table at 8 ranks is pooled with a.log:1"));
  // The log's GPU is not the profile's (issue 13 item 10): said, not silent.
  CHECK(has("measured on H200 (NVIDIA H200), fitted over profile 'h100-sxm' (H100)"));
  CHECK_FALSE(gpu_profile_mismatch("NVIDIA H100 80GB HBM3", hw));
  CHECK_FALSE(gpu_profile_mismatch("", hw));
  // The overlay records the algorithm its factors are relative to.
  CHECK(r.overlay.algorithm == CollectiveAlgorithm::Auto);
  CHECK_THAT(calibration_json(r.overlay), Catch::Matchers::Contains("\"algorithm\": \"auto\""));
}

TEST_CASE("validate.fit.a scenario's calibration path is relative to its folder; the algorithm must match the overlay's (issue 13 item 10)") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / "stepsim_calibration_relative_test";
  fs::remove_all(dir);
  fs::create_directories(dir / "sub");
  auto o = two_segment_overlay();
  o.algorithm = CollectiveAlgorithm::Ring;
  write_file_atomically((dir / "sub" / "fit.json").string(), calibration_json(o));
  write_file_atomically((dir / "sub" / "s.json").string(),
                        R"({"model": "llama3.2-1b", "hardware": "h100-sxm", "parallelism": {"dp": 8},
                            "calibration": "fit.json"})");
  // Run from another working directory: the overlay is found beside the scenario.
  const auto s = models::load_scenario((dir / "sub" / "s.json").string(), {});
  REQUIRE(s.calibration);
  CHECK(s.algorithm == CollectiveAlgorithm::Ring);  // the overlay's, when the scenario names none
  // ... also when it has a collectives object without an algorithm.
  CHECK(models::load_scenario((dir / "sub" / "s.json").string(), {"collectives.cost_model=\"alpha-beta\""}).algorithm ==
        CollectiveAlgorithm::Ring);
  CHECK_THROWS_WITH(models::load_scenario((dir / "sub" / "s.json").string(), {"collectives.algorithm=\"hierarchical\""}),
                    Catch::Matchers::Contains("/collectives/algorithm") &&
                        Catch::Matchers::Contains("differs from the \"ring\" that calibration"));
  // The report's JSON names the cost model even when it is alpha-beta.
  CHECK_THAT(models::report_json(models::run(s)), Catch::Matchers::Contains("\"cost_model\": \"alpha-beta\""));
  fs::remove_all(dir);
}

TEST_CASE("validate.fit.a sweep shows per point whether calibration was extrapolated (issue 13 item 10)") {
  // Before: extrapolation was only a warning string, and sweeps drop arrays: the CSV hid it.
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / "stepsim_sweep_extrapolated_test";
  fs::remove_all(dir);
  fs::create_directories(dir);
  auto o = two_segment_overlay();
  o.tables[0].segments = {{1, 1e12, 1.5, 0.9, 10, 0.01}};
  write_file_atomically((dir / "fit.json").string(), calibration_json(o));
  write_file_atomically((dir / "s.json").string(),
                        R"({"model": "llama3.2-1b", "hardware": "h100-sxm", "parallelism": {"dp": 8},
                            "calibration": "fit.json"})");
  models::SweepOptions opt;
  opt.threads = 1;
  const auto r = models::run_sweep((dir / "s.json").string(), {models::parse_vary("parallelism.dp=4,8")}, opt);
  REQUIRE(r.points.size() == 2);
  const auto csv = models::sweep_csv(r);
  CHECK_THAT(csv, Catch::Matchers::Contains("calibration_extrapolated"));
  const auto at = [&](std::size_t i) { return models::report_json(models::run(models::load_scenario(
      (dir / "s.json").string(), {i == 0 ? "parallelism.dp=4" : "parallelism.dp=8"}))); };
  CHECK_THAT(at(0), Catch::Matchers::Contains("\"calibration_extrapolated\": true"));   // 4 ranks, table at 8
  CHECK_THAT(at(1), Catch::Matchers::Contains("\"calibration_extrapolated\": false"));  // 8 ranks, as fitted
  fs::remove_all(dir);
}
