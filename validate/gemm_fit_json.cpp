// SPDX-License-Identifier: Apache-2.0
// Readers of GEMM measurements (validate/gemm_fit.hpp): stepsim-validate's gemm-sweep JSON and
// the GEMM kernels of an mlp-step timeline.
#include "validate/gemm_fit.hpp"

#include "sim/support/error.hpp"
#include "sim/support/input_file.hpp"
#include "sim/support/json_reader.hpp"
#include "validate/measured_timeline.hpp"
#include "validate/nccl_tests.hpp"
#include "validate/stats.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <map>

namespace stepsim::validate {

namespace {

constexpr const char* kSweepSchema = "stepsim.gemm-sweep/1";

void read_sweep(const nlohmann::json& doc, GemmMeasurements& out) {
  JsonReader root(doc, out.source, "");
  root.choice_or("schema", kSweepSchema, {kSweepSchema});
  root.string_or("generator", "");
  if (const auto env = root.optional_object("environment")) {
    out.device = env->string_or("device", "");
    for (const char* k : {"host", "cuda_runtime", "cuda_driver", "nccl", "cublas"}) env->string_or(k, "");
    env->finish();
  }
  root.choice_or("dtype", "bf16", {"bf16"});
  root.choice_or("accumulate", "fp32", {"fp32"});
  root.integer_or("iters", 1, 1, 1 << 30);
  root.integer_or("warmup", 0, 0, 1 << 30);
  for (const auto& r : root.objects("rows", true)) {
    GemmPoint p;
    p.name = r.string("name");
    p.hidden = r.integer_or("hidden", 0, 0, 1 << 30);
    p.ffn = r.integer_or("ffn", 0, 0, 1 << 30);
    p.tokens = r.integer_or("tokens", 0, 0, 1 << 30);
    p.shape.m = static_cast<double>(r.integer("m", 1, 1 << 30));
    p.shape.n = static_cast<double>(r.integer("n", 1, 1 << 30));
    p.shape.k = static_cast<double>(r.integer("k", 1, 1 << 30));
    r.boolean_or("trans_a", false);
    r.boolean_or("trans_b", false);
    const double flops = r.number("flops", Check::Positive);
    const double expect = hardware::gemm_flops(p.shape);
    if (std::fabs(flops / expect - 1) > 1e-6)
      r.fail("flops", fmt::format("expected 2·m·n·k = {:.17g}, got {:.17g}", expect, flops));
    p.measured_s = r.number("time_s", Check::Positive);
    if (p.measured_s >= 100) r.fail("time_s", fmt::format("expected the seconds of one GEMM (< 100), got {:g}", p.measured_s));
    r.number_or("flops_per_s", 0.0, Check::NonNegative);
    r.finish();
    p.where = r.pointer();
    out.points.push_back(std::move(p));
  }
  root.finish();
}

// The GEMM kernels of mlp-step's tasks, with the shapes gemm-sweep gives the same roles
// (validate/cuda/gemm_sweep.cu layer_shapes; D hidden, F ffn, B tokens).
void read_mlp_step(const std::string& text, GemmMeasurements& out) {
  const MeasuredTimeline t = parse_measured_timeline(text, out.source);
  out.device = t.environment.device;
  const auto d = static_cast<double>(t.config.hidden), f = static_cast<double>(t.config.ffn),
             b = static_cast<double>(t.config.tokens);
  struct Role {
    const char* task_suffix;  // after "fwd.layers.N" / "bwd.layers.N"
    const char* kernel;
    const char* name;
    hardware::GemmShape shape;
  };
  const Role roles[] = {{"fwd", "gemm.w_in", "fwd.w_in", {b, f, d, 1}},   {"fwd", "gemm.w_out", "fwd.w_out", {b, d, f, 1}},
                        {".w_out", "dgrad", "dgrad.w_out", {b, f, d, 1}}, {".w_out", "wgrad", "wgrad.w_out", {f, d, b, 1}},
                        {".w_in", "dgrad", "dgrad.w_in", {b, d, f, 1}},   {".w_in", "wgrad", "wgrad.w_in", {d, f, b, 1}}};
  std::map<std::string, std::vector<double>> times;
  for (const auto& it : t.iterations)
    for (const auto& rank : it.ranks)
      for (const auto& task : rank.tasks) {
        // Strip an "mbK." prefix.
        std::string name = task.name;
        if (name.rfind("mb", 0) == 0 && name.find('.') != std::string::npos) name = name.substr(name.find('.') + 1);
        const bool fwd = name.rfind("fwd.layers.", 0) == 0;
        const bool bwd = name.rfind("bwd.layers.", 0) == 0;
        if (!fwd && !bwd) continue;
        for (const auto& k : task.kernels)
          for (const Role& role : roles) {
            const std::string suffix = role.task_suffix;
            const bool task_matches = suffix == "fwd" ? fwd
                                                      : bwd && name.size() > suffix.size() &&
                                                            name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
            if (task_matches && k.name == role.kernel) times[role.name].push_back(k.end_s - k.start_s);
          }
      }
  for (const Role& role : roles) {
    const auto it = times.find(role.name);
    if (it == times.end()) continue;
    GemmPoint p;
    p.name = role.name;
    p.hidden = t.config.hidden;
    p.ffn = t.config.ffn;
    p.tokens = t.config.tokens;
    p.shape = role.shape;
    p.measured_s = median_of(it->second);
    p.where = fmt::format("{} kernels '{}' (median of {})", role.name, role.kernel, it->second.size());
    if (!(p.measured_s > 0))
      throw InputError(out.source, "/iterations", fmt::format("kernels '{}' of {} have a median time of {:g} s; expected > 0",
                                                              role.kernel, role.name, p.measured_s));
    out.points.push_back(std::move(p));
  }
  if (out.points.empty())
    throw InputError(out.source, "/iterations",
                     "expected GEMM kernels (gemm.w_in, gemm.w_out, dgrad, wgrad) in fwd.layers.N / bwd.layers.N.* tasks, "
                     "found none");
}

}  // namespace

GemmMeasurements parse_gemm_measurements(const std::string& text, const std::string& source) {
  GemmMeasurements out;
  out.source = source;
  out.sha256 = sha256_hex(text);
  const nlohmann::json doc = parse_json_text(text, source);
  if (doc.is_object() && doc.contains("schema") && doc["schema"] == "stepsim.measured/1") {
    out.format = "mlp-step";
    read_mlp_step(text, out);
  } else {
    out.format = "gemm-sweep";
    read_sweep(doc, out);
  }
  return out;
}

GemmMeasurements read_gemm_measurements(const std::string& path) {
  return parse_gemm_measurements(read_input_file(path, "a JSON file", kMaxJsonBytes), path);
}

}  // namespace stepsim::validate
