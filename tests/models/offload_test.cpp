// SPDX-License-Identifier: Apache-2.0
// Optimizer offload under DeepSpeed ZeRO-1/2/3 (issue 17 item 2): the PCIe traffic, the CPU's
// optimizer step, NVMe swaps and the memory they move, against the rules of
// shared/reference/semantics-parallel.md §E3 (stages 1/2), §E4 (stage 3), §E6 (NVMe), and
// DeepSpeed's estimate_zero2/3_model_states_mem_needs (semantics.md §C.4 rules 72–73).
#include "hardware/hardware_profile.hpp"
#include "hardware/hardware_profile_json.hpp"
#include "hardware/task_cost.hpp"
#include "models/memory.hpp"
#include "models/report.hpp"
#include "models/scenario.hpp"
#include "models/strategy/compute_tasks.hpp"
#include "sim/support/error.hpp"
#include "tests/support/catch.hpp"

#include <nlohmann/json.hpp>

using namespace stepsim;
using namespace stepsim::models;
using Catch::Matchers::Contains;

namespace {

// The ZeRO paper's 7.5B model on 64 A100 80 GB (8 nodes of 8), as configs/examples/zero-7.5b-*.
Scenario make(const std::string& patch) {
  auto doc = nlohmann::json::parse(R"({"model": "zero-7.5b", "hardware": "a100-sxm",
      "parallelism": {"strategy": "zero2", "dp": 64, "overlap_comm": true, "offload_optimizer": {"device": "cpu"}},
      "batch": {"micro_batch_size": 2, "seq_len": 2048}})");
  doc.merge_patch(nlohmann::json::parse(patch));
  return parse_scenario(doc, "test.json");
}

// This rank's partition of the trainable parameters (elements): Ψ / dp.
double partition(const Scenario& s) { return static_cast<double>(s.model.trainable_parameter_count()) / 64.0; }

}  // namespace

TEST_CASE("offload: ZeRO-2 moves the fp32 gradient partition out and the fp32 partition back (§E3)", "[models][offload]") {
  const Scenario s = make("{}");
  const Report r = run(s);
  const double e = partition(s);
  REQUIRE(r.offload.present);
  CHECK(r.offload.device == "cpu");
  // grad_accum 1: the reduced gradient cast to fp32 on the GPU, 4 B per element device to host;
  // after DeepSpeedCPUAdam the fp32 partition comes back, 4 B per element (this DeepSpeed
  // snapshot; PR #7309 later made it 2 B).
  CHECK(r.offload.d2h_bytes == Approx(4 * e).epsilon(1e-12));
  CHECK(r.offload.h2d_bytes == Approx(4 * e).epsilon(1e-12));
  CHECK(r.offload.nvme_time_s == 0);
  // The CPU step: the partition at the node's DeepSpeedCPUAdam rate (1.4e9 parameters/s,
  // profile a100-sxm) shared by its 8 ranks.
  CHECK(r.offload.cpu_optimizer_time_s == Approx(e / (1.4e9 / 8)).epsilon(1e-9));
  // PCIe: 25 GB/s per GPU alone, 2 GPUs behind each switch uplink, so 12.5 GB/s while all copy.
  CHECK(r.offload.h2d_time_s == Approx(4 * e / 12.5e9).epsilon(1e-9));
  CHECK(r.offload.d2h_time_s == Approx(4 * e / 12.5e9).epsilon(1e-9));
  // The step cannot beat its host-side critical path: CPU Adam, then the copy back, then the
  // parameter AllGather, all after backward.
  CHECK(r.step_time_s > r.forward_time_s + r.offload.cpu_optimizer_time_s + r.offload.h2d_time_s);
  CHECK(r.offload.exposed_time_s <= r.offload.busy_time_s + 1e-12);
  CHECK(r.offload.exposed_time_s >= r.offload.cpu_optimizer_time_s + r.offload.h2d_time_s - 1e-9);
  // No GPU optimizer kernel runs.
  CHECK(r.optimizer_time_s == 0);
}

TEST_CASE("offload: the GPU keeps 2Ψ of model states under ZeRO-2 (estimate_zero2_model_states_mem_needs)",
          "[models][offload]") {
  const Scenario s = make("{}");
  const MemoryBreakdown m = static_memory(s);
  const double psi = static_cast<double>(s.model.trainable_parameter_count());
  // Rule 72, cpu_offload: GPU = 2Ψ (the bf16 parameters); no sharded gradient or state stays.
  CHECK(m.params_bytes + m.grads_bytes + m.optimizer_bytes == Approx(2 * psi).epsilon(1e-12));
  CHECK(m.grads_bytes == 0);
  CHECK(m.optimizer_bytes == 0);
  // Host per node: its 8 GPUs' fp32 master, Adam m and v (12 B) and fp32 gradient (4 B)
  // partitions: 8 × 16Ψ/64 (DeepSpeed's estimator adds a 1.5 buffer factor on top).
  CHECK(m.host_bytes == Approx(8 * 16 * psi / 64).epsilon(1e-12));
  CHECK(m.host_capacity_bytes == 2e12);
  CHECK(m.host_fits);
  // Without offload the same GPU holds 2Ψ + 14Ψ/64 (the ZeRO paper's stage 2 row).
  const MemoryBreakdown none = static_memory(make(R"({"parallelism": {"offload_optimizer": null}})"));
  CHECK(none.params_bytes + none.grads_bytes + none.optimizer_bytes == Approx(2 * psi + 14 * psi / 64).epsilon(1e-12));
  CHECK(none.host_bytes == 0);
}

TEST_CASE("offload: gradient accumulation goes through the CPU buffer on every micro-step (§E3)", "[models][offload]") {
  const Scenario s = make(R"({"batch": {"grad_accum": 3}})");
  const Report r = run(s);
  const double e = partition(s);
  // Micro-step 0: out in bf16 (2 B); 1 and 2: back in (2 B), add, out again (2 B); at the boundary
  // the fp32 cast goes out (4 B). async_accumulate_grad_in_cpu_via_gpu, copy_grads_in_partition.
  CHECK(r.offload.d2h_bytes == Approx((2 + 2 + 2 + 4) * e).epsilon(1e-12));
  CHECK(r.offload.h2d_bytes == Approx((2 + 2 + 4) * e).epsilon(1e-12));
  // The CPU buffer of the accumulated bf16 gradient joins the host's states.
  CHECK(static_memory(s).host_bytes == Approx(8 * 18 * e).epsilon(1e-12));
}

TEST_CASE("offload: ZeRO-1 keeps the gradients on the GPU and copies out on the boundary only", "[models][offload]") {
  const Scenario s = make(R"({"parallelism": {"strategy": "zero1"}, "batch": {"grad_accum": 2}})");
  const Report r = run(s);
  const double e = partition(s);
  // Stage 1 reduces on the boundary only, but that is micro-step 1 (micro_step_id > 0), so
  // copy_grads_in_partition still runs the accumulation path: a zeroed CPU buffer comes in
  // (2 B), is added, and goes out (2 B), then the fp32 cast goes out (4 B). Literal code.
  CHECK(r.offload.d2h_bytes == Approx((2 + 4) * e).epsilon(1e-12));
  CHECK(r.offload.h2d_bytes == Approx((2 + 4) * e).epsilon(1e-12));
  const MemoryBreakdown m = static_memory(s);
  const double psi = static_cast<double>(s.model.trainable_parameter_count());
  CHECK(m.grads_bytes == Approx(2 * psi).epsilon(1e-12));  // full bf16 gradients until their reduction
  CHECK(m.optimizer_bytes == 0);
}

TEST_CASE("offload: ZeRO-3 copies each bucket out and back, then out in fp32 (§E4)", "[models][offload]") {
  const Scenario s = make(R"({"parallelism": {"strategy": "zero3", "overlap_comm": null}})");
  const Report r = run(s);
  const double e = partition(s);
  // partition_grads, grad_accum 1: out 2 B, back 2 B, out in fp32 4 B; the step copies the fp32
  // partition into the GPU's 16-bit one (4 B); no AllGather follows (rule 68).
  CHECK(r.offload.d2h_bytes == Approx(6 * e).epsilon(1e-12));
  CHECK(r.offload.h2d_bytes == Approx(6 * e).epsilon(1e-12));
  for (const auto& c : r.collectives) CHECK(!(c.op == "AllGather" && c.bytes > 1e10));
  // Rule 73, offload optimizer only: GPU = LLM + 2Ψ/N (here without the largest-layer buffer:
  // it comes from the timeline); host 16Ψ/N per GPU plus the 2 B flat gradient buffer (§E4).
  const MemoryBreakdown m = static_memory(s);
  CHECK(m.optimizer_bytes == 0);
  CHECK(m.grads_bytes == 0);
  CHECK(m.host_bytes == Approx(8 * 18 * e).epsilon(1e-12));
}

TEST_CASE("offload: ZeRO-Infinity swaps the states through NVMe (§E6)", "[models][offload]") {
  const Scenario s = make(R"({"parallelism": {"strategy": "zero3", "overlap_comm": null,
      "offload_optimizer": {"device": "nvme", "pin_memory": true}}})");
  const Report r = run(s);
  const double e = partition(s);
  // Backward writes each fp32 gradient partition (4 B); the step reads master, m, v and the
  // gradient (16 B) and writes the three states back (12 B).
  CHECK(r.offload.nvme_read_bytes == Approx(16 * e).epsilon(1e-12));
  CHECK(r.offload.nvme_write_bytes == Approx((4 + 12) * e).epsilon(1e-12));
  // The node's NVMe (10 GB/s read, 5 GB/s write, a100-sxm) shared by 8 ranks: a lower bound on
  // the swap time (the gradient writes may overlap backward).
  CHECK(r.offload.nvme_time_s >= 16 * e / (10e9 / 8) + 12 * e / (5e9 / 8) - 1e-9);
  const MemoryBreakdown m = static_memory(s);
  CHECK(m.nvme_bytes == Approx(8 * 16 * e).epsilon(1e-12));
  CHECK(m.host_bytes == Approx(8 * 2 * e).epsilon(1e-12));
  // Slower than keeping the states in host memory.
  const Report cpu = run(make(R"({"parallelism": {"strategy": "zero3", "overlap_comm": null,
      "offload_optimizer": {"device": "cpu", "pin_memory": true}}})"));
  CHECK(r.step_time_s > cpu.step_time_s);
}

TEST_CASE("offload: pageable gradient buffers stall the GPU's stream on each copy", "[models][offload]") {
  const Report pinned = run(make(R"({"parallelism": {"offload_optimizer": {"pin_memory": true}}})"));
  const Report pageable = run(make("{}"));
  CHECK(pageable.step_time_s > pinned.step_time_s);
  CHECK(pageable.exposed_comm_s > pinned.exposed_comm_s);
  // Same bytes either way.
  CHECK(pageable.offload.d2h_bytes == pinned.offload.d2h_bytes);
}

TEST_CASE("offload: stage 1/2 treat device nvme as cpu, with a warning (stage_1_and_2.py)", "[models][offload]") {
  const Report r = run(make(R"({"parallelism": {"offload_optimizer": {"device": "nvme"}}})"));
  CHECK(r.offload.nvme_time_s == 0);
  bool warned = false;
  for (const auto& w : r.warnings) warned = warned || w.find("stage 3 only") != std::string::npos;
  CHECK(warned);
}

TEST_CASE("offload: refused where it cannot be priced or does not exist", "[models][offload]") {
  CHECK_THROWS_WITH(make(R"({"hardware": "tpu-v5p"})"), Contains("needs the host facts of profile 'tpu-v5p'"));
  CHECK_THROWS_WITH(make(R"({"parallelism": {"strategy": "fsdp", "overlap_comm": null}})"),
                    Contains("'offload_optimizer' does not apply to strategy 'fsdp'"));
  CHECK_THROWS_WITH(make(R"({"optimizer": "none"})"), Contains("no optimizer state to offload"));
  CHECK_THROWS_WITH(make(R"({"hardware": "v100-sxm2", "parallelism": {"strategy": "zero3", "offload_optimizer": {"device": "nvme"}}})"),
                    Contains("needs NVMe drives on profile 'v100-sxm2'"));
  CHECK_THROWS_WITH(make(R"({"parallelism": {"offload_optimizer": {"device": "gpu"}}})"), Contains("cpu"));
}

TEST_CASE("offload: PCIe, CPU and NVMe prices follow the host facts and their sharing", "[hardware][offload]") {
  hardware::HardwareProfile hw = hardware::load_profile("a100-sxm", "test", "");
  REQUIRE(hw.host.present());
  hardware::StepCostModel cost(hw, {}, hardware::CollectiveAlgorithm::Auto);
  const sim::Task h2d = host_task("h2d", hardware::OpCode::HostToDevice, 25e9, kComputeStream, Phase::Optimizer);
  CHECK(cost.seconds(h2d) == Approx(1.0));  // one GPU alone: 25 GB/s
  cost.set_host_ranks(8);
  CHECK(cost.seconds(h2d) == Approx(2.0));  // 2 GPUs share each switch's uplink
  const sim::Task adam = host_task("adam", hardware::OpCode::CpuOptimizer, 4 * 1.4e9, kHostStream, Phase::Optimizer);
  CHECK(cost.seconds(adam) == Approx(8.0));  // the node's rate shared by 8 ranks
  const sim::Task read = host_task("read", hardware::OpCode::NvmeRead, 10e9, kHostStream, Phase::Optimizer);
  CHECK(cost.seconds(read) == Approx(8.0));
  // A profile without host facts refuses the task by name.
  hardware::StepCostModel tpu(hardware::load_profile("tpu-v5p", "test", ""), {}, hardware::CollectiveAlgorithm::Auto);
  CHECK_THROWS_WITH(tpu.seconds(h2d), Contains("task 'h2d' needs the profile's PCIe bandwidth"));
}

namespace {

// Llama-3-8B under FSDP2 on one node of 8 H100 with CPUOffloadPolicy.
Scenario fsdp(const std::string& patch) {
  auto doc = nlohmann::json::parse(R"({"model": "llama3-8b", "hardware": "h100-sxm",
      "parallelism": {"strategy": "fsdp", "dp": 8, "cpu_offload": true}, "batch": {"micro_batch_size": 1, "seq_len": 4096}})");
  doc.merge_patch(nlohmann::json::parse(patch));
  return parse_scenario(doc, "test.json");
}

}  // namespace

TEST_CASE("offload: FSDP's CPU offload copies each shard in before its AllGather and each gradient out (§E8)",
          "[models][offload]") {
  // Without resharding after forward every unit is gathered once per step.
  const Scenario s = fsdp(R"({"parallelism": {"reshard_after_forward": false}})");
  const Report r = run(s);
  const double e = static_cast<double>(s.model.trainable_parameter_count()) / 8.0;
  REQUIRE(r.offload.present);
  CHECK(r.offload.h2d_bytes == Approx(4 * e).epsilon(1e-12));  // the fp32 shard, in its original dtype
  CHECK(r.offload.d2h_bytes == Approx(4 * e).epsilon(1e-12));  // the reduced shard cast to fp32
  // torch's Adam on the CPU shards: DeepSpeedCPUAdam's 1.4e9/s per node x 8.2/56 (PR #735), over 8 ranks.
  CHECK(r.offload.cpu_optimizer_time_s == Approx(e / (1.4e9 * 8.2 / 56 / 8)).epsilon(1e-9));
  CHECK(r.optimizer_time_s == 0);
  // Resharded after forward (the default), the blocks are gathered again in backward: more copies in.
  const Report again = run(fsdp("{}"));
  CHECK(again.offload.h2d_bytes > 1.5 * r.offload.h2d_bytes);
  CHECK(again.offload.d2h_bytes == r.offload.d2h_bytes);
  // The GPU keeps no sharded state; the host holds fp32 shard, gradient and Adam's m and v.
  const MemoryBreakdown m = static_memory(s);
  CHECK(m.params_bytes + m.grads_bytes + m.optimizer_bytes == 0);
  CHECK(m.host_bytes == Approx(8 * 16 * e).epsilon(1e-12));
  // Offload trades memory for time: the same step without it is faster and holds more.
  const Report none = run(fsdp(R"({"parallelism": {"reshard_after_forward": false, "cpu_offload": false}})"));
  CHECK(none.step_time_s < r.step_time_s);
  CHECK(none.memory.total_bytes > r.memory.total_bytes);
}

TEST_CASE("offload: HSDP copies each gradient shard out after the replicas' AllReduce", "[models][offload]") {
  const Scenario s = fsdp(R"({"parallelism": {"strategy": "hsdp", "dp": 16, "shard_group_size": 8}})");
  const Report r = run(s);
  const double e = static_cast<double>(s.model.trainable_parameter_count()) / 8.0;  // shard over the group of 8
  CHECK(r.offload.d2h_bytes == Approx(4 * e).epsilon(1e-12));
  CHECK(r.memory.host_bytes == Approx(8 * 16 * e).epsilon(1e-12));
}

TEST_CASE("offload: FSDP's CPU offload is refused where it cannot be priced", "[models][offload]") {
  CHECK_THROWS_WITH(fsdp(R"({"hardware": "tpu-v5p"})"), Contains("needs the host facts of profile 'tpu-v5p'"));
  CHECK_THROWS_WITH(fsdp(R"({"parallelism": {"strategy": "ddp"}})"),
                    Contains("'cpu_offload' does not apply to strategy 'ddp'"));
}

TEST_CASE("offload: ZeRO-Infinity's offload_param copies each fetched partition to the GPU first (§E5, §E6)",
          "[models][offload]") {
  const Scenario opt = make(R"({"parallelism": {"strategy": "zero3", "overlap_comm": null}})");
  const Scenario both = make(R"({"parallelism": {"strategy": "zero3", "overlap_comm": null, "offload_param": {"device": "cpu"}}})");
  const Report r = run(both);
  const double e = partition(both);
  double gathered = 0;  // every fetch's AllGather, as nccl-tests counts it
  for (const auto& c : r.collectives)
    if (c.op == "AllGather") gathered += c.bytes * static_cast<double>(c.count);
  // Each fetch brings this rank's 1/64 of what it gathers; the gradient comes back once (2 B, as
  // without offload_param); the fp32-to-16-bit copy after the step stays on the host.
  CHECK(r.offload.h2d_bytes == Approx(2 * e + gathered / 64).epsilon(1e-9));
  CHECK(r.offload.d2h_bytes == Approx(6 * e).epsilon(1e-12));
  // The 16-bit partitions leave the GPU (persistent small tensors stay) for the host.
  const MemoryBreakdown mo = static_memory(opt), mb = static_memory(both);
  CHECK(mo.params_bytes - mb.params_bytes > 0.99 * 2 * static_cast<double>(both.model.trainable_parameter_count()) / 64);
  CHECK(mb.host_bytes - mo.host_bytes == Approx(8 * (mo.params_bytes - mb.params_bytes)).epsilon(1e-12));
  // On NVMe: each fetch reads the partition first, and the step writes the new one back.
  const Report nvme = run(make(R"({"parallelism": {"strategy": "zero3", "overlap_comm": null,
      "offload_param": {"device": "nvme"}}})"));
  CHECK(nvme.offload.nvme_read_bytes == Approx(gathered / 64).epsilon(1e-9));
  CHECK(nvme.offload.nvme_write_bytes == Approx(2 * e).epsilon(1e-12));
  CHECK(nvme.step_time_s > r.step_time_s);
  CHECK_THROWS_WITH(make(R"({"parallelism": {"strategy": "zero3", "overlap_comm": null, "offload_optimizer": null,
      "offload_param": {"device": "cpu"}}})"), Contains("without offload_optimizer is not modelled"));
  CHECK_THROWS_WITH(make(R"({"parallelism": {"offload_param": {"device": "cpu"}}})"),
                    Contains("'offload_param' does not apply to strategy 'zero2'"));
}

// ---- checkpoints (issue 17 item 3; semantics-parallel.md §F) ----

TEST_CASE("checkpoint: DeepSpeed's sharded files (§F5) and their time", "[models][checkpoint]") {
  const Scenario s = make(R"({"parallelism": {"offload_optimizer": null},
      "checkpoint": {"interval": 100, "storage_write_bytes_per_s": "20GB/s"}})");
  const Report r = run(s);
  REQUIRE(r.checkpoint_present);
  const CheckpointCost& c = r.checkpoint;
  const double psi = static_cast<double>(s.model.trainable_parameter_count());
  // bf16 weights (2 B) + fp32 master, m, v (12 B); DP rank 0 also writes the module's state.
  CHECK(c.state_bytes == Approx(14 * psi).epsilon(1e-12));
  CHECK(c.total_bytes == Approx(14 * psi).epsilon(1e-12));
  CHECK(c.max_rank_bytes == Approx(2 * psi + 12 * psi / 64).epsilon(1e-12));
  // Node 0 writes rank 0's file and 7 partitions: faster storage than its own drives would need.
  // Staged over PCIe (12.5 GB/s per GPU while the pair behind a switch copies), written at 20 GB/s.
  CHECK(c.stage_s == Approx(c.max_rank_bytes / 12.5e9).epsilon(1e-12));
  CHECK(c.write_s == Approx(14 * psi / 20e9).epsilon(1e-12));
  CHECK(c.amortised_s == Approx((c.stage_s + c.write_s) / 100).epsilon(1e-12));
  // The step itself is what it was.
  const Report none = run(make(R"({"parallelism": {"offload_optimizer": null}})"));
  CHECK(none.step_time_s == r.step_time_s);
  CHECK_FALSE(none.checkpoint_present);
}

TEST_CASE("checkpoint: DCP writes each FSDP shard once and spreads DDP's replicas (§F1)", "[models][checkpoint]") {
  const Scenario f = fsdp(R"({"parallelism": {"cpu_offload": false}, "checkpoint": {}})");
  const double psi = static_cast<double>(f.model.trainable_parameter_count());
  const CheckpointCost cf = run(f).checkpoint;
  // FSDP's shards are the fp32 originals (4 B) and Adam keeps m and v (8 B): 12 B per parameter.
  CHECK(cf.max_rank_bytes == Approx(12 * psi / 8).epsilon(1e-12));
  CHECK(cf.total_bytes == Approx(12 * psi).epsilon(1e-12));
  CHECK(cf.interval == 500);  // torchtitan's default
  // The default storage: the node's own NVMe (5 GB/s write on h100-sxm).
  CHECK(cf.storage_write_bytes_per_s == 5e9);
  // One node writes it all to its own drives: at their 5 GB/s.
  CHECK(cf.write_s == Approx(12 * psi / 5e9).epsilon(1e-12));
  // DDP holds everything everywhere (bf16 weights, fp32 master, m, v: 14 B); dedup_save_plans
  // spreads the one copy over the 8 ranks.
  const CheckpointCost cd =
      run(fsdp(R"({"parallelism": {"strategy": "ddp", "cpu_offload": null}, "checkpoint": {}})")).checkpoint;
  CHECK(cd.max_rank_bytes == Approx(14 * psi / 8).epsilon(1e-12));
  CHECK(cd.total_bytes == Approx(14 * psi).epsilon(1e-12));
  // model_only: the weights alone, in float32 as torchtitan exports them.
  const CheckpointCost cm = run(fsdp(R"({"parallelism": {"cpu_offload": false}, "checkpoint": {"model_only": true}})")).checkpoint;
  CHECK(cm.state_bytes == Approx(4 * psi).epsilon(1e-12));
  // Under tensor parallelism the checkpoint is still the whole model's.
  const CheckpointCost ct = run(fsdp(R"({"parallelism": {"cpu_offload": false, "tp": 2, "dp": 4}, "checkpoint": {}})")).checkpoint;
  CHECK(ct.total_bytes == Approx(cf.total_bytes).epsilon(1e-9));
}

TEST_CASE("checkpoint: a full state dict gathers everything into rank 0's host memory (§F2, §F3)", "[models][checkpoint]") {
  const Scenario s = fsdp(R"({"parallelism": {"cpu_offload": false}, "checkpoint": {"format": "full"}})");
  const Report r = run(s);
  const CheckpointCost& c = r.checkpoint;
  const double psi = static_cast<double>(s.model.trainable_parameter_count());
  CHECK(c.rank0_host_bytes == Approx(12 * psi).epsilon(1e-12));
  CHECK(c.gather_bytes == Approx(12 * psi).epsilon(1e-12));
  CHECK(c.gather_s > 12 * psi * 7 / 8 / 450e9);  // at most NVLink's 450 GB/s per GPU
  CHECK(c.stage_s == Approx(12 * psi / 52.8e9).epsilon(1e-12));  // rank 0 alone, device to host
  CHECK(c.write_s == Approx(12 * psi / 5e9).epsilon(1e-12));    // one writer, one node's drives
  // Slower than sharded: one writer instead of eight, and the gather.
  CHECK(c.save_s > run(fsdp(R"({"parallelism": {"cpu_offload": false}, "checkpoint": {}})")).checkpoint.save_s);
  // The seeds' warning: rank 0's CPU memory must hold it all.
  const Report small = run(fsdp(R"({"parallelism": {"cpu_offload": false}, "checkpoint": {"format": "full"},
      "hardware": {"base": "h100-sxm", "host": {"memory_bytes": "50GB"}}})"));
  bool warned = false;
  for (const auto& w : small.warnings) warned = warned || w.find("into rank 0's host memory") != std::string::npos;
  CHECK(warned);
}

TEST_CASE("checkpoint: refused where it is not defined or cannot be priced", "[models][checkpoint]") {
  CHECK_THROWS_WITH(make(R"({"checkpoint": {"format": "full"}})"), Contains("zero_to_fp32.py"));
  CHECK_THROWS_WITH(fsdp(R"({"hardware": "h100-hbm2e-500w", "parallelism": {"cpu_offload": false}, "checkpoint": {}})"),
                    Contains("a storage write bandwidth is needed"));
  CHECK_THROWS_WITH(fsdp(R"({"hardware": "tpu-v5p", "parallelism": {"cpu_offload": false}, "checkpoint": {}})"),
                    Contains("checkpoints need the host facts"));
  CHECK_THROWS_WITH(fsdp(R"({"parallelism": {"cpu_offload": false}, "checkpoint": {"interval": 0}})"), Contains("interval"));
}
