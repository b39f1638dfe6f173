// SPDX-License-Identifier: Apache-2.0
// JSON <-> CalibrationOverlay: the only calibration file that sees JSON.
#include "hardware/calibration_json.hpp"

#include "hardware/hardware_profile_json.hpp"
#include "sim/support/error.hpp"
#include "sim/support/json_reader.hpp"

#include <nlohmann/json.hpp>

#include <cmath>
#include <limits>

namespace stepsim::hardware {

namespace {

constexpr const char* SCHEMA = "stepsim.calibration/1";

CollectiveOp op_from_label(const JsonReader& r, const std::string& key) {
  return collective_op_from(r.choice_or(key, "", collective_op_labels())).value_or(CollectiveOp::AllReduce);
}

// The `source` of a section fitted from profiler traces (memory_bound, host).
CalibrationSource read_trace_source(const JsonReader& src) {
  CalibrationSource out;
  out.file = src.string("file");
  out.sha256 = src.string_or("sha256", "");
  out.format = src.choice_or("format", "torch.profiler", {"torch.profiler"});
  out.gpu = src.string_or("gpu", "");
  src.finish();
  return out;
}

// The fields every section fitted from traces has (points, residuals, source), then the
// section's unknown keys refused.
template <class Section>
void read_trace_fit(const JsonReader& r, Section& out) {
  out.points = static_cast<int>(r.integer_or("points", 0, 0, 1 << 30));
  out.median_residual = r.number_or("median_residual", 0.0, Check::NonNegative);
  out.max_residual = r.number_or("max_residual", 0.0, Check::NonNegative);
  if (const auto src = r.optional_object("source")) out.source = read_trace_source(*src);
  r.finish();
}

nlohmann::ordered_json source_json(const CalibrationSource& s) {
  return {{"file", s.file}, {"sha256", s.sha256}, {"format", s.format}, {"gpu", s.gpu}};
}

}  // namespace

CalibrationOverlay parse_calibration(const nlohmann::json& doc, const std::string& source) {
  JsonReader root(doc, source, "");
  CalibrationOverlay o;
  o.name = source;
  root.choice_or("schema", SCHEMA, {SCHEMA});
  o.hardware = root.string("hardware");
  o.cost_model = root.choice_or("cost_model", "alpha-beta", {"alpha-beta"});
  o.algorithm = collective_algorithm_from(root.choice_or("algorithm", "auto", collective_algorithm_names()))
                    .value_or(CollectiveAlgorithm::Auto);
  if (root.has("sources")) {
    for (const auto& s : root.objects("sources", false)) {
      CalibrationSource src;
      src.file = s.string("file");
      src.sha256 = s.string_or("sha256", "");
      src.format = s.string_or("format", "");
      src.gpu = s.string_or("gpu", "");
      src.ranks = static_cast<int>(s.integer_or("ranks", 0, 0, 1 << 24));
      src.nodes = static_cast<int>(s.integer_or("nodes", 0, 0, 1 << 24));
      src.nccl_version = s.string_or("nccl_version", "");
      s.finish();
      o.sources.push_back(std::move(src));
    }
  }
  if (const auto g = root.optional_object("gemm")) {
    GemmCalibration gc;
    gc.curve = read_gemm_curve(*g, 0);
    gc.points = static_cast<int>(g->integer_or("points", 0, 0, 1 << 30));
    gc.median_residual = g->number_or("median_residual", 0.0, Check::NonNegative);
    gc.max_residual = g->number_or("max_residual", 0.0, Check::NonNegative);
    if (gc.max_residual >= 1)
      g->fail("max_residual", fmt::format("{:g}: a fit off by 100 % or more of the measurement is no calibration; "
                                          "expected a fraction below 1", gc.max_residual));
    if (const auto src = g->optional_object("source")) {
      gc.source.file = src->string("file");
      gc.source.sha256 = src->string_or("sha256", "");
      gc.source.format = src->choice_or("format", "gemm-sweep", {"gemm-sweep", "mlp-step", "torch.profiler"});
      gc.source.gpu = src->string_or("gpu", "");
      src->finish();
    }
    g->finish();
    o.gemm = std::move(gc);
  }
  if (const auto m = root.optional_object("memory_bound")) {
    MemoryCalibration mc;
    mc.hbm_efficiency = m->number("hbm_efficiency", Check::Positive);
    if (mc.hbm_efficiency > 1)
      m->fail("hbm_efficiency", fmt::format("{:g}: no kernel streams faster than the HBM's bandwidth; expected a "
                                            "fraction in (0, 1]", mc.hbm_efficiency));
    read_trace_fit(*m, mc);
    o.memory = std::move(mc);
  }
  if (const auto h = root.optional_object("host")) {
    HostCalibration hc;
    hc.host_op_s = h->number("host_op_s", Check::Positive, Dimension::Seconds);
    if (hc.host_op_s > 0.01 || hc.host_op_s < 1e-7)
      h->fail("host_op_s", fmt::format("expected a CPU time per launch from 0.1 us to 10 ms (the scenario's "
                                       "framework.host_op_s bound), got {:g} s", hc.host_op_s));
    hc.steps = static_cast<int>(h->integer_or("steps", 0, 0, 1 << 30));
    read_trace_fit(*h, hc);
    if (hc.median_residual > 0.25)
      h->fail("median_residual", fmt::format("{:g}: steps that disagree by a median over 25 % share no host rate "
                                             "(calibrate trace refuses such a fit); expected at most 0.25",
                                             hc.median_residual));
    o.host = std::move(hc);
  }
  // An overlay with a GEMM curve, a memory-bound efficiency or a host time may omit the
  // collective tables.
  const bool other = o.gemm || o.memory || o.host;
  const bool want_tables = !other || root.has("tables");
  for (const auto& t : want_tables ? root.objects("tables", !other) : std::vector<JsonReader>{}) {
    CalibrationTable table;
    if (!t.has("op")) t.fail("op", "required field is missing (AllReduce, ReduceScatter or AllGather)");
    table.op = op_from_label(t, "op");
    if (!t.has("scope")) t.fail("scope", "required field is missing (intra_node or inter_node)");
    table.scope = t.choice_or("scope", "", {"intra_node", "inter_node"}) == "inter_node" ? CalibrationScope::InterNode
                                                                                           : CalibrationScope::IntraNode;
    table.ranks = static_cast<int>(t.integer("ranks", 2, 1 << 24));
    table.ranks_per_node = static_cast<int>(t.integer_or("ranks_per_node", table.ranks, 1, 1 << 24));
    table.source = t.string_or("source", "");
    for (const auto& s : t.objects("segments", true)) {
      CalibrationSegment seg;
      seg.lo_bytes = s.number("lo_bytes", Check::NonNegative, Dimension::Bytes);
      seg.hi_bytes = s.number("hi_bytes", Check::Positive, Dimension::Bytes);
      if (!(seg.hi_bytes > seg.lo_bytes))
        s.fail("hi_bytes", fmt::format("expected hi_bytes > lo_bytes ({}), got {}", seg.lo_bytes, seg.hi_bytes));
      seg.latency_factor = s.number("latency_factor", Check::Positive);
      seg.bandwidth_factor = s.number("bandwidth_factor", Check::Positive);
      seg.points = static_cast<int>(s.integer_or("points", 0, 0, 1 << 30));
      seg.max_residual = s.number_or("max_residual", 0.0, Check::NonNegative);
      if (seg.max_residual >= 1)
        s.fail("max_residual", fmt::format("{:g}: a fit off by 100 % or more of the measurement is no calibration; "
                                           "expected a fraction below 1", seg.max_residual));
      s.finish();
      table.segments.push_back(seg);
    }
    t.finish();
    o.tables.push_back(std::move(table));
  }
  root.finish();
  check_overlay(o, source);
  return o;
}

CalibrationOverlay read_calibration(const std::string& path) { return parse_calibration(read_json_file(path), path); }

std::string calibration_json(const CalibrationOverlay& overlay) {
  using ordered = nlohmann::ordered_json;
  ordered j;
  j["schema"] = SCHEMA;
  j["hardware"] = overlay.hardware;
  j["cost_model"] = overlay.cost_model;
  j["algorithm"] = collective_algorithm_name(overlay.algorithm);
  ordered sources = ordered::array();
  for (const auto& s : overlay.sources)
    sources.push_back({{"file", s.file},
                       {"sha256", s.sha256},
                       {"format", s.format},
                       {"gpu", s.gpu},
                       {"ranks", s.ranks},
                       {"nodes", s.nodes},
                       {"nccl_version", s.nccl_version}});
  j["sources"] = sources;
  ordered tables = ordered::array();
  for (const auto& t : overlay.tables) {
    ordered segs = ordered::array();
    for (const auto& s : t.segments)
      segs.push_back({{"lo_bytes", s.lo_bytes},
                      {"hi_bytes", s.hi_bytes},
                      {"latency_factor", s.latency_factor},
                      {"bandwidth_factor", s.bandwidth_factor},
                      {"points", s.points},
                      {"max_residual", s.max_residual}});
    tables.push_back({{"op", collective_op_label(t.op)},
                      {"scope", calibration_scope_name(t.scope)},
                      {"ranks", t.ranks},
                      {"ranks_per_node", t.ranks_per_node},
                      {"source", t.source},
                      {"segments", segs}});
  }
  j["tables"] = tables;
  if (overlay.gemm) {
    const auto& g = *overlay.gemm;
    j["gemm"] = {{"max_efficiency", g.curve.max_efficiency},
                 {"overhead_s", g.curve.overhead_s},
                 {"tile_m", g.curve.tile_m},
                 {"tile_n", g.curve.tile_n},
                 {"sms", g.curve.sms},
                 {"points", g.points},
                 {"median_residual", g.median_residual},
                 {"max_residual", g.max_residual},
                 {"source", {{"file", g.source.file}, {"sha256", g.source.sha256}, {"format", g.source.format},
                             {"gpu", g.source.gpu}}}};
    // The other arithmetics' efficiencies, when the curve has its own (a TF32 / FP32 fit).
    for (const auto& [key, v] : {std::pair{"tf32_max_efficiency", g.curve.tf32_max_efficiency},
                                 std::pair{"fp32_max_efficiency", g.curve.fp32_max_efficiency},
                                 std::pair{"fp8_max_efficiency", g.curve.fp8_max_efficiency}})
      if (v > 0) j["gemm"][key] = v;
  }
  if (overlay.memory) {
    const auto& m = *overlay.memory;
    j["memory_bound"] = {{"hbm_efficiency", m.hbm_efficiency},
                         {"points", m.points},
                         {"median_residual", m.median_residual},
                         {"max_residual", m.max_residual},
                         {"source", source_json(m.source)}};
  }
  if (overlay.host) {
    const auto& h = *overlay.host;
    j["host"] = {{"host_op_s", h.host_op_s},
                 {"points", h.points},
                 {"steps", h.steps},
                 {"median_residual", h.median_residual},
                 {"max_residual", h.max_residual},
                 {"source", source_json(h.source)}};
  }
  return j.dump(2) + "\n";
}

}  // namespace stepsim::hardware
