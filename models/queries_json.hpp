// SPDX-License-Identifier: Apache-2.0
// The closed-form commands as library calls: `stepsim memory`, `collective` and `threshold`
// print what these return, and the Python module returns the same (issue 20 item 1). Each
// answer is the command's JSON document and its text; flag names in messages are the CLI's.
#pragma once

#include "hardware/collective_model.hpp"
#include "hardware/hardware_profile.hpp"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace stepsim::models {

/// A command's answer: the JSON document `--format json` prints and the text it prints without.
struct QueryAnswer {
  nlohmann::ordered_json json;
  std::string text;
};

/// `stepsim memory`: model-state memory per GPU under every strategy side by side (ZeRO paper
/// §3.1), from a scenario (its parameters, dtype, optimizer, DP degree and activations) or from
/// a parameter count and DP degree (and a profile for what fits). Schema stepsim.memory/1.
struct MemoryQuery {
  std::string scenario;                       ///< scenario file ("" = the parameter-count form)
  std::optional<nlohmann::json> scenario_doc; ///< a scenario already read (`scenario` then names it)
  std::vector<std::string> sets;              ///< --set overrides of the scenario
  double params = 0;                          ///< --params Ψ
  long long dp = 0;                           ///< --dp N_d
  long long shard_group_size = 0;             ///< HSDP's G; 0 = the scenario's, else a node's GPUs
  std::string hardware;                       ///< --hardware (parameter-count form)
  double optimizer_bytes_per_param = 12;      ///< K
  bool optimizer_bytes_given = false;         ///< K was given (else a scenario's optimizer sets it)
};
/// @throws InputError naming the flag (or the scenario's file and JSON path) of a bad input.
QueryAnswer memory_query(const MemoryQuery& q);

/// `stepsim collective`: the closed-form time of one collective (schema stepsim.collective/1).
struct CollectiveQuery {
  std::string op;             ///< "allreduce" | "reducescatter" | "allgather", or the op's label or nccl-tests name
  std::string hardware;       ///< profile name or JSON file
  long long ranks = 0;
  std::string size;           ///< bytes, or with a unit ("16GB", "25MiB")
  long long gpus_per_node = 0;  ///< 0 = the profile's
  int axes = 0;               ///< TPU torus axes (0 = all)
  std::string cost_model;     ///< "" = the profile's default (alpha-beta with a calibration)
  std::string algorithm = "auto";  ///< "auto" | "ring" | "hierarchical" (alpha-beta)
  std::string calibration;    ///< overlay JSON ("" = nominal)
  std::optional<std::string> network;  ///< network preset over the profile's NICs (none = the profile's; hardware/networks/)
};
/// @throws InputError naming the flag of a bad input ("op" or "algorithm" for a name outside
///         hardware::collective_ops() / collective_algorithm_names()).
QueryAnswer collective_query(const CollectiveQuery& q);

/// `stepsim threshold`: tokens per GPU below which pure DP is communication-bound (seed 000
/// §7; schema stepsim.threshold/1). From the flags (the seeds' closed form, E/k or E/(k·ep) for
/// a mixture), or from a scenario: then exactly run's comm-bound figure
/// (comm_bound_threshold(): its DP group, its model's FLOPs per token).
struct ThresholdQuery {
  std::string hardware;
  long long ranks = 0;
  long long gpus_per_node = 0;
  int axes = 0;
  long long moe_experts = 0;  ///< E (0 with moe_topk 0: dense)
  long long moe_topk = 0;     ///< k
  long long moe_ep = 0;       ///< expert-parallel degree (0: not given, 1)
  std::string scenario;       ///< scenario file ("" = the flag form; the flags are then refused)
  std::vector<std::string> sets;  ///< --set overrides of the scenario
};
/// @throws InputError naming the flag of a bad input.
QueryAnswer threshold_query(const ThresholdQuery& q);

/// Communicator shape from the CLI's cluster flags (--ranks, --gpus-per-node, --axes), validated.
/// @throws InputError naming the flag.
hardware::GroupShape flag_group_shape(const hardware::HardwareProfile& hw, long long ranks, long long gpus_per_node,
                                      int axes);

/// The threshold's MoE factor from --moe-experts E, --moe-topk k and --ep (hardware::dp_threshold):
/// E/(k·ep), with ep 1 when 0 (not given); 1 when all are 0 (dense).
/// @throws InputError unless 1 ≤ k ≤ E ≤ 2^20 (both given) or both are 0, and --ep (given)
///         divides E (each GPU holds E / ep experts) and comes with them.
double moe_factor(long long experts, long long topk, long long ep);

/// --ep (> 1) against the cluster flags: refused on a torus profile (run does not model EP
/// there) and unless it divides `ranks` (when given, ≠ 0).
/// @throws InputError naming --ep.
void check_flag_ep(const hardware::HardwareProfile& hw, long long ranks, long long ep);

/// "auto" | "ring" | "hierarchical" (validated by the caller).
hardware::CollectiveAlgorithm algorithm_from(const std::string& name);

}  // namespace stepsim::models
