// SPDX-License-Identifier: Apache-2.0
// Scenario: one training step to simulate — model, hardware, cluster, parallelism, batch —
// parsed, defaulted, validated and then immutable. Nothing downstream reads JSON.
#pragma once

#include "hardware/collective_model.hpp"
#include "hardware/hardware_profile.hpp"
#include "models/model_spec.hpp"

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace stepsim::models {

/// Cluster shape. World size = nodes × gpus_per_node = parallelism.dp (pure data parallelism).
struct ClusterConfig {
  int gpus_per_node = 8;  ///< default: the profile's
  int nodes = 1;          ///< default: ceil(dp / gpus_per_node)
};

/// Data-parallel strategy and its knobs (PyTorch DDP names, semantics.md §A).
struct ParallelismConfig {
  std::string strategy = "ddp";
  std::int64_t dp = 1;               ///< DP degree (world size)
  double bucket_cap_mb = 25;         ///< MiB; reducer.hpp kDefaultBucketBytesCap (25 MiB)
  double first_bucket_mb = 1;        ///< MiB; reducer.hpp kDefaultFirstBucketBytes (1 MiB)
  bool sync_every_micro_batch = false;  ///< false = no_sync() on all but the last micro-batch
  bool gradient_as_bucket_view = false; ///< distributed.py default False (semantics §A.6 r23)
};

/// Batch: tokens per GPU per micro-batch = micro_batch_size × seq_len.
struct BatchConfig {
  std::int64_t micro_batch_size = 1;  ///< sequences per GPU per micro-batch
  std::int64_t seq_len = 4096;
  std::int64_t grad_accum = 1;        ///< micro-batches per optimizer step
};

/// A validated, immutable scenario. Build with parse_scenario().
struct Scenario {
  std::string source;           ///< file the scenario came from (for messages and reports)
  std::string name;
  std::string model_ref;        ///< catalog name, file path or "inline"
  std::string hardware_ref;
  ModelSpec model;
  hardware::HardwareProfile hardware;
  ClusterConfig cluster;
  ParallelismConfig parallelism;
  BatchConfig batch;
  std::string optimizer = "adam";   ///< "adam" or "none" (no step, no state)
  std::string cost_model = "alpha-beta";
  hardware::CollectiveAlgorithm algorithm = hardware::CollectiveAlgorithm::Auto;
  std::string rank_mode = "symmetric";
  std::shared_ptr<const nlohmann::json> resolved;  ///< the input with every default filled in

  /// GPUs per node actually used by the DP group: min(gpus_per_node, dp).
  int ranks_per_node() const;
  /// Tokens each GPU processes per micro-batch.
  std::int64_t tokens_per_micro_batch() const { return batch.micro_batch_size * batch.seq_len; }
  /// Tokens each GPU processes per optimizer step.
  std::int64_t tokens_per_gpu_step() const { return tokens_per_micro_batch() * batch.grad_accum; }
};

/// Parses `doc` (already read from `source`, with any --set overrides applied) into a
/// Scenario: fills defaults, loads the model and hardware it names, validates every field
/// and every cross-field rule.
/// @throws InputError naming source, JSON path, bad value and expectation; unknown keys get
///         "did you mean".
Scenario parse_scenario(const nlohmann::json& doc, const std::string& source);

/// Reads `path`, applies `overrides` ("a.b=VALUE", in order), parses.
Scenario load_scenario(const std::string& path, const std::vector<std::string>& overrides);

/// Names of the strategies the registry knows, for messages.
std::vector<std::string> strategy_names();

}  // namespace stepsim::models
