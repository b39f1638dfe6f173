// SPDX-License-Identifier: Apache-2.0
// Replicated runs: base-graph adjacency in flat arrays shared by every copy; per-copy state is
// one record and one counter per task.
#include "sim/replicate.hpp"

#include "sim/support/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numbers>

namespace stepsim::sim {

namespace {

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

constexpr std::int64_t kMaxPs = 9'000'000'000'000'000'000;

// Future event list for replicated runs: a min-heap of buckets ordered by (instant, creation
// order), each a FIFO of task ids. Consecutive schedules at one instant share a bucket: copies
// without variation finish the same task at the same instant, so one heap operation serves
// them all. Events play in (time, insertion order), as EventQueue orders equal priorities.
class TimeBuckets {
 public:
  void schedule(Time at, TaskId id) {
    STEPSIM_ASSERT(at >= now_, "event scheduled in the past ({} ps < now {} ps)", at.ps(), now_.ps());
    if (at == now_ && current_ != kNone) {  // zero-length task: joins the bucket being played
      pool_[current_].push_back(id);
      return;
    }
    if (at != last_time_ || last_bucket_ == kNone) {
      last_time_ = at;
      last_bucket_ = take_bucket();
      heap_.push_back({at.ps(), next_sequence_++, last_bucket_});
      std::push_heap(heap_.begin(), heap_.end(), Later());
    }
    pool_[last_bucket_].push_back(id);
  }
  bool empty() const { return heap_.empty(); }
  /// Plays the earliest bucket: calls f(id) for each id in order, including ids scheduled at
  /// the same instant while it runs.
  template <typename F>
  void play_next(F&& f) {
    std::pop_heap(heap_.begin(), heap_.end(), Later());
    const Entry e = heap_.back();
    heap_.pop_back();
    now_ = Time::from_ps(e.time_ps);
    current_ = e.bucket;
    if (last_bucket_ == current_) last_bucket_ = kNone;
    for (std::size_t i = 0; i < pool_[current_].size(); ++i) {
      ++processed_;
      f(pool_[current_][i]);
    }
    pool_[current_].clear();
    free_.push_back(current_);
    current_ = kNone;
  }
  Time now() const { return now_; }
  std::uint64_t processed() const { return processed_; }

 private:
  static constexpr std::uint32_t kNone = std::numeric_limits<std::uint32_t>::max();
  struct Entry {
    std::int64_t time_ps;
    std::uint64_t sequence;
    std::uint32_t bucket;
  };
  struct Later {
    bool operator()(const Entry& a, const Entry& b) const {
      return a.time_ps != b.time_ps ? a.time_ps > b.time_ps : a.sequence > b.sequence;
    }
  };
  std::uint32_t take_bucket() {
    if (!free_.empty()) {
      const std::uint32_t b = free_.back();
      free_.pop_back();
      return b;
    }
    pool_.emplace_back();
    return static_cast<std::uint32_t>(pool_.size() - 1);
  }
  std::vector<Entry> heap_;
  std::vector<std::vector<TaskId>> pool_;
  std::vector<std::uint32_t> free_;
  std::uint32_t current_ = kNone;
  Time last_time_ = Time::from_ps(-1);
  std::uint32_t last_bucket_ = kNone;
  std::uint64_t next_sequence_ = 0;
  Time now_;
  std::uint64_t processed_ = 0;
};

class ReplicatedRun {
 public:
  // Durations: cost->duration() of each base task, or `durations` when cost is null.
  ReplicatedRun(const TaskGraph& base, std::uint32_t copies, const std::vector<RendezvousSpan>& spans,
                const TaskCostModel* cost, const std::vector<Time>* durations, const RankVariation& variation)
      : base_(base), n_(base.size()), copies_(copies), variation_(variation) {
    const std::uint64_t total = std::uint64_t{n_} * copies;
    if (total > std::numeric_limits<TaskId>::max() - 1)
      throw InputError("", "", fmt::format("{} copies of {} tasks is {} tasks; the limit is {}", copies, n_, total,
                                           std::numeric_limits<TaskId>::max() - 1));
    // Base adjacency (dependency edges, then the stream successor) in CSR form.
    succ_begin_.assign(n_ + 1, 0);
    init_pending_.assign(n_, 0);
    std::vector<TaskId> next_in_stream(n_, kNoTask);
    for (TaskId v = 0; v < n_; ++v) {
      init_pending_[v] = static_cast<std::uint32_t>(boost::in_degree(v, base.graph()));
      const TaskId prev = base.stream_previous(v);
      if (prev != kNoTask) {
        ++init_pending_[v];
        next_in_stream[prev] = v;
      }
    }
    for (TaskId v = 0; v < n_; ++v) {
      for (auto [it, end] = boost::out_edges(v, base.graph()); it != end; ++it)
        succ_.push_back(static_cast<TaskId>(boost::target(*it, base.graph())));
      if (next_in_stream[v] != kNoTask) succ_.push_back(next_in_stream[v]);
      succ_begin_[v + 1] = static_cast<std::uint32_t>(succ_.size());
    }
    // Durations and kinds, priced once.
    duration_.resize(n_);
    compute_.resize(n_);
    for (TaskId v = 0; v < n_; ++v) {
      const Task& t = base.task(v);
      duration_[v] = cost != nullptr ? cost->duration(t) : (*durations)[v];
      STEPSIM_ASSERT(duration_[v] >= Time(), "negative duration for task '{}'", t.name);
      compute_[v] = t.kind == TaskKind::Compute;
    }
    vary_ = !variation.none();
    // Rendezvous: base members of each id, spans, and one arrival counter per instance.
    std::uint32_t ids = 0;
    for (TaskId v = 0; v < n_; ++v)
      if (base.task(v).rendezvous != kNoRendezvous) ids = std::max(ids, base.task(v).rendezvous + 1);
    member_begin_.assign(ids + 1, 0);
    for (TaskId v = 0; v < n_; ++v)
      if (base.task(v).rendezvous != kNoRendezvous) ++member_begin_[base.task(v).rendezvous + 1];
    for (std::uint32_t r = 0; r < ids; ++r) member_begin_[r + 1] += member_begin_[r];
    members_.resize(member_begin_[ids]);
    std::vector<std::uint32_t> fill(member_begin_.begin(), member_begin_.end() - 1);
    for (TaskId v = 0; v < n_; ++v)
      if (base.task(v).rendezvous != kNoRendezvous) members_[fill[base.task(v).rendezvous]++] = v;
    span_.resize(ids);
    instance_begin_.assign(ids + 1, 0);
    for (std::uint32_t r = 0; r < ids; ++r) {
      RendezvousSpan s = r < spans.size() ? spans[r] : RendezvousSpan{};
      if (s.size == 0) s = {copies, 1};
      if (s.stride == 0 || std::uint64_t{s.size} * s.stride == 0 || copies % (std::uint64_t{s.size} * s.stride) != 0)
        throw InputError("", "", fmt::format("rendezvous {}: a span of {} copies × stride {} does not divide {} copies",
                                             r, s.size, s.stride, copies));
      span_[r] = s;
      instance_begin_[r + 1] = instance_begin_[r] + copies / s.size;
    }
    arrivals_.assign(instance_begin_[ids], 0);
    records_.assign(total, TaskRecord{Time(), Time::from_ps(-1), kNoTask});
    pending_.resize(total);
    for (std::uint32_t c = 0; c < copies; ++c)
      std::copy(init_pending_.begin(), init_pending_.end(), pending_.begin() + std::ptrdiff_t(std::size_t{c} * n_));
  }

  Timeline play() {
    for (std::uint32_t c = 0; c < copies_; ++c)
      for (TaskId v = 0; v < n_; ++v)
        if (init_pending_[v] == 0) ready(c, v, kNoTask);
    std::uint64_t finished = 0;
    while (!queue_.empty()) {
      queue_.play_next([&](TaskId id) {
        ++finished;
        const auto c = static_cast<std::uint32_t>(id / n_);
        const auto v = static_cast<TaskId>(id - std::size_t{c} * n_);
        const std::size_t offset = std::size_t{c} * n_;
        for (std::uint32_t k = succ_begin_[v]; k < succ_begin_[v + 1]; ++k) {
          const TaskId w = succ_[k];
          if (--pending_[offset + w] == 0) ready(c, w, id);
        }
      });
    }
    if (finished != records_.size())
      for (std::size_t id = 0; id < records_.size(); ++id)
        if (pending_[id] != 0 || !started(id))
          throw InternalError(fmt::format("engine: task '{}' of copy {} can never start (a rendezvous member is "
                                          "missing)", base_.task(static_cast<TaskId>(id % n_)).name, id / n_));
    return Timeline(std::move(records_), queue_.processed());
  }

 private:
  // Records start with end = -1 ps; start() sets it.
  bool started(std::size_t id) const { return records_[id].end >= Time(); }

  void ready(std::uint32_t c, TaskId v, TaskId by) {
    const auto id = static_cast<TaskId>(std::size_t{c} * n_ + v);
    records_[id].binding = by;
    const RendezvousId r = base_.task(v).rendezvous;
    if (r == kNoRendezvous) {
      start(c, v, id);
      return;
    }
    const RendezvousSpan s = span_[r];
    const std::uint32_t block = c / (s.size * s.stride);
    const std::uint32_t lane = c % s.stride;
    const std::uint32_t instance = instance_begin_[r] + block * s.stride + lane;
    const std::uint32_t k = member_begin_[r + 1] - member_begin_[r];
    if (++arrivals_[instance] < std::uint64_t{s.size} * k) return;
    // The last arrival binds every member: nothing could start before it.
    const std::uint32_t first_copy = block * s.size * s.stride + lane;
    for (std::uint32_t j = 0; j < s.size; ++j) {
      const std::uint32_t mc = first_copy + j * s.stride;
      for (std::uint32_t m = member_begin_[r]; m < member_begin_[r + 1]; ++m) {
        const auto mid = static_cast<TaskId>(std::size_t{mc} * n_ + members_[m]);
        if (mid != id) records_[mid].binding = id;
        start(mc, members_[m], mid);
      }
    }
  }

  void start(std::uint32_t c, TaskId v, TaskId id) {
    const Time now = queue_.now();
    Time d = duration_[v];
    if (vary_ && compute_[v]) {
      const double scaled = std::nearbyint(static_cast<double>(d.ps()) * variation_.factor(c, v));
      if (!(scaled < static_cast<double>(kMaxPs)))
        throw InputError("", "", fmt::format("task '{}' of copy {} lasts beyond 9e6 s after variation",
                                             base_.task(v).name, c));
      d = Time::from_ps(static_cast<std::int64_t>(scaled));
    }
    if (d.ps() > kMaxPs - now.ps())
      throw InputError("", "", fmt::format("the simulated step passes 9e6 s (about 104 days) at task '{}'; "
                                           "the input describes a meaningless step", base_.task(v).name));
    records_[id].start = now;
    records_[id].end = now + d;
    queue_.schedule(records_[id].end, id);
  }

  const TaskGraph& base_;
  std::size_t n_;
  std::uint32_t copies_;
  const RankVariation& variation_;
  bool vary_ = false;
  std::vector<std::uint32_t> succ_begin_;
  std::vector<TaskId> succ_;
  std::vector<std::uint32_t> init_pending_;
  std::vector<Time> duration_;
  std::vector<bool> compute_;
  std::vector<std::uint32_t> member_begin_;
  std::vector<TaskId> members_;
  std::vector<RendezvousSpan> span_;
  std::vector<std::uint32_t> instance_begin_;
  std::vector<std::uint64_t> arrivals_;
  std::vector<TaskRecord> records_;
  std::vector<std::uint32_t> pending_;
  TimeBuckets queue_;
};

}  // namespace

bool RankVariation::none() const {
  if (distribution != JitterDistribution::None && cv != 0) return false;
  return std::all_of(compute_factor.begin(), compute_factor.end(), [](double f) { return f == 1.0; });
}

double RankVariation::standard_normal(std::uint64_t seed, std::uint32_t copy, TaskId base) {
  const std::uint64_t h1 = splitmix64(seed ^ splitmix64((std::uint64_t{copy} << 32) | base));
  const std::uint64_t h2 = splitmix64(h1);
  const double u1 = (static_cast<double>(h1 >> 11) + 1.0) * 0x1.0p-53;  // (0, 1]
  const double u2 = static_cast<double>(h2 >> 11) * 0x1.0p-53;          // [0, 1)
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

double RankVariation::factor(std::uint32_t copy, TaskId base) const {
  double f = copy < compute_factor.size() ? compute_factor[copy] : 1.0;
  if (distribution == JitterDistribution::None || cv == 0) return f;
  const double z = standard_normal(seed, copy, base);
  if (distribution == JitterDistribution::Normal) return f * std::max(0.0, 1.0 + cv * z);
  const double sigma2 = std::log1p(cv * cv);
  return f * std::exp(-0.5 * sigma2 + std::sqrt(sigma2) * z);
}

Timeline run_replicated(const TaskGraph& base, std::uint32_t copies, const std::vector<RendezvousSpan>& spans,
                        const TaskCostModel& cost, const RankVariation& variation) {
  STEPSIM_ASSERT(base.frozen(), "replicated run of a graph that is not frozen");
  STEPSIM_ASSERT(copies >= 1, "replicated run with 0 copies");
  return ReplicatedRun(base, copies, spans, &cost, nullptr, variation).play();
}

Timeline run_replicated(const TaskGraph& base, std::uint32_t copies, const std::vector<RendezvousSpan>& spans,
                        const std::vector<Time>& durations, const RankVariation& variation) {
  STEPSIM_ASSERT(base.frozen(), "replicated run of a graph that is not frozen");
  STEPSIM_ASSERT(copies >= 1, "replicated run with 0 copies");
  STEPSIM_ASSERT(durations.size() == base.size(), "{} durations for {} tasks", durations.size(), base.size());
  return ReplicatedRun(base, copies, spans, nullptr, &durations, variation).play();
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
  return Timeline(std::move(records), all.events());
}

std::vector<Time> copy_makespans(const Timeline& all, std::size_t base_size, std::uint32_t copies) {
  std::vector<Time> out(copies);
  for (std::uint32_t c = 0; c < copies; ++c)
    for (std::size_t v = 0; v < base_size; ++v)
      out[c] = std::max(out[c], all[static_cast<TaskId>(std::size_t{c} * base_size + v)].end);
  return out;
}

}  // namespace stepsim::sim
