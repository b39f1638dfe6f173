// SPDX-License-Identifier: Apache-2.0
// JSON -> Scenario: parse, default, validate, freeze (style.md §3.6).
#include "models/scenario.hpp"

#include "hardware/calibration_json.hpp"
#include "hardware/hardware_profile_json.hpp"
#include "models/model_spec_json.hpp"
#include "models/float8.hpp"
#include "models/recompute.hpp"
#include "models/strategy/strategy.hpp"
#include "sim/support/error.hpp"
#include "sim/support/json_reader.hpp"
#include "sim/support/names.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>

namespace stepsim::models {

int Scenario::ranks_per_node() const {
  return static_cast<int>(std::min<std::int64_t>(cluster.gpus_per_node, parallelism.dp));
}

std::int64_t Scenario::shard_ranks() const {
  const StrategyEntry& st = strategy_of(*this);
  if (st.zero_stage == 0) return 1;
  if (st.hybrid) return sharding.shard_group_size > 0 ? sharding.shard_group_size : ranks_per_node();
  return parallelism.dp;
}

int Scenario::zero_stage() const { return strategy_of(*this).zero_stage; }

bool Scenario::sharded() const { return zero_stage() > 0; }

std::vector<std::string> implementation_names() { return {"eager", "compile", "megatron_te"}; }

std::vector<std::string> strategy_names() {
  std::vector<std::string> names;
  for (const auto& s : strategy_registry()) names.emplace_back(s.name);
  return names;
}

namespace {

constexpr std::int64_t kMaxRanks = 100'000'000;

// A relative file path in a scenario is relative to the scenario's directory (then to the
// working directory, for --set values typed at a shell). Catalog names pass through. When
// neither exists: an error naming both places, or with `missing_ok` the path as typed (its
// reader then names the missing file itself).
std::string resolve_path(const std::string& ref, const std::string& source, const std::string& pointer,
                         bool missing_ok = false) {
  namespace fs = std::filesystem;
  const bool is_path = ref.find('/') != std::string::npos ||
                       (ref.size() > 5 && ref.substr(ref.size() - 5) == ".json");
  if (!is_path || fs::path(ref).is_absolute()) return ref;
  std::error_code ec;
  const fs::path beside = fs::path(source).parent_path() / ref;
  if (fs::exists(beside, ec)) return beside.lexically_normal().string();
  if (fs::exists(ref, ec) || missing_ok) return ref;
  throw InputError(source, pointer,
                   fmt::format("no such file '{}' (looked in '{}' and in the working directory)", ref,
                               fs::path(source).parent_path().string().empty() ? "." : fs::path(source).parent_path().string()));
}

// Fields that hold a catalog name, a file path or an inline object.
template <typename T, typename LoadFn, typename ParseFn>
T read_reference(const JsonReader& root, const nlohmann::json& doc, const char* key,
                 std::string& ref, LoadFn load, ParseFn parse) {
  if (!root.has(key)) root.fail(key, "required field is missing");
  if (root.is_string(key)) {
    ref = resolve_path(root.string(key), root.source(), root.path(key));
    return load(ref, root.source(), root.path(key));
  }
  const nlohmann::json& v = doc.at(key);
  if (!v.is_object())
    root.fail(key, "expected a catalog name, a path to a .json file, or an inline object, got " +
                       json_excerpt(v));
  ref = "inline";
  return parse(v, root.source(), root.path(key));
}

}  // namespace

namespace {

// Reads the FSDP / HSDP / ZeRO knobs of /parallelism and rejects those that do not apply to the
// chosen strategy (a knob that silently does nothing is worse than an error).
void read_sharding(const JsonReader& par, Scenario& s) {
  const std::string& strategy = s.parallelism.strategy;
  const StrategyEntry& entry = strategy_of(s);
  // The knobs of every strategy, in the order they are checked (the first one given that does
  // not apply is the one reported); which strategies take each is theirs to say (StrategyEntry::knobs).
  static const std::vector<std::string> knobs = {
      "fsdp_version", "unit_layers", "reshard_after_forward", "backward_prefetch", "forward_prefetch",
      "limit_all_gathers", "shard_group_size", "defer_replica_all_reduce", "reduce_bucket_size", "overlap_comm",
      "gradient_reduce_scatter", "stage3_prefetch_bucket_size", "stage3_max_live_parameters",
      "stage3_max_reuse_distance", "stage3_param_persistence_threshold", "bucket_cap_mb", "first_bucket_mb",
      "gradient_as_bucket_view", "sync_every_micro_batch"};
  for (const auto& key : knobs) {
    if (!par.has(key) || entry.takes(key)) continue;
    std::vector<std::string> takers;
    for (const auto& e : strategy_registry())
      if (e.takes(key)) takers.emplace_back(e.name);
    par.fail(key, fmt::format("'{}' does not apply to strategy '{}' (it applies to: {})", key, strategy,
                              join_names(takers)));
  }
  auto& z = s.sharding;
  z.fsdp_version = par.choice_or("fsdp_version", "fsdp2", {"fsdp2", "fsdp1"});
  z.unit_layers = par.integer_or("unit_layers", 1, 0, 1 << 20);
  if (par.has("reshard_after_forward")) {
    const std::string key = "reshard_after_forward";
    if (par.is_string(key)) {
      const std::string v = par.choice_or(key, "default", {"default", "torchtitan"});
      z.reshard_after_forward = v == "torchtitan" ? ReshardMode::Torchtitan : ReshardMode::Default;
    } else if (par.is_boolean(key)) {
      z.reshard_after_forward = par.boolean_or(key, true) ? ReshardMode::True : ReshardMode::False;
    } else {
      z.reshard_group = par.integer(key, 2, 1 << 20);
      z.reshard_after_forward = ReshardMode::Group;
    }
  }
  const std::string prefetch = par.choice_or("backward_prefetch", "BACKWARD_PRE", {"BACKWARD_PRE", "BACKWARD_POST", "none"});
  z.backward_prefetch = prefetch == "BACKWARD_POST" ? BackwardPrefetch::BackwardPost
                        : prefetch == "none"        ? BackwardPrefetch::None
                                                    : BackwardPrefetch::BackwardPre;
  z.forward_prefetch = par.boolean_or("forward_prefetch", false);
  z.limit_all_gathers = par.boolean_or("limit_all_gathers", true);
  z.shard_group_size = par.integer_or("shard_group_size", 0, 1, 1 << 20);
  z.defer_replica_all_reduce = par.boolean_or("defer_replica_all_reduce", false);
  z.reduce_bucket_size = par.number_or("reduce_bucket_size", 5e8, Check::Positive);
  z.overlap_comm = par.boolean_or("overlap_comm", entry.family == StrategyFamily::DeepSpeed && entry.zero_stage == 3);  // config.py overlap_comm_valid
  z.gradient_reduce_scatter = par.boolean_or("gradient_reduce_scatter", false);
  z.stage3_prefetch_bucket_size = par.number_or("stage3_prefetch_bucket_size", 5e7, Check::NonNegative);
  z.stage3_max_live_parameters = par.number_or("stage3_max_live_parameters", 1e9, Check::NonNegative);
  z.stage3_max_reuse_distance = par.number_or("stage3_max_reuse_distance", 1e9, Check::NonNegative);
  z.stage3_param_persistence_threshold = par.number_or("stage3_param_persistence_threshold", 1e5, Check::NonNegative);
}

// Cross-field rules of the sharded strategies, once the cluster shape is known.
void check_sharding(const JsonReader& par, const Scenario& s) {
  const auto& z = s.sharding;
  const std::int64_t dp = s.parallelism.dp;
  if (strategy_of(s).hybrid) {
    const std::int64_t g = s.shard_ranks();
    if (dp % g != 0 || g > dp)
      par.fail("shard_group_size", fmt::format("the shard group ({} ranks) must divide dp ({})", g, dp));
  }
  if (z.reshard_after_forward == ReshardMode::Group) {
    const std::int64_t n = s.shard_ranks();
    if (z.reshard_group >= n || n % z.reshard_group != 0)
      par.fail("reshard_after_forward",
               fmt::format("an integer reshard_after_forward must be a non-trivial divisor of the shard "
                           "group size ({}), got {}", n, z.reshard_group));
  }
  for (const char* key : {"backward_prefetch", "limit_all_gathers"})
    if (z.fsdp_version == "fsdp2" && par.has(key))
      par.fail(key, "is an FSDP1 option; set \"fsdp_version\": \"fsdp1\" (FSDP2 prefetches implicitly: the "
                    "next unit's AllGather is issued one unit ahead in forward and backward)");
  // FSDP1's forward_prefetch issues the next AllGather before this unit's forward kernels; with
  // the CPU running ahead of the GPU it is queued either way, so only a CPU-bound step (which
  // stepsim does not model) would change: a knob with no effect is refused, not ignored.
  if (par.has("forward_prefetch") && (z.fsdp_version == "fsdp2" || z.forward_prefetch))
    par.fail("forward_prefetch",
             z.fsdp_version == "fsdp2"
                 ? "is an FSDP1 option; set \"fsdp_version\": \"fsdp1\" (FSDP2 prefetches implicitly)"
                 : "has no effect on GPU timing in stepsim: it helps only when the CPU cannot launch ahead of the "
                   "GPU, a case stepsim does not model; remove it (or set it false)");
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
  JsonReader root(doc, source, "");
  Scenario s;
  s.source = source;
  s.name = root.string_or("name", "");
  root.string_or("description", "");
  root.string_or("$schema", "");

  // precision.param_dtype holds every tensor, activations included, in that dtype: the model is
  // built in it (parse_model's dtype).
  std::optional<DType> param_dtype;
  if (const auto prec = root.optional_object("precision"); prec && prec->has("param_dtype"))
    param_dtype = parse_dtype(prec->string("param_dtype"), source, prec->path("param_dtype"));
  s.model = read_reference<ModelSpec>(
      root, doc, "model", s.model_ref,
      [&](const std::string& ref, const std::string& src, const std::string& ptr) {
        // A bare name that is no catalog model but a folder beside the scenario (a checkpoint
        // folder holding a config.json) is that folder, wherever stepsim runs from.
        namespace fs = std::filesystem;
        std::error_code ec;
        const auto names = builtin_model_names();
        const fs::path beside = fs::path(src).parent_path() / ref;
        if (ref.find('/') == std::string::npos && std::find(names.begin(), names.end(), ref) == names.end() &&
            !fs::path(src).parent_path().empty() && fs::is_directory(beside, ec))
          return load_model(beside.lexically_normal().string(), src, ptr, param_dtype);
        return load_model(ref, src, ptr, param_dtype);
      },
      [&](const nlohmann::json& j, const std::string& src, const std::string& ptr) { return parse_model(j, src, ptr, param_dtype); });
  s.hardware = read_reference<hardware::HardwareProfile>(
      root, doc, "hardware", s.hardware_ref, hardware::load_profile,
      [](const nlohmann::json& j, const std::string& src, const std::string& ptr) {
        // {"base": profile, fields...}: the fields over a catalog or file profile (issue 20 item 2).
        if (j.contains("base")) {
          const JsonReader h(j, src, ptr);
          if (!h.is_string("base"))
            h.fail("base", "expected a catalog profile name or a path to a profile .json file, got " +
                               json_excerpt(j.at("base")));
          const std::string base = resolve_path(h.string("base"), src, h.path("base"));
          return hardware::parse_profile_over_base(j, base, src, ptr);
        }
        return hardware::parse_profile(j, src, ptr);
      });
  if (root.has("calibration")) {  // overlay on top of the profile (stepsim calibrate nccl-tests -o)
    // Relative to the scenario's folder, like the model and hardware files (issue 13 item 10).
    s.calibration_ref = resolve_path(root.string("calibration"), root.source(), root.path("calibration"), true);
    auto overlay = hardware::read_calibration(s.calibration_ref);
    // A profile over a base is that base's machine: the overlay must be the base's (a new name
    // does not make it another machine).
    const std::string& machine = s.hardware.base.empty() ? s.hardware.name : s.hardware.base;
    if (overlay.hardware != machine)
      root.fail("calibration", fmt::format("overlay '{}' was fitted over profile '{}', but the scenario uses '{}'; "
                                           "its factors are relative to that profile's nominal numbers",
                                           s.calibration_ref, overlay.hardware, machine));
    // A field the overlay's fit replaces would change nothing: refused, not ignored.
    for (const auto& f : s.hardware.overridden)
      if (overlay.gemm && f.rfind("compute.gemm_curve", 0) == 0)
        root.fail("calibration", fmt::format("overlay '{}' fits the GEMM curve, which replaces the profile's '{}' set in "
                                             "/hardware; drop one of them", s.calibration_ref, f));
    s.calibration = std::make_shared<const hardware::CalibrationOverlay>(std::move(overlay));
  }

  // parallelism first: the cluster defaults depend on dp.
  const auto par = root.optional_object("parallelism");
  if (!par) root.fail("parallelism", "required field is missing (at least {\"dp\": N})");
  auto& p = s.parallelism;
  p.strategy = par->choice_or("strategy", "ddp", strategy_names());
  p.dp = par->integer("dp", 1, kMaxRanks);
  p.bucket_cap_mb = par->number_or("bucket_cap_mb", p.bucket_cap_mb, Check::Positive);
  p.first_bucket_mb = par->number_or("first_bucket_mb", p.first_bucket_mb, Check::Positive);
  p.sync_every_micro_batch = par->boolean_or("sync_every_micro_batch", false);
  p.gradient_as_bucket_view = par->boolean_or("gradient_as_bucket_view", false);
  p.torus_axes = static_cast<int>(par->integer_or("torus_axes", 0, 1, 3));
  read_sharding(*par, s);
  par->finish();
  if (s.model.trainable_parameter_count() == 0)
    throw InputError(source, "/model",
                     fmt::format("model '{}' has no trainable parameter (every tensor is \"trainable\": false): "
                                 "strategy '{}' would have no gradient to synchronise and no optimizer step (PyTorch's "
                                 "DDP refuses such a module); expected at least one trainable tensor",
                                 s.model.name, p.strategy));

  const auto cluster = root.optional_object("cluster");
  s.cluster.gpus_per_node = s.hardware.gpus_per_node;
  if (cluster && cluster->has("gpus_per_node")) {
    const std::int64_t g = cluster->integer("gpus_per_node", 1, INT64_MAX);
    if (const std::string why = hardware::gpus_per_node_problem(g); !why.empty()) cluster->fail("gpus_per_node", why);
    s.cluster.gpus_per_node = static_cast<int>(g);
  }
  const std::int64_t gpn = s.cluster.gpus_per_node;
  const std::int64_t default_nodes = (p.dp + gpn - 1) / gpn;
  s.cluster.nodes = static_cast<int>(cluster ? cluster->integer_or("nodes", default_nodes, 1, kMaxRanks) : default_nodes);
  if (cluster) cluster->finish();
  if (p.dp > gpn && p.dp % gpn != 0)
    throw InputError(source, "/parallelism/dp",
                     fmt::format("dp ({}) must be a multiple of /cluster/gpus_per_node ({}) when the "
                                 "group spans several nodes",
                                 p.dp, gpn));
  if (p.dp > gpn && s.cluster.nodes * gpn != p.dp)
    throw InputError(source, "/cluster/nodes",
                     fmt::format("/cluster/nodes ({}) × /cluster/gpus_per_node ({}) = {} ≠ "
                                 "/parallelism/dp ({}); stepsim simulates pure data parallelism, "
                                 "so the world size must equal dp",
                                 s.cluster.nodes, gpn, s.cluster.nodes * gpn, p.dp));
  if (p.dp <= gpn && s.cluster.nodes != 1)
    throw InputError(source, "/cluster/nodes",
                     fmt::format("dp ({}) fits in one node of {} GPUs, but /cluster/nodes is {}",
                                 p.dp, gpn, s.cluster.nodes));

  check_sharding(*par, s);
  if (s.hardware.is_torus()) {
    long long pod = 1;
    for (int d : s.hardware.torus_dims) pod *= d;
    if (p.dp > pod)
      throw InputError(source, "/parallelism/dp",
                       fmt::format("dp ({}) is larger than the {} torus ({} chips); multi-slice (DCN) data "
                                   "parallelism is not modelled", p.dp, s.hardware.name, pod));
  }
  // Issue 13 item 21: the torus axes the DP rings use (default: all of the profile's).
  const int profile_axes = s.hardware.is_torus() ? static_cast<int>(s.hardware.torus_dims.size()) : 0;
  if (par->has("torus_axes") && profile_axes == 0)
    par->fail("torus_axes", fmt::format("{} given, but profile '{}' is not a torus (torus_axes applies to TPU "
                                        "profiles such as tpu-v5p)", p.torus_axes, s.hardware.name));
  if (p.torus_axes > profile_axes)
    par->fail("torus_axes", fmt::format("{} axes asked for, but the {} torus has {}: expected 1 to {}", p.torus_axes,
                                        s.hardware.name, profile_axes, profile_axes));
  if (!par->has("torus_axes")) p.torus_axes = profile_axes;

  const auto batch = root.optional_object("batch");
  // A convolutional network's sample is one image: the simulator's "tokens" are images.
  const bool images = s.model.sample_unit() == "images";
  if (images) s.batch.seq_len = 1;
  if (batch) {
    s.batch.micro_batch_size = batch->integer_or("micro_batch_size", 1, 1, 1 << 30);
    s.batch.seq_len = batch->integer_or("seq_len", s.batch.seq_len, 1, 1 << 30);
    if (images && s.batch.seq_len != 1)
      batch->fail("seq_len", fmt::format("got {}, but model '{}' is a convolutional network ({}): a sample is one "
                                         "image, so seq_len is 1; give the images per GPU as micro_batch_size",
                                         s.batch.seq_len, s.model.name, s.model.kind));
    s.batch.grad_accum = batch->integer_or("grad_accum", 1, 1, 1 << 20);
    batch->finish();
  }
  // A learned position table has a row per position: no longer sequence can run (GPT-2's wpe).
  if (s.model.learned_positions > 0 && s.batch.seq_len > s.model.learned_positions) {
    const std::string why = fmt::format("seq_len {} is longer than model '{}' has positions: its learned position "
                                        "table holds {} (max_positions / n_positions)", s.batch.seq_len, s.model.name,
                                        s.model.learned_positions);
    if (batch && batch->has("seq_len")) batch->fail("seq_len", why);
    root.fail("batch", why + "; set batch.seq_len");
  }

  if (const auto prec = root.optional_object("precision")) {
    if (prec->has("param_dtype")) {
      s.precision.param_dtype = parse_dtype(prec->string("param_dtype"), source, prec->path("param_dtype"));
      for (auto& layer : s.model.layers)
        for (auto& t : layer.params) t.dtype = s.precision.param_dtype;
    }
    // "param" (what the echo writes for the default): each tensor's gradients reduce in its own dtype.
    if (prec->has("reduce_dtype") && prec->string("reduce_dtype") != "param")
      s.precision.reduce_dtype = parse_dtype(prec->string("reduce_dtype"), source, prec->path("reduce_dtype"));
    s.precision.fp32_grad_accum = prec->boolean_or("fp32_grad_accum", false);
    if (s.precision.fp32_grad_accum && s.precision.param_dtype == DType::FP32 && prec->has("param_dtype"))
      prec->fail("fp32_grad_accum", "the parameters are fp32 already, so their gradients accumulate in fp32 without a "
                                    "separate buffer; drop it");
    // Only DDP prices the accumulation adds (models/strategy/compute_tasks grad_accumulation_bytes);
    // elsewhere the knob would change memory but not time: refused rather than half applied.
    if (s.precision.fp32_grad_accum && strategy_of(s).family != StrategyFamily::DDP)
      prec->fail("fp32_grad_accum", fmt::format("applies to strategy 'ddp' only (the one whose gradient-accumulation "
                                                "adds stepsim prices); this scenario has '{}'", p.strategy));
    s.precision.fp32_matmul_tf32 = prec->choice_or("fp32_matmul_precision", "highest", {"highest", "high"}) == "high";
    const std::string float8 = prec->choice_or("float8", "none", {"none", "tensorwise", "rowwise", "rowwise_with_gw_hp"});
    if (float8 == "rowwise" || float8 == "rowwise_with_gw_hp")
      prec->fail("float8", fmt::format("\"{}\" (torchao's CUTLASS rowwise-scaled GEMM) has no published kernel benchmark "
                                       "stepsim could price it with (torchtitan measured it slower than bf16 on Llama 3 "
                                       "70B); expected \"tensorwise\" or \"none\"", float8));
    if (float8 == "tensorwise") s.precision.float8 = PrecisionConfig::Float8::Tensorwise;
    s.precision.float8_all_gather = prec->boolean_or("float8_all_gather", false);
    prec->finish();
    if (s.precision.float8 != PrecisionConfig::Float8::None) {
      if (!(s.hardware.fp8_flops_per_s > 0))
        prec->fail("float8", fmt::format("profile '{}' has no FP8 tensor cores (no compute.fp8_flops_per_s; torchao's "
                                         "float8 training needs SM 8.9 or newer: H100, H200, H800, L40S)", s.hardware.name));
      if (float8_linear_total(s).linears == 0)
        prec->fail("float8", fmt::format("model '{}' has no linear layer float8 would convert (it converts the "
                                         "transformer blocks' linears with GEMM shapes, dimensions multiples of 16)",
                                         s.model.name));
    }
    if (s.precision.float8_all_gather && s.precision.float8 == PrecisionConfig::Float8::None)
      prec->fail("float8_all_gather", "needs precision.float8 \"tensorwise\" (FSDP gathers the Float8Linear weights)");
    const bool fsdp_like = strategy_of(s).family == StrategyFamily::FSDP;
    if (s.precision.float8_all_gather && !(fsdp_like && s.sharding.fsdp_version == "fsdp2"))
      prec->fail("float8_all_gather", fmt::format("torchao casts the weights for FSDP2's all-gather (fully_shard "
                                                  "pre-all-gather hooks); this scenario has {}: expected strategy fsdp "
                                                  "or hsdp with fsdp_version fsdp2",
                                                  fsdp_like ? "fsdp_version fsdp1" : "strategy '" + p.strategy + "'"));
  }
  // The GEMMs' arithmetic follows the dtype most of the parameters are held in.
  {
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
    // The arithmetic must have a peak on this profile: refused, not priced at another's.
    const auto prec = root.optional_object("precision");
    const auto fail_dtype = [&](const std::string& why) {
      if (prec && prec->has("param_dtype")) prec->fail("param_dtype", why);
      root.fail("model", why);
    };
    if (dominant != DType::FP32 && prec && prec->has("fp32_matmul_precision"))
      prec->fail("fp32_matmul_precision", fmt::format("acts on fp32 tensors only, and this scenario holds its parameters in "
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
        prec->fail("float8", "the parameters are already held in fp8 (precision.param_dtype or model.dtype); torchao's "
                             "Float8Linear casts bf16/fp32 weights: use one or the other");
      if (s.tokens_per_micro_batch() % 16 != 0)
        prec->fail("float8", fmt::format("{} tokens per micro-batch: torch._scaled_mm needs the weight-gradient GEMM's "
                                         "inner dimension (the tokens) to be a multiple of 16 (torchao's pad_inner_dim "
                                         "is off by default); expected micro_batch_size x seq_len divisible by 16",
                                         s.tokens_per_micro_batch()));
    }
  }
  const bool fp32_math = s.precision.gemm_math == hardware::GemmMath::Fp32 || s.precision.gemm_math == hardware::GemmMath::Tf32;
  // activations.attention "auto" (the default): FlashAttention-2, the kernel PyTorch's SDPA runs
  // on A100 and Hopper in bf16 since torch 2.2 (and torchtitan, Hugging Face's "sdpa"), where the
  // profile has its measured throughput; elsewhere "flash", fused attention priced as on-chip
  // matmuls at the GEMM efficiency.
  // FlashAttention runs fp16/bf16 only: with fp32 tensors SDPA takes another kernel ("flash").
  // A model without attention (a ResNet, an MLP stack) takes no attention kernel.
  const bool attention_model = s.model.has_attention();
  const auto resolve_auto = [&s, fp32_math, attention_model] {
    if (attention_model && !fp32_math && s.hardware.attention_kernel("flash-attention-2") != nullptr)
      s.activations.attention_kernel = "flash-attention-2";
  };
  if (!root.has("activations")) resolve_auto();
  if (const auto act = root.optional_object("activations")) {
    std::vector<std::string> kinds = {"auto", "flash", "eager"};
    for (const auto& k : hardware::attention_kernel_names()) kinds.push_back(k);
    const std::string attention = act->choice_or("attention", "auto", kinds);
    if (!attention_model && attention != "auto")
      act->fail("attention", fmt::format("\"{}\" given, but model '{}' ({}) has no attention; drop activations.attention",
                                         attention, s.model.name, s.model.kind));
    s.activations.flash_attention = attention != "eager";
    if (attention == "auto") resolve_auto();
    if (attention != "eager" && attention != "flash" && attention != "auto") {
      s.activations.attention_kernel = attention;
      // A kernel named explicitly must have measured throughput on this profile.
      if (s.hardware.attention_kernel(attention) == nullptr) {
        std::string have;
        for (const auto& k : s.hardware.attention) have += (have.empty() ? "" : ", ") + k.kernel;
        act->fail("attention", fmt::format("profile '{}' has no measured throughput for '{}' (it has: {}); use "
                                           "\"flash\" or add the kernel to the profile's compute.attention",
                                           s.hardware.name, attention, have.empty() ? "none" : have));
      }
      if (fp32_math)
        act->fail("attention", fmt::format("'{}' runs fp16/bf16 tensors only, and this scenario's are fp32 (SDPA "
                                           "takes its memory-efficient or math kernel): use \"flash\" or \"eager\"",
                                           attention));
    }
    s.activations.recompute = recompute_from_name(act->choice_or("recompute", "none", recompute_names()));
    using Recompute = ActivationConfig::Recompute;
    if (act->has("ac_freq")) {
      if (s.activations.recompute != Recompute::SelectiveLayer)
        act->fail("ac_freq", fmt::format("applies to recompute \"selective_layer\" only (full AC on every ac_freq-th "
                                         "block); this scenario has \"{}\"", recompute_name(s.activations.recompute)));
      s.activations.ac_freq = act->integer("ac_freq", 1, 1000000);
    }
    // The selective policies act on transformer blocks' GEMMs (models/recompute.hpp): a model
    // described by FLOPs or measured times has nothing for them to choose from.
    if (s.activations.recompute == Recompute::SelectiveOp || s.activations.recompute == Recompute::MegatronSelective) {
      const bool core_attention = s.activations.recompute == Recompute::MegatronSelective;
      bool any = false;
      for (const auto& l : s.model.layers)
        for (const auto& g : l.gemms)
          any = any || (!l.root && !l.fwd_s && (core_attention ? g.attention() : g.kind == LayerGemm::Kind::Linear));
      if (!any)
        act->fail("recompute", fmt::format("\"{}\" recomputes part of each transformer block's {}, and model '{}' has "
                                           "none described by GEMM shapes; use \"full\" or \"selective_layer\"",
                                           recompute_name(s.activations.recompute),
                                           core_attention ? "attention" : "matmuls", s.model.name));
      // torchtitan's op-level policy saves SDPA's fused output (semantics-parallel.md §G3);
      // eager attention's bmm/softmax chain is another save set, not modelled.
      if (!core_attention && !s.activations.flash_attention)
        act->fail("recompute", "\"selective_op\" models torchtitan's policy over SDPA's fused attention; with "
                               "activations.attention \"eager\" use \"full\", \"selective_layer\" or \"megatron_selective\"");
    }
    act->finish();
  }
  if (const auto fw = root.optional_object("framework")) {
    s.framework.host_op_s = fw->number_or("host_op_s", 0.0, Check::NonNegative, Dimension::Seconds);
    if (s.framework.host_op_s > 0.01)
      fw->fail("host_op_s", fmt::format("expected a per-op CPU time below 10 ms (e.g. \"20us\"), got {:g} s", s.framework.host_op_s));
    s.framework.cuda_graphs = fw->boolean_or("cuda_graphs", false);
    if (s.framework.cuda_graphs && s.framework.host_op_s > 0)
      fw->fail("cuda_graphs", fmt::format("a graph replays its kernels without the CPU launching each op, so host_op_s "
                                          "({:g} s) would act on nothing; drop one of them", s.framework.host_op_s));
    if (s.framework.cuda_graphs) s.hardware.nccl.launch_overhead_s = 0;  // captured collectives launch from the graph
    const auto names = implementation_names();
    const std::string impl = fw->choice_or("implementation", names.front(), names);
    s.framework.implementation =
        static_cast<FrameworkConfig::Implementation>(std::find(names.begin(), names.end(), impl) - names.begin());
    s.framework.upcast_logits = fw->choice_or("cross_entropy", "upcast", {"upcast", "fused"}) == "upcast";
    // Knobs this model gives nothing to act on are refused, not ignored.
    if (fw->has("implementation") && s.model.eager_composites.empty() && !s.model.has_logits_loss())
      fw->fail("implementation", fmt::format("model '{}' has no composite op that eager PyTorch runs apart and no loss "
                                             "over logits (it is described by {}); drop framework.implementation",
                                             s.model.name, s.model.kind == "mlp"      ? "its MLP layers"
                                                           : s.model.kind == "resnet" ? "cuDNN's convolutions and BatchNorm"
                                                                                      : "its layers' FLOPs and bytes"));
    if (fw->has("cross_entropy") && !s.model.has_logits_loss())
      fw->fail("cross_entropy", fmt::format("model '{}' computes no loss over logits (no LM head); drop "
                                            "framework.cross_entropy", s.model.name));
    if (s.framework.implementation == FrameworkConfig::Implementation::MegatronTE &&
        s.precision.float8 != PrecisionConfig::Float8::None)
      fw->fail("implementation", "\"megatron_te\" trains FP8 with Transformer Engine's own recipe, which stepsim does "
                                 "not model; precision.float8 is torchao's Float8Linear (torchtitan): use \"compile\" or \"eager\"");
    fw->finish();
  }
  s.optimizer = root.choice_or("optimizer", "adam", {"adam", "sgd", "none"});

  // Token counts stay exact (and far from int64 overflow) below 1e15 per step.
  const double tokens = static_cast<double>(p.dp) * static_cast<double>(s.batch.micro_batch_size) *
                        static_cast<double>(s.batch.seq_len) * static_cast<double>(s.batch.grad_accum);
  if (tokens > 1e15)
    throw InputError(source, "/batch",
                     fmt::format("/parallelism/dp × micro_batch_size × seq_len × grad_accum = {:.3g} tokens per "
                                 "step; expected at most 1e15", tokens));
  // The lowered graph holds about (layers + tensors) tasks per micro-batch.
  double per_micro_batch = 0;
  for (const auto& l : s.model.layers) per_micro_batch += 2.0 + static_cast<double>(l.params.size());
  const double tasks = per_micro_batch * static_cast<double>(s.batch.grad_accum);
  constexpr double kMaxTasks = 4e6;
  if (tasks > kMaxTasks)
    throw InputError(source, "/batch/grad_accum",
                     fmt::format("{} micro-batches of {} layers lower into about {:.3g} tasks; the limit is {:g} "
                                 "per step (reduce grad_accum: no_sync micro-batches are identical)",
                                 s.batch.grad_accum, s.model.layers.size(), tasks, kMaxTasks));

  // Default nominal model: the profile's (hardware::default_collective_model); an overlay is
  // fitted over alpha-beta, so with one the default is alpha-beta.
  const bool collective_overlay = s.calibration && !s.calibration->tables.empty();  // a GEMM-only one is neutral
  s.collective_model = collective_overlay ? hardware::CollectiveModel::AlphaBeta
                                          : hardware::default_collective_model(s.hardware);
  s.cost_model = hardware::collective_model_name(s.collective_model);
  if (const auto coll = root.optional_object("collectives")) {
    s.cost_model = coll->choice_or("cost_model", s.cost_model, {"alpha-beta", "nccl"});
    s.collective_model = hardware::parse_collective_model(s.cost_model, source, coll->path("cost_model"));
    if (s.collective_model == hardware::CollectiveModel::Nccl) {
      if (collective_overlay)
        coll->fail("cost_model", fmt::format("\"nccl\" cannot be combined with calibration '{}': overlays are "
                                             "fitted over the alpha-beta model (expected \"alpha-beta\")",
                                             s.calibration_ref));
      if (s.hardware.nccl.arch.empty())
        coll->fail("cost_model", fmt::format("\"nccl\" needs a profile with an \"nccl\" object (GPU generation and "
                                             "NCCL channels); profile '{}' has none (expected \"alpha-beta\")",
                                             s.hardware.name));
    }
    // Default: the overlay's algorithm when there is one (its factors are relative to it).
    const std::string algo = coll->choice_or(
        "algorithm", collective_overlay ? hardware::collective_algorithm_name(s.calibration->algorithm) : "auto",
        {"auto", "ring", "hierarchical"});
    s.algorithm = algo == "ring"           ? hardware::CollectiveAlgorithm::Ring
                  : algo == "hierarchical" ? hardware::CollectiveAlgorithm::Hierarchical
                                           : hardware::CollectiveAlgorithm::Auto;
    // An overlay's factors are relative to the algorithm it was fitted over (issue 13 item 10).
    if (collective_overlay && s.algorithm != s.calibration->algorithm)
      coll->fail("algorithm", fmt::format("\"{}\" differs from the \"{}\" that calibration '{}' was fitted over; "
                                          "its factors are relative to that algorithm", algo,
                                          hardware::collective_algorithm_name(s.calibration->algorithm),
                                          s.calibration_ref));
    coll->finish();
  }
  if (collective_overlay && !root.has("collectives")) s.algorithm = s.calibration->algorithm;  // no object: the default
  if (const auto simcfg = root.optional_object("sim")) {
    s.rank_mode = simcfg->choice_or("rank_mode", "symmetric", {"symmetric", "per_rank"});
    auto& var = s.variation;
    if (const auto jitter = simcfg->optional_object("jitter")) {
      var.jitter_distribution = jitter->choice_or("distribution", "normal", {"normal", "lognormal"});
      var.jitter_cv = jitter->number("cv", Check::NonNegative);
      if (var.jitter_cv > 10) jitter->fail("cv", fmt::format("expected a coefficient of variation in [0, 10], got {}", var.jitter_cv));
      // max(0, 1 + cv·z) has mean 1 + cv·(φ(1/cv) − (1/cv)·Φ(−1/cv)): +0.4 % at cv 0.5, +8 % at 1.
      if (var.jitter_distribution == "normal" && var.jitter_cv > 0.5)
        jitter->fail("cv", fmt::format("expected cv <= 0.5 for \"normal\" (truncated at 0, its mean drifts above 1 "
                                       "beyond that), got {}; use \"lognormal\" for larger spreads",
                                       var.jitter_cv));
      var.jitter_seed = static_cast<std::uint64_t>(jitter->integer_or("seed", 0, 0, std::int64_t{1} << 53));
      jitter->finish();
    }
    if (simcfg->has("slow_ranks")) {
      for (const auto& slow : simcfg->objects("slow_ranks", false)) {
        const std::int64_t rank = slow.integer("rank", 0, p.dp - 1);
        const double factor = slow.number("compute_factor", Check::Positive);
        if (factor > 1000) slow.fail("compute_factor", fmt::format("expected a factor in (0, 1000], got {}", factor));
        for (const auto& [other, unused] : var.slow_ranks)
          if (other == rank) slow.fail("rank", fmt::format("rank {} is listed twice", rank));
        slow.finish();
        var.slow_ranks.emplace_back(rank, factor);
      }
    }
    if (simcfg->has("degraded_links")) {
      for (const auto& link : simcfg->objects("degraded_links", false)) {
        const std::int64_t node = link.integer("node", 0, s.cluster.nodes - 1);
        const double factor = link.number("bandwidth_factor", Check::Fraction);
        if (factor < 1e-3)
          link.fail("bandwidth_factor", fmt::format("expected a factor in [0.001, 1] (1 = healthy), got {}", factor));
        for (const auto& [other, unused] : var.degraded_links)
          if (other == node) link.fail("node", fmt::format("node {} is listed twice", node));
        link.finish();
        var.degraded_links.emplace_back(node, factor);
      }
    }
    // The seeds price every GEMM at one efficiency; "flat" drops the profile's shape curve.
    if (simcfg->choice_or("gemm_model", "curve", {"curve", "flat"}) == "flat") {
      if (s.calibration && s.calibration->gemm)
        simcfg->fail("gemm_model", fmt::format("\"flat\" would ignore the GEMM curve of calibration '{}' (expected "
                                               "\"curve\", or drop the calibration)", s.calibration_ref));
      s.hardware.gemm_curve = hardware::GemmCurve{};
      s.flat_gemm = true;
    }
    auto& con = s.contention;
    con.link_sharing = simcfg->boolean_or("link_sharing", true);
    con.overlap_model = simcfg->choice_or("overlap_model", "factor", {"factor", "sm_partition", "off"});
    con.overlap_compute_slowdown = simcfg->number_or("overlap_compute_slowdown", 1.19, Check::Positive);
    if (con.overlap_compute_slowdown < 1 || con.overlap_compute_slowdown > 3)
      simcfg->fail("overlap_compute_slowdown",
                   fmt::format("expected a factor in [1, 3] (1 = no slowdown; rule 96 measured 1.19 on average, up "
                               "to 1.4), got {}", con.overlap_compute_slowdown));
    // Knobs of one overlap model are refused under another: a value that would be ignored
    // must not pass silently.
    if (simcfg->has("overlap_compute_slowdown") && con.overlap_model != "factor")
      simcfg->fail("overlap_compute_slowdown",
                   fmt::format("applies to overlap_model \"factor\" only; this scenario has \"{}\"", con.overlap_model));
    if (simcfg->has("nccl_sms") && con.overlap_model != "sm_partition")
      simcfg->fail("nccl_sms",
                   fmt::format("applies to overlap_model \"sm_partition\" only; this scenario has \"{}\"", con.overlap_model));
    con.nccl_sms = simcfg->has("nccl_sms") ? simcfg->integer("nccl_sms", 1, 1024) : 0;
    con.cuda_device_max_connections = simcfg->integer_or("cuda_device_max_connections", 8, 1, 32);
    if (con.overlap_model == "sm_partition") {
      if (s.hardware.sm_count == 0)
        simcfg->fail("overlap_model", fmt::format("\"sm_partition\" needs the SM count of the GPU; profile '{}' has no "
                                                  "compute.sm_count (expected \"factor\" or \"off\")", s.hardware.name));
      if (con.nccl_sms == 0) con.nccl_sms = 2 * std::int64_t{s.hardware.nccl.ring_channels};  // runtime channels, one CTA each
      if (con.nccl_sms == 0)
        simcfg->fail("nccl_sms", fmt::format("profile '{}' has no nccl.ring_channels to derive NCCL's SMs from; set "
                                             "sim.nccl_sms (rule 94: 16-32 on an 8-GPU H100 node)", s.hardware.name));
      if (con.nccl_sms >= s.hardware.sm_count)
        simcfg->fail("nccl_sms", fmt::format("expected fewer SMs than the GPU's {}, got {}", s.hardware.sm_count,
                                             con.nccl_sms));
    }
    if (var.any() && s.rank_mode != "per_rank")
      simcfg->fail(!var.degraded_links.empty() ? "degraded_links" : var.slow_ranks.empty() ? "jitter" : "slow_ranks",
                   "per-rank variation needs \"rank_mode\": \"per_rank\" (symmetric mode simulates one "
                   "representative rank)");
    simcfg->finish();
  }
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
  nlohmann::json par_echo = {{"strategy", p.strategy}, {"dp", p.dp}};
  if (p.torus_axes > 0) par_echo["torus_axes"] = p.torus_axes;
  strategy_of(s).echo_knobs(s, par_echo);
  resolved["parallelism"] = par_echo;
  resolved["precision"] = {{"reduce_dtype", s.precision.reduce_dtype ? dtype_name(*s.precision.reduce_dtype) : "param"},
                           {"fp32_grad_accum", s.precision.fp32_grad_accum}};
  // param_dtype as given; without one, the model's own tensor dtypes hold (a ResNet's fp32, a
  // layer list's per-tensor dtypes), and the echo leaves them so.
  if (param_dtype) resolved["precision"]["param_dtype"] = dtype_name(*param_dtype);
  if (s.precision.gemm_math == hardware::GemmMath::Fp32 || s.precision.gemm_math == hardware::GemmMath::Tf32)
    resolved["precision"]["fp32_matmul_precision"] = s.precision.fp32_matmul_tf32 ? "high" : "highest";
  if (s.precision.float8 != PrecisionConfig::Float8::None) {
    resolved["precision"]["float8"] = "tensorwise";
    resolved["precision"]["float8_all_gather"] = s.precision.float8_all_gather;
  }
  resolved["activations"] = {{"attention", !s.activations.flash_attention          ? std::string("eager")
                                           : s.activations.attention_kernel.empty() ? std::string("flash")
                                                                                    : s.activations.attention_kernel},
                             {"recompute", recompute_name(s.activations.recompute)}};
  if (!s.model.has_attention()) resolved["activations"].erase("attention");  // refused on such models
  if (s.activations.recompute == ActivationConfig::Recompute::SelectiveLayer)
    resolved["activations"]["ac_freq"] = s.activations.ac_freq;
  resolved["cluster"] = {{"gpus_per_node", s.cluster.gpus_per_node}, {"nodes", s.cluster.nodes}};
  resolved["batch"] = {{"micro_batch_size", s.batch.micro_batch_size},
                       {"seq_len", s.batch.seq_len},
                       {"grad_accum", s.batch.grad_accum}};
  resolved["framework"] = nlohmann::json::object();
  if (!s.model.eager_composites.empty() || s.model.has_logits_loss())  // refused on other models
    resolved["framework"]["implementation"] = implementation_names().at(static_cast<std::size_t>(s.framework.implementation));
  if (s.model.has_logits_loss()) resolved["framework"]["cross_entropy"] = s.framework.upcast_logits ? "upcast" : "fused";
  if (s.framework.host_op_s > 0) resolved["framework"]["host_op_s"] = s.framework.host_op_s;
  if (s.framework.cuda_graphs) resolved["framework"]["cuda_graphs"] = true;
  resolved["optimizer"] = s.optimizer;
  resolved["collectives"] = {{"cost_model", s.cost_model},
                             {"algorithm", s.algorithm == hardware::CollectiveAlgorithm::Ring ? "ring"
                                           : s.algorithm == hardware::CollectiveAlgorithm::Hierarchical
                                               ? "hierarchical"
                                               : "auto"}};
  resolved["sim"] = {{"rank_mode", s.rank_mode}};
  resolved["sim"]["link_sharing"] = s.contention.link_sharing;
  resolved["sim"]["overlap_model"] = s.contention.overlap_model;
  resolved["sim"]["gemm_model"] = s.flat_gemm ? "flat" : "curve";
  // Each overlap model's own knob only: the echo runs again as a scenario (knobs of another
  // model are refused).
  if (s.contention.overlap_model == "factor")
    resolved["sim"]["overlap_compute_slowdown"] = s.contention.overlap_compute_slowdown;
  if (s.contention.overlap_model == "sm_partition") resolved["sim"]["nccl_sms"] = s.contention.nccl_sms;
  resolved["sim"]["cuda_device_max_connections"] = s.contention.cuda_device_max_connections;
  if (s.variation.jitter_distribution != "none")
    resolved["sim"]["jitter"] = {{"distribution", s.variation.jitter_distribution},
                                 {"cv", s.variation.jitter_cv},
                                 {"seed", s.variation.jitter_seed}};
  if (!s.variation.slow_ranks.empty()) {
    nlohmann::json slow = nlohmann::json::array();
    for (const auto& [rank, factor] : s.variation.slow_ranks)
      slow.push_back({{"rank", rank}, {"compute_factor", factor}});
    resolved["sim"]["slow_ranks"] = slow;
  }
  if (!s.variation.degraded_links.empty()) {
    nlohmann::json links = nlohmann::json::array();
    for (const auto& [node, factor] : s.variation.degraded_links)
      links.push_back({{"node", node}, {"bandwidth_factor", factor}});
    resolved["sim"]["degraded_links"] = links;
  }
  if (s.calibration) resolved["calibration"] = s.calibration_ref;
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
