// SPDX-License-Identifier: Apache-2.0
// stepsim-validate: what the three subcommands share on the device side: the device probe,
// row-major bf16 GEMMs through cuBLAS, the elementwise kernels of the MLP step, event-based
// timing, a host barrier for one-thread-per-GPU runs, and atomic file output.
#pragma once

#include "check.cuh"

#include <cuda_bf16.h>

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace stepsim::validate {

/// Number of usable CUDA devices, at most `wanted` when wanted > 0.
/// @throws NoDeviceError ("no CUDA device found: <CUDA error>") when there is none;
///         UsageError when `wanted` exceeds what is visible.
int probe_devices(int wanted);

/// "NVIDIA H200" for device `d`.
std::string device_name(int d);
/// Versions of the CUDA runtime and driver, NCCL and cuBLAS: ("nccl", "2.28.9"), ...
std::vector<std::pair<std::string, std::string>> runtime_versions();

/// C[M,N] = op(A)[M,K] · op(B)[K,N] (+ beta·C), every matrix row-major bf16, fp32 accumulate,
/// through cublasGemmEx on the handle's stream. ta / tb: A is stored [K,M] / B is stored [N,K].
void gemm_rm(cublasHandle_t h, bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k,
             const __nv_bfloat16* a, const __nv_bfloat16* b, __nv_bfloat16* c, float beta);

/// Fills `n` bf16 / fp32 values with a deterministic pseudo-random pattern in [-scale, scale].
void fill_bf16(__nv_bfloat16* p, std::int64_t n, float scale, std::uint32_t seed, cudaStream_t s);
void fill_f32(float* p, std::int64_t n, float scale, std::uint32_t seed, cudaStream_t s);
/// h = GELU(a) (tanh approximation), n elements.
void gelu_forward(const __nv_bfloat16* a, __nv_bfloat16* h, std::int64_t n, cudaStream_t s);
/// da = dh · GELU'(a), n elements.
void gelu_backward(const __nv_bfloat16* dh, const __nv_bfloat16* a, __nv_bfloat16* da, std::int64_t n,
                   cudaStream_t s);
/// dst = src · scale (dst may equal src: DDP's in-place div_ under gradient_as_bucket_view).
void scale_copy(const __nv_bfloat16* src, __nv_bfloat16* dst, float scale, std::int64_t n, cudaStream_t s);
/// Adam step (PyTorch defaults β1 0.9, β2 0.999, ε 1e-8; lr 1e-4) on fp32 master weights and
/// moments from a bf16 gradient, writing the bf16 parameters: 28 bytes of HBM traffic per
/// parameter, as stepsim's optimizer task assumes.
void adam_step(float* master, float* m, float* v, const __nv_bfloat16* grad, __nv_bfloat16* param,
               std::int64_t n, int step, cudaStream_t s);

/// Seconds between two recorded events.
double elapsed_s(cudaEvent_t from, cudaEvent_t to);

/// Reusable barrier for the per-GPU threads; abort() wakes every waiter with an exception so
/// that one failing rank does not leave the others waiting forever.
class HostBarrier {
 public:
  explicit HostBarrier(int parties) : parties_(parties) {}
  /// Blocks until `parties` threads have arrived. @throws DeviceError after abort().
  void wait();
  /// Releases every current and future waiter with an error.
  void abort();

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int parties_;
  int arrived_ = 0;
  std::uint64_t generation_ = 0;
  bool aborted_ = false;
};

/// One NCCL communicator per visible GPU 0..world-1 (ncclCommInitAll, single process).
std::vector<ncclComm_t> init_all_comms(int world);

/// Runs body(rank) on one host thread per communicator in `comms`. The first exception aborts
/// `barrier` and every communicator (so no rank waits forever in a collective) and is rethrown
/// once every thread has joined; on success the communicators are destroyed.
void run_on_every_gpu(std::vector<ncclComm_t>& comms, HostBarrier& barrier,
                      const std::function<void(int)>& body);

/// Host name for the output files.
std::string host_name();

}  // namespace stepsim::validate
