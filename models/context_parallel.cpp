// SPDX-License-Identifier: Apache-2.0
// Context-parallel transfers (rules in context_parallel.hpp).
#include "models/context_parallel.hpp"

#include "models/model_spec.hpp"
#include "models/recompute.hpp"
#include "models/scenario.hpp"
#include "models/strategy/strategy.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace stepsim::models {

std::string ContextParallelTransfer::label() const {
  return fmt::format("{}{}_{}", recompute ? "recompute_" : "", what, ring ? "ring" : "allgather");
}

double context_parallel_kv_bytes(const Scenario& s) {
  const TransformerShape& t = *s.model.transformer_shape;
  const double head_dim = static_cast<double>(t.head_dim > 0 ? t.head_dim : t.hidden / t.heads);
  const std::int64_t tp = s.parallelism.tp;
  const double kv_local = static_cast<double>((t.kv_heads + tp - 1) / tp);
  return 2.0 * static_cast<double>(s.tokens_per_micro_batch()) * kv_local * head_dim * dtype_bytes(s.precision.param_dtype);
}

const char* default_cp_comm_type(const Scenario& s) {
  return strategy_of(s).family == StrategyFamily::FSDP ? "allgather" : "p2p";
}

std::vector<ContextParallelTransfer> context_parallel_transfers(const Scenario& s, std::size_t layer, bool backward) {
  std::vector<ContextParallelTransfer> out;
  const std::int64_t cp = s.parallelism.cp;
  if (cp <= 1) return out;
  const LayerSpec& l = s.model.layers[layer];
  if (std::none_of(l.gemms.begin(), l.gemms.end(), [](const LayerGemm& g) { return g.attention(); })) return out;
  const double kv = context_parallel_kv_bytes(s);
  const int steps = static_cast<int>(cp - 1);
  const bool ring = s.parallelism.cp_comm_type == "p2p";
  // The forward's KV exchange: cp − 1 ring messages, or one AllGather (output cp × kv).
  const auto forward = [&](bool recompute) {
    if (ring) out.push_back({true, hardware::CollectiveOp::AllGather, steps, kv, "kv", recompute});
    else out.push_back({false, hardware::CollectiveOp::AllGather, 1, static_cast<double>(cp) * kv, "kv", recompute});
  };
  if (!backward) {
    forward(false);
    return out;
  }
  if (recompute_work(s, layer).attention > 0) forward(true);
  if (ring) {
    out.push_back({true, hardware::CollectiveOp::AllGather, steps, kv, "kv", false});
    out.push_back({true, hardware::CollectiveOp::AllGather, steps, kv, "dkv", false});
  } else {
    out.push_back({false, hardware::CollectiveOp::AllGather, 1, static_cast<double>(cp) * kv, "kv", false});
    // dK, dV accumulate in fp32 around the ring (convert_to_f32).
    out.push_back({true, hardware::CollectiveOp::AllGather, steps, kv * 4.0 / dtype_bytes(s.precision.param_dtype), "dkv",
                   false});
  }
  return out;
}

}  // namespace stepsim::models
