// SPDX-License-Identifier: Apache-2.0
// Replicated runs: base-graph adjacency in flat arrays shared by every copy; per-copy state is
// one record and one counter per task.
#include "sim/replicate.hpp"

#include "sim/support/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>
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

// Future event list for replicated runs: a radix heap (Ahuja, Mehlhorn, Orlin & Tarjan, "Faster
// algorithms for the shortest path problem", JACM 1990) over picosecond instants. The engine
// never schedules in the past, so keys are monotone: an event goes to the bucket of the highest
// bit in which its instant differs from the last instant played (bucket 0: equal to it). A push
// is an append; playing an instant empties bucket 0, refilling it from the lowest non-empty
// bucket when needed. Equal instants keep insertion order (they always share a bucket and are
// moved in order), so events play in (time, insertion order) as EventQueue plays equal
// priorities. Copies that finish a task at the same instant cost an append each, not a heap
// operation; jittered copies cost O(1) amortised per bit of the time between their events.
class RadixQueue {
 public:
  void schedule(Time at, TaskId id) {
    STEPSIM_ASSERT(at >= now_, "event scheduled in the past ({} ps < now {} ps)", at.ps(), now_.ps());
    const auto key = static_cast<std::uint64_t>(at.ps());
    buckets_[bucket_of(key)].push_back({key, id});
    ++size_;
  }
  bool empty() const { return size_ == 0; }
  /// Plays the earliest instant: calls f(id) for each of its events in insertion order,
  /// including events scheduled at that instant while it runs.
  template <typename F>
  void play_next(F&& f) {
    if (buckets_[0].empty()) refill();
    now_ = Time::from_ps(static_cast<std::int64_t>(last_));
    auto& due = buckets_[0];
    for (std::size_t i = 0; i < due.size(); ++i) {
      ++processed_;
      f(due[i].id);
    }
    size_ -= due.size();
    due.clear();
  }
  Time now() const { return now_; }
  std::uint64_t processed() const { return processed_; }

 private:
  struct Item {
    std::uint64_t key;
    TaskId id;
  };
  std::size_t bucket_of(std::uint64_t key) const {
    return key == last_ ? 0 : static_cast<std::size_t>(64 - std::countl_zero(key ^ last_));
  }
  // Moves the lowest non-empty bucket down around its smallest instant, which becomes current.
  void refill() {
    std::size_t b = 1;
    while (buckets_[b].empty()) ++b;
    auto& from = buckets_[b];
    std::uint64_t least = from.front().key;
    for (const Item& it : from) least = std::min(least, it.key);
    last_ = least;
    for (const Item& it : from) buckets_[bucket_of(it.key)].push_back(it);
    from.clear();
  }
  std::array<std::vector<Item>, 65> buckets_;
  std::uint64_t last_ = 0;
  std::size_t size_ = 0;
  Time now_;
  std::uint64_t processed_ = 0;
};

// One replicated run. Slots number (copy, base task) pairs task-major — slot = v × copies + c —
// so the copies of one base task, which finish together when they do not vary, sit side by
// side in memory. Full mode keeps every record (timeline id c × n + v); summary mode keeps each
// copy's makespan and the records of a few copies, resolved as copy_timeline() resolves them.
class ReplicatedRun {
 public:
  ReplicatedRun(const TaskGraph& base, std::uint32_t copies, const std::vector<RendezvousSpan>& spans,
                const TaskCostModel& cost, const RankVariation& variation)
      : base_(base), n_(base.size()), copies_(copies), variation_(variation) {
    const std::uint64_t total = std::uint64_t{n_} * copies;
    if (total > std::numeric_limits<TaskId>::max() - 1)
      throw InputError("", "", fmt::format("{} copies of {} tasks is {} tasks; the limit is {}", copies, n_, total,
                                           std::numeric_limits<TaskId>::max() - 1));
    total_ = total;
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
      duration_[v] = cost.duration(t);
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
    pending_.resize(total);
    for (TaskId v = 0; v < n_; ++v)
      std::fill_n(pending_.begin() + std::ptrdiff_t(std::size_t{v} * copies), copies, init_pending_[v]);
  }

  /// Full mode: every record, timeline id c × n + v.
  Timeline play_full() {
    full_ = true;
    records_.assign(total_, TaskRecord{Time(), Time::from_ps(-1), kNoTask});
    const std::uint64_t events = play();
    return Timeline(std::move(records_), events);
  }

  /// Summary mode: makespans of every copy, slices of the copies in `keep`.
  ReplicatedSummary play_summary(std::vector<std::uint32_t> keep) {
    std::sort(keep.begin(), keep.end());
    keep.erase(std::unique(keep.begin(), keep.end()), keep.end());
    kept_index_.assign(copies_, kNone);
    for (std::size_t k = 0; k < keep.size(); ++k) {
      if (keep[k] >= copies_)
        throw InputError("", "", fmt::format("copy {} to keep is past the {} copies", keep[k], copies_));
      kept_index_[keep[k]] = static_cast<std::uint32_t>(k);
    }
    slices_.assign(keep.size(), std::vector<TaskRecord>(n_, TaskRecord{Time(), Time::from_ps(-1), kNoTask}));
    makespans_.assign(copies_, Time());
    const std::uint64_t events = play();
    ReplicatedSummary out;
    out.makespans = std::move(makespans_);
    out.kept = std::move(keep);
    for (auto& records : slices_) out.slices.emplace_back(std::move(records), events);
    out.events = events;
    return out;
  }

 private:
  static constexpr std::uint32_t kNone = std::numeric_limits<std::uint32_t>::max();

  std::uint64_t play() {
    for (std::uint32_t c = 0; c < copies_; ++c)
      for (TaskId v = 0; v < n_; ++v)
        if (init_pending_[v] == 0) ready(c, v, kNoTask);
    std::uint64_t finished = 0;
    while (!queue_.empty()) {
      queue_.play_next([&](TaskId slot) {
        ++finished;
        const auto v = static_cast<TaskId>(slot / copies_);
        const auto c = static_cast<std::uint32_t>(slot - std::size_t{v} * copies_);
        const auto id = static_cast<TaskId>(std::size_t{c} * n_ + v);
        for (std::uint32_t k = succ_begin_[v]; k < succ_begin_[v + 1]; ++k) {
          const TaskId w = succ_[k];
          if (--pending_[std::size_t{w} * copies_ + c] == 0) ready(c, w, id);
        }
      });
    }
    if (finished != total_) never_started();
    return queue_.processed();
  }

  // Names a task that never started: one still waiting for a predecessor, else a member of a
  // rendezvous instance that some copy never reached.
  [[noreturn]] void never_started() const {
    auto fail = [&](TaskId v, std::uint32_t c) {
      throw InternalError(fmt::format("engine: task '{}' of copy {} can never start (a rendezvous member is missing)",
                                      base_.task(v).name, c));
    };
    for (std::size_t slot = 0; slot < pending_.size(); ++slot)
      if (pending_[slot] != 0) fail(static_cast<TaskId>(slot / copies_), static_cast<std::uint32_t>(slot % copies_));
    for (std::uint32_t r = 0; r + 1 < instance_begin_.size(); ++r)
      for (std::uint32_t i = instance_begin_[r]; i < instance_begin_[r + 1]; ++i)
        if (arrivals_[i] != 0 && arrivals_[i] < std::uint64_t{span_[r].size} * (member_begin_[r + 1] - member_begin_[r]))
          fail(members_[member_begin_[r]], first_copy(r, i - instance_begin_[r]));
    throw InternalError("engine: a replicated task can never start");
  }

  // First copy of instance `local` (0-based within rendezvous r).
  std::uint32_t first_copy(RendezvousId r, std::uint32_t local) const {
    const RendezvousSpan s = span_[r];
    return local / s.stride * s.size * s.stride + local % s.stride;
  }

  // Keeps the binding of (c, v): `by` is a timeline id (c' × n + v') or kNoTask. In summary
  // mode the slice holds base ids, and a binding to another copy is `other_binding` (the base
  // id that held the other copy's task back), as copy_timeline() resolves it.
  void bind(std::uint32_t c, TaskId v, TaskId by, TaskId other_binding) {
    if (full_) {
      records_[std::size_t{c} * n_ + v].binding = by;
      return;
    }
    const std::uint32_t k = kept_index_[c];
    if (k == kNone) return;
    TaskId b = by;
    if (b != kNoTask && b / n_ != c) b = other_binding;
    slices_[k][v].binding = b == kNoTask ? kNoTask : static_cast<TaskId>(b % n_);
  }

  void ready(std::uint32_t c, TaskId v, TaskId by) {
    const RendezvousId r = base_.task(v).rendezvous;
    if (r == kNoRendezvous) {
      bind(c, v, by, kNoTask);
      start(c, v);
      return;
    }
    const RendezvousSpan s = span_[r];
    const std::uint32_t block = c / (s.size * s.stride);
    const std::uint32_t lane = c % s.stride;
    const std::uint32_t instance = instance_begin_[r] + block * s.stride + lane;
    const std::uint32_t k = member_begin_[r + 1] - member_begin_[r];
    if (++arrivals_[instance] < std::uint64_t{s.size} * k) return;
    // The last arrival binds every member: nothing could start before it. It keeps its own
    // binding; a member of another copy resolves to that binding (copy_timeline's rule).
    const auto id = static_cast<TaskId>(std::size_t{c} * n_ + v);
    const std::uint32_t first = block * s.size * s.stride + lane;
    double link = 1;  // the slowest member's link factor
    if (!variation_.link_factor.empty())
      for (std::uint32_t j = 0; j < s.size; ++j)
        if (const std::uint32_t mc = first + j * s.stride; mc < variation_.link_factor.size())
          link = std::min(link, variation_.link_factor[mc]);
    for (std::uint32_t j = 0; j < s.size; ++j) {
      const std::uint32_t mc = first + j * s.stride;
      for (std::uint32_t m = member_begin_[r]; m < member_begin_[r + 1]; ++m) {
        const TaskId mv = members_[m];
        if (mc == c && mv == v)
          bind(c, v, by, kNoTask);
        else
          bind(mc, mv, id, by);
        start(mc, mv, link);
      }
    }
  }

  // `link`: the link factor of v's rendezvous instance (1 = nominal).
  void start(std::uint32_t c, TaskId v, double link = 1) {
    const Time now = queue_.now();
    Time d = duration_[v];
    if (link != 1 && v < variation_.link_bound.size()) {
      const double extra = std::nearbyint(static_cast<double>(variation_.link_bound[v].ps()) * (1 / link - 1));
      if (!(extra < static_cast<double>(kMaxPs - d.ps())))
        throw InputError("", "", fmt::format("task '{}' of copy {} lasts beyond 9e6 s on degraded links",
                                             base_.task(v).name, c));
      d += Time::from_ps(static_cast<std::int64_t>(extra));
    }
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
    const Time end = now + d;
    if (full_) {
      TaskRecord& rec = records_[std::size_t{c} * n_ + v];
      rec.start = now;
      rec.end = end;
    } else {
      makespans_[c] = std::max(makespans_[c], end);
      if (const std::uint32_t k = kept_index_[c]; k != kNone) {
        slices_[k][v].start = now;
        slices_[k][v].end = end;
      }
    }
    queue_.schedule(end, static_cast<TaskId>(std::size_t{v} * copies_ + c));
  }

  const TaskGraph& base_;
  std::size_t n_;
  std::uint32_t copies_;
  std::uint64_t total_ = 0;
  const RankVariation& variation_;
  bool vary_ = false;
  bool full_ = false;
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
  std::vector<std::uint32_t> pending_;  // by slot
  std::vector<TaskRecord> records_;     // full mode, by timeline id
  std::vector<std::uint32_t> kept_index_;             // summary mode, by copy
  std::vector<std::vector<TaskRecord>> slices_;       // summary mode, by kept index
  std::vector<Time> makespans_;                       // summary mode, by copy
  RadixQueue queue_;
};

}  // namespace

bool RankVariation::none() const {
  if (distribution != JitterDistribution::None && cv != 0) return false;
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
  return ReplicatedRun(base, copies, spans, cost, variation).play_full();
}

ReplicatedSummary run_replicated_summary(const TaskGraph& base, std::uint32_t copies,
                                         const std::vector<RendezvousSpan>& spans, const TaskCostModel& cost,
                                         const RankVariation& variation, std::vector<std::uint32_t> keep) {
  STEPSIM_ASSERT(base.frozen(), "replicated run of a graph that is not frozen");
  STEPSIM_ASSERT(copies >= 1, "replicated run with 0 copies");
  return ReplicatedRun(base, copies, spans, cost, variation).play_summary(std::move(keep));
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
