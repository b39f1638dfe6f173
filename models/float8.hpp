// SPDX-License-Identifier: Apache-2.0
// Float8 training of linear layers as torchao runs it (issue 14 item 5; `precision.float8`):
// which GEMMs run in FP8, and what the dynamic scaling costs in memory-bound kernels.
//
// Rules (torchao float8, torchao/float8/README.md and docs "Quantized Training"; torchtitan
// `quantize.linear.float8`, torchtitan/components/quantization/float8.py):
//  * convert_to_float8_training swaps nn.Linear for Float8Linear; torchtitan converts the
//    transformer blocks' linears and skips the modules in filter_fqns (its llama3 configs list
//    "output", the LM head) and every linear with a dimension that is no multiple of 16.
//  * A Float8Linear runs its three GEMMs in FP8 (torch._scaled_mm, BF16 result):
//    output = X·Wᵀ, grad_input = dY·W, grad_weight = dYᵀ·X.
//  * Tensorwise dynamic scaling: each FP8 operand is made by an amax reduction over the bf16
//    tensor (read 2 B/elem) and a scaled cast (read 2, write 1): 5 B/elem in 2 kernels. The
//    backward GEMMs take their operands in the other major order (cuBLAS FP8 GEMMs are TN
//    only), so backward also writes transposed FP8 copies.
//  * With FSDP2 float8 all-gather (enable_fsdp_float8_all_gather +
//    precompute_float8_dynamic_scale_for_fsdp) the weight arrives already cast: no weight cast
//    per micro-batch; each rank casts its own shard once per all-gather.
//
// Costs per Float8Linear and micro-batch, with X = T·k input, W = k·n weight, dY = T·n output
// gradient elements (T tokens):
//   forward:  5·X (amax + cast of the input), 2 kernels; + 5·W, 2 kernels, without float8
//             all-gather.
//   backward: 5·dY (amax + cast), 2 kernels; 2·dY (its transposed FP8 copy), 1 kernel;
//             3·X (the saved bf16 input cast again, transposed, at the forward's scale),
//             1 kernel; 3·W (weight cast transposed; 2·W, an FP8 transpose, after a float8
//             all-gather), 1 kernel.
// These are torch.compile's kernels (framework.implementation "compile" or "megatron_te"), as
// torchtitan runs float8 ("required - fuses float8 scaling/casting kernels"). Under "eager"
// torchao's casts run op by op: amax = abs (read 2, write 2) + max (read 2), the cast = scale
// multiply (2 + 2), clamp (2 + 2), to(float8) (2 + 1): 17 B/elem in 5 kernels where compile
// takes 5 in 2, and 11 B in 3 kernels for a cast at a known scale where compile takes 3 in 1.
// Check against torchao's README (H100, forward + backward of one linear including the
// scaling): (M, K, N) = (4096, 8192, 16384) measured 1.39× faster than bf16; these rules on
// h100-sxm's curve give 1.4× (tests/models/float8_test.cpp); (1024, 2048, 1024) measured 0.80×,
// which they miss (1.3×): at that size the cast kernels' launch and tail costs, not their
// bytes, decide, and only a per-op host cost (framework.host_op_s) prices those.
// With tensor parallelism (parallelism.tp > 1; torchtitan's apply_tp under float8 tensorwise:
// PrepareFloat8ModuleInput on the attention and feed-forward modules and Float8ColwiseParallel
// on their column-parallel linears, torchao float8_tensor_parallel.py) each TP region's input is
// cast once on the rank's T/tp sequence shard, 5·(T/tp)·hidden, 2 kernels, and gathered in
// float8 (models/tensor_parallel.hpp); its column-parallel linears cast no input of their own.
// Not modelled: under float8 all-gather each rank's cast of its own shard before each gather
// (3 B per shard element: for Llama 3.1 8B on 8 GPUs about 2 ms of a 2 s step) and the amax
// all-reduce of precompute_float8_dynamic_scale_for_fsdp (one small collective per step).
#pragma once

#include "models/model_spec.hpp"
#include "models/scenario.hpp"

#include <cstddef>

namespace stepsim::models {

/// True when gemm `g` of layer `layer` runs in FP8 under s.precision.float8 (rules above):
/// float8 on, a Linear GEMM of a transformer block (non-root layer), n and k multiples of 16.
bool float8_gemm(const Scenario& s, const LayerSpec& layer, const LayerGemm& g);

/// Float8Linear modules in layer `layer` (0 without float8). Precondition: layer in range.
std::size_t float8_linear_count(const Scenario& s, std::size_t layer);

/// Float8Linear modules in the whole model, and the layers that hold at least one.
struct Float8Linears {
  std::size_t linears = 0, layers = 0;
};
Float8Linears float8_linear_total(const Scenario& s);

/// True when parameter `param` of layer `layer` is the weight of a Float8Linear.
bool float8_weight(const Scenario& s, std::size_t layer, std::size_t param);

/// Bytes per element FSDP all-gathers parameter `param` of layer `layer` in: 1 for a
/// Float8Linear weight under precision.float8_all_gather, else its dtype's.
double all_gather_bytes_per_element(const Scenario& s, std::size_t layer, std::size_t param);

/// The dynamic-scaling kernels of one layer for one micro-batch (rules above): HBM bytes and
/// kernel launches of the forward and of the backward (without recomputation; the caller
/// adds what recomputation casts again).
struct Float8Casts {
  double fwd_bytes = 0, fwd_kernels = 0;
  double bwd_bytes = 0, bwd_kernels = 0;
};
Float8Casts float8_casts(const Scenario& s, std::size_t layer);

}  // namespace stepsim::models
