// SPDX-License-Identifier: Apache-2.0
// Tests that need the public datasets of ../shared/data (never copied into this project):
// where they are, and what a test does when they are absent (issue 13 item 24).
#pragma once

#include "tests/support/catch.hpp"

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>

namespace stepsim::test {

/// Folder of the public datasets: $STEPSIM_SHARED_DATA when set, else the build's
/// STEPSIM_SHARED_DATA_DIR (CMake cache variable, default ../shared/data beside the checkout).
inline std::string shared_data_dir() {
  if (const char* env = std::getenv("STEPSIM_SHARED_DATA"); env != nullptr && *env != '\0') return env;
  return STEPSIM_SHARED_DATA_DIR;
}

/// `relative` (e.g. "nccl/h100_aws_p5_1n_allreduce.csv") under shared_data_dir().
inline std::string shared_data(const std::string& relative) { return shared_data_dir() + "/" + relative; }

/// A raw nccl-tests log that CMake generated at configure time from a table of
/// ../shared/data/nccl with tests/fixtures/nccl/make_raw.py (tests/fixtures/nccl/README.md).
inline std::string generated_nccl_log(const std::string& name) {
  return std::string(STEPSIM_GENERATED_FIXTURES_DIR) + "/nccl/" + name;
}

/// True when `path` exists. Otherwise the test cannot run: under CI=true that is a failure
/// (CI must have the data); elsewhere it prints "SKIPPED: ..." on stdout, which CTest's
/// SKIP_REGULAR_EXPRESSION reports as a skip (never a pass), and returns false.
/// Use: `if (!require_data(path)) return;` at the top of the test case.
inline bool require_data(const std::string& path) {
  if (std::filesystem::exists(path)) return true;
  const char* ci = std::getenv("CI");
  if (ci != nullptr && std::string(ci) == "true") {
    FAIL("shared dataset missing under CI=true: " << path);
    return false;
  }
  std::cout << "SKIPPED: shared dataset not present: " << path << "\n";
  return false;
}

}  // namespace stepsim::test
