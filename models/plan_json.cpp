// SPDX-License-Identifier: Apache-2.0
// `stepsim plan` (issue 17 item 4). The space: every strategy of the registry (hsdp with each
// shard group that divides dp), tp over the divisors of a node, pp over powers of two (ddp,
// zero1, fsdp and hsdp: DeepSpeed's PipelineEngine refuses ZeRO-2/3), cp over powers of two
// (ddp, fsdp, hsdp), ep over the powers of two dividing a mixture's experts, every power-of-two
// micro-batch that makes the global batch with a whole grad_accum, the recomputation policies
// none / selective_op / full, offload (zero1-3: offload_optimizer cpu, pinned; fsdp / hsdp:
// cpu_offload) without PP, CP or EP, and sync_every_micro_batch for fsdp / hsdp.
//
// Bounds, before any simulation (both are true lower bounds of what run() reports):
//  - memory: per PP stage, the model states each GPU keeps under the strategy's ZeRO stage (the
//    offloaded parts removed) plus what its layers keep for the micro-batches its schedule holds,
//    and FSDP's unsharded gradients and gathered units where they stay; then, per candidate,
//    memory_floor_bytes of the configuration as loaded;
//  - time: the compute stream's own work (per-layer kernels and in-line TP / EP collectives,
//    layer_compute_s) summed over the pipeline's stages with their bubble, at least the model
//    FLOPs at the profile's sustained peak, plus the CPU's optimizer step when offloading.
// The survivors are simulated fastest bound first, in batches through the sweep machinery
// (run_sweep_points: threads; each configuration a tied set of overrides; under MPI each
// process runs its share of every batch, PlanProcesses), each at two short accumulations
// extended to its own, until the next bound is above the K-th best step time found: what is
// left cannot enter the top K. The best are then simulated whole and their knobs tuned.
#include "models/plan.hpp"

#include "hardware/hardware_profile.hpp"
#include "hardware/task_cost.hpp"
#include "models/float8.hpp"
#include "models/memory.hpp"
#include "models/pipeline.hpp"
#include "models/recompute.hpp"
#include "models/simulate.hpp"
#include "models/report.hpp"
#include "models/scenario.hpp"
#include "models/strategy/compute_tasks.hpp"
#include "models/strategy/strategy.hpp"
#include "models/sweep.hpp"
#include "sim/support/error.hpp"
#include "sim/support/json_reader.hpp"
#include "sim/support/resources.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <cmath>
#include <limits>
#include <exception>
#include <functional>
#include <map>
#include <numeric>
#include <optional>
#include <string_view>
#include <thread>

namespace stepsim::models {

namespace {

using json = nlohmann::json;
using ordered = nlohmann::ordered_json;

// Ranking of fitting plans: the faster first, on a tie the one holding less memory.
bool faster_first(const Plan& a, const Plan& b) {
  return a.time_per_step_s() != b.time_per_step_s() ? a.time_per_step_s() < b.time_per_step_s()
                                                    : a.memory_bytes < b.memory_bytes;
}

// The plans simulated whole and knob-tuned whatever --top asks (fewer would let a small --top
// change the ranking's head: a runner-up whose tuned variant was never tried).
constexpr std::int64_t kMinRankedPlans = 5;

// The longest gradient accumulation the search simulates (whole, for the best plans).
constexpr double kMaxPlanGradAccum = 1024;
// The fewest tokens of a sequence a context-parallel rank is searched with (shorter shards
// only add communication to less attention).
constexpr std::int64_t kMinCpTokens = 2048;
// The best plans whose strategy knobs (buckets, overlap, resharding) are tuned.
constexpr std::int64_t kKnobTunedPlans = 10;

// What one tp and recomputation policy cost per token on one GPU, from a reference scenario.
struct Reference {
  bool valid = false;
  std::string error;
  double params = 0;               // trainable parameters of one TP rank
  double flops_per_token = 0;      // model FLOPs per token on one GPU
  std::vector<double> layer_params;           // trainable parameters of each layer (one TP rank's)
  std::vector<double> layer_kept_per_token;   // bytes each layer keeps for backward per token
};

// A query with the scenario's values filled in, and what of the scenario every configuration
// starts from (its searched knobs removed).
struct Resolved {
  PlanQuery q;
  json doc = json::object();
  std::string source = "plan";     // where relative paths resolve from, and messages name
  std::int64_t cluster_nodes = 0;  // the scenario's cluster.nodes (0: none given)
  // The strategy of the one-rank probes and the base scenario: the scenario's own where it names
  // one (a field beside it may need it, e.g. FSDP2's precision.float8_all_gather), else DDP.
  std::string base_strategy = "ddp";
};

// An integer ≥ 1 at `pointer` of the scenario, or 0 when absent.
std::int64_t positive_at(const json& doc, const std::string& pointer, const std::string& source) {
  const json::json_pointer ptr(pointer);
  if (!doc.contains(ptr)) return 0;
  const json& v = doc.at(ptr);
  if (!v.is_number_integer() || v.get<std::int64_t>() < 1)
    throw InputError(source, pointer, fmt::format("expected an integer >= 1, got {}", v.dump()));
  return v.get<std::int64_t>();
}

// A file named on the command line resolves from the working directory, not the scenario's.
std::string from_cwd(const std::string& name) {
  const bool file = name.size() > 5 && name.substr(name.size() - 5) == ".json";
  return file ? std::filesystem::absolute(name).lexically_normal().string() : name;
}

Resolved resolve(const PlanQuery& in) {
  Resolved out;
  out.q = in;
  PlanQuery& q = out.q;
  if (in.scenario.empty() && !in.overrides.empty())
    throw InputError("--set", "", fmt::format("'{}' overrides a scenario's field; give the scenario to plan first", in.overrides.front()));
  if (!in.scenario.empty()) {
    out.source = in.scenario;
    json doc = read_json_file(in.scenario);
    if (!doc.is_object()) throw InputError(in.scenario, "/", "expected a JSON object (a scenario)");
    for (const auto& o : in.overrides) apply_scenario_override(doc, o, "--set");
    if (doc.contains("parallelism") && !doc["parallelism"].is_null()) {  // null: left open, as absent
      // Its global batch and GPUs as they stand, when the flags do not give them: the same job,
      // planned. Its strategy is the search's to choose: one that a field beside it refuses
      // (a --set precision.float8_all_gather over a DDP scenario) is read as FSDP.
      const Scenario s = [&] {
        try {
          return load_scenario_doc(doc, in.scenario, {});
        } catch (const InputError&) {
          json as_fsdp = doc;
          if (!as_fsdp["parallelism"].is_object()) throw;
          as_fsdp["parallelism"]["strategy"] = "fsdp";
          try {
            return load_scenario_doc(as_fsdp, in.scenario, {});
          } catch (const InputError&) {
          }
          throw;
        }
      }();
      if (q.global_batch_tokens == 0)
        q.global_batch_tokens = static_cast<double>(s.parallelism.dp) * static_cast<double>(s.batch.micro_batch_size) *
                                static_cast<double>(s.batch.seq_len) * static_cast<double>(s.batch.grad_accum);
      if (q.gpus == 0) q.gpus = s.world_size();
      if (q.gpus_per_node == 0) q.gpus_per_node = s.cluster.gpus_per_node;
      // The search places ranks in the default order only: another order is refused, not
      // dropped unseen.
      if (s.parallelism.order != kMegatronOrder)
        throw InputError(in.scenario, "/parallelism/order",
                         fmt::format("{}: stepsim plan searches Megatron-LM's default order tp-cp-dp-pp only; drop the "
                                     "order to plan, then run the plan's choice with it",
                                     doc["parallelism"]["order"].dump()));
    }
    if (q.seq_len == 0) q.seq_len = positive_at(doc, "/batch/seq_len", in.scenario);
    if (q.gpus_per_node == 0) q.gpus_per_node = positive_at(doc, "/cluster/gpus_per_node", in.scenario);
    out.cluster_nodes = positive_at(doc, "/cluster/nodes", in.scenario);
    if (doc.contains("/parallelism/strategy"_json_pointer) && doc["parallelism"]["strategy"].is_string())
      out.base_strategy = doc["parallelism"]["strategy"].get<std::string>();
    // What the search chooses.
    doc.erase("parallelism");
    doc.erase("batch");
    doc.erase("cluster");
    if (doc.contains("activations") && doc["activations"].is_object()) {
      doc["activations"].erase("recompute");
      doc["activations"].erase("ac_freq");
    }
    out.doc = std::move(doc);
  }
  if (!q.model.empty()) out.doc["model"] = from_cwd(q.model);
  else if (!out.doc.contains("model"))
    throw InputError("--model", "",
                     in.scenario.empty() ? std::string("a model is required: --model NAME or FILE, or a scenario that names one")
                                         : fmt::format("a model is required: {} names none; give --model NAME or FILE",
                                                       in.scenario));
  if (!q.hardware.empty()) out.doc["hardware"] = from_cwd(q.hardware);
  else if (!out.doc.contains("hardware"))
    throw InputError("--hardware", "",
                     in.scenario.empty()
                         ? std::string("a hardware profile is required: --hardware NAME or FILE, or a scenario that names one")
                         : fmt::format("a hardware profile is required: {} names none; give --hardware NAME or FILE",
                                       in.scenario));
  if (q.model.empty()) q.model = out.doc["model"].is_string() ? out.doc["model"].get<std::string>() : "inline";
  if (q.hardware.empty()) q.hardware = out.doc["hardware"].is_string() ? out.doc["hardware"].get<std::string>() : "inline";
  if (!out.doc.contains("name")) out.doc["name"] = "plan";
  return out;
}

json base_doc(const Resolved& r, std::int64_t gpn) {
  const PlanQuery& q = r.q;
  json d = r.doc;
  d["parallelism"] = {{"strategy", r.base_strategy}, {"dp", q.gpus}};
  d["cluster"] = {{"gpus_per_node", gpn}, {"nodes", std::max<std::int64_t>(1, q.gpus / gpn)}};
  d["batch"] = {{"seq_len", q.seq_len}, {"micro_batch_size", 1}};
  return d;
}

// Strips what a reference scenario of one mesh cannot take from the user's `sim` object (ranks,
// links and expert loads of the whole job's per_rank variation, checked against its ranks): the
// references price one rank's layers alone.
void drop_rank_variation(json& d) {
  if (d.contains("sim") && d["sim"].is_object()) d["sim"] = json::object();
}

std::string miss_text(double bytes) {
  return bytes < 1e8 ? fmt::format("{:.0f} MB", bytes / 1e6) : fmt::format("{:.1f} GB", bytes / 1e9);
}

}  // namespace

std::string Plan::label() const {
  std::string s = strategy;
  if (strategy == "hsdp") s += fmt::format(" shard{}", shard_group_size);
  s += fmt::format(" dp{}", dp);
  if (tp > 1) s += fmt::format(" tp{}", tp);
  if (pp > 1) s += fmt::format(" pp{}", pp);
  if (cp > 1) s += fmt::format(" cp{}", cp);
  if (ep > 1) s += fmt::format(" ep{}", ep);
  s += fmt::format(" mbs{} ga{}", micro_batch_size, grad_accum);
  if (recompute != "none") s += " " + recompute;
  if (sync_every_micro_batch) s += " sync_every_micro_batch";
  if (offload != "none") s += strategy == "fsdp" || strategy == "hsdp" ? " cpu_offload" : " offload_optimizer cpu pinned";
  for (const std::string& k : knobs) s += " " + k;
  return s;
}

std::string Plan::family() const {
  std::string s = strategy;
  if (tp > 1) s += " + tp";
  if (pp > 1) s += " + pp";
  if (cp > 1) s += " + cp";
  if (ep > 1) s += " + ep";
  if (offload != "none") s += " + offload";
  return s;
}

PlanResult plan(const PlanQuery& query, const PlanProcesses& processes) {
  const auto started = std::chrono::steady_clock::now();
  if (query.gpus < 0 || query.gpus > (std::int64_t{1} << 20))
    throw InputError("--gpus", "", fmt::format("expected 1 to 1048576 GPUs, got {}", query.gpus));
  if (query.top < 1 || query.top > 1000) throw InputError("--top", "", fmt::format("expected 1 to 1000 plans, got {}", query.top));
  if (query.seq_len < 0 || query.seq_len > (std::int64_t{1} << 24))
    throw InputError("--seq-len", "", fmt::format("expected 1 to 16777216 tokens, got {}", query.seq_len));
  if (query.gpus_per_node != 0)
    if (const std::string why = hardware::gpus_per_node_problem(query.gpus_per_node); !why.empty())
      throw InputError("--gpus-per-node", "", why + " (0 or absent: the profile's)");
  Resolved resolved = resolve(query);
  PlanQuery& q = resolved.q;
  const std::string& source = resolved.source;

  PlanResult r;
  // The base scenario: DDP (or the scenario's strategy) over every GPU (it loads the model and
  // the profile once, and names what is wrong with them).
  std::int64_t gpn = q.gpus_per_node;
  // One GPU of the model and profile: the profile's node, and the model's own sequence length
  // when neither the flag nor the scenario gives one (a CNN's is 1).
  const auto probe_with = [&](const std::string& strategy) {
    json probe = resolved.doc;
    probe["parallelism"] = {{"strategy", strategy}, {"dp", 1}};
    probe["batch"] = {{"micro_batch_size", 1}};
    if (q.seq_len != 0) probe["batch"]["seq_len"] = q.seq_len;
    drop_rank_variation(probe);
    return load_scenario_doc(probe, source, {});
  };
  // A field beside the parallelism may need another strategy than the scenario's or DDP (FSDP2's
  // precision.float8_all_gather, set over a DDP scenario): the probes and the base scenario run
  // the first of the scenario's strategy, ddp and fsdp that one GPU loads with. What none of
  // them takes is reported as the first refused it.
  std::optional<Scenario> one_gpu;
  std::vector<std::string> strategies = {resolved.base_strategy};
  for (const char* st : {"ddp", "fsdp"})
    if (std::find(strategies.begin(), strategies.end(), st) == strategies.end()) strategies.emplace_back(st);
  // A model with a learned position table (GPT-2's 1,024) caps the sequence: without a length
  // given anywhere, the search runs at that cap; one the flag gives beyond it is the flag's error.
  if (q.seq_len == 0) {
    json probe = resolved.doc;
    probe["parallelism"] = {{"strategy", resolved.base_strategy}, {"dp", 1}};
    probe["batch"] = {{"micro_batch_size", 1}, {"seq_len", 1}};
    drop_rank_variation(probe);
    try {
      const std::int64_t cap = load_scenario_doc(probe, source, {}).model.learned_positions;
      if (cap > 0 && BatchConfig{}.seq_len > cap) q.seq_len = cap;
    } catch (const InputError&) {  // the probes below say what is wrong
    }
  }
  std::exception_ptr first_refusal_of_probe;
  for (const std::string& st : strategies) {
    try {
      one_gpu = probe_with(st);
      resolved.base_strategy = st;
      break;
    } catch (const InputError& e) {
      if (query.seq_len != 0 && e.path().rfind("/batch", 0) == 0 && e.detail().find("seq_len") != std::string::npos)
        throw InputError("--seq-len", "", e.detail());  // the flag's value, not the scenario's
      if (!first_refusal_of_probe) first_refusal_of_probe = std::current_exception();
    }
  }
  if (!one_gpu) std::rethrow_exception(first_refusal_of_probe);
  if (one_gpu) {
    if (gpn == 0) gpn = one_gpu->hardware.gpus_per_node;
    if (q.seq_len == 0) q.seq_len = one_gpu->batch.seq_len;
  }
  if (q.gpus == 0) {
    if (resolved.cluster_nodes == 0)
      throw InputError("--gpus", "", "the GPU count is required: --gpus N, or a scenario whose cluster gives its nodes");
    q.gpus = resolved.cluster_nodes * gpn;
  }
  if (!(q.global_batch_tokens >= 1) || q.global_batch_tokens > 1e15)
    throw InputError("--global-batch-tokens", "",
                     q.global_batch_tokens == 0
                         ? std::string("the global batch is required: --global-batch-tokens T, or a scenario with its "
                                       "parallelism and batch (dp x micro_batch_size x seq_len x grad_accum)")
                         : fmt::format("expected 1 to 1e15 tokens, got {:g}", q.global_batch_tokens));
  if (q.seq_len < 1 || q.seq_len > (std::int64_t{1} << 24))
    throw InputError("--seq-len", "", fmt::format("expected 1 to 16777216 tokens, got {}", q.seq_len));
  r.query = q;
  gpn = std::min<std::int64_t>(gpn, q.gpus);
  if (q.gpus % gpn != 0)
    throw InputError(query.gpus != 0 ? "--gpus" : "--gpus-per-node", "",
                     fmt::format("{} GPUs{} are no whole number of nodes of {}; expected a multiple of {}", q.gpus,
                                 query.gpus != 0 ? "" : " (the scenario's)", gpn, gpn));
  const json base = base_doc(resolved, gpn);
  json base_alone = base;  // DDP over every GPU: a per_rank variation of the scenario may need another mesh
  drop_rank_variation(base_alone);
  const Scenario s0 = load_scenario_doc(base_alone, source, {});
  r.model_name = s0.model.name;
  r.sample_unit = s0.model.sample_unit();
  r.gpus_per_node = gpn;
  r.hardware_name = s0.hardware.name;
  r.parameters = static_cast<double>(s0.model_parameters);
  const double usable = s0.hardware.usable_hbm_bytes();
  // No GEMM runs faster than the best efficiency the profile's compute model allows (the
  // curve's maximum or the flat efficiency), at the sustained clock: a true bound of run()'s.
  const double peak = s0.hardware.sustained_flops_per_s() *
                      std::max(s0.hardware.gemm_curve.present() ? s0.hardware.gemm_curve.max_efficiency : 0.0,
                               s0.hardware.gemm_efficiency);
  const bool host = s0.hardware.host.present();
  const double L = static_cast<double>(q.seq_len);

  // The meshes searched beside DP: tp over a node's divisors; cp (ddp, fsdp and hsdp) over
  // powers of two whose shards keep at least kMinCpTokens tokens of a sequence (seq_len a
  // multiple of 2 x cp); ep (mixtures of experts) over the powers of two dividing the experts.
  const std::vector<std::string> policies = {"none", "selective_op", "full"};
  std::vector<std::int64_t> tps, cps = {1}, eps = {1};
  for (std::int64_t tp = 1; tp <= gpn; tp *= 2)
    if (gpn % tp == 0 && q.gpus % tp == 0) tps.push_back(tp);
  for (std::int64_t cp = 2; cp <= q.gpus && q.seq_len % (2 * cp) == 0 && q.seq_len / cp >= kMinCpTokens; cp *= 2)
    cps.push_back(cp);
  const auto& shape = s0.model.transformer_shape;
  if (shape && shape->moe.experts > 0 && s0.model.has_experts())
    for (std::int64_t ep = 2; ep <= q.gpus && shape->moe.experts % ep == 0; ep *= 2) eps.push_back(ep);
  // Reference scenarios, one per mesh (tp, cp, ep) and policy: one GPU's share of the model and
  // its cost per token (FSDP over the ep ranks an EP group needs, on one micro-batch).
  using MeshKey = std::tuple<std::int64_t, std::int64_t, std::int64_t>;
  const auto mesh_doc = [&](const MeshKey& m, const std::string& policy) {
    const auto [tp, cp, ep] = m;
    json d = base;
    d["parallelism"] = {{"strategy", "fsdp"}, {"dp", ep}, {"tp", tp}};
    if (cp > 1) d["parallelism"]["cp"] = cp;
    if (ep > 1) d["parallelism"]["ep"] = ep;
    d["cluster"] = {{"gpus_per_node", gpn}};
    d["activations"]["recompute"] = policy;
    drop_rank_variation(d);
    return d;
  };
  std::map<std::pair<MeshKey, std::string>, Reference> refs;
  // (filled below, on the threads, for every mesh and policy searched)
  const auto reference = [&](const MeshKey& m, const std::string& policy) -> const Reference& {
    return refs.at(std::pair{m, policy});
  };

  // The GPU's own work per micro-batch, by mesh, policy and micro-batch size: the forward and
  // backward (recomputation included) of one micro-batch through each layer of one rank, as
  // run() prices them, with no communication beside them and no gradient bucket copies (FSDP
  // arms none), priced without the engine (so no allocation ever waits); layer by layer, so
  // that a pipeline's stages can be summed. Empty when the configuration is refused (its own
  // simulation says why later).
  std::map<std::tuple<MeshKey, std::string, std::int64_t>, std::vector<double>> compute_of;
  const auto layer_compute_of = [&](const MeshKey& m, const std::string& policy, std::int64_t mbs) {
    json d = mesh_doc(m, policy);
    d["batch"] = {{"seq_len", q.seq_len}, {"micro_batch_size", mbs}};
    d["sim"]["overlap_model"] = "off";
    try {
      return layer_compute_s(load_scenario_doc(d, source, {}));
    } catch (const InputError&) {
      return std::vector<double>{};
    }
  };
  // The stages of `pp` (one model chunk each) as the strategy's framework splits them, or why
  // the model cannot be split so (the scenario's own rule: it is refused unsimulated).
  struct StageSplit {
    std::string problem;
    std::vector<std::vector<std::size_t>> stages;
  };
  std::map<std::pair<std::int64_t, bool>, StageSplit> splits;
  const auto stage_split = [&](std::int64_t pp, const StrategyEntry& entry) -> const StageSplit& {
    const bool titan = entry.family == StrategyFamily::FSDP;
    auto it = splits.find({pp, titan});
    if (it == splits.end()) {
      Scenario st = s0;
      st.parallelism.strategy = entry.name;
      st.parallelism.pp = pp;
      st.parallelism.virtual_stages = 1;
      StageSplit split;
      if (pp > 1) split.problem = pipeline_problem(st);
      if (pp == 1) {
        split.stages.emplace_back(s0.model.layers.size());
        std::iota(split.stages.front().begin(), split.stages.front().end(), std::size_t{0});
      } else if (split.problem.empty()) {
        split.stages = pipeline_stage_layers(st);
      }
      it = splits.emplace(std::pair{pp, titan}, std::move(split)).first;
    }
    return it->second;
  };
  // A lower bound of a step of `ga` micro-batches whose compute is `per_layer` per micro-batch,
  // on `pp` pipeline stages (one model chunk each) split as the strategy's framework splits
  // them. PP rank k cannot start its first forward before the micro-batch went through the
  // stages before it, runs ga forwards and backwards of its own layers, and its last backward
  // is followed by the backwards of the stages before it: T(0) + … + T(k−1) + ga·T(k) for
  // every k, T(s) the compute of stage s for one micro-batch (without PP: ga·T(0)). The
  // pipeline's bubble, (pp − 1) stages' worth of it, is what makes this tighter than ga/pp of
  // the model's compute.
  const auto compute_bound = [&](const std::vector<double>& per_layer, const StageSplit& split, double ga) {
    double before = 0, bound = 0;
    for (const auto& stage : split.stages) {
      double t = 0;
      for (const std::size_t l : stage)
        if (l < per_layer.size()) t += per_layer[l];
      bound = std::max(bound, before + ga * t);
      before += t;
    }
    return bound;
  };

  // The references every mesh searched needs, computed on the threads before the space is
  // walked (the walk then finds them; the same values as computed there, in any order).
  {
    std::vector<std::pair<MeshKey, std::string>> keys;
    for (const std::int64_t tp : tps)
      for (const std::int64_t cp : cps)
        for (const std::int64_t ep : eps)
          for (const auto& policy : policies) keys.emplace_back(MeshKey{tp, cp, ep}, policy);
    std::vector<Reference> computed(keys.size());
    for_each_row(keys.size(), q.threads, [&](std::size_t k) {
      Reference ref;
      try {
        const Scenario s = load_scenario_doc(mesh_doc(keys[k].first, keys[k].second), source, {});
        const double tokens = static_cast<double>(s.tokens_per_micro_batch());
        ref.params = static_cast<double>(s.model.trainable_parameter_count());
        ref.flops_per_token = model_flops_per_gpu_step(s) / tokens;
        // What every layer keeps for backward, alive together when the last forward starts (the
        // transient of a layer's recomputation comes on top, after some are freed: not counted).
        for (std::size_t l = 0; l < s.model.layers.size(); ++l) {
          ref.layer_kept_per_token.push_back(kept_activation_bytes_per_token(s, l));
          double n = 0;
          for (const ParamTensor& t : s.model.layers[l].params)
            if (t.trainable) n += static_cast<double>(t.numel);
          ref.layer_params.push_back(n);
        }
        ref.valid = true;
      } catch (const InputError& e) {
        ref.error = e.detail();
      }
      computed[k] = std::move(ref);
    });
    for (std::size_t k = 0; k < keys.size(); ++k) refs.emplace(keys[k], std::move(computed[k]));
  }

  // ---- the space ----
  std::vector<Plan> all;
  // The compute-stream part of each plan's time bound, priced once the space is known (on the
  // threads, once per mesh, policy and micro-batch): the plan's index in `all` and what the
  // bound needs.
  struct PendingBound {
    std::size_t plan;
    std::tuple<MeshKey, std::string, std::int64_t> key;
    const StageSplit* split;
    double offload_s;
  };
  std::vector<PendingBound> pending;
  std::map<std::string, PlanFamily> families;
  std::map<std::string, std::pair<std::int64_t, std::string>> not_searched;  // rule → (configurations, the first)
  std::map<std::string, std::pair<std::int64_t, std::string>> refused_rules;  // the same, for searched ones
  std::map<std::string, std::string> first_refusal;                            // family → its first rule
  const auto note_refusal = [&](const std::string& why, const std::string& label) {
    auto& [count, example] = refused_rules[why];
    if (count++ == 0) example = label;
  };
  double least_miss = std::numeric_limits<double>::infinity();
  std::string least_miss_label, least_miss_kind;
  // The closest miss among those within GPU memory that host memory ruled out (offload).
  double least_host_miss = std::numeric_limits<double>::infinity();
  std::string least_host_miss_label;
  const auto note_miss = [&](PlanFamily& fam, double miss, const Plan& p, const char* kind) {
    if (fam.least_miss_bytes == 0 || miss < fam.least_miss_bytes) fam.least_miss_bytes = miss;
    if (miss < least_miss) {
      least_miss = miss;
      least_miss_label = p.label();
      least_miss_kind = kind;
    }
    if (std::string_view(kind).find("host") != std::string_view::npos && miss < least_host_miss) {
      least_host_miss = miss;
      least_host_miss_label = p.label();
    }
  };
  const double host_capacity = s0.hardware.host.memory_bytes;
  // Bytes per element of a parameter and of its gradient as FSDP holds them unsharded (gathered
  // in FP8 under float8 all-gather, the gradient in the reduce dtype: fsdp.cpp), the narrowest
  // of the model's tensors.
  double narrowest_param_bytes = 4, narrowest_grad_bytes = 4;
  for (std::size_t l = 0; l < s0.model.layers.size(); ++l)
    for (std::size_t i = 0; i < s0.model.layers[l].params.size(); ++i) {
      narrowest_param_bytes = std::min(narrowest_param_bytes, all_gather_bytes_per_element(s0, l, i));
      narrowest_grad_bytes = std::min(narrowest_grad_bytes, s0.precision.reduce_bytes(s0.model.layers[l].params[i].dtype));
    }
  const std::int64_t layers = static_cast<std::int64_t>(s0.model.layers.size());
  for (const std::int64_t tp : tps)
    for (const std::int64_t cp : cps)
    for (const std::int64_t ep : eps)
    for (std::int64_t pp = 1; pp <= 64 && pp <= layers; pp *= 2) {
      if (q.gpus % (tp * cp * pp) != 0) continue;
      const std::int64_t dp = q.gpus / (tp * cp * pp);
      // EP groups are ep consecutive data ranks (dp × cp), and not modelled with PP.
      if (ep > 1 && ((dp * cp) % ep != 0 || pp > 1)) continue;
      const MeshKey mesh{tp, cp, ep};
      for (const auto& entry : strategy_registry()) {
        const std::string name = entry.name;
        if (pp > 1 && entry.family == StrategyFamily::DeepSpeed && entry.zero_stage >= 2) continue;  // refused by DeepSpeed
        if (cp > 1 && entry.family == StrategyFamily::DeepSpeed && entry.zero_stage >= 1) continue;  // CP: ddp, fsdp, hsdp
        std::vector<std::int64_t> shards = {0};
        if (entry.hybrid) {
          // Shard groups of whole nodes (the DP ranks a node holds, doubled), or below one node
          // every divisor: HSDP shards inside a node or over a few, and replicates across; an
          // EP group inside one shard group.
          shards.clear();
          const std::int64_t node = std::max<std::int64_t>(1, gpn / (tp * cp));
          for (std::int64_t g = 2; g < dp; ++g)
            if (dp % g == 0 && (g <= node || g % node == 0) && (g < node || (g & (g - 1)) == 0 || g == node) &&
                (g * cp) % ep == 0 && g % cp == 0)
              shards.push_back(g);
        }
        for (const std::int64_t shard : shards)
          for (std::int64_t mbs = 1; mbs <= 64; mbs *= 2) {
            const double per_rank = q.global_batch_tokens / static_cast<double>(dp);
            const double ga = per_rank / (static_cast<double>(mbs) * L);
            // Longer accumulations are not searched: a step of more than kMaxPlanGradAccum
            // micro-batches is better served by a larger micro-batch or fewer GPUs.
            if (ga < 1 || ga != std::floor(ga) || ga > kMaxPlanGradAccum) continue;
            for (const auto& policy : policies)
              for (const std::string offload : {"none", "cpu"})
              for (const bool sync : {false, true}) {
                if (offload == "cpu" && (!host || entry.zero_stage == 0 || pp > 1 || cp > 1 || ep > 1)) continue;
                // FSDP and HSDP accumulate unsharded gradients over the micro-batches that skip
                // their reduction (set_requires_gradient_sync(False)); reducing every micro-batch
                // trades that memory for communication. DDP's no_sync costs no memory, the ZeRO
                // stages reduce every micro-batch anyway, and PP reduces once per step.
                if (sync && (entry.family != StrategyFamily::FSDP || ga == 1 || pp > 1)) continue;
                Plan p;
                p.strategy = name;
                p.dp = dp;
                p.tp = tp;
                p.pp = pp;
                p.cp = cp;
                p.ep = ep;
                p.shard_group_size = shard;
                p.micro_batch_size = mbs;
                p.grad_accum = static_cast<std::int64_t>(ga);
                p.recompute = policy;
                p.offload = offload;
                p.sync_every_micro_batch = sync;
                // A mesh, pipeline split or policy the scenario's rules refuse for the model is no
                // configuration: counted apart, once per rule.
                const Reference& ref = reference(mesh, policy);
                const StageSplit& split = stage_split(pp, entry);
                if (!ref.valid || !split.problem.empty()) {
                  std::string why = ref.valid ? split.problem : ref.error;
                  // "2: model ... is refused", "4: model ... is refused": one rule.
                  if (const auto colon = why.find(": "); colon != std::string::npos && colon > 0 &&
                      why.find_first_not_of("0123456789") == colon)
                    why = why.substr(colon + 2);
                  auto& [count, example] = not_searched[why];
                  if (count++ == 0) example = p.label();
                  continue;
                }
                PlanFamily& fam = families[p.family()];
                fam.name = p.family();
                ++fam.configurations;
                ++r.configurations;
                // Memory bound: the stage that needs the most, of its model states under the
                // strategy's ZeRO stage (the offloaded parts removed) and what its layers keep for
                // backward of the micro-batches its schedule holds at once (1F1B: min(pp − k, ga)
                // on PP rank k, pipeline_micro_batches_in_flight; all of them alive when the last
                // of its forwards starts).
                const double local = ref.params / static_cast<double>(pp);
                // At most dp × cp ranks shard a state (HSDP: its shard group's, counted at its widest).
                const std::int64_t shard_ranks = entry.zero_stage == 0 ? 1 : entry.hybrid ? shard * cp : dp * cp;
                const bool fsdp_family = entry.family == StrategyFamily::FSDP;
                for (std::size_t k = 0; k < split.stages.size(); ++k) {
                  double params = 0, kept = 0;
                  for (const std::size_t l : split.stages[k]) {
                    if (l >= ref.layer_params.size()) continue;
                    params += ref.layer_params[l];
                    kept += ref.layer_kept_per_token[l];
                  }
                  ModelStates st = zero_model_states(params, shard_ranks, entry.zero_stage,
                                                     optimizer_state_bytes_per_param(s0.optimizer, DType::BF16), 2.0);
                  if (offload == "cpu") {
                    st.optimizer_bytes = 0;
                    if (entry.zero_stage >= 2) st.grads_bytes = 0;
                    if (fsdp_family) st.params_bytes = 0;
                  }
                  const double in_flight = static_cast<double>(std::min<std::int64_t>(pp - static_cast<std::int64_t>(k), p.grad_accum));
                  const double kept_per_micro_batch = kept * static_cast<double>(mbs) * L / static_cast<double>(cp);
                  p.memory_lower_bound_bytes = std::max(p.memory_lower_bound_bytes,
                                                        st.total_bytes() + kept_per_micro_batch * in_flight);
                  // FSDP / HSDP skipping the reduction of every micro-batch but the last hold every
                  // unit's unsharded gradient (in the reduce dtype) from the first micro-batch's
                  // backward to the last's reduction (fsdp.cpp's set_requires_gradient_sync(False)):
                  // without PP, all of them beside everything the last micro-batch's forward keeps.
                  // Under PP (strategy/pipeline.cpp) every unit of the stage also stays gathered
                  // the whole step, and its gradients accumulate unsharded to the last backward:
                  // all of them once the stage's first backward ends, beside the micro-batches
                  // its schedule still holds (the in-flight ones but that one).
                  const double unsharded_grads = narrowest_grad_bytes * params;
                  if (fsdp_family && pp == 1 && !sync && p.grad_accum > 1)
                    p.memory_lower_bound_bytes =
                        std::max(p.memory_lower_bound_bytes, st.total_bytes() + unsharded_grads + kept_per_micro_batch);
                  if (fsdp_family && pp > 1)
                    p.memory_lower_bound_bytes =
                        std::max(p.memory_lower_bound_bytes, st.total_bytes() + narrowest_param_bytes * params +
                                                                 unsharded_grads + kept_per_micro_batch * (in_flight - 1));
                }
                // Host memory under offload: each GPU's fp32 master, Adam states and fp32 gradient
                // partition (16 B per element; the memory model adds buffers on top).
                const double host_bound = offload == "cpu" ? 16.0 * local / static_cast<double>(shard_ranks) *
                                                                 static_cast<double>(gpn)
                                                           : 0.0;
                if (p.memory_lower_bound_bytes > usable || host_bound > host_capacity) {
                  ++r.pruned_by_memory;
                  ++fam.over_memory_bound;
                  if (p.memory_lower_bound_bytes > usable)
                    note_miss(fam, p.memory_lower_bound_bytes - usable, p, "of GPU memory by its lower bound");
                  else
                    note_miss(fam, host_bound - host_capacity, p, "of host memory by its lower bound");
                  continue;
                }
                // Time bound (of what fits under the memory bounds only: it prices the layers).
                // Full recomputation runs every forward twice: 4/3 of the model FLOPs. The GPU's own
                // work per micro-batch, when it prices, is the tighter bound.
                p.time_lower_bound_s = ref.flops_per_token * per_rank / static_cast<double>(cp * pp) / peak *
                                       (policy == "full" ? 4.0 / 3.0 : 1.0);
                double offload_s = 0;
                if (offload == "cpu") {
                  const double rate = s0.hardware.host.cpu_adam_params_per_s / static_cast<double>(gpn) *
                                      (fsdp_family ? hardware::kTorchCpuAdamFraction : 1.0);
                  offload_s = local / static_cast<double>(shard_ranks) / rate;
                }
                pending.push_back({all.size(), {mesh, policy, mbs}, &split, offload_s});
                json par = {{"strategy", name}, {"dp", dp}};
                if (tp > 1) par["tp"] = tp;
                if (pp > 1) par["pp"] = pp;
                if (cp > 1) par["cp"] = cp;
                if (ep > 1) par["ep"] = ep;
                if (shard > 0) par["shard_group_size"] = shard;
                if (sync) par["sync_every_micro_batch"] = true;
                if (offload == "cpu") {
                  if (fsdp_family) par["cpu_offload"] = true;
                  else par["offload_optimizer"] = {{"device", "cpu"}, {"pin_memory", true}};
                }
                const json batch = {{"seq_len", q.seq_len}, {"micro_batch_size", mbs}, {"grad_accum", p.grad_accum}};
                p.overrides = {par.dump(), batch.dump(), policy};
                all.push_back(std::move(p));
              }
          }
      }
    }
  {
    std::vector<std::tuple<MeshKey, std::string, std::int64_t>> keys;
    for (const PendingBound& b : pending)
      if (compute_of.emplace(b.key, std::vector<double>{}).second) keys.push_back(b.key);
    for_each_row(keys.size(), q.threads, [&](std::size_t k) {
      const auto& [m, policy, mbs] = keys[k];
      compute_of.at(keys[k]) = layer_compute_of(m, policy, mbs);  // distinct entries: no two threads share one
    });
    for (const PendingBound& b : pending) {
      Plan& p = all[b.plan];
      p.time_lower_bound_s = std::max(p.time_lower_bound_s,
                                      compute_bound(compute_of.at(b.key), *b.split, static_cast<double>(p.grad_accum))) +
                             b.offload_s;
    }
  }
  const auto ruled_out = [](const std::map<std::string, std::pair<std::int64_t, std::string>>& rules) {
    std::vector<PlanRuledOut> out;
    for (const auto& [why, entry] : rules) out.push_back(PlanRuledOut{entry.first, entry.second, why});
    std::stable_sort(out.begin(), out.end(),
                     [](const PlanRuledOut& a, const PlanRuledOut& b) { return a.configurations > b.configurations; });
    return out;
  };
  r.not_searched = ruled_out(not_searched);
  if (r.configurations == 0 && !r.not_searched.empty())
    throw InputError("--model", "",
                     fmt::format("every configuration is refused by the scenario's rules, e.g. {}: {}",
                                 r.not_searched.front().example, r.not_searched.front().reason));
  if (r.configurations == 0)
    throw InputError("--global-batch-tokens", "",
                     fmt::format("no configuration makes a global batch of {:.0f} tokens{} on {} GPUs at seq_len {}: it must be "
                                 "dp × micro_batch_size × seq_len × grad_accum, with micro_batch_size a power of two up "
                                 "to 64 and grad_accum a whole number up to {:g}{}",
                                 q.global_batch_tokens, query.global_batch_tokens == 0 ? " (the scenario's)" : "", q.gpus,
                                 q.seq_len, kMaxPlanGradAccum,
                                 q.global_batch_tokens == std::floor(q.global_batch_tokens / 1e6) * 1e6
                                     ? " (a decimal M is 1,000,000: 4Mi is 4,194,304)"
                                     : ""));

  // ---- simulate, fastest bound first ----
  std::stable_sort(all.begin(), all.end(),
                   [](const Plan& a, const Plan& b) { return a.time_lower_bound_s < b.time_lower_bound_s; });
  std::vector<Plan> fitting;
  const std::int64_t depth = std::max(q.top, kMinRankedPlans);  // plans ranked (the first q.top printed)
  const auto kth = [&]() {
    if (static_cast<std::int64_t>(fitting.size()) < depth) return std::numeric_limits<double>::infinity();
    return fitting[static_cast<std::size_t>(depth - 1)].time_per_step_s();
  };
  const std::vector<std::string> paths = {"parallelism", "batch", "activations.recompute"};
  SweepOptions options;
  options.threads = q.threads;
  // A fixed batch, whatever the thread count: the same query simulates the same configurations.
  constexpr std::size_t batch_size = 16;
  // Runs `plans` (each with its grad_accum replaced by `ga_of(plan)`) through the sweep
  // machinery; returns each one's outcome.
  // Runs each (plan, grad_accum) through the sweep machinery; returns each one's outcome.
  const auto simulate_at = [&](const std::vector<std::pair<const Plan*, std::int64_t>>& runs) {
    if (runs.empty()) return std::vector<PointOutcome>{};
    std::vector<SweepAxis> axes(paths.size());
    for (std::size_t a = 0; a < paths.size(); ++a) {
      axes[a].path = paths[a];
      axes[a].tied_to = a == 0 ? -1 : 0;
    }
    for (const auto& [p, ga] : runs) {
      json batch = json::parse(p->overrides[1]);
      batch["grad_accum"] = ga;
      axes[0].values.push_back(p->overrides[0]);
      axes[1].values.push_back(batch.dump());
      axes[2].values.push_back(p->overrides[2]);
    }
    if (processes.part.parts <= 1) return run_sweep_points(base, source, axes, options);
    // This process's share, then every process's outcomes (a failure travels as a message in
    // place of the outcomes, so that no process waits for one that threw), each behind the
    // fingerprint of the batch it belongs to.
    std::uint64_t print = 14695981039346656037ull;  // FNV-1a 64 of what the batch simulates
    for (const SweepAxis& axis : axes)
      for (const std::string& v : axis.values)
        for (const char c : v + '\n') print = (print ^ static_cast<unsigned char>(c)) * 1099511628211ull;
    const std::string fingerprint = fmt::format("{:016x}", print);
    SweepOptions share = options;
    share.part = processes.part;
    std::vector<std::string> parts =
        processes.all_gather(fingerprint + encode_part([&] { return run_sweep_points(base, source, axes, share); }));
    const auto rank = [&](std::size_t k) {
      return k == 0 ? std::string() : fmt::format("rank {} of {}: ", k, parts.size());
    };
    for (std::size_t k = 0; k < parts.size(); ++k) {
      std::string& part = parts[k];
      if (!part.empty() && part[0] == kPlanStopped) {  // that process stopped: so does this one
        if (part.size() > 1 && part[1] == 'I') throw InputError("", "", rank(k) + part.substr(2));
        if (part.size() > 1 && part[1] == 'X') throw InternalError(rank(k) + part.substr(2));
        throw InputError("", "", fmt::format("rank {} of {} ended its search while this one had more to simulate: "
                                             "the ranks disagree on the search (are the files and arguments the same "
                                             "on every node?)", k, parts.size()));
      }
      if (part.compare(0, fingerprint.size(), fingerprint) != 0)
        throw InputError("", "", fmt::format("rank {} of {} simulates another batch than rank 0: the ranks disagree on "
                                             "the search (are the files and arguments the same on every node?)",
                                             k == 0 ? processes.part.index : k, parts.size()));
      part.erase(0, fingerprint.size());
    }
    std::vector<PointOutcome> outcomes = decode_parts(std::move(parts), "rank");
    if (outcomes.size() != runs.size())
      throw InternalError(fmt::format("plan: {} outcomes for a batch of {}", outcomes.size(), runs.size()));
    return outcomes;
  };
  const auto simulate = [&](const std::vector<const Plan*>& plans, const std::function<std::int64_t(const Plan&)>& ga_of) {
    std::vector<std::pair<const Plan*, std::int64_t>> runs;
    for (const Plan* p : plans) runs.emplace_back(p, ga_of(*p));
    return simulate_at(runs);
  };
  struct Figures {
    bool gpu_fits = false, host_fits = true;
    double step = 0, tokens = 0, mfu = 0, memory = 0, capacity = 0, host = 0, host_capacity = 0, comm = 0, offload = 0;
    double checkpoint = 0, waits = 0;
  };
  const auto figures = [](const PointOutcome& o) {
    Figures f;
    for (const auto& [key, v] : o.metrics) {
      const double x = v.number.value_or(0);
      if (key == "step_time_s") f.step = x;
      else if (key == "tokens_per_s") f.tokens = x;
      else if (key == "mfu") f.mfu = x;
      else if (key == "memory.total_bytes") f.memory = x;
      else if (key == "memory.capacity_bytes") f.capacity = x;
      else if (key == "memory.fits") f.gpu_fits = x != 0;
      else if (key == "memory.host_fits") f.host_fits = x != 0;
      else if (key == "memory.host_bytes") f.host = x;
      else if (key == "memory.host_capacity_bytes") f.host_capacity = x;
      else if (key == "exposed_comm_s") f.comm = x;
      else if (key == "offload.exposed_time_s") f.offload = x;
      else if (key == "checkpoint.amortised_s") f.checkpoint = x;
      else if (key == "memory.allocation_wait_s") f.waits = x;
    }
    return f;
  };
  // A plan's figures from a simulation of its whole step.
  const auto take_whole = [](Plan& p, const Figures& f) {
    p.step_time_s = f.step;
    p.tokens_per_s = f.tokens;
    p.mfu = f.mfu;
    p.memory_bytes = f.memory;
    p.capacity_bytes = f.capacity;
    p.exposed_comm_s = f.comm;
    p.exposed_offload_s = f.offload;
    p.checkpoint_s = f.checkpoint;
    p.allocation_wait_s = f.waits;
  };
  // The search simulates each configuration at two short accumulations, g and g + 1 with g =
  // max(2, pp) (from there every further micro-batch adds the same time: DDP's no_sync and the
  // ZeRO stages repeat one micro-step, a 1F1B pipeline one slot), and extends the step linearly
  // to its grad_accum; the best found are simulated whole at the end.
  const auto short_ga = [](const Plan& p) { return std::min(p.grad_accum, std::max<std::int64_t>(2, p.pp)); };
  // Both short runs of every plan (the second only where the accumulation is longer than the
  // first's), for one call: one batch of points for the threads.
  const auto short_runs = [&](const std::vector<const Plan*>& batch) {
    std::vector<std::pair<const Plan*, std::int64_t>> runs;
    for (const Plan* p : batch) runs.emplace_back(p, short_ga(*p));
    for (const Plan* p : batch)
      if (p->grad_accum > short_ga(*p)) runs.emplace_back(p, short_ga(*p) + 1);
    return runs;
  };
  // Their outcomes (in short_runs' order) as each plan's first and second run (the first again
  // where there is no second).
  const auto split_short = [&](const std::vector<const Plan*>& batch, std::vector<PointOutcome> first) {
    std::vector<PointOutcome> second(first.begin(), first.begin() + static_cast<std::ptrdiff_t>(batch.size()));
    for (std::size_t k = 0, l = batch.size(); k < batch.size(); ++k)
      if (batch[k]->grad_accum > short_ga(*batch[k])) second[k] = std::move(first[l++]);
    first.resize(batch.size());
    return std::pair{std::move(first), std::move(second)};
  };
  // The step of `p` extended from its short runs' steps `a` (at short_ga) and `b` (one more).
  const auto extend_step = [&](const Plan& p, double a, double b) {
    const double g = static_cast<double>(short_ga(p)), more = static_cast<double>(p.grad_accum) - g;
    const double dg = std::max(1.0, static_cast<double>(std::min(p.grad_accum, short_ga(p) + 1)) - g);
    return a + more * (b - a) / dg;
  };
  std::map<std::string, Figures> exact;  // by label: plans whose short run was the whole step
  std::size_t next = 0;
  while (next < all.size() && all[next].time_lower_bound_s < kth()) {
    // The next configurations in bound order, up to the first whose bound the K-th best found
    // so far already beats (it and all after it cannot enter the top K).
    std::size_t end = next;
    while (end < std::min(all.size(), next + batch_size) && all[end].time_lower_bound_s < kth()) ++end;
    std::vector<const Plan*> batch;
    std::vector<Plan*> members;
    // Before simulating: the scenario's own rules, and the memory floor of the configuration
    // as it is (memory_floor_bytes: every state and persistent buffer the strategy holds, not
    // only the model states the bound above counts). Loaded on the threads, judged in order.
    struct Check {
      std::string refused;  // the rule that refused it ("" = none)
      double floor = 0, host = 0, host_capacity = 0;
      bool host_fits = true;
    };
    std::vector<Check> checks(end - next);
    for_each_row(checks.size(), q.threads, [&](std::size_t k) {
      const Plan& p = all[next + k];
      json d = base;
      d["parallelism"] = json::parse(p.overrides[0]);
      d["batch"] = json::parse(p.overrides[1]);
      d["activations"]["recompute"] = p.overrides[2];
      try {
        const Scenario sc = load_scenario_doc(d, source, {});
        const MemoryBreakdown statics = static_memory(sc);
        checks[k] = {"", memory_floor_bytes(sc), statics.host_bytes, statics.host_capacity_bytes, statics.host_fits};
      } catch (const InputError& e) {
        checks[k].refused = e.detail();
      }
    });
    for (std::size_t i = next; i < end; ++i) {
      Plan& p = all[i];
      const Check& c = checks[i - next];
      PlanFamily& fam = families[p.family()];
      if (!c.refused.empty()) {
        p.error = c.refused;
        ++r.refused;
        ++fam.refused;
        first_refusal.emplace(fam.name, p.error);
        note_refusal(p.error, p.label());
        continue;
      }
      if (c.floor > usable || !c.host_fits) {
        ++r.pruned_by_memory;
        ++fam.over_memory_bound;
        if (c.floor > usable) note_miss(fam, c.floor - usable, p, "of GPU memory by its lower bound");
        else note_miss(fam, c.host - c.host_capacity, p, "of host memory by its lower bound");
        continue;
      }
      batch.push_back(&p);
      members.push_back(&p);
    }
    const auto [first, second] = split_short(batch, simulate_at(short_runs(batch)));
    for (std::size_t k = 0; k < batch.size(); ++k) {
      Plan& p = *members[k];
      const PointOutcome& o = first[k];
      PlanFamily& fam = families[p.family()];
      ++r.simulated;
      ++fam.simulated;
      p.simulated = true;
      const std::string error = !o.error.empty() ? o.error : second[k].error;
      if (!error.empty()) {
        p.error = error;
        ++r.refused;
        ++fam.refused;
        first_refusal.emplace(fam.name, error);
        note_refusal(error, p.label());
        continue;
      }
      const Figures a = figures(o), b = figures(second[k]);
      const double g = static_cast<double>(short_ga(p));
      const auto extend = [&](double x, double y) { return extend_step(p, x, y); };
      p.step_time_s = extend(a.step, b.step);
      p.tokens_per_s = q.global_batch_tokens / p.step_time_s;
      p.mfu = a.mfu * (static_cast<double>(p.grad_accum) / g) * (a.step / p.step_time_s);
      p.memory_bytes = std::max(a.memory, b.memory);
      p.capacity_bytes = a.capacity;
      p.exposed_comm_s = extend(a.comm, b.comm);
      p.exposed_offload_s = extend(a.offload, b.offload);
      p.checkpoint_s = a.checkpoint;  // one save per interval, whatever the accumulation
      p.allocation_wait_s = extend(a.waits, b.waits);
      const bool gpu_fits = a.gpu_fits && b.gpu_fits, host_fits = a.host_fits && b.host_fits;
      p.fits = gpu_fits && host_fits;
      if (!p.fits) {
        ++fam.did_not_fit;
        if (!gpu_fits) note_miss(fam, p.memory_bytes - p.capacity_bytes, p, "of GPU memory, simulated");
        else note_miss(fam, std::max(a.host, b.host) - a.host_capacity, p, "of host memory, simulated");
        continue;
      }
      if (fam.best_step_time_s == 0 || p.time_per_step_s() < fam.best_step_time_s) {  // extended; exact below when it is simulated whole
        fam.best_step_time_s = p.time_per_step_s();
        fam.best_label = p.label();
      }
      // The short runs ran the whole step when its accumulation is that short: their figures are the step's.
      if (p.grad_accum == short_ga(p)) exact.emplace(p.label(), a);
      else if (p.grad_accum == short_ga(p) + 1) exact.emplace(p.label(), b);
      fitting.push_back(p);
    }
    std::stable_sort(fitting.begin(), fitting.end(),
                     faster_first);
    next = end;
  }
  // The best found, simulated whole: the figures reported. The extension from two short runs is
  // exact when every further micro-batch repeats the same time (it has been, to 1e-5, on every
  // search tried); the whole runs check it. The best K are simulated whole, then every further
  // plan whose extended step, less twice the largest error the extension made so far, could
  // still enter the top K, until none can.
  //
  // The strategy's own knobs, tuned on the best K (at most kKnobTunedPlans) as extended, with the
  // variants users reach for (DDP: bucket_cap_mb a quarter and four times PyTorch's 25 MiB,
  // gradient_as_bucket_view; ZeRO-1/2: overlap_comm, with reduce_bucket_size at a quarter and
  // four times DeepSpeed's 5e8 elements; ZeRO-3: stage3_prefetch_bucket_size four times 5e7;
  // FSDP / HSDP without PP: reshard_after_forward false): each variant runs its two short
  // accumulations beside the first whole runs; one that fits and, extended, beats its base
  // plan's whole step is simulated whole and joins the ranking when it still does. The bounds do
  // not depend on the knobs: they are the base plan's.
  {
    std::vector<Plan> variants;
    for (std::size_t k = 0; k < fitting.size() && static_cast<std::int64_t>(k) < std::min<std::int64_t>(depth, kKnobTunedPlans); ++k) {
      const Plan& base_plan = fitting[k];
      const StrategyEntry& entry = find_strategy(base_plan.strategy);
      std::vector<std::vector<std::string>> sets;
      if (entry.zero_stage == 0) sets = {{"bucket_cap_mb=6.25"}, {"bucket_cap_mb=100"}, {"gradient_as_bucket_view=true"}};
      else if (entry.family == StrategyFamily::DeepSpeed && entry.zero_stage < 3)
        sets = {{"overlap_comm=true"}, {"overlap_comm=true", "reduce_bucket_size=1.25e8"}, {"overlap_comm=true", "reduce_bucket_size=2e9"}};
      else if (entry.family == StrategyFamily::DeepSpeed) sets = {{"stage3_prefetch_bucket_size=2e8"}};
      else if (base_plan.pp == 1) sets = {{"reshard_after_forward=false"}};
      for (const auto& knobs : sets) {
        Plan v = base_plan;
        v.knobs = knobs;
        json par = json::parse(v.overrides[0]);
        for (const std::string& knob : knobs) {
          const auto eq = knob.find('=');
          par[knob.substr(0, eq)] = json::parse(knob.substr(eq + 1));
        }
        v.overrides[0] = par.dump();
        variants.push_back(std::move(v));
      }
    }
    std::vector<const Plan*> variant_batch;
    for (const Plan& v : variants) variant_batch.push_back(&v);
    const auto variant_runs = short_runs(variant_batch);
    std::vector<PointOutcome> variant_outcomes;

    std::map<std::string, double> whole_time;  // label → its whole step (checkpoints included), of every base run whole
    std::vector<Plan> whole_fit;
    double error = 0;
    std::size_t done = 0, upto = std::min<std::size_t>(fitting.size(), static_cast<std::size_t>(depth));
    while (done < upto) {
      std::vector<std::pair<const Plan*, std::int64_t>> runs;
      for (std::size_t k = done; k < upto; ++k)
        if (!exact.count(fitting[k].label())) runs.emplace_back(&fitting[k], fitting[k].grad_accum);
      const std::size_t whole_runs = runs.size();
      if (done == 0) runs.insert(runs.end(), variant_runs.begin(), variant_runs.end());  // one batch for the threads
      std::vector<PointOutcome> whole = simulate_at(runs);
      if (done == 0) variant_outcomes.assign(std::make_move_iterator(whole.begin() + static_cast<std::ptrdiff_t>(whole_runs)),
                                             std::make_move_iterator(whole.end()));
      for (std::size_t k = done, w = 0; k < upto; ++k) {
        Plan& p = fitting[k];
        const auto it = exact.find(p.label());
        const bool ran = it == exact.end();
        const Figures f = ran ? figures(whole[w]) : it->second;
        const std::string run_error = ran ? whole[w++].error : std::string();
        if (ran && run_error.empty() && f.step > 0) error = std::max(error, std::abs(p.step_time_s / f.step - 1));
        take_whole(p, f);
        p.fits = run_error.empty() && f.gpu_fits && f.host_fits;
        if (run_error.empty()) whole_time[p.label()] = p.time_per_step_s();
        if (p.fits) whole_fit.push_back(p);
      }
      done = upto;
      std::stable_sort(whole_fit.begin(), whole_fit.end(), faster_first);
      const double kth_whole = static_cast<std::int64_t>(whole_fit.size()) < depth
                                   ? std::numeric_limits<double>::infinity()
                                   : whole_fit[static_cast<std::size_t>(depth - 1)].time_per_step_s();
      while (upto < fitting.size() && fitting[upto].time_per_step_s() * (1 - 2 * error) <= kth_whole) ++upto;
    }
    fitting = std::move(whole_fit);
    {
      const auto [first, second] = split_short(variant_batch, std::move(variant_outcomes));
      std::vector<const Plan*> promising;
      std::vector<std::size_t> promising_index;
      std::vector<std::optional<Figures>> whole(variants.size());
      std::vector<double> base_time(variants.size(), 0);
      for (std::size_t k = 0; k < variants.size(); ++k) {
        Plan& v = variants[k];
        ++r.knob_variants;
        const std::string error = !first[k].error.empty() ? first[k].error : second[k].error;
        if (!error.empty()) {
          note_refusal(error, v.label());
          continue;
        }
        Plan base_plan = v;
        base_plan.knobs.clear();
        const auto it = whole_time.find(base_plan.label());
        if (it == whole_time.end()) continue;  // its base did not run whole
        base_time[k] = it->second;
        const Figures a = figures(first[k]), b = figures(second[k]);
        if (!(a.gpu_fits && b.gpu_fits && a.host_fits && b.host_fits)) continue;
        // The defaults do as well (to rounding: a knob that changes nothing extends to its base's step).
        if (!(extend_step(v, a.step, b.step) + a.checkpoint < base_time[k] * (1 - 1e-9))) continue;
        if (v.grad_accum == short_ga(v)) whole[k] = a;
        else if (v.grad_accum == short_ga(v) + 1) whole[k] = b;
        else {
          promising.push_back(&v);
          promising_index.push_back(k);
        }
      }
      const std::vector<PointOutcome> outcomes = simulate(promising, [](const Plan& p) { return p.grad_accum; });
      for (std::size_t w = 0; w < promising.size(); ++w) {
        if (!outcomes[w].error.empty()) note_refusal(outcomes[w].error, promising[w]->label());
        else whole[promising_index[w]] = figures(outcomes[w]);
      }
      for (std::size_t k = 0; k < variants.size(); ++k) {
        if (!whole[k]) continue;
        Plan& v = variants[k];
        const Figures& f = *whole[k];
        take_whole(v, f);
        v.fits = f.gpu_fits && f.host_fits;
        if (!v.fits || !(v.time_per_step_s() < base_time[k])) continue;  // the default knobs do as well
        fitting.push_back(v);
      }
      std::stable_sort(fitting.begin(), fitting.end(), faster_first);
    }
    for (const Plan& p : fitting) {
      PlanFamily& fam = families[p.family()];
      if (fam.best_label == p.label() || p.time_per_step_s() < fam.best_step_time_s) {
        fam.best_step_time_s = p.time_per_step_s();
        fam.best_label = p.label();
      }
    }
  }
  r.pruned_by_time = static_cast<std::int64_t>(all.size() - next);
  std::map<std::string, std::int64_t> beyond;  // family → configurations past the time bound
  for (std::size_t i = next; i < all.size(); ++i) ++beyond[all[i].family()];
  r.refused_rules = ruled_out(refused_rules);
  if (static_cast<std::int64_t>(fitting.size()) > q.top) fitting.resize(static_cast<std::size_t>(q.top));
  r.plans = fitting;
  if (std::isfinite(least_miss)) {
    r.best_miss_bytes = least_miss;
    r.best_miss_label = least_miss_label;
    r.best_miss_kind = least_miss_kind;
  }

  // ---- why each family lost, and why the best wins ----
  const Plan* best = r.plans.empty() ? nullptr : &r.plans.front();
  for (auto& [name, fam] : families) {
    if (fam.best_step_time_s > 0) {
      fam.reason = best && fam.best_label == best->label()
                       ? "the best plan"
                       : fmt::format("its best, {}, is {:.1f} % slower than the winner", fam.best_label,
                                     100 * (fam.best_step_time_s / best->time_per_step_s() - 1));
    } else {
      // What became of its configurations: over memory, refused by a rule, or never reached.
      std::vector<std::string> parts;
      const std::int64_t misses = fam.over_memory_bound + fam.did_not_fit;
      if (misses > 0 && misses == fam.configurations - fam.refused)
        parts.push_back(fmt::format("no configuration fits: the closest misses by {}", miss_text(fam.least_miss_bytes)));
      else if (misses > 0)
        parts.push_back(fmt::format("{} do not fit (the closest misses by {})", misses, miss_text(fam.least_miss_bytes)));
      if (fam.refused > 0)
        parts.push_back(fmt::format("{} refused: {}", fam.refused, first_refusal.count(name) ? first_refusal.at(name) : ""));
      if (const auto it = beyond.find(name); it != beyond.end() && it->second > 0)
        parts.push_back(fmt::format("{} beyond the time bound of the best plans found", it->second));
      fam.reason.clear();
      for (std::size_t i = 0; i < parts.size(); ++i) fam.reason += (i == 0 ? "" : "; ") + parts[i];
    }
    r.families.push_back(fam);
  }
  if (best) {
    std::string why = fmt::format(
        "{} is fastest: {:.0f} {}/s ({:.1f} % MFU), {:.1f} of {:.1f} GB per GPU, {:.1f} ms of communication exposed",
        best->label(), best->tokens_per_s, r.sample_unit, 100 * best->mfu, best->memory_bytes / 1e9, best->capacity_bytes / 1e9,
        best->exposed_comm_s * 1e3);
    if (best->exposed_offload_s > 0) why += fmt::format(" and {:.1f} ms of offload", best->exposed_offload_s * 1e3);
    if (best->allocation_wait_s > 0)
      why += fmt::format("; allocations wait {:.1f} ms in all for the usable HBM", best->allocation_wait_s * 1e3);
    if (best->checkpoint_s > 0)
      why += fmt::format("; its checkpoint saves add {:.1f} ms per step amortised (ranked with them)", best->checkpoint_s * 1e3);
    why += ".";
    // The runner-up: the best plan that is not the winner with other knobs (the tuned knobs of
    // one configuration say little of what the next configuration trades).
    const Plan* runner = nullptr;
    for (std::size_t i = 1; i < r.plans.size() && runner == nullptr; ++i) {
      Plan bare = r.plans[i], best_bare = *best;
      bare.knobs.clear();
      best_bare.knobs.clear();
      if (bare.label() != best_bare.label()) runner = &r.plans[i];
    }
    if (runner == nullptr && r.plans.size() > 1) runner = &r.plans[1];
    if (runner != nullptr) {
      const Plan& b = *runner;
      std::vector<std::string> trades;
      if (b.memory_bytes < best->memory_bytes - 1e9)
        trades.push_back(fmt::format("needs {:.1f} GB less memory", (best->memory_bytes - b.memory_bytes) / 1e9));
      if (b.exposed_comm_s > best->exposed_comm_s + 1e-4)
        trades.push_back(fmt::format("exposes {:.1f} ms more communication", (b.exposed_comm_s - best->exposed_comm_s) * 1e3));
      // How its configuration differs.
      std::vector<std::string> knobs;
      if (b.strategy != best->strategy)
        knobs.push_back(fmt::format("strategy {} instead of {}", b.strategy, best->strategy));
      else if (b.shard_group_size != best->shard_group_size)
        knobs.push_back(fmt::format("shard_group_size {} instead of {}", b.shard_group_size, best->shard_group_size));
      if (b.tp != best->tp) knobs.push_back(fmt::format("tp {} instead of {}", b.tp, best->tp));
      if (b.pp != best->pp) knobs.push_back(fmt::format("pp {} instead of {}", b.pp, best->pp));
      if (b.cp != best->cp) knobs.push_back(fmt::format("cp {} instead of {}", b.cp, best->cp));
      if (b.ep != best->ep) knobs.push_back(fmt::format("ep {} instead of {}", b.ep, best->ep));
      if (b.micro_batch_size != best->micro_batch_size)
        knobs.push_back(fmt::format("micro_batch_size {} instead of {}", b.micro_batch_size, best->micro_batch_size));
      if (b.recompute != best->recompute) knobs.push_back(fmt::format("recompute {} instead of {}", b.recompute, best->recompute));
      if (b.offload != best->offload) knobs.push_back(b.offload == "none" ? "no offload" : "offload to the CPU");
      if (b.knobs != best->knobs) {
        // Only what differs: its own knobs, and the winner's it leaves at their defaults.
        std::string k;
        for (const std::string& knob : b.knobs)
          if (std::find(best->knobs.begin(), best->knobs.end(), knob) == best->knobs.end()) k += (k.empty() ? "" : ", ") + knob;
        for (const std::string& knob : best->knobs)
          if (std::find(b.knobs.begin(), b.knobs.end(), knob) == b.knobs.end())
            k += (k.empty() ? "" : ", ") + knob.substr(0, knob.find('=')) + " at its default";
        if (!k.empty()) knobs.push_back(k);
      }
      if (b.sync_every_micro_batch != best->sync_every_micro_batch)
        knobs.push_back(b.sync_every_micro_batch ? "a gradient reduction every micro-batch" : "one gradient reduction per step");
      if (!knobs.empty()) {
        std::string k;
        for (std::size_t i = 0; i < knobs.size(); ++i) k += (i == 0 ? "" : ", ") + knobs[i];
        trades.insert(trades.begin(), "runs " + k);
      }
      if (b.exposed_offload_s > best->exposed_offload_s + 1e-4)
        trades.push_back(fmt::format("pays {:.1f} ms more of offload", (b.exposed_offload_s - best->exposed_offload_s) * 1e3));
      std::string list;
      for (std::size_t i = 0; i < trades.size(); ++i)
        list += (i == 0 ? "" : i + 1 == trades.size() ? " and " : ", ") + trades[i];
      why += fmt::format(" The runner-up, {}, is {:.1f} % slower{}.", b.label(), 100 * (b.time_per_step_s() / best->time_per_step_s() - 1),
                         list.empty() ? "" : ": it " + list);
    }
    // The seeds' FAQ: plain DDP's model state, when no DDP plan fits.
    const auto ddp = families.find("ddp");
    if (ddp != families.end() && ddp->second.best_step_time_s == 0) {
      const double state = r.parameters * (2 + 2 + optimizer_state_bytes_per_param(s0.optimizer, DType::BF16));
      if (state > usable)
        why += fmt::format(" DDP is out: every GPU would hold the whole model state, {:.0f} GB ({:.3g} B parameters × {:g} B), "
                           "against {:.1f} GB usable.",
                           state / 1e9, r.parameters / 1e9, state / r.parameters, usable / 1e9);
      else if (!ddp->second.reason.empty())
        why += fmt::format(" DDP is out: {}.", ddp->second.reason);  // what its configurations met instead
    }
    r.why = why;
  } else {
    r.why = r.best_miss_label.empty()
                ? "no configuration could be simulated"
                : fmt::format("nothing fits: the closest, {}, misses by {} {}", r.best_miss_label, miss_text(r.best_miss_bytes),
                              r.best_miss_kind);
    // Offload moves the states off the GPU: say where the configurations it fits then fail.
    if (std::isfinite(least_host_miss) && least_host_miss_label != r.best_miss_label)
      r.why += fmt::format("; offloaded, {} fits GPU memory but needs {} more host memory per node than the {:.0f} GB "
                           "there are",
                           least_host_miss_label, miss_text(least_host_miss), host_capacity / 1e9);
  }
  r.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return r;
}

namespace {

ordered rules_json(const std::vector<PlanRuledOut>& rules) {
  ordered a = ordered::array();
  for (const PlanRuledOut& n : rules) a.push_back({{"configurations", n.configurations}, {"example", n.example}, {"reason", n.reason}});
  return a;
}

}  // namespace

std::string plan_json(const PlanResult& r) {
  ordered j;
  j["schema"] = "stepsim.plan/1";
  j["query"] = {{"scenario", r.query.scenario.empty() ? ordered(nullptr) : ordered(r.query.scenario)},
                {"model", r.query.model},
                {"hardware", r.query.hardware},
                {"gpus", r.query.gpus},
                {"gpus_per_node", r.gpus_per_node},
                {"global_batch_tokens", r.query.global_batch_tokens},
                {"seq_len", r.query.seq_len},
                {"sample_unit", r.sample_unit},
                {"top", r.query.top}};
  j["search"] = {{"configurations", r.configurations},
                 {"pruned_by_memory", r.pruned_by_memory},
                 {"pruned_by_time", r.pruned_by_time},
                 {"simulated", r.simulated},
                 {"refused", r.refused},
                 {"knob_variants", r.knob_variants},
                 {"not_searched", rules_json(r.not_searched)},
                 {"refused_rules", rules_json(r.refused_rules)},
                 {"best_miss_bytes", r.best_miss_bytes},
                 {"best_miss", r.best_miss_label},
                 {"best_miss_kind", r.best_miss_kind}};
  ordered plans = ordered::array();
  for (const Plan& p : r.plans)
    plans.push_back({{"label", p.label()},
                     {"strategy", p.strategy},
                     {"dp", p.dp},
                     {"tp", p.tp},
                     {"pp", p.pp},
                     {"cp", p.cp},
                     {"ep", p.ep},
                     {"shard_group_size", p.shard_group_size},
                     {"micro_batch_size", p.micro_batch_size},
                     {"grad_accum", p.grad_accum},
                     {"recompute", p.recompute},
                     {"offload", p.offload},
                     {"sync_every_micro_batch", p.sync_every_micro_batch},
                     {"knobs", p.knobs},
                     {"step_time_s", p.step_time_s},
                     {"tokens_per_s", p.tokens_per_s},
                     {"mfu", p.mfu},
                     {"memory_bytes", p.memory_bytes},
                     {"capacity_bytes", p.capacity_bytes},
                     {"exposed_comm_s", p.exposed_comm_s},
                     {"exposed_offload_s", p.exposed_offload_s},
                     {"checkpoint_amortised_s", p.checkpoint_s},
                     {"allocation_wait_s", p.allocation_wait_s},
                     {"set", {fmt::format("cluster={{\"gpus_per_node\":{},\"nodes\":{}}}", r.gpus_per_node,
                                          std::max<std::int64_t>(1, r.query.gpus / r.gpus_per_node)),
                              "parallelism=" + p.overrides[0], "batch=" + p.overrides[1],
                              "activations.recompute=" + p.overrides[2]}}});
  j["plans"] = plans;
  ordered fams = ordered::array();
  for (const PlanFamily& f : r.families)
    fams.push_back({{"family", f.name},
                    {"configurations", f.configurations},
                    {"over_memory_bound", f.over_memory_bound},
                    {"simulated", f.simulated},
                    {"did_not_fit", f.did_not_fit},
                    {"refused", f.refused},
                    {"best_step_time_s", f.best_step_time_s > 0 ? ordered(f.best_step_time_s) : ordered(nullptr)},
                    {"best", f.best_label.empty() ? ordered(nullptr) : ordered(f.best_label)},
                    {"reason", f.reason}});
  j["families"] = fams;
  j["why"] = r.why;
  return j.dump(2) + "\n";
}

std::string plan_text(const PlanResult& r, bool explain) {
  std::string t = fmt::format("stepsim plan: {} ({:.3g} B parameters) on {} x {}, global batch {:.0f} {} ({:.4g} M), seq_len {}{}\n",
                              r.model_name, r.parameters / 1e9, r.query.gpus, r.hardware_name,
                              r.query.global_batch_tokens, r.sample_unit, r.query.global_batch_tokens / 1e6, r.query.seq_len,
                              r.query.scenario.empty() ? std::string() : ", the rest as " + r.query.scenario);
  t += fmt::format("searched {} configurations: {} over the memory bound, {} beyond the time bound, {} simulated ({} "
                   "refused by the scenario's rules); {} knob variants of the best tried\n\n",
                   r.configurations, r.pruned_by_memory, r.pruned_by_time, r.simulated, r.refused, r.knob_variants);
  if (!r.plans.empty()) {
    std::size_t width = 64;
    for (const Plan& p : r.plans) width = std::max(width, p.label().size());
    t += fmt::format("  {:>2}  {:<{}} {:>11} {:>12} {:>6} {:>16} {:>13} {:>13}\n", "#", "plan", width, "step time", r.sample_unit + "/s",
                     "MFU", "memory/GPU", "exposed comm", "exp. offload");
    for (std::size_t i = 0; i < r.plans.size(); ++i) {
      const Plan& p = r.plans[i];
      t += fmt::format("  {:>2}  {:<{}} {:>8.1f} ms {:>12.0f} {:>5.1f}% {:>6.1f} of {:>5.1f} GB {:>10.1f} ms {:>10.1f} ms\n",
                       i + 1, p.label(), width, p.step_time_s * 1e3, p.tokens_per_s, 100 * p.mfu, p.memory_bytes / 1e9,
                       p.capacity_bytes / 1e9, p.exposed_comm_s * 1e3, p.exposed_offload_s * 1e3);
    }
    t += "\n";
  }
  t += "why: " + r.why + "\n";
  if (!r.best_miss_label.empty())
    t += fmt::format("closest that did not fit: {}, over by {} {}\n", r.best_miss_label, miss_text(r.best_miss_bytes),
                     r.best_miss_kind);
  for (const PlanRuledOut& n : r.not_searched)
    t += fmt::format("not searched, the scenario's rules refuse them: {} configurations like {}: {}\n", n.configurations,
                     n.example, n.reason);
  for (const PlanRuledOut& n : r.refused_rules)
    t += fmt::format("refused by the scenario's rules when loaded: {} configuration{} like {}: {}\n", n.configurations,
                     n.configurations == 1 ? "" : "s", n.example, n.reason);
  if (explain) {
    t += "\nfamilies:\n";
    for (const PlanFamily& f : r.families)
      t += fmt::format("  {:<22} {:>6} configurations, {:>6} over the memory bound, {:>4} simulated: {}\n", f.name,
                       f.configurations, f.over_memory_bound, f.simulated, f.reason);
  }
  return t;
}

}  // namespace stepsim::models
