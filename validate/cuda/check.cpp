// SPDX-License-Identifier: Apache-2.0
// stepsim-validate: error messages of checked CUDA / NCCL / cuBLAS calls.
#include "check.cuh"

#include <unistd.h>

#include <climits>

namespace stepsim::validate {

int& current_rank() {
  thread_local int rank = -1;
  return rank;
}

std::string device_error_message(const char* file, int line, const char* call, const std::string& what) {
  char host[HOST_NAME_MAX + 1] = {};
  if (gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  std::string where = std::string("host ") + (host[0] ? host : "?");
  if (current_rank() >= 0) where += " rank " + std::to_string(current_rank());
  return where + ": " + file + ":" + std::to_string(line) + ": " + call + " failed: " + what;
}

void throw_cuda(cudaError_t e, const char* file, int line, const char* call) {
  throw DeviceError(device_error_message(file, line, call,
                                         std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e)));
}

void throw_nccl(ncclResult_t r, const char* file, int line, const char* call) {
  std::string what = std::string("NCCL error ") + std::to_string(static_cast<int>(r)) + ": " + ncclGetErrorString(r);
  if (const char* last = ncclGetLastError(nullptr); last != nullptr && last[0] != '\0') what += " (" + std::string(last) + ")";
  throw DeviceError(device_error_message(file, line, call, what));
}

void throw_cublas(cublasStatus_t s, const char* file, int line, const char* call) {
  throw DeviceError(device_error_message(file, line, call,
                                         std::string(cublasGetStatusName(s)) + ": " + cublasGetStatusString(s)));
}

}  // namespace stepsim::validate
