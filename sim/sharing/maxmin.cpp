// SPDX-License-Identifier: Apache-2.0
// Progressive filling for weighted max-min fairness.
#include "sim/sharing/maxmin.hpp"

#include "sim/support/error.hpp"

#include <algorithm>
#include <cmath>

namespace stepsim::sim::sharing {

std::vector<double> maxmin(const std::vector<double>& capacities, const std::vector<Flow>& flows) {
  const std::size_t nr = capacities.size();
  for (const double c : capacities) STEPSIM_ASSERT(std::isfinite(c) && c >= 0, "capacity {} is not finite and ≥ 0", c);
  for (const Flow& f : flows) {
    STEPSIM_ASSERT(std::isfinite(f.weight) && f.weight > 0, "flow weight {} is not > 0", f.weight);
    STEPSIM_ASSERT(f.bound > 0, "flow bound {} is not > 0", f.bound);
    for (const Use& u : f.uses) {
      STEPSIM_ASSERT(u.resource < nr, "flow uses resource {} of {}", u.resource, nr);
      STEPSIM_ASSERT(std::isfinite(u.coefficient) && u.coefficient > 0, "use coefficient {} is not > 0", u.coefficient);
    }
  }
  std::vector<double> rate(flows.size(), 0.0);
  std::vector<bool> frozen(flows.size(), false);
  std::vector<double> remaining = capacities;
  std::vector<double> load(nr);
  std::size_t active = 0;
  for (std::size_t i = 0; i < flows.size(); ++i) {
    if (flows[i].uses.empty()) {
      rate[i] = flows[i].bound;
      frozen[i] = true;
    } else {
      ++active;
    }
  }
  double level = 0;  // every active flow i has rate weight_i × level
  while (active > 0) {
    std::fill(load.begin(), load.end(), 0.0);
    for (std::size_t i = 0; i < flows.size(); ++i)
      if (!frozen[i])
        for (const Use& u : flows[i].uses) load[u.resource] += u.coefficient * flows[i].weight;
    double step = std::numeric_limits<double>::infinity();
    for (std::size_t j = 0; j < nr; ++j)
      if (load[j] > 0) step = std::min(step, std::max(0.0, remaining[j]) / load[j]);
    for (std::size_t i = 0; i < flows.size(); ++i)
      if (!frozen[i]) step = std::min(step, flows[i].bound / flows[i].weight - level);
    step = std::max(step, 0.0);
    level += step;
    for (std::size_t j = 0; j < nr; ++j) remaining[j] -= load[j] * step;
    // Freeze flows at a saturated resource or at their bound (relative tolerance: the
    // subtraction above leaves rounding residue of a few ulps of the capacity).
    std::vector<bool> saturated(nr, false);
    for (std::size_t j = 0; j < nr; ++j)
      saturated[j] = load[j] > 0 && remaining[j] <= 1e-12 * std::max(capacities[j], 1e-300);
    const std::size_t before = active;
    for (std::size_t i = 0; i < flows.size(); ++i) {
      if (frozen[i]) continue;
      rate[i] = flows[i].weight * level;
      bool stop = rate[i] >= flows[i].bound * (1 - 1e-12);
      for (const Use& u : flows[i].uses) stop = stop || saturated[u.resource];
      if (stop) {
        rate[i] = std::min(rate[i], flows[i].bound);
        frozen[i] = true;
        --active;
      }
    }
    STEPSIM_ASSERT(active < before, "max-min filling made no progress ({} flows active)", active);
  }
  return rate;
}

}  // namespace stepsim::sim::sharing
