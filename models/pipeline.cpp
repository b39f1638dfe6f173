// SPDX-License-Identifier: Apache-2.0
// Pipeline stages and schedules (rules in pipeline.hpp).
#include "models/pipeline.hpp"

#include "models/model_spec.hpp"
#include "models/scenario.hpp"
#include "models/strategy/strategy.hpp"
#include "sim/support/error.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace stepsim::models {

PipelineSchedule pipeline_schedule_of(const std::string& name) {
  if (name == "1F1B") return PipelineSchedule::OneFOneB;
  if (name == "GPipe") return PipelineSchedule::GPipe;
  if (name == "Interleaved1F1B") return PipelineSchedule::Interleaved1F1B;
  if (name == "InterleavedZeroBubble") return PipelineSchedule::InterleavedZeroBubble;
  if (name == "ZBVZeroBubble") return PipelineSchedule::ZBVZeroBubble;
  throw InternalError("unknown pipeline schedule '" + name + "'");
}

bool multi_stage_schedule(PipelineSchedule schedule) {
  return schedule == PipelineSchedule::Interleaved1F1B || schedule == PipelineSchedule::InterleavedZeroBubble ||
         schedule == PipelineSchedule::ZBVZeroBubble;
}

int pipeline_stage_of(PipelineSchedule schedule, int pp, int chunk, int rank) {
  if (schedule == PipelineSchedule::ZBVZeroBubble) return chunk == 0 ? rank : 2 * pp - 1 - rank;
  return chunk * pp + rank;
}

int pipeline_stage_rank(PipelineSchedule schedule, int pp, int stage) {
  if (schedule == PipelineSchedule::ZBVZeroBubble) return stage < pp ? stage : 2 * pp - 1 - stage;
  return stage % pp;
}

namespace {

// Forward k and backward k of a rank under Interleaved1F1B (B10's chunk and micro-batch maps).
PipelineAction interleaved_action(std::int64_t k, bool backward, int chunks, std::int64_t mpr) {
  const int in_round = static_cast<int>((k / mpr) % chunks);
  const std::int64_t mb = (k / (mpr * chunks)) * mpr + k % mpr;
  return {backward, mb, backward ? chunks - 1 - in_round : in_round};
}

// Warm-up forwards, then B and F alternating (F first when `forward_first`), then the
// remaining B.
std::vector<PipelineAction> one_f_one_b(std::int64_t warmup, std::int64_t total, bool forward_first,
                                        const auto& forward, const auto& backward) {
  std::vector<PipelineAction> out;
  out.reserve(static_cast<std::size_t>(2 * total));
  std::int64_t f = 0, b = 0;
  for (; f < warmup; ++f) out.push_back(forward(f));
  // 1F1B (B9): its warm-up counts the first steady-state forward, so a backward comes next;
  // Interleaved1F1B's (B3, B10) does not: a forward, then its backward.
  while (f < total || b < total) {
    if (forward_first && f < total) out.push_back(forward(f++));
    if (b < total) out.push_back(backward(b++));
    if (!forward_first && f < total) out.push_back(forward(f++));
  }
  return out;
}

// Blocks (non-root layers) and the root layers before and after them.
struct ModelParts {
  std::vector<std::size_t> head, blocks, tail;
};

ModelParts model_parts(const ModelSpec& m) {
  ModelParts p;
  for (std::size_t l = 0; l < m.layers.size(); ++l) {
    if (!m.layers[l].root) p.blocks.push_back(l);
    else (p.blocks.empty() ? p.head : p.tail).push_back(l);
  }
  return p;
}

bool torchtitan_split(const Scenario& s) { return strategy_of(s).family == StrategyFamily::FSDP; }

}  // namespace

std::vector<std::vector<PipelineAction>> pipeline_programs(PipelineSchedule schedule, int pp, int chunks,
                                                           std::int64_t micro_batches) {
  STEPSIM_ASSERT(pp >= 1 && chunks >= 1 && micro_batches >= 1, "pipeline of {} ranks, {} chunks, {} micro-batches", pp,
                 chunks, micro_batches);
  std::vector<std::vector<PipelineAction>> out(static_cast<std::size_t>(pp));
  const std::int64_t m = micro_batches;
  for (int r = 0; r < pp; ++r) {
    auto& prog = out[static_cast<std::size_t>(r)];
    switch (schedule) {
      case PipelineSchedule::GPipe:
        for (std::int64_t i = 0; i < m; ++i) prog.push_back({false, i, 0});
        for (std::int64_t i = 0; i < m; ++i) prog.push_back({true, i, 0});
        break;
      case PipelineSchedule::OneFOneB:
        prog = one_f_one_b(std::min<std::int64_t>(m, pp - r), m, false, [](std::int64_t k) { return PipelineAction{false, k, 0}; },
                           [](std::int64_t k) { return PipelineAction{true, k, 0}; });
        break;
      case PipelineSchedule::Interleaved1F1B: {
        const std::int64_t rounds = std::max<std::int64_t>(1, m / pp);
        STEPSIM_ASSERT(m % rounds == 0, "Interleaved1F1B: {} micro-batches in {} rounds", m, rounds);
        const std::int64_t mpr = m / rounds;
        const std::int64_t total = m * chunks;
        const std::int64_t warmup = std::min<std::int64_t>((chunks - 1) * mpr + 2 * (pp - 1 - r), total);
        prog = one_f_one_b(warmup, total, true, [&](std::int64_t k) { return interleaved_action(k, false, chunks, mpr); },
                           [&](std::int64_t k) { return interleaved_action(k, true, chunks, mpr); });
        break;
      }
      case PipelineSchedule::InterleavedZeroBubble: {
        const std::int64_t rounds = std::max<std::int64_t>(1, m / pp);
        STEPSIM_ASSERT(m % rounds == 0, "InterleavedZeroBubble: {} micro-batches in {} rounds", m, rounds);
        const std::int64_t mpr = m / rounds;
        const std::int64_t total = m * chunks;
        const std::int64_t warmup = std::min<std::int64_t>((chunks - 1) * mpr + (pp - 1 - r), total);
        std::int64_t f = 0, b = 0, w = 0;
        const auto input = [&] {
          PipelineAction a = interleaved_action(b++, true, chunks, mpr);
          a.part = BackwardPart::Input;
          prog.push_back(a);
          // After the first r steady-state I's, the W of the oldest I without one.
          if (b > r) {
            PipelineAction wa = interleaved_action(w++, true, chunks, mpr);
            wa.part = BackwardPart::Weight;
            prog.push_back(wa);
          }
        };
        for (; f < warmup; ++f) prog.push_back(interleaved_action(f, false, chunks, mpr));
        while (f < total || b < total) {
          if (f < total) prog.push_back(interleaved_action(f++, false, chunks, mpr));
          if (b < total) input();
        }
        while (w < total) {
          PipelineAction wa = interleaved_action(w++, true, chunks, mpr);
          wa.part = BackwardPart::Weight;
          prog.push_back(wa);
        }
        break;
      }
      case PipelineSchedule::ZBVZeroBubble: {
        STEPSIM_ASSERT(chunks == 2, "ZBVZeroBubble with {} chunks per rank", chunks);
        const std::int64_t n = std::max<std::int64_t>(2 * pp - 1, m);
        std::int64_t f0 = 0, f1 = 0, b0 = 0, b1 = 0;
        const auto act = [&](int chunk, BackwardPart part, bool backward, std::int64_t mb) {
          if (mb < m) prog.push_back({backward, mb, chunk, part});  // the padding micro-batches dropped
        };
        const auto fwd = [&](int chunk) { act(chunk, BackwardPart::Full, false, chunk == 0 ? f0++ : f1++); };
        const auto input = [&](int chunk, std::int64_t mb) { act(chunk, BackwardPart::Input, true, mb); };
        const auto weight = [&](int chunk, std::int64_t mb) { act(chunk, BackwardPart::Weight, true, mb); };
        for (int i = 0; i < 2 * (pp - r) - 1; ++i) fwd(0);
        for (int i = 0; i < r; ++i) fwd(1), fwd(0);
        for (int i = 0; i < pp - r; ++i) {
          fwd(1);
          input(1, b1);
          weight(1, b1++);
        }
        while (f1 < f0 || f0 < n) {
          if (f0 < n) fwd(0);
          input(0, b0);
          weight(0, b0++);
          fwd(1);
          input(1, b1);
          weight(1, b1++);
        }
        std::int64_t w0 = b0, w1 = b1;
        for (int i = 0; i < r; ++i) input(0, b0++), input(1, b1++);
        for (int i = 0; i < pp - r; ++i) input(0, b0++), weight(0, w0++);
        while (w1 < b1) weight(1, w1++);
        while (w0 < b0) weight(0, w0++);
        STEPSIM_ASSERT(w0 == n && w1 == n && f0 == n && f1 == n, "ZBVZeroBubble program of rank {} incomplete", r);
        break;
      }
    }
  }
  return out;
}

std::string pipeline_problem(const Scenario& s) {
  const auto& p = s.parallelism;
  const std::int64_t stages = p.pp * p.virtual_stages;
  const ModelParts parts = model_parts(s.model);
  const auto blocks = static_cast<std::int64_t>(parts.blocks.size());
  if (!s.model.transformer_shape || blocks == 0)
    return fmt::format("model '{}' is not a transformer with blocks: stepsim splits transformer blocks into pipeline "
                       "stages", s.model.name);
  const PipelineSchedule schedule = pipeline_schedule_of(p.pipeline_schedule);
  if (!multi_stage_schedule(schedule) && p.virtual_stages != 1)
    return fmt::format("virtual_stages {} needs pipeline_schedule \"Interleaved1F1B\", \"InterleavedZeroBubble\" or "
                       "\"ZBVZeroBubble\" ({} runs one stage per rank)", p.virtual_stages, p.pipeline_schedule);
  if (schedule == PipelineSchedule::ZBVZeroBubble && p.virtual_stages != 2)
    return fmt::format("ZBVZeroBubble runs exactly 2 stages per rank (its V; torch.distributed.pipelining raises "
                       "otherwise); got virtual_stages {}", p.virtual_stages);
  if (schedule == PipelineSchedule::Interleaved1F1B || schedule == PipelineSchedule::InterleavedZeroBubble) {
    const std::int64_t m = s.batch.grad_accum;
    const std::int64_t rounds = std::max<std::int64_t>(1, m / p.pp);
    if (m % rounds != 0)
      return fmt::format("{} runs max(1, grad_accum / pp) = {} rounds of equal size; grad_accum {} does not "
                         "divide into them (torch.distributed.pipelining raises it); expected a multiple of {}",
                         p.pipeline_schedule, rounds, m, rounds);
  }
  if (torchtitan_split(s)) {
    // generate_llm_fqn_per_model_part's checks, input and output weight 1.
    const std::int64_t effective = blocks + 2;
    if (stages > effective || effective / stages < 1)
      return fmt::format("{} stages (pp × virtual_stages) for {} blocks + embedding + head: torchtitan needs at least "
                         "one layer per stage", stages, blocks);
  } else if (blocks % stages != 0) {
    return fmt::format("{} transformer blocks do not split evenly into pp × virtual_stages = {} stages (Megatron-LM "
                       "asserts num_layers divisible by them); expected a divisor of {}", blocks, stages, blocks);
  }
  return "";
}

std::vector<std::vector<std::size_t>> pipeline_stage_layers(const Scenario& s) {
  const auto stages = static_cast<std::size_t>(s.parallelism.pp * s.parallelism.virtual_stages);
  const ModelParts parts = model_parts(s.model);
  std::vector<std::vector<std::size_t>> out(stages);
  std::vector<std::size_t> blocks_per_stage(stages);
  const std::size_t blocks = parts.blocks.size();
  if (torchtitan_split(s)) {
    const std::size_t effective = blocks + 2;
    for (std::size_t i = 0; i < stages; ++i) {
      std::size_t n = effective / stages + (i < effective % stages ? 1 : 0);
      if (i == 0) n -= 1;           // the embedding's weight
      if (i + 1 == stages) n -= 1;  // the norm + head's
      blocks_per_stage[i] = n;
    }
  } else {
    std::fill(blocks_per_stage.begin(), blocks_per_stage.end(), blocks / stages);
  }
  std::size_t next = 0;
  for (std::size_t i = 0; i < stages; ++i) {
    if (i == 0) out[i] = parts.head;
    for (std::size_t k = 0; k < blocks_per_stage[i] && next < blocks; ++k) out[i].push_back(parts.blocks[next++]);
    if (i + 1 == stages) {
      while (next < blocks) out[i].push_back(parts.blocks[next++]);
      out[i].insert(out[i].end(), parts.tail.begin(), parts.tail.end());
    }
  }
  return out;
}

std::vector<std::size_t> pipeline_rank_layers(const Scenario& s, int rank) {
  const auto stages = pipeline_stage_layers(s);
  const PipelineSchedule schedule = pipeline_schedule_of(s.parallelism.pipeline_schedule);
  const int pp = static_cast<int>(s.parallelism.pp);
  std::vector<std::size_t> out;
  for (int c = 0; c < static_cast<int>(s.parallelism.virtual_stages); ++c) {
    const auto& st = stages[static_cast<std::size_t>(pipeline_stage_of(schedule, pp, c, rank))];
    out.insert(out.end(), st.begin(), st.end());
  }
  return out;
}

const ParamTensor* pipeline_tied_embedding(const Scenario& s) {
  if (s.parallelism.pp <= 1 || !s.model.transformer_shape || !s.model.transformer_shape->tied_embeddings ||
      s.model.layers.empty() || pipeline_schedule_of(s.parallelism.pipeline_schedule) == PipelineSchedule::ZBVZeroBubble)
    return nullptr;
  const ParamTensor* best = nullptr;
  for (const ParamTensor& p : s.model.layers.front().params)
    if (best == nullptr || p.numel > best->numel) best = &p;
  return best;
}

Scenario pipeline_rank_scenario(const Scenario& s, int rank) {
  Scenario out = s;
  std::vector<LayerSpec> layers;
  for (std::size_t l : pipeline_rank_layers(s, rank)) layers.push_back(s.model.layers[l]);
  if (const ParamTensor* tied = pipeline_tied_embedding(s); tied != nullptr && rank + 1 == s.parallelism.pp) {
    ParamTensor copy = *tied;
    copy.name += " (copy on the last stage)";
    layers.back().params.push_back(copy);
  }
  out.model.layers = std::move(layers);
  return out;
}

double pipeline_micro_batches_in_flight(const Scenario& s, int rank) {
  const std::int64_t m = s.batch.grad_accum, pp = s.parallelism.pp, v = s.parallelism.virtual_stages;
  switch (pipeline_schedule_of(s.parallelism.pipeline_schedule)) {
    case PipelineSchedule::GPipe: return static_cast<double>(m);
    case PipelineSchedule::OneFOneB: return static_cast<double>(std::min<std::int64_t>(pp - rank, m));
    case PipelineSchedule::Interleaved1F1B: {
      const std::int64_t mpr = m / std::max<std::int64_t>(1, m / pp);
      const std::int64_t chunks = std::min<std::int64_t>(m * v, (v - 1) * mpr + 2 * (pp - 1 - rank) + 1);
      return static_cast<double>(chunks) / static_cast<double>(v);
    }
    case PipelineSchedule::InterleavedZeroBubble:
    case PipelineSchedule::ZBVZeroBubble: {
      // Forwards whose W has not run yet, at most, along the rank's program.
      const auto prog = pipeline_programs(pipeline_schedule_of(s.parallelism.pipeline_schedule), static_cast<int>(pp),
                                          static_cast<int>(v), m)[static_cast<std::size_t>(rank)];
      std::int64_t held = 0, most = 0;
      for (const PipelineAction& a : prog) {
        if (!a.backward) most = std::max(most, ++held);
        else if (a.part != BackwardPart::Input) --held;
      }
      return static_cast<double>(most) / static_cast<double>(v);
    }
  }
  return static_cast<double>(m);
}

double pipeline_peak_activation_bytes(const Scenario& s, int rank, const std::vector<double>& chunk_bytes) {
  STEPSIM_ASSERT(chunk_bytes.size() == static_cast<std::size_t>(s.parallelism.virtual_stages), "{} chunk sizes for {} chunks",
                 chunk_bytes.size(), s.parallelism.virtual_stages);
  const auto prog = pipeline_programs(pipeline_schedule_of(s.parallelism.pipeline_schedule), static_cast<int>(s.parallelism.pp),
                                      static_cast<int>(s.parallelism.virtual_stages), s.batch.grad_accum)[static_cast<std::size_t>(rank)];
  double held = 0, most = 0;
  for (const PipelineAction& a : prog) {
    const double b = chunk_bytes[static_cast<std::size_t>(a.chunk)];
    if (!a.backward) most = std::max(most, held += b);
    else if (a.part != BackwardPart::Input) held -= b;
  }
  return most;
}

double pipeline_message_bytes(const Scenario& s) {
  const double hidden = static_cast<double>(s.model.transformer_shape->hidden);
  const double seq = static_cast<double>(s.batch.seq_len) / static_cast<double>(s.parallelism.cp) /
                     (s.parallelism.sequence_parallel ? static_cast<double>(s.parallelism.tp) : 1.0);
  return seq * static_cast<double>(s.batch.micro_batch_size) * hidden * dtype_bytes(s.precision.param_dtype);
}

}  // namespace stepsim::models
