// SPDX-License-Identifier: Apache-2.0
// Weighted max-min fair sharing of resource capacities among flows (a pure function).
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

namespace stepsim::sim::sharing {

/// A flow's use of one resource: it consumes coefficient × its rate of the resource's capacity.
struct Use {
  std::uint32_t resource = 0;  ///< index into the capacities
  double coefficient = 1;      ///< > 0 (e.g. 2 for a flow crossing the same link twice)
};

/// One flow (an activity sharing resources): weight, optional rate bound, resources used.
struct Flow {
  double weight = 1;  ///< > 0; at the bottleneck, rates are proportional to weights
  double bound = std::numeric_limits<double>::infinity();  ///< largest rate the flow can use, > 0
  std::vector<Use> uses;
};

/// Weighted max-min fair rates by progressive filling (Bertsekas & Gallager, "Data Networks",
/// 2nd ed., §6.5.2; SimGrid's LMM solver without its lazy updates): every unfrozen flow i grows
/// at rate weight_i × L as the common level L rises; when a resource j saturates
/// (Σ coefficient × rate = capacity_j) the flows crossing it freeze, and a flow also freezes when
/// it reaches its bound. The result is the unique weighted max-min fair allocation: no flow's
/// rate can grow without lowering that of a flow with a smaller or equal rate-to-weight ratio
/// that shares a saturated resource with it.
///
/// Units: rates are in the capacities' unit (e.g. bytes/s). A flow with no resources gets its
/// bound (+∞ when unbounded). Cost: O(iterations × total uses), iterations ≤ flows + resources.
/// Preconditions: capacities finite and ≥ 0; weights > 0; bounds > 0; coefficients > 0 and
/// finite; resource indexes in range.
/// @throws InternalError when a precondition does not hold.
std::vector<double> maxmin(const std::vector<double>& capacities, const std::vector<Flow>& flows);

}  // namespace stepsim::sim::sharing
