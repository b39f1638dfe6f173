// SPDX-License-Identifier: Apache-2.0
// Float8 linear layers (rules and sources in float8.hpp).
#include "models/float8.hpp"

#include "models/tensor_parallel.hpp"

#include <cmath>

namespace stepsim::models {

namespace {

bool multiple_of_16(double v) { return std::fmod(v, 16.0) == 0; }

}  // namespace

bool float8_gemm(const Scenario& s, const LayerSpec& layer, const LayerGemm& g) {
  // Routed experts are grouped-GEMM parameters, not nn.Linear modules: torchao's
  // convert_to_float8_training swaps nn.Linear only, so they stay in the parameter dtype.
  return s.precision.float8 != PrecisionConfig::Float8::None && !layer.root && g.kind == LayerGemm::Kind::Linear &&
         g.experts == 0 && multiple_of_16(g.n) && multiple_of_16(g.k);
}

std::size_t float8_linear_count(const Scenario& s, std::size_t layer) {
  const LayerSpec& l = s.model.layers.at(layer);
  std::size_t n = 0;
  for (const auto& g : l.gemms) n += float8_gemm(s, l, g) ? 1 : 0;
  return n;
}

Float8Linears float8_linear_total(const Scenario& s) {
  Float8Linears t;
  for (std::size_t l = 0; l < s.model.layers.size(); ++l) {
    const std::size_t n = float8_linear_count(s, l);
    t.linears += n;
    t.layers += n > 0 ? 1 : 0;
  }
  return t;
}

bool float8_weight(const Scenario& s, std::size_t layer, std::size_t param) {
  const LayerSpec& l = s.model.layers.at(layer);
  for (const auto& g : l.gemms)
    if (g.param == static_cast<std::int64_t>(param) && float8_gemm(s, l, g)) return true;
  return false;
}

double all_gather_bytes_per_element(const Scenario& s, std::size_t layer, std::size_t param) {
  if (s.precision.float8_all_gather && float8_weight(s, layer, param)) return 1.0;
  return dtype_bytes(s.model.layers.at(layer).params.at(param).dtype);
}

Float8Casts float8_casts(const Scenario& s, std::size_t layer) {
  Float8Casts c;
  const LayerSpec& l = s.model.layers.at(layer);
  const double tokens = static_cast<double>(s.tokens_per_micro_batch());
  const bool gathered = s.precision.float8_all_gather;
  // torch.compile fuses each amax and each scaled cast into one kernel; eager runs them op by op.
  const bool eager = s.framework.eager();
  const double cast = eager ? 17 : 5, cast_kernels = eager ? 5 : 2;
  const double rescale = eager ? 11 : 3, rescale_kernels = eager ? 3 : 1;
  // Tensor parallelism (torchtitan's apply_tp under float8 tensorwise: PrepareFloat8ModuleInput
  // on the attention and feed-forward modules, Float8ColwiseParallel on their linears; torchao
  // float8_tensor_parallel.py): the input of each TP region is cast once, on the rank's
  // sequence shard, and all-gathered in float8; its column-parallel linears (input width =
  // hidden) cast nothing more in forward.
  const std::int64_t tp = s.parallelism.tp;
  const bool tp_regions = tp > 1 && l.tp_linear_pairs > 0 && float8_linear_count(s, layer) > 0;
  const double hidden = tp_regions ? static_cast<double>(tensor_parallel_hidden(s.model)) : 0.0;
  if (tp_regions) {
    c.fwd_bytes += l.tp_linear_pairs * cast * (tokens / static_cast<double>(tp)) * hidden;
    c.fwd_kernels += l.tp_linear_pairs * cast_kernels;
  }
  for (const auto& g : l.gemms) {
    if (!float8_gemm(s, l, g)) continue;
    const double x = tokens * g.k, w = g.k * g.n, dy = tokens * g.n;
    const bool input_cast = !(tp_regions && g.k == hidden);
    c.fwd_bytes += (input_cast ? cast * x : 0.0) + (gathered ? 0.0 : cast * w);
    c.fwd_kernels += cast_kernels * ((input_cast ? 1 : 0) + (gathered ? 0 : 1));
    c.bwd_bytes += cast * dy + 2 * dy + rescale * x + (gathered ? 2.0 : rescale) * w;
    c.bwd_kernels += cast_kernels + 1 + rescale_kernels + (gathered ? 1 : rescale_kernels);
  }
  return c;
}

}  // namespace stepsim::models
