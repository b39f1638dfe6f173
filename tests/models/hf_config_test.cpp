// SPDX-License-Identifier: Apache-2.0
// Tests of models/hf_config: Hugging Face config.json -> tensors, parameter totals of real
// checkpoints, registration order per layout, defaults, and the refusals (issue 16 item 1).
#include "models/hf_config_json.hpp"
#include "models/model_spec_json.hpp"
#include "models/report.hpp"
#include "models/scenario.hpp"
#include "sim/support/error.hpp"
#include "tests/support/catch.hpp"

#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>

using namespace stepsim;
using namespace stepsim::models;
using Catch::Matchers::Contains;
using nlohmann::json;

namespace {

ModelSpec hf(const json& config) { return parse_hf_config(config, "config.json", "", ""); }

// The message of the InputError `f` throws ("" when it throws none).
template <typename F>
std::string error_of(F f) {
  try {
    f();
  } catch (const InputError& e) {
    return std::string(e.what());
  }
  return "";
}

struct Checkpoint {
  const char* name;
  json config;          ///< the checkpoint's config.json values that shape the tensors (transcribed)
  std::int64_t exact;   ///< the count shared/reference/models.md §1.15 derives from the layout
  double published;     ///< the figure the source publishes
  double published_tolerance;  ///< relative: 0.1 %, or half a unit of the published figure's last digit where coarser
  const char* source;
};

}  // namespace

// Every config value below is the checkpoint's published config.json (Hugging Face Hub), as
// shared/reference/models.md §1.15 transcribes it; "published" is the model card's, the
// technical report's or the paper's total, named per row. Keys a config.json carries that do
// not shape the tensors (rope, eps, token ids) are kept in a few rows to show they are ignored.
TEST_CASE("hf_config: parameter totals of real checkpoints match their published counts", "[models][hf]") {
  const double tight = 0.001;
  const std::vector<Checkpoint> rows = {
      {"Llama-3.1-8B",
       {{"architectures", {"LlamaForCausalLM"}}, {"model_type", "llama"}, {"hidden_size", 4096},
        {"intermediate_size", 14336}, {"num_hidden_layers", 32}, {"num_attention_heads", 32},
        {"num_key_value_heads", 8}, {"vocab_size", 128256}, {"tie_word_embeddings", false}, {"rms_norm_eps", 1e-5},
        {"rope_theta", 500000.0}, {"max_position_embeddings", 131072}, {"torch_dtype", "bfloat16"},
        {"rope_scaling", {{"factor", 8.0}, {"rope_type", "llama3"}}}, {"bos_token_id", 128000}},
       8'030'261'248, 8.03e9, tight, "HF meta-llama/Llama-3.1-8B: 8.03B"},
      {"Llama-3.1-70B",
       {{"model_type", "llama"}, {"hidden_size", 8192}, {"intermediate_size", 28672}, {"num_hidden_layers", 80},
        {"num_attention_heads", 64}, {"num_key_value_heads", 8}, {"vocab_size", 128256}},
       70'553'706'496, 70.6e9, tight, "HF meta-llama/Llama-3.1-70B: 70.6B"},
      {"Llama-3.1-405B",
       {{"model_type", "llama"}, {"hidden_size", 16384}, {"intermediate_size", 53248}, {"num_hidden_layers", 126},
        {"num_attention_heads", 128}, {"num_key_value_heads", 8}, {"vocab_size", 128256}},
       405'853'388'800, 406e9, tight, "HF meta-llama/Llama-3.1-405B: 406B"},
      {"Llama-3.2-1B",
       {{"model_type", "llama"}, {"hidden_size", 2048}, {"intermediate_size", 8192}, {"num_hidden_layers", 16},
        {"num_attention_heads", 32}, {"num_key_value_heads", 8}, {"head_dim", 64}, {"vocab_size", 128256},
        {"tie_word_embeddings", true}},
       1'235'814'400, 1.24e9, 0.005 / 1.24, "HF meta-llama/Llama-3.2-1B: 1.24B"},
      {"Llama-3.2-3B",
       {{"model_type", "llama"}, {"hidden_size", 3072}, {"intermediate_size", 8192}, {"num_hidden_layers", 28},
        {"num_attention_heads", 24}, {"num_key_value_heads", 8}, {"head_dim", 128}, {"vocab_size", 128256},
        {"tie_word_embeddings", true}},
       3'212'749'824, 3.21e9, tight, "HF meta-llama/Llama-3.2-3B: 3.21B"},
      {"Llama-2-7b-hf",
       {{"model_type", "llama"}, {"hidden_size", 4096}, {"intermediate_size", 11008}, {"num_hidden_layers", 32},
        {"num_attention_heads", 32}, {"num_key_value_heads", 32}, {"vocab_size", 32000}},
       6'738'415'616, 6.74e9, tight, "HF meta-llama/Llama-2-7b-hf: 6.74B"},
      {"Mistral-7B-v0.1",
       {{"model_type", "mistral"}, {"hidden_size", 4096}, {"intermediate_size", 14336}, {"num_hidden_layers", 32},
        {"num_attention_heads", 32}, {"num_key_value_heads", 8}, {"vocab_size", 32000}, {"sliding_window", 4096}},
       7'241'732'096, 7.24e9, tight, "HF mistralai/Mistral-7B-v0.1: 7.24B"},
      {"Qwen2.5-7B",
       {{"model_type", "qwen2"}, {"hidden_size", 3584}, {"intermediate_size", 18944}, {"num_hidden_layers", 28},
        {"num_attention_heads", 28}, {"num_key_value_heads", 4}, {"vocab_size", 152064},
        {"tie_word_embeddings", false}, {"use_sliding_window", false}, {"sliding_window", 131072}},
       7'615'616'512, 7.61e9, tight, "HF Qwen/Qwen2.5-7B model card: 7.61B"},
      {"Qwen2.5-0.5B",
       {{"model_type", "qwen2"}, {"hidden_size", 896}, {"intermediate_size", 4864}, {"num_hidden_layers", 24},
        {"num_attention_heads", 14}, {"num_key_value_heads", 2}, {"vocab_size", 151936}, {"tie_word_embeddings", true}},
       494'032'768, 0.49e9, 0.005 / 0.49, "HF Qwen/Qwen2.5-0.5B model card: 0.49B"},
      {"Qwen3-8B",
       {{"model_type", "qwen3"}, {"hidden_size", 4096}, {"intermediate_size", 12288}, {"num_hidden_layers", 36},
        {"num_attention_heads", 32}, {"num_key_value_heads", 8}, {"head_dim", 128}, {"vocab_size", 151936},
        {"tie_word_embeddings", false}, {"attention_bias", false}},
       8'190'735'360, 8.2e9, 0.05 / 8.2, "HF Qwen/Qwen3-8B model card: 8.2B"},
      {"gemma-7b",
       {{"model_type", "gemma"}, {"hidden_size", 3072}, {"intermediate_size", 24576}, {"num_hidden_layers", 28},
        {"num_attention_heads", 16}, {"num_key_value_heads", 16}, {"head_dim", 256}, {"vocab_size", 256000}},
       8'537'680'896, 8.54e9, tight, "HF google/gemma-7b: 8.54B"},
      {"gemma-2-9b",
       {{"model_type", "gemma2"}, {"hidden_size", 3584}, {"intermediate_size", 14336}, {"num_hidden_layers", 42},
        {"num_attention_heads", 16}, {"num_key_value_heads", 8}, {"head_dim", 256}, {"vocab_size", 256000},
        {"final_logit_softcapping", 30.0}, {"sliding_window", 4096}},
       9'241'705'984, 917'504'000.0 + 8'324'201'984.0, tight,
       "Gemma 2 technical report: 917,504,000 embedding + 8,324,201,984 non-embedding"},
      {"gemma-3-1b-pt",
       {{"model_type", "gemma3_text"}, {"hidden_size", 1152}, {"intermediate_size", 6912}, {"num_hidden_layers", 26},
        {"num_attention_heads", 4}, {"num_key_value_heads", 1}, {"head_dim", 256}, {"vocab_size", 262144}},
       999'885'952, 1.0e9, tight, "HF google/gemma-3-1b-pt: 1B"},
      {"Phi-3-mini-4k-instruct",
       {{"model_type", "phi3"}, {"hidden_size", 3072}, {"intermediate_size", 8192}, {"num_hidden_layers", 32},
        {"num_attention_heads", 32}, {"num_key_value_heads", 32}, {"vocab_size", 32064}},
       3'821'079'552, 3.82e9, tight, "HF microsoft/Phi-3-mini-4k-instruct: 3.82B"},
      {"phi-4",
       {{"model_type", "phi3"}, {"hidden_size", 5120}, {"intermediate_size", 17920}, {"num_hidden_layers", 40},
        {"num_attention_heads", 40}, {"num_key_value_heads", 10}, {"vocab_size", 100352}},
       14'659'507'200, 14.7e9, 0.05 / 14.7, "HF microsoft/phi-4: 14.7B"},
      {"gpt2",
       {{"model_type", "gpt2"}, {"n_embd", 768}, {"n_layer", 12}, {"n_head", 12}, {"n_positions", 1024},
        {"vocab_size", 50257}, {"n_inner", nullptr}},
       124'439'808, 124'439'808.0, tight, "GPT-2 small: 124,439,808"},
      {"gpt2-xl",
       {{"model_type", "gpt2"}, {"n_embd", 1600}, {"n_layer", 48}, {"n_head", 25}, {"n_positions", 1024},
        {"vocab_size", 50257}},
       1'557'611'200, 1'557'611'200.0, tight, "HF openai-community/gpt2-xl: 1,557,611,200"},
      {"gpt-neox-20b",
       {{"model_type", "gpt_neox"}, {"hidden_size", 6144}, {"intermediate_size", 24576}, {"num_hidden_layers", 44},
        {"num_attention_heads", 64}, {"vocab_size", 50432}, {"rotary_pct", 0.25}, {"use_parallel_residual", true}},
       20'554'567'680, 20'554'567'680.0, tight, "GPT-NeoX-20B paper (Black et al. 2022): 20,554,567,680"},
      {"pythia-6.9b",
       {{"model_type", "gpt_neox"}, {"hidden_size", 4096}, {"intermediate_size", 16384}, {"num_hidden_layers", 32},
        {"num_attention_heads", 32}, {"vocab_size", 50432}, {"torch_dtype", "float16"}},
       6'857'302'016, 6'857'302'016.0, tight, "Pythia paper, Table 1: 6,857,302,016"},
      {"OLMo-2-1124-7B",
       {{"model_type", "olmo2"}, {"hidden_size", 4096}, {"intermediate_size", 11008}, {"num_hidden_layers", 32},
        {"num_attention_heads", 32}, {"num_key_value_heads", 32}, {"vocab_size", 100352}},
       7'298'617'344, 7.30e9, tight, "HF allenai/OLMo-2-1124-7B: 7.30B"},
      // Mixture-of-experts model_types (every expert counted; models.md §1.3, §1.4, §1.10, §1.11).
      {"Mixtral-8x7B-v0.1",
       {{"model_type", "mixtral"}, {"hidden_size", 4096}, {"intermediate_size", 14336}, {"num_hidden_layers", 32},
        {"num_attention_heads", 32}, {"num_key_value_heads", 8}, {"num_local_experts", 8},
        {"num_experts_per_tok", 2}, {"vocab_size", 32000}, {"sliding_window", nullptr}},
       46'702'792'704, 46.7e9, tight, "HF mistralai/Mixtral-8x7B-v0.1: 46.7B"},
      {"Qwen1.5-MoE-A2.7B",
       {{"model_type", "qwen2_moe"}, {"hidden_size", 2048}, {"intermediate_size", 5632}, {"num_hidden_layers", 24},
        {"num_attention_heads", 16}, {"num_key_value_heads", 16}, {"vocab_size", 151936}, {"num_experts", 60},
        {"num_experts_per_tok", 4}, {"moe_intermediate_size", 1408}, {"shared_expert_intermediate_size", 5632},
        {"decoder_sparse_step", 1}, {"norm_topk_prob", false}},
       14'315'784'192, 14.3e9, 0.05 / 14.3, "HF Qwen/Qwen1.5-MoE-A2.7B: 14.3B"},
      {"Qwen3-30B-A3B",
       {{"model_type", "qwen3_moe"}, {"hidden_size", 2048}, {"intermediate_size", 6144}, {"num_hidden_layers", 48},
        {"num_attention_heads", 32}, {"num_key_value_heads", 4}, {"head_dim", 128}, {"vocab_size", 151936},
        {"num_experts", 128}, {"num_experts_per_tok", 8}, {"moe_intermediate_size", 768},
        {"decoder_sparse_step", 1}, {"mlp_only_layers", json::array()}, {"attention_bias", false}},
       30'532'122'624, 30.5e9, 0.05 / 30.5, "HF Qwen/Qwen3-30B-A3B model card: 30.5B"},
      {"Qwen3-235B-A22B",
       {{"model_type", "qwen3_moe"}, {"hidden_size", 4096}, {"intermediate_size", 12288}, {"num_hidden_layers", 94},
        {"num_attention_heads", 64}, {"num_key_value_heads", 4}, {"head_dim", 128}, {"vocab_size", 151936},
        {"num_experts", 128}, {"num_experts_per_tok", 8}, {"moe_intermediate_size", 1536}},
       235'093'634'560, 235e9, tight, "HF Qwen/Qwen3-235B-A22B model card: 235B"},
      {"DeepSeek-V2-Lite",
       {{"model_type", "deepseek_v2"}, {"hidden_size", 2048}, {"intermediate_size", 10944}, {"num_hidden_layers", 27},
        {"num_attention_heads", 16}, {"num_key_value_heads", 16}, {"q_lora_rank", nullptr}, {"kv_lora_rank", 512},
        {"qk_nope_head_dim", 128}, {"qk_rope_head_dim", 64}, {"v_head_dim", 128}, {"n_routed_experts", 64},
        {"n_shared_experts", 2}, {"moe_intermediate_size", 1408}, {"num_experts_per_tok", 6},
        {"first_k_dense_replace", 1}, {"moe_layer_freq", 1}, {"vocab_size", 102400}},
       15'706'484'224, 15.7e9, 0.05 / 15.7, "HF deepseek-ai/DeepSeek-V2-Lite: 15.7B"},
      {"DeepSeek-V2",
       {{"model_type", "deepseek_v2"}, {"hidden_size", 5120}, {"intermediate_size", 12288}, {"num_hidden_layers", 60},
        {"num_attention_heads", 128}, {"q_lora_rank", 1536}, {"kv_lora_rank", 512}, {"qk_nope_head_dim", 128},
        {"qk_rope_head_dim", 64}, {"v_head_dim", 128}, {"n_routed_experts", 160}, {"n_shared_experts", 2},
        {"moe_intermediate_size", 1536}, {"num_experts_per_tok", 6}, {"first_k_dense_replace", 1},
        {"vocab_size", 102400}},
       235'741'434'880, 236e9, 0.5 / 236, "DeepSeek-V2 paper / HF card: 236B"},
      {"DeepSeek-V3",
       {{"model_type", "deepseek_v3"}, {"hidden_size", 7168}, {"intermediate_size", 18432}, {"num_hidden_layers", 61},
        {"num_attention_heads", 128}, {"num_key_value_heads", 128}, {"q_lora_rank", 1536}, {"kv_lora_rank", 512},
        {"qk_nope_head_dim", 128}, {"qk_rope_head_dim", 64}, {"v_head_dim", 128}, {"n_routed_experts", 256},
        {"n_shared_experts", 1}, {"moe_intermediate_size", 2048}, {"num_experts_per_tok", 8},
        {"first_k_dense_replace", 3}, {"moe_layer_freq", 1}, {"n_group", 8}, {"topk_group", 4},
        {"num_nextn_predict_layers", 1}, {"vocab_size", 129280}},
       671'026'404'352, 671e9, tight, "HF deepseek-ai/DeepSeek-V3 README_WEIGHTS.md: 671B main model"},
      {"gpt-oss-120b",
       {{"model_type", "gpt_oss"}, {"hidden_size", 2880}, {"intermediate_size", 2880}, {"num_hidden_layers", 36},
        {"num_attention_heads", 64}, {"num_key_value_heads", 8}, {"head_dim", 64}, {"num_local_experts", 128},
        {"num_experts_per_tok", 4}, {"experts_per_token", 4}, {"sliding_window", 128}, {"vocab_size", 201088}},
       116'829'156'672, 117e9, 0.5 / 117, "OpenAI gpt-oss model card: 117B"},
      {"gpt-oss-20b",
       {{"model_type", "gpt_oss"}, {"hidden_size", 2880}, {"intermediate_size", 2880}, {"num_hidden_layers", 24},
        {"num_attention_heads", 64}, {"num_key_value_heads", 8}, {"head_dim", 64}, {"num_local_experts", 32},
        {"num_experts_per_tok", 4}, {"vocab_size", 201088}},
       20'914'757'184, 21e9, 0.5 / 21, "OpenAI gpt-oss model card: 21B"},
  };
  int within_tight = 0;
  for (const auto& row : rows) {
    INFO(row.name << " (" << row.source << ")");
    const ModelSpec m = hf(row.config);
    const auto n = m.parameter_count();
    CHECK(n == row.exact);
    const double error = std::abs(static_cast<double>(n) - row.published) / row.published;
    CHECK(error <= row.published_tolerance);
    within_tight += error <= tight;
  }
  // The issue's bar: at least 15 real checkpoints within 0.1 % of their published counts.
  CHECK(within_tight >= 15);
}

TEST_CASE("hf_config: a Llama config.json builds the catalog's llama3-8b exactly", "[models][hf]") {
  const ModelSpec a = hf({{"model_type", "llama"}, {"hidden_size", 4096}, {"intermediate_size", 14336},
                          {"num_hidden_layers", 32}, {"num_attention_heads", 32}, {"num_key_value_heads", 8},
                          {"vocab_size", 128256}, {"rope_theta", 500000.0}});
  const ModelSpec b = load_model("llama3-8b");
  REQUIRE(a.layers.size() == b.layers.size());
  for (std::size_t l = 0; l < a.layers.size(); ++l) {
    REQUIRE(a.layers[l].params.size() == b.layers[l].params.size());
    for (std::size_t t = 0; t < a.layers[l].params.size(); ++t) {
      CHECK(a.layers[l].params[t].name == b.layers[l].params[t].name);
      CHECK(a.layers[l].params[t].numel == b.layers[l].params[t].numel);
    }
    CHECK(a.layers[l].grad_ready_order == b.layers[l].grad_ready_order);
    CHECK(a.layers[l].fwd_gemm_flops_per_token == b.layers[l].fwd_gemm_flops_per_token);
    CHECK(a.layers[l].fwd_streaming_bytes_per_token == b.layers[l].fwd_streaming_bytes_per_token);
    CHECK(a.layers[l].activation_bytes_per_token == b.layers[l].activation_bytes_per_token);
  }
  // And the step: a scenario naming either runs to the same time.
  const auto step = [](const json& model) {
    json doc = {{"model", model}, {"hardware", "h100-sxm"}, {"parallelism", {{"strategy", "fsdp"}, {"dp", 8}}},
                {"batch", {{"seq_len", 4096}, {"micro_batch_size", 1}}}};
    return run(parse_scenario(doc, "test.json")).step_time_s;
  };
  CHECK(step({{"hf_config", {{"model_type", "llama"}, {"hidden_size", 4096}, {"intermediate_size", 14336},
                             {"num_hidden_layers", 32}, {"num_attention_heads", 32}, {"num_key_value_heads", 8},
                             {"vocab_size", 128256}}}}) == step("llama3-8b"));
}

namespace {
std::vector<std::string> tensor_names(const LayerSpec& l, const std::string& strip) {
  std::vector<std::string> names;
  for (const auto& p : l.params) names.push_back(p.name.rfind(strip, 0) == 0 ? p.name.substr(strip.size()) : p.name);
  return names;
}
}  // namespace

// Registration orders read from transformers' modeling files (v4.5x, per-expert nn.ModuleList):
// MixtralSparseMoeBlock (gate, experts of w1/w2/w3), Qwen2MoeSparseMoeBlock (gate, experts,
// shared_expert, shared_expert_gate), DeepseekV3MoE (experts, gate, shared_experts) after
// DeepseekV3Attention's MLA projections, GptOssAttention's sinks and GptOssMLP's router and
// fused experts (models.md §1.3, §1.4, §1.10, §1.11).
TEST_CASE("hf_config: mixture-of-experts tensors in transformers' registration order", "[models][hf][moe]") {
  SECTION("mixtral: the gate, then expert by expert w1, w2, w3") {
    const auto m = hf({{"model_type", "mixtral"}, {"num_hidden_layers", 1}, {"num_local_experts", 2}});
    CHECK(tensor_names(m.layers[1], "model.layers.0.") ==
          std::vector<std::string>{"self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight",
                                   "self_attn.o_proj.weight", "block_sparse_moe.gate.weight",
                                   "block_sparse_moe.experts.0.w1.weight", "block_sparse_moe.experts.0.w2.weight",
                                   "block_sparse_moe.experts.0.w3.weight", "block_sparse_moe.experts.1.w1.weight",
                                   "block_sparse_moe.experts.1.w2.weight", "block_sparse_moe.experts.1.w3.weight",
                                   "input_layernorm.weight", "post_attention_layernorm.weight"});
    CHECK(m.layers[1].params[4].numel == 2 * 4096);  // gate [E, H]
    // The active experts' FLOPs only: 2 of 2 here, each 3·H·F; attention 2·(q + 2 kv + o).
    CHECK(m.layers[1].fwd_gemm_flops_per_token == 2.0 * (4096.0 * 4096 * 2 + 2 * 4096.0 * 1024) + 2.0 * 4096 * 2 +
                                                      2 * 2.0 * 3 * 4096 * 14336);
  }
  SECTION("qwen2_moe: gate, experts, shared_expert, shared_expert_gate; mlp_only_layers dense") {
    const auto m = hf({{"model_type", "qwen2_moe"}, {"num_hidden_layers", 2}, {"num_experts", 2},
                       {"num_experts_per_tok", 1}, {"mlp_only_layers", {1}}});
    const auto names = tensor_names(m.layers[1], "model.layers.0.");
    CHECK(std::vector<std::string>(names.begin() + 7, names.end()) ==
          std::vector<std::string>{"mlp.gate.weight", "mlp.experts.0.gate_proj.weight", "mlp.experts.0.up_proj.weight",
                                   "mlp.experts.0.down_proj.weight", "mlp.experts.1.gate_proj.weight",
                                   "mlp.experts.1.up_proj.weight", "mlp.experts.1.down_proj.weight",
                                   "mlp.shared_expert.gate_proj.weight", "mlp.shared_expert.up_proj.weight",
                                   "mlp.shared_expert.down_proj.weight", "mlp.shared_expert_gate.weight",
                                   "input_layernorm.weight", "post_attention_layernorm.weight"});
    CHECK(tensor_names(m.layers[2], "model.layers.1.")[7] == "mlp.gate_proj.weight");  // block 1 dense
    CHECK(m.layers[2].params[7].numel == 2048 * 5632);
  }
  SECTION("deepseek_v3: MLA projections, then experts, the router, the shared experts; dense first blocks") {
    const auto m = hf({{"model_type", "deepseek_v3"}, {"num_hidden_layers", 2}, {"n_routed_experts", 2},
                       {"num_experts_per_tok", 2}, {"first_k_dense_replace", 1}});
    const auto names = tensor_names(m.layers[2], "model.layers.1.");
    CHECK(names == std::vector<std::string>{
                       "self_attn.q_a_proj.weight", "self_attn.q_a_layernorm.weight", "self_attn.q_b_proj.weight",
                       "self_attn.kv_a_proj_with_mqa.weight", "self_attn.kv_a_layernorm.weight",
                       "self_attn.kv_b_proj.weight", "self_attn.o_proj.weight", "mlp.experts.0.gate_proj.weight",
                       "mlp.experts.0.up_proj.weight", "mlp.experts.0.down_proj.weight", "mlp.experts.1.gate_proj.weight",
                       "mlp.experts.1.up_proj.weight", "mlp.experts.1.down_proj.weight", "mlp.gate.weight",
                       "mlp.shared_experts.gate_proj.weight", "mlp.shared_experts.up_proj.weight",
                       "mlp.shared_experts.down_proj.weight", "input_layernorm.weight", "post_attention_layernorm.weight"});
    CHECK(m.layers[2].params[2].numel == 128 * 192 * 1536);   // q_b_proj [heads·(nope + rope), q_lora_rank]
    CHECK(m.layers[2].params[3].numel == (512 + 64) * 7168);  // kv_a_proj_with_mqa
    CHECK(m.layers[2].params[5].numel == 128 * 256 * 512);    // kv_b_proj [heads·(nope + v), kv_lora_rank]
    CHECK(m.layers[2].params[6].numel == 7168 * 128 * 128);   // o_proj [hidden, heads·v_head_dim]
    CHECK(tensor_names(m.layers[1], "model.layers.0.")[7] == "mlp.gate_proj.weight");  // first_k_dense_replace
    // Attention core per token and key: QKᵀ over 192-wide heads, PV over 128-wide ones.
    CHECK(m.layers[2].fwd_attn_flops_per_token_per_seq == 2.0 * 128 * (192 + 128));
  }
  SECTION("gpt_oss: biased attention, sinks, the router with its bias, fused experts") {
    const auto m = hf({{"model_type", "gpt_oss"}, {"num_hidden_layers", 2}, {"num_local_experts", 4}});
    CHECK(tensor_names(m.layers[1], "model.layers.0.") ==
          std::vector<std::string>{"self_attn.q_proj.weight", "self_attn.q_proj.bias", "self_attn.k_proj.weight",
                                   "self_attn.k_proj.bias", "self_attn.v_proj.weight", "self_attn.v_proj.bias",
                                   "self_attn.o_proj.weight", "self_attn.o_proj.bias", "self_attn.sinks",
                                   "mlp.router.weight", "mlp.router.bias", "mlp.experts.gate_up_proj",
                                   "mlp.experts.gate_up_proj_bias", "mlp.experts.down_proj",
                                   "mlp.experts.down_proj_bias", "input_layernorm.weight",
                                   "post_attention_layernorm.weight"});
    CHECK(m.layers[1].params[11].numel == 4 * 2880 * 2 * 2880);
    // layer_types' default: sliding (128) on even blocks, full on odd ones.
    CHECK(m.layers[1].gemms.back().window == 128);
    CHECK(m.layers[2].gemms.back().window == 0);
  }
}

TEST_CASE("hf_config: tensors in each layout's registration order", "[models][hf]") {
  SECTION("qwen2: bias on q/k/v only") {
    const auto m = hf({{"model_type", "qwen2"}, {"num_hidden_layers", 1}});
    std::vector<std::string> names;
    for (const auto& p : m.layers[1].params) names.push_back(p.name);
    CHECK(names == std::vector<std::string>{
                       "model.layers.0.self_attn.q_proj.weight", "model.layers.0.self_attn.q_proj.bias",
                       "model.layers.0.self_attn.k_proj.weight", "model.layers.0.self_attn.k_proj.bias",
                       "model.layers.0.self_attn.v_proj.weight", "model.layers.0.self_attn.v_proj.bias",
                       "model.layers.0.self_attn.o_proj.weight", "model.layers.0.mlp.gate_proj.weight",
                       "model.layers.0.mlp.up_proj.weight", "model.layers.0.mlp.down_proj.weight",
                       "model.layers.0.input_layernorm.weight", "model.layers.0.post_attention_layernorm.weight"});
  }
  SECTION("qwen3: q_norm / k_norm of head_dim after o_proj; backward ends at input_layernorm") {
    const auto m = hf({{"model_type", "qwen3"}, {"num_hidden_layers", 1}, {"hidden_size", 2048}});
    const auto& b = m.layers[1];
    CHECK(b.params[4].name == "model.layers.0.self_attn.q_norm.weight");
    CHECK(b.params[4].numel == 128);
    CHECK(b.params[5].name == "model.layers.0.self_attn.k_norm.weight");
    CHECK(b.params[0].numel == 2048 * 32 * 128);  // q_proj: heads·head_dim = 4096 ≠ hidden
    const auto order = m.ready_order(1);
    CHECK(b.params[order.front()].name == "model.layers.0.mlp.down_proj.weight");
    CHECK(b.params[order.back()].name == "model.layers.0.input_layernorm.weight");
    // q_norm runs before o_proj: o_proj's gradient is ready before q_norm's.
    const auto pos = [&](std::size_t i) { return std::find(order.begin(), order.end(), i) - order.begin(); };
    CHECK(pos(3) < pos(4));
    CHECK(b.fwd_attn_flops_per_token_per_seq == 4.0 * 32 * 128);
  }
  SECTION("gemma2: four norms per block; tied head") {
    const auto m = hf({{"model_type", "gemma2"}, {"num_hidden_layers", 1}});
    const auto& b = m.layers[1];
    REQUIRE(b.params.size() == 11);
    CHECK(b.params[7].name == "model.layers.0.input_layernorm.weight");
    CHECK(b.params[10].name == "model.layers.0.post_feedforward_layernorm.weight");
    CHECK(m.layers.back().params.empty());
    CHECK(m.eager_composites.back() == "GeGLU");
    // final_logit_softcapping (30.0 by default): one fused pass over the bf16 logits, three
    // kernels apart under eager, its tanh kept for backward; null is none.
    const auto plain = hf({{"model_type", "gemma2"}, {"num_hidden_layers", 1}, {"final_logit_softcapping", nullptr}});
    const auto& capped = m.layers.back();
    const auto& uncapped = plain.layers.back();
    CHECK(capped.fwd_streaming_bytes_per_token - uncapped.fwd_streaming_bytes_per_token == 2 * 2 * 256000.0);
    CHECK(capped.eager_extra_streaming_bytes_per_token == 4 * 2 * 256000.0);
    CHECK(capped.activation_bytes_per_token - uncapped.activation_bytes_per_token == 2 * 256000.0);
    CHECK(capped.fwd_streaming_kernels == uncapped.fwd_streaming_kernels + 1);
  }
  SECTION("olmo2: q/k norms over the whole projection, no input_layernorm") {
    const auto m = hf({{"model_type", "olmo2"}, {"num_hidden_layers", 1}, {"num_key_value_heads", 8}});
    const auto& b = m.layers[1];
    CHECK(b.params[4].name == "model.layers.0.self_attn.q_norm.weight");
    CHECK(b.params[4].numel == 4096);
    CHECK(b.params[5].numel == 1024);
    CHECK(b.params[9].name == "model.layers.0.post_attention_layernorm.weight");
    CHECK(b.params[10].name == "model.layers.0.post_feedforward_layernorm.weight");
    CHECK(b.params.size() == 11);
  }
  SECTION("phi3: o_proj registered first, fused qkv and gate_up run as one GEMM each") {
    const auto m = hf({{"model_type", "phi3"}, {"num_hidden_layers", 1}});
    const auto& b = m.layers[1];
    CHECK(b.params[0].name == "model.layers.0.self_attn.o_proj.weight");
    CHECK(b.params[1].name == "model.layers.0.self_attn.qkv_proj.weight");
    CHECK(b.params[2].name == "model.layers.0.mlp.gate_up_proj.weight");
    REQUIRE(b.gemms.size() == 6);  // qkv, o, gate_up, down, attention scores and values
    CHECK(b.gemms[0].n == 3 * 3072);
    CHECK(b.gemms[1].n == 3072);
    CHECK(b.gemms[2].n == 2 * 8192);
  }
  SECTION("gpt2: Conv1D layers with biases, learned positions, tied head") {
    const auto m = hf({{"model_type", "gpt2"}});
    CHECK(m.layers[0].params[0].name == "transformer.wte.weight");
    CHECK(m.layers[0].params[1].name == "transformer.wpe.weight");
    const auto& b = m.layers[1];
    CHECK(b.params[0].name == "transformer.h.0.ln_1.weight");
    CHECK(b.params[2].name == "transformer.h.0.attn.c_attn.weight");
    CHECK(b.params[3].numel == 3 * 768);
    CHECK(b.params.back().name == "transformer.h.0.mlp.c_proj.bias");
    CHECK(m.layers[m.layers.size() - 2].params[0].name == "transformer.ln_f.weight");
    CHECK(m.eager_composites.empty());  // LayerNorm, learned positions, GELU MLP: nothing op by op
  }
  SECTION("gpt_neox: norms registered first, untied embed_out") {
    const auto m = hf({{"model_type", "gpt_neox"}, {"num_hidden_layers", 1}});
    const auto& b = m.layers[1];
    CHECK(b.params[0].name == "gpt_neox.layers.0.input_layernorm.weight");
    CHECK(b.params[4].name == "gpt_neox.layers.0.attention.query_key_value.weight");
    CHECK(m.layers.back().params[0].name == "embed_out.weight");
    // Backward: the MLP's last linear first, the input norm last.
    const auto order = m.ready_order(1);
    CHECK(b.params[order.front()].name == "gpt_neox.layers.0.mlp.dense_4h_to_h.bias");
    CHECK(b.params[order.back()].name == "gpt_neox.layers.0.input_layernorm.weight");
  }
}

TEST_CASE("hf_config: missing keys take the configuration class's defaults", "[models][hf]") {
  // GPT2Config's defaults are GPT-2 small; GPTNeoXConfig's are GPT-NeoX-20B.
  CHECK(hf({{"model_type", "gpt2"}}).parameter_count() == 124'439'808);
  CHECK(hf({{"model_type", "gpt_neox"}}).parameter_count() == 20'554'567'680);
  // LlamaConfig: num_key_value_heads None means multi-head (Llama-2-7B's shape at its defaults).
  CHECK(hf({{"model_type", "llama"}, {"num_key_value_heads", nullptr}}).parameter_count() == 6'738'415'616);
  // MistralConfig: absent is its default 8, None is num_attention_heads.
  CHECK(hf({{"model_type", "mistral"}}).layers[1].params[1].numel == 4096 * 1024);
  CHECK(hf({{"model_type", "mistral"}, {"num_key_value_heads", nullptr}}).layers[1].params[1].numel == 4096 * 4096);
  // GPT2Config's attribute_map: the common names are aliases of n_embd, n_layer, n_head, n_positions.
  CHECK(hf({{"model_type", "gpt2"}, {"hidden_size", 1600}, {"num_hidden_layers", 48}, {"num_attention_heads", 25}})
            .parameter_count() == 1'557'611'200);
  CHECK(hf({{"model_type", "gpt2"}, {"max_position_embeddings", 2048}}).learned_positions == 2048);
  // A bare config may carry a name and a source; control characters never reach a report.
  CHECK(hf({{"model_type", "gpt2"}, {"name", "My\nGPT"}}).name == "My?GPT");
  CHECK_THAT(hf({{"model_type", "gpt2"}, {"source", "my notes"}}).source, Contains("my notes; Hugging Face config.json"));
  CHECK(hf_name_from_path("ckpt/Llama-3.1-8B/./config.json") == "Llama-3.1-8B");
  CHECK(hf_name_from_path("/root/.cache/huggingface/hub/models--meta-llama--Llama-3.1-8B/snapshots/0e9e39f/config.json") ==
        "Llama-3.1-8B");
  // torch_dtype is how the checkpoint is stored, not how it trains: bf16 unless the scenario
  // says (precision.param_dtype), and the source says what the config held.
  const auto stored32 = hf({{"model_type", "gpt2"}, {"torch_dtype", "float32"}});
  CHECK(stored32.layers[0].params[0].dtype == DType::BF16);
  CHECK_THAT(stored32.source, Contains("checkpoint stored in float32 (torch_dtype); trained in bf16"));
  CHECK(parse_hf_config({{"model_type", "gpt2"}, {"torch_dtype", "bfloat16"}}, "c.json", "", "", DType::FP32)
            .layers[0].params[0].dtype == DType::FP32);
  // PyTorch's dtype names are stepsim's too (precision.param_dtype: "bfloat16").
  CHECK(parse_dtype("bfloat16", "s.json", "/precision/param_dtype") == DType::BF16);
  CHECK(parse_dtype("float32", "s.json", "/precision/param_dtype") == DType::FP32);
  CHECK_THROWS_AS(parse_dtype("int8", "s.json", "/precision/param_dtype"), InputError);
  // max_position_embeddings (or the class's default) is the declared context.
  CHECK(hf({{"model_type", "llama"}}).context_length == 2048);
  CHECK(hf({{"model_type", "qwen2"}, {"max_position_embeddings", 131072}}).context_length == 131072);
  CHECK(hf({{"model_type", "gpt2"}}).learned_positions == 1024);
  // The name: given, else _name_or_path's last part, else model_type; a file's folder.
  CHECK(hf({{"model_type", "gpt2"}, {"_name_or_path", "openai-community/gpt2"}}).name == "gpt2");
  CHECK(hf({{"model_type", "qwen2"}}).name == "qwen2");
  CHECK(hf_name_from_path("ckpt/Llama-3.1-8B/config.json") == "Llama-3.1-8B");
  CHECK(hf_name_from_path("mistral.json") == "mistral");
  // Gemma 3's multimodal config: the text stack of text_config.
  const auto g3 = hf({{"model_type", "gemma3"},
                      {"text_config", {{"model_type", "gemma3_text"}, {"hidden_size", 1152}, {"intermediate_size", 6912},
                                       {"num_hidden_layers", 26}, {"num_attention_heads", 4},
                                       {"num_key_value_heads", 1}, {"vocab_size", 262144}}}});
  CHECK(g3.parameter_count() == 999'885'952);
  CHECK_THAT(g3.source, Contains("text stack only"));
  CHECK_THAT(hf({{"model_type", "mistral"}}).source, Contains("sliding_window 4096 on 32 of 32 blocks"));
  CHECK_THAT(hf({{"model_type", "mistral"}, {"sliding_window", nullptr}}).source, !Contains("sliding_window"));
  CHECK_THAT(hf({{"model_type", "qwen2"}, {"sliding_window", 4096}}).source, !Contains("sliding_window"));
  CHECK_THAT(hf({{"model_type", "qwen2"}, {"use_sliding_window", true}, {"max_window_layers", 20}}).source,
             Contains("sliding_window 4096 on 12 of 32 blocks"));
  CHECK_THAT(hf({{"model_type", "gemma2"}}).source, Contains("sliding_window 4096 on 13 of 26 blocks"));
  CHECK_THAT(hf({{"model_type", "gemma3_text"}, {"sliding_window", 512}}).source,
             Contains("sliding_window 512 on 22 of 26 blocks"));  // (i + 1) % 6 != 0
  const auto typed = hf({{"model_type", "gemma3_text"}, {"num_hidden_layers", 3},
                         {"layer_types", {"full_attention", "sliding_attention", "full_attention"}}});
  CHECK(typed.layers[1].gemms.back().window == 0);
  CHECK(typed.layers[2].gemms.back().window == 4096);
  CHECK(typed.layers[2].attention_keys(8192) == 2 * 4096 - 4096.0 * 4096 / 8192);
  CHECK(typed.layers[2].attention_keys(4096) == 4096);
}

TEST_CASE("hf_config: a sliding window saves what a flash kernel skips, and only that", "[models][hf]") {
  const auto step = [](const json& config, std::int64_t seq, const std::string& attention) {
    json doc = {{"model", {{"hf_config", config}}}, {"hardware", "h100-sxm"},
                {"parallelism", {{"strategy", "fsdp"}, {"dp", 8}}}, {"batch", {{"seq_len", seq}}},
                {"activations", {{"attention", attention}}}};
    return run(parse_scenario(doc, "test.json"));
  };
  const json windowed = {{"model_type", "mistral"}, {"num_hidden_layers", 4}};
  const json full = {{"model_type", "mistral"}, {"num_hidden_layers", 4}, {"sliding_window", nullptr}};
  // Within the window nothing changes.
  CHECK(step(windowed, 4096, "flash-attention-2").step_time_s == step(full, 4096, "flash-attention-2").step_time_s);
  // At 32k tokens the band is 4096 of 32768 keys: attention work falls to (2w − w²/s)/s = 23 %
  // of the full count; the step is faster, under both flash forms.
  for (const char* attention : {"flash-attention-2", "flash"}) {
    INFO(attention);
    const Report w = step(windowed, 32768, attention), f = step(full, 32768, attention);
    CHECK(w.step_time_s < 0.8 * f.step_time_s);
    CHECK(w.mfu <= 1.0);
    CHECK(w.warnings.empty());
  }
  // Model FLOPs count the band: the difference is the attention FLOPs the window masks
  // (3 passes × 4·q·(s − keys) per token per block, 4 blocks, 32768 tokens).
  const double s = 32768, w = 4096, keys = 2 * w - w * w / s;
  CHECK(step(full, 32768, "flash").model_flops_per_gpu - step(windowed, 32768, "flash").model_flops_per_gpu ==
        Approx(3 * 4 * 4096.0 * (s - keys) * 4 * s).epsilon(1e-9));
  // Eager attention computes the whole masked s×s: same time as without the window, and it says so.
  const Report eager = step(windowed, 32768, "eager");
  CHECK(eager.step_time_s == Approx(step(full, 32768, "eager").step_time_s).epsilon(1e-12));
  REQUIRE(eager.warnings.size() == 2);  // the s² scores do not fit either
  CHECK_THAT(eager.warnings[0], Contains("does not fit"));
  CHECK_THAT(eager.warnings[1], Contains("computes the whole masked 32768x32768 scores"));
}

TEST_CASE("hf_config: refusals name the file, the key and every problem at once", "[models][hf]") {
  const std::string unknown = error_of([] { hf({{"model_type", "lama"}}); });
  CHECK_THAT(unknown, Contains("config.json: /model_type: unknown model_type 'lama'; supported: llama, mistral"));
  CHECK_THAT(unknown, Contains("did you mean 'llama'"));
  CHECK_THAT(error_of([] { hf({{"model_type", "mixtral"}, {"num_local_experts", 4}, {"num_experts_per_tok", 8}}); }),
             Contains("config.json: /num_experts_per_tok: expected at most the number of experts (4), got 8"));
  CHECK_THAT(error_of([] { hf({{"model_type", "qwen3_moe"}, {"mlp_only_layers", {1, "2"}}}); }),
             Contains("/mlp_only_layers: expected an array of block indexes"));
  CHECK_THAT(error_of([] { hf({{"model_type", "qwen3_moe"}, {"num_hidden_layers", 4}, {"mlp_only_layers", {1, 9}}}); }),
             Contains("/mlp_only_layers: block index 9 is beyond the model's 4 blocks"));
  // Every routed expert is tensors and tasks of its own: a cap on experts × MoE blocks, named
  // by the experts' key (a million tiny experts took minutes and gigabytes before it).
  CHECK_THAT(error_of([] { hf({{"model_type", "qwen3_moe"}, {"num_experts", 1048576}, {"moe_intermediate_size", 1}}); }),
             Contains("/num_experts: 1048576 experts on each of 24 MoE blocks are 2.52e+07 expert modules"));
  // MLA's widths count toward the parameter bound, named by their keys.
  CHECK_THAT(error_of([] { hf({{"model_type", "deepseek_v3"}, {"kv_lora_rank", 1'000'000'000'000}}); }),
             Contains("/kv_lora_rank: this config has about"));
  CHECK_THAT(error_of([] { hf({{"hidden_size", 10}}); }), Contains("/model_type: required field is missing"));
  const std::string many = error_of([] {
    hf({{"model_type", "llama"}, {"hidden_size", "4096"}, {"num_attention_heads", 0}, {"tie_word_embeddings", 1},
        {"intermediate_sise", 14336}, {"rope_theta", 500000.0}, {"bos_token_id", 1}});
  });
  CHECK_THAT(many, Contains("config.json: /hidden_size: expected an integer"));
  CHECK_THAT(many, Contains("and 3 more"));
  CHECK_THAT(many, Contains("/num_attention_heads: expected an integer in [1,"));
  CHECK_THAT(many, Contains("/tie_word_embeddings: expected true or false, got 1"));
  // A near miss of a key that took its default is a typo that would change the model silently.
  CHECK_THAT(many, Contains("/intermediate_sise: unknown key (did you mean 'intermediate_size'?)"));
  // Keys transformers knows that do not shape the step are no typos; nor is an unrelated key.
  CHECK_NOTHROW(hf({{"model_type", "qwen2"}, {"sliding_window", 4096}, {"max_window_layers", 28},
                    {"rms_norm_eps", 1e-6}, {"my_training_note", "x"}}));
  // Beside the key it misspells, a typo would do nothing: refused too.
  CHECK_THAT(error_of([] { hf({{"model_type", "llama"}, {"num_hidden_layers", 32}, {"num_hidden_layer", 2}}); }),
             Contains("/num_hidden_layer: unknown key (did you mean 'num_hidden_layers'?)"));
  CHECK_THAT(error_of([] { hf({{"model_type", "llama"}, {"num_attention_heads", 32}, {"num_key_value_heads", 5}}); }),
             Contains("/num_key_value_heads: num_attention_heads (32) must be divisible by num_key_value_heads (5)"));
  CHECK_THAT(error_of([] { hf({{"model_type", "llama"}, {"hidden_size", 100}, {"num_attention_heads", 3}}); }),
             Contains("/num_attention_heads: hidden_size (100) is not divisible by it (3), and the config gives no head_dim"));
  CHECK_THAT(error_of([] { hf(json::array()); }), Contains("expected a Hugging Face config object"));
  CHECK_THAT(error_of([] { hf({{"model_type", "llama"}, {"hidden_size", 1 << 20}, {"num_hidden_layers", 4096}}); }),
             Contains("config.json: /hidden_size: this config has about 1.82e+16 parameters (1.8e+16 from hidden_size); "
                      "expected at most 1e+15"));
  // The largest part is blamed: a huge vocabulary, GPT-2's position table.
  CHECK_THAT(error_of([] { hf({{"model_type", "llama"}, {"vocab_size", 1e12}}); }),
             Contains("/vocab_size: this config has about"));
  CHECK_THAT(error_of([] { hf({{"model_type", "gpt2"}, {"n_positions", 1099511627776}, {"n_embd", 8388608}, {"n_head", 1}}); }),
             Contains("/n_positions: this config has about"));
  // A refused value's fallback is not blamed for a cross-field problem.
  CHECK_THAT(error_of([] { hf({{"model_type", "qwen2"}, {"hidden_size", 1e30}, {"num_attention_heads", 28}}); }),
             !Contains("divisible"));
  CHECK_THAT(error_of([] { hf({{"model_type", 5}}); }), !Contains("required field is missing"));
  CHECK_THAT(error_of([] { hf({{"model_type", "gpt_neox"}, {"hidden_size", 100}, {"num_attention_heads", 3}}); }),
             Contains("hidden_size (100) is not divisible by it (3)") && !Contains("head_dim"));
  CHECK_THAT(error_of([] { hf({{"model_type", "llama"}, {"hf_config", {{"model_type", "gpt2"}}}}); }),
             Contains("/hf_config: a config.json holds no hf_config"));
}

TEST_CASE("hf_config: a scenario takes a config.json file, a folder holding one, or one inline", "[models][hf]") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / "stepsim-hf-test" / "Qwen2.5-0.5B";
  fs::create_directories(dir);
  {
    std::ofstream f(dir / "config.json");
    f << R"({"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 896,
             "intermediate_size": 4864, "num_hidden_layers": 24, "num_attention_heads": 14,
             "num_key_value_heads": 2, "vocab_size": 151936, "tie_word_embeddings": true,
             "torch_dtype": "bfloat16", "rope_theta": 1000000.0, "sliding_window": 32768,
             "use_sliding_window": false})";
  }
  const auto scenario_with = [](const json& model) {
    return parse_scenario({{"model", model}, {"hardware", "h100-sxm"}, {"parallelism", {{"dp", 8}}},
                           {"batch", {{"seq_len", 2048}}}},
                          "test.json");
  };
  const Scenario by_file = scenario_with((dir / "config.json").string());
  // A bare folder name beside the scenario file is that folder, from any working directory.
  const Scenario beside = parse_scenario({{"model", "Qwen2.5-0.5B"}, {"hardware", "h100-sxm"}, {"parallelism", {{"dp", 8}}},
                                          {"batch", {{"seq_len", 2048}}}},
                                         (dir.parent_path() / "scenario.json").string());
  CHECK(beside.model.parameter_count() == 494'032'768);
  const Scenario by_folder = scenario_with(dir.string());
  CHECK(by_file.model.parameter_count() == 494'032'768);
  CHECK(by_file.model.name == "Qwen2.5-0.5B");
  CHECK(by_folder.model.parameter_count() == 494'032'768);
  const Scenario inline_model = scenario_with({{"name", "tiny"}, {"hf_config", {{"model_type", "qwen2"}}}});
  CHECK(inline_model.model.name == "tiny");
  CHECK(inline_model.model_ref == "inline");
  // A folder without a config.json, and a bad inline config, are refused at /model.
  const fs::path empty = fs::temp_directory_path() / "stepsim-hf-test" / "empty";
  fs::create_directories(empty);
  CHECK_THAT(error_of([&] { scenario_with(empty.string()); }), Contains("is a folder without a config.json"));
  CHECK_THAT(error_of([&] { scenario_with({{"hf_config", {{"model_type", "llama"}, {"vocab_size", -1}}}}); }),
             Contains("test.json: /model/hf_config/vocab_size: expected an integer in [1,"));
  CHECK_THAT(error_of([&] { scenario_with({{"hf_config", {{"model_type", "gpt2"}}}, {"nmae", "x"}}); }),
             Contains("unknown key 'nmae'"));
  CHECK_THAT(error_of([&] { scenario_with({{"hf_confg", {{"model_type", "gpt2"}}}}); }),
             Contains("test.json: /model/hf_confg: unknown key (did you mean 'hf_config'?)"));
  CHECK_THAT(error_of([&] { scenario_with({{"architectures", {"LlamaForCausalLM"}}, {"hidden_size", 4096}}); }),
             Contains("/model/model_type: required field is missing: this reads as a Hugging Face config.json"));
  fs::remove_all(fs::temp_directory_path() / "stepsim-hf-test");
}

TEST_CASE("hf_config: the catalog's config.json models add up to their published counts", "[models][hf]") {
  struct Entry {
    const char* name;
    std::int64_t exact;  ///< these tensors' total (this reader; the rows above check the layouts)
    double published;    ///< the model card's or report's figure (source in the catalog file); 0: none to check
    double tolerance;    ///< relative: half a unit of the published figure's last digit, at least 0.1 %
  };
  const std::vector<Entry> entries = {
      {"gpt2", 124'439'808, 124'439'808.0, 0.001},     {"gpt2-medium", 354'823'168, 355e6, 0.5 / 355},
      {"gpt2-large", 774'030'080, 774e6, 0.001},       {"gpt2-xl", 1'557'611'200, 1'557'611'200.0, 0.001},
      {"llama3.2-3b", 3'212'749'824, 3.21e9, 0.001},   {"mistral-7b", 7'241'732'096, 7.24e9, 0.001},
      {"qwen2.5-7b", 7'615'616'512, 7.61e9, 0.001},    {"qwen2.5-72b", 72'706'203'648, 72.7e9, 0.001},
      {"qwen3-8b", 8'190'735'360, 8.2e9, 0.05 / 8.2},  {"qwen3-32b", 32'762'123'264, 32.8e9, 0.05 / 32.8},
      {"gemma2-9b", 9'241'705'984, 9'241'705'984.0, 0.001}, {"gemma2-27b", 27'227'128'320, 27.2e9, 0.05 / 27.2},
      {"olmo2-7b", 7'298'617'344, 7.30e9, 0.001},      {"olmo2-13b", 13'716'198'400, 0, 0},  // the card names it "13B" and gives no count
      // Qwen's cards give 14.7B and 32.5B, 0.5 % and 0.8 % under these configs' tensors (14.77B,
      // 32.76B; the 7B and 72B cards agree with theirs): the catalog files say so, and no
      // tolerance is stretched to hide it.
      {"qwen2.5-14b", 14'770'033'664, 0, 0}, {"qwen2.5-32b", 32'763'876'352, 0, 0},
      // Mixtures of experts: every expert counted.
      {"mixtral-8x7b", 46'702'792'704, 46.7e9, 0.001},  {"mixtral-8x22b", 140'620'634'112, 141e9, 0.5 / 141},  {"qwen3-30b-a3b", 30'532'122'624, 30.5e9, 0.05 / 30.5},
      {"qwen3-235b-a22b", 235'093'634'560, 235e9, 0.001}, {"deepseek-v3", 671'026'404'352, 671e9, 0.001},
      {"gpt-oss-20b", 20'914'757'184, 21e9, 0.5 / 21},  {"gpt-oss-120b", 116'829'156'672, 117e9, 0.5 / 117},
  };
  for (const auto& e : entries) {
    INFO(e.name);
    const ModelSpec m = load_model(e.name);
    CHECK(m.parameter_count() == e.exact);
    if (e.published > 0)
      CHECK(std::abs(static_cast<double>(m.parameter_count()) - e.published) / e.published <= e.tolerance);
    CHECK(!m.hf_model_type.empty());
  }
}

TEST_CASE("hf_config: a sequence beyond the model's positions", "[models][hf]") {
  const auto scenario_with = [](const json& model, std::int64_t seq) {
    return parse_scenario({{"model", model}, {"hardware", "h100-sxm"}, {"parallelism", {{"dp", 8}}},
                           {"batch", {{"seq_len", seq}}}},
                          "test.json");
  };
  // GPT-2's learned position table has 1024 rows: 2048 tokens cannot run.
  CHECK_NOTHROW(scenario_with("gpt2", 1024));
  CHECK_THAT(error_of([&] { scenario_with("gpt2", 2048); }),
             Contains("test.json: /batch/seq_len: seq_len 2048 is longer than model 'gpt2' has positions"));
  // A rotary model runs past max_position_embeddings, with a warning.
  const Report r = run(scenario_with({{"hf_config", {{"model_type", "llama"}, {"num_hidden_layers", 2}}}}, 4096));
  REQUIRE(!r.warnings.empty());
  CHECK_THAT(r.warnings.back(), Contains("seq_len 4096 is beyond the 2048 positions model 'llama' declares"));
  CHECK(run(scenario_with({{"hf_config", {{"model_type", "llama"}, {"num_hidden_layers", 2}}}}, 2048)).warnings.empty());
}

// Active parameters per token: the routed experts' tensors count top-k of the experts, every
// other tensor (attention, routers, shared experts, dense blocks, embeddings) in full. Vendors
// count differently (shared/reference/models.md §1.15): Mixtral and Qwen3 include the
// embeddings; DeepSeek-V3 (36.6 B, README_WEIGHTS.md) and gpt-oss (5.1 B / 3.6 B, model card)
// leave the input embedding out.
TEST_CASE("hf_config: active parameters of the catalog's mixtures of experts", "[models][hf][moe]") {
  const auto active_without_input_embedding = [](const ModelSpec& m) {
    return static_cast<double>(m.active_parameter_count() - m.layers.front().params.front().numel);
  };
  CHECK(std::abs(static_cast<double>(load_model("mixtral-8x7b").active_parameter_count()) - 12.9e9) <= 0.05e9);
  CHECK(std::abs(static_cast<double>(load_model("mixtral-8x22b").active_parameter_count()) - 39e9) <= 0.5e9);
  CHECK(std::abs(static_cast<double>(load_model("qwen3-30b-a3b").active_parameter_count()) - 3.3e9) <= 0.06e9);
  CHECK(std::abs(static_cast<double>(load_model("qwen3-235b-a22b").active_parameter_count()) - 22e9) <= 0.5e9);
  CHECK(std::abs(active_without_input_embedding(load_model("deepseek-v3")) - 36.6e9) <= 0.05e9);
  CHECK(std::abs(active_without_input_embedding(load_model("gpt-oss-120b")) - 5.1e9) <= 0.05e9);
  CHECK(std::abs(active_without_input_embedding(load_model("gpt-oss-20b")) - 3.6e9) <= 0.05e9);
  const ModelSpec dense = load_model("llama3-8b");
  CHECK(dense.active_parameter_count() == dense.parameter_count());
}
