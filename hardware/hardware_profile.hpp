// SPDX-License-Identifier: Apache-2.0
// HardwareProfile: nominal datasheet numbers of one accelerator and its cluster fabric.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace stepsim::hardware {

/// One communication scope (a link class) of the α-β model: per-rank one-way bandwidth and
/// the latency terms NCCL's cost model splits a collective's latency into (semantics.md §D.2):
/// a base latency per collective plus a per-step (per-hop) latency.
struct LinkScope {
  double bandwidth_bytes_per_s = 0;  ///< per rank (GPU) one way for intra-node; see users
  double base_latency_s = 0;         ///< once per collective
  double step_latency_s = 0;         ///< per ring step on this scope
};

/// What NCCL's tuner would see on this machine (semantics.md §D.2 rule 82: "the simulator
/// should take graph.nChannels and graph.bwIntra/bwInter as calibrated inputs"). Read from the
/// profile's optional "nccl" object; `arch` empty means the profile has none (e.g. a TPU), and
/// the NCCL cost model (hardware/nccl_model.hpp) refuses it.
struct NcclTopology {
  std::string arch;                 ///< "volta" | "ampere" | "hopper" | "blackwell"; "" = none
  std::string intra_link = "nvlink";  ///< "nvlink" | "pci": which hwLat row intra-node steps use
  int ring_channels = 0;            ///< search-graph channels of the intra-node ring (runtime = 2×)
  double channel_bandwidth_bytes_per_s = 0;  ///< search-graph bandwidth per channel (graph.bwIntra)
  bool nvls = false;                ///< NVLink SHARP (NVSwitch multicast) available
  /// Measured one-node NVLS AllReduce bus bandwidth (B/s) where NCCL's estimate is known to be
  /// off; 0 = NCCL's intraBw formula (semantics.md §D.2 rule 79). When set, every NVLS intraBw
  /// (AllReduce, AG/RS, the intra part of NVLS_TREE) is scaled by value ÷ the formula's AllReduce busBw.
  double nvls_bus_bandwidth_bytes_per_s = 0;
  double net_latency_s = 0;         ///< graph.latencyInter (0 for IB / sockets plugins)
  /// Host cost of launching one collective (enqueue + kernel launch), s. nccl-tests' time
  /// includes it (semantics.md §D.5 rule 90) and NCCL's tuner leaves it out (§D.2 rule 78);
  /// the NCCL cost model adds it to the chosen estimate. Default kDefaultLaunchOverheadS;
  /// 0 for CUDA-graph-captured collectives.
  double launch_overhead_s = kDefaultLaunchOverheadS;
  /// 4 µs: the low end of the 4–6 µs host cost per kernel launch (driver + runtime calls)
  /// measured in "pegainfer (3): From Launch Overhead to CUDA Graph" (CUDA 13; see
  /// docs/calibration.md), and the 3.95 µs each extra GPU driven by one process adds to a small
  /// AllReduce on DGX-A100 (NVIDIA/nccl-tests#123, shared/data/small_message_latency.md §2b).
  static constexpr double kDefaultLaunchOverheadS = 4e-6;
};

/// Parameters of the shape-dependent GEMM time (hardware/gemm_model.hpp has the formula and
/// its sources). `max_efficiency` == 0 means "no curve": GEMMs take the flat gemm_efficiency.
/// The arithmetic a GEMM runs in, each with its own datasheet peak (HardwareProfile::peak_for):
/// Tensor16 = BF16/FP16 tensor cores (`compute.peak_flops_per_s`); Tf32 = TF32 tensor cores
/// (fp32 tensors under torch.set_float32_matmul_precision("high"), `compute.tf32_flops_per_s`);
/// Fp32 = IEEE FP32 on the CUDA cores (PyTorch's default for fp32 tensors, "highest",
/// `compute.fp32_flops_per_s`); Fp8 = FP8 e4m3/e5m2 tensor cores (torchao Float8Linear,
/// Transformer Engine; `compute.fp8_flops_per_s`).
enum class GemmMath { Tensor16, Tf32, Fp32, Fp8 };

/// "bf16", "tf32", "fp32", "fp8" (reports).
const char* gemm_math_name(GemmMath m);

struct GemmCurve {
  double max_efficiency = 0;  ///< fraction of peak of a full wave of large tiles, (0, 1]
  /// The same fraction for the other GemmMath kinds (of their own peak); 0 = max_efficiency.
  /// Each profile cites the square-matmul benchmark it takes them from.
  double tf32_max_efficiency = 0, fp32_max_efficiency = 0, fp8_max_efficiency = 0;
  /// max_efficiency of `m`: the kind's own value when given, else max_efficiency.
  double max_efficiency_for(GemmMath m) const {
    const double v = m == GemmMath::Tf32 ? tf32_max_efficiency
                     : m == GemmMath::Fp32 ? fp32_max_efficiency
                     : m == GemmMath::Fp8  ? fp8_max_efficiency
                                           : max_efficiency;
    return v > 0 ? v : max_efficiency;
  }
  double overhead_s = 0;      ///< fixed time per GEMM kernel (launch, prologue, fill), ≥ 0
  int tile_m = 128;           ///< output tile rows of the kernels the curve describes
  int tile_n = 128;           ///< output tile columns
  int sms = 0;                ///< streaming multiprocessors the tiles are spread over
  bool present() const { return max_efficiency > 0; }
};

/// Measured throughput of a fused attention kernel (FlashAttention-2's benchmark,
/// Dao-AILab/flash-attention benchmarks/benchmark_flash_attention.py): forward + backward FLOPs
/// per second against sequence length, one curve per (causal, head_dim). The FLOP convention is
/// the benchmark's: forward 4·B·S²·H·D, halved when causal; backward 2.5 × forward.
struct AttentionCurve {
  bool causal = true;
  int head_dim = 128;
  std::vector<double> seq_len;           ///< ascending, ≥ 1
  std::vector<double> fwd_bwd_flops_per_s;  ///< same length, > 0
};

/// One fused attention kernel of `compute.attention` (keyed by its name there, e.g.
/// "flash-attention-2"): its measured curves and their source.
struct AttentionThroughput {
  std::string kernel;                    ///< e.g. "flash-attention-2"
  std::string source;
  std::vector<AttentionCurve> curves;    ///< at least one
  bool present() const { return !curves.empty(); }
};

/// The attention kernels a scenario's `activations.attention` may name.
inline const std::vector<std::string>& attention_kernel_names() {
  static const std::vector<std::string> names = {"flash-attention-2", "flash-attention-1", "flash-attention-triton"};
  return names;
}

/// FLOPs/s of `t` for (causal, head_dim, seq_len): linear in log2(seq_len) between measured
/// lengths (the end values beyond them), linear in head_dim between the curves of the nearest
/// head dims below and above (the nearest one beyond them). Uses the curves of the same
/// causality; the other kind when none. Precondition: t.present(), seq_len > 0.
double attention_flops_per_s(const AttentionThroughput& t, bool causal, double head_dim, double seq_len);

/// The host side of a node, for offload and checkpoints (issue 17 item 1; profile object
/// `host`, every field optional; shared/reference/semantics-parallel.md §E and its "Numbers"
/// table give the measured values the built-in profiles cite). A profile without it has
/// `present()` false, and scenarios that offload are refused on it until the user gives one.
struct HostFacts {
  int pcie_generation = 0;           ///< `host.pcie_generation` (reports; the numbers carry the model)
  int pcie_lanes = 16;               ///< `host.pcie_lanes` per GPU
  /// `host.h2d_bytes_per_s` / `host.d2h_bytes_per_s`: what one GPU alone achieves host to
  /// device and device to host with pinned memory (nvbandwidth's copy-engine figures), one way.
  double h2d_bytes_per_s = 0, d2h_bytes_per_s = 0;
  /// `host.gpus_per_pcie_switch` (≥ 1): GPUs whose copies share one switch uplink to the CPU,
  /// an x16 link of the same generation (DGX A100 / H100: 2 GPUs per PCIe switch; 1 = each GPU
  /// its own root port). When they copy at once each gets 1/n of the uplink: shared_*().
  int gpus_per_pcie_switch = 1;
  double memory_bytes = 0;           ///< `host.memory_bytes`: host DRAM per node
  int cpu_cores = 0;                 ///< `host.cpu_cores` per node (reports)
  /// `host.cpu_adam_params_per_s`: parameters per second DeepSpeedCPUAdam updates on the whole
  /// node's CPUs (fp32 states; shared by the node's ranks, each updating its partition).
  double cpu_adam_params_per_s = 0;
  /// `host.nvme_read_bytes_per_s` / `nvme_write_bytes_per_s`: achievable bandwidth of the
  /// node's NVMe drives together (DeepNVMe / aio figures), 0 = none; `host.nvme_bytes` their
  /// capacity.
  double nvme_read_bytes_per_s = 0, nvme_write_bytes_per_s = 0, nvme_bytes = 0;
  bool present() const { return h2d_bytes_per_s > 0 && d2h_bytes_per_s > 0; }
  bool has_nvme() const { return nvme_read_bytes_per_s > 0 && nvme_write_bytes_per_s > 0; }
  /// One GPU's host-to-device bandwidth while every GPU behind its switch copies too [B/s]:
  /// min(h2d, h2d / min(gpus_per_pcie_switch, copying_gpus)). Precondition copying_gpus ≥ 1.
  double shared_h2d_bytes_per_s(int copying_gpus) const {
    return h2d_bytes_per_s / (copying_gpus < gpus_per_pcie_switch ? copying_gpus : gpus_per_pcie_switch);
  }
  /// The same device to host.
  double shared_d2h_bytes_per_s(int copying_gpus) const {
    return d2h_bytes_per_s / (copying_gpus < gpus_per_pcie_switch ? copying_gpus : gpus_per_pcie_switch);
  }
};

/// Nominal numbers of an accelerator and its cluster (DESIGN.md "Hardware profiles").
/// Calibration never edits a profile: fitted factors live in an overlay.
///
/// Invariants (checked by the JSON loader): every bandwidth, peak and capacity > 0;
/// efficiencies in (0, 1]; latencies ≥ 0; gpus_per_node ≥ 1.
struct HardwareProfile {
  std::string name;                  ///< catalog name ("h100-sxm") or the file it came from
  /// The base profile's name when a scenario set fields over one ({"base": ..., ...}:
  /// parse_profile_over_base), else empty; `overridden` lists the fields that differ from it as
  /// dotted paths ("memory.hbm_bytes").
  std::string base;
  std::vector<std::string> overridden;
  std::string description;
  std::vector<std::string> sources;  ///< where the numbers come from

  double peak_flops_per_s = 0;       ///< dense BF16/FP16 tensor-core peak per GPU/chip
  /// `compute.boost_clock_mhz` / `compute.sustained_clock_mhz` (both or neither): the clock the
  /// datasheet peak is quoted at and the clock the SMs sustain under the part's power limit
  /// (0 = not given, the peak holds). Tensor-core work (GEMMs, fused attention, flat-FLOP
  /// kernels) runs at peak × sustained / boost; HBM streaming does not depend on it.
  double boost_clock_mhz = 0, sustained_clock_mhz = 0;
  /// sustained_clock_mhz / boost_clock_mhz, or 1 without them.
  double clock_fraction() const { return boost_clock_mhz > 0 ? sustained_clock_mhz / boost_clock_mhz : 1.0; }
  /// The compute rate the cost models use: peak_flops_per_s × clock_fraction() [FLOP/s].
  double sustained_flops_per_s() const { return peak_flops_per_s * clock_fraction(); }
  /// `compute.tf32_flops_per_s`, `compute.fp32_flops_per_s`, `compute.fp8_flops_per_s`: the
  /// datasheet's dense peaks of the other GEMM arithmetics (0 = the part has none or the
  /// profile does not say; peak_for falls back as it documents).
  double tf32_flops_per_s = 0, fp32_flops_per_s = 0, fp8_flops_per_s = 0;
  /// The datasheet peak `m` runs at [FLOP/s]. Fallbacks, each what the hardware does: TF32 on a
  /// part without it (V100) runs IEEE FP32; FP8 on a part without FP8 tensor cores runs its
  /// operands upcast on the BF16/FP16 ones. A profile that gives no FP32 peak prices FP32 at
  /// peak_flops_per_s (the behaviour before per-arithmetic peaks; reports name the peak used).
  double peak_for(GemmMath m) const {
    switch (m) {
      case GemmMath::Tf32: return tf32_flops_per_s > 0 ? tf32_flops_per_s : peak_for(GemmMath::Fp32);
      case GemmMath::Fp32: return fp32_flops_per_s > 0 ? fp32_flops_per_s : peak_flops_per_s;
      case GemmMath::Fp8: return fp8_flops_per_s > 0 ? fp8_flops_per_s : peak_flops_per_s;
      case GemmMath::Tensor16: break;
    }
    return peak_flops_per_s;
  }
  /// peak_for(m) × clock_fraction() [FLOP/s].
  double sustained_flops_per_s(GemmMath m) const { return peak_for(m) * clock_fraction(); }
  double gemm_efficiency = 0;        ///< default achieved fraction of peak for large GEMMs
  int sm_count = 0;                  ///< streaming multiprocessors (0 = not given); `compute.sm_count`
  GemmCurve gemm_curve;              ///< `compute.gemm_curve`; absent = flat gemm_efficiency
  /// `compute.attention`: measured fused-attention kernels by name (attention_kernel_names());
  /// a flash kernel the profile lacks is priced as on-chip matmuls at the GEMM efficiency.
  std::vector<AttentionThroughput> attention;
  /// The measured kernel named `kernel`, nullptr when the profile has none.
  const AttentionThroughput* attention_kernel(const std::string& kernel) const {
    for (const auto& k : attention)
      if (k.kernel == kernel) return &k;
    return nullptr;
  }
  double hbm_bytes = 0;              ///< device memory capacity, the datasheet's (80 GiB for an "80 GB" H100)
  /// Memory a training process cannot use for tensors: CUDA context, library workspaces and NCCL
  /// buffers (`memory.reserved_bytes`, ≥ 0, below hbm_bytes; 0 when the profile omits it).
  double hbm_reserved_bytes = 0;
  double hbm_bandwidth_bytes_per_s = 0;
  double hbm_efficiency = 0;         ///< achieved fraction of HBM bandwidth for streaming kernels

  int gpus_per_node = 1;             ///< GPUs (chips) sharing one intra-node fabric / host
  LinkScope intra_node;              ///< NVLink per GPU, one way
  /// `intra_node.fabric`: "nvlink", "ici", "pcie" or "xgmi" (reports; the numbers carry the model).
  std::string intra_node_fabric = "nvlink";
  /// `intra_node.peer_bandwidth_bytes_per_s`: one way, to any single peer, on a node whose GPUs
  /// are joined point to point instead of through a switch (AMD xGMI: 7 links of 64 GB/s to 7
  /// peers; NVLink bridges of H200 NVL), 0 = a switch (NVSwitch), where any group gets the whole
  /// `intra_node.bandwidth_bytes_per_s`. shared/reference/hardware.md §3.3: "model xGMI as a
  /// per-peer link, not as a switch" (2 MI300X: 47.7 GB/s busbw, 8: 312.9 GB/s).
  double intra_peer_bandwidth_bytes_per_s = 0;
  /// One-way bandwidth per rank a group of `ranks_in_node` (≥ 1) member GPUs of one node can use
  /// inside it: the whole intra_node bandwidth behind a switch; on a point-to-point mesh the
  /// links to its ranks_in_node − 1 peers, min(bandwidth, (ranks_in_node − 1) × peer bandwidth)
  /// (rings and trees over a full mesh can use every link to a member: RCCL builds one ring per
  /// link set). 0 for one rank (no intra-node traffic).
  double intra_group_bandwidth_bytes_per_s(int ranks_in_node) const {
    if (ranks_in_node <= 1) return 0;
    const double w = intra_node.bandwidth_bytes_per_s;
    if (!(intra_peer_bandwidth_bytes_per_s > 0)) return w;
    const double mesh = (ranks_in_node - 1) * intra_peer_bandwidth_bytes_per_s;
    return mesh < w ? mesh : w;
  }
  int nics_per_node = 0;             ///< network adapters per node
  /// GPUs each NIC serves (its PCIe-switch neighbours), ≥ 1: a GPU drives only its own NIC
  /// (rail-optimized HGX clusters: 1; a node of 8 GPUs with 4 NICs: 2).
  int gpus_per_nic = 1;
  double nic_bandwidth_bytes_per_s = 0;  ///< per adapter, one way
  LinkScope inter_node;              ///< bandwidth_bytes_per_s unused: see node_egress
  /// The network as built, beyond its NICs' line rate (issue 19 item 3): a collective whose
  /// group spans N > 1 nodes takes `inter_node.fabric_latency_per_log2_nodes_s` × log2(N) more
  /// latency (tree depth: the public logs' effective latency grows with log2 of the node count,
  /// 87 / 133 / 160 / 184 µs at 2 / 4 / 8 / 16 Azure A100 nodes) and its bandwidth term is divided
  /// by `inter_node.fabric_bandwidth_efficiency` (transport and congestion losses), both applied
  /// to the NCCL cost model's estimate after its choice (hardware::apply_fabric; the α-β model,
  /// the seeds' datasheet arithmetic, does not use them). 0 and 1 (the
  /// defaults): the NICs' line rate, no fabric losses. Network presets
  /// (`inter_node.preset`, hardware/networks/) carry values fitted on the public nccl-tests
  /// logs of their fabric (`stepsim calibrate fabric`, docs/calibration.md).
  double fabric_latency_per_log2_nodes_s = 0;
  double fabric_bandwidth_efficiency = 1;
  /// `inter_node.preset`: the network preset whose fields fill the profile's inter_node ("" none).
  std::string network_preset;

  HostFacts host;                    ///< `host`: PCIe, host memory, CPU Adam, NVMe (offload)

  std::vector<int> torus_dims;       ///< TPU: pod torus shape (e.g. 16×20×28); empty for GPUs
  LinkScope torus_axis;              ///< TPU: per axis, bidirectional ring bandwidth per chip
  NcclTopology nccl;                 ///< NCCL tuner inputs; nccl.arch empty when absent

  /// Network egress of one node: NICs per node × per-NIC bandwidth (bytes/s, one way).
  double node_egress_bytes_per_s() const { return nics_per_node * nic_bandwidth_bytes_per_s; }

  /// NICs that `ranks_per_node` GPUs of one communicator drive on a node: each GPU uses its
  /// own NIC (NCCL picks the NIC nearest the GPU; NVIDIA/nccl#1250 measured a 2-node AllReduce
  /// at 0.27 / 0.13 / 0.067 s with 1 / 2 / 4 GPUs per node), so ceil(g / gpus_per_nic), at
  /// most nics_per_node. Precondition ranks_per_node ≥ 1.
  int group_nics(int ranks_per_node) const {
    const int nics = (ranks_per_node + gpus_per_nic - 1) / gpus_per_nic;
    return nics < nics_per_node ? nics : nics_per_node;
  }

  /// Share of one NIC a communicator gets when `concurrent_groups` communicators of the same
  /// shape run at once on every node (HSDP's replica groups), in (0, 1]: 1 while their NICs
  /// together fit on the node's, else the node's NICs shared evenly. Preconditions ≥ 1.
  double group_nic_share(int ranks_per_node, int concurrent_groups) const {
    const double demand = static_cast<double>(group_nics(ranks_per_node)) * concurrent_groups;
    return demand > nics_per_node ? nics_per_node / demand : 1.0;
  }

  /// Network bandwidth (bytes/s, one way) one node gives a communicator with
  /// `ranks_per_node` member GPUs on it: its GPUs' NICs × the NIC speed × group_nic_share().
  double group_network_bytes_per_s(int ranks_per_node, int concurrent_groups = 1) const {
    return group_nics(ranks_per_node) * nic_bandwidth_bytes_per_s *
           group_nic_share(ranks_per_node, concurrent_groups);
  }
  bool is_torus() const { return !torus_dims.empty(); }
  /// What the model's tensors may use: hbm_bytes − hbm_reserved_bytes (what "fits" compares).
  double usable_hbm_bytes() const { return hbm_bytes - hbm_reserved_bytes; }
};

/// A network as a cloud or cluster builds it (hardware/networks/*.json, issue 19 item 3): the
/// NICs each GPU drives and the fabric terms fitted on that network's public nccl-tests logs
/// (HardwareProfile::fabric_*). A profile or scenario names one with `"network": NAME`
/// (`stepsim collective --network NAME`); apply_network_preset() sets it.
struct NetworkPreset {
  std::string name;                        ///< e.g. "infiniband-ndr", "aws-efa-p5"
  std::string description;
  std::vector<std::string> sources;        ///< tagged as a profile's (source_kinds)
  int gpus_per_nic = 1;                    ///< GPUs sharing one NIC, ≥ 1
  double nic_bandwidth_bytes_per_s = 0;    ///< per NIC, one way, > 0
  double fabric_latency_per_log2_nodes_s = 0;  ///< ≥ 0
  double fabric_bandwidth_efficiency = 1;      ///< (0, 1]
};

/// `hw` on the network `preset`: gpus_per_nic and the NIC speed from the preset,
/// nics_per_node = ceil(gpus_per_node / gpus_per_nic), the fabric terms, network_preset = its
/// name. Latency terms of the profile's inter_node stay (the fabric terms add to them).
/// @throws InputError (source "network", `pointer`) when the preset's gpus_per_nic is more than
///         the profile's gpus_per_node.
void apply_network_preset(HardwareProfile& hw, const NetworkPreset& preset, const std::string& source = "",
                          const std::string& pointer = "");

/// What kind of fact a profile's source line states, by the tag it starts with
/// ("datasheet: ...", "measured, fitted: ..."): `datasheet` — a vendor or cloud specification;
/// `measured` — a public measurement; `derived` — arithmetic on those (a rule of NCCL's, a
/// unit conversion, a ratio); `fitted` — chosen on the even rows of a measured set, the odd
/// rows reported; `assumed` — none of these, a stand-in to calibrate. Every built-in profile
/// tags every source (hardware_test); a user's profile may leave them untagged.
inline const std::vector<std::string>& source_kind_names() {
  static const std::vector<std::string> kinds = {"datasheet", "measured", "derived", "fitted", "assumed"};
  return kinds;
}

/// The kinds a source line is tagged with: the comma-separated words before its first ':' when
/// every one is in source_kind_names(), else empty (an untagged line). Order as written.
std::vector<std::string> source_kinds(const std::string& source);

/// Largest node (scale-up domain: GPUs on one NVLink / NVSwitch fabric) a profile, a scenario
/// or a CLI flag may describe: NVL576, the largest such domain announced. A larger cluster is
/// several nodes.
inline constexpr std::int64_t kMaxGpusPerNode = 576;

/// "" when `gpus_per_node` is in [1, kMaxGpusPerNode], else what is wrong ("expected 1 to 576
/// GPUs ..., got N"): the one message the profile, scenario and CLI readers use.
std::string gpus_per_node_problem(std::int64_t gpus_per_node);

}  // namespace stepsim::hardware
