// SPDX-License-Identifier: Apache-2.0
// `import stepsim` (issue 20 item 1): the library's commands as Python functions. Scenarios go
// in as a dict or a path; results come back as the JSON documents the CLI prints with
// --format json, as Python objects. JSON crosses the boundary as text through Python's json
// module and the library's own readers, so the binding holds no simulation or parsing logic.
#include "models/listing_json.hpp"
#include "models/queries_json.hpp"
#include "models/report.hpp"
#include "models/scenario.hpp"
#include "models/sweep.hpp"
#include "sim/support/error.hpp"
#include "sim/support/json_reader.hpp"
#include "sim/support/resources.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace py = pybind11;

namespace {

using stepsim::InputError;

// The JSON pointer of the first float in `value` that is NaN or infinite ("" for the value
// itself), or nullopt when there is none: JSON has no such numbers, and the message should say
// where the one given is.
std::optional<std::string> non_finite_at(const py::handle& value) {
  if (py::isinstance<py::float_>(value)) {
    const double d = value.cast<double>();
    return std::isfinite(d) ? std::nullopt : std::optional<std::string>("");
  }
  if (py::isinstance<py::dict>(value)) {
    for (const auto& [k, v] : value.cast<py::dict>())
      if (const auto at = non_finite_at(v)) return "/" + py::str(k).cast<std::string>() + *at;
  } else if (py::isinstance<py::list>(value) || py::isinstance<py::tuple>(value)) {
    std::size_t i = 0;
    for (const auto& v : value) {
      if (const auto at = non_finite_at(v)) return fmt::format("/{}{}", i, *at);
      ++i;
    }
  }
  return std::nullopt;
}

// A Python value as JSON text: json.dumps, with NumPy's scalars and arrays (what a DataFrame
// hands back) as the Python numbers and lists they hold (their tolist()), and NaN or infinity
// refused at its path, as the CLI's JSON readers refuse them.
std::string dumps(const py::handle& value, const std::string& what) {
  // Made per call: a static Python object would be released after the interpreter has ended.
  const py::object numpy_as_python = py::cpp_function([](const py::object& o) -> py::object {
    if (py::hasattr(o, "tolist")) return o.attr("tolist")();
    throw py::type_error(fmt::format("{} is not JSON serialisable", py::repr(py::type::of(o)).cast<std::string>()));
  });
  try {
    return py::module_::import("json")
        .attr("dumps")(value, py::arg("allow_nan") = false, py::arg("default") = numpy_as_python)
        .cast<std::string>();
  } catch (py::error_already_set& e) {
    if (const auto at = non_finite_at(value)) throw InputError(what, *at, "expected a finite number, got NaN or infinity");
    throw InputError(what, "", "not JSON-serialisable: " + py::str(e.value()).cast<std::string>());
  }
}

py::object loads(const std::string& text) { return py::module_::import("json").attr("loads")(text); }

// A scenario given as a dict (source "<dict>": its relative paths resolve from the working
// directory) or as a path to a scenario file (str or os.PathLike).
struct ScenarioInput {
  nlohmann::json doc;
  std::string source;
};

ScenarioInput scenario_input(const py::handle& scenario) {
  if (py::isinstance<py::dict>(scenario)) {
    const std::string source = "<dict>";
    return {stepsim::parse_json_text(dumps(scenario, source), source), source};
  }
  if (py::isinstance<py::str>(scenario) || py::hasattr(scenario, "__fspath__")) {
    const std::string path = py::module_::import("os").attr("fspath")(scenario).cast<std::string>();
    return {stepsim::read_json_file(path), path};
  }
  throw py::type_error("scenario: expected a dict or a path to a scenario .json file, got " +
                       py::repr(py::type::of(scenario)).cast<std::string>());
}

// --set PATH=VALUE overrides from a dict {path: value} (values as JSON) or a list of
// "PATH=VALUE" strings, in order.
std::vector<std::string> overrides(const py::handle& set) {
  std::vector<std::string> out;
  if (set.is_none()) return out;
  if (py::isinstance<py::str>(set)) return {set.cast<std::string>()};  // one "PATH=VALUE"
  if (py::isinstance<py::dict>(set)) {
    for (const auto& [k, v] : set.cast<py::dict>())
      out.push_back(py::str(k).cast<std::string>() + "=" + dumps(v, "set"));
    return out;
  }
  for (const auto& item : set) out.push_back(py::str(item).cast<std::string>());
  return out;
}

py::object run(const py::handle& scenario, const py::handle& set) {
  ScenarioInput in = scenario_input(scenario);
  const auto sets = overrides(set);
  std::string json;
  {
    py::gil_scoped_release unlocked;
    const stepsim::models::Scenario s = stepsim::models::load_scenario_doc(std::move(in.doc), in.source, sets);
    json = stepsim::models::report_json(stepsim::models::run(s));
  }
  return loads(json);
}

// Runs `work(cancel)` on a thread of its own while this (Python's) thread waits without the GIL
// and checks for signals every 50 ms: Ctrl-C (a notebook's "interrupt kernel") sets `cancel`,
// which the work must watch, and raises KeyboardInterrupt once it has stopped.
template <typename Result, typename Work>
Result interruptible(Work work) {
  std::atomic<bool> cancel{false};
  std::optional<Result> result;
  std::exception_ptr error;
  std::mutex m;
  std::condition_variable cv;
  bool done = false;
  std::thread worker([&] {
    try {
      result.emplace(work(cancel));
    } catch (...) {
      error = std::current_exception();
    }
    const std::lock_guard<std::mutex> lock(m);
    done = true;
    cv.notify_one();
  });
  bool interrupted = false;
  {
    py::gil_scoped_release unlocked;
    std::unique_lock<std::mutex> lock(m);
    while (!cv.wait_for(lock, std::chrono::milliseconds(50), [&] { return done; })) {
      if (interrupted) continue;
      lock.unlock();
      {
        py::gil_scoped_acquire locked;
        interrupted = PyErr_CheckSignals() != 0;  // leaves KeyboardInterrupt set
      }
      if (interrupted) cancel = true;
      lock.lock();
    }
  }
  worker.join();
  if (interrupted) throw py::error_already_set();
  if (error) std::rethrow_exception(error);
  return std::move(*result);
}

// Thrown from a sweep's progress callback to stop its workers (run_on_threads stops them all).
struct Cancelled {};

// Each row as Python objects costs about 22 kB (a user's trial: 2.2 GB for 100,000 points),
// besides the library's kSweepBytesPerPoint while the sweep runs.
constexpr double kPythonRowBytes = 24000;

// Runs a sweep for sweep() and sweep_report(); `to_json` turns its result into the JSON text
// returned (on the sweep's thread, without the GIL).
template <typename ToJson>
py::object run_sweep_for_python(const py::handle& scenario, const py::dict& vary, const py::handle& set, unsigned jobs,
                                ToJson to_json) {
  const ScenarioInput in = scenario_input(scenario);
  if (vary.empty()) throw InputError("vary", "", "expected at least one axis: {path: [values]} or {path: 'LO:HI:xN'}");
  if (jobs > 4096) throw InputError("jobs", "", fmt::format("expected 0 (all cores) to 4096 threads, got {}", jobs));
  std::vector<stepsim::models::SweepAxis> axes;
  for (const auto& [k, v] : vary) {
    // A list of values, or a range string as --vary takes it ("8:1024:x8", "1:64:+1").
    std::string spec = py::str(k).cast<std::string>() + "=";
    if (py::isinstance<py::str>(v)) {
      spec += py::str(v).cast<std::string>();
    } else {
      std::string values;
      for (const auto& x : v) values += (values.empty() ? "" : ",") + dumps(x, "vary");
      spec += values;
    }
    stepsim::models::append_vary(axes, spec);
  }
  stepsim::models::SweepOptions options;
  options.sets = overrides(set);
  options.threads = jobs;
  const double points = static_cast<double>(stepsim::models::grid_size(axes));
  stepsim::check_memory_need(points * (stepsim::models::kSweepBytesPerPoint + kPythonRowBytes), "vary", "",
                             fmt::format("a sweep of {:.0f} points returned as Python dicts", points),
                             "sweep fewer values");
  const std::string json = interruptible<std::string>([&](const std::atomic<bool>& cancel) {
    stepsim::models::SweepOptions o = options;
    o.progress = [&cancel](std::size_t, std::size_t) {
      if (cancel) throw Cancelled{};
    };
    try {
      return to_json(stepsim::models::run_sweep(in.doc, in.source, axes, o));
    } catch (const Cancelled&) {
      return std::string();  // KeyboardInterrupt is raised instead
    }
  });
  return loads(json);
}

py::object sweep(const py::handle& scenario, const py::dict& vary, const py::handle& set, unsigned jobs) {
  return run_sweep_for_python(scenario, vary, set, jobs, [](const stepsim::models::SweepResult& r) {
    return stepsim::models::sweep_rows_json(r).dump();
  });
}

py::object sweep_report(const py::handle& scenario, const py::dict& vary, const py::handle& set, unsigned jobs,
                        const std::string& metric) {
  return run_sweep_for_python(scenario, vary, set, jobs, [&metric](const stepsim::models::SweepResult& r) {
    return stepsim::models::sweep_summary_json(r, stepsim::models::summarize_sweep(r, metric), true, {}).dump();
  });
}

py::object list_items(const std::string& what) { return loads(stepsim::models::list_json(what).at("items").dump()); }

py::object answer(const stepsim::models::QueryAnswer& a) { return loads(a.json.dump()); }

py::object memory(const py::handle& scenario, const py::handle& set, double params, long long dp,
                  long long shard_group_size, const std::string& hardware, const py::handle& optimizer_bytes_per_param) {
  stepsim::models::MemoryQuery q;
  if (!scenario.is_none()) {
    ScenarioInput in = scenario_input(scenario);
    q.scenario = in.source;
    q.scenario_doc = std::move(in.doc);
  }
  q.sets = overrides(set);
  q.params = params;
  q.dp = dp;
  q.shard_group_size = shard_group_size;
  q.hardware = hardware;
  if (!optimizer_bytes_per_param.is_none()) {
    if (!py::isinstance<py::int_>(optimizer_bytes_per_param) && !py::isinstance<py::float_>(optimizer_bytes_per_param) &&
        !py::hasattr(optimizer_bytes_per_param, "__float__"))
      throw InputError("optimizer_bytes_per_param", "",
                       "expected a number of bytes per parameter (K: 12 for Adam with an fp32 master copy), got " +
                           py::repr(optimizer_bytes_per_param).cast<std::string>());
    q.optimizer_bytes_per_param = optimizer_bytes_per_param.cast<double>();
    q.optimizer_bytes_given = true;
  }
  return answer(stepsim::models::memory_query(q));
}

py::object collective(const std::string& op, const std::string& hardware, long long ranks, const py::handle& size,
                      long long gpus_per_node, int axes, const std::string& cost_model, const std::string& algorithm,
                      const std::string& calibration, const std::optional<std::string>& network) {
  // A byte count as an int, or a size with a unit as a str ("16GB").
  const std::string size_text = py::isinstance<py::str>(size) ? size.cast<std::string>() : py::str(size).cast<std::string>();
  return answer(stepsim::models::collective_query(
      {op, hardware, ranks, size_text, gpus_per_node, axes, cost_model, algorithm, calibration, network}));
}

py::object threshold(const std::string& hardware, long long ranks, long long gpus_per_node, int axes,
                     long long moe_experts, long long moe_topk, long long ep) {
  return answer(stepsim::models::threshold_query({hardware, ranks, gpus_per_node, axes, moe_experts, moe_topk, ep}));
}

}  // namespace

PYBIND11_MODULE(stepsim, m) {
  m.doc() =
      "stepsim: a discrete-event simulator of one data-parallel training step (DDP, ZeRO-1/2/3, FSDP, HSDP) on "
      "GPU/TPU clusters.\n\nrun() simulates a step, sweep() a grid of them, memory(), collective() and "
      "threshold() answer in closed form; profiles(), models() and strategies() list the catalogs, fields() the scenario's fields. Scenarios are "
      "dicts or paths to scenario .json files; results are the JSON documents the stepsim CLI prints with "
      "--format json, as Python objects. Bad values raise stepsim.InputError; arguments of a wrong Python type "
      "raise TypeError. README.md has the scenario keys.";
  m.attr("__version__") = STEPSIM_VERSION;

  // stepsim.InputError(ValueError): the CLI's one-line error, with .source (file, '<dict>' or
  // the flag), .path (JSON pointer) and .message (what is wrong and what was expected).
  static py::exception<InputError> input_error(m, "InputError", PyExc_ValueError);
  input_error.attr("__doc__") =
      "Bad input, as the stepsim CLI reports it in one line (a ValueError). Attributes: source (the file, '<dict>' "
      "for a scenario given as a dict, or the argument: the CLI's flag names, e.g. '--ranks'), path (the JSON "
      "pointer of the bad field, '' when none applies) and message (the bad value and what was expected).";
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const InputError& e) {
      py::object error = py::reinterpret_borrow<py::object>(input_error.ptr())(e.what());
      error.attr("source") = e.source();
      error.attr("path") = e.path();
      error.attr("message") = e.detail();
      PyErr_SetObject(input_error.ptr(), error.ptr());
    }
  });

  m.def("run", &run, py::arg("scenario"), py::arg("set") = py::none(),
        "Simulates one training step. scenario: a dict or a path to a scenario .json file; set: overrides as "
        "{path: value} or ['path=value', ...] (as --set). Returns the report as `stepsim run --format json` "
        "prints it (schema stepsim.report/1), as a dict. Raises stepsim.InputError on bad input.");
  m.def("sweep", &sweep, py::arg("scenario"), py::arg("vary"), py::arg("set") = py::none(), py::arg("jobs") = 0,
        "Runs a grid of scenarios. vary: {path: [values]} or {path: 'LO:HI:xN' | 'LO:HI:+STEP'} (as --vary); set: "
        "as in run(); jobs: threads (0 = all cores). Returns one dict per point, in grid order: its axis values, "
        "the report's flattened fields and 'error' ('' when it ran), so pandas.DataFrame(rows) just works.");
  m.def("sweep_report", &sweep_report, py::arg("scenario"), py::arg("vary"), py::arg("set") = py::none(),
        py::arg("jobs") = 0, py::arg("metric") = "tokens_per_s",
        "The sweep as `stepsim sweep --format json` prints it (schema stepsim.sweep/1): axes, the best point for "
        "metric, the bucket-size regimes per curve (latency-bound, sweet spot, last bucket exposed), DP scaling "
        "curves with the first dp below 90 % efficiency, and 'rows' (what sweep() returns).");
  m.def("memory", &memory, py::arg("scenario") = py::none(), py::arg("set") = py::none(), py::arg("params") = 0.0,
        py::arg("dp") = 0, py::arg("shard_group_size") = 0, py::arg("hardware") = "",
        py::arg("optimizer_bytes_per_param") = py::none(),
        "Model-state memory per GPU under every strategy, as `stepsim memory --format json` (schema "
        "stepsim.memory/1): from a scenario (dict or path, with set) or from params and dp (and hardware).");
  m.def("collective", &collective, py::arg("op"), py::arg("hardware"), py::arg("ranks"), py::arg("size"),
        py::arg("gpus_per_node") = 0, py::arg("axes") = 0, py::arg("cost_model") = "", py::arg("algorithm") = "auto",
        py::arg("calibration") = "", py::arg("network") = py::none(),
        "Closed-form time of one collective, as `stepsim collective --format json` (schema stepsim.collective/1). "
        "op: allreduce | reducescatter | allgather; size: bytes (int) or with a unit ('16GB'); network: a network "
        "preset over the profile's NICs (stepsim list networks).");
  m.def("threshold", &threshold, py::arg("hardware"), py::arg("ranks"), py::arg("gpus_per_node") = 0,
        py::arg("axes") = 0, py::arg("moe_experts") = 0, py::arg("moe_topk") = 0, py::arg("ep") = 0,
        "Tokens per GPU below which pure DP is communication-bound, as `stepsim threshold --format json` "
        "(schema stepsim.threshold/1); ep: expert-parallel degree (the MoE factor becomes E/(k·ep)).");
  m.def("profiles", [] { return list_items("profiles"); }, "The built-in hardware profiles, as `stepsim list profiles --format json` items.");
  m.def("models", [] { return list_items("models"); }, "The built-in models, as `stepsim list models --format json` items.");
  m.def("strategies", [] { return list_items("strategies"); }, "The DP strategies, as `stepsim list strategies --format json` items.");
  m.def("fields", [] { return list_items("fields"); },
        "Every scenario field (path, type, unit, default, range, values, applies_to, doc), as `stepsim list fields "
        "--format json` items: what a run() dict may hold.");
}
