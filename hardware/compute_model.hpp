// SPDX-License-Identifier: Apache-2.0
// Compute roofline: how long a kernel runs on one GPU.
#pragma once

#include "hardware/hardware_profile.hpp"

namespace stepsim::hardware {

/// Roofline time of a kernel doing `flops` floating-point operations and moving `bytes`
/// through HBM (DESIGN.md "Core abstractions"):
///   t = max(flops / (peak · gemm_efficiency), bytes / (hbm_bw · hbm_efficiency))   [s]
/// (peak = HardwareProfile::sustained_flops_per_s(): the datasheet peak at the sustained clock)
/// Preconditions: flops ≥ 0, bytes ≥ 0.
double kernel_time_s(const HardwareProfile& hw, double flops, double bytes);

/// Time of a sequence of kernels: GEMMs doing `flops` and streaming kernels moving `bytes`,
/// one after the other: flops / (peak · gemm_efficiency) + bytes / (hbm_bw · hbm_efficiency).
double sequence_time_s(const HardwareProfile& hw, double flops, double bytes);

/// Slowdown of a compute kernel while NCCL's CTAs hold `held` of the GPU's `sms` SMs
/// (semantics.md §E rules 94–95): waves ceil(ctas / (sms − held)) against ceil(ctas / sms).
/// `ctas` = 0 means many waves of unknown count (stepsim's layer tasks fuse many GEMMs whose
/// tile counts it does not know): the limit sms / (sms − held), wave quantization averaged out.
/// Rule 95's example: 132 CTAs, 132 SMs, 24 held → 2.0; the limit for H100 with 24 held: 1.222.
/// Preconditions: sms ≥ 1, 0 ≤ held < sms, ctas ≥ 0 (InternalError otherwise).
double sm_partition_slowdown(int sms, int held, double ctas = 0);

/// Time of a streaming (memory-bound) kernel: bytes / (hbm_bw · hbm_efficiency)   [s].
double streaming_time_s(const HardwareProfile& hw, double bytes);

}  // namespace stepsim::hardware
