// SPDX-License-Identifier: Apache-2.0
#include "validate/accuracy.hpp"

#include "models/report.hpp"
#include "models/scenario.hpp"
#include "sim/support/error.hpp"
#include "sim/support/resources.hpp"
#include "validate/stats.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

namespace stepsim::validate {

namespace {

struct MetricName {
  AccuracyMetric metric;
  const char* name;
  const char* unit;  // for the text table
};
constexpr MetricName kMetrics[] = {
    {AccuracyMetric::StepTimeS, "step_time_s", "s/step"},
    {AccuracyMetric::SamplesPerS, "samples_per_s", "samples/s"},
    {AccuracyMetric::TokensPerSPerGpu, "tokens_per_s_per_gpu", "tok/s/GPU"},
};

// A measured training step outside these is no training step (a typo or a unit mix-up).
constexpr double kMinStepS = 1e-6, kMaxStepS = 1e6;

const MetricName& metric_info(AccuracyMetric m) {
  for (const auto& x : kMetrics)
    if (x.metric == m) return x;
  throw InternalError("accuracy: unknown metric");
}

// The work one step does in the set's metric: measured = work / step time.
double work_per_step(AccuracyMetric m, const models::Scenario& s) {
  switch (m) {
    case AccuracyMetric::StepTimeS: return 1.0;
    case AccuracyMetric::SamplesPerS:
      return static_cast<double>(s.parallelism.dp) * static_cast<double>(s.batch.micro_batch_size) *
             static_cast<double>(s.batch.grad_accum);
    // Tokens per GPU: a DP rank's tokens are shared by its TP group and its pipeline stages
    // (tp × pp GPUs).
    case AccuracyMetric::TokensPerSPerGpu:
      return static_cast<double>(s.tokens_per_gpu_step()) /
             static_cast<double>(s.parallelism.tp * s.parallelism.pp);
  }
  return 1.0;
}

ErrorStats stats_of(const std::vector<AccuracyRowResult>& rows, bool check_only) {
  std::vector<double> e;
  std::vector<std::size_t> lines;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (!rows[i].simulated || (check_only && rows[i].fit_split)) continue;
    e.push_back(rows[i].rel_error);
    lines.push_back(i + 1);
  }
  return error_stats(e, lines);
}

}  // namespace

const char* accuracy_metric_name(AccuracyMetric m) { return metric_info(m).name; }

std::vector<AccuracyMetric> accuracy_metrics() {
  std::vector<AccuracyMetric> out;
  for (const auto& m : kMetrics) out.push_back(m.metric);
  return out;
}

std::vector<std::string> accuracy_set_names() {
  std::vector<std::string> names;
  for (const auto& f : detail::embedded_accuracy_sets()) names.push_back(f.name);
  names.push_back("vtrain");
  std::sort(names.begin(), names.end());
  return names;
}

namespace {

// The JSON pointer of an error names a field one of the overrides ("a.b=V" -> "/a/b") sets.
bool overridden_field(const std::string& pointer, const std::vector<std::string>& overrides) {
  for (const auto& o : overrides) {
    std::string path = "/" + o.substr(0, o.find('='));
    std::replace(path.begin(), path.end(), '.', '/');
    if (pointer == path) return true;
  }
  return false;
}

}  // namespace

AccuracySetResult run_accuracy_set(const AccuracySet& set, unsigned threads, const std::vector<std::string>& overrides) {
  AccuracySetResult out;
  out.name = set.name;
  out.description = set.description;
  out.sources = set.sources;
  out.metric = metric_info(set.metric).name;
  // Parse every runnable row first, in order, so the first bad row is the one reported.
  std::vector<models::Scenario> scenarios(set.rows.size());
  out.rows.resize(set.rows.size());
  for (std::size_t i = 0; i < set.rows.size(); ++i) {
    const AccuracyRow& row = set.rows[i];
    AccuracyRowResult& r = out.rows[i];
    r.id = row.id;
    r.source = row.source;
    r.unsupported = row.unsupported;
    r.note = row.note;
    r.measured = row.measured;
    r.fit_split = i % 2 == 0;
    if (!row.unsupported.empty()) continue;
    const std::string origin = fmt::format("{} row '{}'{}", set.origin, row.id, overrides_label(overrides));
    try {
      scenarios[i] = models::parse_scenario(with_overrides(row.scenario, overrides), origin);
    } catch (const InputError& e) {
      // An override the row refuses at the overridden field itself, where the row runs as
      // built, has nothing to act on there (e.g. framework.implementation on a ResNet, which
      // has no composite ops): the row keeps its as-built prediction and says so.
      if (overrides.empty() || !overridden_field(e.path(), overrides)) throw;
      scenarios[i] = models::parse_scenario(row.scenario, fmt::format("{} row '{}'", set.origin, row.id));
      r.override_not_applicable = true;
      if (!out.override_refusal) out.override_refusal = e;
    }
  }
  for_each_row(set.rows.size(), threads, [&](std::size_t i) {
    if (!set.rows[i].unsupported.empty()) return;
    models::Report rep;
    try {
      rep = models::run(scenarios[i]);
    } catch (const InputError& e) {  // name the set and the row, then what went wrong
      throw InputError(set.origin, fmt::format("/rows/{}", i), fmt::format("row '{}' cannot be simulated: {}", set.rows[i].id, e.what()));
    }
    AccuracyRowResult& r = out.rows[i];
    const double work = work_per_step(set.metric, scenarios[i]);
    r.simulated = true;
    r.predicted_step_s = rep.step_time_s;
    r.measured_step_s = set.metric == AccuracyMetric::StepTimeS ? r.measured : work / r.measured;
    r.predicted = set.metric == AccuracyMetric::StepTimeS ? rep.step_time_s : work / rep.step_time_s;
    if (!(r.measured_step_s >= kMinStepS && r.measured_step_s <= kMaxStepS))
      throw InputError(set.origin, fmt::format("/rows/{}/measured", i),
                       fmt::format("row '{}': {:g} {} means a {:g} s step; expected a measured step of {:g} s to {:g} s",
                                   set.rows[i].id, r.measured, metric_info(set.metric).name, r.measured_step_s, kMinStepS,
                                   kMaxStepS));
    r.rel_error = (r.predicted_step_s - r.measured_step_s) / r.measured_step_s;
    r.fits = rep.memory.fits;
    r.kind = models::run_kind(scenarios[i]);
  });
  out.stats = stats_of(out.rows, false);
  out.check_stats = stats_of(out.rows, true);
  return out;
}

void check_overrides_apply(const std::vector<AccuracySetResult>& results) {
  const AccuracySetResult* refused = nullptr;
  for (const auto& r : results) {
    if (r.override_refusal && !refused) refused = &r;
    for (const auto& row : r.rows)
      if (row.simulated && !row.override_not_applicable) return;
  }
  if (refused) throw *refused->override_refusal;
}

AccuracySetResult vtrain_set_result(const VtrainAccuracy& a) {
  AccuracySetResult out;
  out.name = "vtrain";
  out.description = "vTrain's measured Megatron-DeepSpeed iteration times, pure data parallelism on A100 (VIA-Research/vTrain)";
  out.sources = {a.source};
  out.metric = "step_time_s";
  for (std::size_t i = 0; i < a.rows.size(); ++i) {
    const VtrainResult& v = a.rows[i];
    AccuracyRowResult r;
    r.id = fmt::format("line {}", v.row.line);
    r.source = fmt::format("{} line {} ({} set, row {})", a.source, v.row.line, v.row.set, v.row.source_row);
    r.measured = r.measured_step_s = v.row.measured_s;
    r.predicted = r.predicted_step_s = v.predicted_s;
    r.rel_error = v.rel_error;
    r.simulated = true;
    r.fits = v.fits;
    r.fit_split = i % 2 == 0;
    r.kind = {"a100", v.row.zero_stage == 3};  // kVtrainHardware; stage 3 shards parameters
    out.rows.push_back(r);
  }
  out.stats = stats_of(out.rows, false);
  out.check_stats = stats_of(out.rows, true);
  return out;
}

std::vector<models::ErrorBand> compute_error_bands(const std::vector<AccuracySetResult>& sets) {
  std::vector<models::ErrorBand> out;
  // Every kind a set's rows have: family, sharding and arithmetic, then the parallelism beside
  // DP (TP, PP, CP, MoE), pure data parallelism first.
  std::vector<models::RunKind> kinds;
  for (const char* family : {"v100", "a100", "hopper"})
    for (bool sharded : {false, true})
      for (const char* math : {"bf16", "fp32", "fp8"})
        for (int mesh = 0; mesh < 16; ++mesh)
          kinds.push_back({family, sharded, math, (mesh & 1) != 0, (mesh & 2) != 0, (mesh & 4) != 0, (mesh & 8) != 0});
  for (const models::RunKind& kind : kinds) {
      models::ErrorBand best;
      std::vector<double> best_errors;
      for (const auto& s : sets) {
        std::vector<double> e;
        for (const auto& r : s.rows)
          if (r.simulated && r.kind == kind) e.push_back(r.rel_error);
        if (e.size() >= 5 && e.size() > best_errors.size()) {
          best.set = s.name;
          best_errors = std::move(e);
        }
      }
      if (best_errors.empty()) continue;
      best.kind = kind;
      best.rows = best_errors.size();
      best.p10 = models::quantile(best_errors, 0.1);
      best.median = models::quantile(best_errors, 0.5);
      best.p90 = models::quantile(best_errors, 0.9);
      out.push_back(best);
  }
  return out;
}

std::string error_bands_text(const std::vector<models::ErrorBand>& bands) {
  std::string out =
      "error bands: the p10-p90 of the signed errors (predicted - measured) / measured of the set with the most runs of\n"
      "each kind; a report quotes its kind's as real steps took [1/(1+p90), 1/(1+p10)] x the prediction\n\n";
  out += fmt::format("{:<17} {:<7} {:<11} {:<5} {:<8} {:>5} {:>8} {:>8} {:>8}  {}\n", "set", "GPUs", "DP", "math", "also",
                     "runs", "p10", "median", "p90", "real / predicted");
  for (const auto& b : bands) {
    std::string also = b.kind.mesh_label();
    std::erase(also, ' ');
    out += fmt::format("{:<17} {:<7} {:<11} {:<5} {:<8} {:>5} {:>+7.1f}% {:>+7.1f}% {:>+7.1f}%  {:.2f}-{:.2f}x\n", b.set,
                       b.kind.family, b.kind.sharded ? "sharded" : "replicated", b.kind.math, also.empty() ? "-" : also,
                       b.rows, 100 * b.p10, 100 * b.median, 100 * b.p90, b.real_over_predicted_low(),
                       b.real_over_predicted_high());
  }
  return out;
}

std::string error_bands_inc(const std::vector<models::ErrorBand>& bands) {
  std::string out = "// Generated by `stepsim accuracy --bands --format inc`; do not edit by hand.\n";
  for (const auto& b : bands)
    out += fmt::format("{{\"{}\", {{\"{}\", {}, \"{}\", {}, {}, {}, {}}}, {}, {:.4f}, {:.4f}, {:.4f}}},\n", b.set,
                       b.kind.family, b.kind.sharded, b.kind.math, b.kind.tensor_parallel, b.kind.pipeline_parallel,
                       b.kind.context_parallel, b.kind.mixture_of_experts, b.rows, b.p10, b.median, b.p90);
  return out;
}

std::string accuracy_text(const std::vector<AccuracySetResult>& sets) {
  std::string out;
  auto line = [&](const std::string& s) { out += s + "\n"; };
  auto pct = [](double x) { return fmt::format("{:+.1f} %", 100 * x); };
  auto apct = [](double x) { return fmt::format("{:.1f} %", 100 * x); };
  line("stepsim accuracy: predicted vs measured on public measurements; the error is on step time,");
  line("(predicted - measured) / measured: < 0 means stepsim is too fast (for a throughput column: predicted above");
  line("measured). Rows stepsim cannot express yet are listed");
  line("with what they need and left out of the statistics; odd rows are the 'check' half (docs/accuracy.md).");
  line("");
  line(fmt::format("{:<20} {:>5} {:>9} {:>13} {:>11} {:>10} {:>10}", "set", "rows", "simulated", "median |err|",
                   "mean |err|", "max |err|", "mean err"));
  for (const auto& s : sets) {
    if (s.stats.count == 0) {
      line(fmt::format("{:<20} {:>5} {:>9} {:>13} {:>11} {:>10} {:>10}", s.name, s.rows.size(), 0, "-", "-", "-", "-"));
      continue;
    }
    line(fmt::format("{:<20} {:>5} {:>9} {:>13} {:>11} {:>10} {:>10}", s.name, s.rows.size(), s.stats.count,
                     apct(s.stats.median_abs), apct(s.stats.mean_abs), apct(s.stats.max_abs), pct(s.stats.mean_signed)));
  }
  for (const auto& s : sets) {
    line("");
    line(fmt::format("{}: {}", s.name, s.description));
    for (const auto& src : s.sources) line("  source: " + src);
    const std::string unit = [&] {
      for (const auto& m : kMetrics)
        if (s.metric == m.name) return std::string(m.unit);
      return std::string();
    }();
    std::size_t w = 3;
    for (const auto& r : s.rows) w = std::max(w, r.id.size());
    line(fmt::format("  {:<{}} {:>12} {:>12} {:>9}", "row", w, "measured", "predicted", "error"));
    line(fmt::format("  {:<{}} {:>12} {:>12}", "", w, unit, unit));
    for (const auto& r : s.rows) {
      if (!r.simulated) {
        line(fmt::format("  {:<{}} {:>12.6g} {:>12} {:>9}  not simulated: {}", r.id, w, r.measured, "-", "-", r.unsupported));
        continue;
      }
      line(fmt::format("  {:<{}} {:>12.6g} {:>12.6g} {:>9}{}{}", r.id, w, r.measured, r.predicted, pct(r.rel_error),
                       r.fits ? "" : "  (does not fit in HBM)",
                       r.override_not_applicable ? "  (--set does not apply: as built)" : ""));
    }
    if (s.check_stats.count > 0)
      line(fmt::format("  odd (check) rows: {} simulated, median |err| {}", s.check_stats.count, apct(s.check_stats.median_abs)));
  }
  return out;
}

}  // namespace stepsim::validate
