// SPDX-License-Identifier: Apache-2.0
// stepsim-validate: device probe, GEMM helper, elementwise kernels, timing, barrier, output.
#include "common.cuh"

#include <unistd.h>

#include <algorithm>
#include <mutex>
#include <thread>
#include <exception>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>

namespace stepsim::validate {

namespace {

constexpr int kThreads = 256;

int blocks_for(std::int64_t n) {
  const std::int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<int>(std::max<std::int64_t>(1, std::min<std::int64_t>(b, 65535LL * 8)));
}

__device__ float hash_uniform(std::uint64_t i, std::uint32_t seed) {
  std::uint64_t x = i * 0x9E3779B97F4A7C15ULL + seed;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  return static_cast<float>(x & 0xffffff) / static_cast<float>(0x800000) - 1.0f;  // [-1, 1)
}

__global__ void fill_bf16_kernel(__nv_bfloat16* p, std::int64_t n, float scale, std::uint32_t seed) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    p[i] = __float2bfloat16(scale * hash_uniform(static_cast<std::uint64_t>(i), seed));
}

__global__ void fill_f32_kernel(float* p, std::int64_t n, float scale, std::uint32_t seed) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    p[i] = scale * hash_uniform(static_cast<std::uint64_t>(i), seed);
}

__device__ float gelu(float x) {
  const float c = 0.7978845608f;  // sqrt(2/pi)
  return 0.5f * x * (1.0f + tanhf(c * (x + 0.044715f * x * x * x)));
}

__device__ float gelu_grad(float x) {
  const float c = 0.7978845608f;
  const float u = c * (x + 0.044715f * x * x * x);
  const float t = tanhf(u);
  return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * c * (1.0f + 3.0f * 0.044715f * x * x);
}

__global__ void gelu_forward_kernel(const __nv_bfloat16* a, __nv_bfloat16* h, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    h[i] = __float2bfloat16(gelu(__bfloat162float(a[i])));
}

__global__ void gelu_backward_kernel(const __nv_bfloat16* dh, const __nv_bfloat16* a, __nv_bfloat16* da,
                                     std::int64_t n) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    da[i] = __float2bfloat16(__bfloat162float(dh[i]) * gelu_grad(__bfloat162float(a[i])));
}

__global__ void scale_copy_kernel(const __nv_bfloat16* src, __nv_bfloat16* dst, float scale, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    dst[i] = __float2bfloat16(__bfloat162float(src[i]) * scale);
}

__global__ void adam_kernel(float* master, float* m, float* v, const __nv_bfloat16* grad, __nv_bfloat16* param,
                            std::int64_t n, float bias1, float bias2) {
  const float lr = 1e-4f, b1 = 0.9f, b2 = 0.999f, eps = 1e-8f;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const float g = __bfloat162float(grad[i]);
    const float mi = b1 * m[i] + (1.0f - b1) * g;
    const float vi = b2 * v[i] + (1.0f - b2) * g * g;
    m[i] = mi;
    v[i] = vi;
    const float w = master[i] - lr * (mi / bias1) / (sqrtf(vi / bias2) + eps);
    master[i] = w;
    param[i] = __float2bfloat16(w);
  }
}

}  // namespace

int probe_devices(int wanted) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess)
    throw NoDeviceError(std::string("no CUDA device found: cudaGetDeviceCount: ") + cudaGetErrorName(e) + ": " +
                        cudaGetErrorString(e));
  if (count <= 0) throw NoDeviceError("no CUDA device found: cudaGetDeviceCount reported 0 devices");
  if (wanted > count)
    throw UsageError("--gpus: " + std::to_string(wanted) + " requested, but only " + std::to_string(count) +
                     " CUDA device(s) are visible");
  return wanted > 0 ? wanted : count;
}

std::string device_name(int d) {
  cudaDeviceProp p{};
  CUDA_CHECK(cudaGetDeviceProperties(&p, d));
  return p.name;
}

std::vector<std::pair<std::string, std::string>> runtime_versions() {
  int rt = 0, drv = 0, nccl = 0;
  CUDA_CHECK(cudaRuntimeGetVersion(&rt));
  CUDA_CHECK(cudaDriverGetVersion(&drv));
  NCCL_CHECK(ncclGetVersion(&nccl));
  auto cuda = [](int v) { return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10); };
  return {{"cuda_runtime", cuda(rt)},
          {"cuda_driver", cuda(drv)},
          {"nccl", std::to_string(nccl / 10000) + "." + std::to_string((nccl / 100) % 100) + "." +
                       std::to_string(nccl % 100)},
          {"cublas", std::to_string(CUBLAS_VER_MAJOR) + "." + std::to_string(CUBLAS_VER_MINOR) + "." +
                         std::to_string(CUBLAS_VER_PATCH)}};
}

void gemm_rm(cublasHandle_t h, bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k,
             const __nv_bfloat16* a, const __nv_bfloat16* b, __nv_bfloat16* c, float beta) {
  // Row-major C = op(A)·op(B) is column-major Cᵀ = op(B)ᵀ·op(A)ᵀ: swap the operands.
  const float alpha = 1.0f;
  const int lda = static_cast<int>(ta ? m : k);
  const int ldb = static_cast<int>(tb ? k : n);
  CUBLAS_CHECK(cublasGemmEx(h, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, static_cast<int>(n),
                            static_cast<int>(m), static_cast<int>(k), &alpha, b, CUDA_R_16BF, ldb, a, CUDA_R_16BF, lda,
                            &beta, c, CUDA_R_16BF, static_cast<int>(n), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

void fill_bf16(__nv_bfloat16* p, std::int64_t n, float scale, std::uint32_t seed, cudaStream_t s) {
  fill_bf16_kernel<<<blocks_for(n), kThreads, 0, s>>>(p, n, scale, seed);
  CUDA_CHECK_LAUNCH();
}

void fill_f32(float* p, std::int64_t n, float scale, std::uint32_t seed, cudaStream_t s) {
  fill_f32_kernel<<<blocks_for(n), kThreads, 0, s>>>(p, n, scale, seed);
  CUDA_CHECK_LAUNCH();
}

void gelu_forward(const __nv_bfloat16* a, __nv_bfloat16* h, std::int64_t n, cudaStream_t s) {
  gelu_forward_kernel<<<blocks_for(n), kThreads, 0, s>>>(a, h, n);
  CUDA_CHECK_LAUNCH();
}

void gelu_backward(const __nv_bfloat16* dh, const __nv_bfloat16* a, __nv_bfloat16* da, std::int64_t n,
                   cudaStream_t s) {
  gelu_backward_kernel<<<blocks_for(n), kThreads, 0, s>>>(dh, a, da, n);
  CUDA_CHECK_LAUNCH();
}

void scale_copy(const __nv_bfloat16* src, __nv_bfloat16* dst, float scale, std::int64_t n, cudaStream_t s) {
  scale_copy_kernel<<<blocks_for(n), kThreads, 0, s>>>(src, dst, scale, n);
  CUDA_CHECK_LAUNCH();
}

void adam_step(float* master, float* m, float* v, const __nv_bfloat16* grad, __nv_bfloat16* param,
               std::int64_t n, int step, cudaStream_t s) {
  const float bias1 = 1.0f - std::pow(0.9f, static_cast<float>(step));
  const float bias2 = 1.0f - std::pow(0.999f, static_cast<float>(step));
  adam_kernel<<<blocks_for(n), kThreads, 0, s>>>(master, m, v, grad, param, n, bias1, bias2);
  CUDA_CHECK_LAUNCH();
}

double elapsed_s(cudaEvent_t from, cudaEvent_t to) {
  float ms = 0;
  CUDA_CHECK(cudaEventElapsedTime(&ms, from, to));
  return static_cast<double>(ms) * 1e-3;
}

void HostBarrier::wait() {
  std::unique_lock<std::mutex> lock(mu_);
  if (aborted_) throw DeviceError("another rank failed");
  const std::uint64_t gen = generation_;
  if (++arrived_ == parties_) {
    arrived_ = 0;
    ++generation_;
    cv_.notify_all();
    return;
  }
  cv_.wait(lock, [&] { return generation_ != gen || aborted_; });
  if (generation_ == gen) throw DeviceError("another rank failed");
}

void HostBarrier::abort() {
  std::lock_guard<std::mutex> lock(mu_);
  aborted_ = true;
  cv_.notify_all();
}

std::string host_name() {
  char host[HOST_NAME_MAX + 1] = {};
  if (gethostname(host, sizeof host - 1) != 0) return "?";
  return host;
}

std::vector<ncclComm_t> init_all_comms(int world) {
  std::vector<ncclComm_t> comms(static_cast<std::size_t>(world), nullptr);
  std::vector<int> devs(static_cast<std::size_t>(world));
  for (int d = 0; d < world; ++d) devs[static_cast<std::size_t>(d)] = d;
  NCCL_CHECK(ncclCommInitAll(comms.data(), world, devs.data()));
  return comms;
}

void run_on_every_gpu(std::vector<ncclComm_t>& comms, HostBarrier& barrier,
                      const std::function<void(int)>& body) {
  std::mutex mu;
  std::exception_ptr error;
  std::vector<std::thread> threads;
  for (int r = 0; r < static_cast<int>(comms.size()); ++r)
    threads.emplace_back([&, r] {
      try {
        body(r);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu);
        if (!error) {
          error = std::current_exception();
          barrier.abort();
          for (ncclComm_t c : comms) ncclCommAbort(c);  // unblock ranks waiting in a collective
          for (ncclComm_t& c : comms) c = nullptr;
        }
      }
    });
  for (auto& t : threads) t.join();
  if (error) std::rethrow_exception(error);
  for (ncclComm_t c : comms) NCCL_CHECK(ncclCommDestroy(c));
}

}  // namespace stepsim::validate
