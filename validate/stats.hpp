// SPDX-License-Identifier: Apache-2.0
// Small statistics shared by the comparison and accuracy reports.
#pragma once

#include <algorithm>
#include <vector>

namespace stepsim::validate {

/// Median of `v` (mean of the two middle values for an even count); 0 for an empty vector.
inline double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace stepsim::validate
