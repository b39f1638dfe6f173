// SPDX-License-Identifier: Apache-2.0
// PyTorch reducer bucket assignment (reducer.cpp compute_bucket_assignment_by_size).
#pragma once

#include <cstdint>
#include <vector>

namespace stepsim::models {

/// A gradient tensor as the bucketing sees it.
struct BucketInput {
  double bytes = 0;          ///< numel × element size, > 0
  std::uint32_t dtype_key = 0;  ///< tensors of different dtypes never share a bucket
};

/// Tensors of one bucket, as indexes into the input list, in input order.
struct BucketAssignment {
  std::vector<std::size_t> tensors;
  double bytes = 0;
};

/// Assigns tensors, given in gradient-ready order, to buckets (semantics.md §A.1, rule 4):
/// each dtype has an open bucket; a tensor is appended to its dtype's bucket, which closes as
/// soon as its bytes reach the current limit; the limit list is walked per dtype and its last
/// entry repeats. Tensors are never split, so a bucket can exceed its limit. Open buckets left
/// at the end are appended in order of each dtype's first appearance. No sort (rebuild, rule
/// 6): the result is in ready order.
/// @param limits_bytes  e.g. {1 MiB, 25 MiB} (first_bucket, bucket_cap); non-empty, all > 0
std::vector<BucketAssignment> assign_buckets(const std::vector<BucketInput>& tensors,
                                             const std::vector<double>& limits_bytes);

/// DeepSpeed ZeRO-1/2's IPG bucketing (stage_1_and_2.py, semantics.md §C.2 rule 56) over
/// gradients of `elements` elements each, in the order they reach the bucket: for each, whether
/// the open bucket is flushed (reduced) *before* it is added — when the bucket is not empty and
/// the gradient would take it past `bucket_elements` (reduce_bucket_size). A gradient larger
/// than the bucket is thus reduced alone. With `groups` (one partition-group key per gradient,
/// or empty), ZeRO-3's rule too: a gradient of another group than the open bucket's flushes it
/// first (stage3.py reduce_independent_p_g_buckets_and_remove_grads; expert parameters under
/// AutoEP). Precondition: groups is empty or as long as elements.
std::vector<bool> deepspeed_ipg_flushes(const std::vector<double>& elements, double bucket_elements,
                                        const std::vector<int>& groups = {});

}  // namespace stepsim::models
