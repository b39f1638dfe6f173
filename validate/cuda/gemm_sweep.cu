// SPDX-License-Identifier: Apache-2.0
// stepsim-validate gemm-sweep: achieved FLOP/s of the GEMMs stepsim prices for the MLP layer
// (forward W_in and W_out, dgrad and wgrad of each) on GPU 0, bf16 in, fp32 accumulate.
#include "common.cuh"
#include "json_writer.hpp"
#include "mlp_step.hpp"

#include <algorithm>
#include <cstdio>

namespace stepsim::validate {

namespace {

struct Shape {
  const char* name;
  bool ta, tb;
  std::int64_t m, n, k;
};

std::vector<Shape> layer_shapes(std::int64_t d, std::int64_t f, std::int64_t b) {
  return {{"fwd.w_in", false, false, b, f, d},    {"fwd.w_out", false, false, b, d, f},
          {"dgrad.w_out", false, true, b, f, d},  {"wgrad.w_out", true, false, f, d, b},
          {"dgrad.w_in", false, true, b, d, f},   {"wgrad.w_in", true, false, d, f, b}};
}

}  // namespace

std::string run_gemm_sweep(const GemmSweepOptions& o, std::string& table) {
  current_rank() = 0;
  CUDA_CHECK(cudaSetDevice(0));
  std::int64_t max_a = 0, max_b = 0, max_c = 0;
  for (std::size_t i = 0; i < o.hidden.size(); ++i)
    for (const auto b : o.tokens)
      for (const Shape& s : layer_shapes(o.hidden[i], o.ffn[i], b)) {
        max_a = std::max(max_a, s.m * s.k);
        max_b = std::max(max_b, s.k * s.n);
        max_c = std::max(max_c, s.m * s.n);
      }
  cudaStream_t stream = nullptr;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cublasHandle_t blas = nullptr;
  CUBLAS_CHECK(cublasCreate(&blas));
  CUBLAS_CHECK(cublasSetStream(blas, stream));
  __nv_bfloat16 *a = nullptr, *b = nullptr, *c = nullptr;
  CUDA_CHECK(cudaMalloc(&a, static_cast<std::size_t>(max_a) * 2));
  CUDA_CHECK(cudaMalloc(&b, static_cast<std::size_t>(max_b) * 2));
  CUDA_CHECK(cudaMalloc(&c, static_cast<std::size_t>(max_c) * 2));
  fill_bf16(a, max_a, 1.0f, 1, stream);
  fill_bf16(b, max_b, 1.0f, 2, stream);
  cudaEvent_t e0 = nullptr, e1 = nullptr;
  CUDA_CHECK(cudaEventCreate(&e0));
  CUDA_CHECK(cudaEventCreate(&e1));

  JsonWriter w;
  w.begin_object().field("schema", "stepsim.gemm-sweep/1").field("generator", "stepsim-validate 0.1");
  w.key("environment").begin_object().field("host", host_name()).field("device", device_name(0));
  for (const auto& [k, v] : runtime_versions()) w.field(k, v);
  w.end_object();
  w.field("dtype", "bf16").field("accumulate", "fp32").field("iters", o.iters).field("warmup", o.warmup);
  w.key("rows").begin_array();
  char line[256];
  std::snprintf(line, sizeof line, "# %-12s %7s %7s %7s %7s %7s %7s %12s %12s\n", "gemm", "hidden", "ffn", "tokens", "m",
                "n", "k", "time(us)", "TFLOP/s");
  table += line;
  for (std::size_t i = 0; i < o.hidden.size(); ++i)
    for (const auto tokens : o.tokens)
      for (const Shape& s : layer_shapes(o.hidden[i], o.ffn[i], tokens)) {
        for (std::int64_t r = 0; r < o.warmup; ++r) gemm_rm(blas, s.ta, s.tb, s.m, s.n, s.k, a, b, c, 0.0f);
        CUDA_CHECK(cudaEventRecord(e0, stream));
        for (std::int64_t r = 0; r < o.iters; ++r) gemm_rm(blas, s.ta, s.tb, s.m, s.n, s.k, a, b, c, 0.0f);
        CUDA_CHECK(cudaEventRecord(e1, stream));
        CUDA_CHECK(cudaEventSynchronize(e1));
        const double t = elapsed_s(e0, e1) / static_cast<double>(o.iters);
        const double flops = 2.0 * static_cast<double>(s.m) * static_cast<double>(s.n) * static_cast<double>(s.k);
        w.begin_object().field("name", s.name).field("hidden", o.hidden[i]).field("ffn", o.ffn[i]);
        w.field("tokens", tokens).field("m", s.m).field("n", s.n).field("k", s.k);
        w.field("trans_a", s.ta).field("trans_b", s.tb).field("flops", flops).field("time_s", t);
        w.field("flops_per_s", flops / t).end_object();
        std::snprintf(line, sizeof line, "  %-12s %7lld %7lld %7lld %7lld %7lld %7lld %12.2f %12.1f\n", s.name,
                      static_cast<long long>(o.hidden[i]), static_cast<long long>(o.ffn[i]),
                      static_cast<long long>(tokens), static_cast<long long>(s.m), static_cast<long long>(s.n),
                      static_cast<long long>(s.k), t * 1e6, flops / t / 1e12);
        table += line;
      }
  w.end_array().end_object();
  CUDA_CHECK(cudaEventDestroy(e0));
  CUDA_CHECK(cudaEventDestroy(e1));
  CUDA_CHECK(cudaFree(a));
  CUDA_CHECK(cudaFree(b));
  CUDA_CHECK(cudaFree(c));
  CUBLAS_CHECK(cublasDestroy(blas));
  CUDA_CHECK(cudaStreamDestroy(stream));
  return w.str();
}

}  // namespace stepsim::validate
