// SPDX-License-Identifier: Apache-2.0
// Runs one row of a test table through the real `stepsim` CLI (style.md §3.7 items 3 and 5).
//   stepsim_cli_check TABLE.json ROW_NAME STEPSIM SOURCE_DIR
// Every row: name, source, args ("@SRC@" = repository root; commands run in SOURCE_DIR;
// "@FIFO@" = a named pipe made for the row in a fresh temporary folder, which a FIFO cannot be
// committed; such a row runs under `timeout`, so a reader that blocks on it fails in seconds).
// Error rows (tests/errors/errors.json): status (expected exit code) and stderr (a substring
// of the combined output), e.g. the file, JSON path, bad value and expectation.
// Figure rows (tests/figures/figures.json): pointer and one check:
//   expect + rel_tol | min + max | equals (JSON value) | greater_than {args, pointer, factor}
//   | less_than {args, pointer, factor}  (value < factor × the other run's value).
#include <nlohmann/json.hpp>

#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

using json = nlohmann::json;

namespace {

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

struct Result {
  int status = 0;
  std::string output;
  std::string command;
};

/// A FIFO in a fresh temporary folder, removed with it at the end of the row.
struct Fifo {
  std::string dir, path;
  Fifo() {
    const char* tmp = std::getenv("TMPDIR");
    std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/stepsim-cli-check-XXXXXX";
    if (::mkdtemp(templ.data()) == nullptr) throw std::runtime_error("cannot create a folder for @FIFO@");
    dir = templ;
    path = dir + "/input.fifo";
    if (::mkfifo(path.c_str(), 0600) != 0) throw std::runtime_error("cannot make the FIFO " + path);
  }
  ~Fifo() {
    ::unlink(path.c_str());
    ::rmdir(dir.c_str());
  }
};

void replace_all(std::string& s, const std::string& from, const std::string& to) {
  for (auto pos = s.find(from); pos != std::string::npos; pos = s.find(from, pos + to.size()))
    s.replace(pos, from.size(), to);
}

Result run_raw(const std::string& stepsim, const std::string& src, const json& args) {
  std::unique_ptr<Fifo> fifo;
  for (const auto& a : args)
    if (!fifo && a.get<std::string>().find("@FIFO@") != std::string::npos) fifo = std::make_unique<Fifo>();
  std::string cmd = "cd " + shell_quote(src) + " && " + (fifo ? "timeout -k 5 20 " : "") + shell_quote(stepsim);
  for (const auto& a : args) {
    std::string s = a.get<std::string>();
    replace_all(s, "@SRC@", src);
    if (fifo) replace_all(s, "@FIFO@", fifo->path);
    cmd += " " + shell_quote(s);
  }
  cmd += " 2>&1";
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) throw std::runtime_error("cannot run " + cmd);
  std::array<char, 4096> buf{};
  for (std::size_t n; (n = std::fread(buf.data(), 1, buf.size(), p)) > 0;) out.append(buf.data(), n);
  const int rc = pclose(p);
  std::cout << "$ " << cmd << "\n";
  return {WIFEXITED(rc) ? WEXITSTATUS(rc) : 128 + WTERMSIG(rc), out, cmd};
}

json run_cli(const std::string& stepsim, const std::string& src, const json& args) {
  const Result r = run_raw(stepsim, src, args);
  if (r.status != 0)
    throw std::runtime_error("command failed (status " + std::to_string(r.status) + "): " + r.output);
  return json::parse(r.output);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::cerr << "usage: figure_runner FIGURES.json ROW_NAME STEPSIM SOURCE_DIR\n";
    return 2;
  }
  try {
    std::ifstream in(argv[1]);
    const json doc = json::parse(in);
    const std::string name = argv[2];
    const std::string stepsim = argv[3], src = argv[4];
    for (const auto& row : doc.at("rows")) {
      if (row.at("name").get<std::string>() != name) continue;
      const std::string source = row.at("source").get<std::string>();
      if (row.contains("status")) {
        const Result r = run_raw(stepsim, src, row.at("args"));
        const std::string want = row.at("stderr").get<std::string>();
        const int status = row.at("status").get<int>();
        const bool ok = r.status == status && r.output.find(want) != std::string::npos;
        std::cout << r.output << name << ": exit " << r.status << " (expected " << status
                  << "), output " << (r.output.find(want) != std::string::npos ? "contains" : "LACKS")
                  << " '" << want << "' [" << source << "]: " << (ok ? "ok" : "FAILED") << "\n";
        return ok ? 0 : 1;
      }
      const json::json_pointer ptr(row.at("pointer").get<std::string>());
      const json value = run_cli(stepsim, src, row.at("args")).at(ptr);
      bool ok = false;
      std::string expectation;
      if (row.contains("expect")) {
        const double e = row.at("expect").get<double>(), tol = row.at("rel_tol").get<double>();
        ok = std::fabs(value.get<double>() - e) <= tol * std::fabs(e);
        expectation = "expected " + row.at("expect").dump() + " within " + std::to_string(tol * 100) + " %";
      } else if (row.contains("min")) {
        const double v = value.get<double>();
        ok = v >= row.at("min").get<double>() && v <= row.at("max").get<double>();
        expectation = "expected in [" + row.at("min").dump() + ", " + row.at("max").dump() + "]";
      } else if (row.contains("equals")) {
        ok = value == row.at("equals");
        expectation = "expected " + row.at("equals").dump();
      } else {
        const bool greater = row.contains("greater_than");
        const json& other = row.at(greater ? "greater_than" : "less_than");
        const double o = run_cli(stepsim, src, other.at("args"))
                             .at(json::json_pointer(other.at("pointer").get<std::string>()))
                             .get<double>();
        const double bound = other.at("factor").get<double>() * o;
        ok = greater ? value.get<double>() > bound : value.get<double>() < bound;
        expectation = std::string("expected ") + (greater ? "> " : "< ") + other.at("factor").dump() +
                      " x " + json(o).dump();
      }
      std::cout << name << ": " << ptr.to_string() << " = " << value.dump() << ", " << expectation
                << " [" << source << "]: " << (ok ? "ok" : "FAILED") << "\n";
      return ok ? 0 : 1;
    }
    std::cerr << "no figure named " << name << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "figure_runner: " << e.what() << "\n";
    return 1;
  }
}
