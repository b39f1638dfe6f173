// SPDX-License-Identifier: Apache-2.0
// DeepSpeed ZeRO stages 1, 2 and 3 (microsoft/DeepSpeed v0.16.5; shared/reference/semantics.md §C).
//
// Stage 1/2 (stage_1_and_2.py, §C.2):
//  - gradients are appended to an IPG bucket in hook (ready) order; a tensor that does not fit
//    flushes the bucket first; one larger than the bucket is reduced alone (rule 56);
//  - hooks exist only with stage 2 or overlap_comm; stage 1 without overlap_comm reduces every
//    gradient after backward in model order (rule 55); stage 1 reduces only on the accumulation
//    boundary, stage 2 every micro-step;
//  - overlap_comm runs reductions on a separate stream, but the compute stream waits on the
//    previous bucket's reduction at each flush: at most one reduction overlaps compute (rule 57);
//    without it reductions run on the compute stream;
//  - each bucket is one whole-bucket AllReduce (use_multi_rank_bucket_allreduce, rule 59);
//    `gradient_reduce_scatter` switches to the ReduceScatter the ZeRO paper describes;
//  - the optimizer updates the rank's 1/N partition, then one AllGather of the whole
//    low-precision model runs inside step(), not overlapped (rule 60).
// Stage 3 (stage3.py, partitioned_param_coordinator.py, §C.3):
//  - each layer's parameters are all-gathered (coalesced) before use, except persistent ones
//    (numel ≤ stage3_param_persistence_threshold, rule 66); after the fetch, upcoming layers are
//    prefetched in one coalesced AllGather of up to stage3_prefetch_bucket_size elements within
//    stage3_max_live_parameters (rule 63; steady state: the trace is complete);
//  - parameters are released after use unless reused within stage3_max_reuse_distance elements
//    (rule 65), so the last layers stay gathered from forward into backward;
//  - stage3_max_live_parameters bounds what the CPU prefetches, against its own count of
//    gathered and in-flight elements (__n_available_params, rule 64), which release_sub_module
//    lowers right after launching a module: the CPU's view, which the graph is built in. The
//    GPU may still run the AllGathers ahead of compute (the CPU blocks only beyond
//    __max_ongoing_fetch_events = 2 unfinished AllGathers, rule 64), and free_param's
//    record_stream keeps each released buffer until compute has used it; what stops them is
//    HBM: every allocation is admitted in program order within the usable HBM (run(),
//    sim::MemoryLimit; issue 13 item 3);
//  - gradients are bucketed in ready order and reduced by one ReduceScatter per bucket, with at
//    most max_param_reduce_events = 2 outstanding (rule 67); every micro-step reduces;
//  - no AllGather after step() (rule 68).
#include "hardware/task_cost.hpp"
#include "models/expert_parallel.hpp"
#include "models/scenario.hpp"
#include "models/scenario_fields.hpp"
#include "models/strategy/buckets.hpp"
#include "models/strategy/compute_tasks.hpp"
#include "models/strategy/strategy.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace stepsim::models {

namespace {

using hardware::CollectiveOp;

// DeepSpeed's zero_optimization.sub_group_size default (config.py, semantics-parallel.md §E2):
// stage 3 steps the optimizer one sub-group of this many elements at a time.
constexpr double kZero3SubGroupSize = 1e9;

struct Grad {
  std::size_t layer;
  std::size_t param;
  double elements;
  double bytes;  // in the reduce dtype
  bool expert;   // a routed expert's, under expert parallelism: its partition group is expert DP
};


std::vector<Grad> grads_in_order(const Scenario& s, bool model_order) {
  std::vector<Grad> out;
  const ModelSpec& m = s.model;
  auto add = [&](std::size_t l, std::size_t idx) {
    const ParamTensor& p = m.layers[l].params[idx];
    out.push_back({l, idx, static_cast<double>(p.numel), static_cast<double>(p.numel) * s.precision.reduce_bytes(p.dtype),
                   expert_partitioned(s, p)});
  };
  if (model_order) {
    for (std::size_t l = 0; l < m.layers.size(); ++l)
      for (std::size_t idx = 0; idx < m.layers[l].params.size(); ++idx)
        if (m.layers[l].params[idx].trainable) add(l, idx);
  } else {
    for (const auto& [l, idx] : trainable_ready_order(m)) add(l, idx);
  }
  return out;
}

// The low-precision model's bytes: {dense, routed experts partitioned over expert DP}.
std::pair<double, double> total_param_bytes(const Scenario& s) {
  double dense = 0, experts = 0;
  for (const auto& l : s.model.layers)
    for (const auto& p : l.params)
      (expert_partitioned(s, p) ? experts : dense) += static_cast<double>(p.numel) * dtype_bytes(p.dtype);
  return {dense, experts};
}

// Optimizer offload's PCIe copies of one reduced bucket's partition (`elements` of this rank's
// share) on `stream`, after `after` (semantics-parallel.md §E3 for stages 1/2, copy_grads_in_partition
// and async_accumulate_grad_in_cpu_via_gpu; §E4 for stage 3, partition_grads): `accumulate` the
// micro-step's gradient through the CPU buffer in the parameters' dtype (micro-step 0 copies it
// out; later ones copy the sum back, add and copy it out again; stage 3 copies it back on every
// micro-step), then on the accumulation boundary the fp32 cast goes device to host. Returns the
// last copy (after when none). Unpinned destinations make each copy synchronous: the compute
// stream waits for it (sets `compute_wait`).
struct OffloadCopies {
  const Scenario& s;
  sim::TaskGraph& g;
  double param_bytes;  // the low-precision gradient's bytes per element
  sim::TaskId add(const std::string& name, double elements, std::uint32_t stream, sim::TaskId after, bool stage3,
                  std::int64_t mb, bool boundary, sim::TaskId& compute_wait) const {
    if (!(elements > 0)) return after;
    sim::TaskId last = after;
    auto copy = [&](const char* what, hardware::OpCode op, double bytes) {
      const sim::TaskId id = g.add_task(host_task(name + what, op, bytes, stream, Phase::Communication));
      if (last != sim::kNoTask) g.add_dependency(last, id);
      last = id;
    };
    const bool accumulate = stage3 || mb > 0 || !boundary;
    if (accumulate) {
      if (stage3 || mb > 0) copy(".h2d_accum", hardware::OpCode::HostToDevice, elements * param_bytes);
      copy(".d2h_accum", hardware::OpCode::DeviceToHost, elements * param_bytes);
    }
    if (boundary) copy(".d2h_fp32", hardware::OpCode::DeviceToHost, elements * 4.0);
    if (!s.sharding.offload_optimizer_pin_memory && stream != kComputeStream) {
      const sim::TaskId w = g.add_task(wait_task(name + ".wait_pageable", Phase::Overhead));
      g.add_dependency(last, w);
      compute_wait = w;
    }
    return last;
  }
};

// This rank's partition of the trainable parameters (elements) its optimizer updates: each
// dense gradient's 1/data_ranks, each routed expert's 1/(its partition group's ranks).
double partition_elements(const Scenario& s, const std::vector<Grad>& grads, bool expert_group) {
  double e = 0;
  for (const auto& gr : grads)
    e += gr.elements / static_cast<double>(gr.expert ? (expert_group ? s.expert_reduce_ranks() : 1) : s.data_ranks());
  return e;
}

// The optimizer step on the host (DeepSpeedCPUAdam over the fp32 partition, §E3/E4), then the
// updated partition copied host to device in fp32 on the compute stream, in `sub_groups`
// pieces (stage 3's sub_group_size; the CPU steps piece k + 1 while piece k copies). Returns
// the last copy.
// With `nvme` (ZeRO-Infinity, §E6; PartitionedOptimizerSwapper, synchronous: pipeline_read and
// pipeline_write default false) each piece first reads its fp32 master, exp_avg, exp_avg_sq and
// swapped fp32 gradient (16 bytes per parameter) and after the step writes the three states
// back (12 bytes), on the CPU's thread.
// With the parameters offloaded too (offload_param, §E5) the fp32-to-16-bit copy stays on the
// host: no copy to the GPU; with them on NVMe the new 16-bit partition is swapped out
// (`param_bytes` per element, _partitioned_params_swap_out).
struct OffloadStep {
  bool nvme_states = false;
  bool params_on_host = false;
  bool params_on_nvme = false;
  double param_bytes = 2;
};

sim::TaskId offload_optimizer_step(sim::TaskGraph& g, double elements, sim::TaskId after, std::int64_t sub_groups,
                                   const OffloadStep& how = {}) {
  const bool nvme = how.nvme_states;
  sim::TaskId last = sim::kNoTask;
  const double piece = elements / static_cast<double>(sub_groups);
  for (std::int64_t k = 0; k < sub_groups; ++k) {
    const std::string suffix = sub_groups > 1 ? fmt::format(".sub_group{}", k) : "";
    if (nvme) {
      const sim::TaskId read = g.add_task(host_task("offload.nvme_read" + suffix, hardware::OpCode::NvmeRead, piece * 16.0,
                                                    kHostStream, Phase::Optimizer));
      if (after != sim::kNoTask) g.add_dependency(after, read);
    }
    const sim::TaskId cpu = g.add_task(host_task("offload.cpu_adam" + suffix, hardware::OpCode::CpuOptimizer, piece * 4.0,
                                                 kHostStream, Phase::Optimizer));
    if (after != sim::kNoTask) g.add_dependency(after, cpu);
    if (nvme) g.add_task(host_task("offload.nvme_write" + suffix, hardware::OpCode::NvmeWrite, piece * 12.0, kHostStream,
                                   Phase::Optimizer));
    if (how.params_on_host) {
      last = cpu;
      if (how.params_on_nvme)
        last = g.add_task(host_task("offload.nvme_write_params" + suffix, hardware::OpCode::NvmeWrite,
                                    piece * how.param_bytes, kHostStream, Phase::Optimizer));
      continue;
    }
    const sim::TaskId h2d = g.add_task(host_task("offload.h2d_params" + suffix, hardware::OpCode::HostToDevice,
                                                 piece * 4.0, kComputeStream, Phase::Optimizer));
    g.add_dependency(cpu, h2d);
    last = h2d;
  }
  return last;
}

std::vector<double> grad_elements(const std::vector<Grad>& grads) {
  std::vector<double> e;
  for (const auto& gr : grads) e.push_back(gr.elements);
  return e;
}

}  // namespace

LoweredStep lower_zero12(const Scenario& s) {
  const int stage = s.zero_stage();
  LoweredStep out;
  out.groups.push_back(group_shape(s, s.layout().data(1, s.data_ranks())));
  const MeshGroups mesh = add_mesh_groups(out, s);
  sim::TaskGraph& g = out.graph;
  const ModelSpec& m = s.model;
  const bool overlap = s.sharding.overlap_comm;
  const bool hooks = stage == 2 || overlap;  // rule 55
  const CollectiveOp op = s.sharding.gradient_reduce_scatter ? CollectiveOp::ReduceScatter : CollectiveOp::AllReduce;
  const std::string op_name = s.sharding.gradient_reduce_scatter ? "reducescatter" : "allreduce";
  const std::vector<Grad> ready = grads_in_order(s, !hooks);
  const std::vector<bool> flush_before = deepspeed_ipg_flushes(grad_elements(ready), s.sharding.reduce_bucket_size);

  const bool offload = s.sharding.offload_optimizer();
  const OffloadCopies copies{s, g, dtype_bytes(s.precision.param_dtype)};
  sim::TaskId last_sync = sim::kNoTask;

  sim::RendezvousId next_rendezvous = 0;
  const std::int64_t micro_batches = s.batch.grad_accum;
  for (std::int64_t mb = 0; mb < micro_batches; ++mb) {
    const std::string prefix = micro_batch_prefix(mb, micro_batches);
    const bool reduce = stage == 2 || mb == micro_batches - 1;
    for (std::size_t l = 0; l < m.layers.size(); ++l) {
      g.add_task(forward_task(s, l, prefix));
      add_layer_collectives(g, s, l, prefix, false, mesh, next_rendezvous);
    }

    std::size_t bucket = 0, next_grad = 0;
    double bucket_bytes = 0, bucket_expert_bytes = 0;  // the open bucket's dense and expert slices
    double bucket_elements = 0, bucket_expert_elements = 0;
    bool expert_first = false;                         // its first slice is a routed expert's
    sim::TaskId last_reduction = sim::kNoTask, last_compute = sim::kNoTask;
    // Flushes the open bucket: one reduction per process group of its slices, in the order they
    // appear in it (average_tensor; routed experts over expert DP, none when that group has one
    // rank), each waiting for the compute enqueued so far; with overlap_comm the compute stream
    // then waits for the previous bucket's reductions.
    auto flush = [&]() {
      if (bucket_bytes + bucket_expert_bytes <= 0) return;
      const sim::TaskId previous = last_reduction;
      const std::size_t n = bucket++;
      bool reduced = false;
      sim::TaskId copy_wait = sim::kNoTask;
      auto reduce_over = [&](double bytes, double elements, std::uint32_t group, const char* suffix) {
        if (bytes <= 0) return;
        const std::uint32_t stream = overlap ? kCommStream : kComputeStream;
        if (group != kNoGroup) {
          last_reduction = g.add_task(collective_task(fmt::format("{}{}.bucket{}{}", prefix, op_name, n, suffix), op,
                                                      bytes, group, stream, next_rendezvous));
          if (last_compute != sim::kNoTask) g.add_dependency(last_compute, last_reduction);
          reduced = true;
        }
        if (!offload) return;
        // This rank's partition of the bucket goes to the host (whole when nothing reduces it).
        const double ranks = group == kNoGroup ? 1.0 : group == 0 ? static_cast<double>(s.data_ranks())
                                                                  : static_cast<double>(s.expert_reduce_ranks());
        sim::TaskId after = group != kNoGroup ? last_reduction : last_compute;
        const sim::TaskId c = copies.add(fmt::format("{}offload.bucket{}{}", prefix, n, suffix), elements / ranks, stream,
                                         after, false, mb, mb == micro_batches - 1, copy_wait);
        if (c != after) {
          last_reduction = c;
          reduced = true;
        }
      };
      if (expert_first) reduce_over(bucket_expert_bytes, bucket_expert_elements, mesh.edp, ".experts");
      reduce_over(bucket_bytes, bucket_elements, 0, "");
      if (!expert_first) reduce_over(bucket_expert_bytes, bucket_expert_elements, mesh.edp, ".experts");
      if (copy_wait != sim::kNoTask) last_compute = copy_wait;
      if (overlap && reduced && previous != sim::kNoTask) {
        const sim::TaskId w = g.add_task(wait_task(fmt::format("{}zero.wait_reduction{}", prefix, bucket - 2), Phase::Overhead));
        g.add_dependency(previous, w);
        last_compute = w;
      }
      bucket_bytes = bucket_expert_bytes = bucket_elements = bucket_expert_elements = 0;
    };
    auto add_to_bucket = [&](const Grad& gr) {
      if (bucket_bytes + bucket_expert_bytes <= 0) expert_first = gr.expert;
      (gr.expert ? bucket_expert_bytes : bucket_bytes) += gr.bytes;
      (gr.expert ? bucket_expert_elements : bucket_elements) += gr.elements;
    };
    // Hook path: a ready gradient joins the IPG bucket (copied into it: contiguous_gradients).
    auto on_grad = [&](sim::TaskId producer) {
      last_compute = producer;
      if (flush_before[next_grad]) flush();
      add_to_bucket(ready[next_grad]);
      ++next_grad;
    };
    for (std::size_t l = m.layers.size(); l-- > 0;) {
      add_expert_transfers(g, s, l, prefix, true, mesh, next_rendezvous);
      for (auto& seg : backward_segments(s, l, prefix, reduce && hooks ? 2.0 : 0.0)) {
        const bool grad = seg.produces_grad;
        const sim::TaskId id = g.add_task(std::move(seg.task));
        last_compute = id;
        if (grad && reduce && hooks) on_grad(id);
      }
      add_layer_collectives(g, s, l, prefix, true, mesh, next_rendezvous);
    }
    if (!reduce) continue;
    if (!hooks) {  // stage 1 without overlap_comm: reduce everything after backward, model order
      for (std::size_t i = 0; i < ready.size(); ++i) {
        if (flush_before[i]) flush();
        add_to_bucket(ready[i]);
      }
    }
    flush();  // epilogue: the remainder
    // The epilogue synchronizes the device: compute waits for every reduction.
    const sim::TaskId sync = g.add_task(wait_task(prefix + "zero.reduce_epilogue", Phase::Overhead));
    if (last_reduction != sim::kNoTask) g.add_dependency(last_reduction, sync);
    last_sync = sync;
  }
  if (sim::Task opt; optimizer_step(s, static_cast<double>(s.data_ranks()), opt)) {
    // Offloaded: DeepSpeedCPUAdam on the host, then the fp32 partition copied back (§E3).
    const sim::TaskId step = offload ? offload_optimizer_step(g, partition_elements(s, ready, mesh.edp != kNoGroup), last_sync, 1)
                                     : g.add_task(std::move(opt));
    // step() ends with one AllGather of the whole low-precision model, waited on (rule 60): one
    // per parameter group over its own partition group, the routed experts' groups last
    // (split_params_into_different_moe_groups_for_optimizer appends them).
    const auto [dense_bytes, expert_bytes] = total_param_bytes(s);
    sim::TaskId ag = g.add_task(collective_task("zero.allgather_params", CollectiveOp::AllGather, dense_bytes, 0,
                                                kCommStream, next_rendezvous));
    g.add_dependency(step, ag);
    if (expert_bytes > 0 && mesh.edp != kNoGroup) {
      const sim::TaskId e = g.add_task(collective_task("zero.allgather_params.experts", CollectiveOp::AllGather,
                                                       expert_bytes, mesh.edp, kCommStream, next_rendezvous));
      g.add_dependency(step, e);
      ag = e;
    }
    const sim::TaskId w = g.add_task(wait_task("zero.wait_allgather", Phase::Overhead));
    g.add_dependency(ag, w);
  }
  g.freeze(s.parallelism.strategy);
  return out;
}

LoweredStep lower_zero3(const Scenario& s) {
  LoweredStep out;
  out.groups.push_back(group_shape(s, s.layout().data(1, s.data_ranks())));
  const MeshGroups mesh = add_mesh_groups(out, s);
  sim::TaskGraph& g = out.graph;
  const ModelSpec& m = s.model;
  const auto& z = s.sharding;
  const std::size_t L = m.layers.size();

  // Elements and bytes each layer all-gathers (persistent tensors stay gathered, rule 66), and
  // of those bytes the routed experts' over expert DP (none when that group has one rank: the
  // experts are whole on their rank).
  std::vector<double> gather_elems(L, 0), gather_bytes(L, 0), gather_expert_bytes(L, 0);
  for (std::size_t l = 0; l < L; ++l)
    for (const auto& p : m.layers[l].params)
      if (static_cast<double>(p.numel) > z.stage3_param_persistence_threshold) {
        const bool expert = expert_partitioned(s, p);
        if (expert && mesh.edp == kNoGroup) continue;
        const double bytes = static_cast<double>(p.numel) * dtype_bytes(p.dtype);
        gather_elems[l] += static_cast<double>(p.numel);
        gather_bytes[l] += bytes;
        if (expert) gather_expert_bytes[l] += bytes;
      }
  // Kept from forward into backward when reused within max_reuse_distance elements (rule 65):
  // between layer l's forward and its backward the trace fetches every later layer twice.
  std::vector<bool> kept(L, false);
  double later = 0;
  for (std::size_t l = L; l-- > 0;) {
    kept[l] = gather_elems[l] > 0 && 2.0 * later <= z.stage3_max_reuse_distance;
    later += gather_elems[l];
  }
  // The fetch trace of one micro-batch: forward 0..L-1, then backward L-1..0 (kept layers are
  // already available in backward).
  struct Use {
    std::size_t layer;
    bool backward;
  };
  std::vector<Use> trace;
  for (std::size_t l = 0; l < L; ++l) trace.push_back({l, false});
  for (std::size_t l = L; l-- > 0;) trace.push_back({l, true});
  auto needs_fetch = [&](const Use& u) { return gather_elems[u.layer] > 0 && !(u.backward && kept[u.layer]); };

  const std::vector<Grad> ready = grads_in_order(s, false);
  const std::vector<bool> flush_before = deepspeed_ipg_flushes(grad_elements(ready), z.reduce_bucket_size, [&] {
    std::vector<int> groups;
    for (const auto& gr : ready) groups.push_back(gr.expert ? 1 : 0);
    return groups;
  }());

  const bool offload = s.sharding.offload_optimizer();
  const bool nvme = s.sharding.offload_optimizer_device == "nvme";
  const OffloadCopies copies{s, g, dtype_bytes(s.precision.param_dtype)};
  sim::TaskId last_sync = sim::kNoTask;

  sim::RendezvousId next_rendezvous = 0;
  const std::int64_t micro_batches = s.batch.grad_accum;
  for (std::int64_t mb = 0; mb < micro_batches; ++mb) {
    const std::string prefix = micro_batch_prefix(mb, micro_batches);
    std::vector<sim::TaskId> fetch_of(trace.size(), sim::kNoTask);
    std::size_t next_unissued = 0;
    double live = 0;  // elements gathered or in flight (rule 64)
    std::size_t fetches = 0;
    // One coalesced AllGather, one per partition group (all_gather_coalesced: the dense
    // parameters over DP, then the routed experts' over expert DP); the fetch is done when the
    // last ends.
    auto issue = [&](std::size_t from, std::size_t to_excl) {
      double bytes = 0, expert_bytes = 0;
      for (std::size_t q = from; q < to_excl; ++q)
        if (needs_fetch(trace[q])) {
          bytes += gather_bytes[trace[q].layer];
          expert_bytes += gather_expert_bytes[trace[q].layer];
        }
      const std::size_t n = fetches++;
      if (s.sharding.offload_param() && bytes > 0) {
        // offload_param (§E5): this rank's 16-bit partitions come to the GPU first (the
        // .to(device) of each ds_tensor in all_gather_coalesced, on the fetch stream), after an
        // NVMe swap-in when they live there (§E6).
        const double partition = (bytes - expert_bytes) / static_cast<double>(s.data_ranks()) +
                                 expert_bytes / static_cast<double>(s.expert_reduce_ranks());
        sim::TaskId read = sim::kNoTask;
        if (s.sharding.offload_param_device == "nvme")
          read = g.add_task(host_task(fmt::format("{}offload.nvme_read_params.fetch{}", prefix, n),
                                      hardware::OpCode::NvmeRead, partition, kHostStream, Phase::Communication));
        const sim::TaskId h2d = g.add_task(host_task(fmt::format("{}offload.h2d_params.fetch{}", prefix, n),
                                                     hardware::OpCode::HostToDevice, partition, kCommStream,
                                                     Phase::Communication));
        if (read != sim::kNoTask) g.add_dependency(read, h2d);
      }
      sim::Task t = collective_task(fmt::format("{}allgather.fetch{}", prefix, n), CollectiveOp::AllGather,
                                    bytes - expert_bytes, 0, kCommStream, next_rendezvous);
      t.alloc_bytes[kBufferCounter] = bytes;
      sim::TaskId id = g.add_task(std::move(t));
      if (expert_bytes > 0)
        id = g.add_task(collective_task(fmt::format("{}allgather.fetch{}.experts", prefix, n), CollectiveOp::AllGather,
                                        expert_bytes, mesh.edp, kCommStream, next_rendezvous));
      for (std::size_t q = from; q < to_excl; ++q)
        if (needs_fetch(trace[q])) {
          fetch_of[q] = id;
          live += gather_elems[trace[q].layer];
        }
    };
    auto fetch_and_prefetch = [&](std::size_t pos) {
      if (needs_fetch(trace[pos]) && fetch_of[pos] == sim::kNoTask) {
        next_unissued = std::max(next_unissued, pos);
        issue(pos, pos + 1);
        next_unissued = pos + 1;
      }
      // Prefetch the upcoming fetches in one AllGather within the bucket and live limits.
      std::size_t end = std::max(next_unissued, pos + 1);
      double budget = 0;
      while (end < trace.size()) {
        const double e = needs_fetch(trace[end]) ? gather_elems[trace[end].layer] : 0.0;
        if (budget + e > z.stage3_prefetch_bucket_size || live + budget + e > z.stage3_max_live_parameters) break;
        budget += e;
        ++end;
      }
      const std::size_t start = std::max(next_unissued, pos + 1);
      if (budget > 0 && end > start) {
        issue(start, end);
        next_unissued = end;
      }
    };

    // Forward.
    for (std::size_t pos = 0; pos < L; ++pos) {
      fetch_and_prefetch(pos);
      sim::Task t = forward_task(s, pos, prefix);
      if (needs_fetch(trace[pos]) && !kept[pos])
        t.free_bytes[kBufferCounter] = gather_bytes[pos];
      const sim::TaskId id = g.add_task(std::move(t));
      if (fetch_of[pos] != sim::kNoTask) g.add_dependency(fetch_of[pos], id);
      if (needs_fetch(trace[pos]) && !kept[pos]) live -= gather_elems[pos];
      add_layer_collectives(g, s, pos, prefix, false, mesh, next_rendezvous);
    }
    // Backward with ready-order ReduceScatter buckets.
    std::size_t next_grad = 0, bucket = 0;
    double bucket_bytes = 0, bucket_elements = 0;
    bool bucket_experts = false;  // the open bucket holds routed experts' gradients (their own bucket)
    std::vector<sim::TaskId> reductions;
    sim::TaskId last_compute = sim::kNoTask;
    // Offload: this rank's partition of the bucket crosses PCIe after its ReduceScatter
    // (partition_grads on the reduction stream), then with nvme its fp32 gradient is written to
    // the drives (swap_out_gradients).
    auto offload_bucket = [&](std::size_t n, sim::TaskId after, double ranks) {
      sim::TaskId wait = sim::kNoTask;
      const std::string name = fmt::format("{}offload.bucket{}{}", prefix, n, bucket_experts ? ".experts" : "");
      const double e = bucket_elements / ranks;
      sim::TaskId c = copies.add(name, e, kCommStream, after, true, mb, mb == micro_batches - 1, wait);
      if (wait != sim::kNoTask) last_compute = wait;
      if (nvme && mb == micro_batches - 1) {
        const sim::TaskId w = g.add_task(host_task(name + ".nvme_write_grad", hardware::OpCode::NvmeWrite, e * 4.0,
                                                   kHostStream, Phase::Communication));
        g.add_dependency(c, w);
        c = w;
      }
      return c;
    };
    auto flush = [&]() {
      if (bucket_bytes <= 0) return;
      if (bucket_experts && mesh.edp == kNoGroup) {  // whole on this rank: nothing to reduce
        if (offload) reductions.push_back(offload_bucket(bucket++, last_compute, 1.0));
        bucket_bytes = bucket_elements = 0;
        return;
      }
      // At most max_param_reduce_events = 2 outstanding plus the new one: wait for the oldest.
      if (reductions.size() >= 3) {
        const sim::TaskId w = g.add_task(wait_task(fmt::format("{}zero3.wait_reduce{}", prefix, bucket - 3), Phase::Overhead));
        g.add_dependency(reductions[reductions.size() - 3], w);
        last_compute = w;
      }
      const std::size_t n = bucket++;
      const sim::TaskId rs = g.add_task(collective_task(
          fmt::format("{}reducescatter.bucket{}{}", prefix, n, bucket_experts ? ".experts" : ""),
          CollectiveOp::ReduceScatter, bucket_bytes, bucket_experts ? mesh.edp : 0, kCommStream, next_rendezvous));
      g.add_dependency(last_compute, rs);
      reductions.push_back(
          offload ? offload_bucket(n, rs, static_cast<double>(bucket_experts ? s.expert_reduce_ranks() : s.data_ranks()))
                  : rs);
      bucket_bytes = bucket_elements = 0;
    };
    for (std::size_t pos = L; pos < trace.size(); ++pos) {
      const std::size_t l = trace[pos].layer;
      fetch_and_prefetch(pos);
      add_expert_transfers(g, s, l, prefix, true, mesh, next_rendezvous);
      auto segments = backward_segments(s, l, prefix, 2.0);
      for (std::size_t k = 0; k < segments.size(); ++k) {
        auto& seg = segments[k];
        if (k + 1 == segments.size() && gather_elems[l] > 0)
          seg.task.free_bytes[kBufferCounter] = gather_bytes[l];
        const bool grad = seg.produces_grad;
        const sim::TaskId id = g.add_task(std::move(seg.task));
        if (k == 0 && fetch_of[pos] != sim::kNoTask) g.add_dependency(fetch_of[pos], id);
        if (k == 0 && kept[l]) {
          // Kept layers were gathered in forward.
          if (fetch_of[l] != sim::kNoTask) g.add_dependency(fetch_of[l], id);
        }
        last_compute = id;
        if (grad) {
          if (flush_before[next_grad]) flush();
          bucket_bytes += ready[next_grad].bytes;
          bucket_elements += ready[next_grad].elements;
          bucket_experts = ready[next_grad].expert;
          ++next_grad;
        }
      }
      if (gather_elems[l] > 0) live -= gather_elems[l];
      add_layer_collectives(g, s, l, prefix, true, mesh, next_rendezvous);
    }
    flush();
    const sim::TaskId sync = g.add_task(wait_task(prefix + "zero3.reduce_epilogue", Phase::Overhead));
    if (!reductions.empty()) g.add_dependency(reductions.back(), sync);
    last_sync = sync;
  }
  if (sim::Task opt; optimizer_step(s, static_cast<double>(s.data_ranks()), opt)) {
    if (offload) {
      // Offloaded (§E4): per sub-group of kZero3SubGroupSize elements, CPU Adam then the fp32
      // partition copied into the GPU's 16-bit one; no AllGather (rule 68).
      const double e = partition_elements(s, ready, mesh.edp != kNoGroup);
      const auto pieces = static_cast<std::int64_t>(std::max(1.0, std::ceil(e / kZero3SubGroupSize)));
      offload_optimizer_step(g, e, last_sync, pieces,
                             {nvme, s.sharding.offload_param(), s.sharding.offload_param_device == "nvme",
                              dtype_bytes(s.precision.param_dtype)});
    } else {
      g.add_task(std::move(opt));
    }
  }
  g.freeze("zero3");
  return out;
}

// stage_1_and_2.py allocates the IPG buffer at its full reduce_bucket_size, twice with
// overlap_comm (one reducing while the next fills).
double zero_buffer_bytes(const Scenario& s, double) {
  return s.sharding.reduce_bucket_size * s.precision.reduce_bytes(s.precision.param_dtype) *
         (s.sharding.overlap_comm ? 2.0 : 1.0);
}

// ZeRO-3 keeps small tensors gathered everywhere (param_persistence_threshold, rule 66).
bool zero3_persistent_param(const Scenario& s, double numel) {
  return numel <= s.sharding.stage3_param_persistence_threshold;
}

const std::vector<ScenarioField>& zero_knob_fields() {
  using T = FieldType;
  static const std::vector<ScenarioField> knobs = {
      {.object = "parallelism", .key = "reduce_bucket_size", .type = T::Number,
       .doc = "DeepSpeed's IPG gradient bucket (zero_optimization.reduce_bucket_size)", .unit = "elements",
       .check = Check::Positive, .knob = true, STEPSIM_FIELD_ACCESS(double, sharding.reduce_bucket_size)},
      {.object = "parallelism", .key = "overlap_comm", .type = T::Boolean,
       .doc = "reduce gradients on a side stream while backward runs, one reduction in flight (DeepSpeed's "
              "overlap_comm; its config.py turns it on for stage 3)",
       .default_doc = "true for zero3, false for zero1 and zero2", .knob = true,
       STEPSIM_FIELD_ACCESS(bool, sharding.overlap_comm), .fallback = [](const Scenario& s) -> FieldValue {
         const StrategyEntry& entry = strategy_of(s);
         return entry.family == StrategyFamily::DeepSpeed && entry.zero_stage == 3;  // config.py overlap_comm_valid
       }},
      {.object = "parallelism", .key = "gradient_reduce_scatter", .type = T::Boolean,
       .doc = "ZeRO-1/2: a true ReduceScatter of each bucket instead of DeepSpeed's whole-bucket AllReduce",
       .knob = true, STEPSIM_FIELD_ACCESS(bool, sharding.gradient_reduce_scatter)},
      {.object = "parallelism", .key = "stage3_prefetch_bucket_size", .type = T::Number,
       .doc = "ZeRO-3: parameters prefetched ahead of use", .unit = "elements", .check = Check::NonNegative,
       .knob = true, STEPSIM_FIELD_ACCESS(double, sharding.stage3_prefetch_bucket_size)},
      {.object = "parallelism", .key = "stage3_max_live_parameters", .type = T::Number,
       .doc = "ZeRO-3: the most gathered parameters alive at once", .unit = "elements", .check = Check::NonNegative,
       .knob = true, STEPSIM_FIELD_ACCESS(double, sharding.stage3_max_live_parameters)},
      {.object = "parallelism", .key = "stage3_max_reuse_distance", .type = T::Number,
       .doc = "ZeRO-3: a gathered parameter reused within this distance is kept instead of released",
       .unit = "elements", .check = Check::NonNegative, .knob = true,
       STEPSIM_FIELD_ACCESS(double, sharding.stage3_max_reuse_distance)},
      {.object = "parallelism", .key = "stage3_param_persistence_threshold", .type = T::Number,
       .doc = "ZeRO-3: tensors smaller than this stay unsharded (persistent) on every rank", .unit = "elements",
       .check = Check::NonNegative, .knob = true, STEPSIM_FIELD_ACCESS(double, sharding.stage3_param_persistence_threshold)},
      {.object = "parallelism", .key = "offload_optimizer", .type = T::Object,
       .doc = "DeepSpeed's zero_optimization.offload_optimizer: the fp32 master weights, Adam states and fp32 gradient "
              "partition live in host memory and DeepSpeedCPUAdam updates them; gradients cross PCIe after their "
              "reduction, the updated partition comes back before the parameter AllGather (semantics-parallel.md "
              "§E3, §E4); needs the profile's `host` facts",
       .default_doc = "none (device \"none\")", .knob = true,
       // Read and echoed as a nested object by the table (read_fields, echo_fields); not echoed
       // when nothing is offloaded.
       .echo = [](const Scenario& s) -> std::optional<FieldValue> {
         if (!s.sharding.offload_optimizer()) return std::nullopt;
         return FieldValue(true);
       }},
      {.object = "parallelism.offload_optimizer", .key = "device", .type = T::Choice,
       .doc = "\"cpu\" (ZeRO-Offload) or \"nvme\" (ZeRO-Infinity: zero3 swaps the states to the node's NVMe between "
              "steps; zero1/zero2 treat any device but \"none\" as cpu, stage_1_and_2.py); the optimizer runs on the "
              "CPU either way",
       .choices = [] { return std::vector<std::string>{"none", "cpu", "nvme"}; }, .applies_doc = "zero1, zero2, zero3",
       STEPSIM_FIELD_ACCESS(std::string, sharding.offload_optimizer_device)},
      {.object = "parallelism.offload_optimizer", .key = "pin_memory", .type = T::Boolean,
       .doc = "pinned host buffers for the gradient partition (offload_config.py default false): a copy into pageable "
              "memory is synchronous, so the GPU's stream waits for it",
       .applies_doc = "zero1, zero2, zero3", STEPSIM_FIELD_ACCESS(bool, sharding.offload_optimizer_pin_memory)},
      {.object = "parallelism", .key = "offload_param", .type = T::Object,
       .doc = "ZeRO-3's zero_optimization.offload_param (ZeRO-Infinity): the 16-bit parameter partitions live in host "
              "memory or on NVMe; every fetch copies the partition to the GPU before its AllGather, and the optimizer's "
              "fp32-to-16-bit copy stays on the host (semantics-parallel.md §E5, §E6); with offload_optimizer",
       .default_doc = "none (device \"none\")", .knob = true,
       .echo = [](const Scenario& s) -> std::optional<FieldValue> {
         if (!s.sharding.offload_param()) return std::nullopt;
         return FieldValue(true);
       }},
      {.object = "parallelism.offload_param", .key = "device", .type = T::Choice,
       .doc = "\"cpu\" or \"nvme\" (swapped in through pinned buffers before the copy to the GPU)",
       .choices = [] { return std::vector<std::string>{"none", "cpu", "nvme"}; }, .applies_doc = "zero3",
       STEPSIM_FIELD_ACCESS(std::string, sharding.offload_param_device)},
      {.object = "parallelism.offload_param", .key = "pin_memory", .type = T::Boolean,
       .doc = "pinned host partitions (offload_config.py default false); the copies to the GPU are asynchronous either "
              "way on the fetch stream", .applies_doc = "zero3", STEPSIM_FIELD_ACCESS(bool, sharding.offload_param_pin_memory)},
  };
  return knobs;
}

}  // namespace stepsim::models
