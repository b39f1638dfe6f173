// SPDX-License-Identifier: Apache-2.0
// StepCostModel: roofline for kernels, α-β for collectives, replay for measured times.
#include "hardware/task_cost.hpp"

#include "hardware/compute_model.hpp"
#include "sim/support/error.hpp"

#include <algorithm>

namespace stepsim::hardware {

CollectiveOp collective_of(OpCode code) {
  switch (code) {
    case OpCode::AllReduce: return CollectiveOp::AllReduce;
    case OpCode::ReduceScatter: return CollectiveOp::ReduceScatter;
    case OpCode::AllGather: return CollectiveOp::AllGather;
    default: break;
  }
  throw InternalError("collective_of: not a collective op code");
}

OpCode opcode_of(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::AllReduce: return OpCode::AllReduce;
    case CollectiveOp::ReduceScatter: return OpCode::ReduceScatter;
    case CollectiveOp::AllGather: return OpCode::AllGather;
  }
  return OpCode::AllReduce;
}

bool is_collective(std::uint32_t op) {
  return op >= static_cast<std::uint32_t>(OpCode::AllReduce) &&
         op <= static_cast<std::uint32_t>(OpCode::AllGather);
}

bool is_p2p(std::uint32_t op) { return op == static_cast<std::uint32_t>(OpCode::SendRecv); }

bool is_all_to_all(std::uint32_t op) { return op == static_cast<std::uint32_t>(OpCode::AllToAll); }

bool is_transfer_op(std::uint32_t op) { return is_collective(op) || is_p2p(op) || is_all_to_all(op); }

bool is_host_op(std::uint32_t op) {
  return op >= static_cast<std::uint32_t>(OpCode::HostToDevice) &&
         op <= static_cast<std::uint32_t>(OpCode::CpuTorchOptimizer);
}

double StepCostModel::host_seconds(const sim::Task& task) const {
  const HostFacts& h = hw_.host;
  const auto need = [&](bool ok, const char* what) {
    if (!ok)
      throw InputError(hw_.name, "/host", fmt::format("task '{}' needs the profile's {} (host.*), and it has none",
                                                      task.name, what));
  };
  const double ranks = static_cast<double>(host_ranks_);
  switch (static_cast<OpCode>(task.op)) {
    case OpCode::HostToDevice: need(h.present(), "PCIe bandwidth"); return task.bytes / h.shared_h2d_bytes_per_s(host_ranks_);
    case OpCode::DeviceToHost: need(h.present(), "PCIe bandwidth"); return task.bytes / h.shared_d2h_bytes_per_s(host_ranks_);
    case OpCode::CpuOptimizer:
      need(h.cpu_adam_params_per_s > 0, "CPU Adam rate");
      return task.bytes / 4.0 / (h.cpu_adam_params_per_s / ranks);
    case OpCode::CpuTorchOptimizer:
      need(h.cpu_adam_params_per_s > 0, "CPU Adam rate");
      return task.bytes / 4.0 / (h.cpu_adam_params_per_s * kTorchCpuAdamFraction / ranks);
    case OpCode::NvmeRead: need(h.has_nvme(), "NVMe bandwidth"); return task.bytes / (h.nvme_read_bytes_per_s / ranks);
    case OpCode::NvmeWrite: need(h.has_nvme(), "NVMe bandwidth"); return task.bytes / (h.nvme_write_bytes_per_s / ranks);
    default: break;
  }
  throw InternalError("task '" + task.name + "' is not an offload task");
}

StepCostModel::StepCostModel(HardwareProfile hw, std::vector<GroupShape> groups,
                             CollectiveAlgorithm algorithm,
                             std::shared_ptr<const CalibrationOverlay> calibration, CollectiveModel model,
                             Contention contention)
    : hw_(std::move(hw)), groups_(std::move(groups)), algorithm_(algorithm),
      calibration_(std::move(calibration)), curve_(effective_gemm_curve(hw_, calibration_.get())), model_(model),
      contention_(contention) {
  STEPSIM_ASSERT(contention_.compute_slowdown >= 1, "compute slowdown {} < 1", contention_.compute_slowdown);
  STEPSIM_ASSERT(!calibration_ || calibration_->tables.empty() || model_ == CollectiveModel::AlphaBeta,
                 "a calibration overlay needs the alpha-beta cost model");
}

CollectiveCost StepCostModel::collective(const sim::Task& task) const {
  STEPSIM_ASSERT(task.group < groups_.size(), "task '{}' names unknown group {}", task.name, task.group);
  if (is_p2p(task.op)) return p2p_cost(hw_, task.bytes, groups_[task.group]);
  if (is_all_to_all(task.op)) {
    // Inside the node at the bus bandwidth this cost model gives NCCL's ring AllGather on the
    // group's GPUs of one node (all_to_all_cost).
    const GroupShape& group = groups_[task.group];
    const int g = std::min(group.ranks_per_node, group.ranks);
    double intra = 0;
    if (g > 1 && task.bytes > 0) {
      const CollectiveCost ag = model_collective_cost(model_, hw_, CollectiveOp::AllGather, task.bytes,
                                                      GroupShape{g, g, 0, 1}, CollectiveAlgorithm::Ring);
      if (ag.bandwidth_s > 0) intra = task.bytes * static_cast<double>(g - 1) / g / ag.bandwidth_s;
    }
    return all_to_all_cost(hw_, task.bytes, group, intra);
  }
  const CollectiveOp op = collective_of(static_cast<OpCode>(task.op));
  if (!calibration_ || calibration_->tables.empty()) return model_collective_cost(model_, hw_, op, task.bytes, groups_[task.group], algorithm_);
  return calibrated_collective_cost(hw_, calibration_.get(), op, task.bytes, groups_[task.group], algorithm_);
}

StepCostModel::CollectiveTiming StepCostModel::collective_timing(const sim::Task& task) const {
  if (const auto it = collective_cache_.find(CollectiveKey{task.op, task.group, task.bytes}); it != collective_cache_.end())
    return it->second;
  const CollectiveCost c = collective(task);
  return CollectiveTiming{c.latency_s, c.bandwidth_s, c.intra_share, c.inter_share};
}

void StepCostModel::cache_collectives(const sim::TaskGraph& graph) {
  for (sim::TaskId id = 0; id < graph.size(); ++id) {
    const sim::Task& t = graph.task(id);
    if (!is_transfer_op(t.op)) continue;
    const CollectiveKey key{t.op, t.group, t.bytes};
    if (!collective_cache_.count(key)) collective_cache_.emplace(key, collective_timing(t));
  }
}

bool StepCostModel::kernel_list_applies(const sim::Task& task) const {
  if (task.work == sim::kNoWork) return false;
  STEPSIM_ASSERT(task.work < work_.size(), "task '{}' names unknown work {}", task.name, task.work);
  // The kernel list matters with a GEMM curve, a host cost per op, a measured attention
  // kernel, or GEMMs in another arithmetic than BF16/FP16 (their own peak).
  const KernelWork& w = work_[task.work];
  return gemm_curve().present() || host_op_s_ > 0 || !w.attention.empty() || w.other_math();
}

double StepCostModel::seconds(const sim::Task& task) const {
  if (is_transfer_op(task.op)) {
    const CollectiveTiming c = collective_timing(task);
    return c.latency_s + c.bandwidth_s;
  }
  if (is_host_op(task.op)) return host_seconds(task);
  switch (static_cast<OpCode>(task.op)) {
    case OpCode::Kernel: return kernel_time_s(hw_, task.flops, task.bytes);
    case OpCode::Fixed: return task.fixed_s;
    case OpCode::Layer: {
      if (!kernel_list_applies(task)) return sequence_time_s(hw_, task.flops, task.bytes);
      return kernel_work_split(hw_, totals_[task.work], task.work_share, task.flops, task.bytes, host_op_s_).time_s();
    }
    default: break;
  }
  throw InternalError("task '" + task.name + "' has unknown op code " + std::to_string(task.op));
}

KernelWorkSplit StepCostModel::split(const sim::Task& task) const {
  KernelWorkSplit out;
  if (is_transfer_op(task.op) || is_host_op(task.op)) return out;
  auto flat = [&] {
    out.gemm_s = task.flops / (hw_.sustained_flops_per_s() * hw_.gemm_efficiency);
    out.streaming_s = streaming_time_s(hw_, task.bytes);
  };
  switch (static_cast<OpCode>(task.op)) {
    case OpCode::Kernel: {  // the roofline's max: the whole time goes to the bounding term
      flat();
      if (out.gemm_s >= out.streaming_s) out.streaming_s = 0;
      else out.gemm_s = 0;
      return out;
    }
    case OpCode::Fixed: return out;
    case OpCode::Layer:
      if (!kernel_list_applies(task)) {
        flat();
        return out;
      }
      return kernel_work_split(hw_, totals_[task.work], task.work_share, task.flops, task.bytes, host_op_s_);
    default: break;
  }
  throw InternalError("task '" + task.name + "' has unknown op code " + std::to_string(task.op));
}

namespace {

// Resource ids of the offload tasks (work()): past the 2·rank and 2·rank + 1 link resources.
constexpr std::uint32_t kHostResourceBase = 0x80000000u;

sim::Time to_time(const std::string& profile, const sim::Task& task, double s) {
  try {
    return sim::Time::from_seconds(s);
  } catch (const InputError& e) {
    throw InputError(profile, "", fmt::format("task '{}' would take {:g} s: {}", task.name, s, e.detail()));
  }
}

}  // namespace

sim::Time StepCostModel::duration(const sim::Task& task) const { return to_time(hw_.name, task, seconds(task)); }

sim::Work StepCostModel::work(const sim::Task& task) const {
  const bool slowdown = contention_.compute_slowdown > 1;
  if (is_host_op(task.op)) {
    // Copies, the CPU step and NVMe I/O of one rank: tasks of the same kind on a rank share
    // its resource (its PCIe direction, its CPU share, its NVMe share) by max-min fairness.
    sim::Work w{sim::Time(), duration(task)};
    if (contention_.link_sharing && w.variable > sim::Time())
      w.add_use(kHostResourceBase + 8 * task.rank +
                    (task.op == static_cast<std::uint32_t>(OpCode::CpuTorchOptimizer)
                         ? static_cast<std::uint32_t>(OpCode::CpuOptimizer) - static_cast<std::uint32_t>(OpCode::HostToDevice)
                         : task.op - static_cast<std::uint32_t>(OpCode::HostToDevice)),
                1.0);
    return w;
  }
  if (!is_transfer_op(task.op)) {
    sim::Work w{sim::Time(), duration(task)};
    if (slowdown && task.kind == sim::TaskKind::Compute) {
      w.domain = task.rank;
      w.slowdown = contention_.compute_slowdown;
    }
    return w;
  }
  const CollectiveTiming c = collective_timing(task);
  const sim::Time total = to_time(hw_.name, task, c.latency_s + c.bandwidth_s);
  sim::Work w;
  w.fixed = std::min(total, to_time(hw_.name, task, c.latency_s));
  w.variable = total - w.fixed;  // so that fixed + variable == duration(task) exactly
  if (total == sim::Time()) return w;
  if (contention_.link_sharing) {
    if (c.intra_share > 0) w.add_use(2 * task.rank, std::min(1.0, c.intra_share));
    if (c.inter_share > 0) w.add_use(2 * task.rank + 1, std::min(1.0, c.inter_share));
  }
  if (slowdown) {
    w.domain = task.rank;
    w.occupies = true;
  }
  return w;
}

}  // namespace stepsim::hardware
