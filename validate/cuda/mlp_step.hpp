// SPDX-License-Identifier: Apache-2.0
// stepsim-validate: the measured MLP step and the two microbenchmarks.
#pragma once

#include "options.hpp"

#include <string>

namespace stepsim::validate {

/// Runs `o.warmup + o.iters` DDP steps of the MLP on GPUs 0..world-1 (one thread and one NCCL
/// communicator each) and returns MEASURED.json (schema "stepsim.measured/1": config, buckets,
/// per iteration, per rank, the named tasks with start_s/end_s relative to the iteration's
/// first event on the compute stream, and their kernels).
/// @throws DeviceError on any failed CUDA / NCCL / cuBLAS call.
std::string run_mlp_step(const MlpStepOptions& o, int world);

/// Times the MLP layer's six GEMMs per (D, F, B) on GPU 0; returns the JSON document
/// (schema "stepsim.gemm-sweep/1") and appends a text table to `table`.
std::string run_gemm_sweep(const GemmSweepOptions& o, std::string& table);

/// Runs the collective sweeps on GPUs 0..world-1 and returns the nccl-tests-format text.
std::string run_collective_sweep(const CollectiveSweepOptions& o, int world);

}  // namespace stepsim::validate
