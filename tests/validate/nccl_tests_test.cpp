// SPDX-License-Identifier: Apache-2.0
// nccl-tests reader: every layout, launcher prefixes, unreadable lines reported with line numbers.
// Values are the fixtures' (tests/fixtures/nccl/README.md: made from ../shared/data/nccl/).
#include "tests/support/catch.hpp"
#include "tests/support/shared_data.hpp"

#include <fmt/format.h>

#include "sim/support/error.hpp"
#include "validate/nccl_tests.hpp"

#include <filesystem>
#include <string>

using namespace stepsim;
using namespace stepsim::validate;


namespace {

// Hand-made fixtures (tests/fixtures/nccl/).
std::string fixture(const std::string& name) { return std::string(STEPSIM_SOURCE_DIR) + "/tests/fixtures/nccl/" + name; }
using stepsim::test::generated_nccl_log;
using stepsim::test::require_data;
using stepsim::test::shared_data;

}  // namespace

TEST_CASE("validate.nccl_tests.sha256 matches FIPS 180-4 test vectors") {
  CHECK(sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  // Two-block message (56 bytes: padding spills into a second block).
  CHECK(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST_CASE("validate.nccl_tests.new layout with #wrong, version header and rank lines") {
  if (!require_data(generated_nccl_log("h100_aws_p5_1n_all_reduce_perf.log"))) return;
  const auto log = read_nccl_tests_file(generated_nccl_log("h100_aws_p5_1n_all_reduce_perf.log"));
  REQUIRE(log.runs.size() == 1);
  CHECK(log.unreadable.empty());
  CHECK(log.format == "nccl-tests");
  const auto& run = log.runs[0];
  CHECK(run.op == "all_reduce");
  CHECK(run.ranks == 8);
  CHECK(run.nodes == 1);
  CHECK(run.gpu == "NVIDIA H100 80GB HBM3");
  CHECK(run.nccl_version == "2.26.2");  // nccl-library=22602
  REQUIRE(run.rows.size() == 32);       // h100_aws_p5_1n_allreduce.json: rows 32
  // First and last rows of ../shared/data/nccl/h100_aws_p5_1n_allreduce.csv.
  CHECK(run.rows[0].size_bytes == 8);
  CHECK(*run.rows[0].oop_time_us == Approx(12.90));
  CHECK(*run.rows[0].ip_time_us == Approx(12.87));
  CHECK(run.rows[0].root == -1);
  CHECK(run.rows.back().size_bytes == 17179869184.0);
  CHECK(*run.rows.back().oop_busbw_GBps == Approx(483.05));
  CHECK(run.rows.back().oop_check == "0");
  REQUIRE(run.avg_busbw_GBps);
}

TEST_CASE("validate.nccl_tests.OpenMPI prefix, two hosts") {
  if (!require_data(generated_nccl_log("h100_hgx_ib400_2n_all_reduce_perf_mpi.log"))) return;
  const auto log = read_nccl_tests_file(generated_nccl_log("h100_hgx_ib400_2n_all_reduce_perf_mpi.log"));
  REQUIRE(log.runs.size() == 1);
  CHECK(log.unreadable.empty());
  CHECK(log.runs[0].ranks == 16);
  CHECK(log.runs[0].nodes == 2);
  CHECK(log.runs[0].rows.size() == 32);
  CHECK(*log.runs[0].rows[0].oop_time_us == Approx(68.52));
}

TEST_CASE("validate.nccl_tests.older error layout without root, srun labels") {
  if (!require_data(generated_nccl_log("a100_oci_1n_all_reduce_perf_srun_error.log"))) return;
  const auto log = read_nccl_tests_file(generated_nccl_log("a100_oci_1n_all_reduce_perf_srun_error.log"));
  REQUIRE(log.runs.size() == 1);
  CHECK(log.unreadable.empty());
  const auto& run = log.runs[0];
  CHECK(run.op == "all_reduce");  // from the file name: no "Collective test starting" in old logs
  CHECK(run.ranks == 8);
  CHECK(run.rows.size() == 28);
  CHECK_FALSE(run.rows[0].root.has_value());
  CHECK(run.rows[0].redop == "sum");
  CHECK(run.rows[0].oop_check == "0e+00");
  CHECK(*run.rows[0].oop_time_us == Approx(32.01));
}

TEST_CASE("validate.nccl_tests.older all_gather layout without redop, timestamps") {
  if (!require_data(generated_nccl_log("h100_a3mega_2n_all_gather_perf_ts_noredop.log"))) return;
  const auto log = read_nccl_tests_file(generated_nccl_log("h100_a3mega_2n_all_gather_perf_ts_noredop.log"));
  REQUIRE(log.runs.size() == 1);
  CHECK(log.unreadable.empty());
  const auto& run = log.runs[0];
  CHECK(run.op == "all_gather");
  CHECK(run.ranks == 16);
  CHECK(run.nodes == 2);
  CHECK(run.rows.size() == 11);
  CHECK(run.rows[0].redop.empty());
  CHECK(*run.rows[0].oop_time_us == Approx(166.6));
}

TEST_CASE("validate.nccl_tests.several runs, N/A, NCCL INFO, unreadable lines have line numbers") {
  const auto log = read_nccl_tests_file(fixture("multi_run_variants.log"));
  REQUIRE(log.runs.size() == 2);
  const auto& ar = log.runs[0];
  CHECK(ar.op == "all_reduce");  // busbw/algbw = 1.5 = 2(n-1)/n with n = 4 rank lines
  CHECK(ar.ranks == 4);
  CHECK(ar.nccl_version == "2.18.5");
  REQUIRE(ar.rows.size() == 3);
  CHECK(ar.rows[0].oop_check == "N/A");
  CHECK_FALSE(ar.rows[1].ip_time_us.has_value());  // in-place "N/A"
  CHECK(*ar.rows[1].time_us() == Approx(30.40));
  CHECK(ar.avg_busbw_GBps == Approx(112.68));
  CHECK(log.runs[1].op == "alltoall");
  CHECK(log.runs[1].rows.size() == 3);
  REQUIRE(log.unreadable.size() == 2);
  CHECK(log.unreadable[0].line == 17);
  CHECK(log.unreadable[0].reason.find("expected 13 columns") != std::string::npos);
  CHECK(log.unreadable[1].line == 31);
}

TEST_CASE("validate.nccl_tests.prefix stripping does not eat table rows") {
  const std::string text =
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
      "12: [2024-05-06 12:00:01]      1048576        262144     float     sum      -1    28.56   36.71   64.24      0    28.37   36.96   64.68      0\n"
      "     2097152        524288     float     sum      -1    43.45   48.27   84.47      0    43.39   48.34   84.59      0\n";
  const auto log = parse_nccl_tests(text, "x_all_reduce_perf.txt");
  REQUIRE(log.runs.size() == 1);
  CHECK(log.unreadable.empty());
  REQUIRE(log.runs[0].rows.size() == 2);
  CHECK(log.runs[0].rows[0].size_bytes == 1048576);
  CHECK(log.runs[0].rows[0].line == 2);
  CHECK(log.runs[0].ranks == 8);  // 84.47 / 48.27 = 1.75 = 2·7/8
}

TEST_CASE("validate.nccl_tests.rows without a header use the layout their width implies") {
  const auto log = parse_nccl_tests("     1048576        262144     float     sum    28.56   36.71   64.24  1e-07    28.37   36.96   64.68  1e-07\n"
                                    "     1048576        262144\n",
                                    "all_reduce.log");
  REQUIRE(log.runs.size() == 1);
  CHECK(log.runs[0].rows.size() == 1);
  REQUIRE(log.unreadable.size() == 1);
  CHECK(log.unreadable[0].line == 2);
}

TEST_CASE("validate.nccl_tests.normalized CSV with provenance sidecar") {
  if (!require_data(shared_data("nccl/h100_aws_p5_1n_allreduce.csv"))) return;
  if (!require_data(generated_nccl_log("h100_aws_p5_1n_all_reduce_perf.log"))) return;
  const auto log = read_nccl_tests_file(shared_data("nccl/h100_aws_p5_1n_allreduce.csv"));
  CHECK(log.format == "nccl-tests-csv");
  REQUIRE(log.runs.size() == 1);
  CHECK(log.unreadable.empty());
  CHECK(log.runs[0].ranks == 8);  // sidecar total_ranks
  CHECK(log.runs[0].nodes == 1);
  CHECK(log.runs[0].gpu.find("H100") != std::string::npos);
  CHECK(log.runs[0].nccl_version.empty());  // "not stated; ..." is not a version
  CHECK(log.runs[0].rows.size() == 32);
  // Same numbers as the raw fixture made from it.
  const auto raw = read_nccl_tests_file(generated_nccl_log("h100_aws_p5_1n_all_reduce_perf.log"));
  for (std::size_t i = 0; i < 32; ++i) CHECK(*log.runs[0].rows[i].oop_time_us == *raw.runs[0].rows[i].oop_time_us);
}

TEST_CASE("validate.nccl_tests.every shared table reads without an unreported skip") {
  const std::filesystem::path dir = shared_data("nccl");
  if (!require_data(dir.string())) return;
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() != ".csv") continue;
    ++files;
    const auto log = read_nccl_tests_file(e.path().string());
    INFO(e.path().string());
    CHECK(log.unreadable.empty());
    for (const auto& run : log.runs) CHECK_FALSE(run.op.empty());
  }
  CHECK(files >= 30);
}

TEST_CASE("validate.nccl_tests.times outside [0.01 us, 1e4 s] make a row unreadable, never reach the fit (issue 13 item 11)") {
  // Before: a 1e-201 us row was read, its 1/t² weight overflowed the fit (heap-buffer-overflow
  // under ASan in fit_once; Release wrote "latency_factor": null).
  const std::string head =
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n";
  const std::string rows =
      "        1024           256     float     sum      -1   1e-201   52.17   78.25      0    19.90   52.69   79.04      0\n"
      "        2048           512     float     sum      -1    20.40   68.99  103.48      0    20.40   68.99  103.48      0\n"
      "        4096          1024     float     sum      -1  2e+300   68.99  103.48      0    20.40   68.99  103.48      0\n";
  const auto log = parse_nccl_tests(head + rows, "tiny.log");
  REQUIRE(log.runs.size() == 1);
  CHECK(log.runs[0].rows.size() == 1);
  REQUIRE(log.unreadable.size() == 2);
  CHECK_THAT(log.unreadable[0].reason, Catch::Matchers::Contains("time 1e-201 us is outside [0.01, 1e+10] us"));
  CHECK_THAT(log.unreadable[1].reason, Catch::Matchers::Contains("time 2e+300 us is outside"));
  const auto csv = parse_nccl_tests_csv("op,size_bytes,oop_time_us\nall_reduce,1024,1e-201\nall_reduce,2048,20.4\n", "t.csv");
  REQUIRE(csv.unreadable.size() == 1);
  CHECK_THAT(csv.unreadable[0].reason, Catch::Matchers::Contains("outside [0.01, 1e+10] us"));
}

TEST_CASE("validate.nccl_tests.interleaved MPI-rank tables and rank counts that contradict busbw/algbw are refused (issue 13 item 10)") {
  // Before: both were read, and the fit saw a mixture of two tables or the wrong bus factor.
  const std::string head =
      "[1,0]<stdout>:#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n";
  const std::string r0 =
      "[1,0]<stdout>:     1048576        262144     float     sum      -1    20.00   52.43   91.75      0    20.00   52.43   91.75      0\n";
  const std::string r1 =
      "[1,1]<stdout>:     1048576        262144     float     sum      -1    21.00   49.93   87.38      0    21.00   49.93   87.38      0\n";
  CHECK_THROWS_WITH(parse_nccl_tests(head + r0 + r1, "mixed.log"),
                    Catch::Matchers::Contains("mixed.log: line 3: table rows printed by MPI ranks 0 and 1 interleave"));
  CHECK_NOTHROW(parse_nccl_tests(head + r0, "one.log"));
  // 8 rank lines, but busbw/algbw = 1.75 is 2(n−1)/n for n = 8 ... and 1.5 for n = 4.
  std::string ranks;
  for (int i = 0; i < 8; ++i) ranks += fmt::format("#  Rank  {} Group  0 Pid  1 on host device  {} [0x18] NVIDIA H100\n", i, i);
  const std::string ar_head =
      "# Collective test starting: all_reduce_perf\n"
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n";
  const std::string ok_row = "     1048576        262144     float     sum      -1    20.00   52.43   91.75      0    20.00   52.43   91.75      0\n";
  const std::string bad_row = "     1048576        262144     float     sum      -1    20.00   52.43   78.65      0    20.00   52.43   78.65      0\n";
  CHECK(parse_nccl_tests(ranks + ar_head + ok_row, "ok.log").runs.at(0).ranks == 8);
  CHECK_THROWS_WITH(parse_nccl_tests(ranks + ar_head + bad_row, "bad.log"),
                    Catch::Matchers::Contains("8 ranks listed ('#  Rank' lines or the sidecar's total_ranks), but busbw/algbw = 1.5") &&
                        Catch::Matchers::Contains("says 4 ranks for all_reduce"));
}

TEST_CASE("validate.nccl_tests.bad input") {
  CHECK_THROWS_AS(read_nccl_tests_file(fixture("no-such.log")), InputError);
  CHECK_THROWS_WITH(parse_nccl_tests_csv("a,b\n1,2\n", "t.csv"), Catch::Matchers::Contains("lacks size_bytes"));
  CHECK(ranks_from_bandwidths("all_reduce", 36.71, 64.24) == 8);
  CHECK(ranks_from_bandwidths("all_gather", 50.34, 47.19) == 16);
  CHECK(ranks_from_bandwidths("all_reduce", 0.5, 0.9) == 0);  // too rounded
  CHECK(nccl_version_from_code(21805) == "2.18.5");
  CHECK(nccl_version_from_code(2708) == "2.7.8");
  CHECK(normalize_op_name("reduce_scatter_perf") == "reduce_scatter");
  CHECK(normalize_op_name("AllReduce") == "all_reduce");
  CHECK(normalize_op_name("reduce_perf") == "reduce");
}
