// SPDX-License-Identifier: Apache-2.0
// The built-in catalogs as JSON (models/listing_json.hpp).
#include "models/listing_json.hpp"

#include "hardware/hardware_profile_json.hpp"
#include "hardware/nccl_model.hpp"
#include "models/model_spec_json.hpp"
#include "models/scenario_fields.hpp"
#include "models/strategy/strategy.hpp"
#include "sim/support/error.hpp"
#include "sim/support/names.hpp"

#include <nlohmann/json.hpp>

namespace stepsim::models {

namespace {

// A profile's or network preset's source lines, each with the kinds its tag names.
nlohmann::ordered_json tagged_sources(const std::vector<std::string>& sources) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const auto& s : sources) out.push_back({{"kinds", hardware::source_kinds(s)}, {"text", s}});
  return out;
}

// The profile's host facts (offload, checkpoints), null when it has none.
nlohmann::ordered_json host_json(const hardware::HostFacts& h) {
  using J = nlohmann::ordered_json;
  if (!h.present()) return nullptr;
  return {{"pcie_generation", h.pcie_generation},
          {"pcie_lanes", h.pcie_lanes},
          {"h2d_bytes_per_s", h.h2d_bytes_per_s},
          {"d2h_bytes_per_s", h.d2h_bytes_per_s},
          {"gpus_per_pcie_switch", h.gpus_per_pcie_switch},
          {"memory_bytes", h.memory_bytes},
          {"cpu_cores", h.cpu_cores},
          {"cpu_adam_params_per_s", h.cpu_adam_params_per_s},
          {"nvme_read_bytes_per_s", h.has_nvme() ? J(h.nvme_read_bytes_per_s) : J(nullptr)},
          {"nvme_write_bytes_per_s", h.has_nvme() ? J(h.nvme_write_bytes_per_s) : J(nullptr)},
          {"nvme_bytes", h.has_nvme() ? J(h.nvme_bytes) : J(nullptr)}};
}

}  // namespace

nlohmann::ordered_json list_json(const std::string& what) {
  using J = nlohmann::ordered_json;
  J items = J::array();
  if (what == "profiles" || what == "hardware") {
    for (const auto& n : hardware::builtin_profile_names()) {
      const auto p = hardware::load_profile(n);
      items.push_back({{"name", n},
                       {"description", p.description},
                       {"peak_flops_per_s", p.peak_flops_per_s},
                       {"fp8_flops_per_s", p.fp8_flops_per_s > 0 ? J(p.fp8_flops_per_s) : J(nullptr)},
                       {"hbm_bytes", p.hbm_bytes},
                       {"hbm_bandwidth_bytes_per_s", p.hbm_bandwidth_bytes_per_s},
                       {"gpus_per_node", p.gpus_per_node},
                       {"intra_node_fabric", p.intra_node_fabric},
                       {"intra_node_bandwidth_bytes_per_s", p.intra_node.bandwidth_bytes_per_s},
                       {"intra_node_peer_bandwidth_bytes_per_s",
                        p.intra_peer_bandwidth_bytes_per_s > 0 ? J(p.intra_peer_bandwidth_bytes_per_s) : J(nullptr)},
                       {"nic_bandwidth_bytes_per_s_per_gpu",
                        p.nics_per_node > 0 ? J(p.nic_bandwidth_bytes_per_s / p.gpus_per_nic) : J(nullptr)},
                       {"network", p.network_preset.empty() ? J(nullptr) : J(p.network_preset)},
                       {"fabric_latency_per_log2_nodes_s", p.fabric_latency_per_log2_nodes_s},
                       {"fabric_bandwidth_efficiency", p.fabric_bandwidth_efficiency},
                       {"torus_dims", p.torus_dims},
                       {"collective_model", hardware::collective_model_name(hardware::default_collective_model(p))},
                       {"host", host_json(p.host)},
                       {"sources", tagged_sources(p.sources)}});
    }
  } else if (what == "networks") {
    for (const auto& n : hardware::builtin_network_names()) {
      const auto net = hardware::load_network_preset(n);
      items.push_back({{"name", n},
                       {"description", net.description},
                       {"gpus_per_nic", net.gpus_per_nic},
                       {"nic_bandwidth_bytes_per_s", net.nic_bandwidth_bytes_per_s},
                       {"fabric_latency_per_log2_nodes_s", net.fabric_latency_per_log2_nodes_s},
                       {"fabric_bandwidth_efficiency", net.fabric_bandwidth_efficiency},
                       {"sources", tagged_sources(net.sources)}});
    }
  } else if (what == "models") {
    for (const auto& n : builtin_model_names()) {
      const auto m = load_model(n);
      items.push_back({{"name", n},
                       {"kind", m.kind},
                       {"hf_model_type", m.hf_model_type.empty() ? J(nullptr) : J(m.hf_model_type)},
                       {"parameters", m.parameter_count()},
                       {"active_parameters", m.active_parameter_count()},
                       {"layers", m.layers.size()},
                       {"sample_unit", m.sample_unit()},
                       {"source", m.source}});
    }
  } else if (what == "strategies") {
    for (const auto& st : strategy_registry()) items.push_back({{"name", st.name}, {"description", st.description}});
  } else if (what == "fields") {
    items = field_reference_json();
  } else {
    const std::vector<std::string> kinds = {"profiles", "networks", "models", "strategies", "fields"};
    throw InputError("list", "", fmt::format("unknown list '{}'; expected one of: {}{}", excerpt(what),
                                             join_names(kinds), did_you_mean(what, kinds)));
  }
  J j;
  j["schema"] = "stepsim.list/1";
  j["what"] = what == "hardware" ? "profiles" : what;
  j["items"] = std::move(items);
  return j;
}

nlohmann::ordered_json tensors_json(const std::string& ref) {
  using J = nlohmann::ordered_json;
  const ModelSpec m = load_model(ref, "list tensors", "");
  J tensors = J::array();
  for (const auto& l : m.layers)
    for (const auto& p : l.params)
      tensors.push_back({{"layer", l.name}, {"name", p.name}, {"numel", p.numel}, {"dtype", dtype_name(p.dtype)},
                         {"trainable", p.trainable}});
  return {{"schema", "stepsim.tensors/1"},
          {"model", m.name},
          {"kind", m.kind},
          {"hf_model_type", m.hf_model_type.empty() ? J(nullptr) : J(m.hf_model_type)},
          {"parameters", m.parameter_count()},
          {"active_parameters", m.active_parameter_count()},
          {"tensors", std::move(tensors)}};
}

}  // namespace stepsim::models
