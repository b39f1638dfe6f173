// SPDX-License-Identifier: Apache-2.0
// Replicated runs: the per-copy variation draws, the per_rank entry points of the engine
// (sim::run with RunOptions::copies) and slicing a replicated timeline by copy.
#include "sim/replicate.hpp"

#include "sim/support/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numbers>

namespace stepsim::sim {

namespace {

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

bool RankVariation::none() const {
  if (distribution != JitterDistribution::None && cv != 0) return false;
  if (load_cv != 0 && std::any_of(load_share.begin(), load_share.end(), [](double x) { return x != 0; })) return false;
  if (std::any_of(link_factor.begin(), link_factor.end(), [](double f) { return f != 1.0; })) return false;
  return std::all_of(compute_factor.begin(), compute_factor.end(), [](double f) { return f == 1.0; });
}

double RankVariation::standard_normal(std::uint64_t seed, std::uint32_t copy, TaskId base) {
  const std::uint64_t h1 = splitmix64(seed ^ splitmix64((std::uint64_t{copy} << 32) | base));
  const std::uint64_t h2 = splitmix64(h1);
  const double u1 = (static_cast<double>(h1 >> 11) + 1.0) * 0x1.0p-53;  // (0, 1]
  const double u2 = static_cast<double>(h2 >> 11) * 0x1.0p-53;          // [0, 1)
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

double RankVariation::load(std::uint32_t copy, std::uint32_t key) const {
  const double l = std::max(0.0, 1.0 + load_cv * standard_normal(load_seed, copy, key));
  return load_cap > 0 ? std::min(l, load_cap) : l;
}

double RankVariation::factor(std::uint32_t copy, TaskId base) const {
  const std::size_t at = slot(copy, base);
  double f = at < compute_factor.size() ? compute_factor[at] : 1.0;
  if (load_cv != 0 && base < load_share.size() && load_share[base] != 0) {
    const double l = load(copy, base < load_key.size() ? load_key[base] : base);
    f *= 1.0 - load_share[base] + load_share[base] * l;
  }
  if (distribution == JitterDistribution::None || cv == 0) return f;
  const double z = standard_normal(seed, copy, base);
  if (distribution == JitterDistribution::Normal) return f * std::max(0.0, 1.0 + cv * z);
  const double sigma2 = std::log1p(cv * cv);
  return f * std::exp(-0.5 * sigma2 + std::sqrt(sigma2) * z);
}

namespace {

RunOptions copies_of(std::uint32_t copies, const std::vector<RendezvousSpan>& spans, const RankVariation& variation) {
  STEPSIM_ASSERT(copies >= 1, "replicated run with 0 copies");
  RunOptions options;
  options.copies = copies;
  options.spans = spans;
  options.variation = variation;
  return options;
}

}  // namespace

Timeline run_replicated(const TaskGraph& base, std::uint32_t copies, const std::vector<RendezvousSpan>& spans,
                        const TaskCostModel& cost, const RankVariation& variation) {
  return run(base, cost, copies_of(copies, spans, variation));
}

ReplicatedSummary run_replicated_summary(const TaskGraph& base, std::uint32_t copies,
                                         const std::vector<RendezvousSpan>& spans, const TaskCostModel& cost,
                                         const RankVariation& variation, std::vector<std::uint32_t> keep) {
  return run_summary(base, cost, copies_of(copies, spans, variation), std::move(keep));
}

Timeline copy_timeline(const Timeline& all, std::size_t base_size, std::uint32_t copy) {
  STEPSIM_ASSERT(std::size_t{copy + 1} * base_size <= all.size(), "copy {} past the timeline", copy);
  std::vector<TaskRecord> records(base_size);
  const std::size_t offset = std::size_t{copy} * base_size;
  for (std::size_t v = 0; v < base_size; ++v) {
    TaskRecord r = all[static_cast<TaskId>(offset + v)];
    if (r.binding != kNoTask && r.binding / base_size != copy) r.binding = all[r.binding].binding;
    if (r.binding != kNoTask) r.binding = static_cast<TaskId>(r.binding % base_size);
    records[v] = r;
  }
  std::vector<MemoryWait> waits;
  for (MemoryWait w : all.memory_waits())
    if (w.task / base_size == copy) {
      w.task = static_cast<TaskId>(w.task % base_size);
      waits.push_back(w);
    }
  return Timeline(std::move(records), all.events(), std::move(waits));
}

std::vector<Time> copy_makespans(const Timeline& all, std::size_t base_size, std::uint32_t copies) {
  std::vector<Time> out(copies);
  for (std::uint32_t c = 0; c < copies; ++c)
    for (std::size_t v = 0; v < base_size; ++v)
      out[c] = std::max(out[c], all[static_cast<TaskId>(std::size_t{c} * base_size + v)].end);
  return out;
}

}  // namespace stepsim::sim
