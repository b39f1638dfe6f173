// SPDX-License-Identifier: Apache-2.0
// PyTorch DistributedDataParallel, steady state (after the bucket rebuild).
//
// Rules modelled (shared/reference/semantics.md §A):
//  - buckets are rebuilt in gradient-ready order with limits [first_bucket, bucket_cap]
//    (rule 13; reducer.hpp kDefaultFirstBucketBytes = 1 MiB, kDefaultBucketBytesCap = 25 MiB);
//    tensors are never split, dtypes never share a bucket (rules 3-4);
//  - each gradient is copied into its bucket and divided by the world size in the same kernel
//    on the compute stream (rule 16); gradient_as_bucket_view replaces it with an in-place div_;
//  - buckets are all-reduced strictly in index order on the process group's single NCCL
//    stream, which waits for the compute work enqueued before the launch (rules 18, 20);
//  - finalize_backward makes the compute stream wait for every bucket and copies the buckets
//    back into .grad (rule 22; skipped with gradient_as_bucket_view), and optimizer.step()
//    follows on the compute stream;
//  - no_sync(): micro-batches other than the last launch no communication (rule 24);
//    `sync_every_micro_batch` syncs each one instead.
// With use_distributed_optimizer, Megatron-LM's distributed optimizer over the same buckets
// (semantics-parallel.md §A9–A11; megatron/core/distributed/param_and_grad_buffer.py,
// megatron/core/optimizer/distrib_optimizer.py):
//  - each bucket is reduce-scattered (start_grad_sync), in the same order and overlap;
//  - the optimizer updates this rank's 1/(dp × cp) shard of the parameters;
//  - the bucket's parameters (in their own dtype) are all-gathered: right after the step,
//    the compute stream waiting for all of them (step_with_ready_grads), or with
//    overlap_param_gather ahead of the next forward, played here at the start of the step
//    (the steady state): the first bucket's gather dispatched by the first forward pre-hook,
//    each later one by the pre-hook of the module that waits for the one before (one bucket
//    of prefetch, in reverse bucket order), each layer's forward waiting for its bucket.
#include "hardware/task_cost.hpp"
#include "models/expert_parallel.hpp"
#include "models/scenario.hpp"
#include "models/scenario_fields.hpp"
#include "models/strategy/buckets.hpp"
#include "models/strategy/compute_tasks.hpp"
#include "models/strategy/strategy.hpp"

#include <fmt/format.h>

namespace stepsim::models {

namespace {

constexpr double kMiB = 1024.0 * 1024.0;
constexpr std::uint32_t kExpertKey = 0x100;  // BucketInput::dtype_key bit of the routed experts' gradients

struct GradRef {
  std::size_t layer;
  std::size_t param;
};

}  // namespace

LoweredStep lower_ddp(const Scenario& s) {
  LoweredStep out;
  out.groups.push_back(group_shape(s, s.layout().data(1, s.data_ranks())));
  const MeshGroups mesh = add_mesh_groups(out, s);
  const ModelSpec& m = s.model;

  // Gradient-ready order of the trainable tensors: layers in reverse, tensors in each
  // layer's ready order.
  std::vector<GradRef> ready;
  std::vector<BucketInput> inputs;
  double grad_bytes_total = 0;
  for (const auto& [l, idx] : trainable_ready_order(m)) {
    const ParamTensor& p = m.layers[l].params[idx];
    // The bucket dtype is the gradient's; a bf16 comm hook (precision.reduce_dtype) halves fp32 buckets.
    const double bytes = static_cast<double>(p.numel) * s.precision.reduce_bytes(p.dtype);
    ready.push_back({l, idx});
    // Under expert parallelism the routed experts' gradients fill buckets of their own, reduced
    // over the expert-data-parallel group (Megatron-LM's separate expert buffers,
    // semantics-parallel.md §D1): a key of their own, as a dtype's.
    const bool expert = expert_partitioned(s, p);
    inputs.push_back({bytes, static_cast<std::uint32_t>(p.dtype) | (expert ? kExpertKey : 0u)});
    grad_bytes_total += bytes;
  }

  const auto assignment = assign_buckets(
      inputs, {s.parallelism.first_bucket_mb * kMiB, s.parallelism.bucket_cap_mb * kMiB});
  const bool dist_opt = s.parallelism.use_distributed_optimizer;
  const hardware::CollectiveOp reduce_op =
      dist_opt ? hardware::CollectiveOp::ReduceScatter : hardware::CollectiveOp::AllReduce;
  // The distributed optimizer's gathers: each bucket's parameters in their own dtype, over the
  // bucket's group (-1: none, a routed expert held by one rank).
  std::vector<double> bucket_param_bytes(assignment.size(), 0);
  std::vector<std::int32_t> bucket_group(assignment.size(), 0);
  // bucket_of[layer][param] for the tensors that have a gradient.
  std::vector<std::vector<std::size_t>> bucket_of(m.layers.size());
  for (std::size_t l = 0; l < m.layers.size(); ++l) bucket_of[l].assign(m.layers[l].params.size(), 0);
  for (std::size_t b = 0; b < assignment.size(); ++b) {
    out.buckets.push_back({assignment[b].bytes, assignment[b].tensors.size()});
    for (std::size_t i : assignment[b].tensors) {
      bucket_of[ready[i].layer][ready[i].param] = b;
      const ParamTensor& p = m.layers[ready[i].layer].params[ready[i].param];
      bucket_param_bytes[b] += static_cast<double>(p.numel) * dtype_bytes(p.dtype);
    }
    if ((inputs[assignment[b].tensors.front()].dtype_key & kExpertKey) != 0)
      bucket_group[b] = mesh.edp == kNoGroup ? -1 : static_cast<std::int32_t>(mesh.edp);
  }


  sim::TaskGraph& g = out.graph;
  const std::int64_t micro_batches = s.batch.grad_accum;
  sim::RendezvousId next_rendezvous = 0;
  const auto gather = [&](std::size_t b, const std::string& prefix) {
    return g.add_task(collective_task(fmt::format("{}dist_opt.allgather.bucket{}", prefix, b),
                                      hardware::CollectiveOp::AllGather, bucket_param_bytes[b],
                                      static_cast<std::uint32_t>(bucket_group[b]), kCommStream, next_rendezvous));
  };  for (std::int64_t mb = 0; mb < micro_batches; ++mb) {
    const std::string prefix = micro_batch_prefix(mb, micro_batches);
    const bool sync = mb == micro_batches - 1 || s.parallelism.sync_every_micro_batch;
    // overlap_param_gather: the buckets' gathers ahead of the first micro-batch's forward,
    // from the last bucket (the first layers) down, one bucket of prefetch.
    const bool gather_ahead = dist_opt && s.parallelism.overlap_param_gather && mb == 0;
    std::vector<sim::TaskId> gathered(assignment.size(), sim::kNoTask);
    std::size_t gathers_issued = 0;  // buckets B-1, B-2, ... already gathered
    const auto issue_gathers_to = [&](std::size_t b) {
      for (; gathers_issued < assignment.size() && assignment.size() - gathers_issued > b; ++gathers_issued) {
        const std::size_t k = assignment.size() - 1 - gathers_issued;
        if (bucket_group[k] >= 0) gathered[k] = gather(k, prefix);
      }
    };
    for (std::size_t l = 0; l < m.layers.size(); ++l) {
      std::size_t need = assignment.size();  // the lowest bucket index of this layer's gradients
      if (gather_ahead)
        for (std::size_t i = 0; i < m.layers[l].params.size(); ++i)
          if (m.layers[l].params[i].trainable) need = std::min(need, bucket_of[l][i]);
      if (need < assignment.size()) issue_gathers_to(need > 0 ? need - 1 : 0);  // and the next one
      const sim::TaskId fwd = g.add_task(forward_task(s, l, prefix));
      if (need < assignment.size() && gathered[need] != sim::kNoTask) g.add_dependency(gathered[need], fwd);
      add_layer_collectives(g, s, l, prefix, false, mesh, next_rendezvous);
    }

    // The bucket copy (or in-place div_ with gradient_as_bucket_view) reads and writes each
    // gradient once, only when hooks are armed (not under no_sync).
    // Gradient accumulation adds each new gradient into .grad (or the fp32 buffer) before any
    // hook sees it: grad_accumulation_bytes, priced per micro-batch by backward_segments.
    const double copy = sync ? 2.0 : 0.0;
    std::vector<sim::TaskId> last_grad_task(assignment.size(), sim::kNoTask);
    std::vector<std::size_t> left(assignment.size());  // gradients each bucket still waits for
    for (std::size_t b = 0; b < assignment.size(); ++b) left[b] = assignment[b].tensors.size();
    std::size_t next_bucket = 0;
    sim::TaskId last_collective = sim::kNoTask;
    // Tasks are added in host launch order (sim::RunOptions::launch_queues relies on it): a
    // bucket's AllReduce is launched from the hook of its last gradient, right after the
    // kernel producing it, once every earlier bucket is launched (rule 18).
    for (std::size_t l = m.layers.size(); l-- > 0;) {
      add_expert_transfers(g, s, l, prefix, true, mesh, next_rendezvous);
      for (auto& seg : backward_segments(s, l, prefix, copy, mb)) {
        const sim::TaskId id = g.add_task(std::move(seg.task));
        if (!sync || !seg.produces_grad) continue;
        const std::size_t b = bucket_of[l][seg.param];
        last_grad_task[b] = id;
        --left[b];
        for (; next_bucket < assignment.size() && left[next_bucket] == 0; ++next_bucket) {
          const std::size_t first = assignment[next_bucket].tensors.front();
          const bool expert = (inputs[first].dtype_key & kExpertKey) != 0;
          if (expert && mesh.edp == kNoGroup) continue;  // ep = dp × cp: each expert on one rank
          last_collective = g.add_task(collective_task(fmt::format("{}{}.{}bucket{}", prefix,
                                                                   hardware::collective_op_name(reduce_op),
                                                                   expert ? "expert_" : "", next_bucket),
                                                       reduce_op,
                                                       assignment[next_bucket].bytes, expert ? mesh.edp : 0,
                                                       kCommStream, next_rendezvous));
          // The NCCL stream waits for the compute work enqueued before this launch, i.e. up to
          // the bucket's last-ready gradient.
          g.add_dependency(last_grad_task[next_bucket], last_collective);
        }
      }
      add_layer_collectives(g, s, l, prefix, true, mesh, next_rendezvous);
    }
    if (!sync) continue;
    // finalize_backward: wait only when .grad already views the buckets, else copy back.
    sim::Task fin = wait_task(prefix + (s.parallelism.gradient_as_bucket_view ? "ddp.finalize_backward"
                                                                              : "ddp.copy_bucket_to_grad"),
                              Phase::Overhead);
    if (!s.parallelism.gradient_as_bucket_view) fin.bytes = 2.0 * grad_bytes_total;
    const sim::TaskId fin_id = g.add_task(std::move(fin));
    if (last_collective != sim::kNoTask) g.add_dependency(last_collective, fin_id);
  }
  if (sim::Task opt; optimizer_step(s, dist_opt ? static_cast<double>(s.shard_ranks()) : 1.0, opt)) {
    const sim::TaskId step = g.add_task(std::move(opt));
    if (dist_opt && !s.parallelism.overlap_param_gather) {
      // step_with_ready_grads: every bucket's gather after the step, the next forward waiting.
      std::vector<sim::TaskId> gathers;
      for (std::size_t b = 0; b < assignment.size(); ++b) {
        if (bucket_group[b] < 0) continue;
        gathers.push_back(gather(b, ""));
        g.add_dependency(step, gathers.back());
      }
      const sim::TaskId wait = g.add_task(wait_task("dist_opt.wait_allgather", Phase::Overhead));
      for (sim::TaskId ag : gathers) g.add_dependency(ag, wait);
    }
  }
  g.freeze("ddp");
  return out;
}

// The bucket buffers: a second copy of every trainable gradient, unless the gradients are views
// into the buckets (gradient_as_bucket_view, semantics.md §A.6 rule 23).
double ddp_buffer_bytes(const Scenario& s, double trainable_grad_bytes) {
  return s.parallelism.gradient_as_bucket_view ? 0.0 : trainable_grad_bytes;
}

const std::vector<ScenarioField>& ddp_knob_fields() {
  using T = FieldType;
  static const std::vector<ScenarioField> knobs = {
      {.object = "parallelism", .key = "bucket_cap_mb", .type = T::Number,
       .doc = "DDP bucket cap (PyTorch's bucket_cap_mb; reducer.hpp kDefaultBucketBytesCap)", .unit = "MiB",
       .check = Check::Positive, .knob = true, STEPSIM_FIELD_ACCESS(double, parallelism.bucket_cap_mb)},
      {.object = "parallelism", .key = "first_bucket_mb", .type = T::Number,
       .doc = "the first (rebuilt) bucket's cap (reducer.hpp kDefaultFirstBucketBytes)", .unit = "MiB",
       .check = Check::Positive, .knob = true, STEPSIM_FIELD_ACCESS(double, parallelism.first_bucket_mb)},
      {.object = "parallelism", .key = "sync_every_micro_batch", .type = T::Boolean,
       .doc = "false: no_sync() on every micro-batch but the last (gradients accumulate locally); true: every "
              "micro-batch synchronises",
       .knob = true, STEPSIM_FIELD_ACCESS(bool, parallelism.sync_every_micro_batch)},
      {.object = "parallelism", .key = "gradient_as_bucket_view", .type = T::Boolean,
       .doc = "PyTorch's flag: gradients are views into the buckets (no bucket copy, no copy-back, no second gradient "
              "buffer)",
       .knob = true, STEPSIM_FIELD_ACCESS(bool, parallelism.gradient_as_bucket_view)},
      {.object = "parallelism", .key = "use_distributed_optimizer", .type = T::Boolean,
       .doc = "Megatron-LM's distributed optimizer (--use-distributed-optimizer): buckets reduce-scattered, the "
              "optimizer states sharded over the DP group, the parameters all-gathered after the step",
       .knob = true, STEPSIM_FIELD_ACCESS(bool, parallelism.use_distributed_optimizer)},
      {.object = "parallelism", .key = "overlap_param_gather", .type = T::Boolean,
       .doc = "Megatron-LM's --overlap-param-gather (needs use_distributed_optimizer): the parameter AllGathers run "
              "ahead of the next forward, bucket by bucket, instead of after the step",
       .knob = true, STEPSIM_FIELD_ACCESS(bool, parallelism.overlap_param_gather)},
  };
  return knobs;
}

}  // namespace stepsim::models
