// SPDX-License-Identifier: Apache-2.0
// Report: what one simulated step tells the user, and the single entry point run().
#pragma once

#include "models/checkpoint.hpp"
#include "models/error_band.hpp"
#include "models/memory.hpp"
#include "models/scenario.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace stepsim::models {

/// Collectives of one kind and size, per step per rank.
struct CollectiveSummary {
  std::string op;            ///< "AllReduce", ...
  double bytes = 0;          ///< buffer size as nccl-tests counts it
  std::int64_t count = 0;    ///< how many per step
  double time_s = 0;         ///< one call (closed form)
  double latency_s = 0;      ///< its α part
  double algbw_bytes_per_s = 0;  ///< bytes / time_s (nccl-tests algbw)
  double busbw_bytes_per_s = 0;  ///< algbw × 2(n−1)/n or (n−1)/n (nccl-tests busbw)
  std::string algorithm;
  std::string protocol;      ///< NCCL cost model: "LL" | "LL128" | "Simple"; "" for alpha-beta
  int ranks = 0;             ///< communicator size
  bool spans_nodes = false;  ///< the communicator crosses the node network
  /// The mesh dimension of its communicator: "dp" (DP-side groups), "tp", "cp", "pp", "ep" (the
  /// all-to-alls) or "edp" (the routed experts' gradient group under expert parallelism).
  std::string group = "dp";
};

/// The mesh dimension of a collective's communicator as reports print it: "DP", "TP", "CP",
/// "PP", "EP", "EDP" (CollectiveSummary::group upper-cased).
std::string mesh_group_label(const CollectiveSummary& c);

/// True when the scenario's reports name each collective's mesh dimension: some of tp, pp, cp
/// or ep is above 1.
bool reports_mesh(const Scenario& s);

/// One task on the critical path (name, start, end) — the tail shown in reports.
struct PathEntry {
  std::string name;
  double start_s = 0;
  double end_s = 0;
};

/// One pipeline stage (a PP rank) of a step: its share of the step (models/pipeline.hpp).
struct PipelineStageSummary {
  std::size_t layers = 0;        ///< model layers it holds (every chunk's; embedding, norm and head included)
  std::size_t blocks = 0;        ///< transformer blocks among them
  double parameters = 0;         ///< parameters it holds (one TP rank's, unsharded)
  double compute_time_s = 0;     ///< its compute stream busy
  double exposed_comm_s = 0;     ///< its communication (DP, TP, point to point) no compute overlaps
  /// The rest of the step: waiting for its neighbours (the pipeline bubble), step_time_s −
  /// compute − exposed communication.
  double bubble_s = 0;
  double memory_peak_bytes = 0;  ///< its peak per GPU (states, buffers, activations)
  double activations_bytes = 0;  ///< activations at that peak
};

/// How the step varies over ranks (sim.rank_mode "per_rank" only; `present` is false otherwise).
struct RankSpread {
  bool present = false;
  std::int64_t ranks = 0;              ///< ranks simulated
  double step_time_min_s = 0;          ///< the earliest rank's last task end
  double step_time_max_s = 0;          ///< the latest rank's last task end (= step_time_s)
  double spread_s = 0;                 ///< max − min
  std::int64_t slowest_rank = 0;       ///< the world rank that finishes last (lowest copy on a tie); under PP the pipeline replica's first stage's
  std::int64_t slowest_copy = 0;       ///< its copy in the engine's run (ranks numbered tp fastest, then cp, dp; under PP the replica)
  std::int64_t slowest_ties = 1;       ///< copies that end at the latest time (all of them when spread_s is 0)
  std::int64_t pipeline_stages = 1;    ///< PP ranks per pipeline replica (pp); ranks = replicas × pp
  double no_variation_step_time_s = 0; ///< the same step without sim.jitter / sim.slow_ranks
  double straggler_cost_s = 0;         ///< step_time_s − no_variation_step_time_s
  /// Under sim.expert_load: the busiest rank's load of a MoE layer (its experts' tokens over
  /// the balanced share, after the capacity cap), averaged over the MoE layers; 0 without.
  double expert_load_busiest = 0;
  std::int64_t moe_layers = 0;        ///< the MoE layers it averages over
  std::int64_t busiest_expert_rank = 0;  ///< the rank with the highest load summed over the MoE layers
  double dropped_token_fraction = 0;     ///< routed tokens beyond the capacity factor, over all routed
};

/// Optimizer offload's host-side work on rank 0 (parallelism.offload_optimizer, issue 17 item
/// 2): busy time per resource, bytes moved, and what of it neither compute nor communication
/// covers. `present` is false without offload.
struct OffloadSummary {
  bool present = false;
  std::string device;                 ///< "cpu" or "nvme"
  double d2h_bytes = 0, h2d_bytes = 0;  ///< over PCIe per step
  double d2h_time_s = 0, h2d_time_s = 0;  ///< busy time of each direction (a union)
  double cpu_optimizer_time_s = 0;    ///< the CPU's optimizer step (DeepSpeedCPUAdam)
  double nvme_read_bytes = 0, nvme_write_bytes = 0;
  double nvme_time_s = 0;             ///< NVMe reads and writes (a union)
  double busy_time_s = 0;             ///< all of the above together (a union)
  /// Offload time no compute or communication of rank 0 overlaps: its share of the step.
  double exposed_time_s = 0;
};

/// Result of simulating one optimizer step. Times are per rank (symmetric mode: every rank).
struct Report {
  std::string schema = "stepsim.report/1";
  Scenario scenario;
  double step_time_s = 0;
  /// How far real runs of this kind were from stepsim (issue 14 item 6): the measured set, its
  /// runs and their error quantiles; no set when none covers the kind.
  ErrorBand error_band;
  /// With a calibration overlay: its fits' residuals, reported in place of error_band (which
  /// stays for the parts the overlay does not price).
  CalibrationBand calibration_band;
  /// Why error_band is empty although a set covers the kind ("" = it is not withheld).
  std::string error_band_withheld;
  double compute_time_s = 0;     ///< compute stream busy (forward, backward, optimizer, copies)
  double forward_time_s = 0;
  double backward_time_s = 0;
  double optimizer_time_s = 0;
  double overhead_time_s = 0;    ///< framework kernels (bucket copy-back)
  double comm_time_s = 0;        ///< communication stream busy
  double exposed_comm_s = 0;     ///< communication not overlapped by compute
  /// With tensor parallelism: the TP collectives' busy time and the part of it no compute
  /// overlaps (all of it: they are synchronous on the compute stream); the rest of
  /// exposed_comm_s (exposed time no TP collective covers) is the DP groups'. 0 without.
  double tp_comm_time_s = 0;
  double tp_exposed_comm_s = 0;
  /// With tensor parallelism: the DP-side collectives' own busy time (a union, as comm_time_s).
  double dp_comm_time_s = 0;
  /// With TP or PP: the exposed time of the DP-side collectives, what neither compute nor the
  /// TP or PP transfers cover. The exposure is attributed TP first (what compute leaves),
  /// then PP (what compute and TP leave), then DP, so the three add up to exposed_comm_s.
  double dp_exposed_comm_s = 0;
  /// per_rank mode: time rank 0 is idle waiting for other ranks (at collectives whose last
  /// member arrives later, and after its last task until the slowest rank ends the step):
  /// step_time_s − compute_time_s − exposed_comm_s. 0 in symmetric mode, where compute and
  /// exposed communication make up the step.
  double wait_time_s = 0;
  /// Time compute tasks of rank 0 lasted beyond their time alone because collectives ran
  /// beside them (sim.overlap_model, semantics.md §E rules 95–96); summed over tasks.
  double overlap_slowdown_s = 0;
  /// Time collectives of rank 0 lasted beyond their closed form because they shared links
  /// with other collectives (sim.link_sharing); summed over tasks.
  double link_sharing_stretch_s = 0;
  OffloadSummary offload;        ///< optimizer offload's PCIe, CPU and NVMe time
  /// With a `checkpoint` object: one save and its share of each step (checkpoint.present).
  bool checkpoint_present = false;
  CheckpointCost checkpoint;
  double overlap_fraction = 0;   ///< 1 − exposed / comm (1 when no communication)
  double tokens_per_step = 0;    ///< global: dp × micro_batch_size × seq_len × grad_accum
  double tokens_per_s = 0;       ///< global throughput
  double model_flops_per_gpu = 0;
  /// model FLOPs / (step_time × peak), the peak the profile's dense BF16 one (peak_flops_per_s),
  /// as torchtitan and Megatron-LM report MFU: GEMMs in FP8 (float8, an fp8 param_dtype) can
  /// take it above 1 on a profile whose FP8 peak is twice the BF16 one.
  double mfu = 0;
  double comm_bound_threshold_tokens_per_gpu = 0;  ///< seed 000 §7 (peak FLOP/s), for this DP group
  /// The same threshold as this simulation sees it: tokens per GPU per micro-batch at which one
  /// micro-batch's simulated backward would last as long as one micro-batch's communication
  /// (tokens × comm / backward; backward scales about linearly with tokens; the step's
  /// communication is one sync's under DDP and ZeRO-1, spread over every micro-batch under
  /// ZeRO-2, ZeRO-3, FSDP and HSDP or with sync_every_micro_batch). Lower than the
  /// seeds' figure when kernels run below peak.
  double comm_bound_tokens_per_gpu_effective = 0;
  std::vector<CollectiveSummary> collectives;
  /// Bytes each rank sends per step over all collectives: count × size × 2(n−1)/n (AllReduce)
  /// or (n−1)/n (ReduceScatter, AllGather) — the ring's per-rank traffic.
  double comm_bytes_per_rank = 0;
  /// Sum of the buffer sizes (count × size) of the collectives that cross nodes.
  double inter_node_collective_bytes = 0;
  std::size_t bucket_count = 0;
  double bucket_bytes_max = 0;
  double gradient_bytes = 0;     ///< all gradients reduced per sync
  MemoryBreakdown memory;
  std::size_t tasks = 0;
  std::uint64_t events = 0;
  std::vector<PathEntry> critical_path_tail;  ///< the last few tasks of the critical path
  std::size_t critical_path_tasks = 0;
  std::vector<std::string> warnings;
  /// Some collective used a calibration segment outside what was measured (size or shape), so a
  /// sweep's CSV shows it per point (JSON `calibration_extrapolated`; issue 13 item 10).
  bool calibration_extrapolated = false;
  RankSpread per_rank;           ///< per_rank mode: spread over ranks, straggler cost
  /// Pipeline parallelism (parallelism.pp > 1): one entry per PP stage (PP rank), in rank
  /// order; empty without PP. The report's compute and communication rows are stage 0's; its
  /// memory rows the stage with the highest peak's.
  std::vector<PipelineStageSummary> pipeline_stages;
  /// Under PP: the PP rank whose peak the memory rows show (the highest).
  std::size_t memory_stage = 0;
  /// Under PP: stage 0's point-to-point receive time (busy) and the part neither its compute
  /// nor its TP collectives overlap.
  double pp_comm_time_s = 0;
  double pp_exposed_comm_s = 0;
  /// Under CP: the CP transfers' busy time and the part neither compute nor the TP collectives
  /// cover (attributed after TP, before PP).
  double cp_comm_time_s = 0;
  double cp_exposed_comm_s = 0;
  /// Under EP: the all-to-alls' busy time and the part neither compute nor the TP and CP
  /// transfers cover (attributed after CP, before PP; models/expert_parallel.hpp).
  double ep_comm_time_s = 0;
  double ep_exposed_comm_s = 0;
  double wall_time_s = 0;
};

/// Simulates one step of `scenario`: lowers it with its strategy, plays the graph on the
/// engine with the profile's cost model, and derives the report. The single entry point used
/// by the CLI, sweeps and compare.
/// @throws InputError when the scenario describes something the models cannot price
///         (e.g. a multi-node group on a profile without a network), or a per_rank run that
///         holds more than kMaxPerRankTasks tasks or needs more memory than the process may
///         use (tasks × kPerRankBytesPerTask, × kPerRankTraceBytesPerTask with a trace).
Report run(const Scenario& scenario);

/// Stable JSON rendering (schema "stepsim.report/1"): the same report gives the same bytes.
/// `wall_time_s` is not in it (`stepsim run --timing` prints it on stderr).
std::string report_json(const Report& r);
/// Where a TP group sits, for the reports: "inside a node", or "over N whole nodes" when tp is a
/// multiple of cluster.gpus_per_node; in another order (parallelism.order) group_placement of TP.
std::string tp_placement(const Scenario& s);

/// Where the members of `group` of `s`'s mesh sit: "inside a node", "over N whole nodes" or
/// "over N nodes, k per node" (Scenario::layout()).
std::string group_placement(const Scenario& s, const MeshGroup& group);

/// "" where the order places ranks as Megatron-LM's default does (RankLayout::places_as); else "order X (innermost first): " and where each
/// dimension's groups of more than one rank sit (group_placement), for the reports' mesh lines.
std::string placement_line(const Scenario& s);

/// Human-readable breakdown for the terminal. The "buckets" line appears only when the step
/// has gradient buckets (DDP); strategies without them (FSDP, HSDP, ZeRO) get no such line.
std::string report_text(const Report& r);

}  // namespace stepsim::models
