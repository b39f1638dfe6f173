// SPDX-License-Identifier: Apache-2.0
// Compute tasks every strategy shares: per-layer forward, per-tensor backward segments, and
// the optimizer step.
#pragma once

#include "hardware/collective_model.hpp"
#include "hardware/gemm_model.hpp"
#include "hardware/task_cost.hpp"
#include "models/model_spec.hpp"
#include "models/strategy/strategy.hpp"
#include "sim/task.hpp"

#include <cstddef>
#include <string>
#include <vector>

namespace stepsim::models {

struct Scenario;

/// Stream indexes on every rank (CUDA: the default stream and the process group's NCCL stream,
/// semantics.md §A.5 rule 20).
inline constexpr std::uint32_t kComputeStream = 0;
inline constexpr std::uint32_t kCommStream = 1;
/// A second communication stream (HSDP's replica AllReduce runs on its own process group).
inline constexpr std::uint32_t kReplicaStream = 2;
/// The TP group's stream under parallelism.tp_comm_overlap (its collectives beside compute).
inline constexpr std::uint32_t kTpStream = 3;
/// Pipeline parallelism's receives (models/strategy/pipeline.cpp): activations from the
/// previous stage, gradients from the next (one NCCL communicator per peer pair, each with its
/// own stream, as ProcessGroupNCCL creates them for point-to-point).
inline constexpr std::uint32_t kPpRecvPrevStream = 4;
inline constexpr std::uint32_t kPpRecvNextStream = 5;
/// Context parallelism's ring transfers (KV and its gradient between CP neighbours), beside
/// the attention they overlap.
inline constexpr std::uint32_t kCpStream = 6;
/// The rank's CPU thread under optimizer offload (DeepSpeedCPUAdam, NVMe swaps): host work in
/// program order, beside the GPU's streams.
inline constexpr std::uint32_t kHostStream = 7;
/// Host-to-device copies of FSDP's CPU-offloaded shards (FSDP2 issues them on its all-gather
/// copy-in stream, ahead of the AllGather that waits for them).
inline constexpr std::uint32_t kHostCopyStream = 8;

/// The names of the streams above, by index (traces, the HTML report): "compute",
/// "communication", "replica communication", "TP communication", "PP receive from previous
/// stage", "PP receive from next stage", "CP communication", "host CPU", "host copies".
const std::vector<std::string>& stream_names();
/// stream_names()[stream], or "stream N" past them.
std::string stream_name(std::uint32_t stream);

/// sim::Task memory counters: activations saved for backward, and framework buffers
/// (unsharded parameters and gradients, buckets).
inline constexpr int kActivationCounter = 0;
inline constexpr int kBufferCounter = 1;

/// Activation bytes layer `layer` leaves for backward in one micro-batch on one GPU, under the
/// scenario's recompute policy (kept_activation_bytes_per_token × tokens per micro-batch).
double layer_activation_bytes(const Scenario& s, std::size_t layer);

/// Forward of layer `layer` for one micro-batch, on the compute stream; allocates the layer's
/// activations (kActivationCounter) when it starts. A fused sequence of
/// GEMMs (FLOPs at the profile's GEMM efficiency, or their shapes under a GEMM curve) and
/// streaming kernels (bytes at HBM bandwidth), or the layer's measured fwd_s. With eager
/// attention the bytes include 9 per attention score (softmax read/write, dropout read/write
/// and mask) and backward 11 (+ 9 recomputed): micro_batch · heads · seq² scores.
/// @param prefix  prepended to the name ("mb1." for the second micro-batch, "" when one)
sim::Task forward_task(const Scenario& s, std::size_t layer, const std::string& prefix);

/// One backward segment: the work that produces one parameter's gradient (or the whole
/// layer's backward when it has no parameters).
struct BackwardSegment {
  sim::Task task;
  std::size_t param = 0;   ///< index into the layer's params (valid when has_param)
  bool has_param = false;
  bool produces_grad = false;  ///< has_param and the tensor is trainable
};

/// Backward of `layer` split into one segment per parameter tensor in gradient-ready order
/// (each frees its share of the layer's activations when it ends),
/// so a gradient hook fires when its tensor's segment ends (semantics.md §A.4 rule 15). The
/// layer's backward work (dgrad + wgrad = 2 × forward GEMM FLOPs, minus the wgrad of frozen
/// tensors; 2 × attention and streaming) is divided in proportion to tensor sizes.
/// @param grad_copy_bytes_per_grad_byte  extra HBM bytes per gradient byte (DDP's copy into
///        the bucket, read + write = 2; 0 when nothing runs)
/// @param micro_batch  the micro-batch this backward belongs to, when the strategy prices the
///        gradient-accumulation add (grad_accumulation_bytes, per gradient element); -1: not priced
std::vector<BackwardSegment> backward_segments(const Scenario& s, std::size_t layer,
                                               const std::string& prefix,
                                               double grad_copy_bytes_per_grad_byte,
                                               std::int64_t micro_batch = -1);

/// The backward of `layer` split as zero-bubble schedules run it (models/pipeline.hpp, B12):
/// `input`, the input-gradient pass I (dgrad GEMMs = 1 × forward GEMM FLOPs, any recomputation,
/// attention backward and every streaming kernel: what the previous stage waits for), and
/// `weight`, backward_segments' segments with only the weight-gradient GEMMs left in each
/// (wgrad = forward GEMM FLOPs of the trainable tensors, in proportion to tensor sizes) and the
/// gradient copy and accumulation bytes, each freeing its share of the layer's activations (W
/// reads the saved inputs, so they live until it ends). GEMM time is shared by FLOPs (work_share).
/// A layer without parameters has all of its backward in `input` and no `weight`.
struct SplitBackward {
  sim::Task input;
  std::vector<BackwardSegment> weight;
};
SplitBackward backward_split(const Scenario& s, std::size_t layer, const std::string& prefix,
                             double grad_copy_bytes_per_grad_byte, std::int64_t micro_batch = -1);

/// HBM bytes per gradient element of a trainable tensor stored in `dtype` that gradient
/// accumulation moves in micro-batch `micro_batch` (0-based) of a step of s.batch.grad_accum:
///  * into .grad (the default): nothing in the first micro-batch; from the second on
///    AccumulateGrad adds in place: read both, write one = 3 × dtype bytes;
///  * with precision.fp32_grad_accum (and a dtype narrower than fp32, grad_accum > 1): every
///    micro-batch adds the fresh gradient into the fp32 buffer: the first reads it and writes
///    the buffer (dtype + 4 bytes), later ones also read the buffer (dtype + 8 bytes).
/// @pre 0 ≤ micro_batch < s.batch.grad_accum
double grad_accumulation_bytes(const Scenario& s, DType dtype, std::int64_t micro_batch);

/// Adam step over `params` parameters held on this rank, as one HBM-bound kernel: reads fp32
/// master weights, m, v and the gradient, writes master, m, v and the low-precision copy:
/// (4+4+4+2) + (4+4+4+2) = 28 bytes per parameter (bf16 params and grads).
sim::Task optimizer_task(double params, double grad_bytes_per_param, double param_bytes_per_param);

/// torch.optim.SGD with momentum and weight decay (as PyTorch's DDP benchmark and the ImageNet
/// examples run it) over `params` parameters, as HBM-bound elementwise passes in fp32:
/// d_p = grad + wd·p (read 2, write 1), buf = momentum·buf + d_p (mul_ then add_: 2 + 3),
/// p -= lr·buf (read 2, write 1): 11 passes = 44 bytes per fp32 parameter. With low-precision
/// parameters the passes run on an fp32 master copy: the gradient is read at its own width and
/// the low-precision copy written: 40 + grad + param bytes.
sim::Task sgd_task(double params, double grad_bytes_per_param, double param_bytes_per_param);

/// The optimizer step of a scenario on one rank: Adam over the trainable parameters this rank
/// owns (all of them for DDP, 1/N for the sharded strategies), or nothing (optimizer "none").
/// Returns false when there is no step to add.
bool optimizer_step(const Scenario& s, double shard_ranks, sim::Task& out);

/// A collective task on `stream` over communicator `group` of `bytes` (nccl-tests size), with
/// its own rendezvous id (taken from `next_rendezvous`, which is advanced).
sim::Task collective_task(std::string name, hardware::CollectiveOp op, double bytes, std::uint32_t group,
                          std::uint32_t stream, sim::RendezvousId& next_rendezvous);

/// An all-to-all of `bytes` per rank over `group` on `stream` (hardware::OpCode::AllToAll): a
/// rendezvous of the group's ranks, as a collective.
sim::Task all_to_all_task(std::string name, double bytes, std::uint32_t group, std::uint32_t stream,
                          sim::RendezvousId& next_rendezvous);

/// A point-to-point message of `bytes` received on `stream` over the 2-rank communicator
/// `group` (hardware::OpCode::SendRecv): one task per message, on the receiver, with no
/// rendezvous; the lowering makes it wait for the sender's compute.
sim::Task p2p_task(std::string name, double bytes, std::uint32_t group, std::uint32_t stream);

/// The model-parallel communicators of a rank inside its layers, appended to a step's groups
/// by add_mesh_groups; kNoGroup for a dimension of degree 1.
inline constexpr std::uint32_t kNoGroup = 0xffffffffu;
struct MeshGroups {
  /// The tensor-parallel group: parallelism.tp ranks inside one node, TP innermost as
  /// Megatron-LM places it.
  std::uint32_t tp = kNoGroup;
  /// The context-parallel group (parallelism.cp ranks, every tp-th: Megatron-LM's order
  /// tp-cp-dp-pp), for its AllGathers; and the 2-rank link between ring neighbours in it, for
  /// the ring's point-to-point messages.
  std::uint32_t cp = kNoGroup;
  std::uint32_t cp_pair = kNoGroup;
  /// The expert-parallel group (parallelism.ep consecutive DP ranks: the all-to-alls) and the
  /// expert-data-parallel group the strategy reduces and gathers routed experts over
  /// (Scenario::expert_reduce_ranks: the dp × cp / ep ranks holding the same experts, every
  /// ep-th DP rank; under hsdp those of one shard group); edp is kNoGroup when it has one rank
  /// (ep = dp × cp, or the shard group, under hsdp: nothing to reduce or gather over it).
  /// models/expert_parallel.hpp.
  std::uint32_t ep = kNoGroup;
  std::uint32_t edp = kNoGroup;
};

/// Appends the TP, CP and EP communicators of `s` to `out.groups` (setting out.tp_group,
/// out.cp_group, out.ep_group, out.edp_group); their indexes.
MeshGroups add_mesh_groups(LoweredStep& out, const Scenario& s);

/// Adds the model-parallel communication of one micro-batch of `layer` inside the layer: its
/// TP collectives (models/tensor_parallel.hpp), then its CP transfers
/// (models/context_parallel.hpp), then, in forward, its EP all-to-alls on the compute stream
/// (add_expert_transfers; backward's go before the layer's segments). Call it right after the layer's forward task (or backward
/// segments) is added. Without parallelism.tp_comm_overlap the TP collectives follow on the
/// compute stream: Megatron-LM's forward reductions are synchronous, and the layer before needs
/// the backward's input gradient (its overlap with the weight-gradient GEMM is not modelled).
/// With it they run on kTpStream from the layer's start, beside its compute, and the compute
/// stream waits for them before the next layer (a zero-time wait task): the micro-pipelined
/// collectives hide behind the layer's GEMMs, up to the layer's compute time. CP transfers that
/// the ring overlaps run the same way on kCpStream; the AllGathers of KV run on the compute
/// stream. The tasks go to graph rank `rank` (a pipeline stage; 0 without pipeline parallelism).
void add_layer_collectives(sim::TaskGraph& g, const Scenario& s, std::size_t layer, const std::string& prefix,
                           bool backward, const MeshGroups& mesh, sim::RendezvousId& next_rendezvous,
                           std::uint32_t rank = 0);

/// Adds the EP all-to-alls of one micro-batch of `layer` (models/expert_parallel.hpp) on the
/// compute stream of graph rank `rank`: add_layer_collectives adds the forward's after the
/// layer's forward task; every strategy calls this with `backward` true right before the
/// layer's backward segments, since the combine's gradient (and, under full recomputation, the
/// re-run forward's all-to-alls) come before the experts' gradients, and the gradients'
/// reduction must follow them. Nothing without expert parallelism.
void add_expert_transfers(sim::TaskGraph& g, const Scenario& s, std::size_t layer, const std::string& prefix,
                          bool backward, const MeshGroups& mesh, sim::RendezvousId& next_rendezvous,
                          std::uint32_t rank = 0);

/// A zero-duration task on the compute stream: a CUDA event wait (stream waits on an event
/// recorded elsewhere); give it dependencies on what it waits for.
sim::Task wait_task(std::string name, Phase phase);

/// An offload task (sim::TaskKind::Host) of code `op` (hardware::OpCode::HostToDevice ..
/// NvmeWrite) over `bytes` on `stream`, in report category `phase`.
sim::Task host_task(std::string name, hardware::OpCode op, double bytes, std::uint32_t stream, Phase phase);

/// The name prefix of micro-batch `mb` of `micro_batches` in every strategy's tasks: "mb3."
/// when there are several, "" for one.
std::string micro_batch_prefix(std::int64_t mb, std::int64_t micro_batches);

/// Gradient-ready order of the trainable tensors of the model: layers in reverse, tensors in
/// each layer's ready order. Pairs (layer, param index).
std::vector<std::pair<std::size_t, std::size_t>> trainable_ready_order(const ModelSpec& m);

/// GEMMs of one micro-batch of layer `layer` with their shapes (hardware/gemm_model.hpp), from
/// LayerSpec::gemms at tokens = micro_batch_size · seq_len:
///  * forward: Linear (tokens, n, k); attention Scores (s, s, d) and Values (s, d, s), each
///    batched over micro_batch_size · heads;
///  * backward: per Linear dgrad (tokens, k, n) and, unless its weight is frozen, wgrad
///    (n, k, tokens); per attention GEMM its two input gradients (Scores: dQ, dK = (s, d, s);
///    Values: dP = (s, s, d), dV = (s, d, s)); first, the forward GEMMs that recomputation runs
///    again (recompute_work: all of them under full, the 2nd, 4th … Linear under selective_op,
///    the attention ones under megatron_selective).
/// Empty when the layer has no shapes (priced by FLOPs).
hardware::GemmList layer_gemms(const Scenario& s, std::size_t layer, bool backward);

/// The work table StepCostModel::set_kernel_work() takes: entry 2·l is layer l's forward, 2·l+1
/// its backward (layer_gemms, and the launch counts: forward = LayerSpec::fwd_streaming_kernels
/// (+ 3 for eager attention: softmax, dropout, context copy) and fwd_host_only_ops; backward =
/// 2 × the forward's kernels plus those recomputation runs again (the streaming ones under full
/// and selective_op, eager attention's under full and megatron_selective) and (1 + r) × its
/// host-only ops, r = 1 when the streaming kernels re-run);
/// forward_task() and backward_segments() point their tasks at them.
std::vector<hardware::KernelWork> kernel_work_table(const Scenario& s);

/// Model FLOPs per GPU per optimizer step (the 6·Ψ·tokens convention plus attention, for MFU):
/// 3 × forward FLOPs of every layer.
double model_flops_per_gpu_step(const Scenario& s);

}  // namespace stepsim::models
