// SPDX-License-Identifier: Apache-2.0
// StepCostModel: roofline for kernels, α-β for collectives, replay for measured times.
#include "hardware/task_cost.hpp"

#include "hardware/compute_model.hpp"
#include "sim/support/error.hpp"

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

StepCostModel::StepCostModel(HardwareProfile hw, std::vector<GroupShape> groups,
                             CollectiveAlgorithm algorithm,
                             std::shared_ptr<const CalibrationOverlay> calibration, CollectiveModel model)
    : hw_(std::move(hw)), groups_(std::move(groups)), algorithm_(algorithm),
      calibration_(std::move(calibration)), model_(model) {
  STEPSIM_ASSERT(!calibration_ || calibration_->tables.empty() || model_ == CollectiveModel::AlphaBeta,
                 "a calibration overlay needs the alpha-beta cost model");
}

CollectiveCost StepCostModel::collective(const sim::Task& task) const {
  STEPSIM_ASSERT(task.group < groups_.size(), "task '{}' names unknown group {}", task.name, task.group);
  const CollectiveOp op = collective_of(static_cast<OpCode>(task.op));
  if (!calibration_ || calibration_->tables.empty()) return model_collective_cost(model_, hw_, op, task.bytes, groups_[task.group], algorithm_);
  return calibrated_collective_cost(hw_, calibration_.get(), op, task.bytes, groups_[task.group], algorithm_);
}

double StepCostModel::seconds(const sim::Task& task) const {
  if (is_collective(task.op)) return collective(task).time_s();
  switch (static_cast<OpCode>(task.op)) {
    case OpCode::Kernel: return kernel_time_s(hw_, task.flops, task.bytes);
    case OpCode::Fixed: return task.fixed_s;
    case OpCode::Layer: {
      const GemmCurve& curve = gemm_curve();
      if ((!curve.present() && host_op_s_ == 0) || task.work == sim::kNoWork)
        return sequence_time_s(hw_, task.flops, task.bytes);
      STEPSIM_ASSERT(task.work < work_.size(), "task '{}' names unknown work {}", task.name, task.work);
      return kernel_work_time_s(hw_, curve, work_[task.work], task.work_share, task.flops, task.bytes, host_op_s_);
    }
    default: break;
  }
  throw InternalError("task '" + task.name + "' has unknown op code " + std::to_string(task.op));
}

sim::Time StepCostModel::duration(const sim::Task& task) const {
  const double s = seconds(task);
  try {
    return sim::Time::from_seconds(s);
  } catch (const InputError& e) {
    throw InputError(hw_.name, "", fmt::format("task '{}' would take {:g} s: {}", task.name, s, e.detail()));
  }
}

}  // namespace stepsim::hardware
