// SPDX-License-Identifier: Apache-2.0
// Fabric terms fitted to multi-node nccl-tests logs (validate/fabric_fit.hpp).
#include "validate/fabric_fit.hpp"

#include "hardware/nccl_model.hpp"
#include "sim/support/error.hpp"
#include "validate/stats.hpp"

#include <algorithm>
#include <cmath>

namespace stepsim::validate {

namespace {

// Weighted least squares in 1 or 2 unknowns on rows r·x = 1 − L/t, r = (log2 N / t, B / t).
// `use` selects the unknowns (a, k = 1/η); a fixed one keeps `fixed`'s value.
FabricTerms solve(const std::vector<FabricPoint>& pts, bool free_a, bool free_k, const FabricTerms& fixed) {
  double saa = 0, sak = 0, skk = 0, sa = 0, sk = 0;
  for (const auto& p : pts) {
    const double t = p.measured_s;
    const double ra = p.latency_applies ? std::log2(static_cast<double>(p.nodes)) / t : 0.0, rk = p.bandwidth_s / t;
    double rhs = 1 - p.latency_s / t;
    if (!free_a) rhs -= fixed.latency_per_log2_nodes_s * ra;
    if (!free_k) rhs -= rk / fixed.bandwidth_efficiency;
    saa += ra * ra, sak += ra * rk, skk += rk * rk, sa += ra * rhs, sk += rk * rhs;
  }
  FabricTerms out = fixed;
  out.points = pts.size();
  if (free_a && free_k) {
    const double det = saa * skk - sak * sak;
    if (!(std::fabs(det) > 1e-300 * (saa * skk + 1))) return out;
    const double a = (sa * skk - sak * sk) / det, k = (saa * sk - sak * sa) / det;
    out.latency_per_log2_nodes_s = a;
    out.bandwidth_efficiency = k > 0 ? 1 / k : 0;
  } else if (free_a) {
    if (saa > 0) out.latency_per_log2_nodes_s = sa / saa;
  } else if (free_k) {
    if (skk > 0 && sk > 0) out.bandwidth_efficiency = skk / sk;
  }
  return out;
}

double rel_error(const FabricPoint& p, const FabricTerms& terms) { return fabric_time_s(p, terms) / p.measured_s - 1; }

std::pair<double, double> median_max(const std::vector<FabricPoint>& pts, const FabricTerms& terms) {
  std::vector<double> e;
  for (const auto& p : pts) e.push_back(std::fabs(rel_error(p, terms)));
  if (e.empty()) return {0, 0};
  const double worst = *std::max_element(e.begin(), e.end());
  return {median_of(std::move(e)), worst};
}

}  // namespace

double fabric_time_s(const FabricPoint& p, const FabricTerms& terms) {
  return p.latency_s + (p.latency_applies ? terms.latency_per_log2_nodes_s * std::log2(static_cast<double>(p.nodes)) : 0.0) +
         p.bandwidth_s / terms.bandwidth_efficiency;
}

FabricTerms fit_fabric_terms(const std::vector<FabricPoint>& points) {
  const FabricTerms none{0, 1, points.size()};
  if (points.empty()) return none;
  FabricTerms t = solve(points, true, true, none);
  // The constraints bind one at a time: a negative latency or an efficiency above the line
  // rate is not a fabric; refit the other term with that one at its bound.
  if (!(t.latency_per_log2_nodes_s >= 0)) t = solve(points, false, true, FabricTerms{0, 1, 0});
  if (!(t.bandwidth_efficiency > 0 && t.bandwidth_efficiency <= 1)) {
    t = solve(points, true, false, FabricTerms{0, 1, 0});
    if (!(t.latency_per_log2_nodes_s >= 0)) t = none;
  }
  t.points = points.size();
  return t;
}

FabricReport calibrate_fabric(const std::vector<NcclTestsLog>& logs, const std::vector<hardware::HardwareProfile>& profiles,
                              double min_bytes) {
  STEPSIM_ASSERT(profiles.size() == logs.size(), "{} profiles for {} logs", profiles.size(), logs.size());
  // One network: the logs' profiles must agree on it (else the fit would mix fabrics).
  for (std::size_t li = 1; li < logs.size(); ++li)
    if (profiles[li].network_preset != profiles[0].network_preset ||
        profiles[li].fabric_latency_per_log2_nodes_s != profiles[0].fabric_latency_per_log2_nodes_s ||
        profiles[li].fabric_bandwidth_efficiency != profiles[0].fabric_bandwidth_efficiency)
      throw InputError(logs[li].source, "",
                       fmt::format("its profile '{}' is on network '{}', {}'s profile '{}' on '{}': one fit is one network; "
                                   "pass --network NAME (the network the logs ran on) or fit them apart",
                                   profiles[li].name, profiles[li].network_preset.empty() ? "none" : profiles[li].network_preset,
                                   logs[0].source, profiles[0].name,
                                   profiles[0].network_preset.empty() ? "none" : profiles[0].network_preset));
  // The same measurements twice would count in the fit and in their own held-out check.
  for (std::size_t li = 0; li < logs.size(); ++li)
    for (std::size_t lj = 0; lj < li; ++lj)
      if (!logs[li].sha256.empty() && logs[li].sha256 == logs[lj].sha256)
        throw InputError(logs[li].source, "",
                         fmt::format("the same bytes as {}: each log once (a copy would count twice in the fit and in "
                                     "its own held-out check)", logs[lj].source));
  FabricReport rep;
  rep.min_bytes = min_bytes;
  std::vector<FabricPoint> all;
  for (std::size_t li = 0; li < logs.size(); ++li) {
    const auto& log = logs[li];
    hardware::HardwareProfile hw = profiles[li];
    if (li == 0) {
      rep.network = hw.network_preset;
      rep.given = {hw.fabric_latency_per_log2_nodes_s, hw.fabric_bandwidth_efficiency, 0};
    }
    if (rep.hardware.find(hw.name) == std::string::npos) rep.hardware += (rep.hardware.empty() ? "" : ", ") + hw.name;
    hw.fabric_latency_per_log2_nodes_s = 0;
    hw.fabric_bandwidth_efficiency = 1;
    const auto model = hardware::default_collective_model(hw);
    if (model != hardware::CollectiveModel::Nccl)
      throw InputError(log.source, "",
                       fmt::format("profile '{}' has no \"nccl\" object: fabric terms correct the NCCL cost model, "
                                   "which it cannot use (pass --hardware with an NVIDIA profile)", hw.name));
    if (rep.cost_model.find(hardware::collective_model_name(model)) == std::string::npos)
      rep.cost_model += (rep.cost_model.empty() ? "" : ", ") + hardware::collective_model_name(model);
    for (const auto& run : log.runs) {
      const std::string where = fmt::format("line {}", run.first_line);
      const auto op = modelled_op(run.op);
      if (!op) {
        rep.warnings.push_back(fmt::format("{}:{}: {} table skipped: stepsim models AllReduce, AllGather and "
                                           "ReduceScatter only", log.source, run.first_line, run.op.empty() ? "unnamed" : run.op));
        continue;
      }
      if (run.ranks == 1 || run.nodes == 1) {
        rep.warnings.push_back(fmt::format("{}:{}: one-node table skipped: no network in it", log.source, run.first_line));
        continue;
      }
      if (run.ranks < 2 || run.nodes < 1)
        throw InputError(log.source, where,
                         fmt::format("rank and node counts are needed to fit a fabric (got {} ranks on {} hosts): a raw "
                                     "log's '#  Rank' lines, or a CSV's .json sidecar with total_ranks and nodes",
                                     run.ranks, run.nodes));
      if (run.ranks % run.nodes != 0)
        throw InputError(log.source, where, fmt::format("{} ranks on {} hosts is not a whole number of GPUs per node",
                                                        run.ranks, run.nodes));
      if (run.ranks / run.nodes > hw.gpus_per_node)
        throw InputError(log.source, where,
                         fmt::format("{} ranks on {} hosts is {} per node, more than profile '{}' has ({}); pass --hardware "
                                     "with the log's machine", run.ranks, run.nodes, run.ranks / run.nodes, hw.name,
                                     hw.gpus_per_node));
      const hardware::GroupShape group{run.ranks, run.ranks / run.nodes, 0};
      FabricTableReport t;
      t.source = log.source;
      t.op = run.op;
      t.gpu = run.gpu;
      t.ranks = run.ranks;
      t.nodes = run.nodes;
      t.hardware = hw.name;
      std::vector<const NcclTestsRow*> rows;
      for (const auto& r : run.rows)
        if (r.size_bytes >= min_bytes && r.time_us()) rows.push_back(&r);
      std::sort(rows.begin(), rows.end(), [](const auto* x, const auto* y) { return x->size_bytes < y->size_bytes; });
      if (rows.size() < 2) {
        rep.warnings.push_back(fmt::format("{}:{}: table skipped: {} row(s) of at least {:.0f} bytes, 2 needed",
                                           log.source, run.first_line, rows.size(), min_bytes));
        continue;
      }
      const std::size_t ti = rep.tables.size();
      int index = 0;
      for (const auto* r : rows) {
        const auto c = hardware::model_collective_cost(model, hw, *op, r->size_bytes, group);
        all.push_back({ti, index++, run.nodes, r->size_bytes, *r->time_us() * 1e-6, c.latency_s, c.bandwidth_s,
                       hardware::fabric_latency_applies(c)});
      }
      t.rows = index;
      rep.tables.push_back(std::move(t));
    }
  }
  if (rep.tables.empty())
    throw InputError(logs.empty() ? "calibrate fabric" : logs.front().source, "",
                     "no multi-node table with 2 or more rows of at least 1 MiB: a fabric is fitted on logs of "
                     "collectives across several nodes");
  rep.terms = fit_fabric_terms(all);
  // A term at its bound is no measurement of it: say so (the logs are faster than the model
  // allows in that term, or the wrong network or profile was given).
  if (rep.terms.latency_per_log2_nodes_s == 0)
    rep.warnings.push_back("the fitted latency per doubling of the node count is at its bound, 0: the logs are no slower "
                           "than the nominal latency; check --network and the profile");
  if (rep.terms.bandwidth_efficiency == 1)
    rep.warnings.push_back("the fitted bandwidth efficiency is at its bound, 1: the logs are as fast as the NICs' line rate "
                           "or faster; check --network (its NIC speed) and the profile");
  const FabricTerms nominal{0, 1, 0};
  for (std::size_t ti = 0; ti < rep.tables.size(); ++ti) {
    auto& t = rep.tables[ti];
    std::vector<FabricPoint> mine, train;
    for (const auto& p : all) (p.table == ti ? mine : train).push_back(p);
    std::vector<FabricPoint> judged = mine;
    if (rep.tables.size() >= 2) {
      t.held_out_rule = "other tables";
    } else {
      t.held_out_rule = "even -> odd rows";
      train.clear();
      judged.clear();
      for (const auto& p : mine) (p.index % 2 == 0 ? train : judged).push_back(p);
    }
    t.held_out_terms = fit_fabric_terms(train);
    std::tie(t.nominal_median, t.nominal_max) = median_max(mine, nominal);
    std::tie(t.fitted_median, t.fitted_max) = median_max(mine, rep.terms);
    std::tie(t.held_out_median, t.held_out_max) = median_max(judged, t.held_out_terms);
    std::tie(t.given_median, t.given_max) = median_max(mine, rep.given);
  }
  return rep;
}

}  // namespace stepsim::validate
