// SPDX-License-Identifier: Apache-2.0
// What stepsim has built in (`stepsim list`, the Python module's profiles() / models() /
// strategies()): one JSON document per kind.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <string>

namespace stepsim::models {

/// The built-in entries of `what` ("profiles" — or its alias "hardware" —, "networks", "models",
/// "strategies" or "fields", the scenario's field reference) as JSON, schema "stepsim.list/1": {"schema", "what", "items": [...]}, one
/// object per entry in catalog order. Profiles: name, description, peak_flops_per_s (BF16),
/// fp8_flops_per_s (null: none), hbm_bytes, hbm_bandwidth_bytes_per_s, gpus_per_node (the
/// scale-up domain), intra_node_fabric, intra_node_bandwidth_bytes_per_s (one way per GPU),
/// intra_node_peer_bandwidth_bytes_per_s (null behind a switch), nic_bandwidth_bytes_per_s_per_gpu
/// (null: no network), network (the preset's name, null: none), fabric_latency_per_log2_nodes_s,
/// fabric_bandwidth_efficiency, torus_dims, collective_model (the default cost model) and sources
/// [{kinds, text}] (kinds: hardware::source_kinds). Models: name, kind, hf_model_type (null
/// unless built from a Hugging Face config), parameters, layers, sample_unit, source.
/// Networks (hardware/networks/): name, description, gpus_per_nic, nic_bandwidth_bytes_per_s,
/// fabric_latency_per_log2_nodes_s, fabric_bandwidth_efficiency, sources [{kinds, text}].
/// Strategies: name, description. Fields: as field_reference_json (models/scenario_fields.hpp).
/// @throws InputError naming `what` when it is none of those.
nlohmann::ordered_json list_json(const std::string& what);

/// The parameter tensors of the model `ref` names (a catalog name, a model .json, a Hugging Face
/// config.json or a folder holding one; models/model_spec_json.hpp load_model), in registration
/// order, schema "stepsim.tensors/1": {"schema", "model", "kind", "hf_model_type", "parameters",
/// "active_parameters", "tensors": [{layer, name, numel, dtype, trainable}]}: what DDP buckets
/// and FSDP shards (`stepsim list tensors MODEL`).
/// @throws InputError naming `ref` when it names no model (load_model's errors).
nlohmann::ordered_json tensors_json(const std::string& ref);

}  // namespace stepsim::models
