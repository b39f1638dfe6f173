// SPDX-License-Identifier: Apache-2.0
// stepsim-validate: command-line options of the three subcommands and the DDP bucket plan.
// Plain C++ (no CUDA): argument checking and bucketing run, and are tested, without a GPU.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace stepsim::validate {

/// `mlp-step`: the seed's MLP (L layers of W_in[D,F], W_out[F,D], bf16) under DDP.
struct MlpStepOptions {
  std::int64_t layers = 4;        ///< --layers L
  std::int64_t hidden = 4096;     ///< --hidden D
  std::int64_t ffn = 16384;       ///< --ffn F
  std::int64_t tokens = 4096;     ///< --tokens B (tokens per GPU per micro-batch)
  double bucket_mb = 25;          ///< --bucket-mb X (MiB, PyTorch bucket_cap_mb)
  double first_bucket_mb = 1;     ///< --first-bucket-mb (MiB, PyTorch's 1 MiB first bucket)
  std::int64_t grad_accum = 1;    ///< --grad-accum G (no_sync on all but the last)
  std::int64_t iters = 10;        ///< --iters N (recorded steps)
  std::int64_t warmup = 3;        ///< --warmup W (steps run before recording)
  int gpus = 0;                   ///< --gpus N (0: every visible device)
  bool gradient_as_bucket_view = false;  ///< --gradient-as-bucket-view
  bool plan_only = false;         ///< --plan-only: the bucket plan as JSON (to --out, else stdout), no GPU
  std::string out;                ///< --out MEASURED.json (required unless --plan-only; with it, the plan)
};

/// `gemm-sweep`: the GEMMs of the MLP layer (forward, dgrad, wgrad) per (D, F, B).
struct GemmSweepOptions {
  std::vector<std::int64_t> hidden = {2048, 4096, 8192};  ///< --hidden D[,D...]
  std::vector<std::int64_t> ffn;     ///< --ffn F[,F...] (one per D; default 4·D)
  std::vector<std::int64_t> tokens = {512, 1024, 2048, 4096, 8192, 16384};  ///< --tokens B[,B...]
  std::int64_t iters = 20;           ///< --iters N
  std::int64_t warmup = 5;           ///< --warmup W
  std::string out;                   ///< --out FILE.json (optional; the table goes to stdout)
};

/// `collective-sweep`: nccl-tests-style size sweeps of AllReduce, ReduceScatter, AllGather.
struct CollectiveSweepOptions {
  std::vector<std::string> ops = {"all_reduce", "reduce_scatter", "all_gather"};  ///< --ops
  std::int64_t min_bytes = 8;               ///< --min-bytes (-b), accepts K/M/G (2^10, 2^20, 2^30)
  std::int64_t max_bytes = 1LL << 30;       ///< --max-bytes (-e)
  std::int64_t step_factor = 2;             ///< --step-factor (-f)
  std::int64_t iters = 20;                  ///< --iters (-n)
  std::int64_t warmup = 5;                  ///< --warmup (-w)
  std::string dtype = "float";              ///< --dtype float|bfloat16
  int gpus = 0;                             ///< --gpus N (0: every visible device)
  std::string out;                          ///< --out FILE.log (also printed to stdout)
};

/// Parses `args` (the words after the subcommand). A given --out is checked with
/// check_output_path() here, so a bad output path is refused before any CUDA call.
/// @throws UsageError naming the flag, the bad value and the expectation.
MlpStepOptions parse_mlp_step(const std::vector<std::string>& args);
GemmSweepOptions parse_gemm_sweep(const std::vector<std::string>& args);
CollectiveSweepOptions parse_collective_sweep(const std::vector<std::string>& args);

/// Refuses an output path that cannot be written: empty, a directory or another non-regular
/// file (device, FIFO, socket), or one whose parent folder is missing, not a folder or not
/// writable. Only looks (stat/access); creates nothing.
/// @throws UsageError "FLAG: 'PATH': <why>; expected a writable file path".
void check_output_path(const std::string& flag, const std::string& path);

/// Writes `text` to `path` through `path`.tmp renamed over it (never half-written).
/// @throws UsageError naming the path and the system error.
void write_file_atomic(const std::string& path, const std::string& text);

/// Parses a size as nccl-tests does: an integer with an optional K, M or G suffix (powers of 2).
/// @throws UsageError mentioning `flag`.
std::int64_t parse_size(const std::string& flag, const std::string& text);

/// One gradient tensor of the MLP in gradient-ready order.
struct PlanTensor {
  std::string name;         ///< "layers.3.w_out" (the simulator's parameter name)
  std::int64_t layer = 0;
  bool w_out = false;       ///< w_out[F,D] (else w_in[D,F])
  std::int64_t bytes = 0;   ///< numel × 2 (bf16)
  std::int64_t bucket = 0;  ///< bucket index
  std::int64_t offset_bytes = 0;  ///< offset in the flat bucket buffer (buckets back to back)
};

/// One DDP bucket: tensors [first, first + count) of the ready-order list.
struct PlanBucket {
  std::int64_t bytes = 0;
  std::size_t first = 0;
  std::size_t count = 0;
  std::int64_t offset_bytes = 0;  ///< offset of the bucket in the flat bucket buffer
};

/// The bucket plan of stepsim's DDP strategy (models/strategy/buckets.cpp, ddp.cpp) for the
/// MLP: ready order = layers reversed, w_out then w_in in each layer; the first bucket's cap
/// is first_bucket_mb MiB, then bucket_mb MiB; a bucket closes as soon as its bytes reach the
/// cap; tensors are never split (one dtype, so one open bucket).
struct BucketPlan {
  std::vector<PlanTensor> tensors;  ///< in gradient-ready order (= bucket order)
  std::vector<PlanBucket> buckets;
  std::int64_t total_bytes = 0;
};

/// Builds the plan for `o`.
BucketPlan make_bucket_plan(const MlpStepOptions& o);

/// The plan as one JSON object (what --plan-only prints).
std::string bucket_plan_json(const MlpStepOptions& o, const BucketPlan& plan);

}  // namespace stepsim::validate
