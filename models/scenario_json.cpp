// SPDX-License-Identifier: Apache-2.0
// JSON -> Scenario: parse, default, validate, freeze (style.md §3.6).
#include "models/scenario.hpp"

#include "hardware/calibration_json.hpp"
#include "hardware/hardware_profile_json.hpp"
#include "models/model_spec_json.hpp"
#include "models/float8.hpp"
#include "models/recompute.hpp"
#include "models/scenario_fields.hpp"
#include "models/strategy/strategy.hpp"
#include "models/context_parallel.hpp"
#include "models/expert_parallel.hpp"
#include "models/pipeline.hpp"
#include "models/tensor_parallel.hpp"
#include "sim/support/error.hpp"
#include "sim/support/json_reader.hpp"
#include "sim/support/names.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <tuple>

namespace stepsim::models {

int Scenario::ranks_per_node() const {
  const RankLayout l = layout();
  return l.members_per_node(l.data(1, data_ranks()));
}

std::int64_t Scenario::shard_ranks() const {
  const StrategyEntry& st = strategy_of(*this);
  if (zero_stage() == 0) return 1;
  if (st.hybrid) return sharding.shard_group_size > 0 ? sharding.shard_group_size : ranks_per_node();
  return data_ranks();
}

int Scenario::zero_stage() const {
  const int stage = strategy_of(*this).zero_stage;
  // Megatron-LM's distributed optimizer shards the optimizer states over the DP group.
  return stage == 0 && parallelism.use_distributed_optimizer ? 1 : stage;
}

bool Scenario::sharded() const { return zero_stage() > 0; }

std::vector<std::string> implementation_names() { return {"eager", "compile", "megatron_te"}; }

std::vector<std::string> strategy_names() {
  std::vector<std::string> names;
  for (const auto& s : strategy_registry()) names.emplace_back(s.name);
  return names;
}

namespace {

// An object of the scenario, or an empty one in its place (its fields take their defaults).
JsonReader object_or_empty(const JsonReader& root, const char* key) {
  static const nlohmann::json empty = nlohmann::json::object();
  if (auto r = root.optional_object(key)) return *r;
  return JsonReader(empty, root.source(), root.path(key));
}

// Reads `key`'s fields through the table, then refuses keys it does not declare.
JsonReader read_object(const JsonReader& root, const char* key, Scenario& s) {
  JsonReader r = object_or_empty(root, key);
  read_fields(r, key, s);
  r.finish();
  return r;
}

// Tensor parallelism: the model splits tp ways (then `model` becomes one rank's share), and
// sequence parallelism needs it.
void apply_tensor_parallel(const JsonReader& par, Scenario& s) {
  const auto& p = s.parallelism;
  s.model_parameters = s.model.parameter_count();
  s.model_trainable_parameters = s.model.trainable_parameter_count();
  s.model_active_parameters = s.model.active_parameter_count();
  if (p.sequence_parallel && p.tp == 1)
    par.fail("sequence_parallel", "needs tp > 1 (sequence parallelism splits the TP group's activations; Megatron-LM "
                                  "switches it off with a warning at tp 1)");
  if (p.tp_comm_overlap && !p.sequence_parallel)
    par.fail("tp_comm_overlap", "needs sequence_parallel (Megatron-LM asserts it; the overlapped collectives are the "
                                "AllGathers and ReduceScatters sequence parallelism puts around each TP region)");
  if (p.tp == 1) return;
  if (const std::string why = tensor_parallel_problem(s.model, p.tp); !why.empty())
    par.fail("tp", fmt::format("{}: {}", p.tp, why));
  s.model = tensor_parallel_model(s.model, p.tp, p.sequence_parallel);
}

// The groups carved out of the data ranks (HSDP's shard and replica groups, FSDP's reshard
// group, EP and expert-DP groups) must sit evenly on nodes (RankLayout::group_problem) and, where
// CP and DP are not adjacent in the order, nest with CP; and what a non-default order is not
// modelled for.
void check_placement(const JsonReader& par, const Scenario& s) {
  const auto& p = s.parallelism;
  const RankLayout layout = s.layout();
  const std::string order = mesh_order_name(p.order);
  if (!layout.places_as(kMegatronOrder)) {
    if (s.hardware.is_torus())
      par.fail("order", fmt::format("'{}' on the {} torus: stepsim places ranks by order on GPU nodes only; expected "
                                    "the default tp-cp-dp-pp", order, s.hardware.name));
    if (p.ep > 1)
      par.fail("order", fmt::format("'{}' with ep {}: expert parallelism is modelled in Megatron-LM's default order "
                                    "only (its expert groups come from a rank generator of their own); expected "
                                    "tp-cp-dp-pp", order, p.ep));
  }
  const auto check = [&](const char* key, const char* what, std::int64_t inner, std::int64_t size) {
    if (size <= 1) return;
    const MeshGroup g = layout.data(inner, size);
    const std::string why = layout.members(g) != size
                                ? fmt::format("its ranks do not nest with cp {} in order {}", p.cp, order)
                                : layout.group_problem(g);
    if (!why.empty())
      par.fail(key, fmt::format("{} of {} ranks: {}; expected a size whose groups fill nodes evenly", what, size, why));
  };
  if (strategy_of(s).hybrid) {
    const std::int64_t shard = s.shard_ranks();
    check("shard_group_size", "the HSDP shard group", 1, shard);
    check("shard_group_size", "the HSDP replica group", shard, s.data_ranks() / shard);
  }
  if (s.sharding.reshard_after_forward == ReshardMode::Group)
    check("reshard_after_forward", "the reshard group", 1, s.sharding.reshard_group);
  if (p.ep > 1) {
    check("ep", "each EP group", 1, p.ep);
    check("ep", "each expert-data-parallel group", p.ep, s.expert_reduce_ranks());
  }
}

// The cluster's shape against dp × tp, and the rules of the sharded strategies that need it.
void check_cluster(const JsonReader& par, const Scenario& s) {
  const auto& p = s.parallelism;
  const std::int64_t gpn = s.cluster.gpus_per_node;
  if (p.tp > 1 && s.hardware.is_torus())
    par.fail("tp", fmt::format("{} on the {} torus: stepsim models tensor parallelism on a GPU node's scale-up domain "
                               "(NVLink), not over ICI; expected tp 1 on a torus profile", p.tp, s.hardware.name));
  if (p.tp > 1 && p.order.front() == MeshDim::TP && gpn % p.tp != 0 && p.tp % gpn != 0)
    par.fail("tp", fmt::format("{} neither divides /cluster/gpus_per_node ({}) nor spans whole nodes: stepsim places "
                               "each TP group inside one node or over whole nodes (Megatron-LM's default order "
                               "tp-cp-ep-dp-pp, TP innermost); expected a divisor or a multiple of {}", p.tp, gpn, gpn));
  constexpr std::int64_t kMaxWorld = 100'000'000;  // parallelism.dp's own bound
  // The mesh as its degrees multiply: "dp × tp × cp × pp" with the dimensions > 1 (dp always).
  std::string names = "dp", values = std::to_string(p.dp);
  double product = static_cast<double>(p.dp);  // in double: the degrees' product can pass int64
  const char* last = "dp";
  for (const auto& [name, v] : {std::pair{"tp", p.tp}, std::pair{"cp", p.cp}, std::pair{"pp", p.pp}}) {
    if (v <= 1) continue;
    names += fmt::format(" × {}", name);
    values += fmt::format(" × {}", v);
    product *= static_cast<double>(v);
    last = name;
  }
  if (product > static_cast<double>(kMaxWorld))
    par.fail(last, fmt::format("{} = {} = {:.0f} ranks; expected at most {}", names, values, product, kMaxWorld));
  const std::int64_t world = s.world_size();
  const std::string world_doc = names == "dp" ? fmt::format("dp ({})", p.dp)
                                              : fmt::format("{} ({} = {})", names, values, world);
  if (world > gpn && world % gpn != 0)
    throw InputError(s.source, "/parallelism/dp",
                     fmt::format("{} must be a multiple of /cluster/gpus_per_node ({}) when the "
                                 "group spans several nodes",
                                 world_doc, gpn));
  if (world > gpn && s.cluster.nodes * gpn != world)
    throw InputError(s.source, "/cluster/nodes",
                     fmt::format("/cluster/nodes ({}) × /cluster/gpus_per_node ({}) = {} ≠ "
                                 "/parallelism/{}; the world size must equal {}",
                                 s.cluster.nodes, gpn, s.cluster.nodes * gpn, world_doc, names));
  if (world <= gpn && s.cluster.nodes != 1)
    throw InputError(s.source, "/cluster/nodes",
                     fmt::format("{} fits in one node of {} GPUs, but /cluster/nodes is {}",
                                 world_doc, gpn, s.cluster.nodes));
  if (world > gpn)
    if (const std::string why = s.layout().node_problem(); !why.empty())
      throw InputError(s.source, "/parallelism/order",
                       fmt::format("{} placed {} on {}-GPU nodes: {}; expected degrees whose blocks fill whole nodes, "
                                   "or another order", world_doc, mesh_order_name(p.order), gpn, why));
  const auto& z = s.sharding;
  if (strategy_of(s).hybrid) {
    const std::int64_t g = s.shard_ranks();
    const std::int64_t d = s.data_ranks();
    if (d % g != 0 || g > d)
      par.fail("shard_group_size", p.cp > 1 ? fmt::format("the shard group ({} ranks) must divide dp × cp ({})", g, d)
                                            : fmt::format("the shard group ({} ranks) must divide dp ({})", g, p.dp));
    if (g % p.cp != 0)
      par.fail("shard_group_size", fmt::format("the shard group ({} ranks) must be a multiple of cp ({}): the CP ranks "
                                               "of a sequence hold the same weights, and torchtitan shards them over "
                                               "dp_shard × cp", g, p.cp));
  }
  if (z.reshard_after_forward == ReshardMode::Group) {
    const std::int64_t n = s.shard_ranks();
    if (z.reshard_group >= n || n % z.reshard_group != 0)
      par.fail("reshard_after_forward",
               fmt::format("an integer reshard_after_forward must be a non-trivial divisor of the shard "
                           "group size ({}), got {}", n, z.reshard_group));
  }
}

// Expert parallelism (models/expert_parallel.hpp): what it is modelled for; then `model`
// becomes one rank's share of the experts.
void apply_expert_parallel(const JsonReader& par, Scenario& s) {
  if (s.parallelism.ep == 1) return;
  if (const std::string why = expert_parallel_problem(s); !why.empty())
    par.fail("ep", fmt::format("{}: {}", s.parallelism.ep, why));
  s.model = expert_parallel_model(s.model, s.parallelism.ep);
}

// Pipeline parallelism (models/pipeline.hpp): its knobs need pp > 1; the strategies, models
// and modes it is modelled under; the stage split and the schedule's micro-batch rule.
void check_pipeline(const JsonReader& par, Scenario& s) {
  auto& p = s.parallelism;
  if (p.pp == 1) {
    // 1F1B on one stage is plain gradient accumulation (what runs without PP): a base scenario
    // that names it still sweeps over pp = 1.
    if (p.pipeline_schedule != "1F1B")
      par.fail("pipeline_schedule", fmt::format("\"{}\" needs pp > 1 (a schedule orders micro-batches across pipeline "
                                                "stages; one stage runs them as gradient accumulation, as \"1F1B\" does)",
                                                p.pipeline_schedule));
    if (p.virtual_stages != 1)
      par.fail("virtual_stages", "needs pp > 1 and a multi-stage pipeline_schedule (\"Interleaved1F1B\", "
                                 "\"InterleavedZeroBubble\" or \"ZBVZeroBubble\")");
    return;
  }
  const bool multi = multi_stage_schedule(pipeline_schedule_of(p.pipeline_schedule));
  if (p.pipeline_schedule == "ZBVZeroBubble" && par.has("virtual_stages") && p.virtual_stages != 2)
    par.fail("virtual_stages", fmt::format("{}: ZBVZeroBubble runs exactly 2 stages per rank (its V; "
                                           "torch.distributed.pipelining raises otherwise); expected 2", p.virtual_stages));
  if (!par.has("virtual_stages") && multi) p.virtual_stages = 2;
  if (!multi && p.virtual_stages != 1)
    par.fail("virtual_stages", fmt::format("{} needs pipeline_schedule \"Interleaved1F1B\", \"InterleavedZeroBubble\" or "
                                           "\"ZBVZeroBubble\" ({} runs one model chunk per PP rank); expected 1",
                                           p.virtual_stages, p.pipeline_schedule));
  const StrategyEntry& st = strategy_of(s);
  if (st.family == StrategyFamily::DeepSpeed && st.zero_stage >= 2)
    par.fail("pp", fmt::format("{} under strategy '{}': DeepSpeed's PipelineEngine refuses ZeRO-2 and ZeRO-3 (it asserts "
                               "a ZeRO stage below 2); expected strategy zero1, ddp, fsdp or hsdp", p.pp, st.name));
  if (st.family == StrategyFamily::DeepSpeed && p.pipeline_schedule != "1F1B")
    par.fail("pipeline_schedule", fmt::format("\"{}\" under strategy '{}': DeepSpeed's PipelineEngine runs its own 1F1B "
                                              "TrainSchedule only; expected \"1F1B\"", p.pipeline_schedule, st.name));
  if (s.hardware.is_torus())
    par.fail("pp", fmt::format("{} on the {} torus: pipeline parallelism is modelled on GPU nodes; expected pp 1", p.pp,
                               s.hardware.name));
  if (p.sync_every_micro_batch)
    par.fail("sync_every_micro_batch", "is not modelled under pipeline parallelism (both frameworks reduce gradients "
                                       "once per step, after each stage's last backward); expected false");
  if (st.family == StrategyFamily::FSDP && s.sharding.reshard_after_forward != ReshardMode::Default &&
      s.sharding.reshard_after_forward != ReshardMode::Torchtitan)
    par.fail("reshard_after_forward", "under pipeline parallelism only \"default\" or \"torchtitan\" is modelled (both "
                                      "resolve to False under PP, as torchtitan's policy does: each unit is all-gathered "
                                      "once per step)");
  if (const std::string why = pipeline_problem(s); !why.empty()) par.fail("pp", fmt::format("{}: {}", p.pp, why));
}

// Optimizer offload (semantics-parallel.md §E): the host facts it is priced with, and what it
// is modelled under.
void check_offload(const JsonReader& par, Scenario& s) {
  for (const auto& [key, on, pinned] : {std::tuple{"offload_optimizer", s.sharding.offload_optimizer(), s.sharding.offload_optimizer_pin_memory},
                                        std::tuple{"offload_param", s.sharding.offload_param(), s.sharding.offload_param_pin_memory}})
    if (!on && pinned)
      if (const auto o = par.optional_object(key))
        o->fail("pin_memory", "true with device \"none\": nothing is offloaded, so nothing is pinned; set a device or "
                              "remove pin_memory");
  if (!s.sharding.offloads()) return;
  const std::string device = s.sharding.cpu_offload            ? "cpu_offload"
                             : s.sharding.offload_optimizer() ? s.sharding.offload_optimizer_device
                                                              : s.sharding.offload_param_device;
  const auto& host = s.hardware.host;
  const auto o = par.optional_object("offload_optimizer");
  const JsonReader& at = o ? *o : par;
  const char* key = s.sharding.cpu_offload ? "cpu_offload" : o ? "device" : "offload_optimizer";
  if (!host.present())
    at.fail(key, fmt::format("\"{}\" needs the host facts of profile '{}' (PCIe bandwidth, host memory, CPU Adam rate), "
                             "and it has none; give them in the profile's \"host\" object (h2d_bytes_per_s, d2h_bytes_per_s, "
                             "memory_bytes, cpu_adam_params_per_s; e.g. --set hardware.host.h2d_bytes_per_s=25GB/s for "
                             "each, or a profile file as hardware/profiles/a100-sxm.json writes it)",
                             device, s.hardware.name));
  if (s.optimizer == "none" && !s.sharding.cpu_offload)
    at.fail(key, fmt::format("\"{}\" with optimizer \"none\": there is no optimizer state to offload", device));
  if (s.parallelism.pp > 1)
    at.fail(key, fmt::format("\"{}\" is not modelled under pipeline parallelism yet (pp {}); expected {}", device,
                             s.parallelism.pp, s.sharding.cpu_offload ? "false" : "\"none\""));
  if (s.sharding.offload_param()) {
    const auto op = par.optional_object("offload_param");
    if (!s.sharding.offload_optimizer())
      (op ? *op : par).fail(op ? "device" : "offload_param",
                            fmt::format("\"{}\" without offload_optimizer is not modelled (ZeRO-Infinity configurations "
                                        "offload both; the GPU optimizer would need the 16-bit partitions copied back "
                                        "each step); set parallelism.offload_optimizer.device too",
                                        s.sharding.offload_param_device));
    if (s.sharding.offload_param_device == "nvme" && !host.has_nvme())
      (op ? *op : par).fail(op ? "device" : "offload_param",
                            fmt::format("\"nvme\" needs NVMe drives on profile '{}' (host.nvme_read_bytes_per_s, "
                                        "nvme_write_bytes_per_s, nvme_bytes), and it gives none",
                                        s.hardware.name));
  }
  if (device == "nvme" && s.zero_stage() == 3 && !host.has_nvme())
    at.fail(key, fmt::format("\"nvme\" needs NVMe drives on profile '{}' (host.nvme_read_bytes_per_s, "
                             "nvme_write_bytes_per_s, nvme_bytes), and it gives none; expected \"cpu\" or a profile with "
                             "NVMe",
                             s.hardware.name));
}

// Checkpoints (models/checkpoint.hpp): the storage they are written to and the formats each
// framework has.
void check_checkpoint(const JsonReader& ck, const Scenario& s) {
  if (!s.checkpoint.enabled) return;
  const auto& host = s.hardware.host;
  if (!host.present())
    ck.fail("interval", fmt::format("checkpoints need the host facts of profile '{}' (each rank stages its state to CPU "
                                    "memory over PCIe), and it has none; give them in the profile's \"host\" object",
                                    s.hardware.name));
  if (!(s.checkpoint.storage_write_bytes_per_s > 0) && !host.has_nvme())
    ck.fail("storage_write_bytes_per_s",
            fmt::format("a storage write bandwidth is needed: profile '{}' has no NVMe to write checkpoints to by "
                        "default; give the storage's (e.g. \"10GB/s\")",
                        s.hardware.name));
  if (s.checkpoint.format == "full" && strategy_of(s).family == StrategyFamily::DeepSpeed)
    ck.fail("format", fmt::format("\"full\" under strategy '{}': DeepSpeed writes one file per rank (engine.save_checkpoint) "
                                  "and consolidates offline with zero_to_fp32.py; expected \"sharded\"",
                                  s.parallelism.strategy));
  if (s.parallelism.pp > 1)
    ck.fail("interval", fmt::format("checkpoints are not modelled under pipeline parallelism yet (pp {})", s.parallelism.pp));
}

// Context parallelism (models/context_parallel.hpp): what it is modelled for, the sequence it
// splits, and the KV exchange's default by framework.
void check_context_parallel(const JsonReader& par, const JsonReader& batch, Scenario& s) {
  auto& p = s.parallelism;
  if (p.cp == 1) return;  // cp_comm_type has nothing to act on (a base scenario may still sweep cp)
  if (p.cp_comm_type.empty()) p.cp_comm_type = default_cp_comm_type(s);
  const StrategyEntry& st = strategy_of(s);
  if (st.family == StrategyFamily::DeepSpeed)
    par.fail("cp", fmt::format("{} under strategy '{}': DeepSpeed splits sequences with Ulysses (all-to-all), which is not "
                               "modelled; expected strategy ddp, fsdp or hsdp", p.cp, st.name));
  if (s.hardware.is_torus())
    par.fail("cp", fmt::format("{} on the {} torus: context parallelism is modelled on GPU nodes; expected cp 1", p.cp,
                               s.hardware.name));
  if (!s.model.transformer_shape)
    par.fail("cp", fmt::format("{}: model '{}' is not a transformer: context parallelism splits attention's sequence",
                               p.cp, s.model.name));
  if (!s.activations.flash_attention)
    par.fail("cp", fmt::format("{} with eager attention: both frameworks run context parallelism on fused attention "
                               "kernels (Transformer Engine, SDPA); expected activations.attention flash", p.cp));
  if (s.batch.seq_len % (2 * p.cp) != 0) {
    const std::string why = fmt::format("{} does not divide into 2 × cp = {} chunks (the load-balanced split gives each "
                                        "CP rank chunks i and 2·cp − 1 − i; Megatron-LM and torchtitan require it); "
                                        "expected a multiple of {}", s.batch.seq_len, 2 * p.cp, 2 * p.cp);
    if (batch.has("seq_len")) batch.fail("seq_len", why);
    par.fail("cp", why);
  }
}

// TPU profiles: dp fits the torus, and the torus axes the DP rings use (issue 13 item 21;
// default: all of the profile's).
void check_torus(const JsonReader& par, Scenario& s) {
  auto& p = s.parallelism;
  if (s.hardware.is_torus()) {
    long long pod = 1;
    for (int d : s.hardware.torus_dims) pod *= d;
    if (p.dp > pod)
      throw InputError(s.source, "/parallelism/dp",
                       fmt::format("dp ({}) is larger than the {} torus ({} chips); multi-slice (DCN) data "
                                   "parallelism is not modelled", p.dp, s.hardware.name, pod));
  }
  const int profile_axes = s.hardware.is_torus() ? static_cast<int>(s.hardware.torus_dims.size()) : 0;
  if (par.has("torus_axes") && profile_axes == 0)
    par.fail("torus_axes", fmt::format("{} given, but profile '{}' is not a torus (torus_axes applies to TPU "
                                       "profiles such as tpu-v5p)", p.torus_axes, s.hardware.name));
  if (p.torus_axes > profile_axes)
    par.fail("torus_axes", fmt::format("{} axes asked for, but the {} torus has {}: expected 1 to {}", p.torus_axes,
                                       s.hardware.name, profile_axes, profile_axes));
  if (!par.has("torus_axes")) p.torus_axes = profile_axes;
}

// Sequence parallelism splits each sequence tp ways (Megatron-LM's _split_along_first_dim
// asserts the sequence divides by the TP size).
void check_sequence_parallel(const JsonReader& root, const JsonReader& batch, const Scenario& s) {
  const auto& p = s.parallelism;
  if (!p.sequence_parallel || s.batch.seq_len % (p.tp * p.cp) == 0) return;
  const std::string why =
      p.cp > 1 ? fmt::format("{} does not divide by tp × cp = {}: sequence parallelism splits each CP rank's seq_len / cp "
                             "tokens tp ways (Megatron-LM asserts it); expected a multiple of {}",
                             s.batch.seq_len, p.tp * p.cp, p.tp * p.cp)
               : fmt::format("{} does not divide by tp {}: sequence parallelism splits each sequence tp ways "
                             "(Megatron-LM asserts it); expected a multiple of {}", s.batch.seq_len, p.tp, p.tp);
  if (batch.has("seq_len")) batch.fail("seq_len", why);
  root.fail("batch", "seq_len " + why);
}

// A learned position table has a row per position: no longer sequence can run (GPT-2's wpe).
void check_positions(const JsonReader& root, const JsonReader& batch, const Scenario& s) {
  if (s.model.learned_positions == 0 || s.batch.seq_len <= s.model.learned_positions) return;
  const std::string why = fmt::format("seq_len {} is longer than model '{}' has positions: its learned position "
                                      "table holds {} (max_positions / n_positions)", s.batch.seq_len, s.model.name,
                                      s.model.learned_positions);
  if (batch.has("seq_len")) batch.fail("seq_len", why);
  root.fail("batch", why + "; set batch.seq_len");
}

// Float8 needs FP8 tensor cores and linears to convert; its all-gather needs FSDP2.
void check_float8(const JsonReader& prec, const Scenario& s) {
  if (s.precision.float8 != PrecisionConfig::Float8::None) {
    if (!(s.hardware.fp8_flops_per_s > 0))
      prec.fail("float8", fmt::format("profile '{}' has no FP8 tensor cores (no compute.fp8_flops_per_s; torchao's "
                                      "float8 training needs SM 8.9 or newer: H100, H200, H800, L40S)", s.hardware.name));
    if (float8_linear_total(s).linears == 0)
      prec.fail("float8", fmt::format("model '{}' has no linear layer float8 would convert (it converts the "
                                      "transformer blocks' linears with GEMM shapes, dimensions multiples of 16)",
                                      s.model.name));
  }
  if (s.precision.float8_all_gather && s.precision.float8 == PrecisionConfig::Float8::None)
    prec.fail("float8_all_gather", "needs precision.float8 \"tensorwise\" (FSDP gathers the Float8Linear weights)");
  const bool fsdp_like = strategy_of(s).family == StrategyFamily::FSDP;
  if (s.precision.float8_all_gather && !(fsdp_like && s.sharding.fsdp_version == "fsdp2"))
    prec.fail("float8_all_gather", fmt::format("torchao casts the weights for FSDP2's all-gather (fully_shard "
                                               "pre-all-gather hooks); this scenario has {}: expected strategy fsdp "
                                               "or hsdp with fsdp_version fsdp2",
                                               fsdp_like ? "fsdp_version fsdp1" : "strategy '" + s.parallelism.strategy + "'"));
}

// The GEMMs' arithmetic follows the dtype most of the parameters are held in, and must have a
// peak on this profile: refused, not priced at another's.
void resolve_gemm_math(const JsonReader& root, const JsonReader& prec, Scenario& s) {
  double by_dtype[4] = {0, 0, 0, 0};
  for (const auto& l : s.model.layers)
    for (const auto& t : l.params) by_dtype[static_cast<int>(t.dtype)] += static_cast<double>(t.numel);
  const auto dominant = static_cast<DType>(std::max_element(std::begin(by_dtype), std::end(by_dtype)) - std::begin(by_dtype));
  s.precision.held_dtype = dominant;
  // TF32 where the GPU has it; a part without TF32 (V100) runs allow_tf32 matmuls in FP32.
  const bool tf32 = s.precision.fp32_matmul_tf32 && s.hardware.tf32_flops_per_s > 0;
  s.precision.gemm_math = dominant == DType::FP32 ? (tf32 ? hardware::GemmMath::Tf32 : hardware::GemmMath::Fp32)
                          : dominant == DType::FP8 ? hardware::GemmMath::Fp8
                                                   : hardware::GemmMath::Tensor16;
  const auto fail_dtype = [&](const std::string& why) {
    if (prec.has("param_dtype")) prec.fail("param_dtype", why);
    root.fail("model", why);
  };
  if (dominant != DType::FP32 && prec.has("fp32_matmul_precision"))
    prec.fail("fp32_matmul_precision", fmt::format("acts on fp32 tensors only, and this scenario holds its parameters in "
                                                   "{}; drop it or set precision.param_dtype fp32", dtype_name(dominant)));
  if (dominant == DType::FP32 && !(s.hardware.fp32_flops_per_s > 0))
    fail_dtype(fmt::format("fp32 tensors run their GEMMs in FP32 (or TF32), and profile '{}' gives no "
                           "compute.fp32_flops_per_s to price them with; add it (and tf32_flops_per_s where the "
                           "part has TF32) to the profile, or train in bf16",
                           s.hardware.name));
  if (dominant == DType::FP8 && !(s.hardware.fp8_flops_per_s > 0))
    fail_dtype(fmt::format("fp8 tensors need FP8 tensor cores, and profile '{}' has none (no compute.fp8_flops_per_s)",
                           s.hardware.name));
  if (s.precision.float8 != PrecisionConfig::Float8::None) {
    if (dominant == DType::FP8)
      prec.fail("float8", "the parameters are already held in fp8 (precision.param_dtype or model.dtype); torchao's "
                          "Float8Linear casts bf16/fp32 weights: use one or the other");
    if (s.tokens_per_micro_batch() % 16 != 0)
      prec.fail("float8", fmt::format("{} tokens per micro-batch: torch._scaled_mm needs the weight-gradient GEMM's "
                                      "inner dimension (the tokens) to be a multiple of 16 (torchao's pad_inner_dim "
                                      "is off by default); expected micro_batch_size x seq_len divisible by 16",
                                      s.tokens_per_micro_batch()));
  }
}

// Token counts stay exact (and far from int64 overflow) below 1e15 per step; the lowered graph
// holds about (layers + tensors) tasks per micro-batch.
void check_size(const Scenario& s) {
  const double tokens = static_cast<double>(s.parallelism.dp) * static_cast<double>(s.batch.micro_batch_size) *
                        static_cast<double>(s.batch.seq_len) * static_cast<double>(s.batch.grad_accum);
  if (tokens > 1e15)
    throw InputError(s.source, "/batch",
                     fmt::format("/parallelism/dp × micro_batch_size × seq_len × grad_accum = {:.3g} tokens per "
                                 "step; expected at most 1e15", tokens));
  double per_micro_batch = 0;
  for (const auto& l : s.model.layers) per_micro_batch += 2.0 + static_cast<double>(l.params.size());
  const double tasks = per_micro_batch * static_cast<double>(s.batch.grad_accum);
  constexpr double kMaxTasks = 4e6;
  if (tasks > kMaxTasks)
    throw InputError(s.source, "/batch/grad_accum",
                     fmt::format("{} micro-batches of {} layers lower into about {:.3g} tasks; the limit is {:g} "
                                 "per step (reduce grad_accum: no_sync micro-batches are identical)",
                                 s.batch.grad_accum, s.model.layers.size(), tasks, kMaxTasks));
}

// The rules of sim's modes once all of it is read.
void check_sim(const JsonReader& sim, Scenario& s) {
  auto& con = s.contention;
  if (con.overlap_model == "sm_partition") {
    if (s.hardware.sm_count == 0)
      sim.fail("overlap_model", fmt::format("\"sm_partition\" needs the SM count of the GPU; profile '{}' has no "
                                            "compute.sm_count (expected \"factor\" or \"off\")", s.hardware.name));
    if (con.nccl_sms == 0) con.nccl_sms = 2 * std::int64_t{s.hardware.nccl.ring_channels};  // runtime channels, one CTA each
    if (con.nccl_sms == 0)
      sim.fail("nccl_sms", fmt::format("profile '{}' has no nccl.ring_channels to derive NCCL's SMs from; set "
                                       "sim.nccl_sms (rule 94: 16-32 on an 8-GPU H100 node)", s.hardware.name));
    if (con.nccl_sms >= s.hardware.sm_count)
      sim.fail("nccl_sms", fmt::format("expected fewer SMs than the GPU's {}, got {}", s.hardware.sm_count, con.nccl_sms));
  }
  const auto& var = s.variation;
  if (var.any() && s.rank_mode != "per_rank")
    sim.fail(!var.degraded_links.empty() ? "degraded_links"
             : !var.slow_ranks.empty()       ? "slow_ranks"
             : var.expert_load_cv > 0        ? "expert_load"
                                             : "jitter",
             "per-rank variation needs \"rank_mode\": \"per_rank\" (symmetric mode simulates one "
             "representative rank)");
}

}  // namespace

void apply_scenario_override(nlohmann::json& doc, const std::string& assignment, const std::string& flag) {
  const bool has_hardware = doc.is_object() && doc.contains("hardware");
  // One field of a named profile: the name becomes the base of an inline profile.
  if (assignment.rfind("hardware.", 0) == 0 && has_hardware && doc["hardware"].is_string())
    doc["hardware"] = nlohmann::json{{"base", doc["hardware"]}};
  // A profile name over a profile with a base changes the base and keeps the fields set on it
  // (so --set hardware.X=... --vary hardware=A,B keeps X at every point).
  if (assignment.rfind("hardware=", 0) == 0 && has_hardware && doc["hardware"].is_object() &&
      doc["hardware"].contains("base")) {
    nlohmann::json value = nlohmann::json::object();
    apply_override(value, assignment, flag);
    if (value["hardware"].is_string()) {
      doc["hardware"]["base"] = value["hardware"];
      return;
    }
  }
  apply_override(doc, assignment, flag);
}

Scenario parse_scenario(const nlohmann::json& doc, const std::string& source) {
  // Every field is declared once in the field table (models/scenario_fields.hpp); this is the
  // order the objects are read in and the rules that join them.
  JsonReader root(doc, source, "");
  Scenario s;
  s.source = source;
  read_fields(root, "", s);  // name, model, hardware, calibration, optimizer

  // parallelism first: the cluster defaults depend on dp.
  const auto par = root.optional_object("parallelism");
  if (!par) root.fail("parallelism", "required field is missing (at least {\"dp\": N})");
  read_fields(*par, "parallelism", s);
  par->finish();
  apply_tensor_parallel(*par, s);
  if (s.model.trainable_parameter_count() == 0)
    throw InputError(source, "/model",
                     fmt::format("model '{}' has no trainable parameter (every tensor is \"trainable\": false): "
                                 "strategy '{}' would have no gradient to synchronise and no optimizer step (PyTorch's "
                                 "DDP refuses such a module); expected at least one trainable tensor",
                                 s.model.name, s.parallelism.strategy));
  read_object(root, "cluster", s);
  check_cluster(*par, s);
  check_torus(*par, s);
  const JsonReader batch = read_object(root, "batch", s);
  check_positions(root, batch, s);
  check_sequence_parallel(root, batch, s);
  check_pipeline(*par, s);
  if (s.parallelism.use_distributed_optimizer) {
    // Megatron-LM's DDP keeps every gradient in its contiguous buffer (param.main_grad views
    // it: no bucket copy, no second buffer) and reduces once per step (semantics-parallel.md
    // §A10), and the distributed optimizer exists to shard an optimizer's states.
    auto& p = s.parallelism;
    if (par->has("gradient_as_bucket_view") && !p.gradient_as_bucket_view)
      par->fail("gradient_as_bucket_view", "false with use_distributed_optimizer: Megatron-LM's gradients always live in "
                                           "its contiguous bucket buffer (main_grad); remove gradient_as_bucket_view");
    p.gradient_as_bucket_view = true;
    if (p.sync_every_micro_batch)
      par->fail("sync_every_micro_batch", "true with use_distributed_optimizer: Megatron-LM reduce-scatters the "
                                          "gradients once per step (no_sync on every micro-batch but the last); "
                                          "expected false");
    if (s.optimizer == "none")
      par->fail("use_distributed_optimizer", "true with optimizer \"none\": there are no optimizer states to shard and "
                                             "no parameters to gather; remove use_distributed_optimizer or set an optimizer");
  }
  if (s.parallelism.overlap_param_gather && !s.parallelism.use_distributed_optimizer)
    par->fail("overlap_param_gather", "true without use_distributed_optimizer: the parameters are gathered only by "
                                      "Megatron-LM's distributed optimizer (arguments.py asserts it); set "
                                      "use_distributed_optimizer true or remove overlap_param_gather");
  check_offload(*par, s);
  apply_expert_parallel(*par, s);
  check_placement(*par, s);
  const JsonReader prec = read_object(root, "precision", s);
  check_float8(prec, s);
  resolve_gemm_math(root, prec, s);
  read_object(root, "activations", s);
  check_context_parallel(*par, batch, s);
  read_object(root, "framework", s);
  check_size(s);
  s.checkpoint.enabled = root.has("checkpoint");
  check_checkpoint(read_object(root, "checkpoint", s), s);

  // Default nominal model: the profile's (hardware::default_collective_model); an overlay is
  // fitted over alpha-beta, so with one the default is alpha-beta (a GEMM-only one is neutral).
  const bool collective_overlay = s.calibration && !s.calibration->tables.empty();
  s.collective_model = collective_overlay ? hardware::CollectiveModel::AlphaBeta
                                          : hardware::default_collective_model(s.hardware);
  s.cost_model = hardware::collective_model_name(s.collective_model);
  read_object(root, "collectives", s);
  JsonReader sim = object_or_empty(root, "sim");
  read_fields(sim, "sim", s);
  check_sim(sim, s);
  sim.finish();
  // CUDA graphs remove the NCCL tuner's launch overhead; the alpha-beta model has none to remove
  // (and a torus profile is no CUDA GPU): the knob would act on nothing.
  if (s.framework.cuda_graphs && s.collective_model != hardware::CollectiveModel::Nccl)
    throw InputError(source, "/framework/cuda_graphs",
                     fmt::format("CUDA graphs remove the per-op launch costs of NCCL's cost model, and this scenario prices "
                                 "collectives with '{}' on profile '{}' (no launch overhead, no per-op host cost to "
                                 "remove); expected collectives.cost_model \"nccl\" on a CUDA GPU profile",
                                 s.cost_model, s.hardware.name));
  root.finish();
  if (s.hardware.is_torus() && s.algorithm != hardware::CollectiveAlgorithm::Auto)
    throw InputError(source, "/collectives/algorithm",
                     fmt::format("profile '{}' is a torus; its collectives are rings over the torus axes "
                                 "(use \"auto\")", s.hardware.name));

  // Echo: the input with defaults filled in, so a report names everything it used.
  nlohmann::json resolved = doc;
  echo_fields(s, "", resolved);
  s.resolved = std::make_shared<const nlohmann::json>(std::move(resolved));
  return s;
}

namespace {

// How the user typed an override: --calibration FILE arrives as calibration=FILE.
std::string override_label(const std::string& o) {
  return o.rfind("calibration=", 0) == 0 ? "--calibration " + o.substr(12) : "--set " + o;
}

}  // namespace

Scenario load_scenario(const std::string& path, const std::vector<std::string>& overrides) {
  return load_scenario_doc(read_json_file(path), path, overrides);
}

Scenario load_scenario_doc(nlohmann::json doc, const std::string& path, const std::vector<std::string>& overrides) {
  for (const auto& o : overrides) apply_scenario_override(doc, o, override_label(o));
  try {
    return parse_scenario(doc, path);
  } catch (const InputError& e) {
    // Say when an override, not the file, holds the bad value.
    if (overrides.empty() || e.path().empty() || e.source() != path) throw;
    // The last --set of a path wins, so it is the one that holds the value; paths match at a
    // component boundary (/parallelism/dp is not under /parallelism/d).
    const auto under = [](const std::string& p, const std::string& prefix) {
      return p.rfind(prefix, 0) == 0 && (p.size() == prefix.size() || p[prefix.size()] == '/');
    };
    for (auto it = overrides.rbegin(); it != overrides.rend(); ++it) {
      std::string dotted = "/" + it->substr(0, it->find('='));
      std::replace(dotted.begin(), dotted.end(), '.', '/');
      if (under(e.path(), dotted) || under(dotted, e.path()))
        throw InputError(path + " (" + override_label(*it) + ")", e.path(), e.detail());
    }
    throw;
  }
}

}  // namespace stepsim::models
