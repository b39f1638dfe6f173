// SPDX-License-Identifier: Apache-2.0
// Compute roofline: how long a kernel runs on one GPU.
#pragma once

#include "hardware/hardware_profile.hpp"

namespace stepsim::hardware {

/// Roofline time of a kernel doing `flops` floating-point operations and moving `bytes`
/// through HBM (DESIGN.md "Core abstractions"):
///   t = max(flops / (peak · gemm_efficiency), bytes / (hbm_bw · hbm_efficiency))   [s]
/// Preconditions: flops ≥ 0, bytes ≥ 0.
double kernel_time_s(const HardwareProfile& hw, double flops, double bytes);

/// Time of a sequence of kernels: GEMMs doing `flops` and streaming kernels moving `bytes`,
/// one after the other: flops / (peak · gemm_efficiency) + bytes / (hbm_bw · hbm_efficiency).
double sequence_time_s(const HardwareProfile& hw, double flops, double bytes);

/// Time of a streaming (memory-bound) kernel: bytes / (hbm_bw · hbm_efficiency)   [s].
double streaming_time_s(const HardwareProfile& hw, double bytes);

}  // namespace stepsim::hardware
