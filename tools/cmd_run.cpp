// SPDX-License-Identifier: Apache-2.0
// `stepsim run`: simulate one step of a scenario and print its report; optionally write its
// Chrome trace (--trace) and task graph (--dump-graph).
#include "tools/commands.hpp"

#include "models/report.hpp"
#include "models/scenario.hpp"
#include "models/simulate.hpp"
#include "models/strategy/compute_tasks.hpp"
#include "sim/support/atomic_file.hpp"
#include "sim/support/error.hpp"
#include "models/report_html.hpp"
#include "sim/trace_chrome.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <sstream>

namespace stepsim::tools {

namespace {

struct RunArgs {
  std::string scenario;
  std::vector<std::string> sets;
  std::string format = "text";
  std::string trace;
  std::string trace_ranks;
  std::string dump_graph;
  std::string report;  // --report FILE.html
  bool quiet = false;  // --quiet: no progress line
  bool timing = false;             // --timing: wall time on stderr (never in the report)
  bool trace_given = false;        // the flags were on the command line (even with an empty value)
  bool trace_ranks_given = false;
};

// Traces of per_rank runs with more ranks than this keep ranks 0-7 and the slowest rank
// unless --trace-ranks says otherwise.
constexpr std::int64_t kTraceAllRanksUpTo = 64;

// "0-7,12,100-103" -> ranks, each < world.
std::vector<std::uint32_t> parse_rank_list(const std::string& text, std::int64_t world) {
  std::vector<std::uint32_t> out;
  const auto fail = [&](const std::string& why) {
    throw InputError("--trace-ranks", "", fmt::format("{} in '{}'; expected ranks in [0, {}) as a list like 0-7,12", why, text, world));
  };
  if (text.empty() || text.front() == ',' || text.back() == ',' || text.find(",,") != std::string::npos)
    fail("an empty item");
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    const auto dash = item.find('-');
    long long lo = 0, hi = 0;
    try {
      std::size_t used = 0;
      lo = std::stoll(item.substr(0, dash), &used);
      if (used != item.substr(0, dash).size()) fail(fmt::format("'{}' is not a rank", item));
      hi = lo;
      if (dash != std::string::npos) {
        hi = std::stoll(item.substr(dash + 1), &used);
        if (used != item.size() - dash - 1) fail(fmt::format("'{}' is not a range", item));
      }
    } catch (const std::logic_error&) {
      fail(fmt::format("'{}' is not a rank or range", item));
    }
    if (lo > hi) fail(fmt::format("'{}' is reversed (write {}-{})", item, hi, lo));
    if (lo < 0 || hi >= world) fail(fmt::format("'{}' is out of range", item));
    for (long long r = lo; r <= hi; ++r) out.push_back(static_cast<std::uint32_t>(r));
  }
  if (out.empty()) fail("no rank");
  return out;
}

// The report on stdout; with --timing, the simulation's wall time on stderr (reports stay
// byte-deterministic: issue 13 item 19).
void print_report(const RunArgs& a, const models::Report& r) {
  print(a.format == "json" ? models::report_json(r) : models::report_text(r));
  if (a.timing)
    std::fprintf(stderr, "timing: simulated in %.3f ms wall time (%lld events)\n", r.wall_time_s * 1e3,
                 static_cast<long long>(r.events));
}

int cmd_run(const RunArgs& a) {
  // Empty output names are refused before any command runs (tools::check_output_flags).
  if (a.trace_ranks_given && !a.trace_given)
    throw InputError("--trace-ranks", "", "chooses the ranks of a trace; it needs --trace FILE.json");
  const models::Scenario s = models::load_scenario(a.scenario, a.sets);
  if (a.trace_ranks_given && s.rank_mode != "per_rank")
    throw InputError("--trace-ranks", "",
                     "needs sim.rank_mode \"per_rank\" (a symmetric run simulates one rank of each kind; its "
                     "trace holds them all)");
  // per_rank runs over half a second show a progress line on a terminal (issue 20 item 5).
  const models::RunProgress progress =
      a.quiet || s.rank_mode != "per_rank" ? models::RunProgress() : progress_printer("per_rank", "tasks", std::chrono::steady_clock::now());
  if (a.trace.empty() && a.dump_graph.empty() && a.report.empty()) {
    print_report(a, models::run(s, nullptr, progress));
    return 0;
  }
  const std::int64_t world = s.rank_mode == "per_rank" ? s.world_size() : 1;
  std::vector<std::uint32_t> ranks;
  if (!a.trace_ranks.empty()) ranks = parse_rank_list(a.trace_ranks, world);
  models::SimulatedStep kept;
  const models::Report r = models::run(s, &kept, progress);
  if (!a.dump_graph.empty()) {
    std::ostringstream dot;
    kept.step.graph.write_graphviz(dot);
    write_file_atomically(a.dump_graph, dot.str());
  }
  if (!a.trace.empty()) {
    sim::ChromeTraceOptions o;
    o.copies = kept.copies;
    o.stream_names = models::stream_names();
    if (s.parallelism.pp > 1) o.rank_name = "PP rank";  // the graph's ranks are the pipeline's stages
    o.counter_names = {"activations_bytes", "buffers_bytes"};
    static_assert(models::kActivationCounter == 0 && models::kBufferCounter == 1);
    // per_rank: the trace's ranks are the engine's slots (copy × pp + stage); a process is named
    // by the world rank it plays (parallelism.order), and --trace-ranks names world ranks.
    const auto slot = [&](std::int64_t w) { return static_cast<std::uint32_t>(models::per_rank_slot(s, w)); };
    if (world > 1) {
      o.rank_labels.resize(static_cast<std::size_t>(world));
      for (std::int64_t w = 0; w < world; ++w)
        o.rank_labels[slot(w)] = s.parallelism.pp > 1 ? fmt::format("rank {} (PP rank {})", w, s.layout().coords(w)[3])
                                                      : fmt::format("rank {}", w);
    }
    for (const std::uint32_t w : ranks) o.ranks.push_back(world > 1 ? slot(w) : w);
    if (o.ranks.empty() && world > kTraceAllRanksUpTo) {
      for (std::uint32_t k = 0; k < 8; ++k) o.ranks.push_back(slot(k));
      if (r.per_rank.slowest_rank >= 8) o.ranks.push_back(slot(r.per_rank.slowest_rank));
      std::fprintf(stderr, "note: trace limited to ranks 0-7%s of %lld (use --trace-ranks)\n",
                   r.per_rank.slowest_rank >= 8 ? fmt::format(" and {} (slowest)", r.per_rank.slowest_rank).c_str() : "",
                   static_cast<long long>(world));
    }
    write_file_atomically(a.trace, sim::chrome_trace_json(kept.step.graph, *kept.timeline, o));
  }
  if (!a.report.empty()) write_file_atomically(a.report, models::report_html(r, kept));
  print_report(a, r);
  return 0;
}

}  // namespace

void add_run_command(CLI::App& app, Action& action) {
  auto a = std::make_shared<RunArgs>();
  auto* run = app.add_subcommand("run", "simulate one training step of a scenario");
  run->add_option("scenario", a->scenario, "scenario JSON file")->required();
  run->add_option("--set", a->sets, "override a scenario field before validation: PATH=VALUE (repeatable)");
  add_calibration_option(*run, a->sets);
  run->add_option("--format", a->format, "output format")->check(CLI::IsMember({"text", "json"}));
  auto* trace = run->add_option("--trace", a->trace, "write a Chrome trace-event JSON file (Perfetto, chrome://tracing)");
  auto* trace_ranks = run->add_option(
      "--trace-ranks", a->trace_ranks,
      "ranks to trace in per_rank mode, e.g. 0-7,100 (default: all up to 64 ranks, else 0-7 and the slowest)");
  run->add_option("--dump-graph", a->dump_graph, "write the task graph in Graphviz DOT");
  run->add_option("--report", a->report,
                  "write a one-file HTML report (timeline, memory over the step, breakdown, collectives; no script, "
                  "nothing fetched)");
  run->add_flag("--timing", a->timing, "print the simulation's wall time on stderr (reports stay byte-identical)");
  run->add_flag("--quiet", a->quiet,
                "no progress line on stderr for long per_rank runs (there is none either when stderr is not a terminal)");
  run->callback([a, &action, trace, trace_ranks] {
    a->trace_given = trace->count() > 0;
    a->trace_ranks_given = trace_ranks->count() > 0;
    action = [a] { return cmd_run(*a); };
  });
}

}  // namespace stepsim::tools
