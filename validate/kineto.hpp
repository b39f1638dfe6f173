// SPDX-License-Identifier: Apache-2.0
// PyTorch profiler (Kineto) traces in (issue 18): the Chrome-trace JSON that torch.profiler's
// export_chrome_trace / tensorboard_trace_handler write (`traceEvents`, `deviceProperties`,
// `distributedInfo`), plain or gzipped, read as a stream (the file is never held whole).
//
// What is read, and from which events (PyTorch's profiler output as Holistic Trace Analysis
// reads it: facebookresearch/HolisticTraceAnalysis, hta/common/trace_parser.py):
//   - steps: CPU annotations `ProfilerStep#N` (cat `user_annotation` or `cpu_op`);
//   - GPU work: `kernel`, `gpu_memcpy`, `gpu_memset` events (older PyTorch: `Kernel`, `Memcpy`,
//     `Memset`), each on `args.device` and `args.stream`;
//   - launches: `cuda_runtime` / `cuda_driver` events (`Runtime`), joined to GPU work by
//     `args.correlation`; a GPU event belongs to the step whose annotation holds its launch,
//     and to the CPU op that encloses its launch on the launching thread (the innermost
//     `cpu_op` by time, which is how HTA builds call stacks: the `External id` of GPU events
//     names the op in newer traces only);
//   - NCCL calls: `Collective name`, `In msg nelems`, `Out msg nelems`, `Group size`, `dtype`
//     from the kernel's args (PyTorch ≥ 2.3) or else from its `record_param_comms` op's args;
//     op, algorithm and protocol from the kernel name (`ncclKernel_AllReduce_RING_LL_Sum_float`,
//     `ncclDevKernel_AllGather_RING_LL`);
//   - `distributedInfo` (rank, world size, backend, process groups, NCCL version) and
//     `deviceProperties` (name, SMs, memory).
// Times are kept in integer nanoseconds from the trace's first GPU or step event: `ts` values
// of ~1.7e15 µs lose sub-µs digits as doubles, so they are read from the JSON text.
#pragma once

#include "validate/fit.hpp"
#include "validate/gemm_fit.hpp"
#include "validate/measured_timeline.hpp"
#include "validate/nccl_tests.hpp"

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace stepsim::validate {

/// What a GPU kernel does, from its name (classify_kernel) or its event category.
enum class KernelClass {
  Gemm,         ///< cuBLAS / cuBLASLt / CUTLASS / nvjet / Triton template / rocBLAS-Tensile matmuls
  Conv,         ///< cuDNN / MIOpen convolutions (implicit GEMM, Winograd, FFT)
  Attention,    ///< FlashAttention, cuDNN SDPA, memory-efficient attention
  Nccl,         ///< NCCL / RCCL collectives and send/recv
  Elementwise,  ///< pointwise kernels: copies, casts, fills, activations, dropout, embedding, indexing
  Reduction,    ///< reductions: sums, softmax, losses, pooling
  Norm,         ///< batch / layer / RMS norm
  Optimizer,    ///< optimizer steps (multi_tensor_apply, fused Adam / SGD / LAMB)
  Memcpy,       ///< gpu_memcpy events
  Memset,       ///< gpu_memset events
  Unknown,      ///< a kernel name no rule recognises (counted and reported, never dropped)
};
inline constexpr std::size_t kKernelClasses = 11;

/// "gemm", "conv", "attention", "nccl", "elementwise", "reduction", "norm", "optimizer",
/// "memcpy", "memset", "unknown".
std::string_view kernel_class_name(KernelClass c);

/// The class of a kernel event's name (never Memcpy / Memset: those are event categories).
/// Rules, first match wins, on the lowercased name: "nccl" or "rccl" → Nccl; flash / fmha /
/// attention / sdpa → Attention; conv / cudnn (except cuDNN's batch-norm kernels) / fprop /
/// dgrad / wgrad / winograd / "scudnn" / "hcudnn" / MIOpen / cuDNN's offset kernels → Conv; gemm /
/// gemv / cublas / cutlass / nvjet / "cijk_" (Tensile) / "triton_tem" / matmul → Gemm;
/// multi_tensor_apply / adam / sgd / LAMB stages / _foreach → Optimizer; batch / layer / RMS / group
/// norm names, "bn_", GammaBetaBackward → Norm; reduce / softmax / loss / nll / cross_entropy /
/// pool / CUB / "triton_red" / "triton_per" → Reduction; elementwise / copy / fill / cat / index /
/// gather / scatter / embedding / dropout / layout transforms / "triton_poi" / activation names,
/// then any other "triton_" kernel → Elementwise; else Unknown. (The norm rule comes before the
/// conv rule: cuDNN's batch-norm kernels live in namespace cudnn.)
KernelClass classify_kernel(std::string_view name);

/// An NCCL kernel's name read apart: op ("AllReduce", "AllGather", "ReduceScatter",
/// "Broadcast", "Reduce", "SendRecv", ...), algorithm ("RING", "TREE", "NVLS", "NVLS_TREE",
/// "COLLNET_DIRECT", "COLLNET_CHAIN", "PAT"; "" when the name does not say, as
/// `ncclDevKernel_Generic` or SendRecv) and protocol ("LL", "LL128", "SIMPLE" or "").
struct NcclKernelName {
  std::string op, algorithm, protocol;
};

/// Reads `ncclKernel_OP_ALGO_PROTO_...` (NCCL ≤ 2.18) and `ncclDevKernel_OP_..._ALGO_PROTO`
/// (NCCL ≥ 2.19); op empty when `name` is not an NCCL kernel name.
NcclKernelName parse_nccl_kernel_name(std::string_view name);

/// One NCCL call as a trace records it.
struct KinetoCollective {
  std::string op;         ///< the kernel name's op ("AllReduce")
  std::string name;       ///< PyTorch's `Collective name` ("allreduce", "_allgather_base"); "" when absent
  std::string algorithm;  ///< from the kernel name
  std::string protocol;   ///< from the kernel name
  std::string dtype;      ///< `dtype` ("Float", "BFloat16"); "" when absent
  std::int64_t in_nelems = -1, out_nelems = -1;  ///< `In/Out msg nelems`; -1 when absent
  std::int64_t group_size = -1;                  ///< `Group size`; -1 when absent
  bool args_from_kernel = false;  ///< the sizes came from the kernel's args (else its CPU op's, or none)
};

/// One GPU event (kernel, memcpy or memset).
struct KinetoKernel {
  std::uint32_t name = 0;  ///< index into KinetoTrace::names
  KernelClass cls = KernelClass::Unknown;
  MeasuredPhase phase = MeasuredPhase::Forward;  ///< from its launch (KinetoTrace comment)
  std::int32_t device = 0;
  std::int64_t stream = 0;
  std::int64_t start_ns = 0, dur_ns = 0;  ///< from KinetoTrace::origin
  std::int32_t step = -1;        ///< index into KinetoTrace::steps; -1 outside every step
  std::int32_t cpu_op = -1;      ///< index into KinetoTrace::ops: the op that launched it; -1 unknown
  std::int32_t collective = -1;  ///< index into KinetoTrace::collectives (NCCL kernels)
  std::int64_t bytes = -1;       ///< memcpy / memset `bytes`; -1 when absent
  bool host_copy = false;        ///< a memcpy to or from the host (HtoD, DtoH, ...)
  bool launched = false;         ///< joined to its launch event by correlation id
  /// Its launch call (cudaLaunchKernel, cudaMemcpyAsync, ...) on the CPU, when joined: start from
  /// KinetoTrace::origin, duration, and the CPU thread (a small id, one per trace pid/tid).
  std::int64_t launch_ns = 0, launch_dur_ns = 0;
  std::int32_t launch_thread = -1;
};

/// A runtime call during which the CPU waits for the GPU (blocking_call), on its thread.
struct KinetoBlockingCall {
  std::int32_t thread = 0;                ///< as KinetoKernel::launch_thread
  std::int64_t start_ns = 0, dur_ns = 0;  ///< from KinetoTrace::origin
};

/// True for a runtime call that returns only when the GPU has reached it: a name holding
/// "Synchronize" (cudaDeviceSynchronize, cudaStreamSynchronize, cudaEventSynchronize and HIP's),
/// the synchronous copies cudaMemcpy / cudaMemcpy2D / hipMemcpy / hipMemcpyWithStream, and
/// cudaFree / hipFree (which synchronize the device), and the driver API's cuMemcpy* and
/// cuMemFree* calls without "Async". CUDA Runtime API, "API synchronization behavior".
bool blocking_call(std::string_view name);

/// A CPU op that launched GPU work: its name and, with record_shapes, its `Input Dims` (as
/// the JSON text the trace holds).
struct KinetoCpuOp {
  std::uint32_t name = 0;  ///< index into KinetoTrace::names
  /// Its `Input Dims`, one shape per input (empty for a scalar, a list or an entry that is not a
  /// list of integers); empty when not recorded.
  std::vector<std::vector<std::int64_t>> input_dims;
  /// Its `Input type`, one per input ("float", "c10::BFloat16"; "" for a non-string entry).
  std::vector<std::string> input_types;
};

/// A `ProfilerStep#N` annotation (or the whole trace when it has none).
struct KinetoStep {
  std::int64_t number = 0;
  std::int64_t start_ns = 0, dur_ns = 0;  ///< the CPU annotation's span, from KinetoTrace::origin
};

/// One entry of `deviceProperties`.
struct KinetoDevice {
  std::int64_t id = 0;
  std::string name;
  std::int64_t sms = 0;
  double memory_bytes = 0;
  std::int64_t compute_major = 0, compute_minor = 0;
};

/// One entry of `distributedInfo.pg_config`.
struct KinetoProcessGroup {
  std::string name, description;
  std::int64_t size = 0;
  std::vector<std::int64_t> ranks;
};

/// A whole trace file, reduced to what stepsim uses.
struct KinetoTrace {
  std::string source;        ///< the file, for messages
  std::string sha256;        ///< of the file's bytes as stored (compressed when gzipped)
  std::uintmax_t file_bytes = 0;
  std::uintmax_t json_bytes = 0;  ///< after decompression
  bool gzipped = false;
  std::int64_t rank = -1, world_size = -1;  ///< distributedInfo; -1 when absent
  std::string backend, nccl_version;
  std::vector<KinetoProcessGroup> process_groups;
  std::vector<KinetoDevice> devices;
  std::int64_t events = 0;            ///< every element of traceEvents
  std::int64_t cpu_ops = 0;           ///< cpu_op / user_annotation events read
  std::int64_t launches = 0;          ///< runtime events with a correlation id (every CUDA / HIP call, not only launches)
  bool shapes_recorded = false;       ///< some op carries `Input Dims`
  std::int64_t origin_us = 0;         ///< the trace's earliest step or GPU event `ts`, whole µs
  std::int32_t device = 0;            ///< the GPU most of the kernels ran on (this rank's)
  std::vector<std::string> names;     ///< kernel and op names, each once
  std::vector<KinetoStep> steps;      ///< by start
  std::vector<KinetoKernel> kernels;  ///< by start
  std::vector<KinetoCpuOp> ops;
  std::vector<KinetoCollective> collectives;
  std::vector<KinetoBlockingCall> blocking_calls;  ///< by thread, then start
  std::map<std::string, std::int64_t> unknown_kernels;  ///< name → count, for the report
  /// What the reader had to assume (no ProfilerStep annotations, GPU events without a launch,
  /// kernels on other devices), said where the figures are printed.
  std::vector<std::string> notes;
};

/// Reads one trace file (plain JSON, or gzip when its first bytes are gzip's magic).
/// @throws InputError, one line naming the file, the JSON path and what was expected: a
///         missing or unreadable file (read_input_file's rules), a corrupt or truncated gzip
///         stream, text that is not JSON (with its byte offset), JSON nested deeper than 64,
///         more than 16 GiB of JSON, a top level that is not an object with a `traceEvents`
///         array, an event that is not an object, a kernel / memcpy / memset / runtime / step
///         event without a numeric `ts` or with a `dur` that is missing, negative or not a
///         number, `args` that is not an object, a non-integer `correlation`, `device` or
///         `stream`, a `ProfilerStep#` name without an integer, one step number twice,
///         `deviceProperties` that is not an array of objects, `distributedInfo` that is not an
///         object, or a rank / world size that is not an integer in range.
KinetoTrace read_kineto_trace(const std::string& path);

/// Checks that `traces` are the ranks of one job: no trace twice (same SHA-256), no rank twice,
/// one world size. @throws InputError naming the offending trace.
void require_one_job(const std::vector<KinetoTrace>& traces);

/// Same, from the bytes of a trace file (plain or gzip) held in memory; `source` names it in
/// messages. @throws InputError as read_kineto_trace.
KinetoTrace parse_kineto_trace(std::string_view bytes, const std::string& source);

/// Reads several traces: files, or folders whose `*.json` / `*.json.gz` files are read (sorted
/// by name). Traces are ordered by rank (file order when ranks are absent).
/// @throws InputError as read_kineto_trace; also for no paths or a folder without trace files.
std::vector<KinetoTrace> read_kineto_traces(const std::vector<std::string>& paths);

/// True when `path` looks like a profiler trace rather than a MEASURED.json: a folder, gzip's
/// magic bytes, or `"traceEvents"` / `"schemaVersion"` in the first 64 KiB. Never throws (an
/// unreadable path is left to the reader that will name it).
bool looks_like_kineto_trace(const std::string& path);

/// Per-step figures of one trace, on its own device.
struct KinetoStepSummary {
  std::int64_t number = 0;
  double wall_s = 0;      ///< the ProfilerStep annotation's length
  double gpu_span_s = 0;  ///< first GPU event start to last end, of the step's events
  std::array<double, kKernelClasses> class_s{};  ///< Σ event durations per KernelClass
  std::array<std::int64_t, kKernelClasses> class_count{};
};

/// The steps of `t` (by start), each with its kernels summed by class.
std::vector<KinetoStepSummary> summarize_steps(const KinetoTrace& t);

/// The traces as stepsim's measured timeline (command "torch.profiler"): one iteration per step
/// number present in every trace whose GPU events it has on every trace (the others are left
/// out, said in MeasuredTimeline::notes), one rank per trace, the rank's step length the
/// ProfilerStep annotation's (the iteration time as the training loop saw it: the GPU events of
/// one step may run on past the next step's start), one task per GPU event of that step on
/// the trace's device, named by its KernelClass ("memcpy (host)" for copies to or from the
/// host), with its phase, stream "comm" (NCCL) or
/// "compute", and times from the step's first GPU event. Phase rules: NCCL → communication;
/// memcpy / memset → overhead; a kernel launched inside `Optimizer.step` / `Optimizer.zero_grad`
/// (or PyTorch's `optimizer` annotations) → optimizer; launched from the autograd engine
/// (`autograd::engine::evaluate_function`, a `*Backward*` op, or another thread than the step's)
/// → backward; the rest → forward.
/// @throws InputError naming the traces when two have one rank, their world sizes differ (they
///         are not the ranks of one job), no step number is common to all of them, or a common
///         step has no GPU event on some trace.
MeasuredTimeline measured_timeline_from_traces(const std::vector<KinetoTrace>& traces);

/// The name of the trace's own device (its `deviceProperties` entry); "" when not given.
std::string kineto_device_name(const KinetoTrace& t);

/// The NCCL calls of one (op, algorithm, protocol) inside the steps, on the trace's device.
struct KinetoCollectiveSummary {
  std::string op, algorithm, protocol;
  std::int64_t calls = 0;
  double time_s = 0;              ///< summed kernel time over every step
  std::int64_t sized_calls = 0;   ///< calls whose In msg size and dtype are known
  double min_bytes = 0, max_bytes = 0;  ///< In msg bytes over the sized calls
};

/// The trace's NCCL calls grouped by op, algorithm and protocol (in that order).
std::vector<KinetoCollectiveSummary> summarize_collectives(const KinetoTrace& t);

/// The traces' NCCL calls with known sizes as nccl-tests tables, for the nccl-tests fit
/// (`stepsim calibrate trace`, issue 18 item 3): one log per trace (format "torch.profiler",
/// its SHA-256), one run per (op, group size) with the trace's GPU and NCCL version, one row per
/// call inside a step on the trace's device: S as nccl-tests counts it (all_reduce, broadcast,
/// reduce: In msg nelems × dtype size; all_gather: Out msg nelems × size, the gathered buffer;
/// reduce_scatter: In msg nelems × size, the buffer before the scatter) and the kernel's
/// duration as the time. Calls without sizes, of a dtype of unknown size, or of ops nccl-tests
/// has no table for (SendRecv) are counted in `skipped` by reason. A kernel's duration includes
/// its wait for the slowest rank to arrive, so a fit to it prices that wait too. A trace without
/// sized calls gives a log without runs.
std::vector<NcclTestsLog> collective_logs_from_traces(const std::vector<KinetoTrace>& traces,
                                                      std::map<std::string, std::int64_t>* skipped = nullptr);

/// The traces' GEMMs whose shapes are recorded (record_shapes=True), as GEMM measurements for
/// fit_gemm (`stepsim calibrate trace`, issue 18 item 3): every GEMM-class kernel launched by an
/// `aten::mm` ([m,k]·[k,n]), `aten::addmm` (bias, [m,k], [k,n]), `aten::bmm` ([b,m,k]·[b,k,n]) or
/// `aten::baddbmm` inside a step on the trace's device; the kernels of one op summed (a split-K
/// GEMM launches a reduction too), then per (shape, arithmetic) the median over calls, traces and
/// ranks. Arithmetic from the op's `Input type`: BFloat16 / Half → BF16/FP16 tensor cores; float
/// → TF32 when the kernel's name says so ("tf32", CUTLASS's "s1688" / "s16816" tensor-op
/// SGEMM), else FP32. Shapes whose median is under kMinTraceGemmS are left out. Only the
/// arithmetic with the most shapes is kept (fit_gemm fits one);
/// `notes` says what was left out. `points` is empty when no GEMM has shapes.
/// GEMMs shorter than this (median) are left out of gemm_points_from_traces [s]: traces of
/// PyTorch before 2.x time kernels to the whole µs (±5 % at 20 µs), and a short GEMM's time is
/// mostly its launch and prologue, which the curve's overhead_s alone cannot separate from its
/// efficiency.
inline constexpr double kMinTraceGemmS = 20e-6;
GemmMeasurements gemm_points_from_traces(const std::vector<KinetoTrace>& traces, std::vector<std::string>* notes = nullptr);

/// A memory-bound kernel of a trace with the bytes it must move (memory_points_from_traces).
struct MemoryPoint {
  std::string op;          ///< the CPU op that launched it ("aten::add")
  double bytes = 0;        ///< HBM bytes it reads and writes at least
  double measured_s = 0;   ///< the kernel's duration
};

/// Memory-bound kernels smaller or shorter than these are left out of memory_points_from_traces:
/// below a few MiB a kernel's time is its launch and tail, and L2 (40-50 MB on A100 / H100)
/// holds part of its operands, so it does not stream from HBM [bytes, s].
inline constexpr double kMinTraceStreamBytes = 8.0 * 1024 * 1024;
inline constexpr double kMinTraceStreamS = 20e-6;

/// The traces' memory-bound kernels whose traffic their op's recorded shapes give
/// (record_shapes=True), as points for fit_memory_bound (`stepsim calibrate trace`, issue 18
/// item 3): an elementwise-class kernel inside a step on the trace's device, the only kernel of
/// its CPU op, that op one whose traffic follows from its `Input Dims` and `Input type`
/// (element sizes: float 4, double 8, Half / BFloat16 2, long 8, int 4, bool / char 1):
///   - aten::fill_, aten::zero_: writes its first input;
///   - aten::copy_: reads its second input and writes its first;
///   - unary pointwise (aten::relu, gelu, silu, sigmoid, tanh, neg, exp, and their in-place
///     forms): reads and writes its first input;
///   - binary pointwise (aten::add, sub, mul, div and their in-place forms, threshold_backward,
///     gelu_backward, silu_backward): reads both inputs and writes the first's size, when both
///     are tensors of one size; with a scalar or a 0-d second input, reads and writes the first;
///     broadcasts (inputs of different sizes) are left out, their traffic depends on the strides;
/// with at least kMinTraceStreamBytes and kMinTraceStreamS. `notes` counts what was left out.
std::vector<MemoryPoint> memory_points_from_traces(const std::vector<KinetoTrace>& traces,
                                                   std::vector<std::string>* notes = nullptr);

/// The memory-bound fit of a trace (fit_memory_bound).
struct MemoryFitResult {
  hardware::MemoryCalibration memory;  ///< the efficiency, its points and residuals, the source
  double profile_efficiency = 0;       ///< the profile's memory.hbm_efficiency it replaces
  double nominal_median_residual = 0;  ///< median |t_profile − t| / t over the points
  double cross_median_residual = 0;    ///< fitted on the even points, median over the odd ones
  std::map<std::string, std::size_t> ops;  ///< points per op
};

/// Fits memory.hbm_efficiency e to the points: the e (on a 0.001 grid) whose median relative
/// residual |bytes / (bw × e) − t| / t is least (a least-median fit: robust to the kernels a
/// cache or a strided layout speeds up or slows down), its residuals, and the holdout rule: e
/// chosen on the even points, judged on the odd ones. `source` names the traces (file list, first SHA-256, device).
/// @throws InputError when there are fewer than 5 points, the efficiency comes out above 1 (the
///         kernels beat the HBM: a cache, or bytes counted wrong), or the median residual is
///         above 25 % (the points are not one streaming rate).
MemoryFitResult fit_memory_bound(const std::vector<MemoryPoint>& points, const hardware::HardwareProfile& hw,
                                 const hardware::CalibrationSource& source);

/// The CPU time between the GPU work one step of one trace launches (host_steps_from_traces).
struct HostStep {
  std::size_t trace = 0;         ///< index into the traces
  std::int64_t number = 0;       ///< the ProfilerStep number
  std::int64_t launches = 0;     ///< launch calls of GPU work inside the step (every device, each call once)
  std::int64_t intervals = 0;    ///< intervals between one thread's consecutive launches kept
  std::int64_t blocked = 0;      ///< left out: a blocking call (blocking_call) inside
  std::int64_t handoffs = 0;     ///< left out: another thread launched in between (the thread waited)
  std::int64_t shared_launch_events = 0;  ///< GPU events beyond one per launch call (a cudaGraphLaunch's kernels)
  double host_s = 0;             ///< the kept intervals' CPU time, summed
  double median_interval_s = 0;  ///< their median
  double gpu_waited_s = 0;       ///< time the trace's GPU sat idle until the CPU launched its next event
  double step_s = 0;             ///< the ProfilerStep annotation's span
};

/// The host side of each step of the traces (issue 18 item 3, "host time per op"): per thread,
/// the intervals between consecutive launch calls of GPU work (kernel, memcpy, memset; the
/// kernels of one cudaGraphLaunch count once) inside the step. An interval is the CPU's work
/// between two launches (Python, the dispatcher, autograd, the launch call) unless the CPU was
/// waiting for the GPU: intervals holding a blocking call on that thread, or during which
/// another thread launched (a hand-off: the main thread waits in backward() while the autograd
/// thread launches), are left out, and from each kept interval the launch call's time beyond the
/// trace's median launch call is taken out (a call blocked on a full launch queue waits for the
/// GPU). The GPU's wait for the host: each gap on the trace's device before an event launched
/// after the device went idle. Steps without a launch are left out.
std::vector<HostStep> host_steps_from_traces(const std::vector<KinetoTrace>& traces);

/// The host time fit of a trace (fit_host_time).
struct HostFitResult {
  hardware::HostCalibration host;     ///< host_op_s = Σ kept CPU time / Σ intervals over the steps
  double median_interval_s = 0;       ///< median over the steps of their median interval
  double cross_median_residual = -1;  ///< fitted on the even steps, median over the odd ones; -1 with one step
  double gpu_waited_fraction = 0;     ///< Σ GPU waits for the host / Σ step spans
  std::int64_t blocked = 0, handoffs = 0;  ///< intervals left out, over the steps
  std::int64_t shared_launch_events = 0;   ///< over the steps (HostStep)
  std::vector<HostStep> steps;
};

/// Fewest kept launch intervals a host time is measured on.
inline constexpr std::int64_t kMinHostIntervals = 100;

/// The CPU time per launched op of the steps: their kept CPU time over their kept intervals (a
/// mean, as a layer's launches × framework.host_op_s sums it), the per-step residual
/// |intervals × h − CPU time| / CPU time, and the holdout rule (h from the even steps, judged on
/// the odd ones).
/// @throws InputError (naming `source.file`) with fewer than kMinHostIntervals intervals (no
///         launch events: a trace recorded without CPU activity or without correlation ids), a
///         mean of 0 or above 10 ms (no op's host time), or a per-step median residual above
///         25 % (the steps do not share one host rate).
HostFitResult fit_host_time(const std::vector<HostStep>& steps, const hardware::CalibrationSource& source);

/// What `stepsim calibrate trace` fits from the traces of one job.
struct TraceCalibration {
  /// The nccl-tests fit of the sized NCCL calls (collective_logs_from_traces), with the GEMM
  /// curve in its overlay when one was fitted, and warnings: what was left out and why, that a
  /// trace's NCCL time holds the wait for the slowest rank, what is not fitted from traces.
  CalibrationResult collectives;
  std::optional<GemmFitResult> gemm;  ///< the GEMM fit (gemm_points_from_traces), when accepted
  std::optional<MemoryFitResult> memory;  ///< the memory-bound fit (memory_points_from_traces), when accepted
  std::optional<HostFitResult> host;      ///< the host time fit (host_steps_from_traces), when accepted
};

/// Fits what the traces show (issue 18 item 3): their sized NCCL calls by `calibrate`, their
/// GEMMs by fit_gemm with the small tiles among the candidates (kGemmFitTilesWithSmall), their
/// memory-bound kernels by fit_memory_bound and their launches by fit_host_time (a fit that
/// refuses is left out with a warning saying why). A GEMM
/// fit that pins its efficiency at 1, or that fit_gemm refuses, is left out with a warning.
/// @throws InputError when the traces are not the ranks of one job (require_one_job), or when
///         nothing can be fitted: no sized NCCL call, no GEMM curve, no memory-bound efficiency
///         and no host time (the message says why each is missing).
TraceCalibration calibrate_traces(const std::vector<KinetoTrace>& traces, const hardware::HardwareProfile& hw,
                                  const CalibrateOptions& options, const std::string& overlay_name);

/// Text report of traces: per trace its device, rank, steps, GPU events by class (count and
/// time per step, median over steps), NCCL calls by op / algorithm / protocol with their
/// sizes, unknown kernel names (the most frequent 10) and notes.
std::string kineto_summary_text(const std::vector<KinetoTrace>& traces);

/// The same as JSON text (schema "stepsim.kineto-summary/1").
std::string kineto_summary_json(const std::vector<KinetoTrace>& traces);

}  // namespace stepsim::validate
