// SPDX-License-Identifier: Apache-2.0
// Scenario: one training step to simulate — model, hardware, cluster, parallelism, batch —
// parsed, defaulted, validated and then immutable. Nothing downstream reads JSON.
#pragma once

#include "hardware/calibration.hpp"
#include "hardware/collective_model.hpp"
#include "hardware/hardware_profile.hpp"
#include "hardware/nccl_model.hpp"
#include "models/mesh_layout.hpp"
#include "models/model_spec.hpp"

#include <nlohmann/json_fwd.hpp>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
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
  std::int64_t dp = 1;               ///< DP degree (the world size divided by tp)
  /// Tensor-parallel degree (Megatron-LM's tensor_model_parallel_size; models/tensor_parallel.hpp):
  /// the world is dp × tp ranks, TP innermost (consecutive ranks, inside one node).
  std::int64_t tp = 1;
  /// Megatron-LM's sequence_parallel (default False; torchtitan's enable_sequence_parallel
  /// defaults to True): norms and dropout on s/tp tokens, AllGather + ReduceScatter in place
  /// of each AllReduce. Needs tp > 1.
  bool sequence_parallel = false;
  /// Megatron-LM's tp_comm_overlap / torchtitan's async TP (micro-pipelined TP): each TP
  /// collective split against the GEMMs next to it, so a layer's TP communication runs beside
  /// its compute (models/tensor_parallel.hpp). Needs sequence_parallel.
  bool tp_comm_overlap = false;
  /// Pipeline-parallel degree (Megatron-LM's pipeline_model_parallel_size, torchtitan's
  /// pipeline_parallel_degree; models/pipeline.hpp): the layers split into pp stages, PP
  /// outermost (Megatron-LM's order tp-cp-dp-pp), batch.grad_accum micro-batches flowing
  /// through them.
  std::int64_t pp = 1;
  /// The pipeline schedule, as torch.distributed.pipelining names it: "1F1B" (torchtitan's and
  /// Megatron-LM's default), "GPipe", "Interleaved1F1B" or "InterleavedZeroBubble".
  std::string pipeline_schedule = "1F1B";
  /// Stages (model chunks) per PP rank: Megatron-LM's virtual_pipeline_model_parallel_size;
  /// 1 for single-stage schedules, 2 by default for Interleaved1F1B and InterleavedZeroBubble
  /// (torchtitan's default).
  std::int64_t virtual_stages = 1;
  /// Context-parallel degree (Megatron-LM's context_parallel_size, torchtitan's
  /// context_parallel_degree; models/context_parallel.hpp): each micro-batch's sequence split
  /// over cp ranks, CP between TP and DP (tp-cp-dp-pp).
  std::int64_t cp = 1;
  /// Expert-parallel degree (torchtitan's expert_parallel_degree, Megatron-LM's
  /// expert_model_parallel_size; models/expert_parallel.hpp): each rank holds experts / ep of a
  /// mixture of experts' routed experts, tokens travel to them and back by all-to-all over ep
  /// ranks, and the experts' gradients reduce over the dp × cp / ep ranks holding the same ones.
  /// EP borrows from the data-parallel ranks (its groups are ep consecutive DP ranks).
  std::int64_t ep = 1;
  /// How the CP ranks exchange KV: "p2p" (Megatron-LM's --cp-comm-type default: a ring
  /// overlapped with attention) or "allgather" (torchtitan's default rotate method); set from
  /// the strategy's family when not given (default_cp_comm_type).
  std::string cp_comm_type;
  double bucket_cap_mb = 25;         ///< MiB; reducer.hpp kDefaultBucketBytesCap (25 MiB)
  double first_bucket_mb = 1;        ///< MiB; reducer.hpp kDefaultFirstBucketBytes (1 MiB)
  bool sync_every_micro_batch = false;  ///< false = no_sync() on all but the last micro-batch
  bool gradient_as_bucket_view = false; ///< distributed.py default False (semantics §A.6 r23)
  /// ddp: Megatron-LM's distributed optimizer (--use-distributed-optimizer, default False;
  /// semantics-parallel.md §A9): each bucket is reduce-scattered instead of all-reduced, the
  /// optimizer updates this rank's 1/(dp × cp) of the parameters (its states sharded, ZeRO
  /// stage 1), and the parameters are all-gathered bucket by bucket after the step.
  bool use_distributed_optimizer = false;
  /// ddp with use_distributed_optimizer: Megatron-LM's --overlap-param-gather (default False;
  /// §A11): the parameter AllGathers move ahead of the next forward, one bucket prefetched, and
  /// each layer's forward waits for its bucket; false: all of them right after the step.
  bool overlap_param_gather = false;
  /// Torus profiles: how many torus axes the DP communicators' rings use at once (1–3; the
  /// profile's axis count when not given; seed 000 §7.2: 850 vs 2550 tokens/chip on v5p for 3
  /// vs 1). 0 on profiles that are not a torus.
  int torus_axes = 0;
  /// Placement order of the mesh's ranks, innermost first (models/mesh_layout.hpp): Megatron-LM's
  /// tp-cp-dp-pp.
  MeshOrder order = kMegatronOrder;
};

/// How FSDP/HSDP reshard a unit after its forward (FSDP2 `reshard_after_forward`,
/// semantics.md §B.4 rule 49).
enum class ReshardMode {
  Default,     ///< None: True for non-root units, False for the root (newest FSDP2)
  True,        ///< free after forward, all-gather again in backward (ZeRO-3-like)
  False,       ///< keep unsharded until after backward (ZeRO-2-like)
  Group,       ///< int k: keep a shard over k ranks; backward all-gather over k ranks
  Torchtitan,  ///< torchtitan's rule: every block but the last True, root False
};

/// FSDP1 `backward_prefetch` (semantics.md §B.3 rules 37–38).
enum class BackwardPrefetch { BackwardPre, BackwardPost, None };

/// Knobs of the sharded strategies, named as in PyTorch FSDP and DeepSpeed (defaults from
/// semantics.md "Simulator parameters with real defaults").
struct ShardingConfig {
  // FSDP / HSDP
  std::string fsdp_version = "fsdp2";        ///< "fsdp2" (fully_shard) or "fsdp1"
  std::int64_t unit_layers = 1;              ///< transformer blocks per FSDP unit; 0 = whole model
  ReshardMode reshard_after_forward = ReshardMode::Default;
  std::int64_t reshard_group = 0;            ///< k for ReshardMode::Group
  BackwardPrefetch backward_prefetch = BackwardPrefetch::BackwardPre;
  bool forward_prefetch = false;             ///< FSDP1 explicit forward prefetch
  bool limit_all_gathers = true;             ///< FSDP1 rate limiter (2 in flight)
  std::int64_t shard_group_size = 0;         ///< HSDP shard group (0 = GPUs per node)
  bool defer_replica_all_reduce = false;     ///< HSDP: set_requires_all_reduce(False) until the last micro-batch
  // DeepSpeed ZeRO
  double reduce_bucket_size = 5e8;           ///< elements (zero/config.py)
  bool overlap_comm = false;                 ///< default False for stage 1/2, True for stage 3
  bool gradient_reduce_scatter = false;      ///< ZeRO-1/2: true ReduceScatter instead of DeepSpeed's whole-bucket AllReduce
  double stage3_prefetch_bucket_size = 5e7;  ///< elements
  double stage3_max_live_parameters = 1e9;   ///< elements
  double stage3_max_reuse_distance = 1e9;    ///< elements
  double stage3_param_persistence_threshold = 1e5;  ///< elements
  /// `parallelism.offload_optimizer` (DeepSpeed's zero_optimization.offload_optimizer,
  /// semantics-parallel.md §E1, E3, E4, E6): where the fp32 optimizer states live, "none",
  /// "cpu" (ZeRO-Offload) or "nvme" (ZeRO-Infinity; stage 3 swaps them to the node's NVMe,
  /// stages 1/2 treat any device but none as cpu, stage_1_and_2.py). The optimizer runs on the
  /// CPU (DeepSpeedCPUAdam) either way.
  std::string offload_optimizer_device = "none";
  /// `parallelism.offload_optimizer.pin_memory` (default false): pinned host buffers for the
  /// gradient partition; a copy to pageable memory blocks the host until it is done.
  bool offload_optimizer_pin_memory = false;
  bool offload_optimizer() const { return offload_optimizer_device != "none"; }
  /// `parallelism.offload_param` (zero3 only, ZeRO-Infinity; semantics-parallel.md §E5, §E6):
  /// where the 16-bit parameter partitions live, "none", "cpu" or "nvme"; each fetch copies the
  /// partition host to device (after an NVMe read) before its AllGather. Modelled together with
  /// offload_optimizer, as DeepSpeed's ZeRO-Infinity configurations run it.
  std::string offload_param_device = "none";
  bool offload_param_pin_memory = false;
  bool offload_param() const { return offload_param_device != "none"; }
  /// `parallelism.cpu_offload` (fsdp, hsdp): FSDP2's CPUOffloadPolicy() (pin_memory true) or
  /// FSDP1's CPUOffload(offload_params=True) (always pinned), torchtitan's
  /// training.enable_cpu_offload: the fp32 parameter shards, their gradients and the optimizer
  /// states live in host memory and the ordinary torch optimizer steps them on the CPU
  /// (semantics-parallel.md §E8, §E9).
  bool cpu_offload = false;
  /// Some state lives in host memory (offload_optimizer or cpu_offload).
  bool offloads() const { return offload_optimizer() || offload_param() || cpu_offload; }
};

/// Mixed precision (FSDP MixedPrecisionPolicy / DeepSpeed bf16): parameters are all-gathered
/// and computed in `param_dtype`, gradients reduced in `reduce_dtype`.
struct PrecisionConfig {
  DType param_dtype = DType::BF16;   ///< when set in the scenario, every tensor is held in it
  bool param_dtype_given = false;    ///< param_dtype was set in the scenario (so echoed)
  std::optional<DType> reduce_dtype; ///< default: each tensor's own dtype
  /// Bytes per element of the gradient collective of a tensor held in `tensor_dtype`.
  double reduce_bytes(DType tensor_dtype) const { return dtype_bytes(reduce_dtype.value_or(tensor_dtype)); }
  bool fp32_grad_accum = false;  ///< accumulate gradients across micro-batches in an fp32 buffer
  /// `precision.fp32_matmul_precision`, torch.set_float32_matmul_precision's names: "highest"
  /// (PyTorch's default since 1.12: fp32 GEMMs in IEEE FP32 on the CUDA cores) or "high" (TF32
  /// tensor cores). Acts only when the GEMMs' tensors are fp32 (gemm_math).
  bool fp32_matmul_tf32 = false;
  /// `precision.float8` (torchao Float8Linear, torchtitan's `quantize.linear.float8`): "none" or
  /// "tensorwise" (dynamic per-tensor scaling, torchao's default recipe, cuBLAS FP8 GEMMs). The
  /// transformer blocks' linear layers (not the LM head: torchtitan's llama3 configs filter
  /// "output"; not a layer with a dimension that is no multiple of 16, which torchao skips) run
  /// their three GEMMs in FP8 plus their amax/cast kernels (compute_tasks.hpp float8_cast_bytes).
  enum class Float8 { None, Tensorwise };
  Float8 float8 = Float8::None;
  /// `precision.float8_all_gather` (torchtitan's enable_fsdp_float8_all_gather with
  /// precompute_float8_dynamic_scale_for_fsdp): FSDP2 all-gathers those layers' weights in FP8,
  /// 1 byte per element, cast once per gather on the local shard.
  bool float8_all_gather = false;
  /// The arithmetic of the model's GEMMs, from its tensors' dtype: fp32 → Fp32 (Tf32 under
  /// fp32_matmul_tf32), fp8 → Fp8, else Tensor16. Float8 layers run Fp8 on top of it.
  hardware::GemmMath gemm_math = hardware::GemmMath::Tensor16;
  /// The dtype most of the parameters are held in (gemm_math follows it), for reports.
  DType held_dtype = DType::BF16;
};

/// Activation memory and recomputation (Korthikanti et al. 2022).
struct ActivationConfig {
  bool flash_attention = true;   ///< false: the attention scores (a·s per token) are stored too
  /// The fused kernel of flash attention (`activations.attention`), priced by the profile's
  /// measured throughput of it (HardwareProfile::attention): "flash-attention-2",
  /// "flash-attention-1", "flash-attention-triton" (HazyResearch's Triton kernel). Empty
  /// ("flash"): attention priced as on-chip matmuls at the GEMM efficiency, with the full s²
  /// counted even when causal (the seeds' model). The default, "auto", is flash-attention-2
  /// where the profile measures it (SDPA's flash backend since torch 2.2), else "flash".
  std::string attention_kernel;
  /// `activations.recompute` (models/recompute.hpp has each policy's per-layer rule):
  /// none, full (every layer keeps only its input and runs its forward again in backward), selective_op (torchtitan's per-op SAC),
  /// selective_layer (full AC on every ac_freq-th block), megatron_selective (core attention).
  enum class Recompute { None, Full, SelectiveOp, SelectiveLayer, MegatronSelective };
  Recompute recompute = Recompute::None;
  std::int64_t ac_freq = 2;  ///< selective_layer: every ac_freq-th block (torchtitan selective_ac_option "2")
};

/// The training framework's host side (`framework`): what the CPU costs per PyTorch op. With
/// host_op_s = h > 0 a layer task takes max(its GPU time, n_ops·h): the CPU launches
/// asynchronously and runs ahead of the GPU within the task (hardware::kernel_work_time_s).
/// 0 (the default): kernels only.
struct FrameworkConfig {
  double host_op_s = 0;  ///< CPU time per eager op (Python + dispatcher + launch), seconds ≥ 0
  /// host_op_s is the calibration overlay's measured host time (`stepsim calibrate trace`, not
  /// given in the scenario): CPU time per launched kernel with the CPU work between launches
  /// (views included) in it, so host-only ops (LayerSpec::fwd_host_only_ops) are not charged again.
  bool host_op_measured = false;
  /// `framework.cuda_graphs` (torch.cuda.graphs / torch.compile mode "reduce-overhead", Megatron
  /// --enable-cuda-graph): the step's kernels and collectives replay from captured graphs, so
  /// no op pays host_op_s and no collective pays the NCCL launch overhead
  /// (NcclTopology::launch_overhead_s, which parse_scenario sets to 0). The graph launches
  /// themselves (a few per step) are not modelled.
  bool cuda_graphs = false;
  /// How the model's code runs (`framework.implementation`, issue 14 item 3): "eager" (PyTorch
  /// modules op by op, as torchtitan and Hugging Face run them: RMSNorm, rotary, repeat_kv,
  /// SwiGLU and the loss cast as separate kernels, LayerSpec::eager_extra_*), "compile"
  /// (torch.compile fuses each elementwise chain into one kernel) or "megatron_te" (Megatron-Core
  /// with Transformer Engine's fused kernels; the same fused traffic as compile).
  enum class Implementation { Eager, Compile, MegatronTE };
  Implementation implementation = Implementation::Eager;
  bool eager() const { return implementation == Implementation::Eager; }
  /// `framework.cross_entropy`: how eager code computes the loss. true ("upcast", the default):
  /// logits cast to fp32 first (torchtitan's cross_entropy_loss, Hugging Face's logits.float(),
  /// Megatron's output.float() unless fp16_lm_cross_entropy); false ("fused"): one kernel over
  /// the low-precision logits (flash-attn's CrossEntropyLoss, llm-foundry's fused_crossentropy).
  bool upcast_logits = true;
};

/// Batch: tokens per GPU per micro-batch = micro_batch_size × seq_len.
struct BatchConfig {
  std::int64_t micro_batch_size = 1;  ///< sequences per GPU per micro-batch
  std::int64_t seq_len = 4096;
  std::int64_t grad_accum = 1;        ///< micro-batches per optimizer step
};

/// `checkpoint` (issue 17 item 3; models/checkpoint.hpp): saving the training state every
/// `interval` steps, priced once and amortised over the interval. Absent: no checkpoints.
struct CheckpointConfig {
  bool enabled = false;          ///< the scenario has a `checkpoint` object
  std::int64_t interval = 500;   ///< steps between saves (torchtitan's checkpoint.interval default)
  /// "sharded": each rank writes what it holds (torch.distributed.checkpoint, DeepSpeed's
  /// per-rank files; semantics-parallel.md §F1, §F5); "full": the whole state gathered to rank 0's
  /// CPU memory and written by it (FSDP's FULL_STATE_DICT with rank0_only and offload_to_cpu,
  /// get_state_dict(full_state_dict, cpu_offload); §F2, §F3).
  std::string format = "sharded";
  /// Write bandwidth of the storage every writer shares, bytes/s; 0 = the nodes' own NVMe
  /// (nodes × the profile's host.nvme_write_bytes_per_s).
  double storage_write_bytes_per_s = 0;
  bool model_only = false;       ///< the model's weights only, no optimizer state (torchtitan last_save_model_only)
};

/// Per-rank variation (`sim.jitter`, `sim.slow_ranks`); only with sim.rank_mode "per_rank".
struct RankVariationConfig {
  std::string jitter_distribution = "none";  ///< "none", "normal" or "lognormal"
  double jitter_cv = 0;                      ///< coefficient of variation of each compute task's duration
  std::uint64_t jitter_seed = 0;
  /// (rank, compute_factor): the rank's compute tasks last compute_factor times longer.
  std::vector<std::pair<std::int64_t, double>> slow_ranks;
  /// (node, bandwidth_factor) (`sim.degraded_links`): the node's network runs at that fraction of
  /// its bandwidth; a collective crossing the network with a member on that node runs its
  /// bandwidth term at the slowest member's factor (a ring moves at its slowest link).
  std::vector<std::pair<std::int64_t, double>> degraded_links;
  /// `sim.expert_load` (models/expert_parallel.hpp): a mixture of experts' uneven routing. Each
  /// rank's load of each MoE layer (tokens its experts receive over the balanced share) is
  /// max(0, 1 + cv·z), drawn once per step with `expert_load_seed`, and capped at
  /// `capacity_factor` when it is > 0 (the tokens beyond are dropped); that rank's expert work
  /// in the layer scales with it.
  double expert_load_cv = 0;
  std::uint64_t expert_load_seed = 0;
  double capacity_factor = 0;
  /// True when some rank's compute or links differ from the others.
  bool any() const {
    return (jitter_distribution != "none" && jitter_cv > 0) || !slow_ranks.empty() || !degraded_links.empty() ||
           expert_load_cv > 0;
  }
};

/// How tasks of one rank interact while they run (`sim.link_sharing`, `sim.overlap_model`,
/// `sim.overlap_compute_slowdown`, `sim.nccl_sms`, `sim.cuda_device_max_connections`;
/// semantics.md §E rules 94–97; hardware::Contention, sim::RunOptions).
struct ContentionConfig {
  /// Overlapping collectives of a rank share its links by max-min fairness (issue 7 item 2).
  bool link_sharing = true;
  /// Compute under overlap: "factor" (slowdown by overlap_compute_slowdown while a collective
  /// runs, rule 96), "sm_partition" (NCCL CTAs hold nccl_sms of the GPU's SMs, rule 95) or "off".
  std::string overlap_model = "factor";
  double overlap_compute_slowdown = 1.19;  ///< rule 96 (Lee et al., arXiv 2507.03114), in [1, 3]
  std::int64_t nccl_sms = 0;               ///< SMs NCCL holds; 0 = 2 × the profile's nccl.ring_channels (rule 94)
  std::int64_t cuda_device_max_connections = 8;  ///< rule 97: default 8, range 1–32
};

/// A validated, immutable scenario. Build with parse_scenario().
struct Scenario {
  std::string source;           ///< file the scenario came from (for messages and reports)
  std::string name;
  std::string model_ref;        ///< catalog name, file path or "inline"
  std::string hardware_ref;
  std::string calibration_ref;  ///< scenario key `calibration`: overlay file ("" = nominal profile)
  /// The overlay it names (hardware/calibration.hpp), or nullptr.
  std::shared_ptr<const hardware::CalibrationOverlay> calibration;
  ModelSpec model;
  hardware::HardwareProfile hardware;
  /// `sim.gemm_model` "flat": hardware.gemm_curve was dropped, every GEMM runs at the profile's
  /// gemm_efficiency (the seeds' compute model); "curve" (false, the default): the profile's
  /// shape-dependent curve when it has one.
  bool flat_gemm = false;
  ClusterConfig cluster;
  ParallelismConfig parallelism;
  BatchConfig batch;
  ShardingConfig sharding;
  PrecisionConfig precision;
  ActivationConfig activations;
  FrameworkConfig framework;
  CheckpointConfig checkpoint;
  /// "adam" (AdamW: m and v), "sgd" (SGD with momentum and weight decay: one momentum buffer;
  /// compute_tasks.hpp sgd_task) or "none" (no step, no state).
  std::string optimizer = "adam";
  /// collectives.cost_model: "alpha-beta" | "nccl"; default hardware::default_collective_model()
  /// (nccl on NVIDIA profiles), alpha-beta when a calibration overlay is given.
  std::string cost_model = "alpha-beta";
  /// The same choice as an enum (hardware/nccl_model.hpp); reaches hardware::StepCostModel.
  hardware::CollectiveModel collective_model = hardware::CollectiveModel::AlphaBeta;
  hardware::CollectiveAlgorithm algorithm = hardware::CollectiveAlgorithm::Auto;
  std::string rank_mode = "symmetric";  ///< "symmetric" (one representative rank) or "per_rank"
  RankVariationConfig variation;        ///< sim.jitter / sim.slow_ranks (per_rank only)
  ContentionConfig contention;          ///< sim.link_sharing, sim.overlap_*, sim.cuda_device_max_connections
  std::shared_ptr<const nlohmann::json> resolved;  ///< the input with every default filled in

  /// Where the mesh's ranks sit: tp × cp × dp × pp in parallelism.order on nodes of
  /// cluster.gpus_per_node ranks (models/mesh_layout.hpp).
  RankLayout layout() const {
    return RankLayout({parallelism.tp, parallelism.cp, parallelism.dp, parallelism.pp}, parallelism.order,
                      cluster.gpus_per_node);
  }
  /// Ranks of one DP × CP group (data_ranks()) on a node.
  int ranks_per_node() const;
  /// DP ranks one node holds when full: cluster.gpus_per_node / parallelism.tp, or 1 when a TP
  /// group spans whole nodes (in Megatron-LM's order).
  int dp_slots_per_node() const {
    return static_cast<int>(std::max<std::int64_t>(1, cluster.gpus_per_node / parallelism.tp));
  }
  /// Ranks of one TP group on a node: min(tp, gpus_per_node) in Megatron-LM's order.
  int tp_ranks_per_node() const { return layout().members_per_node(layout().whole(MeshDim::TP)); }
  /// Ranks (GPUs) of the job: dp × tp × cp × pp.
  std::int64_t world_size() const { return parallelism.dp * parallelism.tp * parallelism.cp * parallelism.pp; }
  /// Ranks of one pipeline stage: dp × tp × cp (the world without PP).
  std::int64_t stage_ranks() const { return parallelism.dp * parallelism.tp * parallelism.cp; }
  /// Ranks that hold the same weights and reduce their gradients together: dp × cp (CP ranks
  /// hold the same weights: Megatron-LM's DP×CP group, torchtitan's dp_shard × cp mesh). The
  /// DP strategies' groups and shards span them.
  std::int64_t data_ranks() const { return parallelism.dp * parallelism.cp; }
  /// Ranks holding the same routed experts (the expert-data-parallel group): data_ranks() / ep.
  std::int64_t expert_data_ranks() const { return data_ranks() / parallelism.ep; }
  /// Ranks a routed expert's tensors are sharded over: shard_ranks() / ep under the sharded
  /// strategies (FSDP shards each expert over dp_shard × cp / ep, torchtitan's efsdp), 1 when
  /// nothing is sharded.
  std::int64_t expert_shard_ranks() const {
    const std::int64_t n = shard_ranks() / parallelism.ep;
    return n > 1 ? n : 1;
  }
  /// Ranks of the group a routed expert's gradients are reduced (and, sharded, gathered) over
  /// by the strategy's own collectives: expert_data_ranks() for ddp and the ZeRO stages and
  /// fsdp (their group is the whole DP × CP group), expert_shard_ranks() for hsdp (the experts'
  /// shard group inside the DP shard group; the replicas then AllReduce across groups, as the
  /// dense gradients do: torchtitan's experts on the dp_replicate × efsdp mesh).
  std::int64_t expert_reduce_ranks() const { return sharded() ? expert_shard_ranks() : expert_data_ranks(); }
  /// GPUs of one node the job uses: gpus_per_node, or the world when it is smaller.
  int gpus_used_per_node() const { return static_cast<int>(std::min<std::int64_t>(cluster.gpus_per_node, world_size())); }
  /// Parameters of the whole model (every TP rank's share together), and its trainable ones:
  /// `model` is one rank's share when parallelism.tp > 1.
  std::int64_t model_parameters = 0;
  std::int64_t model_trainable_parameters = 0;
  /// The whole model's active parameters per token (ModelSpec::active_parameter_count; the
  /// parameters for a dense model), before tensor and expert parallelism split `model`.
  std::int64_t model_active_parameters = 0;
  /// Ranks one parameter is sharded over: dp for zero*/fsdp, the shard group for hsdp, 1 for ddp.
  std::int64_t shard_ranks() const;
  /// True for the ZeRO stages and FSDP/HSDP (StrategyEntry::zero_stage > 0).
  bool sharded() const;
  /// ZeRO stage of the strategy (0 for ddp, 3 for fsdp/hsdp).
  int zero_stage() const;
  /// Tokens each GPU processes per micro-batch.
  /// Under context parallelism, its share of the sequence: micro_batch_size × seq_len / cp.
  std::int64_t tokens_per_micro_batch() const { return batch.micro_batch_size * batch.seq_len / parallelism.cp; }
  /// Tokens each GPU processes per optimizer step.
  std::int64_t tokens_per_gpu_step() const { return tokens_per_micro_batch() * batch.grad_accum; }
};

/// Parses `doc` (already read from `source`, with any --set overrides applied) into a
/// Scenario: fills defaults, loads the model and hardware it names, validates every field
/// and every cross-field rule.
/// @throws InputError naming source, JSON path, bad value and expectation; unknown keys get
///         "did you mean".
/// Applies one `--set PATH=VALUE` (sim/support apply_override) to a scenario document; a path
/// under `hardware.` where the scenario names its profile turns the name into the base of an
/// inline profile ({"base": NAME}), so one field of a catalog profile can be overridden.
/// @throws InputError as apply_override.
void apply_scenario_override(nlohmann::json& doc, const std::string& assignment, const std::string& flag);

Scenario parse_scenario(const nlohmann::json& doc, const std::string& source);

/// Reads `path`, applies `overrides` ("a.b=VALUE", in order), parses.
Scenario load_scenario(const std::string& path, const std::vector<std::string>& overrides);

/// The same over a document already read: `path` names it in messages (an error in an
/// override names the override) and is where its relative paths resolve from.
Scenario load_scenario_doc(nlohmann::json doc, const std::string& path, const std::vector<std::string>& overrides);

/// Names of the strategies the registry knows, for messages.
std::vector<std::string> strategy_names();

/// `framework.implementation` values in FrameworkConfig::Implementation order: "eager",
/// "compile", "megatron_te".
std::vector<std::string> implementation_names();

}  // namespace stepsim::models
