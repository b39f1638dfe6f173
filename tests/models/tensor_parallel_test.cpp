// SPDX-License-Identifier: Apache-2.0
// Tensor parallelism (issue 15 item 5): one rank's share of a model, the TP collectives of
// each layer (shared/reference/semantics-parallel.md §A4, A5, A12, A13), the mesh's groups
// and the rules a scenario with parallelism.tp must obey.
#include "models/float8.hpp"
#include "models/model_spec_json.hpp"
#include "models/queries_json.hpp"
#include "models/report.hpp"
#include "models/scenario.hpp"
#include "models/simulate.hpp"
#include "models/tensor_parallel.hpp"
#include "hardware/nccl_model.hpp"
#include "sim/support/error.hpp"
#include "tests/support/catch.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

using namespace stepsim;
using namespace stepsim::models;
using Catch::Matchers::Contains;

namespace {

Scenario scenario(const std::string& text) { return parse_scenario(nlohmann::json::parse(text), "test.json"); }

// Llama-3.1-8B (meta-llama/Llama-3.1-8B config.json): hidden 4096, 32 layers, 32 heads, 8 KV
// heads, intermediate 14336, vocab 128256, untied.
constexpr std::int64_t kHidden = 4096, kLayers = 32, kKvDim = 8 * 128, kFfn = 14336, kVocab = 128256;

Scenario llama8b(std::int64_t dp, std::int64_t tp, bool sp, const std::string& extra = "",
                 const std::string& strategy = "fsdp") {
  return scenario(fmt::format(R"({{"model": "llama3-8b", "hardware": "h100-sxm",
    "parallelism": {{"strategy": "{}", "dp": {}, "tp": {}{}}},
    "batch": {{"micro_batch_size": 1, "seq_len": 4096}}{}}})",
                              strategy, dp, tp, sp ? R"(, "sequence_parallel": true)" : "", extra));
}

}  // namespace

TEST_CASE("tensor parallel: one rank holds 1/tp of every split tensor and all of the replicated ones", "[models][tp]") {
  const ModelSpec full = load_model("llama3-8b");
  for (const std::int64_t tp : {2, 4, 8}) {
    const ModelSpec local = tensor_parallel_model(full, tp, false);
    // Column-parallel q, k, v, gate, up and row-parallel o, down split tp ways; the two RMSNorm
    // weights per block and the final norm are replicated; embedding and LM head split the
    // vocabulary (Megatron-LM layers.py, VocabParallelEmbedding).
    const std::int64_t matrices = kHidden * kHidden * 2 + kHidden * kKvDim * 2 + 3 * kHidden * kFfn;
    const std::int64_t expected = kLayers * (matrices / tp + 2 * kHidden) + 2 * (kVocab / tp) * kHidden + kHidden;
    CHECK(local.parameter_count() == expected);
    REQUIRE(local.layers.size() == full.layers.size());
    // Same tensors in the same order (DDP's buckets and FSDP's units depend on it).
    for (std::size_t l = 0; l < full.layers.size(); ++l) {
      REQUIRE(local.layers[l].params.size() == full.layers[l].params.size());
      for (std::size_t k = 0; k < full.layers[l].params.size(); ++k)
        CHECK(local.layers[l].params[k].name == full.layers[l].params[k].name);
    }
    // A block's forward GEMM FLOPs per token: 2 × its local matrices.
    CHECK(local.layers[1].fwd_gemm_flops_per_token == Approx(2.0 * static_cast<double>(matrices / tp)));
  }
  // tp = 1 is the model itself.
  CHECK(tensor_parallel_model(full, 1, false).parameter_count() == full.parameter_count());
}

TEST_CASE("tensor parallel: sequence parallelism divides a block's activations and HBM traffic by tp", "[models][tp]") {
  // Korthikanti et al. 2022 §4.2.2: with SP every activation of the block is 1/t of the unsplit
  // one; without it the hidden-wide ones (norm inputs, residuals) stay whole.
  const ModelSpec full = load_model("llama3-8b");
  const ModelSpec tp = tensor_parallel_model(full, 8, false);
  const ModelSpec sp = tensor_parallel_model(full, 8, true);
  const LayerSpec& f = full.layers[1];
  CHECK(sp.layers[1].activation_bytes_per_token == Approx(f.activation_bytes_per_token / 8));
  CHECK(sp.layers[1].fwd_streaming_bytes_per_token == Approx(f.fwd_streaming_bytes_per_token / 8));
  CHECK(tp.layers[1].activation_bytes_per_token > f.activation_bytes_per_token / 8);
  CHECK(tp.layers[1].activation_bytes_per_token < f.activation_bytes_per_token);
  // The hidden-wide part is what SP removes: RMSNorm inputs of 2 × act × hidden each stay whole.
  CHECK(tp.layers[1].activation_bytes_per_token - sp.layers[1].activation_bytes_per_token >
        2 * 2.0 * kHidden * (1 - 1.0 / 8));
  // The LM head's logits are split by the vocabulary either way.
  CHECK(sp.layers.back().activation_bytes_per_token == Approx(4.0 * static_cast<double>(kVocab / 8)));
}

TEST_CASE("tensor parallel: the collectives of each layer follow Megatron-LM", "[models][tp]") {
  using Op = hardware::CollectiveOp;
  const double n = 4096.0 * kHidden * 2;  // [s, b, h] bf16, s = 4096, b = 1
  const auto ops = [](const std::vector<TensorParallelCollective>& cs) {
    std::vector<Op> o;
    for (const auto& c : cs) o.push_back(c.op);
    return o;
  };
  SECTION("without sequence parallelism: 2 AllReduces per block forward and backward (§A4)") {
    const Scenario s = llama8b(2, 4, false);
    const auto fwd = tensor_parallel_collectives(s, 1, false);
    const auto bwd = tensor_parallel_collectives(s, 1, true);
    CHECK(ops(fwd) == std::vector<Op>{Op::AllReduce, Op::AllReduce});
    CHECK(ops(bwd) == std::vector<Op>{Op::AllReduce, Op::AllReduce});
    for (const auto& c : fwd) CHECK(c.bytes == n);
    // Embedding: an AllReduce of its output, nothing in backward (§A12).
    CHECK(ops(tensor_parallel_collectives(s, 0, false)) == std::vector<Op>{Op::AllReduce});
    CHECK(tensor_parallel_collectives(s, 0, true).empty());
    // LM head: the vocab-parallel cross-entropy's three fp32 [s, b] AllReduces; backward the
    // input gradient's AllReduce (§A13, §A1).
    const auto head = tensor_parallel_collectives(s, s.model.layers.size() - 1, false);
    REQUIRE(head.size() == 3);
    for (const auto& c : head) CHECK(c.bytes == 4.0 * 4096);
    CHECK(ops(tensor_parallel_collectives(s, s.model.layers.size() - 1, true)) == std::vector<Op>{Op::AllReduce});
    // The final norm has none.
    CHECK(tensor_parallel_collectives(s, s.model.layers.size() - 2, false).empty());
  }
  SECTION("with sequence parallelism: forward 2 AG + 2 RS, backward 4 AG + 2 RS per block (§A5)") {
    const Scenario s = llama8b(2, 4, true, "", "zero1");  // Megatron-LM's TP
    const auto fwd = ops(tensor_parallel_collectives(s, 1, false));
    const auto bwd = ops(tensor_parallel_collectives(s, 1, true));
    CHECK(std::count(fwd.begin(), fwd.end(), Op::AllGather) == 2);
    CHECK(std::count(fwd.begin(), fwd.end(), Op::ReduceScatter) == 2);
    CHECK(std::count(bwd.begin(), bwd.end(), Op::AllGather) == 4);
    CHECK(std::count(bwd.begin(), bwd.end(), Op::ReduceScatter) == 2);
    // RoPE model: the embedding reduce-scatters into the sequence shards (§A12).
    CHECK(ops(tensor_parallel_collectives(s, 0, false)) == std::vector<Op>{Op::ReduceScatter});
    CHECK(ops(tensor_parallel_collectives(s, 0, true)) == std::vector<Op>{Op::AllGather});
  }
  SECTION("DTensor TP under FSDP (torchtitan): the backward keeps the gathered input, no re-gather (§A15-A16)") {
    const auto bwd = ops(tensor_parallel_collectives(llama8b(2, 4, true), 1, true));
    CHECK(std::count(bwd.begin(), bwd.end(), Op::AllGather) == 2);
    CHECK(std::count(bwd.begin(), bwd.end(), Op::ReduceScatter) == 2);
  }
  SECTION("full recomputation runs the forward's collectives again in backward") {
    const Scenario s = llama8b(2, 4, false, R"(, "activations": {"recompute": "full"})");
    CHECK(tensor_parallel_collectives(s, 1, true).size() == 4);
    // Only the blocks are checkpointed: the embedding and the LM head run theirs once.
    CHECK(tensor_parallel_collectives(s, 0, true).empty());
    CHECK(tensor_parallel_collectives(s, s.model.layers.size() - 1, true).size() == 1);
  }
  SECTION("torchtitan's op-level SAC re-runs the AllGathers, keeps the ReduceScatters (activation_checkpoint.py)") {
    const auto bwd = ops(tensor_parallel_collectives(llama8b(2, 4, true, R"(, "activations": {"recompute": "selective_op"})"), 1, true));
    CHECK(std::count(bwd.begin(), bwd.end(), Op::AllGather) == 4);  // 2 re-run + 2 of backward
    CHECK(std::count(bwd.begin(), bwd.end(), Op::ReduceScatter) == 2);
  }
  SECTION("float8 tensorwise under DTensor TP gathers the column-parallel inputs in float8 (torchao Float8ColwiseParallel)") {
    const Scenario s = llama8b(2, 4, true, R"(, "precision": {"float8": "tensorwise"})");
    const auto fwd = tensor_parallel_collectives(s, 1, false);
    for (const auto& c : fwd) CHECK(c.bytes == (c.op == Op::AllGather ? n / 2 : n));
  }
  SECTION("no TP, no collectives") {
    const Scenario s = llama8b(8, 1, false);
    CHECK(tensor_parallel_collectives(s, 1, false).empty());
  }
}

TEST_CASE("tensor parallel: a step prices its TP collectives on a TP group inside the node", "[models][tp]") {
  const Scenario s = llama8b(16, 8, false);  // 128 GPUs in 16 nodes
  CHECK(s.world_size() == 128);
  CHECK(s.cluster.nodes == 16);
  CHECK(s.ranks_per_node() == 1);  // one rank of each DP group per node
  SimulatedStep kept;
  const Report r = run(s, kept);
  REQUIRE(kept.step.tp_group >= 0);
  const hardware::GroupShape& tp = kept.step.groups[static_cast<std::size_t>(kept.step.tp_group)];
  CHECK(tp.ranks == 8);
  CHECK(tp.ranks_per_node == 8);
  // The DP (shard) group: 16 ranks, one per node, 8 such groups sharing each node's NICs.
  CHECK(kept.step.groups[0].ranks == 16);
  CHECK(kept.step.groups[0].ranks_per_node == 1);
  CHECK(kept.step.groups[0].concurrent_groups_per_node == 8);  // the node's 8 DP groups share its NICs
  CHECK(tp.concurrent_groups_per_node == 1);
  // Every block: 2 forward + 2 backward AllReduces of the [s, b, h] activations, priced as the
  // NCCL model prices that AllReduce on 8 GPUs of one node.
  const double n = 4096.0 * kHidden * 2;
  const hardware::CollectiveCost one =
      hardware::model_collective_cost(s.collective_model, s.hardware, hardware::CollectiveOp::AllReduce, n, tp);
  bool found = false;
  for (const auto& c : r.collectives)
    if (c.group == "tp" && c.op == "AllReduce" && c.bytes == n) {
      found = true;
      CHECK(c.count == 4 * kLayers + 1 + 1);  // blocks, the embedding's forward, the head's backward
      CHECK(c.time_s == Approx(one.time_s()).epsilon(1e-12));
      CHECK_FALSE(c.spans_nodes);
    }
  CHECK(found);
  // Synchronous on the compute stream: all of the TP time is exposed, and the report splits it.
  CHECK(r.tp_comm_time_s > 4 * kLayers * one.time_s());
  CHECK(r.tp_exposed_comm_s == Approx(r.tp_comm_time_s).epsilon(1e-9));
  CHECK(r.exposed_comm_s >= r.tp_exposed_comm_s);
  // Throughput counts the job's tokens: dp sequences per micro-batch, not dp × tp.
  CHECK(r.tokens_per_step == 16.0 * 4096);
}

TEST_CASE("tensor parallel: per_rank plays the symmetric step when no rank differs", "[models][tp]") {
  // TP groups are blocks of tp consecutive ranks, DP groups every tp-th rank: every rendezvous
  // meets its members (a wrong span deadlocks or desynchronises the copies). A slow-rank entry
  // of factor 1 makes the engine play all 16 copies.
  const auto make = [](const char* strategy, const char* mode, double factor) {
    return scenario(fmt::format(R"({{"model": "llama3.2-1b", "hardware": "h100-sxm",
      "parallelism": {{"strategy": "{}", "dp": 8, "tp": 2}}, "batch": {{"micro_batch_size": 1, "seq_len": 2048}},
      "sim": {{"rank_mode": "{}"{}}}}})",
                                strategy, mode,
                                factor > 0 ? fmt::format(R"(, "slow_ranks": [{{"rank": 15, "compute_factor": {}}}])", factor)
                                           : std::string()));
  };
  for (const char* strategy : {"ddp", "zero2", "zero3", "fsdp", "hsdp"}) {
    INFO(strategy);
    const Report sym = run(make(strategy, "symmetric", 0));
    const Report per = run(make(strategy, "per_rank", 1.0));
    CHECK(per.step_time_s == Approx(sym.step_time_s).epsilon(1e-9));
    // A slow rank slows every rank it meets: its TP partner at every block, then the DP groups.
    const Report slow = run(make(strategy, "per_rank", 1.5));
    CHECK(slow.step_time_s > 1.3 * sym.step_time_s);
  }
}

TEST_CASE("tensor parallel: rules of the mesh", "[models][tp]") {
  const auto fails = [](const std::string& text, const std::string& what) {
    CHECK_THROWS_WITH(scenario(text), Contains(what));
  };
  // The TP group stays inside a node or spans whole nodes (since 2026-12-05: tp 8 on 4-GPU
  // nodes runs, below).
  fails(R"({"model": "llama3-8b", "hardware": "h100-sxm", "parallelism": {"dp": 1, "tp": 8}, "cluster": {"gpus_per_node": 6}})",
        "/parallelism/tp: 8 neither divides /cluster/gpus_per_node (6) nor spans whole nodes");
  // Heads split evenly (32 heads, 8 KV heads: tp 16 would leave half a KV head per rank).
  fails(R"({"model": "llama3-8b", "hardware": "gb200-nvl72", "parallelism": {"dp": 1, "tp": 12}})",
        "do not divide by tp 12");
  // Only transformers and the seed MLP have Megatron's layout.
  fails(R"({"model": "resnet50", "hardware": "v100-sxm2", "parallelism": {"dp": 4, "tp": 2}})",
        "is of kind 'resnet'");
  fails(R"({"model": "llama3-8b", "hardware": "h100-sxm", "parallelism": {"dp": 8, "sequence_parallel": true}})",
        "/parallelism/sequence_parallel: needs tp > 1");
  fails(R"({"model": "seed-mlp", "hardware": "tpu-v5p", "parallelism": {"dp": 4, "tp": 2}})", "tp 1 on a torus");
  // The world is dp × tp.
  fails(R"({"model": "llama3-8b", "hardware": "h100-sxm", "parallelism": {"dp": 4, "tp": 4}, "cluster": {"nodes": 1}})",
        "/cluster/nodes (1) × /cluster/gpus_per_node (8) = 8 ≠ /parallelism/dp × tp (4 × 4 = 16)");
  // Pipeline and context parallelism are named, and refused, until they are modelled.
  // Pipeline parallelism is modelled (pipeline_test.cpp), but not under DeepSpeed's strategies.
  fails(R"({"model": "llama3-8b", "hardware": "h100-sxm", "parallelism": {"strategy": "zero3", "dp": 8, "pp": 2}})",
        "/parallelism/pp: 2 under strategy 'zero3'");
  // Context parallelism is modelled (context_parallel_test.cpp), but not under DeepSpeed's strategies.
  fails(R"({"model": "llama3-8b", "hardware": "h100-sxm", "parallelism": {"strategy": "zero1", "dp": 2, "cp": 4}})",
        "/parallelism/cp: 4 under strategy 'zero1'");
  // Sequence parallelism splits each sequence tp ways.
  fails(R"({"model": "llama3-8b", "hardware": "h100-sxm", "parallelism": {"dp": 1, "tp": 8, "sequence_parallel": true},
    "batch": {"seq_len": 1001}})", "/batch/seq_len: 1001 does not divide by tp 8");
  // The world stays within dp's own bound (per_rank counts ranks in 32 bits).
  fails(R"({"model": "seed-mlp", "hardware": "h100-sxm", "cluster": {"gpus_per_node": 512},
    "parallelism": {"dp": 8388608, "tp": 512}})", "dp × tp = 8388608 × 512 = 4294967296 ranks; expected at most 100000000");
  // The seed MLP splits too: w_in column-parallel, w_out row-parallel.
  const Scenario mlp = scenario(R"({"model": "seed-mlp", "hardware": "h100-sxm", "parallelism": {"dp": 2, "tp": 4}})");
  CHECK(mlp.model.parameter_count() * 4 == mlp.model_parameters);
  CHECK(tensor_parallel_collectives(mlp, 0, false).size() == 1);
}

TEST_CASE("tensor parallel: float8 casts each TP region's input once, on the sequence shard", "[models][tp]") {
  // models/float8.hpp: 5 bytes per element per cast (compile); with float8 all-gather no weight
  // cast. tp 8, T = 4096 tokens: the two regions' inputs cast on T/8 tokens × hidden; the
  // row-parallel o_proj (k = 4096/8) and down_proj (k = 14336/8) cast their own inputs.
  const Scenario s = llama8b(1, 8, true, R"(, "precision": {"float8": "tensorwise", "float8_all_gather": true},
    "framework": {"implementation": "compile"})");
  const double t = 4096;
  const double expected = 2 * 5 * (t / 8) * kHidden + 5 * t * (kHidden / 8) + 5 * t * (kFfn / 8);
  CHECK(float8_casts(s, 1).fwd_bytes == Approx(expected));
}

TEST_CASE("tensor parallel: a node's DP groups share its NICs", "[models][tp]") {
  // DLPerf's cluster: one 100 Gb/s NIC for 8 GPUs. dp 2 x tp 8 on 2 nodes: each DP AllReduce
  // has one rank per node, and the node's 8 (one per TP rank) run at once through the one NIC,
  // so none can beat 12.5 GB/s / 8 of algorithm bandwidth on 2 ranks (a ring moves the whole
  // buffer across the network once per rank pair).
  const Scenario s = scenario(R"({"model": "llama3.2-1b", "parallelism": {"strategy": "ddp", "dp": 2, "tp": 8,
    "bucket_cap_mb": 1e6, "first_bucket_mb": 1e6}, "batch": {"micro_batch_size": 1, "seq_len": 2048},
    "hardware": {"base": "v100-sxm2", "inter_node": {"nics_per_node": 1, "gpus_per_nic": 8}}})");
  const Report r = run(s);
  bool found = false;
  for (const auto& c : r.collectives)
    if (c.group == "dp") {
      found = true;
      CHECK(c.spans_nodes);
      CHECK(c.algbw_bytes_per_s <= 12.5e9 / 8 * 1.0001);
      CHECK(c.algbw_bytes_per_s > 0.5 * 12.5e9 / 8);
    }
  CHECK(found);
}

TEST_CASE("tensor parallel: stepsim memory counts a TP rank's share and the whole model", "[models][tp]") {
  MemoryQuery q;
  q.scenario = std::string(STEPSIM_SOURCE_DIR) + "/configs/examples/default.json";
  const QueryAnswer one = memory_query(q);
  q.sets = {"parallelism.tp=8", "parallelism.dp=8"};
  const QueryAnswer tp = memory_query(q);
  CHECK(tp.json.at("tp") == 8);
  CHECK(tp.json.at("model_params") == one.json.at("params"));
  // Llama-3.2-1B: tied embeddings, 16 blocks; a TP rank holds 1/8 of every split tensor.
  CHECK(tp.json.at("params").get<double>() < one.json.at("params").get<double>() / 7);
  // The largest model is whole models: a TP rank's states scale by tp (ddp, same bytes per parameter).
  CHECK(tp.json.at("ddp").at("largest_params").get<double>() ==
        Approx(8 * one.json.at("ddp").at("largest_params").get<double>()));
  CHECK_THAT(tp.text, Contains("parameters per TP rank"));
}

TEST_CASE("tensor parallel: the JSON report counts GPUs, groups and each dimension's communication", "[models][tp]") {
  // FSDP over 2 nodes: its AllGathers and ReduceScatters run on the comm stream while the TP ones run
  // on the compute stream, so the two overlap; each dimension's busy time is its own union.
  const Scenario s = scenario(R"({"model": "llama3.2-1b", "hardware": "h100-sxm",
    "parallelism": {"strategy": "fsdp", "dp": 8, "tp": 2}, "batch": {"micro_batch_size": 1, "seq_len": 4096}})");
  const Report r = run(s);
  const auto j = nlohmann::json::parse(report_json(r));
  CHECK(j.at("gpus") == 16);
  CHECK(j.at("tokens_per_s_per_gpu").get<double>() == Approx(r.tokens_per_s / 16));
  for (const auto& c : j.at("collectives")) CHECK((c.at("group") == "tp" || c.at("group") == "dp"));
  const auto& by = j.at("comm_by_group");
  const double tp_busy = by.at("tp").at("comm_time_s").get<double>(), dp_busy = by.at("dp").at("comm_time_s").get<double>();
  // Each union is no longer than all communication, and together they cover it.
  CHECK(tp_busy <= r.comm_time_s + 1e-12);
  CHECK(dp_busy <= r.comm_time_s + 1e-12);
  CHECK(tp_busy + dp_busy >= r.comm_time_s - 1e-12);
  CHECK(by.at("tp").at("exposed_comm_s").get<double>() + by.at("dp").at("exposed_comm_s").get<double>() ==
        Approx(r.exposed_comm_s));
  CHECK(j.at("model").at("parameters_per_tp_rank").get<double>() < j.at("model").at("parameters").get<double>());
}

TEST_CASE("tensor parallel: tp_comm_overlap runs each layer's TP collectives beside its compute", "[models][tp]") {
  const auto make = [](bool overlap, const char* mode) {
    return scenario(fmt::format(R"({{"model": "llama3-8b", "hardware": "h100-sxm",
      "parallelism": {{"strategy": "fsdp", "dp": 8, "tp": 8, "sequence_parallel": true, "tp_comm_overlap": {}}},
      "batch": {{"micro_batch_size": 2, "seq_len": 4096}},
      "sim": {{"rank_mode": "{}", "slow_ranks": [{{"rank": 0, "compute_factor": 1.0}}]}}}})",
                                overlap, mode));
  };
  const Report sync = run(make(false, "per_rank"));
  const Report over = run(make(true, "per_rank"));
  // The same collectives, hidden behind compute: less exposed, a shorter step, and no TP
  // time exposed beyond what the synchronous step exposed.
  CHECK(over.tp_comm_time_s == Approx(sync.tp_comm_time_s).epsilon(0.05));
  CHECK(over.tp_exposed_comm_s < 0.5 * sync.tp_exposed_comm_s);
  CHECK(over.step_time_s < sync.step_time_s);
  // Hiding cannot make the step shorter than its compute (kernels slowed by the overlap included).
  CHECK(over.step_time_s >= over.compute_time_s);
  // Every rank's TP rendezvous on its own stream still meets (per_rank = symmetric).
  const Report sym = run(scenario(R"({"model": "llama3-8b", "hardware": "h100-sxm",
      "parallelism": {"strategy": "fsdp", "dp": 8, "tp": 8, "sequence_parallel": true, "tp_comm_overlap": true},
      "batch": {"micro_batch_size": 2, "seq_len": 4096}})"));
  CHECK(over.step_time_s == Approx(sym.step_time_s).epsilon(1e-9));
  CHECK_THROWS_WITH(scenario(R"({"model": "llama3-8b", "hardware": "h100-sxm",
      "parallelism": {"dp": 8, "tp": 8, "tp_comm_overlap": true}})"),
                    Contains("/parallelism/tp_comm_overlap: needs sequence_parallel"));
}

TEST_CASE("tensor parallel: a TP group may span whole nodes, its AllReduces through their NICs", "[models][tp]") {
  // tp 8 on 4-GPU nodes (llama3-8b's 8 KV heads bound tp at 8): each TP group over 2 nodes of
  // 4 GPUs; each DP group one rank per node, the node's 4 GPUs in 4 DP
  // groups sharing its NICs (DLPerf's MP_1x16x1 and MP_1x32x1 cases, validate/accuracy/dlperf.json).
  const Scenario s = llama8b(4, 8, false, R"(, "cluster": {"gpus_per_node": 4, "nodes": 8})");
  CHECK(s.dp_slots_per_node() == 1);
  CHECK(s.tp_ranks_per_node() == 4);
  CHECK_THAT(report_text(run(s)), Contains("each TP group of 8 GPUs over 2 whole nodes"));
  SimulatedStep kept;
  const Report r = run(s, kept);
  const hardware::GroupShape& tp = kept.step.groups[static_cast<std::size_t>(kept.step.tp_group)];
  CHECK(tp.ranks == 8);
  CHECK(tp.ranks_per_node == 4);
  CHECK(tp.concurrent_groups_per_node == 1);
  CHECK(kept.step.groups[0].ranks == 4);
  CHECK(kept.step.groups[0].ranks_per_node == 1);
  CHECK(kept.step.groups[0].concurrent_groups_per_node == 4);
  // The same TP AllReduce inside one 8-GPU node is faster: the NICs are slower than NVLink.
  const Scenario inside = llama8b(4, 8, false);
  const double n = 4096.0 * kHidden * 2;
  const SimulatedStep in_kept = [&] {
    SimulatedStep k;
    run(inside, k);
    return k;
  }();
  const auto& tp_in = in_kept.step.groups[static_cast<std::size_t>(in_kept.step.tp_group)];
  const double across = hardware::model_collective_cost(s.collective_model, s.hardware, hardware::CollectiveOp::AllReduce, n, tp).time_s();
  const double within = hardware::model_collective_cost(inside.collective_model, inside.hardware, hardware::CollectiveOp::AllReduce, n, tp_in).time_s();
  CHECK(across > 2 * within);
  CHECK(r.step_time_s > run(inside).step_time_s);
}
