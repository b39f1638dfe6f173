// SPDX-License-Identifier: Apache-2.0
// Calibration overlay lookup and application (style.md §2.1.1, §3.3).
#include "hardware/calibration.hpp"

#include "hardware/gemm_model.hpp"
#include "hardware/nccl_model.hpp"
#include "sim/support/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace stepsim::hardware {

std::string calibration_scope_name(CalibrationScope scope) {
  return scope == CalibrationScope::IntraNode ? "intra_node" : "inter_node";
}

CalibrationScope scope_of(const GroupShape& group) {
  const int g = std::max(1, std::min(group.ranks_per_node, group.ranks));
  const int nodes = (group.ranks + g - 1) / g;
  return nodes <= 1 ? CalibrationScope::IntraNode : CalibrationScope::InterNode;
}

namespace {

// Ops whose tables stand in for `op` on the same links, in order of preference.
std::vector<CollectiveOp> siblings(CollectiveOp op) {
  if (op == CollectiveOp::AllReduce) return {CollectiveOp::ReduceScatter, CollectiveOp::AllGather};
  return {CollectiveOp::AllReduce};
}

double log2_distance(int a, int b) {
  return std::fabs(std::log2(static_cast<double>(std::max(1, a))) - std::log2(static_cast<double>(std::max(1, b))));
}

}  // namespace

CalibrationMatch find_calibration(const CalibrationOverlay& overlay, CollectiveOp op,
                                  const GroupShape& group, double bytes) {
  CalibrationMatch m;
  const CalibrationScope scope = scope_of(group);
  const int rpn = std::max(1, std::min(group.ranks_per_node, group.ranks));
  auto pick = [&](CollectiveOp want) {
    const CalibrationTable* best = nullptr;
    double best_distance = 0;
    for (const auto& t : overlay.tables) {
      if (t.op != want || t.scope != scope || t.segments.empty()) continue;
      const double d = log2_distance(t.ranks, group.ranks) + (t.ranks_per_node > 0 ? log2_distance(t.ranks_per_node, rpn) : 0.0);
      if (best == nullptr || d < best_distance || (d == best_distance && t.ranks > best->ranks)) {
        best = &t;
        best_distance = d;
      }
    }
    return best;
  };
  m.table = pick(op);
  for (CollectiveOp other : siblings(op)) {
    if (m.table != nullptr) break;
    if ((m.table = pick(other)) != nullptr) m.derived_from = other;
  }
  if (m.table == nullptr) return m;
  m.ranks_extrapolated = m.table->ranks != group.ranks || (m.table->ranks_per_node > 0 && m.table->ranks_per_node != rpn);
  const auto& segs = m.table->segments;
  if (bytes < segs.front().lo_bytes) {
    m.segment = &segs.front();
    m.size_extrapolated = true;
    return m;
  }
  if (bytes >= segs.back().hi_bytes) {
    m.segment = &segs.back();
    m.size_extrapolated = true;
    return m;
  }
  for (const auto& s : segs)
    if (s.lo_bytes <= bytes && bytes < s.hi_bytes) {
      m.segment = &s;
      return m;
    }
  throw InternalError(fmt::format("calibration table for {} has a gap at {} bytes", collective_op_label(op), bytes));
}

CollectiveCost apply_factors(const CollectiveCost& nominal, const CalibrationSegment& segment) {
  CollectiveCost c = nominal;
  c.latency_s = nominal.latency_s * segment.latency_factor;
  c.bandwidth_s = nominal.bandwidth_s / segment.bandwidth_factor;
  return c;
}

namespace {

// Latency NCCL's tuner gives `op` on `group` (the α-β latency on profiles without "nccl").
double reference_latency_s(const HardwareProfile& hw, CollectiveOp op, double bytes, const GroupShape& group,
                           CollectiveAlgorithm algorithm) {
  if (!hw.nccl.arch.empty()) {
    try {
      return nccl_collective_cost(hw, op, bytes, group, algorithm).latency_s;
    } catch (const InputError&) {
      // No NCCL algorithm for that restriction: fall back to the α-β latency.
    }
  }
  return collective_cost(hw, op, bytes, group, algorithm).latency_s;
}

}  // namespace

CollectiveCost calibrated_collective_cost(const HardwareProfile& hw, const CalibrationOverlay* overlay,
                                          CollectiveOp op, double bytes, const GroupShape& group,
                                          CollectiveAlgorithm algorithm) {
  const CollectiveCost nominal = collective_cost(hw, op, bytes, group, algorithm);
  if (overlay == nullptr || group.ranks <= 1) return nominal;
  const CalibrationMatch m = find_calibration(*overlay, op, group, bytes);
  if (m.segment == nullptr) {
    CollectiveCost c = nominal;
    c.calibration = fmt::format("none for {} {} (nominal)", collective_op_label(op),
                                calibration_scope_name(scope_of(group)));
    c.calibration_uncovered = true;
    return c;
  }
  CollectiveCost c = apply_factors(nominal, *m.segment);
  std::string how;
  if (m.ranks_extrapolated) {
    GroupShape fitted = group;
    fitted.ranks = m.table->ranks;
    fitted.ranks_per_node = m.table->ranks_per_node > 0 ? m.table->ranks_per_node : group.ranks_per_node;
    const double at_fit = collective_cost(hw, op, bytes, fitted, algorithm).latency_s * m.segment->latency_factor;
    const double moved = reference_latency_s(hw, op, bytes, group, algorithm) -
                         reference_latency_s(hw, op, bytes, fitted, algorithm);
    c.latency_s = std::max(0.0, at_fit + moved);
    how = fmt::format("; from n={} ({}/node): fitted latency {:.4g} us {:+.4g} us (NCCL's latency change), the "
                      "bandwidth factor as fitted", m.table->ranks, fitted.ranks_per_node, at_fit * 1e6, moved * 1e6);
  }
  c.calibration = fmt::format("{}{} {} n={} [{:.0f}, {:.0f}) B: latency x{:.4g}, bandwidth x{:.4g}{}",
                              collective_op_label(m.table->op),
                              m.derived_from ? " (standing in for " + collective_op_label(op) + ")" : "",
                              calibration_scope_name(m.table->scope), m.table->ranks, m.segment->lo_bytes,
                              m.segment->hi_bytes, m.segment->latency_factor, m.segment->bandwidth_factor, how);
  c.calibration_extrapolated = m.size_extrapolated || m.ranks_extrapolated;
  if (m.derived_from) c.calibration_derived_from = collective_op_label(*m.derived_from);
  return c;
}

std::string describe_overlay(const CalibrationOverlay& overlay) {
  std::string out = overlay.name;
  std::string srcs;
  for (const auto& s : overlay.sources) {
    if (!srcs.empty()) srcs += "; ";
    srcs += fmt::format("{} sha256 {}", s.file, s.sha256.substr(0, 12));
    if (!s.gpu.empty()) srcs += ", " + s.gpu;
    srcs += fmt::format(", {} ranks", s.ranks);
    if (s.nodes > 0) srcs += fmt::format(" / {} nodes", s.nodes);
    if (!s.nccl_version.empty()) srcs += ", NCCL " + s.nccl_version;
  }
  // A GEMM-only overlay leaves collectives to the nominal model: do not name one.
  out += overlay.tables.empty() ? fmt::format(" (over {}", overlay.hardware)
                                : fmt::format(" (over {} {}", overlay.hardware, overlay.cost_model);
  if (!overlay.tables.empty()) {
    std::string covers;
    for (const auto& t : overlay.tables)
      covers += fmt::format("{}{} {} n={}", covers.empty() ? "" : ", ", collective_op_label(t.op),
                            calibration_scope_name(t.scope), t.ranks);
    out += "; covers " + covers;
  }
  if (!srcs.empty()) out += "; fitted on " + srcs;
  if (overlay.gemm) {
    const auto& g = *overlay.gemm;
    out += fmt::format("; GEMM curve {} fitted on {} sha256 {} ({} points, max residual {:.1f}%)",
                       describe_gemm_curve(g.curve), g.source.file, g.source.sha256.substr(0, 12), g.points,
                       100 * g.max_residual);
  }
  if (overlay.memory) {
    const auto& m = *overlay.memory;
    out += fmt::format("; memory-bound kernels at {:.3f} of HBM bandwidth{} ({} points, max residual {:.1f}%)",
                       m.hbm_efficiency,
                       m.source.file.empty() ? std::string()
                                             : fmt::format(", measured on {} sha256 {}", m.source.file,
                                                           m.source.sha256.substr(0, 12)),
                       m.points, 100 * m.max_residual);
  }
  if (overlay.host) {
    const auto& h = *overlay.host;
    out += fmt::format("; {:.1f} us of CPU per launched kernel{} ({} launch interval{} over {} step{}, max residual {:.1f}%)",
                       h.host_op_s * 1e6,
                       h.source.file.empty() ? std::string()
                                             : fmt::format(", measured on {} sha256 {}", h.source.file,
                                                           h.source.sha256.substr(0, 12)),
                       h.points, h.points == 1 ? "" : "s", h.steps, h.steps == 1 ? "" : "s", 100 * h.max_residual);
  }
  return out + ")";
}

GemmCurve effective_gemm_curve(const HardwareProfile& hw, const CalibrationOverlay* overlay) {
  if (overlay == nullptr || !overlay->gemm) return hw.gemm_curve;
  GemmCurve c = overlay->gemm->curve;
  for (auto [mine, profile] : {std::pair{&c.tf32_max_efficiency, hw.gemm_curve.tf32_max_efficiency},
                               std::pair{&c.fp32_max_efficiency, hw.gemm_curve.fp32_max_efficiency},
                               std::pair{&c.fp8_max_efficiency, hw.gemm_curve.fp8_max_efficiency}})
    if (*mine <= 0) *mine = profile;
  return c;
}

void check_overlay(const CalibrationOverlay& overlay, const std::string& source) {
  if (overlay.tables.empty() && !overlay.gemm && !overlay.memory && !overlay.host)
    throw InputError(source, "/tables", "expected at least one table, a \"gemm\", a \"memory_bound\" or a \"host\" section");
  if (overlay.gemm) check_gemm_curve(overlay.gemm->curve, source, "/gemm");
  for (std::size_t i = 0; i < overlay.tables.size(); ++i) {
    const auto& t = overlay.tables[i];
    const std::string where = fmt::format("/tables/{}", i);
    if (t.segments.empty()) throw InputError(source, where + "/segments", "expected at least one segment");
    if (t.ranks < 2) throw InputError(source, where + "/ranks", fmt::format("expected ≥ 2 ranks, got {}", t.ranks));
    for (std::size_t k = 0; k < t.segments.size(); ++k) {
      const auto& s = t.segments[k];
      const std::string at = fmt::format("{}/segments/{}", where, k);
      if (!(s.lo_bytes >= 0 && s.hi_bytes > s.lo_bytes && std::isfinite(s.hi_bytes)))
        throw InputError(source, at, fmt::format("expected 0 ≤ lo_bytes < hi_bytes, got [{}, {})", s.lo_bytes, s.hi_bytes));
      if (!(s.latency_factor > 0 && std::isfinite(s.latency_factor)))
        throw InputError(source, at + "/latency_factor", fmt::format("expected a finite factor > 0, got {}", s.latency_factor));
      if (!(s.bandwidth_factor > 0 && std::isfinite(s.bandwidth_factor)))
        throw InputError(source, at + "/bandwidth_factor", fmt::format("expected a finite factor > 0, got {}", s.bandwidth_factor));
      if (k > 0 && t.segments[k - 1].hi_bytes != s.lo_bytes)
        throw InputError(source, at + "/lo_bytes",
                         fmt::format("segments must be contiguous: previous hi_bytes {} but lo_bytes {}",
                                     t.segments[k - 1].hi_bytes, s.lo_bytes));
    }
  }
}

}  // namespace stepsim::hardware
