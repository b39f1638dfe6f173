// SPDX-License-Identifier: Apache-2.0
// The scenario's field table and the machinery it drives (models/scenario_fields.hpp): the
// generic reader, the echo and the generated field reference. The strategy knobs of
// `parallelism` are declared by their families (ddp.cpp, zero.cpp, fsdp.cpp).
#include "models/scenario_fields.hpp"

#include "hardware/calibration_json.hpp"
#include "hardware/hardware_profile_json.hpp"
#include "models/model_spec_json.hpp"
#include "models/recompute.hpp"
#include "models/scenario.hpp"
#include "models/strategy/strategy.hpp"
#include "sim/support/error.hpp"
#include "sim/support/names.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <climits>
#include <filesystem>

namespace stepsim::models {

std::string ScenarioField::path() const {
  return std::string(object).empty() ? std::string(key) : std::string(object) + "." + key;
}

std::optional<FieldValue> not_echoed(const Scenario&) { return std::nullopt; }

namespace {

constexpr std::int64_t kMaxRanks = 100'000'000;

using T = FieldType;
using Value = std::optional<FieldValue>;

// An `.echo` for a boolean field echoed only when set (its default false stays out of reports).
#define STEPSIM_ECHO_IF_TRUE(member) \
  .echo = [](const Scenario& s) -> Value { return s.member ? Value(true) : std::nullopt; }
// The echo of a mesh degree: echoed when above 1 (a scenario without that dimension echoes as before).
#define STEPSIM_ECHO_IF_ABOVE_ONE(member) \
  .echo = [](const Scenario& s) -> Value { return s.member > 1 ? Value(std::int64_t{s.member}) : std::nullopt; }

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
template <typename R, typename LoadFn, typename ParseFn>
R read_reference(const JsonReader& root, const char* key, std::string& ref, LoadFn load, ParseFn parse) {
  if (!root.has(key)) root.fail(key, "required field is missing");
  if (root.is_string(key)) {
    ref = resolve_path(root.string(key), root.source(), root.path(key));
    return load(ref, root.source(), root.path(key));
  }
  const nlohmann::json& v = root.value(key);
  if (!v.is_object())
    root.fail(key, "expected a catalog name, a path to a .json file, or an inline object, got " + json_excerpt(v));
  ref = "inline";
  return parse(v, root.source(), root.path(key));
}

// /model. precision.param_dtype holds every tensor, activations included, in that dtype: the
// model is built in it (parse_model's dtype).
void read_model(const JsonReader& root, Scenario& s) {
  std::optional<DType> param_dtype;
  if (const auto prec = root.optional_object("precision"); prec && prec->has("param_dtype"))
    param_dtype = parse_dtype(prec->string("param_dtype"), root.source(), prec->path("param_dtype"));
  s.model = read_reference<ModelSpec>(
      root, "model", s.model_ref,
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
      [&](const nlohmann::json& j, const std::string& src, const std::string& ptr) {
        return parse_model(j, src, ptr, param_dtype);
      });
}

void read_hardware(const JsonReader& root, Scenario& s) {
  s.hardware = read_reference<hardware::HardwareProfile>(
      root, "hardware", s.hardware_ref, hardware::load_profile,
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
}

// /calibration: an overlay on top of the profile (stepsim calibrate nccl-tests -o), relative to
// the scenario's folder like the model and hardware files (issue 13 item 10).
void read_calibration(const JsonReader& root, Scenario& s) {
  if (!root.has("calibration")) return;
  s.calibration_ref = resolve_path(root.string("calibration"), root.source(), root.path("calibration"), true);
  auto overlay = hardware::read_calibration(s.calibration_ref);
  // A profile over a base is that base's machine: the overlay must be the base's (a new name
  // does not make it another machine).
  const std::string& machine = s.hardware.base.empty() ? s.hardware.name : s.hardware.base;
  if (overlay.hardware != machine) {
    if (overlay.tables.empty() && !overlay.gemm && !overlay.memory && overlay.host)
      root.fail("calibration", fmt::format("overlay '{}' was measured on profile '{}', but the scenario uses '{}'; its "
                                           "host time is that machine's CPU, {:.3g} us per launched kernel: to try it on "
                                           "'{}', set framework.host_op_s instead",
                                           s.calibration_ref, overlay.hardware, machine, overlay.host->host_op_s * 1e6,
                                           machine));
    root.fail("calibration", fmt::format("overlay '{}' was fitted over profile '{}', but the scenario uses '{}'; "
                                         "its factors are relative to that profile's nominal numbers",
                                         s.calibration_ref, overlay.hardware, machine));
  }
  // A field the overlay's fit replaces would change nothing: refused, not ignored.
  for (const auto& f : s.hardware.overridden)
    if (overlay.gemm && f.rfind("compute.gemm_curve", 0) == 0)
      root.fail("calibration", fmt::format("overlay '{}' fits the GEMM curve, which replaces the profile's '{}' set in "
                                           "/hardware; drop one of them", s.calibration_ref, f));
  if (overlay.memory) {
    // The measured fraction of HBM bandwidth replaces the profile's (the field refused above
    // when /hardware sets it too).
    for (const auto& f : s.hardware.overridden)
      if (f == "memory.hbm_efficiency")
        root.fail("calibration", fmt::format("overlay '{}' measures memory.hbm_efficiency, which /hardware sets too; "
                                             "drop one of them", s.calibration_ref));
    s.hardware.hbm_efficiency = overlay.memory->hbm_efficiency;
  }
  s.calibration = std::make_shared<const hardware::CalibrationOverlay>(std::move(overlay));
}

bool collective_overlay(const Scenario& s) { return s.calibration && !s.calibration->tables.empty(); }



// activations.attention: "auto" (the default) is FlashAttention-2, the kernel PyTorch's SDPA
// runs on A100 and Hopper in bf16 since torch 2.2 (and torchtitan, Hugging Face's "sdpa"), where
// the profile has its measured throughput; elsewhere "flash", fused attention priced as on-chip
// matmuls at the GEMM efficiency. FlashAttention runs fp16/bf16 only: with fp32 tensors SDPA
// takes another kernel ("flash"). A model without attention (a ResNet, an MLP stack) takes no
// attention kernel.
void read_attention(const JsonReader& act, Scenario& s) {
  const bool fp32_math = s.precision.gemm_math == hardware::GemmMath::Fp32 || s.precision.gemm_math == hardware::GemmMath::Tf32;
  const bool attention_model = s.model.has_attention();
  std::vector<std::string> kinds = {"auto", "flash", "eager"};
  for (const auto& k : hardware::attention_kernel_names()) kinds.push_back(k);
  const std::string attention = act.choice_or("attention", "auto", kinds);
  if (!attention_model && attention != "auto")
    act.fail("attention", fmt::format("\"{}\" given, but model '{}' ({}) has no attention; drop activations.attention",
                                      attention, s.model.name, s.model.kind));
  s.activations.flash_attention = attention != "eager";
  if (attention == "auto" && attention_model && !fp32_math && s.hardware.attention_kernel("flash-attention-2") != nullptr)
    s.activations.attention_kernel = "flash-attention-2";
  if (attention == "eager" || attention == "flash" || attention == "auto") return;
  s.activations.attention_kernel = attention;
  // A kernel named explicitly must have measured throughput on this profile.
  if (s.hardware.attention_kernel(attention) == nullptr) {
    std::string have;
    for (const auto& k : s.hardware.attention) have += (have.empty() ? "" : ", ") + k.kernel;
    act.fail("attention", fmt::format("profile '{}' has no measured throughput for '{}' (it has: {}); use "
                                      "\"flash\" or add the kernel to the profile's compute.attention",
                                      s.hardware.name, attention, have.empty() ? "none" : have));
  }
  if (fp32_math)
    act.fail("attention", fmt::format("'{}' runs fp16/bf16 tensors only, and this scenario's are fp32 (SDPA "
                                      "takes its memory-efficient or math kernel): use \"flash\" or \"eager\"",
                                      attention));
}

// The selective policies act on transformer blocks' GEMMs (models/recompute.hpp): a model
// described by FLOPs or measured times has nothing for them to choose from.
void check_recompute(const JsonReader& act, Scenario& s) {
  using Recompute = ActivationConfig::Recompute;
  if (s.activations.recompute != Recompute::SelectiveOp && s.activations.recompute != Recompute::MegatronSelective) return;
  const bool core_attention = s.activations.recompute == Recompute::MegatronSelective;
  bool any = false;
  for (const auto& l : s.model.layers)
    for (const auto& g : l.gemms)
      any = any || (!l.root && !l.fwd_s && (core_attention ? g.attention() : g.kind == LayerGemm::Kind::Linear));
  if (!any)
    act.fail("recompute", fmt::format("\"{}\" recomputes part of each transformer block's {}, and model '{}' has "
                                      "none described by GEMM shapes; use \"full\" or \"selective_layer\"",
                                      recompute_name(s.activations.recompute),
                                      core_attention ? "attention" : "matmuls", s.model.name));
  // torchtitan's op-level policy saves SDPA's fused output (semantics-parallel.md §G3); eager
  // attention's bmm/softmax chain is another save set, not modelled.
  if (!core_attention && !s.activations.flash_attention)
    act.fail("recompute", "\"selective_op\" models torchtitan's policy over SDPA's fused attention; with "
                          "activations.attention \"eager\" use \"full\", \"selective_layer\" or \"megatron_selective\"");
}

// sim.slow_ranks / sim.degraded_links: a list of (index, factor) rows, each index once.
template <typename Check>
void read_rank_list(const JsonReader& sim, Scenario& s, const char* key, const char* index_key, const char* factor_key,
                    std::vector<std::pair<std::int64_t, double>>& out, Check check_factor) {
  if (!sim.has(key)) return;
  const std::string list = std::string("sim.") + key + "[].";
  const ScenarioField& index_field = field_at(list + index_key);
  const ScenarioField& factor_field = field_at(list + factor_key);
  for (const auto& row : sim.objects(key, false)) {
    const auto index = std::get<std::int64_t>(read_value(row, index_field, s, std::int64_t{0}));
    const double factor = std::get<double>(read_value(row, factor_field, s, 0.0));
    check_factor(row, factor);
    for (const auto& [other, unused] : out)
      if (other == index) row.fail(index_key, fmt::format("{} {} is listed twice", index_key, index));
    row.finish();
    out.emplace_back(index, factor);
  }
}

nlohmann::json rank_list_json(const std::vector<std::pair<std::int64_t, double>>& rows, const char* index_key,
                              const char* factor_key) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& [index, factor] : rows) list.push_back({{index_key, index}, {factor_key, factor}});
  return list;
}

std::string dtype_text(const std::optional<DType>& d) { return d ? dtype_name(*d) : "param"; }

std::vector<std::string> dtype_values() { return dtype_names(); }

// The fields of the objects other than parallelism's strategy knobs, in reading order.
std::vector<ScenarioField> core_fields() {
  std::vector<ScenarioField> table = {
      // ---- the root ----
      {.object = "", .key = "name", .doc = "the scenario's name, printed in reports", STEPSIM_FIELD_ACCESS(std::string, name),
       .echo = not_echoed},
      {.object = "", .key = "description", .doc = "free text (ignored)",
       .get = [](const Scenario&) -> FieldValue { return std::string(); }, .set = [](Scenario&, const FieldValue&) {},
       .echo = not_echoed},
      {.object = "", .key = "$schema", .doc = "a JSON schema URL for editors (ignored)",
       .get = [](const Scenario&) -> FieldValue { return std::string(); }, .set = [](Scenario&, const FieldValue&) {},
       .echo = not_echoed},
      {.object = "", .key = "model", .type = T::Reference,
       .doc = "catalog name (`stepsim list models`), path to a model JSON (relative to the scenario's folder), a Hugging "
              "Face `config.json` or a folder holding one (a checkpoint folder, the Hub cache's snapshot folder), "
              "`{\"name\", \"source\", \"hf_config\": {...}}`, or an inline model object (kinds `transformer`, `mlp`, "
              "`resnet`, `layers`; see README \"Bringing a model\" and `models/catalog/`)",
       .required = true, .read = read_model, .echo = not_echoed},
      {.object = "", .key = "hardware", .type = T::Reference,
       .doc = "profile name (`stepsim list profiles`), path to a profile JSON (relative to the scenario's folder; see "
              "`hardware/profiles/`), an inline profile, or a profile with some fields changed: `{\"base\": \"h100-sxm\", "
              "\"inter_node\": {\"nic_bandwidth_bytes_per_s\": \"200Gb/s\"}}` (merged over the base, every field checked "
              "as in a profile file; the report lists what changed). `--set hardware.memory.hbm_bytes=96GiB` does the "
              "same on a named profile",
       .required = true, .read = read_hardware, .echo = not_echoed},
      {.object = "", .key = "calibration",
       .doc = "a calibration overlay (`stepsim calibrate nccl-tests|gemm -o FILE`), relative to the scenario's folder; "
              "fitted over this scenario's profile (docs/calibration.md). Same as `--calibration FILE`",
       .default_doc = "none: the profile's nominal numbers", .read = read_calibration,
       .echo = [](const Scenario& s) -> Value {
         if (!s.calibration) return std::nullopt;
         return s.calibration_ref;
       }},
      {.object = "", .key = "parallelism", .type = T::Object, .doc = "the DP strategy, its degree and its knobs",
       .required = true},
      {.object = "", .key = "cluster", .type = T::Object, .doc = "the cluster's shape"},
      {.object = "", .key = "batch", .type = T::Object, .doc = "tokens per GPU per step"},
      {.object = "", .key = "precision", .type = T::Object, .doc = "mixed precision and float8"},
      {.object = "", .key = "activations", .type = T::Object, .doc = "attention kernel and activation recomputation"},
      {.object = "", .key = "framework", .type = T::Object, .doc = "how the training code runs on the host and GPU"},
      {.object = "", .key = "checkpoint", .type = T::Object,
       .doc = "save the training state every `interval` steps; the report prices one save and what it adds to each step "
              "amortised over the interval (JSON checkpoint.step_time_with_checkpoints_s; step_time_s stays the step "
              "alone; models/checkpoint.hpp)",
       .default_doc = "none (no checkpoints)",
       .echo = [](const Scenario& s) -> Value {
         if (!s.checkpoint.enabled) return std::nullopt;
         return true;
       }},
      {.object = "", .key = "optimizer", .type = T::Choice,
       .doc = "`adam` (AdamW: an HBM-bound step after the last gradient collective), `sgd` (SGD with momentum and weight "
              "decay, as torchvision's recipes and PyTorch's DDP benchmark: one momentum buffer) or `none`",
       .choices = [] { return std::vector<std::string>{"adam", "sgd", "none"}; }, STEPSIM_FIELD_ACCESS(std::string, optimizer)},
      {.object = "", .key = "collectives", .type = T::Object, .doc = "how collectives are priced"},
      {.object = "", .key = "sim", .type = T::Object, .doc = "simulation modes, per-rank variation and contention"},

      // ---- parallelism (the strategy knobs follow, from each family) ----
      {.object = "parallelism", .key = "strategy", .type = T::Choice,
       .doc = "the DP strategy (`stepsim list strategies`; README \"Strategies\")", .choices = strategy_names,
       STEPSIM_FIELD_ACCESS(std::string, parallelism.strategy)},
      {.object = "parallelism", .key = "dp", .type = T::Integer,
       .doc = "DP degree: the ranks that hold replicas (or shards) of the model; the world size is dp × tp × pp",
       .required = true, .min = 1, .max = kMaxRanks, STEPSIM_FIELD_ACCESS(std::int64_t, parallelism.dp)},
      {.object = "parallelism", .key = "tp", .type = T::Integer,
       .doc = "tensor-parallel degree (Megatron-LM's tensor_model_parallel_size): each transformer block's linears "
              "split tp ways (column-parallel qkv and fc1, row-parallel proj and fc2), the embedding and LM head over "
              "the vocabulary; TP AllReduces of the [s, b, h] activations in every block; each TP group sits inside "
              "one node (tp divides gpus_per_node) or over whole nodes (a multiple of it) in the default order "
              "(parallelism.order). Transformers and the seed MLP only",
       .min = 1, .max = hardware::kMaxGpusPerNode, STEPSIM_FIELD_ACCESS(std::int64_t, parallelism.tp),
       STEPSIM_ECHO_IF_ABOVE_ONE(parallelism.tp)},
      {.object = "parallelism", .key = "sequence_parallel", .type = T::Boolean,
       .doc = "Megatron-LM's sequence parallelism (needs tp > 1): norms and dropout on seq_len / tp tokens, an "
              "AllGather before and a ReduceScatter after each TP region in place of the AllReduce; activations and "
              "their HBM traffic 1/tp outside the vocabulary layers",
       STEPSIM_FIELD_ACCESS(bool, parallelism.sequence_parallel), STEPSIM_ECHO_IF_TRUE(parallelism.sequence_parallel)},
      {.object = "parallelism", .key = "tp_comm_overlap", .type = T::Boolean,
       .doc = "Megatron-LM's tp_comm_overlap, torchtitan's async TP (compile.enable_async_tensor_parallel): each TP "
              "collective split against the GEMMs next to it, so a layer's TP communication runs beside its compute and "
              "only what outlasts the compute is exposed (needs sequence_parallel)",
       STEPSIM_FIELD_ACCESS(bool, parallelism.tp_comm_overlap), STEPSIM_ECHO_IF_TRUE(parallelism.tp_comm_overlap)},
      {.object = "parallelism", .key = "pp", .type = T::Integer,
       .doc = "pipeline-parallel degree (Megatron-LM's pipeline_model_parallel_size, torchtitan's "
              "pipeline_parallel_degree): the layers split into pp stages (virtual_stages per rank), PP outermost by "
              "default (parallelism.order); batch.grad_accum micro-batches flow through them under "
              "pipeline_schedule, activations and their gradients sent point to point between stages; the bubble "
              "comes out of the simulation. Blocks split evenly under ddp (Megatron-LM: a multiple of pp × "
              "virtual_stages), torchtitan's way under fsdp / hsdp (the embedding and the head count as a layer "
              "each). Transformers only; ddp, fsdp, hsdp and zero1 (DeepSpeed's PipelineEngine: 1F1B, gradients reduced after the "
              "last backward; it refuses ZeRO-2/3)",
       .min = 1, .max = 4096, STEPSIM_FIELD_ACCESS(std::int64_t, parallelism.pp),
       STEPSIM_ECHO_IF_ABOVE_ONE(parallelism.pp)},
      {.object = "parallelism", .key = "pipeline_schedule", .type = T::Choice,
       .doc = "the pipeline schedule (torch.distributed.pipelining's names): `1F1B` (one forward one backward after "
              "a warm-up of pp − rank forwards; Megatron-LM's and torchtitan's default; at pp 1 it is plain gradient "
              "accumulation), `GPipe` (every forward, then every backward) or `Interleaved1F1B` (virtual_stages model "
              "chunks per PP rank, looped; the micro-batches run in rounds of equal size, max(1, grad_accum / pp) "
              "rounds, so grad_accum must divide into them) or `InterleavedZeroBubble` (zero-bubble ZB1P: each "
              "backward split into its input-gradient pass, which the previous stage waits for, and its "
              "weight-gradient pass, which fills the bubbles; Interleaved1F1B's chunks and rounds; virtual_stages 1 is "
              "the paper's ZB-H1; ddp, fsdp and hsdp) or `ZBVZeroBubble` (ZB-V: the same split on two chunks per rank "
              "in a V, rank r holding stages r and 2·pp − 1 − r; virtual_stages 2). The others need pp > 1",
       .choices = [] {
         return std::vector<std::string>{"1F1B", "GPipe", "Interleaved1F1B", "InterleavedZeroBubble", "ZBVZeroBubble"};
       },
       STEPSIM_FIELD_ACCESS(std::string, parallelism.pipeline_schedule),
       .echo = [](const Scenario& s) -> Value {
         if (s.parallelism.pp <= 1) return std::nullopt;
         return s.parallelism.pipeline_schedule;
       }},
      {.object = "parallelism", .key = "virtual_stages", .type = T::Integer,
       .doc = "model chunks per PP rank (Megatron-LM's virtual_pipeline_model_parallel_size; torchtitan's stages per "
              "rank): Interleaved1F1B, InterleavedZeroBubble and ZBVZeroBubble (exactly 2) only",
       .default_doc = "2 under the multi-stage schedules (torchtitan's default), else 1", .min = 1, .max = 1 << 10,
       STEPSIM_FIELD_ACCESS(std::int64_t, parallelism.virtual_stages),
       STEPSIM_ECHO_IF_ABOVE_ONE(parallelism.virtual_stages)},
      {.object = "parallelism", .key = "cp", .type = T::Integer,
       .doc = "context-parallel degree (Megatron-LM's context_parallel_size, torchtitan's context_parallel_degree): "
              "each micro-batch's sequence split over cp ranks (seq_len a multiple of 2 × cp, load-balanced), every "
              "module but attention on seq_len / cp tokens, attention's queries against every key with the KV "
              "exchanged as cp_comm_type says; weights replicated, gradients reduced (and FSDP shards) over dp × cp "
              "ranks; CP between TP and DP (tp-cp-dp-pp). Transformers with flash attention; ddp, fsdp and hsdp",
       .min = 1, .max = 4096, STEPSIM_FIELD_ACCESS(std::int64_t, parallelism.cp),
       STEPSIM_ECHO_IF_ABOVE_ONE(parallelism.cp)},
      {.object = "parallelism", .key = "cp_comm_type", .type = T::Choice,
       .doc = "how the CP ranks exchange K and V (models/context_parallel.hpp): `p2p` (Megatron-LM's --cp-comm-type "
              "default, Transformer Engine's ring: cp − 1 messages per layer overlapped with the attention steps, "
              "and KV + dKV in backward) or `allgather` (torchtitan's context_parallel_rotate_method default: one "
              "AllGather of KV per layer that only the first step could hide, again in backward, and the fp32 dK/dV "
              "around the ring). Ignored at cp 1",
       .default_doc = "allgather under fsdp / hsdp (torchtitan), p2p otherwise (Megatron-LM)",
       .choices = [] { return std::vector<std::string>{"p2p", "allgather"}; },
       STEPSIM_FIELD_ACCESS(std::string, parallelism.cp_comm_type),
       .echo = [](const Scenario& s) -> Value {
         if (s.parallelism.cp <= 1) return std::nullopt;
         return s.parallelism.cp_comm_type;
       }},
      {.object = "parallelism", .key = "ep", .type = T::Integer,
       .doc = "expert-parallel degree (torchtitan's expert_parallel_degree, Megatron-LM's expert_model_parallel_size): "
              "each rank holds experts / ep of a mixture of experts' routed experts; every MoE layer sends its tokens' "
              "top-k copies to their experts and back by all-to-all over ep consecutive DP ranks (dispatch and combine, "
              "again in backward); the experts' gradients reduce (and the sharded strategies shard them) over the "
              "dp × cp / ep ranks holding the same experts (under hsdp those of one shard group, then across the "
              "replicas). Mixture-of-experts models; ep divides dp × cp (under hsdp the shard group) and the experts; "
              "pp 1",
       .min = 1, .max = 4096, STEPSIM_FIELD_ACCESS(std::int64_t, parallelism.ep),
       STEPSIM_ECHO_IF_ABOVE_ONE(parallelism.ep)},
      {.object = "parallelism", .key = "order", .type = T::String,
       .doc = "how ranks are placed (Megatron-LM's initialize_model_parallel `order`): the dimensions joined by `-`, "
              "innermost (consecutive ranks, one node first) first; every process group and the links it crosses "
              "follow (nodes hold gpus_per_node consecutive ranks). `tp-cp-dp-pp` is Megatron-LM's and torchtitan's "
              "default, `tp-cp-pp-dp` Megatron-LM's --use-tp-pp-dp-mapping (the pipeline's stages on adjacent ranks, "
              "DP outermost); `ep` may appear and places nothing (EP groups are consecutive DP ranks); a dimension of "
              "degree 1 may be left out. Each node must hold whole blocks of the mesh: a dimension a node boundary cuts "
              "has a whole number of its ranks on each node",
       .default_doc = "tp-cp-dp-pp",
       .get = [](const Scenario& s) -> FieldValue { return mesh_order_name(s.parallelism.order); },
       .read = [](const JsonReader& p, Scenario& s) {
         if (!p.has("order")) return;
         const std::string text = p.string("order");
         const auto& q = s.parallelism;
         if (const std::string why = parse_mesh_order(text, {q.tp, q.cp, q.dp, q.pp}, s.parallelism.order);
             !why.empty())
           p.fail("order", fmt::format("'{}': {}", text, why));
       },
       .echo = [](const Scenario& s) -> Value {
         if (s.parallelism.order == kMegatronOrder) return std::nullopt;
         return mesh_order_name(s.parallelism.order);
       }},
  };
  // torus_axes after the strategy knobs
  const ScenarioField torus_axes =
      {.object = "parallelism", .key = "torus_axes", .type = T::Integer,
       .doc = "torus profiles only: how many torus axes the DP rings use at once; fewer axes, less ICI bandwidth (on v5p "
              "the comm-bound threshold is 850 tokens/chip over 3 axes, 2550 over 1: seed 000 §7.2). Refused on GPU "
              "profiles",
       .default_doc = "all of the profile's (3 on `tpu-v5p`)", .min = 1, .max = 3,
       STEPSIM_FIELD_ACCESS(std::int64_t, parallelism.torus_axes), .echo = [](const Scenario& s) -> Value {
         if (s.parallelism.torus_axes <= 0) return std::nullopt;
         return std::int64_t{s.parallelism.torus_axes};
       }};
  std::vector<ScenarioField> rest = {
      // ---- cluster ----
      {.object = "cluster", .key = "gpus_per_node", .type = T::Integer,
       .doc = "GPUs per node: one scale-up (NVLink / NVSwitch) domain", .default_doc = "the profile's", .min = 1,
       .max = hardware::kMaxGpusPerNode,
       .get = [](const Scenario& s) -> FieldValue { return std::int64_t{s.cluster.gpus_per_node}; },
       .read = [](const JsonReader& c, Scenario& s) {
         s.cluster.gpus_per_node = s.hardware.gpus_per_node;
         if (!c.has("gpus_per_node")) return;
         const std::int64_t g = c.integer("gpus_per_node", 1, INT64_MAX);
         if (const std::string why = hardware::gpus_per_node_problem(g); !why.empty()) c.fail("gpus_per_node", why);
         s.cluster.gpus_per_node = static_cast<int>(g);
       }},
      {.object = "cluster", .key = "nodes", .type = T::Integer,
       .doc = "nodes; nodes × gpus_per_node must equal the world size dp × tp × pp",
       .default_doc = "dp × tp × pp / gpus_per_node, rounded up", .min = 1, .max = kMaxRanks,
       STEPSIM_FIELD_ACCESS(std::int64_t, cluster.nodes), .fallback = [](const Scenario& s) -> FieldValue {
         const std::int64_t gpn = s.cluster.gpus_per_node;
         return (s.world_size() + gpn - 1) / gpn;
       }},

      // ---- batch ----
      {.object = "batch", .key = "micro_batch_size", .type = T::Integer,
       .doc = "sequences (images for a ResNet) per GPU per micro-batch", .min = 1, .max = 1 << 30,
       STEPSIM_FIELD_ACCESS(std::int64_t, batch.micro_batch_size)},
      {.object = "batch", .key = "seq_len", .type = T::Integer, .doc = "tokens per sequence", .unit = "tokens",
       .default_doc = "4096 (1 for a convolutional network: a sample is one image)", .min = 1, .max = 1 << 30,
       STEPSIM_FIELD_ACCESS(std::int64_t, batch.seq_len),
       .fallback = [](const Scenario& s) -> FieldValue {
         return s.model.sample_unit() == "images" ? std::int64_t{1} : BatchConfig{}.seq_len;
       },
       .rule = [](const JsonReader& b, Scenario& s) {
         if (s.model.sample_unit() == "images" && s.batch.seq_len != 1)
           b.fail("seq_len", fmt::format("got {}, but model '{}' is a convolutional network ({}): a sample is one "
                                         "image, so seq_len is 1; give the images per GPU as micro_batch_size",
                                         s.batch.seq_len, s.model.name, s.model.kind));
       }},
      {.object = "batch", .key = "grad_accum", .type = T::Integer,
       .doc = "micro-batches per optimizer step (gradient accumulation)", .min = 1, .max = 1 << 20,
       STEPSIM_FIELD_ACCESS(std::int64_t, batch.grad_accum)},

      // ---- precision ----
      {.object = "precision", .key = "param_dtype", .type = T::Choice,
       .doc = "every tensor, activations included, is held and computed in it (FSDP MixedPrecisionPolicy's "
              "param_dtype); fp32 tensors make FP32 (or TF32) GEMMs. PyTorch's names (`bfloat16`, `float32`, ...) are "
              "accepted too",
       .default_doc = "the model's own tensor dtypes (bf16 for a language model)", .choices = dtype_values,
       .get = [](const Scenario& s) -> FieldValue { return dtype_name(s.precision.param_dtype); },
       .read = [](const JsonReader& p, Scenario& s) {
         if (!p.has("param_dtype")) return;
         s.precision.param_dtype = parse_dtype(p.string("param_dtype"), p.source(), p.path("param_dtype"));
         s.precision.param_dtype_given = true;
         for (auto& layer : s.model.layers)
           for (auto& t : layer.params) t.dtype = s.precision.param_dtype;
       },
       .echo = [](const Scenario& s) -> Value {
         if (!s.precision.param_dtype_given) return std::nullopt;
         return dtype_name(s.precision.param_dtype);
       }},
      {.object = "precision", .key = "reduce_dtype", .type = T::Choice,
       .doc = "dtype of the gradient collectives; `param`: each tensor's own dtype", .default_doc = "param",
       .choices = [] {
         auto v = dtype_values();
         v.insert(v.begin(), "param");
         return v;
       },
       .get = [](const Scenario& s) -> FieldValue { return dtype_text(s.precision.reduce_dtype); },
       .read = [](const JsonReader& p, Scenario& s) {
         // "param" (what the echo writes for the default): each tensor's gradients reduce in its own dtype.
         if (p.has("reduce_dtype") && p.string("reduce_dtype") != "param")
           s.precision.reduce_dtype = parse_dtype(p.string("reduce_dtype"), p.source(), p.path("reduce_dtype"));
       }},
      {.object = "precision", .key = "fp32_grad_accum", .type = T::Boolean,
       .doc = "accumulate gradients across micro-batches in an fp32 buffer (strategy `ddp` only, the one whose "
              "accumulation adds stepsim prices)",
       .applies_doc = "ddp", STEPSIM_FIELD_ACCESS(bool, precision.fp32_grad_accum), .rule = [](const JsonReader& p, Scenario& s) {
         if (s.precision.fp32_grad_accum && s.precision.param_dtype == DType::FP32 && s.precision.param_dtype_given)
           p.fail("fp32_grad_accum", "the parameters are fp32 already, so their gradients accumulate in fp32 without a "
                                     "separate buffer; drop it");
         // Only DDP prices the accumulation adds (models/strategy/compute_tasks grad_accumulation_bytes);
         // elsewhere the knob would change memory but not time: refused rather than half applied.
         if (s.precision.fp32_grad_accum && strategy_of(s).family != StrategyFamily::DDP)
           p.fail("fp32_grad_accum", fmt::format("applies to strategy 'ddp' only (the one whose gradient-accumulation "
                                                 "adds stepsim prices); this scenario has '{}'", s.parallelism.strategy));
       }},
      {.object = "precision", .key = "fp32_matmul_precision", .type = T::Choice,
       .doc = "torch.set_float32_matmul_precision: `highest` IEEE FP32, `high` TF32 (fp32 tensors only)",
       .choices = [] { return std::vector<std::string>{"highest", "high"}; },
       .get = [](const Scenario& s) -> FieldValue { return std::string(s.precision.fp32_matmul_tf32 ? "high" : "highest"); },
       .set = [](Scenario& s, const FieldValue& v) { s.precision.fp32_matmul_tf32 = std::get<std::string>(v) == "high"; },
       .echo = [](const Scenario& s) -> Value {
         if (s.precision.gemm_math != hardware::GemmMath::Fp32 && s.precision.gemm_math != hardware::GemmMath::Tf32)
           return std::nullopt;
         return std::string(s.precision.fp32_matmul_tf32 ? "high" : "highest");
       }},
      {.object = "precision", .key = "float8", .type = T::Choice,
       .doc = "`tensorwise`: torchao Float8Linear on the transformer blocks' linears (FP8 GEMMs plus amax/cast kernels, "
              "fused under framework.implementation `compile`); needs FP8 tensor cores. The rowwise recipes are refused "
              "(no published kernel benchmark to price them)",
       .choices = [] { return std::vector<std::string>{"none", "tensorwise", "rowwise", "rowwise_with_gw_hp"}; },
       .get = [](const Scenario& s) -> FieldValue {
         return std::string(s.precision.float8 == PrecisionConfig::Float8::Tensorwise ? "tensorwise" : "none");
       },
       .set = [](Scenario& s, const FieldValue& v) {
         s.precision.float8 = std::get<std::string>(v) == "tensorwise" ? PrecisionConfig::Float8::Tensorwise
                                                                       : PrecisionConfig::Float8::None;
       },
       .rule = [](const JsonReader& p, Scenario&) {
         const std::string float8 = p.has("float8") ? p.string("float8") : "none";
         if (float8 == "rowwise" || float8 == "rowwise_with_gw_hp")
           p.fail("float8", fmt::format("\"{}\" (torchao's CUTLASS rowwise-scaled GEMM) has no published kernel benchmark "
                                        "stepsim could price it with (torchtitan measured it slower than bf16 on Llama 3 "
                                        "70B); expected \"tensorwise\" or \"none\"", float8));
       },
       .echo = [](const Scenario& s) -> Value {
         if (s.precision.float8 == PrecisionConfig::Float8::None) return std::nullopt;
         return std::string("tensorwise");
       }},
      {.object = "precision", .key = "float8_all_gather", .type = T::Boolean,
       .doc = "FSDP2 all-gathers the Float8Linear weights in FP8 (torchtitan's enable_fsdp_float8_all_gather); needs "
              "float8 `tensorwise` and strategy fsdp or hsdp with fsdp_version fsdp2",
       .applies_doc = "fsdp, hsdp (fsdp_version fsdp2)", STEPSIM_FIELD_ACCESS(bool, precision.float8_all_gather),
       .echo = [](const Scenario& s) -> Value {
         if (s.precision.float8 == PrecisionConfig::Float8::None) return std::nullopt;
         return s.precision.float8_all_gather;
       }},

      // ---- activations ----
      {.object = "activations", .key = "attention", .type = T::Choice,
       .doc = "the attention kernel: `flash-attention-2`, `flash-attention-1`, `flash-attention-triton` priced by that "
              "kernel's measured throughput in the profile (`compute.attention`: A100, H100, H200, H800); `flash` as "
              "on-chip matmuls; `eager` adds the a·s² score traffic and memory. Refused on models without attention",
       .default_doc = "`auto`: flash-attention-2 where the profile measures it, else `flash`",
       .choices = [] {
         std::vector<std::string> kinds = {"auto", "flash", "eager"};
         for (const auto& k : hardware::attention_kernel_names()) kinds.push_back(k);
         return kinds;
       },
       .get = [](const Scenario& s) -> FieldValue {
         return !s.activations.flash_attention ? std::string("eager")
                : s.activations.attention_kernel.empty() ? std::string("flash")
                                                         : s.activations.attention_kernel;
       },
       .read = read_attention, .echo = [](const Scenario& s) -> Value {
         if (!s.model.has_attention()) return std::nullopt;  // refused on such models
         return !s.activations.flash_attention ? std::string("eager")
                : s.activations.attention_kernel.empty() ? std::string("flash")
                                                         : s.activations.attention_kernel;
       }},
      {.object = "activations", .key = "recompute", .type = T::Choice,
       .doc = "activation checkpointing: `none`, `full` (every block), `selective_op` (torchtitan's per-op policy), "
              "`selective_layer` (full AC on every ac_freq-th block), `megatron_selective` (core attention)",
       .choices = recompute_names,
       .get = [](const Scenario& s) -> FieldValue { return recompute_name(s.activations.recompute); },
       .set = [](Scenario& s, const FieldValue& v) { s.activations.recompute = recompute_from_name(std::get<std::string>(v)); },
       .rule = check_recompute},
      {.object = "activations", .key = "ac_freq", .type = T::Integer,
       .doc = "recompute `selective_layer` only: full AC on every ac_freq-th block (torchtitan's selective_ac_option)",
       .min = 1, .max = 1000000, STEPSIM_FIELD_ACCESS(std::int64_t, activations.ac_freq),
       .rule = [](const JsonReader& a, Scenario& s) {
         if (a.has("ac_freq") && s.activations.recompute != ActivationConfig::Recompute::SelectiveLayer)
           a.fail("ac_freq", fmt::format("applies to recompute \"selective_layer\" only (full AC on every ac_freq-th "
                                         "block); this scenario has \"{}\"", recompute_name(s.activations.recompute)));
       },
       .echo = [](const Scenario& s) -> Value {
         if (s.activations.recompute != ActivationConfig::Recompute::SelectiveLayer) return std::nullopt;
         return s.activations.ac_freq;
       }},

      // ---- checkpoint ----
      {.object = "checkpoint", .key = "interval", .type = T::Integer,
       .doc = "steps between saves (torchtitan's checkpoint.interval)", .unit = "steps", .min = 1,
       .max = std::int64_t{1} << 40, STEPSIM_FIELD_ACCESS(std::int64_t, checkpoint.interval)},
      {.object = "checkpoint", .key = "format", .type = T::Choice,
       .doc = "`sharded`: every rank writes what it holds (torch.distributed.checkpoint, DeepSpeed's per-rank files); "
              "`full`: FSDP's FULL_STATE_DICT with rank0_only and offload_to_cpu, the whole state gathered into rank 0's "
              "CPU memory and written by it (ddp, fsdp and hsdp; DeepSpeed consolidates offline with zero_to_fp32.py)",
       .choices = [] { return std::vector<std::string>{"sharded", "full"}; },
       STEPSIM_FIELD_ACCESS(std::string, checkpoint.format)},
      {.object = "checkpoint", .key = "storage_write_bytes_per_s", .type = T::Number,
       .doc = "write bandwidth of the storage every writer shares (a parallel file system, object store); absent: the "
              "nodes' own NVMe, nodes × the profile's host.nvme_write_bytes_per_s",
       .unit = "bytes/s", .default_doc = "the nodes' NVMe", .check = Check::Positive,
       .dimension = Dimension::BytesPerSecond, STEPSIM_FIELD_ACCESS(double, checkpoint.storage_write_bytes_per_s),
       .echo = [](const Scenario& s) -> Value {
         if (!(s.checkpoint.storage_write_bytes_per_s > 0)) return std::nullopt;
         return s.checkpoint.storage_write_bytes_per_s;
       }},
      {.object = "checkpoint", .key = "model_only", .type = T::Boolean,
       .doc = "save the model's weights only, no optimizer state (torchtitan's last_save_model_only, for the final "
              "save)", STEPSIM_FIELD_ACCESS(bool, checkpoint.model_only)},

      // ---- framework ----
      {.object = "framework", .key = "host_op_s", .type = T::Number,
       .doc = "CPU seconds per PyTorch op (Python, dispatcher, launch); a layer takes max(its GPU time, its ops × "
              "host_op_s): launch-bound small layers. 0 models GPU time only",
       .unit = "s", .default_doc = "0, or the calibration overlay's measured host time (`calibrate trace`)",
       .check = Check::NonNegative, .dimension = Dimension::Seconds,
       STEPSIM_FIELD_ACCESS(double, framework.host_op_s),
       .fallback = [](const Scenario& s) -> FieldValue {
         return s.calibration && s.calibration->host ? s.calibration->host->host_op_s : s.framework.host_op_s;
       },
       .rule = [](const JsonReader& f, Scenario& s) {
         if (s.framework.host_op_s > 0.01)
           f.fail("host_op_s", fmt::format("expected a per-op CPU time below 10 ms (e.g. \"20us\"), got {:g} s", s.framework.host_op_s));
         // The overlay's measured host time replaces the field: both would be one guess too many
         // (0 turns it off: the overlay's other sections stay).
         const bool overlay = s.calibration && s.calibration->host;
         if (f.has("host_op_s") && overlay && s.framework.host_op_s > 0)
           f.fail("host_op_s", fmt::format("the calibration overlay '{}' measures the host time per op ({:.3g} us); "
                                           "drop one of them (0 turns the measured one off)", s.calibration_ref,
                                           s.calibration->host->host_op_s * 1e6));
         s.framework.host_op_measured = overlay && !f.has("host_op_s");
       },
       .echo = [](const Scenario& s) -> Value {
         if (s.framework.host_op_measured) return std::nullopt;  // the overlay's
         if (s.calibration && s.calibration->host) return s.framework.host_op_s;  // 0: turned off
         if (!(s.framework.host_op_s > 0)) return std::nullopt;
         return s.framework.host_op_s;
       }},
      {.object = "framework", .key = "cuda_graphs", .type = T::Boolean,
       .doc = "the step replays from CUDA graphs: no per-op CPU cost, no NCCL launch overhead (needs collectives "
              "cost_model `nccl`; refused with host_op_s)",
       STEPSIM_FIELD_ACCESS(bool, framework.cuda_graphs),
       .rule = [](const JsonReader& f, Scenario& s) {
         // A graph removes the launches whose host time the overlay measured.
         if (s.framework.cuda_graphs && s.framework.host_op_measured) {
           s.framework.host_op_s = 0;
           s.framework.host_op_measured = false;
         }
         if (s.framework.cuda_graphs && s.framework.host_op_s > 0)
           f.fail("cuda_graphs", fmt::format("a graph replays its kernels without the CPU launching each op, so host_op_s "
                                             "({:g} s) would act on nothing; drop one of them", s.framework.host_op_s));
         if (s.framework.cuda_graphs) s.hardware.nccl.launch_overhead_s = 0;  // captured collectives launch from the graph
       },
       STEPSIM_ECHO_IF_TRUE(framework.cuda_graphs)},
      {.object = "framework", .key = "implementation", .type = T::Choice,
       .doc = "which elementwise kernels run: `eager` (PyTorch modules op by op), `compile` (torch.compile fuses each "
              "chain), `megatron_te` (Megatron-Core with Transformer Engine's fused kernels)",
       .choices = implementation_names,
       .get = [](const Scenario& s) -> FieldValue {
         return implementation_names().at(static_cast<std::size_t>(s.framework.implementation));
       },
       .set = [](Scenario& s, const FieldValue& v) {
         const auto names = implementation_names();
         s.framework.implementation = static_cast<FrameworkConfig::Implementation>(
             std::find(names.begin(), names.end(), std::get<std::string>(v)) - names.begin());
       },
       .rule = [](const JsonReader& f, Scenario& s) {
         // Knobs this model gives nothing to act on are refused, not ignored.
         if (f.has("implementation") && s.model.eager_composites.empty() && !s.model.has_logits_loss())
           f.fail("implementation", fmt::format("model '{}' has no composite op that eager PyTorch runs apart and no loss "
                                                "over logits (it is described by {}); drop framework.implementation",
                                                s.model.name, s.model.kind == "mlp"      ? "its MLP layers"
                                                              : s.model.kind == "resnet" ? "cuDNN's convolutions and BatchNorm"
                                                                                         : "its layers' FLOPs and bytes"));
         if (s.framework.implementation == FrameworkConfig::Implementation::MegatronTE &&
             s.precision.float8 != PrecisionConfig::Float8::None)
           f.fail("implementation", "\"megatron_te\" trains FP8 with Transformer Engine's own recipe, which stepsim does "
                                    "not model; precision.float8 is torchao's Float8Linear (torchtitan): use \"compile\" or \"eager\"");
       },
       .echo = [](const Scenario& s) -> Value {
         if (s.model.eager_composites.empty() && !s.model.has_logits_loss()) return std::nullopt;  // refused on other models
         return implementation_names().at(static_cast<std::size_t>(s.framework.implementation));
       }},
      {.object = "framework", .key = "cross_entropy", .type = T::Choice,
       .doc = "the loss: `upcast` (logits cast to fp32 first: torchtitan, Hugging Face, Megatron) or `fused` (one kernel "
              "over the low-precision logits). Models with an LM head only",
       .choices = [] { return std::vector<std::string>{"upcast", "fused"}; },
       .get = [](const Scenario& s) -> FieldValue { return std::string(s.framework.upcast_logits ? "upcast" : "fused"); },
       .set = [](Scenario& s, const FieldValue& v) { s.framework.upcast_logits = std::get<std::string>(v) == "upcast"; },
       .rule = [](const JsonReader& f, Scenario& s) {
         if (f.has("cross_entropy") && !s.model.has_logits_loss())
           f.fail("cross_entropy", fmt::format("model '{}' computes no loss over logits (no LM head); drop "
                                               "framework.cross_entropy", s.model.name));
       },
       .echo = [](const Scenario& s) -> Value {
         if (!s.model.has_logits_loss()) return std::nullopt;
         return std::string(s.framework.upcast_logits ? "upcast" : "fused");
       }},

      // ---- collectives ----
      {.object = "collectives", .key = "cost_model", .type = T::Choice,
       .doc = "`nccl`: NCCL's tuner and launch overhead (docs/calibration.md); `alpha-beta`: the seeds' α-β model, which "
              "the reference figures use",
       .default_doc = "`nccl` for profiles with an `nccl` object (NVIDIA), else `alpha-beta`; `alpha-beta` with a "
                      "calibration overlay",
       .choices = [] { return std::vector<std::string>{"alpha-beta", "nccl"}; },
       .get = [](const Scenario& s) -> FieldValue { return s.cost_model; },
       .read = [](const JsonReader& c, Scenario& s) {
         s.cost_model = c.choice_or("cost_model", s.cost_model, {"alpha-beta", "nccl"});
         s.collective_model = hardware::parse_collective_model(s.cost_model, c.source(), c.path("cost_model"));
       },
       .rule = [](const JsonReader& c, Scenario& s) {
         if (s.collective_model != hardware::CollectiveModel::Nccl) return;
         if (collective_overlay(s))
           c.fail("cost_model", fmt::format("\"nccl\" cannot be combined with calibration '{}': overlays are "
                                            "fitted over the alpha-beta model (expected \"alpha-beta\")",
                                            s.calibration_ref));
         if (s.hardware.nccl.arch.empty())
           c.fail("cost_model", fmt::format("\"nccl\" needs a profile with an \"nccl\" object (GPU generation and "
                                            "NCCL channels); profile '{}' has none (expected \"alpha-beta\")",
                                            s.hardware.name));
       }},
      {.object = "collectives", .key = "algorithm", .type = T::Choice,
       .doc = "`auto` (ring in a node, hierarchical across nodes, torus rings on TPU), `ring`, `hierarchical`",
       .default_doc = "`auto`; a calibration overlay's own algorithm (its factors are relative to it)",
       .choices = hardware::collective_algorithm_names,
       .get = [](const Scenario& s) -> FieldValue { return hardware::collective_algorithm_name(s.algorithm); },
       .set = [](Scenario& s, const FieldValue& v) {
         s.algorithm = hardware::collective_algorithm_from(std::get<std::string>(v)).value_or(hardware::CollectiveAlgorithm::Auto);
       },
       .fallback = [](const Scenario& s) -> FieldValue {
         return collective_overlay(s) ? hardware::collective_algorithm_name(s.calibration->algorithm) : std::string("auto");
       },
       .rule = [](const JsonReader& c, Scenario& s) {
         // An overlay's factors are relative to the algorithm it was fitted over (issue 13 item 10).
         if (collective_overlay(s) && s.algorithm != s.calibration->algorithm)
           c.fail("algorithm", fmt::format("\"{}\" differs from the \"{}\" that calibration '{}' was fitted over; "
                                           "its factors are relative to that algorithm", c.string("algorithm"),
                                           hardware::collective_algorithm_name(s.calibration->algorithm),
                                           s.calibration_ref));
       }},

      // ---- sim ----
      {.object = "sim", .key = "rank_mode", .type = T::Choice,
       .doc = "`symmetric`: one representative rank (cost independent of dp); `per_rank`: every rank simulated in one "
              "engine run, each with its own link sharing, compute slowdown, launch queues and memory admission, a "
              "collective starting when its last member arrives (without variation every rank plays the symmetric step)",
       .choices = [] { return std::vector<std::string>{"symmetric", "per_rank"}; }, STEPSIM_FIELD_ACCESS(std::string, rank_mode)},
      {.object = "sim", .key = "jitter", .type = T::Object,
       .doc = "each compute task on each rank lasts a seeded random factor (mean 1) longer; per_rank only",
       .default_doc = "none",
       .read = [](const JsonReader& sim, Scenario& s) {
         if (const auto jitter = sim.optional_object("jitter")) {
           read_fields(*jitter, "sim.jitter", s);
           jitter->finish();
         }
       },
       .echo_json = [](const Scenario& s, nlohmann::json& out) {
         if (s.variation.jitter_distribution == "none") return;
         echo_fields(s, "sim.jitter", out["jitter"]);
       }},
      {.object = "sim.jitter", .key = "distribution", .type = T::Choice,
       .doc = "`normal`: max(0, 1 + cv·z), cv ≤ 0.5 (beyond that the truncated mean drifts above 1); `lognormal`: any cv "
              "up to 10",
       .default_doc = "normal", .choices = [] { return std::vector<std::string>{"normal", "lognormal"}; },
       STEPSIM_FIELD_ACCESS(std::string, variation.jitter_distribution),
       .fallback = [](const Scenario&) -> FieldValue { return std::string("normal"); }},
      {.object = "sim.jitter", .key = "cv", .type = T::Number, .doc = "coefficient of variation of each task's duration",
       .required = true, .range_doc = "[0, 10]", .check = Check::NonNegative, STEPSIM_FIELD_ACCESS(double, variation.jitter_cv),
       .rule = [](const JsonReader& j, Scenario& s) {
         const auto& var = s.variation;
         if (var.jitter_cv > 10) j.fail("cv", fmt::format("expected a coefficient of variation in [0, 10], got {}", var.jitter_cv));
         // max(0, 1 + cv·z) has mean 1 + cv·(φ(1/cv) − (1/cv)·Φ(−1/cv)): +0.4 % at cv 0.5, +8 % at 1.
         if (var.jitter_distribution == "normal" && var.jitter_cv > 0.5)
           j.fail("cv", fmt::format("expected cv <= 0.5 for \"normal\" (truncated at 0, its mean drifts above 1 "
                                    "beyond that), got {}; use \"lognormal\" for larger spreads",
                                    var.jitter_cv));
       }},
      {.object = "sim.jitter", .key = "seed", .type = T::Integer, .doc = "the random stream's seed (same seed, same bytes)",
       .min = 0, .max = std::int64_t{1} << 53, STEPSIM_FIELD_ACCESS(std::int64_t, variation.jitter_seed)},
      {.object = "sim", .key = "expert_load", .type = T::Object,
       .doc = "a mixture of experts' uneven routing under expert parallelism: each rank's load of each MoE layer (the "
              "tokens its experts receive over the balanced share) is max(0, 1 + cv·z), drawn once per step, capped at "
              "capacity_factor when given (tokens beyond it dropped), and that rank's expert work scales with it, so "
              "the busiest rank sets the pace of every all-to-all; per_rank and ep > 1 only",
       .default_doc = "none (every expert gets its balanced share)",
       .read = [](const JsonReader& sim, Scenario& s) {
         if (const auto load = sim.optional_object("expert_load")) {
           read_fields(*load, "sim.expert_load", s);
           load->finish();
           if (s.parallelism.ep <= 1)
             sim.fail("expert_load", "needs expert parallelism (parallelism.ep > 1): without it every rank runs every "
                                     "expert on its own tokens, and no rank waits for another's experts");
         }
       },
       .echo_json = [](const Scenario& s, nlohmann::json& out) {
         if (s.variation.expert_load_cv <= 0) return;
         echo_fields(s, "sim.expert_load", out["expert_load"]);
       }},
      {.object = "sim.expert_load", .key = "cv", .type = T::Number,
       .doc = "coefficient of variation of a rank's expert load across the EP ranks (0.2: the busiest of 64 ranks "
              "about 1.5x its share)",
       .required = true, .range_doc = "(0, 0.5]", .check = Check::NonNegative,
       STEPSIM_FIELD_ACCESS(double, variation.expert_load_cv),
       .rule = [](const JsonReader& j, Scenario& s) {
         const double cv = s.variation.expert_load_cv;
         if (!(cv > 0) || cv > 0.5)
           j.fail("cv", fmt::format("expected a coefficient of variation in (0, 0.5] (0: every rank balanced, as "
                                    "without sim.expert_load; max(0, 1 + cv·z) drifts above a mean of 1 beyond 0.5), "
                                    "got {}", cv));
       }},
      {.object = "sim.expert_load", .key = "seed", .type = T::Integer,
       .doc = "the random stream's seed (same seed, same bytes)", .min = 0, .max = std::int64_t{1} << 53,
       STEPSIM_FIELD_ACCESS(std::int64_t, variation.expert_load_seed)},
      {.object = "sim.expert_load", .key = "capacity_factor", .type = T::Number,
       .doc = "Megatron-LM's moe_expert_capacity_factor: an expert takes at most this many times its balanced share "
              "of tokens and drops the rest (DeepSpeed's capacity_factor); absent: dropless",
       .default_doc = "none (dropless)", .range_doc = "[1, 64]", .check = Check::Positive,
       STEPSIM_FIELD_ACCESS(double, variation.capacity_factor),
       .rule = [](const JsonReader& j, Scenario& s) {
         const double cf = s.variation.capacity_factor;
         if (j.has("capacity_factor") && (cf < 1 || cf > 64))
           j.fail("capacity_factor", fmt::format("expected a factor in [1, 64] (below 1 every expert drops tokens even "
                                                 "when the router balances them), got {}", cf));
       }},
      {.object = "sim", .key = "slow_ranks", .type = T::ObjectList,
       .doc = "`[{\"rank\": 3, \"compute_factor\": 1.2}]`: that rank's compute lasts 1.2× longer; per_rank only",
       .default_doc = "[]",
       .read = [](const JsonReader& sim, Scenario& s) {
         read_rank_list(sim, s, "slow_ranks", "rank", "compute_factor", s.variation.slow_ranks,
                        [](const JsonReader& row, double factor) {
                          if (factor > 1000)
                            row.fail("compute_factor", fmt::format("expected a factor in (0, 1000], got {}", factor));
                        });
       },
       .echo_json = [](const Scenario& s, nlohmann::json& out) {
         if (!s.variation.slow_ranks.empty()) out["slow_ranks"] = rank_list_json(s.variation.slow_ranks, "rank", "compute_factor");
       }},
      {.object = "sim.slow_ranks[]", .key = "rank", .type = T::Integer,
       .doc = "the slow rank: a world rank, numbered in parallelism.order", .required = true,
       .min = 0, .max_of = [](const Scenario& s) { return s.world_size() - 1; }, .range_doc = "[0, dp × tp × cp × pp − 1]"},
      {.object = "sim.slow_ranks[]", .key = "compute_factor", .type = T::Number,
       .doc = "how many times longer its compute tasks last", .required = true, .range_doc = "(0, 1000]",
       .check = Check::Positive},
      {.object = "sim", .key = "degraded_links", .type = T::ObjectList,
       .doc = "`[{\"node\": 5, \"bandwidth_factor\": 0.5}]`: that node's network at half speed; every collective crossing "
              "the network with a member there runs its bandwidth term at the slowest member's factor; per_rank only",
       .default_doc = "[]",
       .read = [](const JsonReader& sim, Scenario& s) {
         read_rank_list(sim, s, "degraded_links", "node", "bandwidth_factor", s.variation.degraded_links,
                        [](const JsonReader& row, double factor) {
                          if (factor < 1e-3)
                            row.fail("bandwidth_factor",
                                     fmt::format("expected a factor in [0.001, 1] (1 = healthy), got {}", factor));
                        });
       },
       .echo_json = [](const Scenario& s, nlohmann::json& out) {
         if (!s.variation.degraded_links.empty())
           out["degraded_links"] = rank_list_json(s.variation.degraded_links, "node", "bandwidth_factor");
       }},
      {.object = "sim.degraded_links[]", .key = "node", .type = T::Integer, .doc = "the node", .required = true,
       .min = 0, .max_of = [](const Scenario& s) -> std::int64_t { return s.cluster.nodes - 1; },
       .range_doc = "[0, nodes − 1]"},
      {.object = "sim.degraded_links[]", .key = "bandwidth_factor", .type = T::Number,
       .doc = "the fraction of its network bandwidth left (1 = healthy)", .required = true, .range_doc = "[0.001, 1]",
       .check = Check::Fraction},
      {.object = "sim", .key = "gemm_model", .type = T::Choice,
       .doc = "`curve`: GEMM time from the profile's shape-dependent curve (`compute.gemm_curve`: V100, A100, H100, H200, "
              "H800) when it has one; `flat`: every GEMM at `compute.gemm_efficiency`, the seeds' model",
       .choices = [] { return std::vector<std::string>{"curve", "flat"}; },
       .get = [](const Scenario& s) -> FieldValue { return std::string(s.flat_gemm ? "flat" : "curve"); },
       .set = [](Scenario& s, const FieldValue& v) {
         if (std::get<std::string>(v) != "flat") return;
         s.hardware.gemm_curve = hardware::GemmCurve{};  // the seeds price every GEMM at one efficiency
         s.flat_gemm = true;
       },
       .rule = [](const JsonReader& sim, Scenario& s) {
         if (s.flat_gemm && s.calibration && s.calibration->gemm)
           sim.fail("gemm_model", fmt::format("\"flat\" would ignore the GEMM curve of calibration '{}' (expected "
                                              "\"curve\", or drop the calibration)", s.calibration_ref));
       }},
      {.object = "sim", .key = "link_sharing", .type = T::Boolean,
       .doc = "collectives running at once on a rank (HSDP's replica AllReduce, ZeRO overlap) share its NVLink / NIC by "
              "max-min fairness; only the bandwidth term stretches. Under per_rank each rank's sharing is solved again with its "
              "own variation",
       STEPSIM_FIELD_ACCESS(bool, contention.link_sharing)},
      {.object = "sim", .key = "overlap_model", .type = T::Choice,
       .doc = "compute while a collective runs on its rank: `factor` (× overlap_compute_slowdown, semantics.md §E rule "
              "96), `sm_partition` (NCCL holds nccl_sms SMs: slowdown SMs/(SMs−k), rule 95) or `off` (the seeds' "
              "perfect overlap)",
       .choices = [] { return std::vector<std::string>{"factor", "sm_partition", "off"}; },
       STEPSIM_FIELD_ACCESS(std::string, contention.overlap_model)},
      {.object = "sim", .key = "overlap_compute_slowdown", .type = T::Number,
       .doc = "overlap_model `factor` only: compute slowdown while a collective runs (rule 96 measured 1.19 on average, "
              "up to 1.4)",
       .range_doc = "[1, 3]", .check = Check::Positive, STEPSIM_FIELD_ACCESS(double, contention.overlap_compute_slowdown),
       .rule = [](const JsonReader& sim, Scenario& s) {
         const auto& con = s.contention;
         if (con.overlap_compute_slowdown < 1 || con.overlap_compute_slowdown > 3)
           sim.fail("overlap_compute_slowdown",
                    fmt::format("expected a factor in [1, 3] (1 = no slowdown; rule 96 measured 1.19 on average, up "
                                "to 1.4), got {}", con.overlap_compute_slowdown));
         // Knobs of one overlap model are refused under another: a value that would be ignored
         // must not pass silently.
         if (sim.has("overlap_compute_slowdown") && con.overlap_model != "factor")
           sim.fail("overlap_compute_slowdown",
                    fmt::format("applies to overlap_model \"factor\" only; this scenario has \"{}\"", con.overlap_model));
       },
       .echo = [](const Scenario& s) -> Value {
         if (s.contention.overlap_model != "factor") return std::nullopt;
         return s.contention.overlap_compute_slowdown;
       }},
      {.object = "sim", .key = "nccl_sms", .type = T::Integer,
       .doc = "overlap_model `sm_partition` only: the SMs NCCL holds (rule 94: 16–32 on an 8-GPU H100 node)",
       .default_doc = "2 × the profile's NCCL ring channels (24 on H100)", .min = 1, .max = 1024,
       STEPSIM_FIELD_ACCESS(std::int64_t, contention.nccl_sms),
       .rule = [](const JsonReader& sim, Scenario& s) {
         if (sim.has("nccl_sms") && s.contention.overlap_model != "sm_partition")
           sim.fail("nccl_sms", fmt::format("applies to overlap_model \"sm_partition\" only; this scenario has \"{}\"",
                                            s.contention.overlap_model));
       },
       .echo = [](const Scenario& s) -> Value {
         if (s.contention.overlap_model != "sm_partition") return std::nullopt;
         return s.contention.nccl_sms;
       }},
      {.object = "sim", .key = "cuda_device_max_connections", .type = T::Integer,
       .doc = "CUDA_DEVICE_MAX_CONNECTIONS (rule 97): with fewer connections than streams, a rank's tasks start in host "
              "launch order across streams, so compute queued behind a collective waits for it to start (each rank's own "
              "under per_rank)",
       .min = 1, .max = 32, STEPSIM_FIELD_ACCESS(std::int64_t, contention.cuda_device_max_connections)},
  };
  table.insert(table.end(), strategy_knob_fields().begin(), strategy_knob_fields().end());
  table.push_back(torus_axes);
  table.insert(table.end(), rest.begin(), rest.end());
  return table;
}

// Text of a value in the reference.
std::string value_text(const FieldValue& v) {
  return std::visit(
      [](const auto& x) -> std::string {
        using X = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<X, bool>) return x ? "true" : "false";
        else if constexpr (std::is_same_v<X, std::string>) return x.empty() ? "\"\"" : x;
        else if constexpr (std::is_same_v<X, double>) return fmt::format("{:g}", x);
        else return std::to_string(x);
      },
      v);
}

nlohmann::json value_json(const FieldValue& v) {
  return std::visit([](const auto& x) { return nlohmann::json(x); }, v);
}

const char* type_text(const ScenarioField& f) {
  switch (f.type) {
    case T::Boolean: return "boolean";
    case T::Integer: return "integer";
    case T::Number: return f.dimension ? "number or string with units" : "number";
    case T::Choice: return "string";
    case T::String: return "string";
    case T::Reference: return "name, path or object";
    case T::Object: return "object";
    case T::ObjectList: return "array of objects";
    case T::Variant: return "see meaning";
  }
  return "?";
}

std::string default_text(const ScenarioField& f) {
  if (f.default_doc) return f.default_doc;
  if (f.required) return "required";
  if (f.get) return value_text(f.get(Scenario{}));
  return "its fields' defaults";
}

std::string range_text(const ScenarioField& f) {
  if (f.range_doc) return f.range_doc;
  if (f.type == T::Integer) return fmt::format("[{}, {}]", f.min, f.max == INT64_MAX ? "2^63 − 1" : std::to_string(f.max));
  if (f.type == T::Number) {
    switch (f.check) {
      case Check::Positive: return "> 0";
      case Check::NonNegative: return "≥ 0";
      case Check::Fraction: return "(0, 1]";
      case Check::Any: return "";
    }
  }
  if (f.type == T::Choice && f.choices) return join_names(f.choices());
  return "";
}

std::vector<std::string> applies_to(const ScenarioField& f) {
  std::vector<std::string> names;
  for (const auto& e : strategy_registry())
    if (!f.knob || e.takes(f.key)) names.emplace_back(e.name);
  return names;
}

}  // namespace

const std::vector<ScenarioField>& strategy_knob_fields() {
  static const std::vector<ScenarioField> knobs = [] {
    std::vector<ScenarioField> all;
    for (const auto* family : {&ddp_knob_fields(), &zero_knob_fields(), &fsdp_knob_fields()})
      all.insert(all.end(), family->begin(), family->end());
    return all;
  }();
  return knobs;
}

const std::vector<ScenarioField>& scenario_fields() {
  static const std::vector<ScenarioField> table = core_fields();
  return table;
}

const ScenarioField& field_at(const std::string& path) {
  for (const auto& f : scenario_fields())
    if (f.path() == path) return f;
  throw InternalError("no scenario field '" + path + "'");
}

FieldValue read_value(const JsonReader& r, const ScenarioField& f, const Scenario& s, const FieldValue& fallback) {
  const std::string_view key = f.key;
  switch (f.type) {
    case T::Boolean: return r.boolean_or(key, std::get<bool>(fallback));
    case T::Integer: {
      const std::int64_t max = f.max_of ? f.max_of(s) : f.max;
      return f.required ? r.integer(key, f.min, max) : r.integer_or(key, std::get<std::int64_t>(fallback), f.min, max);
    }
    case T::Number:
      return f.required ? r.number(key, f.check, f.dimension) : r.number_or(key, std::get<double>(fallback), f.check, f.dimension);
    case T::Choice: return r.choice_or(key, std::get<std::string>(fallback), f.choices());
    case T::String: return f.required ? r.string(key) : r.string_or(key, std::get<std::string>(fallback));
    default: break;
  }
  throw InternalError("scenario field '" + f.path() + "' has no generic reader");
}

void read_fields(const JsonReader& r, const std::string& object, Scenario& s) {
  for (const auto& f : scenario_fields()) {
    if (object != f.object) continue;
    if (f.knob && r.has(f.key)) {
      const StrategyEntry& entry = strategy_of(s);
      if (!entry.takes(f.key))
        r.fail(f.key, fmt::format("'{}' does not apply to strategy '{}' (it applies to: {})", f.key,
                                  s.parallelism.strategy, join_names(applies_to(f))));
    }
    if (f.read) {
      f.read(r, s);
    } else if (f.type == T::Object && f.knob) {  // a knob's nested object: its own rows
      if (const auto o = r.optional_object(f.key)) {
        read_fields(*o, f.path(), s);
        o->finish();
      }
    } else if (f.type == T::Object || f.type == T::ObjectList || f.type == T::Reference) {
      r.has(f.key);  // a known key; parse_scenario reads the object itself
    } else {
      f.set(s, read_value(r, f, s, f.fallback ? f.fallback(s) : f.get(s)));
    }
    if (f.rule) f.rule(r, s);
  }
}

void echo_fields(const Scenario& s, const std::string& object, nlohmann::json& out) {
  if (!out.is_object()) out = nlohmann::json::object();
  for (const auto& f : scenario_fields()) {
    if (object != f.object) continue;
    if (f.knob && !strategy_of(s).takes(f.key)) continue;
    if (f.echo_json) {
      f.echo_json(s, out);
    } else if (f.type == T::Object) {
      if (f.echo && !f.echo(s)) continue;  // an object echoed only when it says so
      out[f.key] = nlohmann::json::object();
      echo_fields(s, f.path(), out[f.key]);
    } else if (const Value v = f.echo ? f.echo(s) : f.get ? Value(f.get(s)) : std::nullopt) {
      out[f.key] = value_json(*v);
    }
  }
}

nlohmann::ordered_json field_reference_json() {
  using J = nlohmann::ordered_json;
  J items = J::array();
  for (const auto& f : scenario_fields()) {
    J row;
    row["path"] = f.path();
    row["type"] = type_text(f);
    row["required"] = f.required;
    row["unit"] = f.unit;
    row["default"] = default_text(f);
    row["range"] = range_text(f);
    row["values"] = f.type == T::Choice && f.choices ? J(f.choices()) : J::array();
    row["applies_to"] = f.applies_doc ? J(std::vector<std::string>{f.applies_doc}) : J(applies_to(f));
    row["doc"] = f.doc;
    items.push_back(std::move(row));
  }
  return items;
}

std::string field_reference_markdown() {
  std::string md =
      "# Scenario fields\n\n"
      "Every field a scenario file takes, generated from stepsim's field table by `stepsim list fields --format "
      "markdown` (CTest `docs.fields_current` fails when this file is stale; regenerate it with that command). The "
      "same table drives parsing, `--set PATH=VALUE`, the \"did you mean\" of unknown keys, the refusal of knobs that "
      "do not apply to the chosen strategy, and the report's echo of the resolved scenario. Sizes with a dimension "
      "accept strings with units (`\"25MiB\"`, `\"50GB/s\"`, `\"20us\"`): decimal GB = 1e9, GiB = 2^30. A field "
      "set to `null` counts as absent (it takes its default). Rules cited as \"semantics.md §X rule N\" are in "
      "`../shared/reference/semantics.md`.\n";
  std::string object = "-";
  for (const auto& f : scenario_fields()) {
    if (f.object != object) {
      object = f.object;
      md += fmt::format("\n## {}\n\n", object.empty() ? "The root object" : "`" + object + "`");
      md += "| field | type | default | range or values | applies to | meaning |\n|---|---|---|---|---|---|\n";
    }
    const auto strategies = applies_to(f);
    const std::string applies = f.applies_doc ? f.applies_doc : f.knob ? join_names(strategies) : "all";
    std::string unit = std::string(f.unit).empty() ? "" : fmt::format(" ({})", f.unit);
    std::string doc = f.doc;
    std::replace(doc.begin(), doc.end(), '|', '/');
    md += fmt::format("| `{}` | {}{} | {} | {} | {} | {} |\n", f.path(), type_text(f), unit, default_text(f), range_text(f),
                      applies, doc);
  }
  return md;
}

}  // namespace stepsim::models
