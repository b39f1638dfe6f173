// SPDX-License-Identifier: Apache-2.0
// Shape-dependent GEMM time: one curve for the nominal default (a profile's `compute.gemm_curve`)
// and for calibration (`stepsim calibrate gemm`, the overlay's `gemm` section).
//
// Form (per GEMM C[m,n] = A[m,k]·B[k,n], `batch` independent products, 2-byte operands):
//   waves    = ceil(m / tile_m) · ceil(n / tile_n) · batch / sms
//   w(shape) = waves / ceil(waves)                      wave quantization, ∈ (0, 1]
//   t        = overhead_s + max(2·m·n·k·batch / (peak(math) · max_efficiency(math) · w),
//                               bytes / (hbm_bw · hbm_efficiency))
//   bytes    = e·(m·k + k·n)·batch + e_out·m·n·batch     operands read once, result written once
// (e = e_out = 2 bytes for BF16/FP16, 4 for TF32/FP32; FP8: e = 1, e_out = 2; GemmShape::math)
// Wave quantization is NVIDIA's "Matrix Multiplication Background User's Guide" (GPU
// performance, §"Wave quantization": a grid of tiles runs in ceil(tiles / SMs) waves; a partial
// last wave costs as much as a full one). overhead_s is the fixed per-kernel cost (launch,
// prologue/epilogue, pipeline fill) that makes small GEMMs far slower than peak; max_efficiency
// is the fraction of peak a full wave of large tiles reaches. The achieved efficiency of a shape
// is 2·m·n·k·batch / (peak · t). Throughout, `peak` is HardwareProfile::sustained_flops_per_s():
// the datasheet peak scaled by the clock the part sustains under its power limit (the datasheet
// peak itself when the profile gives no clocks); gemm_efficiency() reports against the datasheet.
#pragma once

#include "hardware/hardware_profile.hpp"

#include <string>
#include <vector>

namespace stepsim::hardware {

/// One (batched) GEMM: C[m,n] = A[m,k]·B[k,n], `batch` times. Sizes are element counts (> 0).
/// `on_chip`: a matmul inside a fused kernel whose operands and result stay in shared memory
/// and registers (FlashAttention's QKᵀ and PV: Dao et al. 2022, the s×s scores never reach
/// HBM), priced by its FLOPs and waves only: no HBM term, no per-kernel overhead (the fused
/// kernel's launch is counted once with its layer's streaming kernels).
/// `math`: the arithmetic it runs in (HardwareProfile::peak_for gives its peak,
/// GemmCurve::max_efficiency_for its efficiency) and so its operand bytes: 2 per element for
/// Tensor16, 4 for Tf32 / Fp32, 1 for Fp8 operands with a 2-byte (BF16) result (torch._scaled_mm
/// as torchao's Float8Linear calls it).
/// `hbm_bytes` > 0 replaces that traffic where A is not a stored matrix: an implicit-GEMM
/// convolution builds its im2col rows on chip and reads the input, weight and output once
/// (models::LayerGemm::Conv).
/// `split_k`: the kernel may split the reduction across CTAs when its output tiles leave SMs
/// idle (split_k_factor), as cuDNN's convolution weight-gradient kernels split the
/// images × positions reduction ("Convolutional Layers User's Guide"; CUTLASS's split-K
/// and parallel-reduction GEMMs).
struct GemmShape {
  double m = 0, n = 0, k = 0;
  double batch = 1;
  bool on_chip = false;
  GemmMath math = GemmMath::Tensor16;
  double hbm_bytes = 0;
  bool split_k = false;
};

/// Smallest reduction slice a split-K kernel gives one CTA (elements of k).
inline constexpr double kSplitKMinSlice = 256;

/// Reduction splits s of a split_k GEMM: 1 when the tiles fill the SMs or the shape does not
/// allow a split, else min(floor(sms / tiles), floor(k / kSplitKMinSlice)), tiles =
/// ceil(m / tile_m)·ceil(n / tile_n)·batch. Each split writes an fp32 partial of C that a
/// reduction reads back: 2·4·(s − 1)·m·n·batch more HBM bytes (gemm_time_s).

/// Bytes per operand element of `m`'s arithmetic: 2 for Tensor16, 4 for Tf32 / Fp32, 1 for Fp8.
double gemm_operand_bytes(GemmMath m);

/// HBM bytes of one GEMM: A and B read once, C written once (the tiles' re-reads hit L2),
/// at the element sizes of `g.math` (GemmShape); g.hbm_bytes instead when it is > 0.
double gemm_bytes(const GemmShape& g);

/// A GEMM of a task's work and how many times it runs (fractional counts scale work, e.g. the
/// trainable share of a weight gradient).
struct GemmWork {
  GemmShape shape;
  double count = 1;
};

/// The GEMMs of one task's work (e.g. one layer's forward for one micro-batch), held in a
/// KernelWork that tasks point at with sim::Task::work (taking sim::Task::work_share of it).
using GemmList = std::vector<GemmWork>;

/// A fused attention kernel's work (FlashAttention): `batch` = sequences × query heads, each of
/// `seq_len` tokens and `head_dim`; `passes` in units of one forward (forward 1, backward 2.5,
/// backward with the forward recomputed 3.5: the FlashAttention benchmark's FLOP convention).
struct AttentionWork {
  std::size_t kernel = 0;  ///< index into HardwareProfile::attention
  double batch = 0, seq_len = 0, head_dim = 0;
  bool causal = true;
  double passes = 1;
  /// Causal sliding window (Mistral, Gemma 2/3: each query sees at most `window` keys, its own
  /// included; 0 = the whole sequence). FlashAttention skips the blocks outside the band
  /// (flash_attn_func's window_size, which transformers passes for these models).
  double window = 0;
  /// Keys a query sees at most: the window when it is shorter than the sequence (causal only).
  double span() const { return causal && window > 0 && window < seq_len ? window : seq_len; }
  /// Forward FLOPs of the benchmark's convention: 4·batch·seq_len²·head_dim, halved when causal;
  /// under a window w < seq_len, 4·batch·head_dim·(seq_len·w − w²/2) (Σ over queries of the keys
  /// each sees, the causal convention's s²/2 at w = s).
  double forward_flops() const {
    const double w = span();
    if (w < seq_len) return 4.0 * batch * head_dim * (seq_len * w - 0.5 * w * w);
    return 4.0 * batch * seq_len * seq_len * head_dim * (causal ? 0.5 : 1.0);
  }
};

/// The kernels of one task's work beyond its byte count: its GEMMs, its fused attention kernels
/// (priced by the profile's measured throughput, HardwareProfile::attention), and how many
/// streaming (elementwise / norm / softmax) kernels and host-only ops (views, reshapes) it
/// launches; the counts matter only with a per-op host cost (kernel_work_time_s).
struct KernelWork {
  GemmList gemms;
  std::vector<AttentionWork> attention;
  double streaming_kernels = 0;
  double host_only_ops = 0;
  /// The arithmetic of the task's FLOPs when it has no GEMM shapes (FLOP-described layers).
  GemmMath math = GemmMath::Tensor16;
  /// True when some work runs in another arithmetic than BF16/FP16 (the flat roofline of
  /// hardware::sequence_time_s would price it at the wrong peak).
  bool other_math() const {
    if (math != GemmMath::Tensor16) return true;
    for (const auto& w : gemms)
      if (w.shape.math != GemmMath::Tensor16) return true;
    return false;
  }
};

/// Time of a task doing `share` of `work` plus `bytes` of streaming traffic, when each op costs
/// the CPU `host_op_s` (h) to launch [s]. CUDA launches are asynchronous: the CPU enqueues
/// kernels while the GPU runs earlier ones, so within a task the step takes whichever is longer,
/// the GPU's work or the CPU's launches:
///   max( share · (Σ_GEMM count · t_gemm + Σ_attention passes · forward_flops / r) + bytes / (hbm_bw · hbm_efficiency),
///        share · (Σ_GEMM count + attention kernels + streaming_kernels + host_only_ops) · h )
/// where r = clock_fraction · attention_flops_per_s(hw.attention[kernel], causal, head_dim, span):
/// under a sliding window the kernel's rate is its causal rate at the window's length (each
/// query-block row holds a band of w keys with masked blocks at both ends, as a causal row of a
/// w-token sequence has at one; the rate rises with length, so this is the lower of the two).
/// On-chip matmuls (inside a fused kernel) launch nothing. t_gemm from `curve`, or the flat
/// roofline without one; with no GEMM shapes, `flops` at the flat efficiency (one launch).
/// Bound taken (docs/accuracy.md, vTrain): the CPU runs freely ahead inside a task (one layer's
/// forward or backward segment) but not across tasks; the earlier per-op bound, in which each
/// kernel waited for its own launch (Σ max(t_i, h)), charged the short kernels between long
/// GEMMs although the CPU had queued them during those GEMMs.
/// With h = 0 this is the sum of GEMM times and the streaming time.
double kernel_work_time_s(const HardwareProfile& hw, const GemmCurve& curve, const KernelWork& work, double share,
                          double flops, double bytes, double host_op_s);

/// kernel_work_time_s's terms apart, for a per-kernel-class breakdown (`stepsim compare` against
/// a profiler trace): the GPU time of the GEMMs (share · Σ count · t_gemm, or the flops-only
/// roofline), of the fused attention kernels, of the streaming traffic, and the CPU's launch
/// time. kernel_work_time_s = max(matmul_s + streaming_s, launch_s), matmul_s = share · (GEMMs +
/// attention) summed before the share is applied (as kernel_work_time_s always has).
struct KernelWorkSplit {
  double gemm_s = 0, attention_s = 0, streaming_s = 0, launch_s = 0;
  double matmul_s = 0;
  /// kernel_work_time_s: max(matmul_s + streaming_s, launch_s).
  double time_s() const { return matmul_s + streaming_s < launch_s ? launch_s : matmul_s + streaming_s; }
};
KernelWorkSplit kernel_work_split(const HardwareProfile& hw, const GemmCurve& curve, const KernelWork& work, double share,
                                  double flops, double bytes, double host_op_s);

/// What of kernel_work_split does not depend on the share, the FLOPs or the bytes of a task: the
/// whole work's GEMM and attention time and its launches, summed in kernel_work_split's order
/// (so that a split from the totals is bit-identical to one from the work). A cost model prices
/// every task of one work from them (StepCostModel::set_kernel_work) instead of re-pricing each
/// GEMM shape per task.
struct KernelWorkTotals {
  double gemm_s = 0, attention_s = 0, matmul_s = 0;
  double launches = 0;          ///< streaming kernels, host-only ops, off-chip GEMMs, attention kernels
  bool kernels = false;         ///< the work lists GEMMs or attention (else: `flops` at the flat efficiency)
  GemmMath math = GemmMath::Tensor16;
};
KernelWorkTotals kernel_work_totals(const HardwareProfile& hw, const GemmCurve& curve, const KernelWork& work);
/// kernel_work_split from the work's totals.
KernelWorkSplit kernel_work_split(const HardwareProfile& hw, const KernelWorkTotals& totals, double share, double flops,
                                  double bytes, double host_op_s);

/// FLOPs of a shape: 2·m·n·k·batch.
double gemm_flops(const GemmShape& g);

double split_k_factor(const GemmCurve& curve, const GemmShape& g);

/// Wave-quantization factor w = waves / ceil(waves), waves = tiles·batch·splits / sms (see
/// above; splits = split_k_factor, 1 unless g.split_k).
/// Preconditions: curve.sms ≥ 1, tiles ≥ 1.
double wave_efficiency(const GemmCurve& curve, const GemmShape& g);

/// Time of one GEMM under `curve` on `hw` [s] (formula above).
/// Precondition: curve.present(), every size > 0.
double gemm_time_s(const HardwareProfile& hw, const GemmCurve& curve, const GemmShape& g);

/// Achieved fraction of peak of one GEMM under `curve`: gemm_flops / (peak_for(g.math) · gemm_time_s),
/// against the datasheet peak of its arithmetic.
double gemm_efficiency(const HardwareProfile& hw, const GemmCurve& curve, const GemmShape& g);

/// Time of a GEMM list, Σ count · gemm_time_s [s]; with `curve` absent (!present()) the flat
/// roofline Σ count · flops / (peak · hw.gemm_efficiency).
double gemm_list_time_s(const HardwareProfile& hw, const GemmCurve& curve, const GemmList& list);

/// FLOPs of a GEMM list: Σ count · gemm_flops.
double gemm_list_flops(const GemmList& list);

/// "e_max 0.78, overhead 6 us, tile 128x256, 132 SMs" (for reports; the BF16/FP16 e_max, the
/// other arithmetics' are reported where a scenario uses them).
std::string describe_gemm_curve(const GemmCurve& curve);

/// Checks a curve's invariants; `source` and `pointer` name it in the message.
/// @throws InputError: max_efficiency ∉ (0, 1], overhead_s < 0 or ≥ 1 s, tile sizes or sms
///         outside [1, 4096].
void check_gemm_curve(const GemmCurve& curve, const std::string& source, const std::string& pointer);

}  // namespace stepsim::hardware
