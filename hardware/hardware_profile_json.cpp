// SPDX-License-Identifier: Apache-2.0
// JSON <-> HardwareProfile: the only file in hardware/ that sees JSON.
#include "hardware/hardware_profile_json.hpp"

#include "sim/support/embedded.hpp"
#include "sim/support/error.hpp"
#include "sim/support/json_reader.hpp"
#include "sim/support/names.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <optional>

namespace stepsim::hardware {

std::string gpus_per_node_problem(std::int64_t gpus_per_node) {
  if (gpus_per_node >= 1 && gpus_per_node <= kMaxGpusPerNode) return "";
  return fmt::format("expected 1 to {} GPUs in one node (its NVLink / NVSwitch scale-up domain; NVL{} is the "
                     "largest built, a larger cluster is more nodes), got {}",
                     kMaxGpusPerNode, kMaxGpusPerNode, gpus_per_node);
}

void apply_network_flag(HardwareProfile& hw, const std::string& name, const std::string& flag) {
  if (name.empty())
    throw InputError(flag, "", fmt::format("expected a network preset name ({}), got ''", join_names(builtin_network_names())));
  if (hw.is_torus())
    throw InputError(flag, "", fmt::format("profile '{}' is a torus: its chips talk over ICI and it has no NICs for a "
                                           "network preset to set", hw.name));
  apply_network_preset(hw, load_network_preset(name, flag), flag);
}

void apply_network_preset(HardwareProfile& hw, const NetworkPreset& preset, const std::string& source,
                          const std::string& pointer) {
  if (preset.gpus_per_nic > hw.gpus_per_node)
    throw InputError(source, pointer,
                     fmt::format("network '{}' puts {} GPUs on each NIC, but profile '{}' has {} GPUs per node",
                                 preset.name, preset.gpus_per_nic, hw.name, hw.gpus_per_node));
  hw.gpus_per_nic = preset.gpus_per_nic;
  hw.nics_per_node = (hw.gpus_per_node + preset.gpus_per_nic - 1) / preset.gpus_per_nic;
  hw.nic_bandwidth_bytes_per_s = preset.nic_bandwidth_bytes_per_s;
  hw.inter_node.bandwidth_bytes_per_s = hw.node_egress_bytes_per_s();
  hw.fabric_latency_per_log2_nodes_s = preset.fabric_latency_per_log2_nodes_s;
  hw.fabric_bandwidth_efficiency = preset.fabric_bandwidth_efficiency;
  hw.network_preset = preset.name;
}

std::vector<std::string> source_kinds(const std::string& source) {
  const auto colon = source.find(':');
  if (colon == std::string::npos) return {};
  std::vector<std::string> kinds;
  std::size_t at = 0;
  while (at <= colon) {
    std::size_t end = source.find(',', at);
    if (end == std::string::npos || end > colon) end = colon;
    std::string word = source.substr(at, end - at);
    while (!word.empty() && word.front() == ' ') word.erase(word.begin());
    while (!word.empty() && word.back() == ' ') word.pop_back();
    const auto& names = source_kind_names();
    if (std::find(names.begin(), names.end(), word) == names.end()) return {};
    kinds.push_back(word);
    at = end + 1;
  }
  return kinds;
}

namespace detail {
const std::vector<EmbeddedFile>& builtin_profiles();  // generated from hardware/profiles/
const std::vector<EmbeddedFile>& builtin_networks();  // generated from hardware/networks/
}

std::vector<std::string> builtin_network_names() {
  std::vector<std::string> names;
  for (const auto& f : detail::builtin_networks()) names.emplace_back(f.name);
  return names;
}

namespace {

// inter_node.fabric_latency_per_log2_nodes_s and fabric_bandwidth_efficiency, in a profile's
// inter_node or a preset's: the same checks in both.
void read_fabric_terms(const JsonReader& r, double& latency_s, double& efficiency) {
  latency_s = r.number_or("fabric_latency_per_log2_nodes_s", latency_s, Check::NonNegative, Dimension::Seconds);
  if (latency_s > 1e-2)
    r.fail("fabric_latency_per_log2_nodes_s",
           fmt::format("{:g} s per doubling of the node count is no network latency (the public logs give "
                       "10-130 us); expected seconds below 0.01, e.g. \"30us\"", latency_s));
  efficiency = r.number_or("fabric_bandwidth_efficiency", efficiency, Check::Fraction);
  if (efficiency < 0.05)
    r.fail("fabric_bandwidth_efficiency",
           fmt::format("{:g} of the NICs' line rate is no fabric efficiency (the public logs give 0.5-1); expected "
                       "a fraction in [0.05, 1]", efficiency));
}

}  // namespace

namespace {

// The preset file of `name`, unparsed; nullptr text when there is none.
const EmbeddedFile* network_file(const std::string& name) {
  for (const auto& f : detail::builtin_networks())
    if (name == f.name) return &f;
  return nullptr;
}

}  // namespace

NetworkPreset load_network_preset(const std::string& name, const std::string& source, const std::string& pointer) {
  if (const EmbeddedFile* f = network_file(name)) {
    const std::string file = "hardware/networks/" + name + ".json";
    const nlohmann::json doc = parse_json_text(f->text, file);
    const JsonReader root(doc, file, "");
    NetworkPreset n;
    n.name = root.string("name");
    n.description = root.string_or("description", "");
    for (const auto& src : root.value("sources")) n.sources.push_back(src.get<std::string>());  // built in: tested
    const JsonReader inter = root.object("inter_node");
    n.gpus_per_nic = static_cast<int>(inter.integer("gpus_per_nic", 1, 1 << 20));
    n.nic_bandwidth_bytes_per_s = inter.number("nic_bandwidth_bytes_per_s", Check::Positive, Dimension::BytesPerSecond);
    read_fabric_terms(inter, n.fabric_latency_per_log2_nodes_s, n.fabric_bandwidth_efficiency);
    inter.finish();
    root.finish();
    return n;
  }
  const auto names = builtin_network_names();
  throw InputError(source, pointer,
                   fmt::format("no network preset '{}'; known presets: {}{}", excerpt(name), join_names(names),
                               did_you_mean(name, names)));
}

namespace {

LinkScope read_scope(const JsonReader& r, bool need_bandwidth) {
  LinkScope s;
  if (need_bandwidth)
    s.bandwidth_bytes_per_s = r.number("bandwidth_bytes_per_s", Check::Positive, Dimension::BytesPerSecond);
  s.base_latency_s = r.number_or("base_latency_s", 0.0, Check::NonNegative, Dimension::Seconds);
  s.step_latency_s = r.number_or("step_latency_s", 0.0, Check::NonNegative, Dimension::Seconds);
  return s;
}

}  // namespace

GemmCurve read_gemm_curve(const JsonReader& r, int default_sms) {
  GemmCurve c;
  c.max_efficiency = r.number("max_efficiency", Check::Fraction);
  c.overhead_s = r.number_or("overhead_s", 0.0, Check::NonNegative, Dimension::Seconds);
  if (c.overhead_s >= 1.0) r.fail("overhead_s", fmt::format("expected a per-kernel overhead below 1 s (e.g. \"5us\"), got {:g}", c.overhead_s));
  c.tf32_max_efficiency = r.number_or("tf32_max_efficiency", 0.0, Check::Fraction);
  c.fp32_max_efficiency = r.number_or("fp32_max_efficiency", 0.0, Check::Fraction);
  c.fp8_max_efficiency = r.number_or("fp8_max_efficiency", 0.0, Check::Fraction);
  for (const auto& [key, v] : {std::pair{"max_efficiency", c.max_efficiency}, std::pair{"tf32_max_efficiency", c.tf32_max_efficiency},
                               std::pair{"fp32_max_efficiency", c.fp32_max_efficiency}, std::pair{"fp8_max_efficiency", c.fp8_max_efficiency}})
    if (r.has(key) && v < 0.01)
      r.fail(key, fmt::format("{:g} of peak is no achieved GEMM efficiency (a large cuBLAS GEMM reaches 0.5-0.9); "
                              "expected a fraction in [0.01, 1]", v));
  c.tile_m = static_cast<int>(r.integer_or("tile_m", 128, 1, 4096));
  c.tile_n = static_cast<int>(r.integer_or("tile_n", 128, 1, 4096));
  if (default_sms > 0)
    c.sms = static_cast<int>(r.integer_or("sms", default_sms, 1, 4096));
  else
    c.sms = static_cast<int>(r.integer("sms", 1, 4096));
  return c;
}

std::vector<std::string> builtin_profile_names() {
  std::vector<std::string> names;
  for (const auto& f : detail::builtin_profiles()) names.emplace_back(f.name);
  return names;
}

HardwareProfile parse_profile(const nlohmann::json& doc, const std::string& source,
                              const std::string& pointer) {
  JsonReader root(doc, source, pointer);
  HardwareProfile p;
  p.name = root.string("name");
  p.description = root.string_or("description", "");
  if (root.has("sources")) {
    const nlohmann::json& sources = doc.at("sources");
    if (!sources.is_array()) root.fail("sources", "expected an array of strings, got " + json_excerpt(sources));
    for (const auto& s : sources) {
      if (!s.is_string()) root.fail("sources", "expected an array of strings, got " + json_excerpt(s));
      p.sources.push_back(s.get<std::string>());
    }
  }
  const JsonReader compute = root.object("compute");
  p.peak_flops_per_s = compute.number("peak_flops_per_s", Check::Positive, Dimension::FlopsPerSecond);
  p.gemm_efficiency = compute.number_or("gemm_efficiency", 0.7, Check::Fraction);
  p.tf32_flops_per_s = compute.number_or("tf32_flops_per_s", 0.0, Check::Positive, Dimension::FlopsPerSecond);
  p.fp32_flops_per_s = compute.number_or("fp32_flops_per_s", 0.0, Check::Positive, Dimension::FlopsPerSecond);
  p.fp8_flops_per_s = compute.number_or("fp8_flops_per_s", 0.0, Check::Positive, Dimension::FlopsPerSecond);
  p.sm_count = static_cast<int>(compute.integer_or("sm_count", 0, 0, 4096));
  if (compute.has("boost_clock_mhz") || compute.has("sustained_clock_mhz")) {
    p.boost_clock_mhz = compute.number("boost_clock_mhz", Check::Positive);
    p.sustained_clock_mhz = compute.number("sustained_clock_mhz", Check::Positive);
    for (const auto& [key, v] : {std::pair{"boost_clock_mhz", p.boost_clock_mhz}, std::pair{"sustained_clock_mhz", p.sustained_clock_mhz}})
      if (v < 100 || v > 5000) compute.fail(key, fmt::format("expected a clock in [100, 5000] MHz, got {:g}", v));
    if (p.sustained_clock_mhz > p.boost_clock_mhz)
      compute.fail("sustained_clock_mhz", fmt::format("{:g} MHz is above compute.boost_clock_mhz ({:g}); expected the clock "
                                                      "sustained under the power limit, at most the peak's",
                                                      p.sustained_clock_mhz, p.boost_clock_mhz));
  }
  if (const auto curve = compute.optional_object("gemm_curve")) {
    p.gemm_curve = read_gemm_curve(*curve, p.sm_count);
    curve->finish();
  }
  if (const auto att = compute.optional_object("attention")) {
    for (const std::string& name : attention_kernel_names()) {
      const auto k = att->optional_object(name);
      if (!k) continue;
      AttentionThroughput kernel;
      kernel.kernel = name;
      kernel.source = k->string_or("source", "");
      for (const JsonReader& c : k->objects("curves", true)) {
        AttentionCurve curve;
        curve.causal = c.boolean_or("causal", true);
        curve.head_dim = static_cast<int>(c.integer("head_dim", 1, 1024));
        for (std::int64_t v : c.integers("seq_len", 1, std::int64_t{1} << 30)) curve.seq_len.push_back(static_cast<double>(v));
        if (curve.seq_len.empty()) c.fail("seq_len", "expected at least one sequence length");
        for (std::size_t i = 1; i < curve.seq_len.size(); ++i)
          if (!(curve.seq_len[i] > curve.seq_len[i - 1])) c.fail("seq_len", "expected ascending sequence lengths");
        curve.fwd_bwd_flops_per_s = c.numbers("fwd_bwd_flops_per_s", Check::Positive, Dimension::FlopsPerSecond);
        if (curve.fwd_bwd_flops_per_s.size() != curve.seq_len.size())
          c.fail("fwd_bwd_flops_per_s", fmt::format("expected {} values, one per seq_len, got {}", curve.seq_len.size(),
                                                    curve.fwd_bwd_flops_per_s.size()));
        for (std::size_t i = 0; i < curve.fwd_bwd_flops_per_s.size(); ++i)
          if (!(curve.fwd_bwd_flops_per_s[i] < p.peak_flops_per_s))  // a kernel never beats the peak
            throw InputError(source, fmt::format("{}/{}", c.path("fwd_bwd_flops_per_s"), i),
                             fmt::format("{:g} FLOP/s is not below compute.peak_flops_per_s ({:g}); expected a measured "
                                         "throughput under the peak", curve.fwd_bwd_flops_per_s[i], p.peak_flops_per_s));
        for (const auto& other : kernel.curves)
          if (other.causal == curve.causal && other.head_dim == curve.head_dim)
            c.fail("head_dim", fmt::format("{} with causal {} is already an earlier curve of '{}'; expected one curve "
                                           "per (causal, head_dim)", curve.head_dim, curve.causal, name));
        c.finish();
        kernel.curves.push_back(std::move(curve));
      }
      k->finish();
      p.attention.push_back(std::move(kernel));
    }
    att->finish();
  }
  compute.finish();

  const JsonReader memory = root.object("memory");
  p.hbm_bytes = memory.number("hbm_bytes", Check::Positive, Dimension::Bytes);
  p.hbm_reserved_bytes = memory.number_or("reserved_bytes", 0.0, Check::NonNegative, Dimension::Bytes);
  if (!(p.hbm_reserved_bytes < p.hbm_bytes))
    memory.fail("reserved_bytes", fmt::format("expected less than hbm_bytes ({:g} bytes), got {:g}", p.hbm_bytes,
                                              p.hbm_reserved_bytes));
  p.hbm_bandwidth_bytes_per_s =
      memory.number("hbm_bandwidth_bytes_per_s", Check::Positive, Dimension::BytesPerSecond);
  p.hbm_efficiency = memory.number_or("hbm_efficiency", 0.85, Check::Fraction);
  memory.finish();

  const JsonReader node = root.object("node");
  const std::int64_t gpn = node.integer("gpus_per_node", 1, INT64_MAX);
  if (const std::string why = gpus_per_node_problem(gpn); !why.empty()) node.fail("gpus_per_node", why);
  p.gpus_per_node = static_cast<int>(gpn);
  node.finish();

  if (const auto host = root.optional_object("host")) {  // issue 17 item 1: offload and checkpoints
    HostFacts& h = p.host;
    h.pcie_generation = static_cast<int>(host->integer_or("pcie_generation", 0, 1, 7));
    h.pcie_lanes = static_cast<int>(host->integer_or("pcie_lanes", 16, 1, 32));
    h.h2d_bytes_per_s = host->number("h2d_bytes_per_s", Check::Positive, Dimension::BytesPerSecond);
    h.d2h_bytes_per_s = host->number("d2h_bytes_per_s", Check::Positive, Dimension::BytesPerSecond);
    h.gpus_per_pcie_switch = static_cast<int>(host->integer_or("gpus_per_pcie_switch", 1, 1, kMaxGpusPerNode));
    if (h.gpus_per_pcie_switch > p.gpus_per_node)
      host->fail("gpus_per_pcie_switch", fmt::format("expected at most node.gpus_per_node ({}) GPUs behind one PCIe "
                                                     "switch, got {}",
                                                     p.gpus_per_node, h.gpus_per_pcie_switch));
    h.memory_bytes = host->number("memory_bytes", Check::Positive, Dimension::Bytes);
    h.cpu_cores = static_cast<int>(host->integer_or("cpu_cores", 0, 0, 1 << 20));
    h.cpu_adam_params_per_s = host->number("cpu_adam_params_per_s", Check::Positive);
    h.nvme_read_bytes_per_s = host->number_or("nvme_read_bytes_per_s", 0.0, Check::NonNegative, Dimension::BytesPerSecond);
    h.nvme_write_bytes_per_s = host->number_or("nvme_write_bytes_per_s", 0.0, Check::NonNegative, Dimension::BytesPerSecond);
    h.nvme_bytes = host->number_or("nvme_bytes", 0.0, Check::NonNegative, Dimension::Bytes);
    // NVMe: all three facts or none.
    const std::pair<const char*, double> nvme[] = {{"nvme_read_bytes_per_s", h.nvme_read_bytes_per_s},
                                                   {"nvme_write_bytes_per_s", h.nvme_write_bytes_per_s},
                                                   {"nvme_bytes", h.nvme_bytes}};
    int given = 0;
    for (const auto& [key, v] : nvme) given += v > 0 ? 1 : 0;
    if (given > 0 && given < 3)
      for (const auto& [key, v] : nvme)
        if (!(v > 0))
          host->fail(key, fmt::format("{} is {}: expected NVMe read bandwidth, write bandwidth and nvme_bytes together "
                                      "(all > 0), or none of them",
                                      key, host->has(key) ? fmt::format("{:g}", v) : std::string("missing")));
    for (const auto& [key, v] : {std::pair{"h2d_bytes_per_s", h.h2d_bytes_per_s}, std::pair{"d2h_bytes_per_s", h.d2h_bytes_per_s}})
      if (v < 1e6 || v > 1e13)
        host->fail(key, fmt::format("expected a host link's bandwidth in [1e6, 1e13] bytes/s, got {:g}", v));
    if (h.cpu_adam_params_per_s < 1e3 || h.cpu_adam_params_per_s > 1e13)
      host->fail("cpu_adam_params_per_s", fmt::format("expected a CPU Adam rate in [1e3, 1e13] parameters/s per node, "
                                                      "got {:g}",
                                                      h.cpu_adam_params_per_s));
    host->finish();
  }

  const JsonReader intra = root.object("intra_node");
  p.intra_node_fabric = intra.choice_or("fabric", "nvlink", {"nvlink", "ici", "pcie", "xgmi"});
  p.intra_node = read_scope(intra, true);
  p.intra_peer_bandwidth_bytes_per_s =
      intra.number_or("peer_bandwidth_bytes_per_s", 0.0, Check::Positive, Dimension::BytesPerSecond);
  if (intra.has("peer_bandwidth_bytes_per_s") && p.intra_node_fabric == "ici")
    intra.fail("peer_bandwidth_bytes_per_s", "a per-peer bandwidth describes a switchless GPU mesh (xGMI, NVLink "
                                             "bridges); an ICI torus prices its axes (torus.axis_bandwidth_bytes_per_s)");
  if (p.intra_peer_bandwidth_bytes_per_s > p.intra_node.bandwidth_bytes_per_s)
    intra.fail("peer_bandwidth_bytes_per_s",
               fmt::format("{:g} bytes/s to one peer is more than the GPU's whole intra-node bandwidth ({:g}); "
                           "expected at most intra_node.bandwidth_bytes_per_s",
                           p.intra_peer_bandwidth_bytes_per_s, p.intra_node.bandwidth_bytes_per_s));
  intra.finish();

  if (const auto torus = root.optional_object("torus")) {
    for (std::int64_t d : torus->integers("dims", 1, 1 << 16)) p.torus_dims.push_back(static_cast<int>(d));
    if (p.torus_dims.empty() || p.torus_dims.size() > 3)
      torus->fail("dims", "expected 1 to 3 torus dimensions");
    p.torus_axis.bandwidth_bytes_per_s =
        torus->number("axis_bandwidth_bytes_per_s", Check::Positive, Dimension::BytesPerSecond);
    p.torus_axis.base_latency_s = torus->number_or("base_latency_s", 0.0, Check::NonNegative, Dimension::Seconds);
    p.torus_axis.step_latency_s = torus->number_or("step_latency_s", 0.0, Check::NonNegative, Dimension::Seconds);
    torus->finish();
  }

  // "network": a preset whose NICs and fabric terms are the defaults of inter_node's (a field
  // written in inter_node wins over the preset's).
  std::optional<NetworkPreset> preset;
  if (root.has("network")) {
    if (p.is_torus())
      root.fail("network", "a network preset sets a GPU cluster's NICs; a torus profile has none (its chips talk over ICI)");
    preset = load_network_preset(root.string("network"), source, root.path("network"));
    if (preset->gpus_per_nic > p.gpus_per_node)
      root.fail("network", fmt::format("network '{}' puts {} GPUs on each NIC, but the node has {} GPUs", preset->name,
                                       preset->gpus_per_nic, p.gpus_per_node));
    p.network_preset = preset->name;
  }
  const auto inter = root.optional_object("inter_node");
  if (inter || preset) {
    const auto has = [&](const char* key) { return inter && inter->has(key); };
    const bool nics_given = has("nics_per_node") || !preset;
    if (nics_given) p.nics_per_node = static_cast<int>(inter->integer("nics_per_node", 1, 1024));
    if (has("gpus_per_nic") || !preset) {
      // Default: the node's GPUs spread evenly over its NICs (the preset's share when only it
      // gives the NIC count).
      const int even = nics_given ? (p.gpus_per_node + p.nics_per_node - 1) / p.nics_per_node : preset->gpus_per_nic;
      p.gpus_per_nic = static_cast<int>(inter->integer_or("gpus_per_nic", even, 1, 1 << 20));
    } else {
      p.gpus_per_nic = preset->gpus_per_nic;
    }
    // A preset gives NICs per GPU: the node has one per gpus_per_nic of its GPUs.
    if (!nics_given) p.nics_per_node = (p.gpus_per_node + p.gpus_per_nic - 1) / p.gpus_per_nic;
    const auto fail = [&](const char* key, const std::string& why) {
      if (inter) inter->fail(key, why);
      root.fail("network", why);
    };
    const int even = (p.gpus_per_node + p.nics_per_node - 1) / p.nics_per_node;
    if (static_cast<long long>(p.gpus_per_nic) * p.nics_per_node < p.gpus_per_node)
      fail("gpus_per_nic", fmt::format("{} NICs serving {} GPU{} each leave GPUs of the {}-GPU node without a NIC; "
                                       "expected gpus_per_nic ≥ {}", p.nics_per_node, p.gpus_per_nic,
                                       p.gpus_per_nic == 1 ? "" : "s", p.gpus_per_node, even));
    if (p.gpus_per_nic > p.gpus_per_node)
      fail("gpus_per_nic", fmt::format("expected at most gpus_per_node ({}), got {}", p.gpus_per_node, p.gpus_per_nic));
    // NICs no GPU drives would be egress the collectives never use (HardwareProfile::group_nics).
    const int used = (p.gpus_per_node + p.gpus_per_nic - 1) / p.gpus_per_nic;
    if (p.nics_per_node > used)
      fail("nics_per_node", fmt::format("{} NICs, but {} GPUs at {} per NIC drive only {}; expected "
                                        "nics_per_node x gpus_per_nic = gpus_per_node ({})",
                                        p.nics_per_node, p.gpus_per_node, p.gpus_per_nic, used, p.gpus_per_node));
    if (has("nic_bandwidth_bytes_per_s") || !preset)
      p.nic_bandwidth_bytes_per_s = inter->number("nic_bandwidth_bytes_per_s", Check::Positive, Dimension::BytesPerSecond);
    else
      p.nic_bandwidth_bytes_per_s = preset->nic_bandwidth_bytes_per_s;
    if (preset) {
      p.fabric_latency_per_log2_nodes_s = preset->fabric_latency_per_log2_nodes_s;
      p.fabric_bandwidth_efficiency = preset->fabric_bandwidth_efficiency;
    }
    if (inter) {
      p.inter_node = read_scope(*inter, false);
      read_fabric_terms(*inter, p.fabric_latency_per_log2_nodes_s, p.fabric_bandwidth_efficiency);
      inter->finish();
    }
    p.inter_node.bandwidth_bytes_per_s = p.node_egress_bytes_per_s();
  } else if (!p.is_torus()) {
    root.fail("inter_node", "required field is missing (NICs per node and per-NIC bandwidth, or a \"network\" "
                            "preset; only torus profiles may omit it)");
  }
  if (inter && p.is_torus())
    root.fail("inter_node", "a torus profile's chips talk over ICI: NICs would price nothing (multi-slice DCN data "
                            "parallelism is not modelled); drop inter_node");
  if (const auto nccl = root.optional_object("nccl")) {
    if (!nccl->has("arch"))
      nccl->fail("arch", "required field is missing (GPU generation for NCCL's tuning tables: volta, ampere, hopper or blackwell)");
    p.nccl.arch = nccl->choice_or("arch", "hopper", {"volta", "ampere", "hopper", "blackwell"});
    p.nccl.intra_link = nccl->choice_or("intra_link", "nvlink", {"nvlink", "pci"});
    p.nccl.ring_channels = static_cast<int>(nccl->integer("ring_channels", 1, 32));
    p.nccl.channel_bandwidth_bytes_per_s =
        nccl->number("channel_bandwidth_bytes_per_s", Check::Positive, Dimension::BytesPerSecond);
    p.nccl.nvls = nccl->boolean_or("nvls", false);
    p.nccl.nvls_bus_bandwidth_bytes_per_s =
        nccl->number_or("nvls_bus_bandwidth_bytes_per_s", 0.0, Check::NonNegative, Dimension::BytesPerSecond);
    p.nccl.net_latency_s = nccl->number_or("net_latency_s", 0.0, Check::NonNegative, Dimension::Seconds);
    if (p.nccl.net_latency_s > 1.0) nccl->fail("net_latency_s", "expected seconds below 1 (e.g. 0 or \"2us\")");
    p.nccl.launch_overhead_s = nccl->number_or("launch_overhead_s", NcclTopology::kDefaultLaunchOverheadS,
                                               Check::NonNegative, Dimension::Seconds);
    if (p.nccl.launch_overhead_s > 1e-3)
      nccl->fail("launch_overhead_s", "expected seconds below 1 ms (e.g. \"4us\", or 0 for CUDA graphs)");
    if (p.nccl.channel_bandwidth_bytes_per_s < 1e6 || p.nccl.channel_bandwidth_bytes_per_s > 1e13)
      nccl->fail("channel_bandwidth_bytes_per_s",
                 fmt::format("expected a per-channel bandwidth in [1e6, 1e13] bytes/s (NCCL's are 3-90 GB/s), got {:g}",
                             p.nccl.channel_bandwidth_bytes_per_s));
    if (p.nccl.nvls && p.intra_peer_bandwidth_bytes_per_s > 0)
      nccl->fail("nvls", "NVLS needs an NVSwitch, and intra_node.peer_bandwidth_bytes_per_s says the GPUs are joined "
                         "point to point without one; drop one of them");
    nccl->finish();
  }
  root.finish();
  // Physically meaningless magnitudes (denormals, 1e300) would print inf or 300-digit numbers.
  const auto in_range = [&](const JsonReader& r, const char* key, double v, double lo, double hi, const char* unit) {
    if (v < lo || v > hi)
      r.fail(key, fmt::format("expected {} in [{:g}, {:g}] {}, got {:g}", key, lo, hi, unit, v));
  };
  in_range(compute, "peak_flops_per_s", p.peak_flops_per_s, 1e6, 1e21, "FLOP/s");
  for (const auto& [key, v] : {std::pair{"tf32_flops_per_s", p.tf32_flops_per_s}, std::pair{"fp32_flops_per_s", p.fp32_flops_per_s},
                               std::pair{"fp8_flops_per_s", p.fp8_flops_per_s}})
    if (compute.has(key)) in_range(compute, key, v, 1e6, 1e21, "FLOP/s");
  // The arithmetics' peaks keep the order every GPU has: FP32 ≤ TF32 ≤ BF16/FP16 ≤ FP8.
  const auto order = [&](const char* key, double v, const char* than, double w, const char* rel) {
    compute.fail(key, fmt::format("{:g} FLOP/s is {} compute.{} ({:g}); expected FP32 <= TF32 <= BF16/FP16 "
                                  "(peak_flops_per_s) <= FP8, as on every GPU",
                                  v, rel, than, w));
  };
  if (p.fp8_flops_per_s > 0 && p.fp8_flops_per_s < p.peak_flops_per_s)
    order("fp8_flops_per_s", p.fp8_flops_per_s, "peak_flops_per_s", p.peak_flops_per_s, "below");
  if (p.tf32_flops_per_s > p.peak_flops_per_s)
    order("tf32_flops_per_s", p.tf32_flops_per_s, "peak_flops_per_s", p.peak_flops_per_s, "above");
  if (p.fp32_flops_per_s > p.peak_flops_per_s)
    order("fp32_flops_per_s", p.fp32_flops_per_s, "peak_flops_per_s", p.peak_flops_per_s, "above");
  if (p.tf32_flops_per_s > 0 && p.fp32_flops_per_s > p.tf32_flops_per_s)
    order("fp32_flops_per_s", p.fp32_flops_per_s, "tf32_flops_per_s", p.tf32_flops_per_s, "above");
  in_range(memory, "hbm_bytes", p.hbm_bytes, 1e6, 1e18, "bytes");
  in_range(memory, "hbm_bandwidth_bytes_per_s", p.hbm_bandwidth_bytes_per_s, 1e3, 1e18, "bytes/s");
  in_range(intra, "bandwidth_bytes_per_s", p.intra_node.bandwidth_bytes_per_s, 1e3, 1e18, "bytes/s");
  if (p.nics_per_node > 0 && inter && inter->has("nic_bandwidth_bytes_per_s"))
    in_range(*inter, "nic_bandwidth_bytes_per_s", p.nic_bandwidth_bytes_per_s, 1e3, 1e18, "bytes/s");
  if (p.is_torus())
    in_range(*root.optional_object("torus"), "axis_bandwidth_bytes_per_s", p.torus_axis.bandwidth_bytes_per_s, 1e3, 1e18, "bytes/s");
  for (const LinkScope* l : {&p.intra_node, &p.inter_node, &p.torus_axis})
    if (l->base_latency_s > 1.0 || l->step_latency_s > 1.0)
      root.fail(l == &p.intra_node ? "intra_node" : l == &p.inter_node ? "inter_node" : "torus",
                "latencies above 1 s are not a collective's latency (expected seconds, e.g. 5e-6 or \"5us\")");
  return p;
}

nlohmann::json profile_document(const std::string& ref, const std::string& source, const std::string& pointer) {
  const bool is_path = ref.find('/') != std::string::npos ||
                       (ref.size() > 5 && ref.substr(ref.size() - 5) == ".json");
  if (is_path) return read_json_file(ref);
  for (const auto& f : detail::builtin_profiles())
    if (ref == f.name) {
      static CatalogMemo<std::string, nlohmann::json> memo;
      return memo.get(ref, [&] { return parse_json_text(f.text, "hardware/profiles/" + ref + ".json"); });
    }
  const auto names = builtin_profile_names();
  throw InputError(source, pointer,
                   "no hardware profile '" + ref + "'" + did_you_mean(ref, names) +
                       "; give a path to a .json file or a known profile (stepsim list profiles): " + join_names(names));
}

HardwareProfile load_profile(const std::string& ref, const std::string& source,
                             const std::string& pointer) {
  for (const auto& f : detail::builtin_profiles())
    if (ref == f.name) {
      static CatalogMemo<std::string, HardwareProfile> memo;
      return memo.get(ref, [&] { return parse_profile(profile_document(ref, source, pointer), ref); });
    }
  return parse_profile(profile_document(ref, source, pointer), ref);
}

namespace {

// The dotted paths of the leaves `patch` sets that change `base` (an object's keys,
// recursively; an empty object or a null over an absent key changes nothing).
void changed_paths(const nlohmann::json& patch, const nlohmann::json* base, const std::string& prefix,
                   std::vector<std::string>& out) {
  for (auto it = patch.begin(); it != patch.end(); ++it) {
    const std::string path = prefix.empty() ? it.key() : prefix + "." + it.key();
    const nlohmann::json* was = base && base->is_object() && base->contains(it.key()) ? &base->at(it.key()) : nullptr;
    if (it->is_object()) {
      changed_paths(*it, was, path, out);
    } else if (it->is_null() ? was != nullptr : (!was || *was != *it)) {
      out.push_back(path);
    }
  }
}

}  // namespace

HardwareProfile parse_profile_over_base(const nlohmann::json& doc, const std::string& base_ref,
                                        const std::string& source, const std::string& pointer) {
  nlohmann::json base = profile_document(base_ref, source, pointer + "/base");
  if (!base.is_object()) throw InputError(base_ref, "", "expected a profile object, got " + json_excerpt(base));
  if (base.contains("base"))
    throw InputError(base_ref, "/base",
                     fmt::format("'{}' is itself a profile over a base; a scenario's base must be a whole profile "
                                 "(one level)", base_ref));
  // The base on its own first: what is wrong in it is named in its file, not the scenario.
  const HardwareProfile whole = parse_profile(base, base_ref);
  nlohmann::json patch = doc;
  patch.erase("base");
  // A patch naming a network puts its NICs and fabric terms in place of the base's (a field the
  // patch itself writes in inter_node still wins over the preset's).
  if (patch.contains("network") && base.contains("inter_node") && base["inter_node"].is_object())
    for (const char* key : {"nics_per_node", "gpus_per_nic", "nic_bandwidth_bytes_per_s", "fabric_latency_per_log2_nodes_s",
                            "fabric_bandwidth_efficiency"})
      base["inter_node"].erase(key);
  nlohmann::json merged = base;
  merged.merge_patch(patch);
  // A patch that shrinks the node without naming the PCIe switches keeps the base's switches
  // at most node-wide (the base's 2 GPUs per switch on a 1-GPU node: 1).
  if (patch.contains("node") && patch["node"].is_object() && patch["node"].contains("gpus_per_node") &&
      patch["node"]["gpus_per_node"].is_number_integer() &&
      !(patch.contains("host") && patch["host"].is_object() && patch["host"].contains("gpus_per_pcie_switch")) &&
      merged.contains("host") && merged["host"].is_object() && merged["host"].contains("gpus_per_pcie_switch") &&
      merged["host"]["gpus_per_pcie_switch"].is_number_integer()) {
    const auto gpn = patch["node"]["gpus_per_node"].get<std::int64_t>();
    if (gpn >= 1 && merged["host"]["gpus_per_pcie_switch"].get<std::int64_t>() > gpn) merged["host"]["gpus_per_pcie_switch"] = gpn;
  }
  HardwareProfile p = parse_profile(merged, source, pointer);
  p.base = whole.name;
  for (const char* meta : {"name", "description", "sources"}) patch.erase(meta);  // not numbers
  // What the base's preset fills in is the base's value too: a patch writing the same changes
  // nothing (the NICs of a base on a network are its preset's).
  if (!patch.contains("network") && base.contains("network") && base["network"].is_string())
    if (const EmbeddedFile* f = network_file(base["network"].get<std::string>())) {
      const nlohmann::json preset = parse_json_text(f->text, "hardware/networks/" + base["network"].get<std::string>() + ".json");
      nlohmann::json& inter = base["inter_node"];
      for (auto it = preset["inter_node"].begin(); it != preset["inter_node"].end(); ++it)
        if (!inter.contains(it.key())) inter[it.key()] = *it;
      if (!inter.contains("nics_per_node"))
        inter["nics_per_node"] = (whole.gpus_per_node + whole.gpus_per_nic - 1) / whole.gpus_per_nic;
    }
  changed_paths(patch, &base, "", p.overridden);
  return p;
}

}  // namespace stepsim::hardware
