// SPDX-License-Identifier: Apache-2.0
// stepsim-validate's exception types (plain C++, so the argument parser and the bucket plan
// compile and are tested without CUDA headers). main.cpp maps them to exit statuses.
#pragma once

#include <stdexcept>
#include <string>

namespace stepsim::validate {

/// A failed CUDA / NCCL / cuBLAS call (exit status 1).
class DeviceError : public std::runtime_error {
 public:
  explicit DeviceError(const std::string& message) : std::runtime_error(message) {}
};

/// No usable CUDA device (exit status 2, "no CUDA device found: <CUDA error string>").
class NoDeviceError : public std::runtime_error {
 public:
  explicit NoDeviceError(const std::string& message) : std::runtime_error(message) {}
};

/// Bad command-line input (exit status 2).
class UsageError : public std::runtime_error {
 public:
  explicit UsageError(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace stepsim::validate
