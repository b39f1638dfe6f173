// SPDX-License-Identifier: Apache-2.0
// Compute roofline.
#include "hardware/compute_model.hpp"

#include <algorithm>

namespace stepsim::hardware {

double kernel_time_s(const HardwareProfile& hw, double flops, double bytes) {
  return std::max(flops / (hw.peak_flops_per_s * hw.gemm_efficiency), streaming_time_s(hw, bytes));
}

double sequence_time_s(const HardwareProfile& hw, double flops, double bytes) {
  return flops / (hw.peak_flops_per_s * hw.gemm_efficiency) + streaming_time_s(hw, bytes);
}

double streaming_time_s(const HardwareProfile& hw, double bytes) {
  return bytes / (hw.hbm_bandwidth_bytes_per_s * hw.hbm_efficiency);
}

}  // namespace stepsim::hardware
