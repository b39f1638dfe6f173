// SPDX-License-Identifier: Apache-2.0
// MEASURED.json: the timeline stepsim-validate mlp-step writes (schema "stepsim.measured/1"):
// the run's configuration, its buckets, and per recorded iteration, per rank, the named tasks
// (the simulator's DDP task names: fwd.layers.N, bwd.layers.N.w_out, allreduce.bucketK,
// ddp.copy_bucket_to_grad, optimizer.adam, with an mbK. prefix under gradient accumulation)
// with their stream, phase, start and end, and the kernels inside each task.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace stepsim::validate {

/// What a measured task counts as (the simulator's models::Phase, by name).
enum class MeasuredPhase { Forward, Backward, Communication, Optimizer, Overhead };

/// "forward", "backward", "communication", "optimizer", "overhead".
std::string measured_phase_name(MeasuredPhase p);

/// One kernel (or collective call) of a task: [start_s, end_s] between its CUDA events.
struct MeasuredKernel {
  std::string name;
  double start_s = 0;
  double end_s = 0;
};

/// One task on one rank: times in seconds from the iteration's first event on the compute
/// stream of that rank.
struct MeasuredTask {
  std::string name;
  MeasuredPhase phase = MeasuredPhase::Forward;
  std::string stream;  ///< "compute" or "comm"
  double start_s = 0;
  double end_s = 0;    ///< ≥ start_s
  std::vector<MeasuredKernel> kernels;
};

/// The tasks of one rank in one iteration, in launch order.
struct MeasuredRank {
  std::int64_t rank = 0;
  /// The step's length when the run measured it apart from its tasks (a profiler trace's
  /// ProfilerStep annotation) [s]; 0: the latest task end.
  double step_s = 0;
  std::vector<MeasuredTask> tasks;
};

/// One recorded optimizer step.
struct MeasuredIteration {
  std::int64_t iteration = 0;
  std::vector<MeasuredRank> ranks;  ///< one per rank, ranks 0..n-1 in order
};

/// The run's configuration (mlp-step's flags).
struct MeasuredConfig {
  std::int64_t layers = 0, hidden = 0, ffn = 0;
  std::int64_t tokens = 0;        ///< tokens per GPU per micro-batch
  std::string dtype;              ///< "bf16"
  double bucket_cap_mb = 0;       ///< MiB
  double first_bucket_mb = 0;     ///< MiB
  std::int64_t grad_accum = 1;
  bool gradient_as_bucket_view = false;
  std::string optimizer;          ///< "adam"
  std::int64_t ranks = 0;         ///< GPUs (NCCL communicator size)
  std::int64_t iters = 0, warmup = 0;
};

/// One gradient bucket as the run built it.
struct MeasuredBucket {
  std::int64_t index = 0;
  double bytes = 0;
  std::string tensors;  ///< comma-separated parameter names in ready order
};

/// Where the measurement was taken (free text from the run).
struct MeasuredEnvironment {
  std::string host, device, cuda_runtime, cuda_driver, nccl, cublas;
  std::int64_t gpus = 0;
};

/// A whole MEASURED.json.
struct MeasuredTimeline {
  std::string source;     ///< file name, for messages
  std::string generator;  ///< "stepsim-validate 0.1"
  std::string command;    ///< "mlp-step"
  MeasuredEnvironment environment;
  MeasuredConfig config;
  std::vector<MeasuredBucket> buckets;
  std::vector<MeasuredIteration> iterations;  ///< non-empty
  /// What the reader left out or assumed (steps dropped from a trace), for the comparison.
  std::vector<std::string> notes;
};

/// Reads and checks MEASURED.json.
/// @throws InputError naming the file, the JSON path, the bad value and the expectation: bad
///         JSON, a schema other than "stepsim.measured/1", unknown keys, a missing field, an
///         unknown phase or stream, end_s < start_s, negative times, a kernel outside its
///         task, rank lists that are not 0..ranks-1, duplicate task names on a rank, no
///         iterations, two iterations with one iteration number, a rank whose every task
///         ends at 0 s (nothing timed).
MeasuredTimeline read_measured_timeline(const std::string& path);

/// Same, from JSON text; `source` names it in messages.
MeasuredTimeline parse_measured_timeline(const std::string& text, const std::string& source);

}  // namespace stepsim::validate
