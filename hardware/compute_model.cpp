// SPDX-License-Identifier: Apache-2.0
// Compute roofline.
#include "hardware/compute_model.hpp"

#include "sim/support/error.hpp"

#include <algorithm>
#include <cmath>

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

double sm_partition_slowdown(int sms, int held, double ctas) {
  STEPSIM_ASSERT(sms >= 1 && held >= 0 && held < sms && ctas >= 0, "bad SM partition: {} SMs, {} held, {} CTAs",
                 sms, held, ctas);
  if (ctas == 0) return static_cast<double>(sms) / (sms - held);
  return std::ceil(ctas / (sms - held)) / std::ceil(ctas / sms);
}

}  // namespace stepsim::hardware
