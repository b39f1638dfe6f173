// SPDX-License-Identifier: Apache-2.0
// Shared compute tasks (forward, backward segments, optimizer).
#include "models/strategy/compute_tasks.hpp"

#include "hardware/task_cost.hpp"
#include "models/float8.hpp"
#include "models/model_spec.hpp"
#include "models/recompute.hpp"
#include "models/scenario.hpp"
#include "models/context_parallel.hpp"
#include "models/expert_parallel.hpp"
#include "models/tensor_parallel.hpp"
#include "models/strategy/strategy.hpp"
#include "sim/support/error.hpp"

#include <algorithm>

namespace stepsim::models {

namespace {

// Keys per query the attention kernel computes: a flash kernel skips what a sliding window
// masks (LayerSpec::attention_keys); eager attention and SDPA's masked backends compute the
// whole s×s.
double executed_attention_keys(const Scenario& s, const LayerSpec& l) {
  const double seq = static_cast<double>(s.batch.seq_len);
  return s.activations.flash_attention ? l.attention_keys(seq) : seq;
}

double forward_flops(const Scenario& s, const LayerSpec& l) {
  const double tokens = static_cast<double>(s.tokens_per_micro_batch());
  return tokens * (l.fwd_gemm_flops_per_token + l.fwd_attn_flops_per_token_per_seq * executed_attention_keys(s, l));
}

// Eager (unfused) attention's memory-bound kernels on the a·s² scores of one micro-batch, as
// Megatron-DeepSpeed runs them without flash attention (baddbmm, fused scale-mask-softmax,
// dropout, bmm). Bytes per score element (2-byte activations; the two GEMMs' own reads and
// writes of the scores are priced with the GEMMs): forward softmax read + write (4), dropout
// read, write and a 1-byte mask (5) = 9; backward dropout (grad read, mask read, write: 5) and
// softmax (probabilities and grad read, write: 6) = 11. Korthikanti et al. 2022 §4.1 list the
// same tensors (the 5·a·s/h activation term: softmax output, dropout mask and output).
constexpr double kEagerScoreBytesFwd = 9, kEagerScoreBytesBwd = 11;
constexpr double kEagerKernelsFwd = 3;  // softmax, dropout, the context's permute-contiguous copy

double eager_score_elements(const Scenario& s, const LayerSpec& l) {
  if (s.activations.flash_attention || l.attention_heads == 0) return 0;
  const double seq = static_cast<double>(s.batch.seq_len);
  return static_cast<double>(s.batch.micro_batch_size) * static_cast<double>(l.attention_heads) * seq * seq;
}

// The loss's fp32 cast of the logits runs (eager PyTorch, framework.cross_entropy "upcast").
bool logits_upcast(const Scenario& s, const LayerSpec& l) {
  return s.framework.eager() && s.framework.upcast_logits && l.logits_upcast_bytes_per_token > 0;
}

// Forward streaming traffic per token: fused, plus what eager PyTorch's op-by-op composites add.
double streaming_bytes_per_token(const Scenario& s, const LayerSpec& l) {
  if (!s.framework.eager()) return l.fwd_streaming_bytes_per_token;
  return l.fwd_streaming_bytes_per_token + l.eager_extra_streaming_bytes_per_token +
         (logits_upcast(s, l) ? l.logits_upcast_bytes_per_token : 0.0);
}

// Forward streaming kernels: fused, plus eager PyTorch's extra launches.
double streaming_kernels(const Scenario& s, const LayerSpec& l) {
  if (!s.framework.eager()) return l.fwd_streaming_kernels;
  return l.fwd_streaming_kernels + l.eager_extra_streaming_kernels + (logits_upcast(s, l) ? 1.0 : 0.0);
}

std::string short_name(const std::string& layer, const std::string& param) {
  // "model.layers.3.mlp.down_proj.weight" -> "mlp.down_proj.weight"
  const std::string key = layer + ".";
  const auto pos = param.find(key);
  return pos == std::string::npos ? param : param.substr(pos + key.size());
}

}  // namespace

double layer_activation_bytes(const Scenario& s, std::size_t layer) {
  return kept_activation_bytes_per_token(s, layer) * static_cast<double>(s.tokens_per_micro_batch());
}

sim::Task forward_task(const Scenario& s, std::size_t layer, const std::string& prefix) {
  const LayerSpec& l = s.model.layers[layer];
  sim::Task t;
  t.kind = sim::TaskKind::Compute;
  t.name = prefix + "fwd." + l.name;
  t.stream = kComputeStream;
  t.layer = static_cast<std::int32_t>(layer);
  t.phase = static_cast<std::uint32_t>(Phase::Forward);
  if (l.fwd_s) {
    t.op = static_cast<std::uint32_t>(hardware::OpCode::Fixed);
    t.fixed_s = *l.fwd_s;
  } else {
    t.op = static_cast<std::uint32_t>(hardware::OpCode::Layer);
    t.work = static_cast<std::uint32_t>(2 * layer);
    t.flops = forward_flops(s, l);
    t.bytes = static_cast<double>(s.tokens_per_micro_batch()) * streaming_bytes_per_token(s, l) +
              kEagerScoreBytesFwd * eager_score_elements(s, l) + float8_casts(s, layer).fwd_bytes;
  }
  t.alloc_bytes[kActivationCounter] = layer_activation_bytes(s, layer);
  return t;
}

double grad_accumulation_bytes(const Scenario& s, DType dtype, std::int64_t micro_batch) {
  const double b = dtype_bytes(dtype);
  if (s.precision.fp32_grad_accum && s.batch.grad_accum > 1 && b < 4) return b + (micro_batch > 0 ? 8.0 : 4.0);
  return micro_batch > 0 ? 3.0 * b : 0.0;
}

namespace {

// A layer's backward work for one micro-batch (backward_segments, backward_split).
struct BackwardWork {
  double numel_total = 0;
  double gemm = 0, attn = 0, stream = 0, fixed = 0;  // FLOPs, FLOPs, HBM bytes, s
  double wgrad = 0;                                  // the weight-gradient GEMMs' share of `gemm`, FLOPs
};

BackwardWork backward_work(const Scenario& s, std::size_t layer) {
  const LayerSpec& l = s.model.layers[layer];
  const double tokens = static_cast<double>(s.tokens_per_micro_batch());
  BackwardWork w;
  double numel_frozen = 0;
  for (const auto& p : l.params) {
    w.numel_total += static_cast<double>(p.numel);
    if (!p.trainable) numel_frozen += static_cast<double>(p.numel);
  }
  // dgrad always (the input gradient flows on); wgrad only for trainable tensors.
  const double frozen_share = w.numel_total > 0 ? numel_frozen / w.numel_total : 0.0;
  // Recomputation runs (part of) the forward again inside backward (models/recompute.hpp).
  const RecomputeWork re = recompute_work(s, layer);
  w.wgrad = tokens * l.fwd_gemm_flops_per_token * (1.0 - frozen_share);
  w.gemm = tokens * l.fwd_gemm_flops_per_token * (2.0 - frozen_share + re.linear_flops_share);
  w.attn = (2.0 + re.attention) * tokens * l.fwd_attn_flops_per_token_per_seq * executed_attention_keys(s, l);
  // Recomputation casts the re-run linears' inputs again (float8.hpp), as a share of the forward's.
  const Float8Casts casts = float8_casts(s, layer);
  w.stream = (2.0 + re.streaming) * tokens * streaming_bytes_per_token(s, l) +
             (kEagerScoreBytesBwd + re.attention * kEagerScoreBytesFwd) * eager_score_elements(s, l) +
             casts.bwd_bytes + re.linear_flops_share * casts.fwd_bytes;
  w.fixed = l.bwd_s ? *l.bwd_s + (re.policy == LayerRecompute::Full ? l.fwd_s.value_or(0.0) : 0.0) : 0.0;
  return w;
}

}  // namespace

std::vector<BackwardSegment> backward_segments(const Scenario& s, std::size_t layer,
                                               const std::string& prefix,
                                               double grad_copy_bytes_per_grad_byte,
                                               std::int64_t micro_batch) {
  const LayerSpec& l = s.model.layers[layer];
  const BackwardWork work = backward_work(s, layer);
  const double numel_total = work.numel_total;
  const double bwd_gemm = work.gemm, bwd_attn = work.attn, bwd_stream = work.stream, fixed_bwd = work.fixed;
  const double activations = layer_activation_bytes(s, layer);
  // Recomputation rebuilds the layer's activations (all of them, less the kept ones) when its
  // backward starts; they are freed as it ends (torch.utils.checkpoint: the recomputed
  // forward's saved tensors live until that segment's backward is done, semantics-parallel.md).
  const double recomputed = recomputed_activation_bytes_per_token(s, layer) * static_cast<double>(s.tokens_per_micro_batch());
  const auto hold_recomputed = [recomputed](std::vector<BackwardSegment>& segs) {
    if (recomputed <= 0 || segs.empty()) return;
    segs.front().task.alloc_bytes[kActivationCounter] += recomputed;
    segs.back().task.free_bytes[kActivationCounter] += recomputed;
  };

  auto base = [&](std::string name) {
    sim::Task t;
    t.kind = sim::TaskKind::Compute;
    t.name = std::move(name);
    t.stream = kComputeStream;
    t.layer = static_cast<std::int32_t>(layer);
    t.phase = static_cast<std::uint32_t>(Phase::Backward);
    t.op = static_cast<std::uint32_t>(l.bwd_s ? hardware::OpCode::Fixed : hardware::OpCode::Layer);
    if (!l.bwd_s) t.work = static_cast<std::uint32_t>(2 * layer + 1);
    return t;
  };
  std::vector<BackwardSegment> out;
  if (l.params.empty()) {
    BackwardSegment seg{base(prefix + "bwd." + l.name), 0, false, false};
    seg.task.flops = bwd_gemm + bwd_attn;
    seg.task.bytes = bwd_stream;
    seg.task.fixed_s = fixed_bwd;
    seg.task.free_bytes[kActivationCounter] = activations;
    out.push_back(std::move(seg));
    hold_recomputed(out);
    return out;
  }
  for (std::size_t idx : s.model.ready_order(layer)) {
    const ParamTensor& p = l.params[idx];
    const double share = static_cast<double>(p.numel) / numel_total;
    BackwardSegment seg{base(prefix + "bwd." + l.name + "." + short_name(l.name, p.name)), idx, true, p.trainable};
    seg.task.flops = share * (bwd_gemm + bwd_attn);
    seg.task.work_share = share;
    const double grad_bytes = p.trainable ? static_cast<double>(p.numel) * dtype_bytes(p.dtype) : 0.0;
    const double accumulate = p.trainable && micro_batch >= 0
                                  ? grad_accumulation_bytes(s, p.dtype, micro_batch) * static_cast<double>(p.numel)
                                  : 0.0;
    seg.task.bytes = share * bwd_stream + grad_copy_bytes_per_grad_byte * grad_bytes + accumulate;
    seg.task.fixed_s = share * fixed_bwd;
    seg.task.free_bytes[kActivationCounter] = share * activations;
    out.push_back(std::move(seg));
  }
  hold_recomputed(out);
  return out;
}

SplitBackward backward_split(const Scenario& s, std::size_t layer, const std::string& prefix,
                             double grad_copy_bytes_per_grad_byte, std::int64_t micro_batch) {
  std::vector<BackwardSegment> segs = backward_segments(s, layer, prefix, grad_copy_bytes_per_grad_byte, micro_batch);
  SplitBackward out;
  if (segs.size() == 1 && !segs.front().has_param) {
    out.input = std::move(segs.front().task);
    return out;
  }
  const BackwardWork work = backward_work(s, layer);
  const double flops = work.gemm + work.attn;
  const double w = flops > 0 ? work.wgrad / flops : 0.0;  // W's share of the backward's matmul work
  const LayerSpec& l = s.model.layers[layer];
  out.input = segs.front().task;
  out.input.name = prefix + "bwd_input." + l.name;
  out.input.flops = (1.0 - w) * flops;
  out.input.work_share = 1.0 - w;
  out.input.bytes = work.stream;
  out.input.fixed_s = (1.0 - w) * work.fixed;
  // The recomputed activations (hold_recomputed) are built as I starts; the saved ones are freed by W.
  for (int c = 0; c < sim::kMemoryCounters; ++c) {
    out.input.free_bytes[c] = 0;
    segs.front().task.alloc_bytes[c] = 0;
  }
  for (BackwardSegment& seg : segs) {
    const double share = seg.task.work_share;
    seg.task.name.replace(seg.task.name.find("bwd."), 4, "bwd_weight.");
    seg.task.flops = share * w * flops;
    seg.task.work_share = share * w;
    seg.task.bytes = std::max(0.0, seg.task.bytes - share * work.stream);  // the gradient copy and accumulation stay
    seg.task.fixed_s = share * w * work.fixed;
  }
  out.weight = std::move(segs);
  return out;
}

sim::Task optimizer_task(double params, double grad_bytes_per_param, double param_bytes_per_param) {
  sim::Task t;
  t.kind = sim::TaskKind::Compute;
  t.name = "optimizer.adam";
  t.stream = kComputeStream;
  t.phase = static_cast<std::uint32_t>(Phase::Optimizer);
  t.op = static_cast<std::uint32_t>(hardware::OpCode::Kernel);
  // fp32 master, m, v read and written (24 B) + gradient read + low-precision params written.
  t.bytes = params * (24.0 + grad_bytes_per_param + param_bytes_per_param);
  t.flops = params * 12.0;  // a dozen FLOPs per element; never the bound
  return t;
}

sim::Task sgd_task(double params, double grad_bytes_per_param, double param_bytes_per_param) {
  sim::Task t = optimizer_task(params, grad_bytes_per_param, param_bytes_per_param);
  t.name = "optimizer.sgd";
  t.bytes = params * (40.0 + grad_bytes_per_param + (param_bytes_per_param < 4 ? param_bytes_per_param : 0.0));
  t.flops = params * 6.0;
  return t;
}

sim::Task collective_task(std::string name, hardware::CollectiveOp op, double bytes, std::uint32_t group,
                          std::uint32_t stream, sim::RendezvousId& next_rendezvous) {
  sim::Task t;
  t.kind = sim::TaskKind::Transfer;
  t.name = std::move(name);
  t.stream = stream;
  t.rendezvous = next_rendezvous++;
  t.op = static_cast<std::uint32_t>(hardware::opcode_of(op));
  t.group = group;
  t.phase = static_cast<std::uint32_t>(Phase::Communication);
  t.bytes = bytes;
  return t;
}

sim::Task all_to_all_task(std::string name, double bytes, std::uint32_t group, std::uint32_t stream,
                          sim::RendezvousId& next_rendezvous) {
  sim::Task t = collective_task(std::move(name), hardware::CollectiveOp::AllGather, bytes, group, stream, next_rendezvous);
  t.op = static_cast<std::uint32_t>(hardware::OpCode::AllToAll);
  return t;
}

sim::Task p2p_task(std::string name, double bytes, std::uint32_t group, std::uint32_t stream) {
  sim::Task t;
  t.kind = sim::TaskKind::Transfer;
  t.name = std::move(name);
  t.stream = stream;
  t.op = static_cast<std::uint32_t>(hardware::OpCode::SendRecv);
  t.group = group;
  t.phase = static_cast<std::uint32_t>(Phase::Communication);
  t.bytes = bytes;
  return t;
}

MeshGroups add_mesh_groups(LoweredStep& out, const Scenario& s) {
  MeshGroups m;
  const RankLayout layout = s.layout();
  if (s.parallelism.tp > 1) {
    // Inside a node, or (tp a multiple of gpus_per_node) over whole nodes, each node's NICs
    // serving that one group.
    out.groups.push_back(group_shape(s, layout.whole(MeshDim::TP)));
    m.tp = static_cast<std::uint32_t>(out.groups.size() - 1);
    out.tp_group = static_cast<std::int32_t>(m.tp);
  }
  if (s.parallelism.cp > 1) {
    // cp ranks every tp-th (tp-cp-dp-pp): min(cp, gpn / tp) of them per node, the node's other
    // GPUs in the other CP groups, which share its NICs when a group spans nodes.
    const hardware::GroupShape shape = group_shape(s, layout.whole(MeshDim::CP));
    out.groups.push_back(shape);
    m.cp = static_cast<std::uint32_t>(out.groups.size() - 1);
    out.cp_group = static_cast<std::int32_t>(m.cp);
    // Ring neighbours: inside a node when the whole group is, else (at its node boundaries,
    // which set the ring's pace) across, every GPU of the node sending at once.
    out.groups.push_back(shape.ranks_per_node == shape.ranks ? hardware::GroupShape{2, 2, 0, 1}
                                                             : hardware::GroupShape{2, 1, 0, s.cluster.gpus_per_node});
    m.cp_pair = static_cast<std::uint32_t>(out.groups.size() - 1);
  }
  if (s.parallelism.ep > 1) {
    // ep consecutive DP ranks: min(ep, DP ranks per node) on a node, the node's other ranks in
    // the other EP groups, all-to-all at the same time (they share its NICs).
    const std::int64_t ep = s.parallelism.ep;
    out.groups.push_back(group_shape(s, layout.data(1, ep)));
    m.ep = static_cast<std::uint32_t>(out.groups.size() - 1);
    out.ep_group = static_cast<std::int32_t>(m.ep);
    const std::int64_t edp = s.expert_reduce_ranks();
    if (edp > 1) {
      // Every ep-th DP rank (of the shard group under hsdp): slots / ep of them on a node when
      // an EP group is smaller than the node, else one; the node's other GPUs in the other
      // such groups, reducing at once.
      out.groups.push_back(group_shape(s, layout.data(ep, edp)));
      m.edp = static_cast<std::uint32_t>(out.groups.size() - 1);
      out.edp_group = static_cast<std::int32_t>(m.edp);
    }
  }
  return m;
}

namespace {

// The compute task before `layer`'s first task of `phase` on `rank`'s compute stream (whose
// newest tasks are that layer's): where transfers overlapped with the layer start.
sim::TaskId before_layer(const sim::TaskGraph& g, std::uint32_t rank, std::size_t layer, Phase phase) {
  sim::TaskId first = g.stream_tail(rank, kComputeStream);
  while (first != sim::kNoTask) {
    const sim::TaskId prev = g.stream_previous(first);
    if (prev == sim::kNoTask || g.task(prev).layer != static_cast<std::int32_t>(layer) ||
        g.task(prev).phase != static_cast<std::uint32_t>(phase))
      break;
    first = prev;
  }
  return first == sim::kNoTask ? sim::kNoTask : g.stream_previous(first);
}

// Adds `tasks` (in issue order) for `layer`: on the compute stream, or (overlap) on `stream`
// from the layer's start with the compute stream waiting for the last before the next layer.
void add_in_layer(sim::TaskGraph& g, std::vector<sim::Task> tasks, std::size_t layer, bool backward, bool overlap,
                  std::uint32_t stream, const std::string& wait_name, std::uint32_t rank) {
  if (tasks.empty()) return;
  const sim::TaskId before =
      overlap ? before_layer(g, rank, layer, backward ? Phase::Backward : Phase::Forward) : sim::kNoTask;
  sim::TaskId last = sim::kNoTask;
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    sim::Task& t = tasks[i];
    t.stream = overlap ? stream : kComputeStream;
    t.layer = static_cast<std::int32_t>(layer);
    t.rank = rank;
    last = g.add_task(std::move(t));
    if (i == 0 && before != sim::kNoTask) g.add_dependency(before, last);
  }
  if (!overlap) return;
  sim::Task w = wait_task(wait_name, Phase::Overhead);
  w.rank = rank;
  const sim::TaskId wait = g.add_task(std::move(w));
  g.add_dependency(last, wait);
}

}  // namespace

void add_layer_collectives(sim::TaskGraph& g, const Scenario& s, std::size_t layer, const std::string& prefix,
                           bool backward, const MeshGroups& mesh, sim::RendezvousId& next_rendezvous,
                           std::uint32_t rank) {
  const std::string& name = s.model.layers[layer].name;
  const char* pass = backward ? "bwd" : "fwd";
  if (mesh.tp != kNoGroup) {
    std::vector<sim::Task> tasks;
    const auto collectives = tensor_parallel_collectives(s, layer, backward);
    for (std::size_t i = 0; i < collectives.size(); ++i) {
      const auto& c = collectives[i];
      tasks.push_back(collective_task(fmt::format("{}tp.{}.{}.{}{}", prefix, pass, name, c.label(), i), c.op, c.bytes,
                                      mesh.tp, kComputeStream, next_rendezvous));
    }
    add_in_layer(g, std::move(tasks), layer, backward, s.parallelism.tp_comm_overlap, kTpStream,
                 fmt::format("{}tp.{}.{}.wait", prefix, pass, name), rank);
  }
  if (mesh.cp != kNoGroup) {
    std::vector<sim::Task> sync, ring;
    for (const ContextParallelTransfer& c : context_parallel_transfers(s, layer, backward)) {
      const std::string task_name = fmt::format("{}cp.{}.{}.{}", prefix, pass, name, c.label());
      if (c.ring) {
        for (int k = 0; k < c.count; ++k)
          ring.push_back(p2p_task(fmt::format("{}{}", task_name, k), c.bytes, mesh.cp_pair, kCpStream));
      } else {
        for (int k = 0; k < c.count; ++k)
          sync.push_back(collective_task(fmt::format("{}{}", task_name, k), c.op, c.bytes, mesh.cp, kComputeStream,
                                         next_rendezvous));
      }
    }
    add_in_layer(g, std::move(sync), layer, backward, false, kComputeStream, "", rank);
    add_in_layer(g, std::move(ring), layer, backward, true, kCpStream, fmt::format("{}cp.{}.{}.wait", prefix, pass, name),
                 rank);
  }
  if (mesh.ep != kNoGroup && !backward) add_expert_transfers(g, s, layer, prefix, false, mesh, next_rendezvous, rank);
}

void add_expert_transfers(sim::TaskGraph& g, const Scenario& s, std::size_t layer, const std::string& prefix,
                          bool backward, const MeshGroups& mesh, sim::RendezvousId& next_rendezvous, std::uint32_t rank) {
  if (mesh.ep == kNoGroup) return;
  const std::string& name = s.model.layers[layer].name;
  for (const ExpertParallelTransfer& e : expert_parallel_transfers(s, layer, backward)) {
    sim::Task t = all_to_all_task(fmt::format("{}ep.{}.{}.{}", prefix, backward ? "bwd" : "fwd", name, e.label()),
                                  e.bytes, mesh.ep, kComputeStream, next_rendezvous);
    t.layer = static_cast<std::int32_t>(layer);
    t.rank = rank;
    g.add_task(std::move(t));
  }
}

const std::vector<std::string>& stream_names() {
  static const std::vector<std::string> names = {"compute", "communication", "replica communication", "TP communication",
                                                 "PP receive from previous stage", "PP receive from next stage",
                                                 "CP communication", "host CPU", "host copies"};
  static_assert(kComputeStream == 0 && kCommStream == 1 && kReplicaStream == 2 && kTpStream == 3 &&
                kPpRecvPrevStream == 4 && kPpRecvNextStream == 5 && kCpStream == 6 && kHostStream == 7 &&
                kHostCopyStream == 8);
  return names;
}

std::string stream_name(std::uint32_t stream) {
  return stream < stream_names().size() ? stream_names()[stream] : fmt::format("stream {}", stream);
}

std::string micro_batch_prefix(std::int64_t mb, std::int64_t micro_batches) {
  return micro_batches > 1 ? fmt::format("mb{}.", mb) : "";
}

sim::Task wait_task(std::string name, Phase phase) {
  sim::Task t;
  t.kind = sim::TaskKind::Compute;
  t.name = std::move(name);
  t.stream = kComputeStream;
  t.phase = static_cast<std::uint32_t>(phase);
  t.op = static_cast<std::uint32_t>(hardware::OpCode::Kernel);
  return t;
}

sim::Task host_task(std::string name, hardware::OpCode op, double bytes, std::uint32_t stream, Phase phase) {
  sim::Task t;
  t.kind = sim::TaskKind::Host;
  t.name = std::move(name);
  t.stream = stream;
  t.phase = static_cast<std::uint32_t>(phase);
  t.op = static_cast<std::uint32_t>(op);
  t.bytes = bytes;
  return t;
}

std::vector<std::pair<std::size_t, std::size_t>> trainable_ready_order(const ModelSpec& m) {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  for (std::size_t l = m.layers.size(); l-- > 0;)
    for (std::size_t idx : m.ready_order(l))
      if (m.layers[l].params[idx].trainable) out.emplace_back(l, idx);
  return out;
}

bool optimizer_step(const Scenario& s, double shard_ranks, sim::Task& out) {
  double trainable = 0, grad_bytes = 0, param_bytes = 0, all = 0;
  // Under expert parallelism a routed expert's tensors are sharded over shard_ranks / ep ranks
  // (Scenario::expert_shard_ranks): counted here in units of the dense tensors' shard.
  const double expert_scale = shard_ranks > 1 && s.parallelism.ep > 1
                                  ? shard_ranks / static_cast<double>(s.expert_shard_ranks())
                                  : 1.0;
  for (const auto& l : s.model.layers)
    for (const auto& p : l.params) {
      const double n = static_cast<double>(p.numel) * (p.expert_share > 0 ? expert_scale : 1.0);
      all += n;
      param_bytes += n * dtype_bytes(p.dtype);
      if (!p.trainable) continue;
      trainable += n;
      grad_bytes += n * dtype_bytes(p.dtype);
    }
  if (s.optimizer == "none" || trainable <= 0) return false;
  out = (s.optimizer == "sgd" ? sgd_task : optimizer_task)(trainable / shard_ranks, grad_bytes / trainable,
                                                           param_bytes / all);
  return true;
}

namespace {

// The batched GEMMs of one attention matmul (Scores or Values) of one micro-batch.
void add_attention_gemms(const Scenario& s, const LayerGemm& g, hardware::GemmList& fwd, hardware::GemmList& bwd) {
  const double seq = static_cast<double>(s.batch.seq_len);
  // Under context parallelism a rank's queries are seq_len / cp of them, against every key
  // (models/context_parallel.hpp): the GEMMs' query dimension.
  const double queries = seq / static_cast<double>(s.parallelism.cp);
  const double batch = static_cast<double>(s.batch.micro_batch_size) * g.heads;
  // Flash attention keeps the s×s scores on chip (GemmShape::on_chip); eager attention
  // writes and reads them through HBM (the batched GEMMs' own traffic). With a measured
  // attention kernel in the profile, flash attention is priced by it instead (layer_attention).
  const bool flash = s.activations.flash_attention;
  if (flash && !s.activations.attention_kernel.empty()) return;  // priced by layer_attention
  const hardware::GemmMath math = s.precision.gemm_math;
  // Keys per query: on chip, a sliding window's band (LayerSpec::attention_keys' share of the
  // full s²); through HBM, the whole masked s×s.
  const double keys = flash ? g.keys(seq) : seq;
  if (g.kind == LayerGemm::Kind::AttentionScores) {
    fwd.push_back({{queries, keys, g.head_dim, batch, flash, math}, 1});
    bwd.push_back({{queries, g.head_dim, keys, batch, flash, math}, 2});  // dQ = dS·K, dK = dSᵀ·Q
  } else {
    fwd.push_back({{queries, g.head_dim, keys, batch, flash, math}, 1});
    bwd.push_back({{queries, keys, g.head_dim, batch, flash, math}, 1});  // dP = dO·Vᵀ
    bwd.push_back({{queries, g.head_dim, keys, batch, flash, math}, 1});  // dV = Pᵀ·dO
  }
}

// The implicit GEMMs of one convolution of one micro-batch (LayerGemm::Conv), per group:
// forward Y = X̃·W [M, n/g, k]; data gradient dX̃ = dY·Wᵀ [M, k, n/g] (skipped when the input
// needs none: a network's first conv); weight gradient dW = dYᵀ·X̃ [n/g, k, M], M = images ×
// output positions, whose few output tiles split the long reduction (GemmShape::split_k). Each reads the input (or its gradient), the weight and the output (or
// its gradient) once from HBM: cuDNN forms the im2col rows on chip.
void add_conv_gemms(const Scenario& s, const LayerSpec& l, const LayerGemm& g, hardware::GemmList& fwd,
                    hardware::GemmList& bwd) {
  const double images = static_cast<double>(s.tokens_per_micro_batch());
  const double m = images * g.rows, n = g.n / g.groups;
  const hardware::GemmMath math = s.precision.gemm_math;
  const double bytes = hardware::gemm_operand_bytes(math) * (images * (g.input_elements + g.rows * g.n) + g.n * g.k);
  fwd.push_back({{m, n, g.k, g.groups, false, math, bytes}, 1});
  if (g.input_grad) bwd.push_back({{m, g.k, n, g.groups, false, math, bytes}, 1});
  const bool trainable = g.param < 0 || l.params.at(static_cast<std::size_t>(g.param)).trainable;
  if (trainable) bwd.push_back({{n, g.k, m, g.groups, false, math, bytes, /*split_k=*/true}, 1});
}

}  // namespace

hardware::GemmList layer_gemms(const Scenario& s, std::size_t layer, bool backward) {
  const LayerSpec& l = s.model.layers[layer];
  const double tokens = static_cast<double>(s.tokens_per_micro_batch());
  hardware::GemmList fwd, bwd, rerun;
  const RecomputeWork re = recompute_work(s, layer);
  std::size_t next_rerun = 0;  // re.gemms is in forward order
  for (std::size_t gi = 0; gi < l.gemms.size(); ++gi) {
    const LayerGemm& g = l.gemms[gi];
    const std::size_t fwd_before = fwd.size();
    if (g.kind == LayerGemm::Kind::Linear) {
      // Float8Linear runs all three in FP8 (models/float8.hpp).
      const hardware::GemmMath math = float8_gemm(s, l, g) ? hardware::GemmMath::Fp8 : s.precision.gemm_math;
      // Routed experts: one grouped GEMM, a batch of the experts' GEMMs on topk/experts of the
      // tokens each (LayerGemm::experts; a balanced router).
      const double rows = g.experts > 0 ? tokens * g.topk / g.experts : tokens;
      const double batch = g.experts > 0 ? g.experts : 1;
      fwd.push_back({{rows, g.n, g.k, batch, false, math}, 1});
      bwd.push_back({{rows, g.k, g.n, batch, false, math}, 1});  // dgrad: dX = dY·Wᵀ
      const bool trainable = g.param < 0 || l.params.at(static_cast<std::size_t>(g.param)).trainable;
      if (trainable) bwd.push_back({{g.n, g.k, rows, batch, false, math}, 1});  // wgrad: dW = dYᵀ·X
    } else if (g.kind == LayerGemm::Kind::Conv) {
      add_conv_gemms(s, l, g, fwd, bwd);
    } else {
      add_attention_gemms(s, g, fwd, bwd);
    }
    if (next_rerun < re.gemms.size() && re.gemms[next_rerun] == gi) {
      ++next_rerun;
      rerun.insert(rerun.end(), fwd.begin() + static_cast<std::ptrdiff_t>(fwd_before), fwd.end());
    }
  }
  if (!backward) return fwd;
  bwd.insert(bwd.begin(), rerun.begin(), rerun.end());
  return bwd;
}


// Flash attention as one fused kernel per layer and pass, priced by the profile's measured
// throughput (FlashAttention-2 benchmark, HardwareProfile::attention): forward 1 pass, backward
// 2.5 (it recomputes QKᵀ: 5 matmuls against the forward's 2), plus the recomputed forward's 1.
std::vector<hardware::AttentionWork> layer_attention(const Scenario& s, std::size_t layer, bool backward) {
  std::vector<hardware::AttentionWork> out;
  if (!s.activations.flash_attention || s.activations.attention_kernel.empty()) return out;
  const hardware::AttentionThroughput* kernel = s.hardware.attention_kernel(s.activations.attention_kernel);
  STEPSIM_ASSERT(kernel != nullptr, "attention kernel '{}' not in profile '{}' (parse_scenario checks it)",
                 s.activations.attention_kernel, s.hardware.name);
  for (const LayerGemm& g : s.model.layers[layer].gemms) {
    if (g.kind != LayerGemm::Kind::AttentionScores) continue;  // one kernel for scores and values
    hardware::AttentionWork a;
    a.kernel = static_cast<std::size_t>(kernel - s.hardware.attention.data());
    a.batch = static_cast<double>(s.batch.micro_batch_size) * g.heads;
    // Under context parallelism (models/context_parallel.hpp): cp kernel steps of seq_len / cp
    // queries, each the work of a causal kernel on seq_len / cp (the diagonal block, or half of
    // a full one): 1/cp of the whole sequence's causal attention.
    const double cp = static_cast<double>(s.parallelism.cp);
    a.seq_len = static_cast<double>(s.batch.seq_len) / cp;
    a.head_dim = g.head_dim;
    a.causal = g.causal;
    a.window = g.window;
    a.passes = (backward ? 2.5 + recompute_work(s, layer).attention : 1.0) * cp;
    out.push_back(a);
  }
  return out;
}

std::vector<hardware::KernelWork> kernel_work_table(const Scenario& s) {
  std::vector<hardware::KernelWork> out;
  out.reserve(2 * s.model.layers.size());
  for (std::size_t i = 0; i < s.model.layers.size(); ++i) {
    const LayerSpec& l = s.model.layers[i];
    const double eager = eager_score_elements(s, l) > 0 ? kEagerKernelsFwd : 0.0;
    const double streaming = streaming_kernels(s, l);
    const double kernels = streaming + eager;
    const Float8Casts casts = float8_casts(s, i);
    const hardware::GemmMath math = s.precision.gemm_math;
    // A measured host time per launch already holds the views' CPU time (FrameworkConfig).
    const double views = s.framework.host_op_measured ? 0.0 : l.fwd_host_only_ops;
    out.push_back({layer_gemms(s, i, false), layer_attention(s, i, false), kernels + casts.fwd_kernels, views, math});
    // Backward: each forward kernel's backward (about two kernels: input grad, parameter/bias
    // grad) and the views' backward views, plus what recomputation runs again (recompute.hpp).
    const RecomputeWork re = recompute_work(s, i);
    out.push_back({layer_gemms(s, i, true), layer_attention(s, i, true),
                   2.0 * kernels + re.streaming * streaming + re.attention * eager + casts.bwd_kernels +
                       re.linear_flops_share * casts.fwd_kernels,
                   (1.0 + re.streaming) * views, math});
  }
  return out;
}

double model_flops_per_gpu_step(const Scenario& s) {
  // Forward + backward as simulated (frozen tensors skip wgrad), without recomputation: the
  // 6·Ψ·tokens convention when everything trains.
  const double tokens = static_cast<double>(s.tokens_per_micro_batch());
  double f = 0;
  for (const auto& l : s.model.layers) {
    double numel = 0, frozen = 0;
    for (const auto& p : l.params) {
      numel += static_cast<double>(p.numel);
      if (!p.trainable) frozen += static_cast<double>(p.numel);
    }
    const double frozen_share = numel > 0 ? frozen / numel : 0.0;
    // A sliding window's masked keys are no model FLOPs, whichever kernel computes them.
    f += tokens * (l.fwd_gemm_flops_per_token * (3.0 - frozen_share) +
                   3.0 * l.fwd_attn_flops_per_token_per_seq * l.attention_keys(static_cast<double>(s.batch.seq_len)));
  }
  return f * static_cast<double>(s.batch.grad_accum);
}

}  // namespace stepsim::models
