// SPDX-License-Identifier: Apache-2.0
// SHA-256 (FIPS 180-4 §6.2) fed piece by piece, for the provenance of inputs read as streams
// (a profiler trace is hashed while it is parsed, never held whole). sha256_hex
// (nccl_tests.hpp) is the one-shot form.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace stepsim::validate {

/// Incremental SHA-256: update() any number of times, then hex() once.
class Sha256 {
 public:
  /// Adds `bytes` to the message.
  void update(std::string_view bytes);
  /// Lowercase hex digest of everything added (64 characters). Ends the message: call once.
  std::string hex();

 private:
  std::array<std::uint32_t, 8> h_ = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                     0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  std::array<unsigned char, 64> block_{};
  std::size_t filled_ = 0;   ///< bytes in block_
  std::uint64_t length_ = 0; ///< message bytes so far
};

}  // namespace stepsim::validate
