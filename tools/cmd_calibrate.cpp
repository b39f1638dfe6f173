// SPDX-License-Identifier: Apache-2.0
// `stepsim calibrate nccl-tests LOG... --hardware HW -o FITTED.json`: read nccl-tests output,
// fit a calibration overlay over the nominal profile, and print how good the fit is
// (measured vs nominal vs fitted per row; median/max |error| split at 1 MiB; even→odd
// cross-validation), style.md §3.3. `stepsim calibrate trace TRACE... --hardware HW`: the same
// fit to the NCCL calls of PyTorch profiler traces (issue 18 item 3).
#include "tools/commands.hpp"

#include "hardware/calibration_json.hpp"
#include "hardware/hardware_profile_json.hpp"
#include "sim/support/atomic_file.hpp"
#include "sim/support/error.hpp"
#include "validate/fabric_fit.hpp"
#include "validate/fit.hpp"
#include "validate/kineto.hpp"
#include "validate/nccl_tests.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <optional>
#include <memory>

namespace stepsim::tools {

namespace {

using ordered = nlohmann::ordered_json;

struct CalibrateArgs {
  bool traces = false;  ///< `calibrate trace`: the inputs are torch.profiler traces
  std::vector<std::string> logs;
  std::string hardware;
  std::string output;
  std::string format = "text";
  long long ranks = 0;
  long long gpus_per_node = 0;
  std::string op;
  std::string algorithm = "auto";
  int max_segments = 8;
  int segments = 0;
  int min_points = 2;
  double noise_floor = 0.005;
};

ordered summary_json(const validate::ErrorSummary& s) {
  return {{"large_points", s.large_points}, {"large_median", s.large_median}, {"large_max", s.large_max},
          {"small_points", s.small_points}, {"small_median", s.small_median}, {"small_max", s.small_max}};
}

std::string pct(double e) { return fmt::format("{:+.1f}%", 100 * e); }

std::string summary_line(const std::string& label, const validate::ErrorSummary& s) {
  auto part = [](int n, double med, double mx) {
    return n == 0 ? fmt::format("{:>26}", "-") : fmt::format("{:>4}  {:>8.1f}% {:>8.1f}%", n, 100 * med, 100 * mx);
  };
  return fmt::format("    {:<34} {} | {}\n", label, part(s.large_points, s.large_median, s.large_max),
                     part(s.small_points, s.small_median, s.small_max));
}

std::string text_report(const validate::CalibrationResult& r, const std::string& output, bool traces) {
  std::string out;
  if (r.overlay.tables.empty() && traces)
    out += fmt::format("calibrate trace: no collective table (no NCCL call with a recorded size); fitted over {}\n",
                       r.overlay.hardware);
  else
    out += fmt::format("calibrate {}: {} table(s) fitted over {} ({})\n", traces ? "trace" : "nccl-tests",
                       r.overlay.tables.size(), r.overlay.hardware, r.overlay.cost_model);
  out += output.empty() ? "overlay: not written (no -o)\n" : fmt::format("overlay: {}\n", hardware::describe_overlay(r.overlay));
  for (const auto& t : r.tables) {
    out += fmt::format("\n{}: {} over {} ({} x {}), {}\n", t.source, t.op,
                       count_of(static_cast<std::size_t>(t.group.ranks), "rank"), count_of(static_cast<std::size_t>(t.nodes), "node"),
                       t.group.ranks_per_node, hardware::calibration_scope_name(t.table.scope));
    out += "  segments            lo_bytes          hi_bytes   latency x  bandwidth x  points  max residual\n";
    bool flat = false;
    for (const auto& s : t.table.segments) {
      out += fmt::format("  {:>28.0f} {:>17.0f} {:>11.4g} {:>12.4g} {:>7} {:>12.1f}%\n", s.lo_bytes, s.hi_bytes,
                         s.latency_factor, s.bandwidth_factor, s.points, 100 * s.max_residual);
      flat = flat || s.points == 0;
    }
    if (flat)
      out += "  (0 points: below the smallest size kept, the time of that size held flat; leading spikes left out)\n";
    out += fmt::format("  {:>6} {:>14} | {:>11} {:>8} | {:>11} {:>8} {:>7} | {:>11} {:>8} {:>7} | {:>9}  {}\n", "line",
                       "size (B)", "measured us", "busbw", "nominal us", "busbw", "error", "fitted us", "busbw", "error",
                       "even->odd", "segment");
    for (const auto& row : t.rows) {
      auto busbw = [&](double s) { return s > 0 ? row.bytes / s * t.bus_factor / 1e9 : 0.0; };
      out += fmt::format("  {:>6} {:>14.0f} | {:>11.2f} {:>8.2f} | {:>11.2f} {:>8.2f} {:>7} | {:>11.2f} {:>8.2f} {:>7} | {:>9}  {}\n",
                         row.line > 0 ? std::to_string(row.line) : std::string("-"), row.bytes, row.measured_s * 1e6, busbw(row.measured_s), row.nominal_s * 1e6,
                         busbw(row.nominal_s), pct(row.nominal_s / row.measured_s - 1), row.fitted_s * 1e6,
                         busbw(row.fitted_s), pct(row.fitted_s / row.measured_s - 1),
                         row.cross_s ? pct(*row.cross_s / row.measured_s - 1) : std::string("-"), row.segment);
    }
    out += "  busbw in GB/s (nccl-tests: algbw x bus factor); error = predicted / measured - 1\n";
    if (t.nccl) {
      out += "  nccl cost model (NCCL tuner mirror), per row: size (B)  us  busbw  error  algorithm/protocol\n";
      for (const auto& row : t.rows)
        if (row.nccl_s)
          out += fmt::format("    {:>14.0f} {:>11.2f} {:>8.2f} {:>7}  {}\n", row.bytes, *row.nccl_s * 1e6,
                             *row.nccl_s > 0 ? row.bytes / *row.nccl_s * t.bus_factor / 1e9 : 0.0,
                             pct(*row.nccl_s / row.measured_s - 1), row.nccl_choice);
    }
    out += fmt::format("  summary |error|                    {:>26} | {:>26}\n", "sizes >= 1 MiB: n median max",
                       "< 1 MiB: n median max");
    out += summary_line("nominal, all rows", t.nominal);
    if (t.nccl) out += summary_line("nominal nccl model, all rows", *t.nccl);
    out += summary_line("fitted, all rows (in-sample)", t.fitted);
    out += summary_line("nominal, odd rows", t.cross_nominal);
    out += summary_line("fit on even rows -> odd rows", t.cross);
    out += summary_line("even -> odd by interpolation", t.cross_interpolation);
  }
  for (const auto& w : r.warnings) out += "warning: " + w + "\n";
  return out;
}

std::string json_report(const validate::CalibrationResult& r, const std::string& output) {
  ordered j;
  j["schema"] = "stepsim.calibrate/1";
  j["hardware"] = r.overlay.hardware;
  j["cost_model"] = r.overlay.cost_model;
  j["overlay"] = output.empty() ? ordered(nullptr) : ordered(output);
  ordered tables = ordered::array();
  for (const auto& t : r.tables) {
    ordered rows = ordered::array();
    for (const auto& row : t.rows) {
      auto busbw = [&](double s) { return s > 0 ? row.bytes / s * t.bus_factor : 0.0; };
      ordered x = {{"line", row.line},
                   {"bytes", row.bytes},
                   {"measured_time_s", row.measured_s},
                   {"measured_busbw_bytes_per_s", busbw(row.measured_s)},
                   {"nominal_time_s", row.nominal_s},
                   {"nominal_busbw_bytes_per_s", busbw(row.nominal_s)},
                   {"fitted_time_s", row.fitted_s},
                   {"fitted_busbw_bytes_per_s", busbw(row.fitted_s)},
                   {"segment", row.segment}};
      x["cross_time_s"] = row.cross_s ? ordered(*row.cross_s) : ordered(nullptr);
      if (row.nccl_s) {
        x["nccl_model_time_s"] = *row.nccl_s;
        x["nccl_model_choice"] = row.nccl_choice;
      }
      rows.push_back(x);
    }
    ordered segs = ordered::array();
    for (const auto& s : t.table.segments)
      segs.push_back({{"lo_bytes", s.lo_bytes}, {"hi_bytes", s.hi_bytes}, {"latency_factor", s.latency_factor},
                      {"bandwidth_factor", s.bandwidth_factor}, {"points", s.points}, {"max_residual", s.max_residual}});
    tables.push_back({{"source", t.source},
                      {"op", t.op},
                      {"ranks", t.group.ranks},
                      {"ranks_per_node", t.group.ranks_per_node},
                      {"nodes", t.nodes},
                      {"scope", hardware::calibration_scope_name(t.table.scope)},
                      {"segments", segs},
                      {"rows", rows},
                      {"error_nominal", summary_json(t.nominal)},
                      {"error_fitted", summary_json(t.fitted)},
                      {"error_nominal_odd_rows", summary_json(t.cross_nominal)},
                      {"error_cross_even_to_odd", summary_json(t.cross)},
                      {"error_cross_interpolation", summary_json(t.cross_interpolation)}});
    if (t.nccl) tables.back()["error_nccl_model"] = summary_json(*t.nccl);
  }
  j["tables"] = tables;
  j["warnings"] = r.warnings;
  return j.dump(2) + "\n";
}

// The memory-bound fit of `calibrate trace` (validate::fit_memory_bound), as text and JSON.
std::string memory_fit_text(const validate::MemoryFitResult& m) {
  std::string ops;
  for (const auto& [op, n] : m.ops) ops += fmt::format("{}{} {}", ops.empty() ? "" : ", ", n, op);
  return fmt::format("memory-bound kernels: {} with known traffic ({}), >= {:g} MiB and {:g} us each\n"
                     "  memory.hbm_efficiency {:.3f} (least median |error| of bytes / (HBM bandwidth x e) against the kernel times; profile {:.3f})\n"
                     "  |error| median / max: profile's {:.1f} % / -, fitted {:.1f} % / {:.1f} %, fitted on the even "
                     "points -> odd {:.1f} %\n",
                     m.memory.points, ops, validate::kMinTraceStreamBytes / 1048576.0, validate::kMinTraceStreamS * 1e6,
                     m.memory.hbm_efficiency, m.profile_efficiency, 100 * m.nominal_median_residual,
                     100 * m.memory.median_residual, 100 * m.memory.max_residual, 100 * m.cross_median_residual);
}

ordered memory_fit_json(const validate::MemoryFitResult& m) {
  ordered ops = ordered::object();
  for (const auto& [op, n] : m.ops) ops[op] = n;
  return ordered{{"hbm_efficiency", m.memory.hbm_efficiency},
                 {"profile_hbm_efficiency", m.profile_efficiency},
                 {"points", m.memory.points},
                 {"ops", ops},
                 {"median_residual", m.memory.median_residual},
                 {"max_residual", m.memory.max_residual},
                 {"profile_median_residual", m.nominal_median_residual},
                 {"cross_even_to_odd_median_residual", m.cross_median_residual}};
}

// The host time fit of `calibrate trace` (validate::fit_host_time), as text and JSON.
std::string host_fit_text(const validate::HostFitResult& h) {
  return fmt::format("host: {} launch intervals over {} steps ({} left out: {} around a blocking call, {} at a "
                     "hand-off between threads)\n"
                     "  framework.host_op_s {:.1f} us per launched kernel (mean CPU time between one thread's "
                     "consecutive launches of GPU work; median interval {:.1f} us); a run with the overlay takes it "
                     "(without one, scenarios model no host time)\n"
                     "  per-step |error| median / max: {:.1f} % / {:.1f} %, fitted on the even steps -> odd {}\n"
                     "  the GPU waited for the CPU {:.1f} % of the steps' time{}\n{}",
                     h.host.points, h.host.steps, h.blocked + h.handoffs, h.blocked, h.handoffs, h.host.host_op_s * 1e6,
                     h.median_interval_s * 1e6, 100 * h.host.median_residual, 100 * h.host.max_residual,
                     h.cross_median_residual < 0 ? std::string("- (one step)")
                                                 : fmt::format("{:.1f} %", 100 * h.cross_median_residual),
                     100 * h.gpu_waited_fraction,
                     h.gpu_waited_fraction > 0.1 ? " (over 10 %: launch-bound, the host time decides part of the step)"
                                                 : " (the CPU keeps ahead: host time hardly moves the step)",
                     h.shared_launch_events > 0
                         ? fmt::format("  {} GPU events shared a launch call with another (CUDA graphs): each graph "
                                       "launch counts once, so the mean mixes per-graph and per-kernel CPU time\n",
                                       h.shared_launch_events)
                         : std::string());
}

ordered host_fit_json(const validate::HostFitResult& h) {
  return ordered{{"host_op_s", h.host.host_op_s},
                 {"points", h.host.points},
                 {"steps", h.host.steps},
                 {"median_interval_s", h.median_interval_s},
                 {"left_out_blocking", h.blocked},
                 {"left_out_handoff", h.handoffs},
                 {"shared_launch_events", h.shared_launch_events},
                 {"median_residual", h.host.median_residual},
                 {"max_residual", h.host.max_residual},
                 {"cross_even_to_odd_median_residual",
                  h.cross_median_residual < 0 ? ordered(nullptr) : ordered(h.cross_median_residual)},
                 {"gpu_waited_fraction", h.gpu_waited_fraction}};
}

int cmd_calibrate(const CalibrateArgs& a) {
  const auto hw = hardware::load_profile(a.hardware, "--hardware");
  if (a.ranks < 0 || a.ranks > (1 << 24))
    throw InputError("--ranks", "", fmt::format("expected an integer in [2, 16777216], got {}", a.ranks));
  if (a.gpus_per_node < 0 || a.gpus_per_node > (1 << 20))
    throw InputError("--gpus-per-node", "", fmt::format("expected a positive integer, got {}", a.gpus_per_node));
  if (a.min_points < 2 || a.min_points > 1000)
    throw InputError("--min-points", "", fmt::format("expected an integer in [2, 1000], got {}", a.min_points));
  if (!(a.noise_floor >= 0 && a.noise_floor < 1))
    throw InputError("--noise-floor", "", fmt::format("expected a fraction in [0, 1), got {}", a.noise_floor));
  if (a.max_segments < 1 || a.max_segments > 64)
    throw InputError("--max-segments", "", fmt::format("expected an integer in [1, 64], got {}", a.max_segments));
  if (a.segments < 0 || a.segments > 64)
    throw InputError("--segments", "", fmt::format("expected an integer in [1, 64] (0: chosen by BIC), got {}", a.segments));
  validate::CalibrateOptions opt;
  opt.ranks = static_cast<int>(a.ranks);
  opt.gpus_per_node = static_cast<int>(a.gpus_per_node);
  opt.op = a.op;
  opt.algorithm = algorithm_from(a.algorithm);
  opt.fit.max_segments = std::max(a.max_segments, a.segments);
  opt.fit.segments = a.segments;
  opt.fit.min_points = a.min_points;
  opt.fit.noise_floor = a.noise_floor;
  validate::CalibrationResult result;
  std::optional<validate::GemmFitResult> gemm_fit;
  std::optional<validate::MemoryFitResult> memory_fit;
  std::optional<validate::HostFitResult> host_fit;
  if (a.traces) {
    validate::TraceCalibration tc = validate::calibrate_traces(validate::read_kineto_traces(a.logs), hw, opt, a.output);
    result = std::move(tc.collectives);
    gemm_fit = std::move(tc.gemm);
    memory_fit = std::move(tc.memory);
    host_fit = std::move(tc.host);
  } else {
    std::vector<validate::NcclTestsLog> logs;
    for (const auto& path : a.logs) logs.push_back(validate::read_nccl_tests_file(path));
    result = validate::calibrate(logs, hw, opt, a.output);
  }
  if (!a.output.empty()) write_file_atomically(a.output, hardware::calibration_json(result.overlay));
  if (!a.traces) {
    print(a.format == "json" ? json_report(result, a.output) : text_report(result, a.output, false));
    return 0;
  }
  if (a.format == "json") {
    ordered j;
    j["schema"] = "stepsim.calibrate-trace/1";
    j["collectives"] = ordered::parse(json_report(result, a.output));
    j["gemm"] = gemm_fit ? ordered::parse(gemm_fit_json(*gemm_fit, hw, a.output)) : ordered(nullptr);
    j["memory_bound"] = memory_fit ? memory_fit_json(*memory_fit) : ordered(nullptr);
    j["host"] = host_fit ? host_fit_json(*host_fit) : ordered(nullptr);
    print(j.dump(2, ' ', false, ordered::error_handler_t::replace) + "\n");
  } else {
    std::string out = text_report(result, a.output, true);
    if (gemm_fit) out += "\n" + gemm_fit_text(*gemm_fit, hw, result.overlay, a.output);
    if (memory_fit) out += "\n" + memory_fit_text(*memory_fit);
    if (host_fit) out += "\n" + host_fit_text(*host_fit);
    print(out);
  }
  return 0;
}

struct FabricArgs {
  std::vector<std::string> logs;
  std::string hardware;
  std::optional<std::string> network;
  std::string format = "text";
};

// `stepsim calibrate fabric LOG... --hardware HW [--network NAME]`: the fabric terms of a
// network preset fitted to its multi-node logs, with the holdout check (validate/fabric_fit.hpp).
int cmd_calibrate_fabric(const FabricArgs& a) {
  std::vector<validate::NcclTestsLog> logs;
  std::vector<hardware::HardwareProfile> profiles;
  for (const auto& path : a.logs) {
    logs.push_back(validate::read_nccl_tests_file(path));
    // Each log on its own GPU's profile unless --hardware names one for all.
    std::string ref = a.hardware;
    if (ref.empty()) {
      std::string gpu;
      for (const auto& run : logs.back().runs)
        if (gpu.empty()) gpu = run.gpu;
      if (gpu.empty())
        throw InputError(path, "", "the log names no GPU (a raw log's device lines, or a CSV's .json sidecar with \"gpu\"); "
                                   "pass --hardware");
      ref = validate::builtin_profile_for_gpu(gpu);
      if (ref.empty())
        throw InputError(path, "", fmt::format("no built-in profile for the GPU this log names ('{}'); pass --hardware", gpu));
    }
    auto hw = hardware::load_profile(ref, "--hardware");
    if (a.network) hardware::apply_network_flag(hw, *a.network, "--network");
    profiles.push_back(std::move(hw));
  }
  const auto r = validate::calibrate_fabric(logs, profiles);
  if (a.format == "json") {
    ordered j;
    j["schema"] = "stepsim.calibrate-fabric/1";
    j["hardware"] = r.hardware;
    j["network"] = r.network.empty() ? ordered(nullptr) : ordered(r.network);
    j["cost_model"] = r.cost_model;
    j["min_bytes"] = r.min_bytes;
    j["fabric_latency_per_log2_nodes_s"] = r.terms.latency_per_log2_nodes_s;
    j["fabric_bandwidth_efficiency"] = r.terms.bandwidth_efficiency;
    j["given_fabric_latency_per_log2_nodes_s"] = r.given.latency_per_log2_nodes_s;
    j["given_fabric_bandwidth_efficiency"] = r.given.bandwidth_efficiency;
    j["points"] = r.terms.points;
    ordered tables = ordered::array();
    for (const auto& t : r.tables)
      tables.push_back({{"source", t.source}, {"op", t.op}, {"gpu", t.gpu}, {"ranks", t.ranks}, {"nodes", t.nodes},
                        {"rows", t.rows}, {"nominal_median", t.nominal_median}, {"nominal_max", t.nominal_max},
                        {"fitted_median", t.fitted_median}, {"fitted_max", t.fitted_max},
                        {"held_out_median", t.held_out_median}, {"held_out_max", t.held_out_max},
                        {"held_out_rule", t.held_out_rule}, {"hardware", t.hardware},
                        {"given_median", t.given_median}, {"given_max", t.given_max},
                        {"held_out_fabric_latency_per_log2_nodes_s", t.held_out_terms.latency_per_log2_nodes_s},
                        {"held_out_fabric_bandwidth_efficiency", t.held_out_terms.bandwidth_efficiency}});
    j["tables"] = std::move(tables);
    j["warnings"] = r.warnings;
    print(j.dump(2, ' ', false, ordered::error_handler_t::replace) + "\n");
    return 0;
  }
  std::string out = fmt::format("calibrate fabric: {} multi-node table(s) over {}{} ({} model), sizes >= {:.0f} B\n",
                                r.tables.size(), r.hardware, r.network.empty() ? "" : " on network " + r.network,
                                r.cost_model, r.min_bytes);
  out += fmt::format("fitted on every table ({} rows): fabric_latency_per_log2_nodes_s {:.4g} us, "
                     "fabric_bandwidth_efficiency {:.4g}\n",
                     r.terms.points, r.terms.latency_per_log2_nodes_s * 1e6, r.terms.bandwidth_efficiency);
  out += fmt::format("the network's terms as given: {:.4g} us, {:.4g} (column 'given')\n",
                     r.given.latency_per_log2_nodes_s * 1e6, r.given.bandwidth_efficiency);
  out += "  t = nominal latency + a x log2(nodes) + nominal bandwidth time / efficiency\n";
  std::size_t w = 5;
  for (const auto& t : r.tables) w = std::max(w, t.source.size());
  out += fmt::format("  {:<{}} {:<11} {:>5} {:>5} {:>4} | {:>15} | {:>15} | {:>15} | {:>16}  {}\n", "table", w, "profile",
                     "ranks", "nodes", "rows", "nominal med/max", "given med/max", "fitted med/max", "held-out med/max",
                     "held out by (its terms)");
  for (const auto& t : r.tables)
    out += fmt::format("  {:<{}} {:<11} {:>5} {:>5} {:>4} | {:>6.1f}% {:>6.1f}% | {:>6.1f}% {:>6.1f}% | {:>6.1f}% {:>6.1f}% | "
                       "{:>7.1f}% {:>6.1f}%  {} ({:.3g} us, {:.3g})\n",
                       t.source, w, t.hardware, t.ranks, t.nodes, t.rows, 100 * t.nominal_median, 100 * t.nominal_max,
                       100 * t.given_median, 100 * t.given_max,
                       100 * t.fitted_median, 100 * t.fitted_max, 100 * t.held_out_median, 100 * t.held_out_max,
                       t.held_out_rule, t.held_out_terms.latency_per_log2_nodes_s * 1e6,
                       t.held_out_terms.bandwidth_efficiency);
  out += "  |error| = |predicted / measured - 1|; held out: each table predicted by the terms fitted on the other "
         "tables (one table: its even sizes predict its odd ones)\n";
  out += fmt::format("use: --set hardware.inter_node.fabric_latency_per_log2_nodes_s={:.4g}us --set "
                     "hardware.inter_node.fabric_bandwidth_efficiency={:.4g} (or those two fields in a profile's "
                     "inter_node; docs/calibration.md)\n",
                     r.terms.latency_per_log2_nodes_s * 1e6, r.terms.bandwidth_efficiency);
  for (const auto& warning : r.warnings) out += "warning: " + warning + "\n";
  print(out);
  return 0;
}

}  // namespace

namespace {

/// The fit's options, shared by `calibrate nccl-tests` and `calibrate trace`.
void add_fit_options(CLI::App& cmd, CalibrateArgs& a) {
  cmd.add_option("--algorithm", a.algorithm, "nominal algorithm: auto | ring | hierarchical")
      ->check(CLI::IsMember(hardware::collective_algorithm_names()));
  cmd.add_option("--max-segments", a.max_segments, "upper bound on size segments per table (default 8)");
  cmd.add_option("--segments", a.segments,
                 "fix the number of size segments per table instead of choosing it by BIC (0, the default: BIC)");
  cmd.add_option("--min-points", a.min_points, "measurements per segment (default 2)");
  cmd.add_option("--noise-floor", a.noise_floor, "relative noise below which no segment is added (default 0.005)");
  cmd.add_option("--format", a.format, "output format")->check(CLI::IsMember({"text", "json"}));
}

}  // namespace

void add_calibrate_command(CLI::App& app, Action& action) {
  auto a = std::make_shared<CalibrateArgs>();
  auto* calibrate = app.add_subcommand("calibrate", "fit a calibration overlay to measurements");
  calibrate->require_subcommand(1);
  auto* nccl = calibrate->add_subcommand("nccl-tests", "fit collectives to nccl-tests output (raw stdout or normalized CSV)");
  nccl->add_option("logs", a->logs, "nccl-tests logs (raw stdout, any launcher) or normalized CSVs")->required();
  nccl->add_option("--hardware", a->hardware, "nominal profile the factors are relative to (name or JSON file)")->required();
  nccl->add_option("-o,--output", a->output, "write the fitted overlay (JSON) here");
  nccl->add_option("--ranks", a->ranks, "rank count of every table (default: from the '#  Rank' lines or busbw/algbw)");
  nccl->add_option("--gpus-per-node", a->gpus_per_node, "GPUs per node (default: ranks / hosts in the log, else the profile's)");
  nccl->add_option("--op", a->op, "collective of every table (default: from the log or file name)")
      ->check(CLI::IsMember(hardware::collective_op_nccl_tests_names()));
  add_fit_options(*nccl, *a);
  nccl->callback([a, &action] { action = [a] { return cmd_calibrate(*a); }; });
  auto t = std::make_shared<CalibrateArgs>();
  t->traces = true;
  auto f = std::make_shared<FabricArgs>();
  auto* fabric = calibrate->add_subcommand(
      "fabric", "fit a network's fabric terms (latency per doubling of the node count, bandwidth efficiency) to "
                "multi-node nccl-tests logs, each log held out in turn");
  fabric->add_option("logs", f->logs, "multi-node nccl-tests logs (raw stdout with '#  Rank' lines, or CSVs with their "
                                      ".json sidecar)")->required();
  fabric->add_option("--hardware", f->hardware, "profile whose nominal model the terms correct, for every log (name or JSON "
                                                "file; default: each log's GPU's built-in profile)");
  fabric->add_option("--network", f->network, "network preset giving the NICs the logs ran on (stepsim list networks)");
  fabric->add_option("--format", f->format, "output format")->check(CLI::IsMember({"text", "json"}));
  fabric->callback([f, &action] { action = [f] { return cmd_calibrate_fabric(*f); }; });

  auto* trace = calibrate->add_subcommand("trace", "fit collectives to the NCCL calls of PyTorch profiler (Kineto) traces");
  trace->add_option("traces", t->logs, "torch.profiler traces (.json / .json.gz, one per rank) or folders of them")->required();
  trace->add_option("--hardware", t->hardware, "nominal profile the factors are relative to (name or JSON file)")->required();
  trace->add_option("-o,--output", t->output, "write the fitted overlay (JSON) here");
  trace->add_option("--gpus-per-node", t->gpus_per_node, "GPUs per node (default: the profile's)");
  add_fit_options(*trace, *t);
  trace->callback([t, &action] { action = [t] { return cmd_calibrate(*t); }; });
  add_calibrate_gemm_command(*calibrate, action);
}

}  // namespace stepsim::tools
