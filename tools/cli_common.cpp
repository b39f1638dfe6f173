// SPDX-License-Identifier: Apache-2.0
// Helpers shared by subcommands.
#include "tools/commands.hpp"

#include "sim/support/atomic_file.hpp"
#include "sim/support/error.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <memory>
#include <charconv>
#include <cstdio>
#include <filesystem>

#include <unistd.h>

namespace stepsim::tools {

void print(const std::string& s) { std::fwrite(s.data(), 1, s.size(), stdout); }

CLI::Validator given_positive() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        long long v = 0;
        const char* end = text.data() + text.size();
        const auto [ptr, ec] = std::from_chars(text.data(), end, v);
        // An empty value would read as 0, "not given" (found by a hostile trial: --ep '' passed).
        if (text.empty()) return "expected a positive integer, got an empty value";
        if (ec == std::errc::result_out_of_range) return fmt::format("expected a positive integer, got {} (out of range)", text);
        if (ec != std::errc() || ptr != end || v >= 1) return "";  // not an integer: CLI11's conversion says so
        return fmt::format("expected a positive integer, got {}", text);
      },
      "POSITIVE");
}

void add_cluster_flags(CLI::App& cmd, ClusterFlags& f, bool required) {
  auto* hw = cmd.add_option("--hardware", f.hardware, "profile name or JSON file");
  auto* ranks = cmd.add_option("--ranks", f.ranks, "DP degree (GPUs)")->check(given_positive());
  if (required) {
    hw->required();
    ranks->required();
  }
  cmd.add_option("--gpus-per-node", f.gpus_per_node, "GPUs per node (default: the profile's)")->check(given_positive());
  cmd.add_option("--axes", f.axes, "TPU: torus axes used for DP (1-3; default all)")->check(given_positive());
  cmd.add_option("--moe-experts", f.moe_experts, "MoE: experts per layer E")->check(given_positive());
  cmd.add_option("--moe-topk", f.moe_topk, "MoE: experts per token k")->check(given_positive());
  cmd.add_option("--ep", f.moe_ep, "MoE: expert-parallel degree (each GPU holds E / ep experts: the factor becomes "
                                   "E/(k·ep), as run's parallelism.ep)")
      ->check(given_positive());
}

void add_calibration_option(CLI::App& cmd, std::vector<std::string>& sets) {
  cmd.add_option_function<std::string>(
      "--calibration", [&sets](const std::string& file) { sets.push_back("calibration=" + file); },
      "calibration overlay (stepsim calibrate nccl-tests | gemm | trace -o); same as --set calibration=FILE");
}

void add_jobs_option(CLI::App& cmd, unsigned& threads, const std::string& what) {
  cmd.add_option_function<std::string>(
         "-j,--jobs",
         [&threads](const std::string& text) {
           const bool digits = !text.empty() && text.size() <= 6 &&
                               std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
           if (!digits || std::stoul(text) > kMaxJobs)
             throw CLI::ValidationError("-j/--jobs", fmt::format("expected an integer in [0, {}] (0 = all cores), got '{}'",
                                                                 kMaxJobs, text));
           threads = static_cast<unsigned>(std::stoul(text));
         },
         fmt::format("{} in parallel: 1 to {}, 0 = all cores (the default); the output does not depend on it",
                     what, kMaxJobs))
      ->type_name("N");
}

bool is_output_flag(const CLI::Option& option) {
  for (const auto& name : {"out", "output", "plot", "trace", "dump-graph", "report"})
    if (option.check_lname(name)) return true;
  return false;
}

void describe_output_flags(CLI::App& app) {
  for (CLI::App* cmd : app.get_subcommands([](CLI::App*) { return true; })) {
    for (CLI::Option* o : cmd->get_options())
      if (is_output_flag(*o)) o->description(o->get_description() + "; overwritten if it exists, written atomically");
    describe_output_flags(*cmd);
  }
}

void check_output_flags(const CLI::App& app) {
  for (const CLI::App* cmd : app.get_subcommands()) {  // the parsed ones
    std::vector<std::pair<std::string, std::string>> outputs;
    std::vector<std::string> inputs;
    for (const CLI::Option* o : cmd->get_options()) {
      if (o->count() == 0) continue;
      for (const auto& v : o->results()) {
        if (is_output_flag(*o)) {
          outputs.emplace_back(o->get_name(), v);
          continue;
        }
        std::error_code ec;
        if (std::filesystem::is_regular_file(v, ec)) inputs.push_back(v);
        if (const auto eq = v.find('='); eq != std::string::npos && std::filesystem::is_regular_file(v.substr(eq + 1), ec))
          inputs.push_back(v.substr(eq + 1));  // --set calibration=FILE
      }
    }
    for (const auto& [flag, path] : outputs) check_output_path(path, flag, inputs);
    check_distinct_outputs(outputs);
    check_output_flags(*cmd);
  }
}

std::string duration_text(double seconds) {
  const auto s = static_cast<long long>(std::ceil(seconds));
  if (s < 60) return fmt::format("{} s", s);
  if (s < 3600) return fmt::format("{} min {:02} s", s / 60, s % 60);
  return fmt::format("{} h {:02} min", s / 3600, (s % 3600) / 60);
}

std::string progress_line(const std::string& what, const std::string& unit, std::uint64_t done, std::uint64_t total,
                          double elapsed_s) {
  const double rate = elapsed_s > 0 ? static_cast<double>(done) / elapsed_s : 0;
  std::string line = fmt::format("{}: {}/{} {} ({:.0f} %)", what, done, total, unit,
                                 total > 0 ? 100.0 * static_cast<double>(done) / static_cast<double>(total) : 100.0);
  if (rate > 0) line += rate >= 100 ? fmt::format(", {:.0f} {}/s", rate, unit) : fmt::format(", {:.3g} {}/s", rate, unit);
  if (done < total && rate > 0) line += ", " + duration_text(static_cast<double>(total - done) / rate) + " left";
  return line;
}

std::function<void(std::uint64_t, std::uint64_t)> progress_printer(const std::string& what, const std::string& unit,
                                                                   std::chrono::steady_clock::time_point t0) {
  using Clock = std::chrono::steady_clock;
  if (::isatty(::fileno(stderr)) == 0) return {};
  struct State {
    Clock::time_point last;
    bool shown = false;
    std::size_t width = 0;
  };
  auto st = std::make_shared<State>(State{t0});
  return [what, unit, t0, st](std::uint64_t done, std::uint64_t total) {
    const auto now = Clock::now();
    if ((now - t0 < std::chrono::milliseconds(500) || now - st->last < std::chrono::milliseconds(100)) && done < total)
      return;
    if (!st->shown && done == total) return;
    st->last = now;
    st->shown = true;
    const std::string line = progress_line(what, unit, done, total, std::chrono::duration<double>(now - t0).count());
    std::fprintf(stderr, "\r%-*s", static_cast<int>(std::max(st->width, line.size())), line.c_str());
    st->width = line.size();
    if (done == total) std::fprintf(stderr, "\n");
    std::fflush(stderr);
  };
}

}  // namespace stepsim::tools
