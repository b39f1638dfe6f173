// SPDX-License-Identifier: Apache-2.0
// Tests of sim/support: units, names, the JSON reader, overrides, atomic files.
#include "sim/support/atomic_file.hpp"
#include "sim/support/error.hpp"
#include "sim/support/json_reader.hpp"
#include "sim/support/names.hpp"
#include "sim/support/units.hpp"
#include "tests/support/catch.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <thread>
#include <iterator>

#include <sys/stat.h>

using namespace stepsim;
using Catch::Matchers::Contains;

TEST_CASE("units: binary and decimal prefixes (DESIGN.md: GB = 1e9, GiB = 2^30)", "[support]") {
  CHECK(parse_quantity("25MiB", Dimension::Bytes) == 25.0 * 1024 * 1024);
  CHECK(parse_quantity("16GB", Dimension::Bytes) == 16e9);
  CHECK(parse_quantity("1 KiB", Dimension::Bytes) == 1024.0);
  CHECK(parse_quantity("12345", Dimension::Bytes) == 12345.0);
  CHECK(parse_quantity("400GB/s", Dimension::BytesPerSecond) == 400e9);
  CHECK(parse_quantity("400Gb/s", Dimension::BytesPerSecond) == 50e9);
  CHECK(parse_quantity("400Gbps", Dimension::BytesPerSecond) == 50e9);
  CHECK(parse_quantity("16us", Dimension::Seconds) == Approx(16e-6));
  CHECK(parse_quantity("2ms", Dimension::Seconds) == Approx(2e-3));
  CHECK(parse_quantity("989TFLOP/s", Dimension::FlopsPerSecond) == 989e12);
}

TEST_CASE("units: wrong dimension and garbage are errors naming both", "[support]") {
  CHECK_THROWS_WITH(parse_quantity("400GB/s", Dimension::Bytes), "expected bytes, got a bandwidth '400GB/s'");
  CHECK_THROWS_WITH(parse_quantity("16GB", Dimension::BytesPerSecond), "expected a bandwidth, got bytes '16GB'");
  CHECK_THROWS_WITH(parse_quantity("abc", Dimension::Bytes), Contains("expected bytes such as"));
  CHECK_THROWS_WITH(parse_quantity("5 parsecs", Dimension::Seconds), Contains("unknown unit 'parsecs'"));
}

TEST_CASE("names: edit distance and suggestions", "[support]") {
  CHECK(edit_distance("kitten", "sitting") == 3);
  CHECK(edit_distance("", "abc") == 3);
  CHECK(suggest("gpu_per_node", {"gpus_per_node", "nodes"}) == "gpus_per_node");
  CHECK(suggest("zzzzzzzz", {"ddp", "fsdp"}).empty());
  CHECK(did_you_mean("zer03", {"zero3", "ddp"}) == " (did you mean 'zero3'?)");
}

TEST_CASE("JsonReader: typed access, defaults and range checks", "[support]") {
  const auto doc = nlohmann::json::parse(R"({"a": 3, "b": "25MiB", "c": true, "d": {"e": "x"}, "f": 2.5})");
  JsonReader r(doc, "s.json", "");
  CHECK(r.integer("a", 1, 10) == 3);
  CHECK(r.number("b", Check::Positive, Dimension::Bytes) == 25.0 * 1024 * 1024);
  CHECK(r.boolean_or("c", false));
  CHECK(r.number_or("missing", 7.0) == 7.0);
  CHECK(r.object("d").string("e") == "x");
  CHECK_THROWS_WITH(r.integer("f", 1, 10), "s.json: /f: expected an integer in [1, 10], got 2.5");
  CHECK_THROWS_WITH(r.integer("a", 5, 10), "s.json: /a: expected an integer in [5, 10], got 3");
  CHECK_THROWS_WITH(r.string("zz"), "s.json: /zz: required field is missing");
}

TEST_CASE("JsonReader: unknown keys are rejected with a suggestion", "[support]") {
  const auto doc = nlohmann::json::parse(R"({"gpus_per_nod": 8})");
  JsonReader r(doc, "s.json", "/cluster");
  r.integer_or("gpus_per_node", 8, 1, 64);
  CHECK_THROWS_WITH(r.finish(), Contains("s.json: /cluster/gpus_per_nod: unknown key 'gpus_per_nod' "
                                         "(did you mean 'gpus_per_node'?)"));
}

TEST_CASE("parse_json_text: syntax errors carry line:column", "[support]") {
  CHECK_THROWS_WITH(parse_json_text("{\n  \"a\": 1,\n}\n", "x.json"), Contains("x.json:3:1: JSON syntax error"));
  CHECK_THROWS_WITH(parse_json_text("  \n", "x.json"), "x.json: file is empty (expected a JSON object)");
}

TEST_CASE("apply_override: JSON values, plain strings, nested creation", "[support]") {
  nlohmann::json doc = nlohmann::json::parse(R"({"parallelism": {"dp": 8}, "model": "m"})");
  apply_override(doc, "parallelism.dp=64", "--set");
  apply_override(doc, "parallelism.bucket_cap_mb=12.5", "--set");
  apply_override(doc, "hardware=h100-sxm", "--set");
  apply_override(doc, "batch.seq_len=2048", "--set");
  CHECK(doc["parallelism"]["dp"].get<int>() == 64);
  CHECK(doc["parallelism"]["bucket_cap_mb"].get<double>() == 12.5);
  CHECK(doc["hardware"].get<std::string>() == "h100-sxm");
  CHECK(doc["batch"]["seq_len"].get<int>() == 2048);
  CHECK_THROWS_WITH(apply_override(doc, "model.x=1", "--set"), Contains("'model' is a string, not an object"));
  CHECK_THROWS_AS(apply_override(doc, "novalue", "--set"), InputError);
}

TEST_CASE("write_file_atomically: replaces content, refuses a missing directory", "[support]") {
  const auto dir = std::filesystem::temp_directory_path() / "stepsim_atomic_test";
  std::filesystem::create_directories(dir);
  const auto path = (dir / "out.txt").string();
  write_file_atomically(path, "first");
  write_file_atomically(path, "second");
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), {});
  CHECK(text == "second");
  CHECK_THROWS_WITH(write_file_atomically((dir / "nope" / "x.txt").string(), "x"), Contains("does not exist"));
  std::filesystem::remove_all(dir);
}

namespace {
std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}
}  // namespace

TEST_CASE("write_file_atomically: symlinks are written through, non-regular targets refused", "[support]") {
  namespace fs = std::filesystem;
  const auto dir = fs::temp_directory_path() / "stepsim_atomic_links";
  fs::remove_all(dir);
  fs::create_directories(dir / "sub");
  // A link (relative, through a second link) is followed: the target changes, the links stay.
  write_file_atomically((dir / "sub" / "real.txt").string(), "old");
  fs::create_symlink("sub/real.txt", dir / "link1");
  fs::create_symlink("link1", dir / "link2");
  CHECK(resolve_output_path((dir / "link2").string()) == (dir / "sub/real.txt").string());
  write_file_atomically((dir / "link2").string(), "new");
  CHECK(fs::is_symlink(fs::symlink_status(dir / "link2")));
  CHECK(fs::is_symlink(fs::symlink_status(dir / "link1")));
  CHECK(slurp(dir / "sub" / "real.txt") == "new");
  // A dangling link writes where it points.
  fs::create_symlink("sub/later.txt", dir / "dangling");
  write_file_atomically((dir / "dangling").string(), "made");
  CHECK(fs::is_symlink(fs::symlink_status(dir / "dangling")));
  CHECK(slurp(dir / "sub" / "later.txt") == "made");
  // A FIFO (a shell pipe) and character devices are written through, never replaced.
  const auto fifo = dir / "fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  std::string piped;
  std::thread reader([&] {
    std::ifstream in(fifo, std::ios::binary);
    piped.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  });
  write_file_atomically(fifo.string(), "through the pipe");
  reader.join();
  CHECK(piped == "through the pipe");
  CHECK(fs::is_fifo(fs::symlink_status(fifo)));
  if (fs::is_character_file("/dev/null")) {
    write_file_atomically("/dev/null", "discarded");
    CHECK(fs::is_character_file("/dev/null"));
  }
  if (fs::is_character_file("/dev/full")) {
    CHECK_THROWS_WITH(write_file_atomically("/dev/full", "x"), Contains("/dev/full: error while writing: No space left"));
    CHECK(fs::is_character_file("/dev/full"));
  }
  // A directory and a link to a directory are refused and left as they are.
  CHECK_THROWS_WITH(check_output_path((dir / "sub").string(), "--out"), Contains("is a directory"));
  fs::create_symlink("sub", dir / "dirlink");
  CHECK_THROWS_WITH(write_file_atomically((dir / "dirlink").string(), "x"), Contains("is a directory"));
  CHECK(fs::is_directory(dir / "sub"));
  fs::create_symlink("loop", dir / "loop");
  CHECK_THROWS_WITH(write_file_atomically((dir / "loop").string(), "x"), Contains("too many levels"));
  CHECK_THROWS_WITH(check_output_path("", "--out"), Contains("--out: expected a file name, got an empty value"));
  fs::remove_all(dir);
}

TEST_CASE("write_file_atomically: never over an input; two outputs never the same file", "[support]") {
  namespace fs = std::filesystem;
  const auto dir = fs::temp_directory_path() / "stepsim_atomic_inputs";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const auto in = dir / "scenario.json";
  { std::ofstream(in) << "{}"; }
  CHECK_THROWS_WITH(check_output_path(in.string(), "--out", {in.string()}), Contains("is the input"));
  fs::create_symlink("scenario.json", dir / "alias.json");
  CHECK_THROWS_WITH(check_output_path((dir / "alias.json").string(), "--out", {in.string()}), Contains("is the input"));
  CHECK_NOTHROW(check_output_path((dir / "other.json").string(), "--out", {in.string()}));
  // With protection on (as in the CLI), a file read through read_json_file is noted: writing
  // over it later is refused too. Off (the default), it may be rewritten.
  (void)read_json_file(in.string());
  CHECK_NOTHROW(write_file_atomically(in.string(), "{}"));
  protect_inputs(true);
  (void)read_json_file(in.string());
  CHECK_THROWS_WITH(write_file_atomically((dir / "alias.json").string(), "x"), Contains("is the input"));
  protect_inputs(false);
  CHECK(slurp(in) == "{}");

  CHECK_THROWS_WITH(check_distinct_outputs({{"--out", (dir / "a.svg").string()}, {"--plot", (dir / "." / "a.svg").string()}}),
                    Contains("--out and --plot name the same file"));
  CHECK_THROWS_WITH(check_distinct_outputs({{"--out", in.string()}, {"--plot", (dir / "alias.json").string()}}),
                    Contains("name the same file"));
  CHECK_NOTHROW(check_distinct_outputs({{"--out", (dir / "a.csv").string()}, {"--plot", (dir / "a.svg").string()}, {"--trace", ""}}));
  fs::remove_all(dir);
}
