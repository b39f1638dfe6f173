// SPDX-License-Identifier: Apache-2.0
// The strategy registry: an explicit table, one row per family.
#include "models/strategy/strategy.hpp"

#include "sim/support/error.hpp"

namespace stepsim::models {

const std::vector<StrategyEntry>& strategy_registry() {
  static const std::vector<StrategyEntry> table = {
      {"ddp",
       "PyTorch DDP: gradient buckets in ready order (first 1 MiB, then bucket_cap_mb), "
       "in-order AllReduce on one NCCL stream overlapping backward, no_sync accumulation",
       &lower_ddp},
  };
  return table;
}

const StrategyEntry& find_strategy(const std::string& name) {
  for (const auto& e : strategy_registry())
    if (name == e.name) return e;
  throw InternalError("unknown strategy '" + name + "' passed validation");
}

}  // namespace stepsim::models
