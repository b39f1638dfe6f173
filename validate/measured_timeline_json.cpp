// SPDX-License-Identifier: Apache-2.0
// MEASURED.json reader (the only file of the measured timeline that sees JSON).
#include "validate/measured_timeline.hpp"

#include "sim/support/error.hpp"
#include "sim/support/json_reader.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <set>

namespace stepsim::validate {

namespace {

constexpr std::int64_t kMaxDim = 1 << 20;
constexpr double kMaxSeconds = 1e6;

const std::vector<std::string>& phase_names() {
  static const std::vector<std::string> names = {"forward", "backward", "communication", "optimizer", "overhead"};
  return names;
}

double time_field(const JsonReader& r, std::string_view key) {
  const double t = r.number(key, Check::NonNegative);
  if (t > kMaxSeconds) r.fail(key, fmt::format("expected seconds in [0, {:g}], got {:g}", kMaxSeconds, t));
  return t;
}

MeasuredTask read_task(const JsonReader& r) {
  MeasuredTask t;
  t.name = r.string("name");
  if (t.name.empty()) r.fail("name", "expected a task name, got an empty string");
  const std::string phase = r.choice_or("phase", "", phase_names());
  if (phase.empty()) r.fail("phase", "required field is missing (one of: forward, backward, communication, optimizer, overhead)");
  for (std::size_t i = 0; i < phase_names().size(); ++i)
    if (phase_names()[i] == phase) t.phase = static_cast<MeasuredPhase>(i);
  t.stream = r.choice_or("stream", "", {"compute", "comm"});
  if (t.stream.empty()) r.fail("stream", "required field is missing (one of: compute, comm)");
  t.start_s = time_field(r, "start_s");
  t.end_s = time_field(r, "end_s");
  if (t.end_s < t.start_s)
    r.fail("end_s", fmt::format("expected end_s ≥ start_s ({:g}), got {:g}", t.start_s, t.end_s));
  if (r.has("kernels")) {
    for (const JsonReader& k : r.objects("kernels", false)) {
      MeasuredKernel mk;
      mk.name = k.string("name");
      mk.start_s = time_field(k, "start_s");
      mk.end_s = time_field(k, "end_s");
      if (mk.end_s < mk.start_s)
        k.fail("end_s", fmt::format("expected end_s ≥ start_s ({:g}), got {:g}", mk.start_s, mk.end_s));
      // Events are 0.5 µs apart at best; allow a nanosecond of rounding.
      if (mk.start_s < t.start_s - 1e-9 || mk.end_s > t.end_s + 1e-9)
        k.fail("start_s", fmt::format("expected the kernel inside its task [{:g}, {:g}], got [{:g}, {:g}]", t.start_s,
                                      t.end_s, mk.start_s, mk.end_s));
      k.finish();
      t.kernels.push_back(std::move(mk));
    }
  }
  r.finish();
  return t;
}

}  // namespace

std::string measured_phase_name(MeasuredPhase p) { return phase_names()[static_cast<std::size_t>(p)]; }

namespace {

MeasuredTimeline from_document(const nlohmann::json& doc, const std::string& source) {
  const JsonReader r(doc, source, "");
  MeasuredTimeline m;
  m.source = source;
  if (!r.has("schema"))
    r.fail("schema", "required field is missing, expected a stepsim.measured/1 timeline (stepsim-validate mlp-step "
                     "output) or a PyTorch profiler trace (Chrome-trace JSON with traceEvents)");
  const std::string schema = r.string("schema");
  if (schema != "stepsim.measured/1")
    r.fail("schema", fmt::format("expected \"stepsim.measured/1\" (stepsim-validate mlp-step output), got \"{}\"", schema));
  m.generator = r.string_or("generator", "");
  m.command = r.choice_or("command", "mlp-step", {"mlp-step"});
  if (auto e = r.optional_object("environment")) {
    m.environment.host = e->string_or("host", "");
    m.environment.device = e->string_or("device", "");
    m.environment.gpus = e->integer_or("gpus", 0, 0, 1 << 20);
    m.environment.cuda_runtime = e->string_or("cuda_runtime", "");
    m.environment.cuda_driver = e->string_or("cuda_driver", "");
    m.environment.nccl = e->string_or("nccl", "");
    m.environment.cublas = e->string_or("cublas", "");
    e->finish();
  }
  {
    const JsonReader c = r.object("config");
    MeasuredConfig& k = m.config;
    k.layers = c.integer("layers", 1, 1 << 20);
    k.hidden = c.integer("hidden", 1, kMaxDim);
    k.ffn = c.integer("ffn", 1, kMaxDim);
    k.tokens = c.integer("tokens", 1, kMaxDim);
    k.dtype = c.choice_or("dtype", "bf16", {"bf16"});
    k.bucket_cap_mb = c.number("bucket_cap_mb", Check::Positive);
    k.first_bucket_mb = c.number_or("first_bucket_mb", 1, Check::Positive);
    k.grad_accum = c.integer_or("grad_accum", 1, 1, 1 << 20);
    k.gradient_as_bucket_view = c.boolean_or("gradient_as_bucket_view", false);
    k.optimizer = c.choice_or("optimizer", "adam", {"adam", "none"});
    k.ranks = c.integer("ranks", 1, 1 << 20);
    k.iters = c.integer_or("iters", 0, 0, 1 << 30);
    k.warmup = c.integer_or("warmup", 0, 0, 1 << 30);
    c.finish();
  }
  if (r.has("buckets"))
    for (const JsonReader& b : r.objects("buckets", false)) {
      MeasuredBucket mb;
      mb.index = b.integer("index", 0, 1 << 30);
      if (mb.index != static_cast<std::int64_t>(m.buckets.size()))
        b.fail("index", fmt::format("expected bucket index {} (buckets in order), got {}", m.buckets.size(), mb.index));
      mb.bytes = b.number("bytes", Check::Positive);
      mb.tensors = b.string_or("tensors", "");
      b.finish();
      m.buckets.push_back(std::move(mb));
    }
  for (const JsonReader& it : r.objects("iterations", true)) {
    MeasuredIteration mi;
    mi.iteration = it.integer("iteration", 0, 1 << 30);
    for (std::size_t k = 0; k < m.iterations.size(); ++k)
      if (m.iterations[k].iteration == mi.iteration)
        it.fail("iteration", fmt::format("iteration {} is listed twice (also /iterations/{}); each measured "
                                         "iteration has its own number", mi.iteration, k));
    const auto ranks = it.objects("ranks", true);
    if (static_cast<std::int64_t>(ranks.size()) != m.config.ranks)
      it.fail("ranks", fmt::format("expected {} ranks (/config/ranks), got {}", m.config.ranks, ranks.size()));
    for (const JsonReader& rk : ranks) {
      MeasuredRank mr;
      mr.rank = rk.integer("rank", 0, m.config.ranks - 1);
      if (mr.rank != static_cast<std::int64_t>(mi.ranks.size()))
        rk.fail("rank", fmt::format("expected rank {} (ranks 0..{} in order), got {}", mi.ranks.size(),
                                    m.config.ranks - 1, mr.rank));
      std::set<std::string> names;
      const auto tasks = rk.objects("tasks", true);
      for (const JsonReader& t : tasks) {
        MeasuredTask task = read_task(t);
        if (!names.insert(task.name).second) t.fail("name", fmt::format("duplicate task name '{}' on this rank", task.name));
        mr.tasks.push_back(std::move(task));
      }
      // A rank whose every task starts and ends at 0 s measured nothing (timer never read).
      if (std::all_of(mr.tasks.begin(), mr.tasks.end(), [](const MeasuredTask& t) { return t.end_s == 0; }))
        rk.fail("tasks", fmt::format("every one of the {} tasks of rank {} is at 0 s (end_s = 0): nothing was "
                                     "timed; expected measured start_s/end_s", mr.tasks.size(), mr.rank));
      rk.finish();
      mi.ranks.push_back(std::move(mr));
    }
    it.finish();
    m.iterations.push_back(std::move(mi));
  }
  r.finish();
  return m;
}

}  // namespace

MeasuredTimeline parse_measured_timeline(const std::string& text, const std::string& source) {
  return from_document(parse_json_text(text, source), source);
}

MeasuredTimeline read_measured_timeline(const std::string& path) { return from_document(read_json_file(path), path); }

}  // namespace stepsim::validate
