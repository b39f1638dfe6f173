// SPDX-License-Identifier: Apache-2.0
// Bucket assignment after the DDP rebuild (steady state; semantics.md §A.1, §A.3 rule 13).
#include "models/strategy/buckets.hpp"

#include "sim/support/error.hpp"

#include <algorithm>

namespace stepsim::models {

std::vector<BucketAssignment> assign_buckets(const std::vector<BucketInput>& tensors,
                                             const std::vector<double>& limits_bytes) {
  STEPSIM_ASSERT(!limits_bytes.empty(), "empty bucket size limit list");
  struct Open {
    std::uint32_t key;
    BucketAssignment bucket;
    std::size_t limit_index = 0;
  };
  std::vector<Open> open;  // one per dtype, in first-appearance order
  std::vector<BucketAssignment> out;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    auto it = std::find_if(open.begin(), open.end(), [&](const Open& o) { return o.key == tensors[i].dtype_key; });
    if (it == open.end()) {
      open.push_back(Open{tensors[i].dtype_key, {}, 0});
      it = open.end() - 1;
    }
    it->bucket.tensors.push_back(i);
    it->bucket.bytes += tensors[i].bytes;
    const double limit = limits_bytes[std::min(it->limit_index, limits_bytes.size() - 1)];
    if (it->bucket.bytes >= limit) {
      out.push_back(std::move(it->bucket));
      it->bucket = {};
      ++it->limit_index;
    }
  }
  for (auto& o : open)
    if (!o.bucket.tensors.empty()) out.push_back(std::move(o.bucket));
  return out;
}

std::vector<bool> deepspeed_ipg_flushes(const std::vector<double>& elements, double bucket_elements,
                                        const std::vector<int>& groups) {
  STEPSIM_ASSERT(groups.empty() || groups.size() == elements.size(), "{} gradients, {} partition groups",
                 elements.size(), groups.size());
  std::vector<bool> flush_before;
  double open = 0;
  for (std::size_t i = 0; i < elements.size(); ++i) {
    const bool other_group = !groups.empty() && i > 0 && groups[i] != groups[i - 1];
    const bool flush = open > 0 && (other_group || open + elements[i] > bucket_elements);
    flush_before.push_back(flush);
    if (flush) open = 0;
    open += elements[i];
  }
  return flush_before;
}

}  // namespace stepsim::models
