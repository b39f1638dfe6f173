// SPDX-License-Identifier: Apache-2.0
// TaskCostModel for a training step: prices sim::Task work descriptions with the compute
// roofline and the α-β collective model of one HardwareProfile.
#pragma once

#include "hardware/calibration.hpp"
#include "hardware/collective_model.hpp"
#include "hardware/gemm_model.hpp"
#include "hardware/hardware_profile.hpp"
#include "hardware/nccl_model.hpp"
#include "sim/engine.hpp"
#include "sim/task_graph.hpp"

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

namespace stepsim::hardware {

/// Meaning of sim::Task::op for tasks priced by StepCostModel.
enum class OpCode : std::uint32_t {
  Kernel = 0,         ///< roofline of task.flops and task.bytes
  Fixed = 1,          ///< replays task.fixed_s (measured layer times)
  Layer = 2,          ///< a fused sequence of GEMMs (task.flops, or the shapes of task.work) and
                      ///< streaming kernels (task.bytes)
  AllReduce = 10,     ///< collective over groups[task.group] of task.bytes (nccl-tests size)
  ReduceScatter = 11,
  AllGather = 12,
  /// A point-to-point send of task.bytes from a peer to this rank over groups[task.group] (2
  /// ranks): pipeline parallelism's activations and their gradients (p2p_cost).
  SendRecv = 13,
  /// An all-to-all of task.bytes per rank over groups[task.group]: expert parallelism's token
  /// dispatch and combine (all_to_all_cost).
  AllToAll = 14,
  /// Offload (issue 17; shared/reference/semantics-parallel.md §E), host-side tasks
  /// (sim::TaskKind::Host) priced from the profile's HostFacts with the node's share of them
  /// (set_host_ranks): a copy of task.bytes host to device or device to host over the GPU's
  /// PCIe link, at HostFacts::shared_h2d/d2h_bytes_per_s of the GPUs that copy at once;
  HostToDevice = 20,
  DeviceToHost = 21,
  /// the CPU's optimizer step over task.bytes of fp32 master weights (4 bytes per parameter):
  /// (task.bytes / 4) / (cpu_adam_params_per_s / ranks on the node);
  CpuOptimizer = 22,
  /// a read or write of task.bytes on the node's NVMe drives, shared by its ranks.
  NvmeRead = 23,
  NvmeWrite = 24,
  /// PyTorch's own Adam on CPU tensors (FSDP's cpu_offload: the ordinary torch optimizer runs on
  /// the offloaded shards, semantics-parallel.md §E8): as CpuOptimizer at
  /// kTorchCpuAdamFraction of DeepSpeedCPUAdam's rate.
  CpuTorchOptimizer = 25,
};

/// torch.optim.Adam's rate on CPU tensors over DeepSpeedCPUAdam's: 8.2 s / 56 s for the same
/// 11.6B-parameter step (DeepSpeed PR #735; the cpu_adam.py docstring claims 5-7x).
inline constexpr double kTorchCpuAdamFraction = 8.2 / 56.0;

/// True for the offload codes (HostToDevice .. CpuTorchOptimizer).
bool is_host_op(std::uint32_t op);

/// Collective op of a collective OpCode. Precondition: code is a collective.
CollectiveOp collective_of(OpCode code);
/// OpCode of a collective op.
OpCode opcode_of(CollectiveOp op);
/// True for AllReduce / ReduceScatter / AllGather codes.
bool is_collective(std::uint32_t op);
/// True for the SendRecv code.
bool is_p2p(std::uint32_t op);
/// True for the AllToAll code.
bool is_all_to_all(std::uint32_t op);
/// True for every code that moves bytes between ranks: the collectives, SendRecv, AllToAll.
bool is_transfer_op(std::uint32_t op);

/// How the tasks of one rank interact while they run (sim::Work; semantics.md §E).
struct Contention {
  /// Collectives running at once on a rank share its links by max-min fairness: resource
  /// 2·rank is the rank's intra-node link (NVLink; ICI on a torus), 2·rank + 1 its share of the
  /// node's network egress, used in the proportions CollectiveCost::intra_share / inter_share.
  /// Only the bandwidth term is shared and stretched; the latency term (α: launch, per-step
  /// handshakes) runs first and keeps its length: it is spent waiting, not moving bytes.
  bool link_sharing = false;
  /// Compute tasks (kind Compute) run this many times slower while a collective kernel of
  /// their rank is running (≥ 1; 1 = off). Rule 96: 1.19 measured on average (Lee et al.,
  /// arXiv 2507.03114); rule 95's SM partition gives sm_partition_slowdown().
  double compute_slowdown = 1;
};

/// Prices tasks on one profile. `groups[i]` is the shape of communicator i (task.group).
/// With a calibration overlay, collectives take calibrated_collective_cost() (the nominal
/// α-β cost with the overlay's size-segment factors on top); without one,
/// model_collective_cost() of `model` (α-β collective_cost() or NCCL's tuner, nccl_model.hpp).
/// Precondition: with an overlay that has collective tables, model == CollectiveModel::AlphaBeta
/// (those are fitted over the α-β model; scenario and CLI parsing reject the mix). A GEMM-only
/// overlay leaves collectives to `model`.
class StepCostModel final : public sim::TaskCostModel {
 public:
  StepCostModel(HardwareProfile hw, std::vector<GroupShape> groups, CollectiveAlgorithm algorithm,
                std::shared_ptr<const CalibrationOverlay> calibration = nullptr,
                CollectiveModel model = CollectiveModel::AlphaBeta, Contention contention = {});
  /// Kernels of the Layer tasks: task.work indexes `work`. With a GEMM curve in effect
  /// (effective_gemm_curve(): the overlay's, else the profile's) or a host cost per op > 0, such
  /// a task takes kernel_work_time_s(work[task.work], task.work_share, task.flops, task.bytes,
  /// host_op_s); otherwise (or without work) flops / (peak · gemm_efficiency) + bytes / (hbm_bw ·
  /// hbm_efficiency), exactly as before shapes existed.
  /// Each work's kernels are priced once here (kernel_work_totals); tasks take their share.
  void set_kernel_work(std::vector<KernelWork> work, double host_op_s) {
    work_ = std::move(work);
    host_op_s_ = host_op_s;
    totals_.clear();
    totals_.reserve(work_.size());
    for (const KernelWork& w : work_) totals_.push_back(kernel_work_totals(hw_, curve_, w));
  }
  /// The GEMM curve in use (absent: flat gemm_efficiency).
  const GemmCurve& gemm_curve() const { return curve_; }
  /// @throws InputError naming the task when its duration is outside sim::Time's range.
  sim::Time duration(const sim::Task& task) const override;
  /// duration(task) split as the engine's fluid model needs it (see Contention): a collective
  /// is its latency term (fixed) then its bandwidth term (variable, on the rank's links when
  /// link sharing is on; occupies the rank while it runs when compute_slowdown > 1); a compute
  /// task is variable, slowed by compute_slowdown while its rank is occupied. fixed + variable
  /// == duration(task) exactly. @throws as duration().
  sim::Work work(const sim::Task& task) const override;
  /// True when link sharing or compute slowdown is on.
  bool interacts() const override { return contention_.link_sharing || contention_.compute_slowdown > 1; }
  const Contention& contention() const { return contention_; }
  /// Duration in seconds before rounding to picoseconds.
  double seconds(const sim::Task& task) const;
  /// Ranks of this job on one node (≥ 1): they share the node's CPU Adam rate and NVMe
  /// bandwidth evenly, and min(ranks, host.gpus_per_pcie_switch) of them one PCIe switch's
  /// uplink, as every rank offloads at once (the symmetric step). Default 1.
  void set_host_ranks(int ranks_on_node) { host_ranks_ = ranks_on_node < 1 ? 1 : ranks_on_node; }
  /// The GPU time of a compute task split by kernel class, as seconds() prices it alone (no
  /// contention): a Layer task's kernel_work_split (the flat roofline's flops and bytes terms
  /// without a kernel list in effect), a Kernel task's roofline time under the term that bounds
  /// it (GEMM when the FLOPs do, streaming when the bytes do). A Fixed or collective task
  /// splits into nothing (its time is not a kernel class stepsim knows).
  KernelWorkSplit split(const sim::Task& task) const;
  /// Closed-form cost of a collective task, or of a SendRecv task (p2p_cost; no calibration
  /// overlay applies to it), for reports.
  CollectiveCost collective(const sim::Task& task) const;
  const HardwareProfile& hardware() const { return hw_; }
  /// The overlay in use, or nullptr for the nominal model.
  const CalibrationOverlay* calibration() const { return calibration_.get(); }
  /// The nominal collective model in use.
  CollectiveModel collective_model() const { return model_; }
  /// Prices every collective and point-to-point task of `graph` once, by (op, group, bytes):
  /// duration() and work() read those times instead of re-running the collective model per
  /// task (a step repeats the same few collectives per layer and micro-batch). The table is
  /// read-only afterwards; a task outside it is priced as before. Same durations either way.
  /// @throws InputError as collective().
  void cache_collectives(const sim::TaskGraph& graph);

 private:
  /// The terms of collective(task) that duration() and work() read.
  struct CollectiveTiming {
    double latency_s = 0, bandwidth_s = 0, intra_share = 0, inter_share = 0;
  };
  struct CollectiveKey {
    std::uint32_t op = 0, group = 0;
    double bytes = 0;
    bool operator==(const CollectiveKey&) const = default;
  };
  struct CollectiveKeyHash {
    std::size_t operator()(const CollectiveKey& k) const noexcept {
      return std::hash<double>{}(k.bytes) ^ (static_cast<std::size_t>(k.op) << 32 | k.group) * 0x9e3779b97f4a7c15ull;
    }
  };
  CollectiveTiming collective_timing(const sim::Task& task) const;
  std::unordered_map<CollectiveKey, CollectiveTiming, CollectiveKeyHash> collective_cache_;
  /// True when a Layer task is priced from its kernel list (kernel_work_time_s) rather than
  /// the flat roofline of its flops and bytes.
  bool kernel_list_applies(const sim::Task& task) const;
  HardwareProfile hw_;
  std::vector<GroupShape> groups_;
  CollectiveAlgorithm algorithm_;
  std::shared_ptr<const CalibrationOverlay> calibration_;
  GemmCurve curve_;  ///< effective_gemm_curve(hw_, calibration_), once
  CollectiveModel model_ = CollectiveModel::AlphaBeta;
  Contention contention_;
  std::vector<KernelWork> work_;
  std::vector<KernelWorkTotals> totals_;  ///< kernel_work_totals of each work_, in order
  double host_op_s_ = 0;
  int host_ranks_ = 1;
  /// Seconds of an offload task (is_host_op). @throws InputError when the profile lacks the
  /// host fact it needs.
  double host_seconds(const sim::Task& task) const;
};

}  // namespace stepsim::hardware
