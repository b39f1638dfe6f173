// SPDX-License-Identifier: Apache-2.0
// Predicted vs measured per phase and per task.
#include "validate/compare.hpp"

#include "models/simulate.hpp"
#include "sim/support/error.hpp"
#include "validate/fit.hpp"
#include "validate/stats.hpp"

#include "hardware/task_cost.hpp"
#include "models/report.hpp"
#include "models/strategy/strategy.hpp"
#include "sim/engine.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>

namespace stepsim::validate {

namespace {

using Span = std::pair<double, double>;

std::vector<Span> merged(std::vector<Span> v) {
  std::sort(v.begin(), v.end());
  std::vector<Span> out;
  for (const Span& s : v) {
    if (!out.empty() && s.first <= out.back().second) out.back().second = std::max(out.back().second, s.second);
    else out.push_back(s);
  }
  return out;
}

double length(const std::vector<Span>& v) {
  double t = 0;
  for (const Span& s : v) t += s.second - s.first;
  return t;
}

/// Length of `a` not covered by `b` (both merged).
double uncovered(const std::vector<Span>& a, const std::vector<Span>& b) {
  double t = 0;
  std::size_t j = 0;
  for (const Span& s : a) {
    double cur = s.first;
    while (j < b.size() && b[j].second <= cur) ++j;
    for (std::size_t k = j; k < b.size() && b[k].first < s.second; ++k) {
      if (b[k].first > cur) t += b[k].first - cur;
      cur = std::max(cur, b[k].second);
      if (cur >= s.second) break;
    }
    if (cur < s.second) t += s.second - cur;
  }
  return t;
}

void check_config(const models::Scenario& s, const MeasuredTimeline& m, std::vector<std::string>& w) {
  const MeasuredConfig& c = m.config;
  auto differ = [&](const char* what, const std::string& scenario, const std::string& measured) {
    if (scenario != measured) w.push_back(fmt::format("{}: scenario {}, measured run {}", what, scenario, measured));
  };
  differ("parallelism.strategy", s.parallelism.strategy, "ddp");
  differ("model kind", s.model.kind, "mlp");
  differ("layers", std::to_string(s.model.layers.size()), std::to_string(c.layers));
  differ("parameters", std::to_string(s.model.parameter_count()), std::to_string(2 * c.layers * c.hidden * c.ffn));
  differ("tokens per GPU per micro-batch (batch.micro_batch_size × batch.seq_len)",
         std::to_string(s.tokens_per_micro_batch()), std::to_string(c.tokens));
  differ("batch.grad_accum", std::to_string(s.batch.grad_accum), std::to_string(c.grad_accum));
  differ("parallelism.dp", std::to_string(s.parallelism.dp), std::to_string(c.ranks));
  differ("parallelism.bucket_cap_mb", fmt::format("{:g}", s.parallelism.bucket_cap_mb), fmt::format("{:g}", c.bucket_cap_mb));
  differ("parallelism.first_bucket_mb", fmt::format("{:g}", s.parallelism.first_bucket_mb),
         fmt::format("{:g}", c.first_bucket_mb));
  differ("parallelism.gradient_as_bucket_view", s.parallelism.gradient_as_bucket_view ? "true" : "false",
         c.gradient_as_bucket_view ? "true" : "false");
  differ("parallelism.sync_every_micro_batch", s.parallelism.sync_every_micro_batch ? "true" : "false", "false");
  differ("optimizer", s.optimizer, c.optimizer);
}

}  // namespace

double relative_error(double predicted_s, double measured_s) {
  if (measured_s == 0) return predicted_s == 0 ? 0.0 : std::numeric_limits<double>::infinity();
  return (predicted_s - measured_s) / measured_s;
}

PhaseTimes phase_times(const std::vector<MeasuredTask>& tasks) {
  PhaseTimes p;
  std::vector<Span> compute, comm;
  for (const MeasuredTask& t : tasks) {
    const double d = t.end_s - t.start_s;
    p.step_s = std::max(p.step_s, t.end_s);
    switch (t.phase) {
      case MeasuredPhase::Forward: p.forward_s += d; break;
      case MeasuredPhase::Backward: p.backward_s += d; break;
      case MeasuredPhase::Optimizer: p.optimizer_s += d; break;
      case MeasuredPhase::Overhead: p.overhead_s += d; break;
      case MeasuredPhase::Communication: break;
    }
    (t.phase == MeasuredPhase::Communication ? comm : compute).emplace_back(t.start_s, t.end_s);
  }
  const auto c = merged(std::move(compute));
  const auto n = merged(std::move(comm));
  p.comm_s = length(n);
  p.exposed_comm_s = uncovered(n, c);
  return p;
}

PhaseTimes measured_phase_times(const MeasuredTimeline& m) {
  std::vector<double> f, b, c, e, o, h, s;
  for (const MeasuredIteration& it : m.iterations) {
    PhaseTimes sum;
    double slowest = 0;
    for (const MeasuredRank& r : it.ranks) {
      PhaseTimes p = phase_times(r.tasks);
      if (r.step_s > 0) p.step_s = r.step_s;
      sum.forward_s += p.forward_s;
      sum.backward_s += p.backward_s;
      sum.comm_s += p.comm_s;
      sum.exposed_comm_s += p.exposed_comm_s;
      sum.optimizer_s += p.optimizer_s;
      sum.overhead_s += p.overhead_s;
      slowest = std::max(slowest, p.step_s);
    }
    const double n = static_cast<double>(it.ranks.size());
    f.push_back(sum.forward_s / n);
    b.push_back(sum.backward_s / n);
    c.push_back(sum.comm_s / n);
    e.push_back(sum.exposed_comm_s / n);
    o.push_back(sum.optimizer_s / n);
    h.push_back(sum.overhead_s / n);
    s.push_back(slowest);
  }
  return {median_of(f), median_of(b), median_of(c), median_of(e), median_of(o), median_of(h), median_of(s)};
}

namespace {

/// The kernel-class groups of kernel_class_rows, and which group each measured task name
/// (a KernelClass name, or "memcpy (host)") falls in.
constexpr std::array<const char*, 5> kGroups = {"matmul (gemm, conv)", "attention", "memory-bound", "communication (NCCL)",
                                                "unknown, host copies"};

std::size_t group_of(const std::string& task_name) {
  if (task_name == "gemm" || task_name == "conv") return 0;
  if (task_name == "attention") return 1;
  if (task_name == "nccl") return 3;
  if (task_name == "unknown" || task_name == "memcpy (host)") return 4;
  return 2;
}

bool from_trace(const MeasuredTimeline& m) { return m.command == "torch.profiler"; }

}  // namespace

std::vector<CompareRow> kernel_class_rows(const models::Scenario& scenario, const MeasuredTimeline& measured,
                                          double predicted_comm_s) {
  std::array<double, kGroups.size()> predicted{};
  const models::StrategyEntry& strategy = models::find_strategy(scenario.parallelism.strategy);
  const models::LoweredStep step = strategy.lower(scenario);
  const hardware::StepCostModel cost = models::step_cost_model(scenario, step);
  for (sim::TaskId id = 0; id < step.graph.size(); ++id) {
    const sim::Task& t = step.graph.task(id);
    if (t.rank != 0) continue;
    const hardware::KernelWorkSplit k = cost.split(t);
    predicted[0] += k.gemm_s;
    predicted[1] += k.attention_s;
    predicted[2] += k.streaming_s;
  }
  predicted[3] = predicted_comm_s;
  std::array<std::vector<double>, kGroups.size()> per_iteration;
  for (const MeasuredIteration& it : measured.iterations) {
    std::array<double, kGroups.size()> sum{};
    for (const MeasuredRank& rk : it.ranks)
      for (const MeasuredTask& t : rk.tasks) sum[group_of(t.name)] += t.end_s - t.start_s;
    for (std::size_t g = 0; g < kGroups.size(); ++g)
      per_iteration[g].push_back(sum[g] / static_cast<double>(std::max<std::size_t>(1, it.ranks.size())));
  }
  std::vector<CompareRow> rows;
  for (std::size_t g = 0; g < kGroups.size(); ++g) {
    const double m = per_iteration[g].empty() ? 0.0 : median_of(per_iteration[g]);
    rows.push_back({kGroups[g], predicted[g], m, relative_error(predicted[g], m)});
  }
  return rows;
}

Comparison compare(const models::Scenario& scenario, const MeasuredTimeline& measured) {
  Comparison out;
  out.measured_source = measured.source;
  out.iterations = measured.iterations.size();
  out.ranks = measured.config.ranks;
  for (const std::string& n : measured.notes) out.warnings.push_back(n);
  if (from_trace(measured)) {
    if (const auto w = gpu_profile_mismatch(measured.environment.device, scenario.hardware)) out.warnings.push_back(*w);
    if (scenario.parallelism.dp != measured.environment.gpus)
      out.warnings.push_back(fmt::format("parallelism.dp: scenario {}, profiled job {} ranks (distributedInfo.world_size)",
                                         scenario.parallelism.dp, measured.environment.gpus));
  } else {
    check_config(scenario, measured, out.warnings);
  }

  const models::Report r = models::run(scenario);
  const PhaseTimes m = measured_phase_times(measured);
  auto row = [](std::string name, double p, double v) { return CompareRow{std::move(name), p, v, relative_error(p, v)}; };
  out.phases = {row("forward", r.forward_time_s, m.forward_s),
                row("backward", r.backward_time_s, m.backward_s),
                row("comm (busy)", r.comm_time_s, m.comm_s),
                row("exposed comm", r.exposed_comm_s, m.exposed_comm_s),
                row("optimizer", r.optimizer_time_s, m.optimizer_s),
                row("overhead", r.overhead_time_s, m.overhead_s),
                row("step", r.step_time_s, m.step_s)};

  if (from_trace(measured)) {
    out.kernel_classes = kernel_class_rows(scenario, measured, r.comm_time_s);
    return out;
  }
  // Per task: the simulated graph's rank-0 durations by name.
  const models::StrategyEntry& strategy = models::find_strategy(scenario.parallelism.strategy);
  const models::LoweredStep step = strategy.lower(scenario);
  const hardware::StepCostModel cost = models::step_cost_model(scenario, step);
  const sim::Timeline tl = sim::run(step.graph, cost);
  std::vector<std::pair<std::string, double>> predicted;
  for (sim::TaskId id = 0; id < step.graph.size(); ++id) {
    const sim::Task& t = step.graph.task(id);
    if (t.rank == 0) predicted.emplace_back(t.name, (tl[id].end - tl[id].start).seconds());
  }
  // Measured: per name, per iteration the mean over ranks, then the median over iterations.
  std::map<std::string, std::vector<double>> per_name;
  for (const MeasuredIteration& it : measured.iterations) {
    std::map<std::string, double> sum;
    for (const MeasuredRank& rk : it.ranks)
      for (const MeasuredTask& t : rk.tasks) sum[t.name] += t.end_s - t.start_s;
    for (const auto& [name, total] : sum) per_name[name].push_back(total / static_cast<double>(it.ranks.size()));
  }
  std::map<std::string, bool> seen;
  for (const auto& [name, d] : predicted) {
    const auto it = per_name.find(name);
    if (it == per_name.end()) {
      out.predicted_only.push_back(name);
      continue;
    }
    seen[name] = true;
    out.tasks.push_back(row(name, d, median_of(it->second)));
  }
  for (const MeasuredIteration& it : measured.iterations)
    for (const MeasuredRank& rk : it.ranks)
      for (const MeasuredTask& t : rk.tasks)
        if (!seen.count(t.name) &&
            std::find(out.measured_only.begin(), out.measured_only.end(), t.name) == out.measured_only.end())
          out.measured_only.push_back(t.name);
  if (step.buckets.size() != measured.buckets.size() && !measured.buckets.empty())
    out.warnings.push_back(fmt::format("buckets: scenario {}, measured run {}", step.buckets.size(), measured.buckets.size()));
  return out;
}

std::string comparison_text(const Comparison& c, bool with_tasks) {
  auto err = [](double e) { return std::isfinite(e) ? fmt::format("{:+.1f} %", 100.0 * e) : std::string("n/a"); };
  std::string s = fmt::format("predicted ({}) vs measured ({}: {} iteration{}, {} rank{}; median over iterations)\n",
                              one_line(c.scenario_source), one_line(c.measured_source), c.iterations, c.iterations == 1 ? "" : "s",
                              c.ranks, c.ranks == 1 ? "" : "s");
  s += fmt::format("  {:<16}{:>14}{:>14}{:>11}\n", "phase", "predicted ms", "measured ms", "error");
  for (const CompareRow& r : c.phases)
    s += fmt::format("  {:<16}{:>14.3f} {:>13.3f} {:>10}\n", r.name, r.predicted_s * 1e3, r.measured_s * 1e3, err(r.rel_error));
  if (!c.kernel_classes.empty()) {
    s += "GPU time per step by kernel class (predicted: rank 0's kernels alone; measured: summed kernel durations)\n";
    s += fmt::format("  {:<24}{:>14}{:>14}{:>11}\n", "kernel class", "predicted ms", "measured ms", "error");
    for (const CompareRow& r : c.kernel_classes)
      s += fmt::format("  {:<24}{:>14.3f} {:>13.3f} {:>10}\n", r.name, r.predicted_s * 1e3, r.measured_s * 1e3, err(r.rel_error));
    if (with_tasks) s += "(--tasks: a trace's tasks are kernels, not stepsim's tasks; the kernel classes above stand for them)\n";
  } else {
    s += fmt::format("tasks matched by name: {} (simulated only: {}, measured only: {})\n", c.tasks.size(),
                     c.predicted_only.size(), c.measured_only.size());
  }
  if (with_tasks) {
    s += fmt::format("  {:<32}{:>14}{:>14}{:>11}\n", "task", "predicted ms", "measured ms", "error");
    for (const CompareRow& r : c.tasks)
      s += fmt::format("  {:<32}{:>14.4f}{:>14.4f}{:>11}\n", r.name, r.predicted_s * 1e3, r.measured_s * 1e3,
                       err(r.rel_error));
  }
  auto list = [&](const char* what, const std::vector<std::string>& names) {
    if (names.empty()) return;
    std::string joined;
    for (std::size_t i = 0; i < names.size() && i < 8; ++i) joined += (i ? ", " : "") + names[i];
    if (names.size() > 8) joined += fmt::format(", ... ({} more)", names.size() - 8);
    s += fmt::format("{}: {}\n", what, joined);
  };
  list("simulated only", c.predicted_only);
  list("measured only", c.measured_only);
  for (const std::string& w : c.warnings) s += "warning: " + one_line(w) + "\n";
  return s;
}

}  // namespace stepsim::validate
