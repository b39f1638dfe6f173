// SPDX-License-Identifier: Apache-2.0
// PyTorch FSDP (FSDP2 `fully_shard` by default, FSDP1 switches) and HSDP
// (shared/reference/semantics.md §B).
//
// Units: the root unit owns the parameters outside transformer blocks (embeddings, final
// norm, LM head); each unit of `unit_layers` blocks is one FSDP param group with one AllGather
// and one ReduceScatter (rules 31, 45). unit_layers = 0 makes the whole model one unit.
// Forward: AllGather of unit i then copy-out on the compute stream; the CPU runs ahead, so the
// AllGather of unit i+1 overlaps unit i (implicit prefetch), but it waits for the copy-out of
// unit i−1: at most ~2 unsharded units (FSDP2 rule 47; FSDP1's limit_all_gathers, rule 36,
// bounds it the same way). Without the limiter the CPU issues every AllGather at once; what
// stops them is HBM: the caching allocator, out of memory, frees its cached blocks once their
// streams pass them and retries (c10/cuda/CUDACachingAllocator.cpp, release_cached_blocks →
// synchronize_and_free_events), so each AllGather waits for memory (sim::MemoryLimit that
// run() sets to the usable HBM; the FSDP paper, Zhao et al. VLDB 2023 §4.3, describes these
// retries as the reason for the limiter).
// reshard_after_forward: True frees a unit after forward and re-gathers it in backward; False
// keeps it; int k keeps a k-rank shard and re-gathers over k ranks; default: True except the
// root (rule 49); "torchtitan": also keeps the last block.
// Backward: pre-backward unshards (if resharded) and prefetches the next unit's AllGather
// before this unit's compute (FSDP2 and BACKWARD_PRE; BACKWARD_POST issues it after the
// compute, before the ReduceScatter; none: on demand), rules 37–38, 50. Post-backward issues
// the unit's ReduceScatter after its gradients; in FSDP2 the compute stream first waits for the
// previous unit's ReduceScatter (one ahead at most, rule 50). AllGathers and ReduceScatters of
// one process group share its NCCL stream (rule 20), in issue order.
// HSDP: the ReduceScatter runs in the shard group (a node by default), then an AllReduce of the
// shard across replicas on its own stream (rules 39, 50); with defer_replica_all_reduce it
// runs only on the last micro-batch (set_requires_all_reduce(False), rule 52).
// Gradient accumulation: set_requires_gradient_sync(False) skips every reduction but the last
// micro-batch's (rule 52); parameters are still resharded after each backward, and the
// unsharded gradients accumulate from the first micro-batch's backward to that reduction.
#include "models/expert_parallel.hpp"
#include "models/float8.hpp"
#include "models/scenario.hpp"
#include "models/scenario_fields.hpp"
#include "models/strategy/compute_tasks.hpp"
#include "models/strategy/strategy.hpp"
#include "sim/support/error.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace stepsim::models {

namespace {

using hardware::CollectiveOp;

constexpr std::uint32_t kShardGroup = 0;
constexpr std::uint32_t kReshardGroup = 1;
constexpr std::uint32_t kReplicaGroup = 2;

struct Unit {
  std::string name;
  std::vector<std::size_t> layers;  // forward order
  bool root = false;
  double param_bytes = 0;  // unsharded, in the parameter dtype (FP8 for float8 all-gather; AllGather buffer)
  double grad_bytes = 0;   // unsharded gradients in the reduce dtype (ReduceScatter buffer)
  // Of those, the routed experts' under expert parallelism: gathered and reduced over the
  // expert-data-parallel group (torchtitan's experts unit on the efsdp mesh).
  double expert_param_bytes = 0;
  double expert_grad_bytes = 0;
  // Routed experts' gradients held whole on their rank (no expert shard group: ep = dp × cp, or
  // the shard group under hsdp), in none of the above: only hsdp's replicas reduce them.
  double whole_expert_grad_bytes = 0;
  // Under cpu_offload: this rank's shard of the unit's parameters and of its trainable ones
  // (elements), what crosses PCIe in fp32 before each AllGather and after the reduction.
  double shard_elements = 0;
  double grad_shard_elements = 0;
  bool reshard = true;     // reshard after forward
};

std::vector<Unit> make_units(const Scenario& s) {
  const ModelSpec& m = s.model;
  const auto& z = s.sharding;
  std::vector<Unit> units;
  Unit root{"root", {}, true};
  if (z.unit_layers == 0) {
    root.name = "model";
    for (std::size_t l = 0; l < m.layers.size(); ++l) root.layers.push_back(l);
  } else {
    for (std::size_t l = 0; l < m.layers.size(); ++l) {
      if (m.layers[l].root) {
        root.layers.push_back(l);
        continue;
      }
      if (units.empty() || static_cast<std::int64_t>(units.back().layers.size()) >= z.unit_layers)
        units.push_back(Unit{fmt::format("unit{}", units.size()), {}, false});
      units.back().layers.push_back(l);
    }
  }
  for (auto* u : [&] {
         std::vector<Unit*> all{&root};
         for (auto& x : units) all.push_back(&x);
         return all;
       }()) {
    for (std::size_t l : u->layers)
      for (std::size_t i = 0; i < m.layers[l].params.size(); ++i) {
        const ParamTensor& p = m.layers[l].params[i];
        // Float8Linear weights travel in FP8 under float8 all-gather (models/float8.hpp).
        const double gathered = static_cast<double>(p.numel) * all_gather_bytes_per_element(s, l, i);
        const double reduced = p.trainable ? static_cast<double>(p.numel) * s.precision.reduce_bytes(p.dtype) : 0.0;
        const double shard_numel =
            static_cast<double>(p.numel) /
            static_cast<double>(expert_partitioned(s, p) ? s.expert_shard_ranks() : s.shard_ranks());
        u->shard_elements += shard_numel;
        if (p.trainable) u->grad_shard_elements += shard_numel;
        // ep = the experts' shard group: each routed expert lives whole on one rank of it,
        // neither gathered nor reduce-scattered (no buffer either).
        if (expert_partitioned(s, p) && s.expert_reduce_ranks() == 1) {
          u->whole_expert_grad_bytes += reduced;
          continue;
        }
        u->param_bytes += gathered;
        u->grad_bytes += reduced;
        if (expert_partitioned(s, p)) {
          u->expert_param_bytes += gathered;
          u->expert_grad_bytes += reduced;
        }
      }
  }
  for (std::size_t i = 0; i < units.size(); ++i) {
    switch (z.reshard_after_forward) {
      case ReshardMode::Default:
      case ReshardMode::True:
      case ReshardMode::Group: units[i].reshard = true; break;
      case ReshardMode::False: units[i].reshard = false; break;
      case ReshardMode::Torchtitan: units[i].reshard = i + 1 < units.size(); break;
    }
  }
  root.reshard = z.reshard_after_forward == ReshardMode::True;
  if (root.param_bytes > 0) units.insert(units.begin(), root);
  return units;
}

}  // namespace

LoweredStep lower_fsdp(const Scenario& s) {
  LoweredStep out;
  const auto& z = s.sharding;
  const bool hsdp = strategy_of(s).hybrid;
  const bool fsdp2 = z.fsdp_version == "fsdp2";
  const RankLayout layout = s.layout();
  const std::int64_t shard = s.shard_ranks();
  out.groups.push_back(group_shape(s, layout.data(1, shard)));
  const std::int64_t k = z.reshard_after_forward == ReshardMode::Group ? z.reshard_group : 1;
  out.groups.push_back(group_shape(s, layout.data(1, k)));
  if (hsdp) {
    // One replica group per position in the shard group (the data ranks at distance shard); a
    // node's replica groups run their AllReduces at once, sharing its NICs.
    out.groups.push_back(group_shape(s, layout.data(shard, s.data_ranks() / shard)));
    out.replica_group = static_cast<std::int32_t>(out.groups.size() - 1);
  }
  const MeshGroups mesh = add_mesh_groups(out, s);
  std::uint32_t expert_replica_group = kReplicaGroup;
  if (hsdp && s.parallelism.ep > 1) {
    out.groups.push_back(out.groups[kReplicaGroup]);
    expert_replica_group = static_cast<std::uint32_t>(out.groups.size() - 1);
    out.edp_replica_group = static_cast<std::int32_t>(expert_replica_group);
  }

  const std::vector<Unit> units = make_units(s);
  const ModelSpec& m = s.model;
  std::vector<int> unit_of(m.layers.size(), -1);
  for (std::size_t u = 0; u < units.size(); ++u)
    for (std::size_t l : units[u].layers) unit_of[l] = static_cast<int>(u);
  auto first_layer = [&](std::size_t u) { return units[u].layers.front(); };
  auto last_layer = [&](std::size_t u) { return units[u].layers.back(); };

  sim::TaskGraph& g = out.graph;
  sim::RendezvousId next_rendezvous = 0;
  const std::int64_t micro_batches = s.batch.grad_accum;
  sim::TaskId last_rs = sim::kNoTask, last_ar = sim::kNoTask, last_fin = sim::kNoTask;
  // Unsharded gradients by unit: they exist from the unit's first gradient to its
  // ReduceScatter, so across the micro-batches that skip the reduction they accumulate
  // unsharded and stay (rule 44 no_sync; rule 52 set_requires_gradient_sync(False)).
  std::vector<double> unsharded_grads(units.size(), 0);
  for (std::int64_t mb = 0; mb < micro_batches; ++mb) {
    const std::string prefix = micro_batch_prefix(mb, micro_batches);
    const bool sync = mb == micro_batches - 1 || s.parallelism.sync_every_micro_batch;
    const bool replica_sync = sync && (!z.defer_replica_all_reduce || mb == micro_batches - 1);

    // A unit's collective: over the shard group, and under expert parallelism its routed
    // experts' share over the expert-data-parallel group right after it on the same stream (no
    // collective when that group has one rank). The first allocates `alloc` buffer bytes, the
    // last frees `free`; returns (first, last).
    auto unit_collective = [&](const std::string& name, CollectiveOp op, double bytes, double expert_bytes,
                               std::uint32_t group, double alloc, double free) {
      const bool experts = expert_bytes > 0 && mesh.edp != kNoGroup;
      sim::Task dense = collective_task(name, op, bytes - (experts ? expert_bytes : 0.0), group, kCommStream,
                                        next_rendezvous);
      dense.alloc_bytes[kBufferCounter] = alloc;
      if (!experts) {
        dense.free_bytes[kBufferCounter] = free;
        const sim::TaskId id = g.add_task(std::move(dense));
        return std::pair{id, id};
      }
      const sim::TaskId first = g.add_task(std::move(dense));
      sim::Task e = collective_task(name + ".experts", op, expert_bytes, mesh.edp, kCommStream, next_rendezvous);
      e.free_bytes[kBufferCounter] = free;
      return std::pair{first, g.add_task(std::move(e))};
    };
    auto all_gather = [&](std::size_t u, bool backward) {
      const bool small_group = backward && k > 1;
      // cpu_offload: the fp32 shard comes from host memory first (all_gather_inputs'
      // .to(device, non_blocking=True), §E8), then is cast and gathered.
      sim::TaskId h2d = sim::kNoTask;
      if (z.cpu_offload && units[u].shard_elements > 0)
        h2d = g.add_task(host_task(fmt::format("{}offload.h2d.{}{}", prefix, units[u].name, backward ? ".bwd" : ""),
                                   hardware::OpCode::HostToDevice, 4.0 * units[u].shard_elements, kHostCopyStream,
                                   Phase::Communication));
      const auto [first, last] = unit_collective(fmt::format("{}allgather.{}{}", prefix, units[u].name, backward ? ".bwd" : ""),
                                                 CollectiveOp::AllGather, units[u].param_bytes, units[u].expert_param_bytes,
                                                 small_group ? kReshardGroup : kShardGroup, units[u].param_bytes, 0.0);
      if (h2d != sim::kNoTask) g.add_dependency(h2d, first);
      return last;
    };
    auto copy_out = [&](std::size_t u, sim::TaskId ag, bool backward) {
      sim::Task t = wait_task(fmt::format("{}fsdp.copy_out.{}{}", prefix, units[u].name, backward ? ".bwd" : ""),
                              Phase::Overhead);
      t.bytes = 2.0 * units[u].param_bytes;  // split_with_sizes_copy: read + write
      const sim::TaskId id = g.add_task(std::move(t));
      g.add_dependency(ag, id);
      return id;
    };

    // ---- forward ----
    std::vector<sim::TaskId> fwd_copy_out(units.size(), sim::kNoTask);
    std::vector<sim::TaskId> fwd_free(units.size(), sim::kNoTask);  // task whose end frees unit u
    std::vector<std::size_t> order;  // units in forward order of first use
    for (std::size_t l = 0; l < m.layers.size(); ++l) {
      const int u = unit_of[l];
      if (u >= 0 && fwd_copy_out[static_cast<std::size_t>(u)] == sim::kNoTask) {
        const auto uu = static_cast<std::size_t>(u);
        order.push_back(uu);
        const sim::TaskId ag = all_gather(uu, false);
        // Memory bound: this AllGather waits for the copy-out (FSDP2) or the free (FSDP1
        // limiter) of the unit two places earlier.
        if (order.size() >= 3 && (fsdp2 || z.limit_all_gathers)) {
          const std::size_t earlier = order[order.size() - 3];
          const sim::TaskId gate = fsdp2 ? fwd_copy_out[earlier] : fwd_free[earlier];
          if (gate != sim::kNoTask) g.add_dependency(gate, ag);
        }
        fwd_copy_out[uu] = copy_out(uu, ag, false);
      }
      sim::Task t = forward_task(s, l, prefix);
      if (u >= 0 && l == last_layer(static_cast<std::size_t>(u)) && units[static_cast<std::size_t>(u)].reshard)
        t.free_bytes[kBufferCounter] = units[static_cast<std::size_t>(u)].param_bytes;
      const sim::TaskId id = g.add_task(std::move(t));
      if (u >= 0 && l == last_layer(static_cast<std::size_t>(u))) fwd_free[static_cast<std::size_t>(u)] = id;
      add_layer_collectives(g, s, l, prefix, false, mesh, next_rendezvous);
    }

    // ---- backward ----
    // Units in backward order: reverse of the order of their last forward layer.
    std::vector<std::size_t> bwd_order;
    for (std::size_t l = m.layers.size(); l-- > 0;) {
      const int u = unit_of[l];
      if (u >= 0 && std::find(bwd_order.begin(), bwd_order.end(), static_cast<std::size_t>(u)) == bwd_order.end())
        bwd_order.push_back(static_cast<std::size_t>(u));
    }
    std::vector<sim::TaskId> bwd_ag(units.size(), sim::kNoTask);
    std::vector<bool> started(units.size(), false);
    sim::TaskId previous_rs = sim::kNoTask;
    auto next_needing_gather = [&](std::size_t pos) -> std::ptrdiff_t {
      for (std::size_t q = pos + 1; q < bwd_order.size(); ++q)
        if (units[bwd_order[q]].reshard) return static_cast<std::ptrdiff_t>(q);
      return -1;
    };
    std::size_t bwd_pos = 0;
    for (std::size_t l = m.layers.size(); l-- > 0;) {
      const int ui = unit_of[l];
      const auto u = static_cast<std::size_t>(std::max(ui, 0));
      const bool unit_start = ui >= 0 && !started[u];
      if (unit_start) {
        started[u] = true;
        bwd_pos = static_cast<std::size_t>(std::find(bwd_order.begin(), bwd_order.end(), u) - bwd_order.begin());
        if (units[u].reshard) {
          if (bwd_ag[u] == sim::kNoTask) bwd_ag[u] = all_gather(u, true);  // not prefetched
          copy_out(u, bwd_ag[u], true);
        }
        // Prefetch the next unit's AllGather before this unit's compute (FSDP2, BACKWARD_PRE).
        const bool pre = fsdp2 || z.backward_prefetch == BackwardPrefetch::BackwardPre;
        if (pre) {
          const auto q = next_needing_gather(bwd_pos);
          if (q >= 0 && bwd_ag[bwd_order[static_cast<std::size_t>(q)]] == sim::kNoTask)
            bwd_ag[bwd_order[static_cast<std::size_t>(q)]] = all_gather(bwd_order[static_cast<std::size_t>(q)], true);
        }
      }
      add_expert_transfers(g, s, l, prefix, true, mesh, next_rendezvous);
      auto segments = backward_segments(s, l, prefix, 0.0);
      const bool unit_end = ui >= 0 && l == first_layer(u);
      sim::TaskId last_segment = sim::kNoTask;
      for (std::size_t k2 = 0; k2 < segments.size(); ++k2) {
        auto& seg = segments[k2];
        if (seg.produces_grad && unsharded_grads[u] == 0) {
          // The unit's unsharded gradients exist from its first gradient to its ReduceScatter.
          seg.task.alloc_bytes[kBufferCounter] = units[u].grad_bytes;
          unsharded_grads[u] = units[u].grad_bytes;
        }
        if (unit_end && k2 + 1 == segments.size())
          seg.task.free_bytes[kBufferCounter] = units[u].param_bytes;  // reshard_after_backward (default True)
        last_segment = g.add_task(std::move(seg.task));
      }
      add_layer_collectives(g, s, l, prefix, true, mesh, next_rendezvous);
      if (!unit_end) continue;
      // BACKWARD_POST: the next AllGather is issued after this unit's compute.
      if (!fsdp2 && z.backward_prefetch == BackwardPrefetch::BackwardPost) {
        const auto q = next_needing_gather(bwd_pos);
        if (q >= 0 && bwd_ag[bwd_order[static_cast<std::size_t>(q)]] == sim::kNoTask)
          bwd_ag[bwd_order[static_cast<std::size_t>(q)]] = all_gather(bwd_order[static_cast<std::size_t>(q)], true);
      }
      if (!sync || units[u].grad_bytes + units[u].whole_expert_grad_bytes <= 0) continue;
      // FSDP2: the compute stream waits on the previous ReduceScatter (one outstanding).
      if (fsdp2 && previous_rs != sim::kNoTask) {
        const sim::TaskId w = g.add_task(wait_task(fmt::format("{}fsdp.wait_rs.{}", prefix, units[u].name), Phase::Overhead));
        g.add_dependency(previous_rs, w);
      }
      // The unsharded gradients are freed by the (last) ReduceScatter.
      sim::TaskId reduced = last_segment;
      if (units[u].grad_bytes > 0) {
        const auto [rs_first, rs_id] = unit_collective(fmt::format("{}reducescatter.{}", prefix, units[u].name),
                                                       CollectiveOp::ReduceScatter, units[u].grad_bytes,
                                                       units[u].expert_grad_bytes, kShardGroup, 0.0,
                                                       units[u].grad_bytes);
        unsharded_grads[u] = 0;
        g.add_dependency(last_segment, rs_first);
        previous_rs = last_rs = reduced = rs_id;
      }
      if (hsdp && replica_sync) {
        // The replicas reduce each rank's shard: the dense tensors' 1/shard, the routed
        // experts' 1/(shard / ep) (whole when ep is the shard group), one AllReduce per FSDP
        // module (torchtitan's experts module after the block's own).
        const double expert_shard = units[u].expert_grad_bytes / static_cast<double>(s.expert_shard_ranks()) +
                                    units[u].whole_expert_grad_bytes;
        const double dense_shard = (units[u].grad_bytes - units[u].expert_grad_bytes) / shard;
        sim::TaskId after = reduced;
        for (const auto& [suffix, bytes, group] : {std::tuple{"", dense_shard, kReplicaGroup},
                                                   std::tuple{".experts", expert_shard, expert_replica_group}}) {
          if (bytes <= 0) continue;
          const sim::TaskId ar = g.add_task(collective_task(
              fmt::format("{}allreduce.{}{}.replicas", prefix, units[u].name, suffix), CollectiveOp::AllReduce, bytes,
              group, kReplicaStream, next_rendezvous));
          g.add_dependency(after, ar);
          after = last_ar = ar;
        }
        reduced = after;
      }
      if (z.cpu_offload && units[u].grad_shard_elements > 0) {
        // The reduced shard, cast to fp32 on the GPU, goes to its pinned host buffer (non-blocking:
        // CPUOffloadPolicy pins by default, FSDP1 always), after the last reduction of it.
        const bool replica = hsdp && replica_sync && reduced == last_ar && last_ar != sim::kNoTask;
        const sim::TaskId d2h = g.add_task(host_task(fmt::format("{}offload.d2h.{}", prefix, units[u].name),
                                                     hardware::OpCode::DeviceToHost, 4.0 * units[u].grad_shard_elements,
                                                     replica ? kReplicaStream : kCommStream, Phase::Communication));
        g.add_dependency(reduced, d2h);
        if (replica) last_ar = d2h;
        else last_rs = d2h;
      }
    }
    if (sync) {
      // finalize_backward: the compute stream waits for every reduction.
      const sim::TaskId fin = g.add_task(wait_task(prefix + "fsdp.finalize_backward", Phase::Overhead));
      if (last_rs != sim::kNoTask) g.add_dependency(last_rs, fin);
      if (last_ar != sim::kNoTask) g.add_dependency(last_ar, fin);
      last_fin = fin;
    }
  }
  if (sim::Task opt; optimizer_step(s, static_cast<double>(shard), opt)) {
    if (z.cpu_offload) {
      // torch's optimizer on the CPU shards (§E8); the parameters stay there until the next
      // forward's AllGathers copy them in.
      double elements = 0;
      for (const auto& u : units) elements += u.grad_shard_elements;
      const sim::TaskId cpu = g.add_task(host_task("offload.cpu_adam", hardware::OpCode::CpuTorchOptimizer, 4.0 * elements,
                                                   kHostStream, Phase::Optimizer));
      if (last_fin != sim::kNoTask) g.add_dependency(last_fin, cpu);
    } else {
      g.add_task(std::move(opt));
    }
  }
  g.freeze(s.parallelism.strategy);
  return out;
}

namespace {

// FSDP1's options are refused under FSDP2, which prefetches implicitly: the next unit's
// AllGather is issued one unit ahead in forward and backward.
void fsdp1_only(const JsonReader& par, const Scenario& s, const char* key) {
  if (s.sharding.fsdp_version == "fsdp2" && par.has(key))
    par.fail(key, "is an FSDP1 option; set \"fsdp_version\": \"fsdp1\" (FSDP2 prefetches implicitly: the "
                  "next unit's AllGather is issued one unit ahead in forward and backward)");
}

std::optional<FieldValue> fsdp1_echo(const Scenario& s, FieldValue v) {
  if (s.sharding.fsdp_version != "fsdp1") return std::nullopt;
  return v;
}

FieldValue reshard_value(const Scenario& s) {
  switch (s.sharding.reshard_after_forward) {
    case ReshardMode::Default: return std::string("default");
    case ReshardMode::Torchtitan: return std::string("torchtitan");
    case ReshardMode::True: return true;
    case ReshardMode::False: return false;
    case ReshardMode::Group: return s.sharding.reshard_group;
  }
  return std::string("default");
}

std::string prefetch_name(BackwardPrefetch p) {
  return p == BackwardPrefetch::BackwardPre ? "BACKWARD_PRE" : p == BackwardPrefetch::BackwardPost ? "BACKWARD_POST" : "none";
}

}  // namespace

const std::vector<ScenarioField>& fsdp_knob_fields() {
  using T = FieldType;
  static const std::vector<ScenarioField> knobs = {
      {.object = "parallelism", .key = "fsdp_version", .type = T::Choice,
       .doc = "`fsdp2` (fully_shard) or `fsdp1` (FullyShardedDataParallel and its options)",
       .choices = [] { return std::vector<std::string>{"fsdp2", "fsdp1"}; }, .knob = true,
       STEPSIM_FIELD_ACCESS(std::string, sharding.fsdp_version)},
      {.object = "parallelism", .key = "unit_layers", .type = T::Integer,
       .doc = "transformer blocks per FSDP unit (0: the whole model one unit); the root unit holds embeddings and head",
       .min = 0, .max = 1 << 20, .knob = true, STEPSIM_FIELD_ACCESS(std::int64_t, sharding.unit_layers)},
      {.object = "parallelism", .key = "reshard_after_forward", .type = T::Variant,
       .doc = "`true`: free after forward, gather again in backward; `false`: keep unsharded until after backward; an "
              "integer k: keep a shard over k ranks (a divisor of the shard group); `\"default\"`: FSDP2's None (true "
              "for every unit but the root); `\"torchtitan\"`: every block but the last true, root false",
       .default_doc = "\"default\"", .knob = true, .get = reshard_value,
       .read = [](const JsonReader& par, Scenario& s) {
         const std::string key = "reshard_after_forward";
         auto& z = s.sharding;
         if (!par.has(key)) return;
         // Every refusal names the four forms it takes.
         const auto refuse = [&par, &key](const std::string& got) {
           par.fail(key, fmt::format("expected true, false, \"default\", \"torchtitan\" or an integer in [2, {}] (a "
                                     "divisor of the shard group), got {}", 1 << 20, got));
         };
         if (par.is_string(key)) {
           const std::string v = par.string(key);
           if (v != "default" && v != "torchtitan") refuse("'" + v + "'");
           z.reshard_after_forward = v == "torchtitan" ? ReshardMode::Torchtitan : ReshardMode::Default;
         } else if (par.is_boolean(key)) {
           z.reshard_after_forward = par.boolean_or(key, true) ? ReshardMode::True : ReshardMode::False;
         } else {
           try {
             z.reshard_group = par.integer(key, 2, 1 << 20);
           } catch (const InputError& e) {
             par.fail(key, "expected true, false, \"default\", \"torchtitan\" or an integer (a divisor of the shard "
                           "group); as an integer: " + e.detail());
           }
           z.reshard_after_forward = ReshardMode::Group;
         }
       }},
      {.object = "parallelism", .key = "backward_prefetch", .type = T::Choice,
       .doc = "FSDP1: when the next unit's AllGather is issued in backward (`BACKWARD_PRE`: before this unit's "
              "gradient computation; `BACKWARD_POST`: after it; `none`)",
       .choices = [] { return std::vector<std::string>{"BACKWARD_PRE", "BACKWARD_POST", "none"}; }, .knob = true,
       .get = [](const Scenario& s) -> FieldValue { return prefetch_name(s.sharding.backward_prefetch); },
       .set = [](Scenario& s, const FieldValue& v) {
         const std::string& p = std::get<std::string>(v);
         s.sharding.backward_prefetch = p == "BACKWARD_POST" ? BackwardPrefetch::BackwardPost
                                        : p == "none"        ? BackwardPrefetch::None
                                                             : BackwardPrefetch::BackwardPre;
       },
       .rule = [](const JsonReader& par, Scenario& s) { fsdp1_only(par, s, "backward_prefetch"); },
       .echo = [](const Scenario& s) { return fsdp1_echo(s, prefetch_name(s.sharding.backward_prefetch)); }},
      {.object = "parallelism", .key = "forward_prefetch", .type = T::Boolean,
       .doc = "FSDP1: issue the next AllGather before this unit's forward kernels. Only `false` is taken: with the CPU "
              "running ahead of the GPU the AllGather is queued either way, so only a CPU-bound step (not modelled) "
              "would change",
       .knob = true, STEPSIM_FIELD_ACCESS(bool, sharding.forward_prefetch),
       .rule = [](const JsonReader& par, Scenario& s) {
         // A knob with no effect is refused, not ignored.
         if (par.has("forward_prefetch") && (s.sharding.fsdp_version == "fsdp2" || s.sharding.forward_prefetch))
           par.fail("forward_prefetch",
                    s.sharding.fsdp_version == "fsdp2"
                        ? "is an FSDP1 option; set \"fsdp_version\": \"fsdp1\" (FSDP2 prefetches implicitly)"
                        : "has no effect on GPU timing in stepsim: it helps only when the CPU cannot launch ahead of the "
                          "GPU, a case stepsim does not model; remove it (or set it false)");
       },
       .echo = [](const Scenario& s) { return fsdp1_echo(s, s.sharding.forward_prefetch); }},
      {.object = "parallelism", .key = "cpu_offload", .type = T::Boolean,
       .doc = "FSDP2's CPUOffloadPolicy() / FSDP1's CPUOffload(offload_params=True) (torchtitan's "
              "training.enable_cpu_offload): the fp32 parameter shards, gradients and optimizer states live in host "
              "memory (pinned); each AllGather first copies the shard host to device, each reduced gradient shard "
              "goes device to host in fp32, and torch's Adam steps on the CPU (semantics-parallel.md §E8, §E9); "
              "needs the profile's `host` facts",
       .knob = true, STEPSIM_FIELD_ACCESS(bool, sharding.cpu_offload)},
      {.object = "parallelism", .key = "limit_all_gathers", .type = T::Boolean,
       .doc = "FSDP1's rate limiter: at most two AllGathers in flight", .knob = true,
       STEPSIM_FIELD_ACCESS(bool, sharding.limit_all_gathers),
       .rule = [](const JsonReader& par, Scenario& s) { fsdp1_only(par, s, "limit_all_gathers"); },
       .echo = [](const Scenario& s) { return fsdp1_echo(s, s.sharding.limit_all_gathers); }},
      {.object = "parallelism", .key = "shard_group_size", .type = T::Integer,
       .doc = "HSDP: ranks one shard group spans (a divisor of dp, of dp × cp under context parallelism and then a "
              "multiple of cp: torchtitan shards over dp_shard × cp); the replicas AllReduce across groups",
       .default_doc = "the DP (× CP) ranks one node holds (min(gpus_per_node, dp) without TP, CP or PP on the node)", .min = 1, .max = 1 << 20, .knob = true,
       STEPSIM_FIELD_ACCESS(std::int64_t, sharding.shard_group_size),
       .echo = [](const Scenario& s) -> std::optional<FieldValue> { return s.shard_ranks(); }},
      {.object = "parallelism", .key = "defer_replica_all_reduce", .type = T::Boolean,
       .doc = "HSDP: set_requires_all_reduce(False) until the last micro-batch, so the replica AllReduce runs once per "
              "step",
       .knob = true, STEPSIM_FIELD_ACCESS(bool, sharding.defer_replica_all_reduce)},
  };
  return knobs;
}

}  // namespace stepsim::models
