// SPDX-License-Identifier: Apache-2.0
// stepsim-validate: checked CUDA / NCCL / cuBLAS calls (style.md §3.5). Every call goes
// through CUDA_CHECK, NCCL_CHECK or CUBLAS_CHECK, which throw DeviceError with the host, the
// rank, file:line, the call text and the library's error string (for NCCL
// ncclGetErrorString + ncclGetLastError, as nccl-tests prints them). Standalone: includes
// only the standard library and the CUDA, NCCL and cuBLAS headers.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <nccl.h>

#include "errors.hpp"

#include <string>

namespace stepsim::validate {

/// Rank of the calling thread for error messages (-1: the main thread).
int& current_rank();

/// "host H rank R: FILE:LINE: CALL failed: WHAT" (the prefix every DeviceError carries).
std::string device_error_message(const char* file, int line, const char* call, const std::string& what);

/// Throws DeviceError for a failed call; used by the macros below.
[[noreturn]] void throw_cuda(cudaError_t e, const char* file, int line, const char* call);
[[noreturn]] void throw_nccl(ncclResult_t r, const char* file, int line, const char* call);
[[noreturn]] void throw_cublas(cublasStatus_t s, const char* file, int line, const char* call);

}  // namespace stepsim::validate

#define CUDA_CHECK(call)                                                             \
  do {                                                                               \
    const cudaError_t stepsim_e_ = (call);                                           \
    if (stepsim_e_ != cudaSuccess)                                                   \
      ::stepsim::validate::throw_cuda(stepsim_e_, __FILE__, __LINE__, #call);        \
  } while (false)

#define NCCL_CHECK(call)                                                             \
  do {                                                                               \
    const ncclResult_t stepsim_r_ = (call);                                          \
    if (stepsim_r_ != ncclSuccess && stepsim_r_ != ncclInProgress)                   \
      ::stepsim::validate::throw_nccl(stepsim_r_, __FILE__, __LINE__, #call);        \
  } while (false)

#define CUBLAS_CHECK(call)                                                           \
  do {                                                                               \
    const cublasStatus_t stepsim_s_ = (call);                                        \
    if (stepsim_s_ != CUBLAS_STATUS_SUCCESS)                                         \
      ::stepsim::validate::throw_cublas(stepsim_s_, __FILE__, __LINE__, #call);      \
  } while (false)

/// Checks the last kernel launch (launch configuration errors surface here).
#define CUDA_CHECK_LAUNCH() CUDA_CHECK(cudaGetLastError())
