// SPDX-License-Identifier: Apache-2.0
// `stepsim calibrate gemm MEASURED.json [--hardware HW] [-o OVERLAY.json] [--merge OVERLAY.json]
// [--sms N] [--format text|json]`: fit the GEMM curve (hardware/gemm_model.hpp) to measured GEMM
// times and write it as the `gemm` section of a calibration overlay; print measured vs nominal
// vs fitted per shape with median/max |error|.
#include "tools/commands.hpp"

#include "hardware/calibration_json.hpp"
#include "hardware/hardware_profile_json.hpp"
#include "sim/support/atomic_file.hpp"
#include "sim/support/error.hpp"
#include "validate/gemm_fit.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstdio>

#include <memory>

namespace stepsim::tools {

using ordered_gemm_json = nlohmann::ordered_json;

namespace {
std::string pct(double e) { return fmt::format("{:+.1f}%", 100 * e); }
}  // namespace

std::string gemm_fit_text(const validate::GemmFitResult& r, const hardware::HardwareProfile& hw,
                        const hardware::CalibrationOverlay& overlay, const std::string& output) {
  const auto& g = r.gemm;
  std::string out = fmt::format("calibrate gemm: {} GEMMs from {} ({}, {}, sha256 {}) over {}\n", g.points, g.source.file,
                                g.source.format, g.source.gpu.empty() ? "device not given" : g.source.gpu,
                                g.source.sha256.substr(0, 12), hw.name);
  out += fmt::format("nominal: {}\n", hw.gemm_curve.present()
                                          ? "profile curve " + hardware::describe_gemm_curve(hw.gemm_curve)
                                          : fmt::format("flat gemm_efficiency {:.3g} of {:.4g} TFLOP/s", hw.gemm_efficiency,
                                                        hw.peak_flops_per_s / 1e12));
  const hardware::GemmMath math = r.rows.empty() ? hardware::GemmMath::Tensor16 : r.rows.front().point.shape.math;
  out += fmt::format("fitted:  {}{}\n", hardware::describe_gemm_curve(g.curve),
                     math == hardware::GemmMath::Tensor16
                         ? std::string()
                         : fmt::format("; fitted on {} GEMMs: {} e_max {:.4g} (the other arithmetics' as the profile's)",
                                       hardware::gemm_math_name(math), hardware::gemm_math_name(math), g.curve.max_efficiency_for(math)));
  out += "         t = overhead + max(2mnk / (peak * e_max * w), bytes / hbm), w = waves / ceil(waves)\n";
  out += output.empty() ? "overlay: not written (no -o)\n" : fmt::format("overlay: {}\n", hardware::describe_overlay(overlay));
  out += fmt::format("  {:<12} {:>6} {:>6} {:>6} {:>6} {:>6} {:>6} | {:>10} {:>7} | {:>10} {:>7} | {:>10} {:>7} {:>5}\n", "gemm",
                     "hidden", "ffn", "tokens", "m", "n", "k", "meas us", "TFLOP/s", "nominal us", "error", "fitted us",
                     "error", "eff");
  for (const auto& row : r.rows) {
    const auto& p = row.point;
    const double flops = hardware::gemm_flops(p.shape);
    out += fmt::format("  {:<12} {:>6} {:>6} {:>6} {:>6.0f} {:>6.0f} {:>6.0f} | {:>10.2f} {:>7.1f} | {:>10.2f} {:>7} | {:>10.2f} {:>7} {:>5.2f}\n",
                       p.name, p.hidden, p.ffn, p.tokens, p.shape.m, p.shape.n, p.shape.k, p.measured_s * 1e6,
                       flops / p.measured_s / 1e12, row.nominal_s * 1e6, pct(row.nominal_s / p.measured_s - 1),
                       row.fitted_s * 1e6, pct(row.fitted_s / p.measured_s - 1), flops / (hw.peak_for(p.shape.math) * row.fitted_s));
  }
  out += "  error = predicted / measured - 1; eff = fitted achieved fraction of peak\n";
  out += fmt::format("summary |error| over {} GEMMs: nominal median {:.1f}% max {:.1f}%; fitted median {:.1f}% max {:.1f}%\n",
                     g.points, 100 * r.nominal.median, 100 * r.nominal.max, 100 * r.fitted.median, 100 * r.fitted.max);
  return out;
}

std::string gemm_fit_json(const validate::GemmFitResult& r, const hardware::HardwareProfile& hw, const std::string& output) {
  const auto& g = r.gemm;
  ordered_gemm_json j;
  j["schema"] = "stepsim.calibrate-gemm/1";
  j["hardware"] = hw.name;
  j["overlay"] = output.empty() ? ordered_gemm_json(nullptr) : ordered_gemm_json(output);
  j["source"] = {{"file", g.source.file}, {"sha256", g.source.sha256}, {"format", g.source.format}, {"gpu", g.source.gpu}};
  j["curve"] = {{"max_efficiency", g.curve.max_efficiency}, {"overhead_s", g.curve.overhead_s}, {"tile_m", g.curve.tile_m},
                {"tile_n", g.curve.tile_n}, {"sms", g.curve.sms}};
  ordered_gemm_json rows = ordered_gemm_json::array();
  for (const auto& row : r.rows) {
    const auto& p = row.point;
    rows.push_back({{"name", p.name}, {"hidden", p.hidden}, {"ffn", p.ffn}, {"tokens", p.tokens}, {"m", p.shape.m},
                    {"n", p.shape.n}, {"k", p.shape.k}, {"measured_time_s", p.measured_s}, {"nominal_time_s", row.nominal_s},
                    {"fitted_time_s", row.fitted_s}});
  }
  j["rows"] = rows;
  j["error_nominal"] = {{"median", r.nominal.median}, {"max", r.nominal.max}};
  j["error_fitted"] = {{"median", r.fitted.median}, {"max", r.fitted.max}};
  return j.dump(2) + "\n";
}

namespace {

using ordered = nlohmann::ordered_json;

struct GemmArgs {
  std::string measured;
  std::string hardware;
  std::string output;
  std::string merge;
  std::string format = "text";
  int sms = 0;
};

int cmd_calibrate_gemm(const GemmArgs& a) {
  const validate::GemmMeasurements m = validate::read_gemm_measurements(a.measured);
  std::string hw_ref = a.hardware;
  if (hw_ref.empty()) {
    hw_ref = validate::profile_for_device(m.device);
    if (hw_ref.empty())
      throw InputError("--hardware", "",
                       fmt::format("device '{}' in {} has no built-in profile; expected --hardware NAME or FILE.json", m.device,
                                   a.measured));
  }
  const auto hw = hardware::load_profile(hw_ref, "--hardware");
  if (const std::string from_file = validate::profile_for_device(m.device);
      !a.hardware.empty() && !from_file.empty() && from_file != hw.name)
    std::fprintf(stderr, "warning: %s was measured on '%s' (profile '%s'), fitted over --hardware '%s'\n",
                 a.measured.c_str(), m.device.c_str(), from_file.c_str(), hw.name.c_str());
  if (a.sms < 0 || a.sms > 4096) throw InputError("--sms", "", fmt::format("expected an SM count in [1, 4096], got {}", a.sms));
  if (a.sms > 0 && hw.sm_count > 0 && a.sms > hw.sm_count)
    throw InputError("--sms", "", fmt::format("expected at most the {} SMs of profile '{}' (a GEMM's waves run on the "
                                              "GPU's SMs), got {}", hw.sm_count, hw.name, a.sms));
  const int sms = a.sms > 0 ? a.sms : hw.sm_count;
  if (sms == 0)
    throw InputError("--sms", "", fmt::format("profile '{}' has no compute.sm_count; expected --sms N (the GPU's SM count)", hw.name));
  const validate::GemmFitResult r = validate::fit_gemm(m, hw, sms);
  hardware::CalibrationOverlay overlay;
  if (!a.merge.empty()) {
    overlay = hardware::read_calibration(a.merge);
    if (overlay.hardware != hw.name)
      throw InputError("--merge", "", fmt::format("overlay '{}' is over profile '{}', but the GEMM fit is over '{}'", a.merge,
                                                  overlay.hardware, hw.name));
  }
  overlay.name = a.output;
  overlay.hardware = hw.name;
  overlay.gemm = r.gemm;
  if (!a.output.empty()) write_file_atomically(a.output, hardware::calibration_json(overlay));
  print(a.format == "json" ? gemm_fit_json(r, hw, a.output) : gemm_fit_text(r, hw, overlay, a.output));
  return 0;
}

}  // namespace

void add_calibrate_gemm_command(CLI::App& calibrate, Action& action) {
  auto a = std::make_shared<GemmArgs>();
  auto* gemm = calibrate.add_subcommand("gemm", "fit the GEMM curve to stepsim-validate gemm-sweep (or mlp-step) output");
  gemm->add_option("measured", a->measured, "gemm-sweep JSON (stepsim.gemm-sweep/1) or mlp-step MEASURED.json")->required();
  gemm->add_option("--hardware", a->hardware, "nominal profile (name or JSON file; default: from the measured device)");
  gemm->add_option("-o,--output", a->output, "write the overlay (JSON) here");
  gemm->add_option("--merge", a->merge, "start from this overlay (e.g. the nccl-tests fit) and add the gemm section");
  gemm->add_option("--sms", a->sms, "SM count of the GPU (default: the profile's compute.sm_count)")->check(given_positive());
  gemm->add_option("--format", a->format, "output format")->check(CLI::IsMember({"text", "json"}));
  gemm->callback([a, &action] { action = [a] { return cmd_calibrate_gemm(*a); }; });
}

}  // namespace stepsim::tools
