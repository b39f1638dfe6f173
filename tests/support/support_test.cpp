// SPDX-License-Identifier: Apache-2.0
// Tests of sim/support: units, names, the JSON reader, overrides, atomic files.
#include "sim/support/atomic_file.hpp"
#include "sim/support/error.hpp"
#include "sim/support/input_file.hpp"
#include "sim/support/json_reader.hpp"
#include "sim/support/names.hpp"
#include "sim/support/resources.hpp"
#include "sim/support/temp_files.hpp"
#include "sim/support/units.hpp"
#include "tests/support/catch.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <functional>
#include <new>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>
#include <iterator>
#include <vector>

#include <csignal>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

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

TEST_CASE("errors: an InputError is one line whatever its parts hold", "[support]") {
  // A hostile trial's JSON string with a NUL cut the error line short.
  const InputError e(std::string("a\nb.json"), "/model", std::string("no model 'x\0y'\tz", 16));
  const std::string what = e.what();
  CHECK(what.find('\n') == std::string::npos);
  CHECK(what.find('\0') == std::string::npos);
  CHECK(what == "a\\nb.json: /model: no model 'x\\u0000y'\\tz");
}

TEST_CASE("names: edit distance and suggestions", "[support]") {
  CHECK(edit_distance("kitten", "sitting") == 3);
  CHECK(edit_distance("", "abc") == 3);
  CHECK(suggest("gpu_per_node", {"gpus_per_node", "nodes"}) == "gpus_per_node");
  CHECK(suggest("zzzzzzzz", {"ddp", "fsdp"}).empty());
  CHECK(did_you_mean("zer03", {"zero3", "ddp"}) == " (did you mean 'zero3'?)");
  // Two swapped letters are one typo (a new-user trial got 'ddp' for 'fdsp').
  CHECK(suggest("fdsp", {"ddp", "zero1", "zero2", "zero3", "fsdp", "hsdp"}) == "fsdp");
  CHECK(suggest("alreduce", {"allreduce", "allgather"}) == "allreduce");
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
/// An empty folder TMPDIR/NAME (emptied when a previous run left it).
std::filesystem::path fresh_dir(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}
}  // namespace

TEST_CASE("write_file_atomically: symlinks are written through, non-regular targets refused", "[support]") {
  namespace fs = std::filesystem;
  const auto dir = fresh_dir("stepsim_atomic_links");
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
  const auto dir = fresh_dir("stepsim_atomic_inputs");
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

namespace {
/// The names in `dir` that are not in `keep`: temp files left behind.
std::vector<std::string> leftovers(const std::filesystem::path& dir, const std::vector<std::string>& keep) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (std::find(keep.begin(), keep.end(), name) == keep.end()) out.push_back(name);
  }
  return out;
}
}  // namespace

TEST_CASE("write_file_atomically: a link planted at a temp name never redirects the write (issue 13 item 14)",
          "[support]") {
  namespace fs = std::filesystem;
  const auto dir = fresh_dir("stepsim_atomic_planted");
  fs::create_directories(dir / "out");
  const auto victim = dir / "victim.txt";
  { std::ofstream(victim) << "precious"; }
  // The name the old code used (".NAME.tmp.PID"), and names a guess of the new pattern might hit.
  const std::vector<std::string> planted{".report.json.tmp." + std::to_string(::getpid()), ".report.json.tmp.XXXXXX",
                                         ".report.json.tmp.000000"};
  for (const auto& name : planted) fs::create_symlink(victim, dir / "out" / name);
  const auto out = dir / "out" / "report.json";
  write_file_atomically(out.string(), "the report");
  CHECK(slurp(victim) == "precious");
  CHECK(slurp(out) == "the report");
  CHECK_FALSE(fs::is_symlink(fs::symlink_status(out)));
  std::vector<std::string> keep = planted;
  keep.push_back("report.json");
  CHECK(leftovers(dir / "out", keep).empty());
  for (const auto& name : planted) CHECK(fs::is_symlink(fs::symlink_status(dir / "out" / name)));  // left as found

  // Permissions: a new file gets 0666 less the umask (not mkstemp's 0600); a replaced file
  // keeps its own bits.
  struct stat st {};
  REQUIRE(::stat(out.c_str(), &st) == 0);
  const mode_t mask = ::umask(022);
  ::umask(mask);
  CHECK((st.st_mode & 0777) == (0666 & ~mask));
  CHECK(default_file_mode() == (0666u & ~static_cast<unsigned>(mask)));
  fs::permissions(out, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
  write_file_atomically(out.string(), "again");
  REQUIRE(::stat(out.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0640);
  CHECK(leftovers(dir / "out", keep).empty());
  fs::remove_all(dir);
}

TEST_CASE("write_file_atomically: a failed write names the reason and leaves no temp file (issue 13 item 14)",
          "[support]") {
  namespace fs = std::filesystem;
  const auto dir = fresh_dir("stepsim_atomic_efbig");
  { std::ofstream(dir / "out.csv") << "old"; }
  // Past the file size limit, with SIGXFSZ ignored (as the CLI does), write() fails with EFBIG.
  rlimit saved{};
  REQUIRE(::getrlimit(RLIMIT_FSIZE, &saved) == 0);
  auto* const old_handler = std::signal(SIGXFSZ, SIG_IGN);
  rlimit small = saved;
  small.rlim_cur = 4096;
  REQUIRE(::setrlimit(RLIMIT_FSIZE, &small) == 0);
  std::string message;
  try {
    write_file_atomically((dir / "out.csv").string(), std::string(1 << 20, 'x'));
  } catch (const InputError& e) {
    message = e.what();
  }
  ::setrlimit(RLIMIT_FSIZE, &saved);
  std::signal(SIGXFSZ, old_handler);
  CHECK_THAT(message, Contains("out.csv: error while writing: File too large"));
  CHECK(slurp(dir / "out.csv") == "old");  // the old file stands
  CHECK(leftovers(dir, {"out.csv"}).empty());
  fs::remove_all(dir);
}

TEST_CASE("TempFile, TempDir: removed on every exit path, and by remove_registered_temp_paths (issue 13 item 14)",
          "[support]") {
  namespace fs = std::filesystem;
  const auto dir = fresh_dir("stepsim_temp_files");
  std::string tmp_path;
  try {
    TempFile t(dir.string(), "x.json", "x.json");
    tmp_path = t.path();
    CHECK(fs::path(tmp_path).filename().string().rfind(".x.json.tmp.", 0) == 0);
    struct stat st {};
    REQUIRE(::lstat(tmp_path.c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0600);
    t.write("half");
    throw std::runtime_error("a failure while the temp file is open");
  } catch (const std::runtime_error&) {
  }
  CHECK_FALSE(fs::exists(tmp_path));
  CHECK(leftovers(dir, {}).empty());
  // What the CLI's signal handler does: every registered path in flight is removed, files
  // first, then the emptied folders; nothing else is touched.
  {
    TempFile t(dir.string(), "y.csv", "y.csv");
    TempDir d("stepsim-test", "--plot");
    const std::string inside = d.file("plot.gp");
    { std::ofstream(inside) << "plot"; }
    { std::ofstream(dir / "kept.txt") << "kept"; }
    remove_registered_temp_paths();
    CHECK_FALSE(fs::exists(t.path()));
    CHECK_FALSE(fs::exists(inside));
    CHECK_FALSE(fs::exists(d.path()));
    CHECK(fs::exists(dir / "kept.txt"));
  }
  {
    std::string dpath;
    {
      TempDir d("stepsim-test", "--plot");
      dpath = d.path();
      { std::ofstream(d.file("a")) << "a"; }
      { std::ofstream(fs::path(d.path()) / "unregistered") << "b"; }
      struct stat st {};
      REQUIRE(::stat(dpath.c_str(), &st) == 0);
      CHECK((st.st_mode & 0777) == 0700);
    }
    CHECK_FALSE(fs::exists(dpath));  // the destructor removes it with all it holds
  }
  remove_registered_temp_paths();  // nothing registered any more: touches nothing
  CHECK(fs::exists(dir / "kept.txt"));
  fs::remove_all(dir);
}

TEST_CASE("read_input_file: regular files only, at most the limit, never blocking (issue 13 item 15)", "[support]") {
  namespace fs = std::filesystem;
  const auto dir = fresh_dir("stepsim_input_files");
  { std::ofstream(dir / "log.txt") << "0123456789"; }
  CHECK(read_input_file((dir / "log.txt").string(), "a log") == "0123456789");
  CHECK_THROWS_WITH(read_input_file((dir / "log.txt").string(), "a log", 9),
                    Contains("log.txt: is larger than 9 bytes (the most stepsim reads), expected a log"));
  CHECK(read_input_file((dir / "log.txt").string(), "a log", 10) == "0123456789");
  CHECK_THROWS_WITH(read_input_file((dir / "none.txt").string(), "a log"), Contains("none.txt: no such file (expected a log)"));
  CHECK_THROWS_WITH(read_input_file(dir.string(), "a log"), Contains("stepsim_input_files: is a directory, expected a log"));
  // A FIFO with no writer: refused at once (the old readers blocked in open() forever).
  REQUIRE(::mkfifo((dir / "pipe").c_str(), 0600) == 0);
  CHECK_THROWS_WITH(read_input_file((dir / "pipe").string(), "a log"),
                    Contains("pipe: is not a regular file (a FIFO), expected a log"));
  if (fs::is_character_file("/dev/zero"))
    CHECK_THROWS_WITH(read_input_file("/dev/zero", "a CSV"),
                      Contains("/dev/zero: is not a regular file (a character device), expected a CSV"));
  const int sock = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string sock_path = (dir / "sock").string();
  if (sock >= 0 && sock_path.size() < sizeof addr.sun_path) {
    std::strcpy(addr.sun_path, sock_path.c_str());
    REQUIRE(::bind(sock, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    CHECK_THROWS_WITH(read_input_file(sock_path, "a log"), Contains("sock: is not a regular file (a socket), expected a log"));
  }
  if (sock >= 0) ::close(sock);
  // The default limit, 1 GiB, on a sparse file one byte past it: refused by its size, unread.
  fs::resize_file(dir / "log.txt", kMaxInputBytes + 1);
  CHECK_THROWS_WITH(read_input_file((dir / "log.txt").string(), "an nccl-tests log"),
                    Contains("log.txt: is larger than 1 GiB (the most stepsim reads), expected an nccl-tests log"));
  CHECK(format_byte_limit(64u << 20) == "64 MiB");
  CHECK(format_byte_limit(1536) == "1536 bytes");
  fs::remove_all(dir);
}

// ---- issue 13 items 12, 13, 16, 17: --set values, echoes, magnitudes, threads, memory ----

TEST_CASE("apply_override: values get the file limits: nesting, duplicate keys, UTF-8", "[support]") {
  nlohmann::json doc = nlohmann::json::parse(R"({"parallelism": {"dp": 8}})");
  const std::string deep = std::string(65000, '[') + std::string(65000, ']');
  CHECK_THROWS_WITH(apply_override(doc, "parallelism=" + deep, "--set"),
                    Contains("--set: the value of 'parallelism' is nested deeper than 256 levels"));
  const std::string ok_depth = std::string(256, '[') + std::string(256, ']');
  CHECK_NOTHROW(apply_override(doc, "x=" + ok_depth, "--set"));
  CHECK_THROWS_WITH(apply_override(doc, R"(parallelism={"dp": 8, "dp": 16})", "--set"),
                    Contains("--set: duplicate key 'dp' in one JSON object"));
  CHECK_THROWS_WITH(apply_override(doc, "name=ab\xFF", "--set"),
                    Contains("byte 2 of the value of 'name' is 0xFF, which is not valid UTF-8"));
  CHECK_THROWS_WITH(apply_override(doc, "na\xC0me=x", "--set"), Contains("byte 2 of the path is 0xC0"));
  CHECK_NOTHROW(apply_override(doc, "name=caf\xC3\xA9", "--set"));  // valid UTF-8 passes
  CHECK(doc["name"].get<std::string>() == "caf\xC3\xA9");
  CHECK_THROWS_WITH(parse_override_value("x", "1e999", "--vary"), Contains("'1e999' holds a number outside the range"));
}

TEST_CASE("InputError: echoed values are capped in one place (source, path, message)", "[support]") {
  const std::string huge(1 << 20, 'x');
  const InputError e("--set model=" + huge, "/" + huge, "unknown model '" + huge + "'; valid values: a, b");
  CHECK(std::strlen(e.what()) < 1000);
  CHECK(e.source().size() <= kMaxEchoBytes);
  CHECK(e.path().size() <= kMaxEchoBytes);
  CHECK(e.detail().find("valid values: a, b") != std::string::npos);  // the expectation survives
  CHECK(e.detail().find("unknown model '" + std::string(117, 'x') + "...'; valid") == 0);  // the value: 120 bytes
  const std::string prose = "the profile's rates " + std::string(200, 'p') + " and 'short' stays whole";
  CHECK(InputError("f", "", prose).detail() == prose);  // an apostrophe opens no quote
  CHECK(excerpt("abc", 10) == "abc");
  CHECK(excerpt(std::string(200, 'y')) == std::string(117, 'y') + "...");
  CHECK(excerpt("\xC3\xA9\xC3\xA9\xC3\xA9", 5) == "\xC3\xA9...");  // never splits a character
  CHECK(invalid_utf8_offset("ok \xE2\x82\xAC") == std::string_view::npos);
  CHECK(invalid_utf8_offset("a\xED\xA0\x80") == 1);  // a surrogate
}

TEST_CASE("numbers of absurd magnitude are refused where read (units and JSON)", "[support]") {
  CHECK_THROWS_WITH(parse_quantity("1e300B", Dimension::Bytes), Contains("'1e300B' = 1e+300 is beyond any quantity"));
  CHECK_THROWS_WITH(parse_quantity("1e30", Dimension::Seconds), Contains("beyond any quantity"));
  CHECK(parse_quantity("1e18B", Dimension::Bytes) == 1e18);
  const auto doc = nlohmann::json::parse(R"({"a": 1e300, "b": -1e25, "c": 1e24})");
  const JsonReader r(doc, "f.json", "");
  CHECK_THROWS_WITH(r.number("a", Check::Positive), Contains("f.json: /a: expected a positive number of at most 1e+24"));
  CHECK_THROWS_AS(r.number("b"), InputError);
  CHECK(r.number("c") == 1e24);
}

TEST_CASE("run_on_threads: a worker's exception and bad_alloc come back joined", "[support]") {
  std::atomic<int> started{0};
  CHECK_THROWS_AS(run_on_threads(4, [&](const std::function<bool()>& stop) {
                    if (started++ == 0) throw std::bad_alloc();
                    while (!stop()) std::this_thread::yield();  // the others wind down
                  }, "-j"),
                  std::bad_alloc);
  CHECK(started == 4);
  int ran = 0;
  run_on_threads(1, [&](const std::function<bool()>&) { ++ran; }, "-j");
  CHECK(ran == 1);
}

TEST_CASE("check_memory_need: refuses an estimate above what the process may use", "[support]") {
  REQUIRE(memory_limit_bytes().has_value());  // Linux: the physical RAM at least
  CHECK_THROWS_WITH(check_memory_need(1e30, "--vary", "", "a sweep of 1 points", "sweep fewer values"),
                    Contains("--vary: a sweep of 1 points needs about 1e+21 GB of memory, more than the"));
  CHECK_NOTHROW(check_memory_need(1e3, "--vary", "", "a sweep", "x"));
}
