// SPDX-License-Identifier: Apache-2.0
// Pipeline parallelism: which layers each stage holds, and the order each PP rank runs its
// micro-batches in (issue 15 item 6; shared/reference/semantics-parallel.md §B).
//
// Stages: pp × virtual_stages model chunks ("virtual stages"), looped over the ranks as both
// frameworks map them (Megatron-LM's interleaving, torch.distributed.pipelining's
// Interleaved1F1B, B10): rank r holds virtual stages r, r + pp, r + 2·pp, … The embedding sits
// on the first virtual stage, the final norm, LM head and loss on the last.
//  * Megatron-LM (the ddp family): the transformer blocks split evenly, num_layers a multiple
//    of pp × virtual_stages (megatron/core/transformer/transformer_block.py
//    get_num_layers_to_build asserts it without the uneven-split options);
//  * torchtitan (fsdp, hsdp): generate_llm_fqn_per_model_part (torchtitan/distributed/
//    pipeline_parallel.py): the embedding and the norm + head count as one layer each
//    (input_weight = output_weight = 1); the blocks plus those two split into equal shares,
//    the first (layers + 2) mod stages stages one more.
//
// Schedules (per rank, program order; F = forward of one micro-batch through one chunk, B its
// backward):
//  * GPipe (B8): every F in micro-batch order, then every B in micro-batch order;
//  * 1F1B (B1, B9): min(m, pp − r) forwards, then B and F alternate until the forwards are
//    done, then the remaining B (Megatron-LM's warm-up of pp − r − 1 forwards plus its
//    first steady-state F);
//  * Interleaved1F1B (B10, Megatron-LM's B3 with microbatch_group_size_per_vp_stage = pp):
//    rounds = max(1, m / pp), mpr = m / rounds micro-batches per round; warm-up
//    min((v − 1)·mpr + 2·(pp − 1 − r), m·v) forwards, then F and B alternate (F first: the
//    warm-up does not count the first steady-state forward, as 1F1B's does), then the
//    remaining B. Forward k runs chunk (k / mpr) mod v on micro-batch
//    (k / (mpr·v))·mpr + k mod mpr; backward k the mirrored chunk v − 1 − (k / mpr) mod v.
//  * InterleavedZeroBubble (B12; torch.distributed.pipelining's ScheduleInterleavedZeroBubble,
//    the ZB1P schedule of arXiv 2401.10241, with virtual_stages 1 its ZB-H1): the backward
//    splits into I (input gradient) and W (weight gradient); Interleaved1F1B's rounds and chunk
//    maps with a warm-up of min((v − 1)·mpr + (pp − 1 − r), m·v) forwards (_get_warmup_ops,
//    multiply_factor 1), then F and I alternate (F first), then the remaining I; after the
//    first r I's of the steady state, each step appends the W of the oldest I still without one
//    (_get_1f1b_rank_ops, enable_zero_bubble, num_1f1b_microbatches = r), and the W's left over
//    run at the end. On stage 0 the I is empty and its W runs the whole backward (B16).
//  * ZBVZeroBubble (B13; ScheduleZBVZeroBubble, ZB-V of arXiv 2401.10241 §6): two chunks per
//    rank on the V mapping (rank r holds stages r and 2·pp − 1 − r, so stages pp − 1 and pp sit
//    on one rank and pass their activations without a message, B17); with n = max(2·pp − 1, m):
//    2(pp − r) − 1 forwards of chunk 0; r × [F chunk 1, F chunk 0]; pp − r × [F, I, W of chunk
//    1]; while forwards remain: [F chunk 0 (while any is left), I + W chunk 0, F + I + W chunk
//    1]; then r × [I chunk 0, I chunk 1], pp − r × [I chunk 0, W chunk 0], the W's left of
//    chunk 1, then of chunk 0; the actions of micro-batches m … n − 1 dropped.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace stepsim::models {

struct Scenario;
struct ModelSpec;
struct ParamTensor;

/// The pipeline schedules stepsim plays.
enum class PipelineSchedule { GPipe, OneFOneB, Interleaved1F1B, InterleavedZeroBubble, ZBVZeroBubble };

/// "1F1B" → OneFOneB, "GPipe", "Interleaved1F1B", "InterleavedZeroBubble", "ZBVZeroBubble".
/// @throws InternalError for another name (parse_scenario validates it).
PipelineSchedule pipeline_schedule_of(const std::string& name);

/// True for the schedules that hold several model chunks per PP rank (virtual_stages).
bool multi_stage_schedule(PipelineSchedule schedule);

/// The virtual stage of PP rank `rank`'s model chunk `chunk`: chunk·pp + rank (the loop
/// mapping), or under ZBVZeroBubble the "V" (B13; _utils.generate_stage_to_rank_mapping
/// style "v"): chunk 0 is stage rank, chunk 1 stage 2·pp − 1 − rank.
int pipeline_stage_of(PipelineSchedule schedule, int pp, int chunk, int rank);

/// The PP rank that holds virtual stage `stage` (the inverse of pipeline_stage_of).
int pipeline_stage_rank(PipelineSchedule schedule, int pp, int stage);

/// Which part of a backward an action runs: all of it, or (zero-bubble schedules, B12) the
/// input-gradient pass I alone (what the previous stage waits for) or the weight-gradient pass
/// W alone (the parameters' gradients, which the DP reduction waits for).
enum class BackwardPart : std::uint8_t { Full, Input, Weight };

/// One step of a PP rank's program: a forward or backward of micro-batch `micro_batch`
/// (0-based) through the rank's model chunk `chunk` (0-based; virtual stage chunk·pp + rank).
struct PipelineAction {
  bool backward = false;
  std::int64_t micro_batch = 0;
  int chunk = 0;
  BackwardPart part = BackwardPart::Full;  ///< backward only
  bool operator==(const PipelineAction&) const = default;
};

/// Every rank's program under `schedule` with `pp` ranks, `chunks` model chunks per rank and
/// `micro_batches` micro-batches (rules in this file's header): result[r] is rank r's, m·chunks
/// forwards and as many backwards each.
/// @pre pp ≥ 1, chunks ≥ 1 (1 unless Interleaved1F1B), micro_batches ≥ 1; Interleaved1F1B:
///      micro_batches a multiple of max(1, micro_batches / pp) (pipeline_problem checks it).
std::vector<std::vector<PipelineAction>> pipeline_programs(PipelineSchedule schedule, int pp, int chunks,
                                                           std::int64_t micro_batches);

/// The layers (indexes into `s.model.layers`, forward order) of every virtual stage, in
/// virtual-stage order (pp × virtual_stages of them), by the family's rule (header).
/// @pre pipeline_problem(s) is empty.
std::vector<std::vector<std::size_t>> pipeline_stage_layers(const Scenario& s);

/// Why `s` cannot be pipelined as asked ("" when it can): the model has no transformer blocks,
/// too few blocks for the stages, blocks that do not split evenly under the ddp family,
/// Interleaved1F1B's micro-batch rule, virtual_stages on a single-stage schedule.
std::string pipeline_problem(const Scenario& s);

/// The layers of PP rank `rank` (every chunk's, forward order within a chunk, chunks in order).
std::vector<std::size_t> pipeline_rank_layers(const Scenario& s, int rank);

/// A copy of `s` whose model holds only PP rank `rank`'s layers (for its memory and its
/// optimizer step; the rest of the scenario unchanged). With tied embeddings the last PP rank
/// also holds a copy of the word embedding (pipeline_tied_embedding).
Scenario pipeline_rank_scenario(const Scenario& s, int rank);

/// Under PP with tied embeddings (TransformerShape::tied_embeddings) the LM head on the last
/// stage cannot read the first stage's word embedding: Megatron-LM keeps a copy there
/// (LanguageModule.setup_embeddings_and_output_layer, shared_embedding_or_output_weight) and
/// all-reduces the two copies' gradients between the first and last stage after the DP
/// reduction (finalize_model_grads, _allreduce_word_embedding_grads). The word embedding's
/// tensor (the largest of the model's first layer); nullptr when the model has no tie, pp is 1,
/// or the schedule puts the first and the last stage on one rank (ZBVZeroBubble's V: one tensor).
const ParamTensor* pipeline_tied_embedding(const Scenario& s);

/// Micro-batches of PP rank `rank`'s own layers whose activations its schedule holds at once at
/// most (for `stepsim memory`; `stepsim run` plays the schedule and measures it): 1F1B
/// min(pp − rank, m) (B2), GPipe m (B8), Interleaved1F1B its warm-up + 1 chunk-micro-batches
/// of 1/v of the rank's layers each, min(m·v, (v − 1)·mpr + 2·(pp − 1 − rank) + 1) / v (B4);
/// the zero-bubble schedules the most chunk-micro-batches between a forward and its W along the
/// rank's program (a chunk's activations live until its weight gradients are computed), / v.
double pipeline_micro_batches_in_flight(const Scenario& s, int rank);

/// The most activation bytes PP rank `rank`'s program holds at once when a micro-batch of its
/// model chunk c keeps `chunk_bytes[c]` from its forward to its backward (to its W under the
/// zero-bubble schedules): the walk pipeline_micro_batches_in_flight counts, weighted by chunk
/// (ZBVZeroBubble's two chunks differ: the last stage holds the head's logits).
/// @pre chunk_bytes.size() == virtual_stages.
double pipeline_peak_activation_bytes(const Scenario& s, int rank, const std::vector<double>& chunk_bytes);

/// Bytes of one point-to-point message between stages for one micro-batch, each direction:
/// the [seq_len, micro_batch_size, hidden] activations (or their gradient) in the parameter
/// dtype (Megatron-LM's pipeline_dtype = params_dtype; get_tensor_shapes), 1/cp of the sequence
/// under context parallelism and 1/tp under sequence parallelism (B7, B17).
double pipeline_message_bytes(const Scenario& s);

}  // namespace stepsim::models
