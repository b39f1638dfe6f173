// SPDX-License-Identifier: Apache-2.0
// Pipeline parallelism under a DP strategy (issue 15 item 6; semantics-parallel.md §B): every
// PP rank of one pipeline is a rank of the graph (sim::Task::rank = the PP rank), running its
// program (models/pipeline.hpp) on its own streams; the DP (and TP) collectives of each rank
// stand for its whole DP group, as in the symmetric play without PP.
//
// Rules modelled:
//  - stage boundaries: each forward sends the [s, b, h] activations to the next virtual stage
//    and each backward their gradient to the previous one (B7, B17), as a point-to-point
//    transfer on the receiver's stream for that peer (one NCCL communicator per pair); the
//    receiving compute waits for it. Sends are asynchronous (torch.distributed.pipelining
//    defers the send waits, B8–B10); Megatron-LM's non-interleaved 1F1B, whose sends block,
//    is played the same way (not modelled: the sender waiting for its peer);
//  - ddp (PyTorch DDP on each model chunk, B18): every backward but the chunk's last runs under
//    no_sync; the last arms the hooks, so its buckets' AllReduces overlap that backward as in
//    plain DDP; the bucket copy-back follows it. Megatron-LM's stages after the first start
//    their reduction after their last backward instead (B5; not modelled). With
//    use_distributed_optimizer (Megatron-LM's, §A9–A11, as in ddp.cpp) the buckets are
//    reduce-scattered, the optimizer updates 1/(dp × cp) of the rank's parameters, and each
//    bucket's parameters are all-gathered after the step, or with overlap_param_gather before
//    the chunk's first forward (each layer waiting for its bucket; not modelled: the
//    interleaved schedule's aligned gather points, B6);
//  - fsdp / hsdp (torchtitan, B18–B19): reshard_after_forward resolves to False under PP, so
//    each FSDP unit of a chunk is all-gathered once, before the chunk's first forward, and
//    stays unsharded for the step; no ReduceScatter per micro-batch: the unsharded gradients
//    accumulate, and REDUCE_GRAD reduce-scatters every unit of a chunk (HSDP: then all-reduces
//    the shard over the replicas) after the chunk's last backward, then reshards. The
//    optimizer waits for every reduction;
//  - zero1 (DeepSpeed's PipelineEngine, deepspeed/runtime/pipe/engine.py: its TrainSchedule is
//    1F1B, ReduceGrads runs once after the last backward, then OptimizerStep): every micro-batch
//    accumulates; after the stage's last backward its gradients are reduced in IPG buckets of
//    reduce_bucket_size elements in model order (ZeRO-1 without hooks, semantics.md §C.2 rule
//    55/56: on the compute stream, or on the communication stream with overlap_comm, the compute
//    stream waiting at the epilogue), then Adam on the rank's 1/(dp × cp) partition and one
//    AllGather of the stage's parameters (rule 60);
//  - tied embeddings (Megatron-LM, models/pipeline.hpp pipeline_tied_embedding): the last
//    stage holds a copy of the word embedding; after its DP reduction each of the first and
//    last stage all-reduces that gradient with the other (one 2-rank AllReduce), before the
//    optimizer. The copy's own DP reduction is not priced;
//  - the optimizer step updates the rank's own parameters (its stages; 1/shard of them under
//    FSDP).
#include "models/pipeline.hpp"
#include "models/scenario.hpp"
#include "models/strategy/buckets.hpp"
#include "models/strategy/compute_tasks.hpp"
#include "models/strategy/strategy.hpp"
#include "sim/support/error.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace stepsim::models {

namespace {

using hardware::CollectiveOp;
constexpr double kMiB = 1024.0 * 1024.0;

// An FSDP unit of one chunk: the chunk's root layers (embedding, or norm + head) or
// unit_layers consecutive blocks (unit_layers 0: the whole chunk).
struct ChunkUnit {
  std::vector<std::size_t> layers;  // forward order
  double param_bytes = 0, grad_bytes = 0;
};

std::vector<ChunkUnit> chunk_units(const Scenario& s, const std::vector<std::size_t>& layers) {
  std::vector<ChunkUnit> units;
  ChunkUnit root;
  const std::int64_t per_unit = s.sharding.unit_layers;
  std::vector<ChunkUnit> blocks;
  for (std::size_t l : layers) {
    if (per_unit == 0) {
      root.layers.push_back(l);
      continue;
    }
    if (s.model.layers[l].root) {
      root.layers.push_back(l);
      continue;
    }
    if (blocks.empty() || static_cast<std::int64_t>(blocks.back().layers.size()) >= per_unit) blocks.emplace_back();
    blocks.back().layers.push_back(l);
  }
  if (!root.layers.empty()) units.push_back(root);
  units.insert(units.end(), blocks.begin(), blocks.end());
  for (ChunkUnit& u : units)
    for (std::size_t l : u.layers)
      for (const ParamTensor& p : s.model.layers[l].params) {
        u.param_bytes += static_cast<double>(p.numel) * dtype_bytes(p.dtype);
        if (p.trainable) u.grad_bytes += static_cast<double>(p.numel) * s.precision.reduce_bytes(p.dtype);
      }
  return units;
}

// The node of PP rank `rank`'s first GPU (its other coordinates 0; Scenario::layout()).
std::int64_t stage_node(const RankLayout& layout, int rank) {
  return layout.node_of(static_cast<std::int64_t>(rank) * layout.stride(MeshDim::PP));
}

}  // namespace

LoweredStep lower_pipeline(const Scenario& s) {
  LoweredStep out;
  const StrategyEntry& strategy = strategy_of(s);
  const bool fsdp = strategy.family == StrategyFamily::FSDP;
  const bool zero1 = strategy.family == StrategyFamily::DeepSpeed;
  const bool dist_opt = s.parallelism.use_distributed_optimizer;  // ddp only (its knob)
  const CollectiveOp ddp_reduce = dist_opt ? CollectiveOp::ReduceScatter : CollectiveOp::AllReduce;
  STEPSIM_ASSERT(fsdp || strategy.family == StrategyFamily::DDP || (zero1 && strategy.zero_stage == 1),
                 "pipeline parallelism under '{}'", strategy.name);
  const RankLayout layout = s.layout();
  // Groups: 0 the DP (shard) group, [the HSDP replica group], [TP], then PP inside and across nodes.
  const std::int64_t shard = fsdp ? s.shard_ranks() : s.data_ranks();
  out.groups.push_back(group_shape(s, layout.data(1, shard)));
  constexpr std::uint32_t kDpGroup = 0;
  std::uint32_t replica_group = 0;
  if (strategy.hybrid) {
    out.groups.push_back(group_shape(s, layout.data(shard, s.data_ranks() / shard)));
    replica_group = static_cast<std::uint32_t>(out.groups.size() - 1);
    out.replica_group = static_cast<std::int32_t>(replica_group);
  }
  const MeshGroups mesh = add_mesh_groups(out, s);
  // Point to point: every GPU of a stage sends to its peer at once; across nodes they share the
  // node's NICs (GroupShape::concurrent_groups_per_node: the node's GPUs over its PP ranks),
  // inside one each has its NVLink.
  out.pp_group = static_cast<std::int32_t>(out.groups.size());
  out.groups.push_back({2, 2, 0, 1});
  out.groups.push_back({2, 1, 0, layout.groups_per_node(layout.whole(MeshDim::PP))});
  const auto pp_group_between = [&](int a, int b) {
    return static_cast<std::uint32_t>(out.pp_group + (stage_node(layout, a) == stage_node(layout, b) ? 0 : 1));
  };

  const int pp = static_cast<int>(s.parallelism.pp);
  const int chunks = static_cast<int>(s.parallelism.virtual_stages);
  const int stages = pp * chunks;
  const std::int64_t m = s.batch.grad_accum;
  const auto stage_layers = pipeline_stage_layers(s);
  const PipelineSchedule schedule = pipeline_schedule_of(s.parallelism.pipeline_schedule);
  const auto programs = pipeline_programs(schedule, pp, chunks, m);
  const double message_bytes = pipeline_message_bytes(s);

  sim::TaskGraph& g = out.graph;
  sim::RendezvousId next_rendezvous = 0;
  const ParamTensor* tied = pipeline_tied_embedding(s);
  const sim::RendezvousId tied_rendezvous = tied != nullptr ? next_rendezvous++ : sim::kNoRendezvous;
  // Per virtual stage and micro-batch: the last compute task of its forward / backward, and
  // the receive its forward / backward waits for (joined to the sender once every rank is in).
  const auto table = [&] { return std::vector<std::vector<sim::TaskId>>(stages, std::vector<sim::TaskId>(m, sim::kNoTask)); };
  auto fwd_done = table(), bwd_done = table(), recv_act = table(), recv_grad = table();

  for (int r = 0; r < pp; ++r) {
    const auto rank = static_cast<std::uint32_t>(r);
    const auto add = [&](sim::Task t) {
      t.rank = rank;
      return g.add_task(std::move(t));
    };
    const auto compute_tail = [&] { return g.stream_tail(rank, kComputeStream); };
    // Per chunk: DDP's buckets, or FSDP's units.
    struct Chunk {
      std::vector<std::size_t> layers;
      std::vector<BucketAssignment> buckets;
      std::vector<std::size_t> bucket_of;  // by trainable tensor in ready order: its bucket
      std::vector<double> bucket_param_bytes;  // the distributed optimizer's gather of each bucket
      std::vector<std::size_t> layer_bucket;   // by model layer: the lowest bucket of its gradients
      std::vector<ChunkUnit> units;
      std::vector<std::size_t> unit_of;    // by model layer: its unit (layers of the chunk only)
      std::vector<double> unsharded_grads;
    };
    std::vector<Chunk> chunk(static_cast<std::size_t>(chunks));
    for (int c = 0; c < chunks; ++c) {
      Chunk& k = chunk[static_cast<std::size_t>(c)];
      k.layers = stage_layers[static_cast<std::size_t>(pipeline_stage_of(schedule, pp, c, r))];
      if (fsdp) {
        k.units = chunk_units(s, k.layers);
        k.unsharded_grads.assign(k.units.size(), 0);
        k.unit_of.assign(s.model.layers.size(), 0);
        for (std::size_t u = 0; u < k.units.size(); ++u)
          for (std::size_t l : k.units[u].layers) k.unit_of[l] = u;
        continue;
      }
      if (zero1) continue;  // DeepSpeed's IPG buckets are formed at ReduceGrads
      std::vector<BucketInput> inputs;
      std::vector<std::pair<std::size_t, double>> owner;  // by input: its layer and parameter bytes
      for (auto it = k.layers.rbegin(); it != k.layers.rend(); ++it)
        for (std::size_t idx : s.model.ready_order(*it)) {
          const ParamTensor& p = s.model.layers[*it].params[idx];
          if (!p.trainable) continue;
          inputs.push_back({static_cast<double>(p.numel) * s.precision.reduce_bytes(p.dtype), static_cast<std::uint32_t>(p.dtype)});
          owner.emplace_back(*it, static_cast<double>(p.numel) * dtype_bytes(p.dtype));
        }
      k.buckets = assign_buckets(inputs, {s.parallelism.first_bucket_mb * kMiB, s.parallelism.bucket_cap_mb * kMiB});
      k.bucket_of.assign(inputs.size(), 0);
      k.bucket_param_bytes.assign(k.buckets.size(), 0);
      k.layer_bucket.assign(s.model.layers.size(), k.buckets.size());
      for (std::size_t b = 0; b < k.buckets.size(); ++b)
        for (std::size_t t : k.buckets[b].tensors) {
          k.bucket_of[t] = b;
          k.bucket_param_bytes[b] += owner[t].second;
          k.layer_bucket[owner[t].first] = std::min(k.layer_bucket[owner[t].first], b);
        }
      if (r == 0)  // the report's bucket line is PP rank 0's, as its other rows
        for (const auto& b : k.buckets) out.buckets.push_back({b.bytes, b.tensors.size()});
    }
    std::vector<sim::TaskId> reductions;  // every DP reduction of the rank (the optimizer waits)

    for (const PipelineAction& a : programs[static_cast<std::size_t>(r)]) {
      Chunk& k = chunk[static_cast<std::size_t>(a.chunk)];
      const int vs = pipeline_stage_of(schedule, pp, a.chunk, r);
      const auto vsi = static_cast<std::size_t>(vs);
      const auto mbi = static_cast<std::size_t>(a.micro_batch);
      // "s2.mb3.c1.": PP rank, micro-batch, chunk (a report finds a rank's micro-batch by its prefix).
      const std::string prefix = fmt::format("s{}.{}{}", r, micro_batch_prefix(a.micro_batch, m),
                                             chunks > 1 ? fmt::format("c{}.", a.chunk) : "");
      // The activations (or their gradient) from the neighbouring stage: a message from its rank,
      // or, when that stage is this rank's other chunk (ZBVZeroBubble's V), nothing to send (B17):
      // a zero-time task the neighbour's compute releases.
      const auto receive = [&](bool grad, int peer_stage) {
        const int peer = pipeline_stage_rank(schedule, pp, peer_stage);
        if (peer == r) return add(wait_task(fmt::format("{}local.{}", prefix, grad ? "grad" : "act"), Phase::Overhead));
        return add(p2p_task(fmt::format("{}recv.{}", prefix, grad ? "grad" : "act"), message_bytes,
                            pp_group_between(r, peer), grad ? kPpRecvNextStream : kPpRecvPrevStream));
      };
      if (!a.backward) {
        sim::TaskId recv = sim::kNoTask;
        if (vs > 0) recv = recv_act[vsi][mbi] = receive(false, vs - 1);
        const bool first_use = fsdp && a.micro_batch == 0;
        // The distributed optimizer's gathers ahead of the chunk's first forward, from the
        // last bucket (the first layers) down.
        std::vector<sim::TaskId> gathered;
        if (dist_opt && s.parallelism.overlap_param_gather && a.micro_batch == 0)
          for (std::size_t b = k.buckets.size(); b-- > 0;) {
            gathered.insert(gathered.begin(), add(collective_task(fmt::format("{}dist_opt.allgather.bucket{}", prefix, b),
                                                                  CollectiveOp::AllGather, k.bucket_param_bytes[b], kDpGroup,
                                                                  kCommStream, next_rendezvous)));
          }
        std::size_t next_unit = 0;
        bool first_task = true;
        for (std::size_t l : k.layers) {
          // torchtitan under PP: each unit all-gathered once, before its first forward.
          if (first_use && next_unit < k.units.size() && k.units[next_unit].layers.front() == l) {
            const ChunkUnit& u = k.units[next_unit];
            sim::Task ag = collective_task(fmt::format("{}allgather.unit{}", prefix, next_unit), CollectiveOp::AllGather,
                                           u.param_bytes, kDpGroup, kCommStream, next_rendezvous);
            ag.alloc_bytes[kBufferCounter] = u.param_bytes;
            const sim::TaskId ag_id = add(std::move(ag));
            sim::Task copy = wait_task(fmt::format("{}fsdp.copy_out.unit{}", prefix, next_unit), Phase::Overhead);
            copy.bytes = 2.0 * u.param_bytes;
            const sim::TaskId copy_id = add(std::move(copy));
            g.add_dependency(ag_id, copy_id);
            if (first_task && recv != sim::kNoTask) g.add_dependency(recv, copy_id);
            first_task = false;
            ++next_unit;
          }
          const sim::TaskId id = add(forward_task(s, l, prefix));
          if (first_task && recv != sim::kNoTask) g.add_dependency(recv, id);
          first_task = false;
          if (!gathered.empty() && k.layer_bucket[l] < gathered.size()) g.add_dependency(gathered[k.layer_bucket[l]], id);
          add_layer_collectives(g, s, l, prefix, false, mesh, next_rendezvous, rank);
        }
        fwd_done[vsi][mbi] = compute_tail();
        continue;
      }
      // ---- backward: all of it, or under a zero-bubble schedule its I or its W pass ----
      // Stage 0's I is empty and its W runs the whole backward (B16).
      if (a.part == BackwardPart::Input && vs == 0) continue;
      const bool full = a.part == BackwardPart::Full || vs == 0;
      const bool input_path = a.part != BackwardPart::Weight || full;  // the gradient the previous stage waits for
      sim::TaskId recv = sim::kNoTask;
      if (input_path && vs + 1 < stages) recv = recv_grad[vsi][mbi] = receive(true, vs + 1);
      // The chunk's last backward or W (they run in micro-batch order): its gradients are final.
      const bool last = a.part != BackwardPart::Input && a.micro_batch == m - 1;
      const bool sync = last && !fsdp && !zero1;
      std::vector<std::size_t> left(k.buckets.size());
      for (std::size_t b = 0; b < k.buckets.size(); ++b) left[b] = k.buckets[b].tensors.size();
      std::vector<sim::TaskId> last_grad(k.buckets.size(), sim::kNoTask);
      std::size_t next_bucket = 0, ready_pos = 0;
      sim::TaskId last_ar = sim::kNoTask;
      bool first_task = true;
      for (auto it = k.layers.rbegin(); it != k.layers.rend(); ++it) {
        const std::size_t l = *it;
        if (input_path) add_expert_transfers(g, s, l, prefix, true, mesh, next_rendezvous, rank);
        if (a.part == BackwardPart::Input) {
          const sim::TaskId id = add(backward_split(s, l, prefix, 0.0).input);
          if (first_task && recv != sim::kNoTask) g.add_dependency(recv, id);
          first_task = false;
          add_layer_collectives(g, s, l, prefix, true, mesh, next_rendezvous, rank);
          continue;
        }
        const double copy = sync ? 2.0 : 0.0;
        const std::int64_t mb = fsdp ? -1 : a.micro_batch;
        for (auto& seg : full ? backward_segments(s, l, prefix, copy, mb) : backward_split(s, l, prefix, copy, mb).weight) {
          if (fsdp && seg.produces_grad) {
            // The unit's unsharded gradients exist from its first gradient to REDUCE_GRAD.
            const std::size_t u = k.unit_of[l];
            if (k.unsharded_grads[u] == 0) {
              seg.task.alloc_bytes[kBufferCounter] += k.units[u].grad_bytes;
              k.unsharded_grads[u] = k.units[u].grad_bytes;
            }
          }
          const bool produces = seg.produces_grad;
          const sim::TaskId id = add(std::move(seg.task));
          if (first_task && recv != sim::kNoTask) g.add_dependency(recv, id);
          first_task = false;
          if (!sync || !produces) continue;
          // DDP's hook: the bucket of this gradient (the chunk's trainable tensors in ready order).
          const std::size_t b = k.bucket_of[ready_pos++];
          last_grad[b] = id;
          --left[b];
          for (; next_bucket < k.buckets.size() && left[next_bucket] == 0; ++next_bucket) {
            last_ar = add(collective_task(fmt::format("{}{}.bucket{}", prefix, hardware::collective_op_name(ddp_reduce), next_bucket),
                                          ddp_reduce,
                                          k.buckets[next_bucket].bytes, kDpGroup, kCommStream, next_rendezvous));
            g.add_dependency(last_grad[next_bucket], last_ar);
          }
        }
        if (input_path) add_layer_collectives(g, s, l, prefix, true, mesh, next_rendezvous, rank);
      }
      const sim::TaskId done = compute_tail();
      if (input_path) bwd_done[vsi][mbi] = done;
      if (!last) continue;
      if (zero1) {
        // ReduceGrads: the chunk's gradients in model order, in IPG buckets (rule 55/56).
        std::vector<double> elements, bytes;
        for (std::size_t l : k.layers)
          for (const ParamTensor& p : s.model.layers[l].params)
            if (p.trainable) {
              elements.push_back(static_cast<double>(p.numel));
              bytes.push_back(static_cast<double>(p.numel) * s.precision.reduce_bytes(p.dtype));
            }
        const std::vector<bool> flush = deepspeed_ipg_flushes(elements, s.sharding.reduce_bucket_size);
        const CollectiveOp op = s.sharding.gradient_reduce_scatter ? CollectiveOp::ReduceScatter : CollectiveOp::AllReduce;
        const bool overlap = s.sharding.overlap_comm;
        double open = 0;
        std::size_t bucket = 0;
        sim::TaskId last_reduction = sim::kNoTask;
        const auto reduce = [&] {
          if (open <= 0) return;
          last_reduction = add(collective_task(fmt::format("{}{}.bucket{}", prefix, hardware::collective_op_name(op), bucket++),
                                               op, open, kDpGroup, overlap ? kCommStream : kComputeStream, next_rendezvous));
          g.add_dependency(done, last_reduction);
          open = 0;
        };
        for (std::size_t i = 0; i < bytes.size(); ++i) {
          if (flush[i]) reduce();
          open += bytes[i];
        }
        reduce();
        const sim::TaskId epilogue = add(wait_task(prefix + "zero.reduce_epilogue", Phase::Overhead));
        if (last_reduction != sim::kNoTask) g.add_dependency(last_reduction, epilogue);
        continue;
      }
      if (!fsdp) {
        sim::Task fin = wait_task(prefix + (s.parallelism.gradient_as_bucket_view ? "ddp.finalize_backward"
                                                                                  : "ddp.copy_bucket_to_grad"),
                                  Phase::Overhead);
        if (!s.parallelism.gradient_as_bucket_view)
          for (const auto& b : k.buckets) fin.bytes += 2.0 * b.bytes;
        const sim::TaskId fin_id = add(std::move(fin));
        if (last_ar != sim::kNoTask) g.add_dependency(last_ar, fin_id);
        continue;
      }
      // REDUCE_GRAD: every unit of the chunk, in backward order, after its last backward (or W).
      const sim::TaskId after = done;
      for (std::size_t u = k.units.size(); u-- > 0;) {
        const ChunkUnit& unit = k.units[u];
        if (unit.grad_bytes <= 0) continue;
        sim::Task rs = collective_task(fmt::format("{}reducescatter.unit{}", prefix, u), CollectiveOp::ReduceScatter,
                                       unit.grad_bytes, kDpGroup, kCommStream, next_rendezvous);
        rs.free_bytes[kBufferCounter] = unit.grad_bytes + unit.param_bytes;  // gradients reduced, parameters resharded
        const sim::TaskId rs_id = add(std::move(rs));
        g.add_dependency(after, rs_id);
        reductions.push_back(rs_id);
        if (strategy.hybrid) {
          const sim::TaskId ar = add(collective_task(fmt::format("{}allreduce.unit{}.replicas", prefix, u),
                                                     CollectiveOp::AllReduce, unit.grad_bytes / shard, replica_group,
                                                     kReplicaStream, next_rendezvous));
          g.add_dependency(rs_id, ar);
          reductions.push_back(ar);
        }
      }
    }
    if (fsdp) {
      const sim::TaskId fin = add(wait_task(fmt::format("s{}.fsdp.finalize_backward", r), Phase::Overhead));
      for (sim::TaskId id : reductions) g.add_dependency(id, fin);
    }
    // Tied embeddings: the first and the last stage all-reduce the word embedding's gradient.
    if (tied != nullptr && (r == 0 || r == pp - 1)) {
      sim::Task ar = collective_task(fmt::format("s{}.allreduce.tied_embedding", r), CollectiveOp::AllReduce,
                                     static_cast<double>(tied->numel) * s.precision.reduce_bytes(tied->dtype),
                                     pp_group_between(0, pp - 1), kCommStream, next_rendezvous);
      ar.rendezvous = tied_rendezvous;  // one AllReduce: both stages' tasks meet
      const sim::TaskId ar_id = add(std::move(ar));
      g.add_dependency(compute_tail(), ar_id);
      const sim::TaskId wait = add(wait_task(fmt::format("s{}.wait.tied_embedding", r), Phase::Overhead));
      g.add_dependency(ar_id, wait);
    }
    const Scenario rank_s = pipeline_rank_scenario(s, r);
    if (sim::Task opt; optimizer_step(rank_s, fsdp || zero1 || dist_opt ? static_cast<double>(shard) : 1.0, opt)) {
      opt.name = fmt::format("s{}.{}", r, opt.name);
      const sim::TaskId step = add(std::move(opt));
      if (dist_opt && !s.parallelism.overlap_param_gather) {
        // step_with_ready_grads: every bucket of every chunk gathered, the next forward waiting.
        std::vector<sim::TaskId> gathers;
        for (int c = 0; c < chunks; ++c)
          for (std::size_t b = 0; b < chunk[static_cast<std::size_t>(c)].buckets.size(); ++b) {
            gathers.push_back(add(collective_task(fmt::format("s{}.{}dist_opt.allgather.bucket{}", r,
                                                              chunks > 1 ? fmt::format("c{}.", c) : "", b),
                                                  CollectiveOp::AllGather, chunk[static_cast<std::size_t>(c)].bucket_param_bytes[b],
                                                  kDpGroup, kCommStream, next_rendezvous)));
            g.add_dependency(step, gathers.back());
          }
        const sim::TaskId wait = add(wait_task(fmt::format("s{}.dist_opt.wait_allgather", r), Phase::Overhead));
        for (sim::TaskId ag : gathers) g.add_dependency(ag, wait);
      }
      if (zero1) {
        // ZeRO-1's step() ends with one AllGather of the stage's low-precision parameters (rule 60).
        double param_bytes = 0;
        for (const auto& l : rank_s.model.layers)
          for (const ParamTensor& p : l.params) param_bytes += static_cast<double>(p.numel) * dtype_bytes(p.dtype);
        const sim::TaskId ag = add(collective_task(fmt::format("s{}.zero.allgather_params", r), CollectiveOp::AllGather,
                                                   param_bytes, kDpGroup, kCommStream, next_rendezvous));
        g.add_dependency(step, ag);
        g.add_dependency(ag, add(wait_task(fmt::format("s{}.zero.wait_allgather", r), Phase::Overhead)));
      }
    }
  }
  // Each receive waits for its sender's compute.
  for (int vs = 0; vs < stages; ++vs)
    for (std::int64_t mb = 0; mb < m; ++mb) {
      const auto v = static_cast<std::size_t>(vs);
      const auto i = static_cast<std::size_t>(mb);
      if (vs > 0) g.add_dependency(fwd_done[v - 1][i], recv_act[v][i]);
      if (vs + 1 < stages) g.add_dependency(bwd_done[v + 1][i], recv_grad[v][i]);
    }
  g.freeze(s.parallelism.strategy + "+pp");
  return out;
}

}  // namespace stepsim::models
