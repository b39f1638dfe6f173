// SPDX-License-Identifier: Apache-2.0
// Kineto traces: kernel classes, NCCL kernel names, per-step summaries and the measured
// timeline (the reading itself is kineto_json.cpp).
#include "validate/kineto.hpp"

#include "sim/support/error.hpp"
#include "validate/stats.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <set>
#include <tuple>

namespace stepsim::validate {

namespace {

constexpr std::array<std::string_view, kKernelClasses> kClassNames = {
    "gemm", "conv", "attention", "nccl", "elementwise", "reduction", "norm", "optimizer", "memcpy", "memset", "unknown"};

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool any_of(const std::string& s, std::initializer_list<std::string_view> words) {
  for (std::string_view w : words)
    if (s.find(w) != std::string::npos) return true;
  return false;
}

/// The kernel's own name: a C++ signature's function name without its namespace, template
/// arguments or parameters ("void at::native::(anon)::foo<float, 4>(int, float*)" → "foo"), so
/// that an argument type ("cutlass::...", "at::native::FillFunctor") does not decide the class.
std::string base_name(std::string_view name) {
  std::string s(name);
  // Drop the parameter list: the last top-level '(' that is not part of "(anonymous namespace)".
  int depth = 0;
  std::size_t cut = s.size();
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '<') ++depth;
    else if (c == '>' && depth > 0) --depth;
    else if (c == '(' && depth == 0 && s.compare(i, 20, "(anonymous namespace)") != 0) {
      cut = i;
      break;
    }
  }
  s.resize(cut);
  // Drop template arguments.
  std::string out;
  depth = 0;
  for (char c : s) {
    if (c == '<') ++depth;
    else if (c == '>' && depth > 0) --depth;
    else if (depth == 0) out += c;
  }
  // Drop the return type and namespaces.
  if (const auto sp = out.rfind(' '); sp != std::string::npos) out = out.substr(sp + 1);
  if (const auto ns = out.rfind("::"); ns != std::string::npos) out = out.substr(ns + 2);
  return out;
}

}  // namespace

std::string_view kernel_class_name(KernelClass c) { return kClassNames[static_cast<std::size_t>(c)]; }

KernelClass classify_kernel(std::string_view name) {
  const std::string full = lower(name);
  if (full.rfind("nccl", 0) == 0 || any_of(full, {"ncclkernel", "nccldevkernel", "rccl"})) return KernelClass::Nccl;
  const std::string b = lower(base_name(name));
  const std::string& n = b.empty() ? full : b;
  // Library kernels whose names carry the library in a template or namespace.
  if (any_of(full, {"flash_fwd", "flash_bwd", "flash::", "fmha", "flashattn", "pytorch_flash", "efficient_attention",
                    "attention_kernel", "sdpa", "attn_fwd", "attn_bwd"}))
    return KernelClass::Attention;
  if (any_of(full, {"bn_fw", "bn_bw", "batch_norm", "batchnorm", "layer_norm", "layernorm", "rms_norm", "rmsnorm",
                    "group_norm", "welford", "gammabetabackward"}))
    return KernelClass::Norm;
  if (any_of(full, {"convolve", "conv2d", "conv_", "_convolution", "fprop", "dgrad", "wgrad", "winograd", "scudnn", "hcudnn",
                    "miopen", "implicit_gemm", "implicit_convolve", "cudnn::detail", "fft2d", "fft_",
                    "cask_cudnn", "computeoffsetskernel", "computeboffsetskernel"}))
    return KernelClass::Conv;
  // GEMM by the kernel's own name, or by a GEMM library in its namespace or template (CUTLASS's
  // kernels are all cutlass::Kernel<...gemm...>); not by "gemm" elsewhere (fbgemm_gpu's
  // permute kernels are data movement).
  if (any_of(n, {"gemm", "gemv", "matmul", "dot_kernel", "splitkreduce", "splitk_reduce"}) ||
      any_of(full, {"cublas", "cutlass", "nvjet", "cijk_", "triton_tem"}))
    return KernelClass::Gemm;
  if (any_of(full, {"multi_tensor_apply", "adam", "sgd", "lambstage", "lamb_", "fused_optim", "optimizer", "_foreach"}))
    return KernelClass::Optimizer;
  if (any_of(n, {"reduce", "softmax", "loss", "nll", "cross_entropy", "pool", "argmax", "topk", "sort", "cumsum",
                 "scan", "norm", "triton_red", "triton_per", "sum", "mean"}) ||
      full.rfind("void cub::", 0) == 0 || full.rfind("cub::", 0) == 0 ||
      any_of(full, {"reduce_kernel", "softmax", "nll_loss", "cross_entropy", "triton_red", "triton_per", "pooling",
                    "pool2d", "max_pool", "avg_pool"}))
    return KernelClass::Reduction;
  if (any_of(full, {"elementwise", "vectorized", "unrolled", "copy", "fill", "cat_", "catarray", "index", "gather",
                    "scatter", "embedding", "dropout", "triton_poi", "gelu", "relu", "silu", "sigmoid", "tanh", "where",
                    "masked", "clamp", "threshold", "transpose", "permute", "pad", "upsample", "arange", "random",
                    "philox", "distribution", "bernoulli", "cast", "convert", "memcpy", "memset", "apply_", "kernel_add",
                    "rotary", "rope", "permute_", "nchwtonhwc", "nhwctonchw", "scalepackedtensor", "bounds_check", "dense_representation"}))
    return KernelClass::Elementwise;
  // torch.compile's generated kernels named by their arguments only ("triton__0d1d2d", PyTorch
  // 2.0-2.1), before Inductor named them triton_poi / triton_red / triton_per: fused
  // elementwise chains, mostly.
  if (full.rfind("triton_", 0) == 0) return KernelClass::Elementwise;
  return KernelClass::Unknown;
}

NcclKernelName parse_nccl_kernel_name(std::string_view name) {
  NcclKernelName out;
  std::string s(name);
  if (const auto p = s.find('('); p != std::string::npos) s.resize(p);
  std::string rest;
  for (std::string_view prefix : {"ncclKernel_", "ncclDevKernel_", "ncclKernel", "ncclDevKernel"}) {
    if (s.rfind(prefix, 0) == 0) {
      rest = s.substr(prefix.size());
      break;
    }
  }
  if (rest.empty()) {
    if (lower(s).find("nccl") == std::string::npos && lower(s).find("rccl") == std::string::npos) return out;
    out.op = "unknown";
    return out;
  }
  std::vector<std::string> tokens;
  std::size_t start = 0;
  while (start <= rest.size()) {
    const std::size_t end = rest.find('_', start);
    tokens.push_back(rest.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  out.op = tokens.empty() || tokens[0].empty() ? std::string("unknown") : tokens[0];
  for (std::size_t i = 1; i < tokens.size(); ++i) {
    const std::string& t = tokens[i];
    const std::string next = i + 1 < tokens.size() ? tokens[i + 1] : "";
    if ((t == "NVLS" || t == "COLLNET") && (next == "TREE" || next == "DIRECT" || next == "CHAIN")) {
      out.algorithm = t + "_" + next;
      ++i;
    } else if (t == "RING" || t == "TREE" || t == "NVLS" || t == "COLLNET" || t == "PAT") {
      out.algorithm = t;
    } else if (t == "LL" || t == "LL128" || t == "SIMPLE") {
      out.protocol = t;
    }
  }
  return out;
}

void require_one_job(const std::vector<KinetoTrace>& traces) {
  auto world = [](const KinetoTrace& t) {
    return t.world_size > 0 ? fmt::format("world size {}", t.world_size) : std::string("no distributedInfo");
  };
  for (std::size_t i = 1; i < traces.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      const KinetoTrace &a = traces[j], &b = traces[i];
      if (a.sha256 == b.sha256 && !a.sha256.empty())
        throw InputError(b.source, "", fmt::format("is the same trace as {} (same SHA-256), expected one trace per rank", a.source));
      if (a.rank >= 0 && a.rank == b.rank)
        throw InputError(b.source, "/distributedInfo/rank",
                         fmt::format("expected one trace per rank of one job, got rank {} again (also {})", b.rank, a.source));
    }
    if (traces[i].world_size != traces[0].world_size)
      throw InputError(traces[i].source, "/distributedInfo/world_size",
                       fmt::format("expected the ranks of one job: {} has {}, this trace {}", traces[0].source,
                                   world(traces[0]), world(traces[i])));
  }
}

std::vector<KinetoStepSummary> summarize_steps(const KinetoTrace& t) {
  std::vector<KinetoStepSummary> out(t.steps.size());
  std::vector<std::int64_t> first(t.steps.size(), -1), last(t.steps.size(), 0);
  for (std::size_t i = 0; i < t.steps.size(); ++i) {
    out[i].number = t.steps[i].number;
    out[i].wall_s = static_cast<double>(t.steps[i].dur_ns) * 1e-9;
  }
  for (const KinetoKernel& k : t.kernels) {
    if (k.step < 0 || k.device != t.device) continue;
    const auto s = static_cast<std::size_t>(k.step);
    const auto c = static_cast<std::size_t>(k.cls);
    out[s].class_s[c] += static_cast<double>(k.dur_ns) * 1e-9;
    ++out[s].class_count[c];
    if (first[s] < 0 || k.start_ns < first[s]) first[s] = k.start_ns;
    last[s] = std::max(last[s], k.start_ns + k.dur_ns);
  }
  for (std::size_t i = 0; i < out.size(); ++i)
    if (first[i] >= 0) out[i].gpu_span_s = static_cast<double>(last[i] - first[i]) * 1e-9;
  return out;
}

MeasuredTimeline measured_timeline_from_traces(const std::vector<KinetoTrace>& traces) {
  STEPSIM_ASSERT(!traces.empty(), "no traces");
  require_one_job(traces);
  MeasuredTimeline m;
  m.generator = "torch.profiler";
  m.command = "torch.profiler";
  for (const KinetoTrace& t : traces) m.source += (m.source.empty() ? "" : ", ") + t.source;
  m.config.ranks = static_cast<std::int64_t>(traces.size());
  const KinetoTrace& t0 = traces.front();
  m.environment.device = kineto_device_name(t0);
  m.environment.nccl = t0.nccl_version;
  m.environment.gpus = t0.world_size > 0 ? t0.world_size : static_cast<std::int64_t>(traces.size());
  // Steps present in every trace.
  std::set<std::int64_t> common;
  for (const KinetoStep& s : t0.steps) common.insert(s.number);
  for (const KinetoTrace& t : traces) {
    std::set<std::int64_t> here;
    for (const KinetoStep& s : t.steps)
      if (common.count(s.number)) here.insert(s.number);
    common = std::move(here);
  }
  if (common.empty())
    throw InputError(m.source, "", "the traces share no ProfilerStep number, expected the same steps profiled on every rank");
  std::vector<std::int64_t> empty;
  for (std::int64_t number : common) {
    MeasuredIteration it;
    it.iteration = number;
    bool complete = true;
    for (std::size_t r = 0; r < traces.size() && complete; ++r) {
      const KinetoTrace& t = traces[r];
      std::int32_t step = -1;
      for (std::size_t i = 0; i < t.steps.size(); ++i)
        if (t.steps[i].number == number) step = static_cast<std::int32_t>(i);
      MeasuredRank rank;
      rank.rank = static_cast<std::int64_t>(r);
      rank.step_s = static_cast<double>(t.steps[static_cast<std::size_t>(step)].dur_ns) * 1e-9;
      std::int64_t origin = -1;
      for (const KinetoKernel& k : t.kernels)
        if (k.step == step && k.device == t.device && (origin < 0 || k.start_ns < origin)) origin = k.start_ns;
      if (origin < 0) {
        complete = false;
        break;
      }
      for (const KinetoKernel& k : t.kernels) {
        if (k.step != step || k.device != t.device) continue;
        MeasuredTask task;
        task.name = k.host_copy ? std::string("memcpy (host)") : std::string(kernel_class_name(k.cls));
        task.phase = k.phase;
        task.stream = k.cls == KernelClass::Nccl ? "comm" : "compute";
        task.start_s = static_cast<double>(k.start_ns - origin) * 1e-9;
        task.end_s = static_cast<double>(k.start_ns - origin + k.dur_ns) * 1e-9;
        rank.tasks.push_back(std::move(task));
      }
      it.ranks.push_back(std::move(rank));
    }
    if (complete) m.iterations.push_back(std::move(it));
    else empty.push_back(number);
  }
  if (m.iterations.empty())
    throw InputError(m.source, "", "no ProfilerStep has GPU events on every trace, expected the steps' kernels (was the "
                                   "trace recorded with ProfilerActivity.CUDA?)");
  std::int64_t send_recv = 0;
  for (const KinetoTrace& t : traces)
    for (const KinetoKernel& k : t.kernels)
      if (k.collective >= 0 && k.step >= 0 && t.collectives[static_cast<std::size_t>(k.collective)].op == "SendRecv" &&
          common.count(t.steps[static_cast<std::size_t>(k.step)].number))
        ++send_recv;
  if (send_recv > 0)
    m.notes.push_back(fmt::format("the traces hold {} NCCL SendRecv call{} (pipeline parallelism, which stepsim does not "
                                  "simulate yet: issue 15); they count in the measured communication",
                                  send_recv, send_recv == 1 ? "" : "s"));
  if (t0.world_size > static_cast<std::int64_t>(traces.size()))
    m.notes.push_back(fmt::format("traces of {} of the job's {} ranks: the phases are their mean, the step their slowest",
                                  traces.size(), t0.world_size));
  if (!empty.empty()) {
    std::string list;
    for (std::int64_t n : empty) list += (list.empty() ? "#" : ", #") + std::to_string(n);
    m.notes.push_back(fmt::format("ProfilerStep {} left out: no GPU event on some trace", list));
  }
  return m;
}

namespace {

double dtype_bytes(const std::string& dtype) {
  const std::string d = lower(dtype);
  if (d == "float" || d == "float32" || d == "int" || d == "int32") return 4;
  if (d == "double" || d == "float64" || d == "long" || d == "int64") return 8;
  if (d == "bfloat16" || d == "half" || d == "float16" || d == "short") return 2;
  if (d == "byte" || d == "char" || d == "bool" || d == "int8" || d == "uint8" || d.find("float8") == 0) return 1;
  return 0;
}

/// Median over steps of one per-step figure.
template <class F>
double median_over(const std::vector<KinetoStepSummary>& steps, F f) {
  std::vector<double> v;
  for (const auto& s : steps) v.push_back(f(s));
  return v.empty() ? 0.0 : median_of(v);
}

std::string mb(double bytes) { return fmt::format("{:.3g} MB", bytes / 1e6); }

}  // namespace

std::string kineto_device_name(const KinetoTrace& t) {
  for (const KinetoDevice& d : t.devices)
    if (d.id == t.device) return d.name;
  return "";
}

std::vector<KinetoCollectiveSummary> summarize_collectives(const KinetoTrace& t) {
  std::map<std::tuple<std::string, std::string, std::string>, KinetoCollectiveSummary> by;
  for (const KinetoKernel& k : t.kernels) {
    if (k.collective < 0 || k.step < 0 || k.device != t.device) continue;
    const KinetoCollective& c = t.collectives[static_cast<std::size_t>(k.collective)];
    KinetoCollectiveSummary& g = by[{c.op, c.algorithm.empty() ? "-" : c.algorithm, c.protocol.empty() ? "-" : c.protocol}];
    g.op = c.op, g.algorithm = c.algorithm, g.protocol = c.protocol;
    ++g.calls;
    g.time_s += static_cast<double>(k.dur_ns) * 1e-9;
    const double e = dtype_bytes(c.dtype);
    if (c.in_nelems >= 0 && e > 0) {
      const double bytes = static_cast<double>(c.in_nelems) * e;
      g.min_bytes = g.sized_calls == 0 ? bytes : std::min(g.min_bytes, bytes);
      g.max_bytes = g.sized_calls == 0 ? bytes : std::max(g.max_bytes, bytes);
      ++g.sized_calls;
    }
  }
  std::vector<KinetoCollectiveSummary> out;
  for (auto& [key, g] : by) out.push_back(std::move(g));
  return out;
}

std::vector<NcclTestsLog> collective_logs_from_traces(const std::vector<KinetoTrace>& traces,
                                                      std::map<std::string, std::int64_t>* skipped) {
  std::vector<NcclTestsLog> logs;
  std::map<std::string, std::int64_t> skip;
  for (const KinetoTrace& t : traces) {
    NcclTestsLog log;
    log.source = t.source;
    log.sha256 = t.sha256;
    log.format = "torch.profiler";
    std::map<std::pair<std::string, std::int64_t>, std::size_t> run_of;
    for (const KinetoKernel& k : t.kernels) {
      if (k.collective < 0 || k.step < 0 || k.device != t.device) continue;
      const KinetoCollective& c = t.collectives[static_cast<std::size_t>(k.collective)];
      const std::string op = c.op == "AllReduce"       ? "all_reduce"
                             : c.op == "AllGather"     ? "all_gather"
                             : c.op == "ReduceScatter" ? "reduce_scatter"
                             : c.op == "Broadcast"     ? "broadcast"
                             : c.op == "Reduce"        ? "reduce"
                                                       : "";
      if (op.empty()) {
        ++skip[fmt::format("{} calls (no nccl-tests table)", c.op)];
        continue;
      }
      const double e = dtype_bytes(c.dtype);
      const std::int64_t nelems = op == "all_gather" ? c.out_nelems : c.in_nelems;
      if (nelems < 0 || c.group_size < 1) {
        ++skip[fmt::format("{} calls without a recorded size or group size", op)];
        continue;
      }
      if (e == 0) {
        ++skip[fmt::format("{} calls of dtype '{}' (unknown size)", op, c.dtype)];
        continue;
      }
      const auto key = std::make_pair(op, c.group_size);
      auto it = run_of.find(key);
      if (it == run_of.end()) {
        NcclTestsRun run;
        run.op = op;
        run.ranks = static_cast<int>(c.group_size);
        run.gpu = kineto_device_name(t);
        run.nccl_version = t.nccl_version;
        it = run_of.emplace(key, log.runs.size()).first;
        log.runs.push_back(std::move(run));
      }
      NcclTestsRow row;
      row.size_bytes = static_cast<double>(nelems) * e;
      row.count = nelems;
      row.dtype = c.dtype;
      row.oop_time_us = static_cast<double>(k.dur_ns) * 1e-3;
      log.runs[it->second].rows.push_back(std::move(row));
    }
    logs.push_back(std::move(log));
  }
  if (skipped) *skipped = skip;
  return logs;
}

GemmMeasurements gemm_points_from_traces(const std::vector<KinetoTrace>& traces, std::vector<std::string>* notes) {
  GemmMeasurements out;
  out.format = "torch.profiler";
  struct Key {
    double m, n, k, batch;
    hardware::GemmMath math;
    bool operator<(const Key& o) const {
      return std::tie(m, n, k, batch, math) < std::tie(o.m, o.n, o.k, o.batch, o.math);
    }
  };
  std::map<Key, std::vector<double>> times;
  std::map<Key, std::string> op_of;
  std::int64_t unshaped = 0;
  for (const KinetoTrace& t : traces) {
    out.source += (out.source.empty() ? "" : ", ") + t.source;
    if (out.sha256.empty()) out.sha256 = t.sha256;
    if (out.device.empty()) out.device = kineto_device_name(t);
    // Per op instance: its GEMM kernels' summed time and the name of its first GEMM kernel.
    std::map<std::int32_t, std::pair<double, std::uint32_t>> per_op;
    for (const KinetoKernel& k : t.kernels) {
      if (k.cls != KernelClass::Gemm || k.step < 0 || k.device != t.device) continue;
      if (k.cpu_op < 0) {
        ++unshaped;
        continue;
      }
      auto [it, fresh] = per_op.try_emplace(k.cpu_op, 0.0, k.name);
      it->second.first += static_cast<double>(k.dur_ns) * 1e-9;
    }
    for (const auto& [op_index, v] : per_op) {
      const KinetoCpuOp& op = t.ops[static_cast<std::size_t>(op_index)];
      const std::string& name = t.names[op.name];
      const int first = name == "aten::mm" || name == "aten::bmm" ? 0 : name == "aten::addmm" || name == "aten::baddbmm" ? 1 : -1;
      if (first < 0) {
        ++unshaped;
        continue;
      }
      const bool batched = name == "aten::bmm" || name == "aten::baddbmm";
      const std::size_t rank = batched ? 3 : 2;
      const auto f = static_cast<std::size_t>(first);
      auto tensor = [&](std::size_t i) -> std::vector<double> {
        if (op.input_dims.size() <= i || op.input_dims[i].size() != rank) return {};
        std::vector<double> d;
        for (std::int64_t x : op.input_dims[i]) {
          if (x < 1) return {};
          d.push_back(static_cast<double>(x));
        }
        return d;
      };
      const auto a = tensor(f), b = tensor(f + 1);
      if (a.empty() || b.empty() || a[rank - 1] != b[rank - 2] || (batched && a[0] != b[0])) {
        ++unshaped;
        continue;
      }
      const std::string type = op.input_types.size() > f ? lower(op.input_types[f]) : "";
      const std::string kernel = lower(t.names[v.second]);
      hardware::GemmMath math;
      if (type.find("bfloat16") != std::string::npos || type.find("half") != std::string::npos) math = hardware::GemmMath::Tensor16;
      else if (type == "float") math = any_of(kernel, {"tf32", "s1688", "s16816"}) ? hardware::GemmMath::Tf32 : hardware::GemmMath::Fp32;
      else {
        ++unshaped;
        continue;
      }
      const Key key{a[rank - 2], b[rank - 1], a[rank - 1], batched ? a[0] : 1.0, math};
      times[key].push_back(v.first);
      op_of.emplace(key, name);
    }
  }
  // The arithmetic with the most shapes.
  std::map<hardware::GemmMath, std::size_t> shapes;
  for (const auto& [key, v] : times) ++shapes[key.math];
  hardware::GemmMath keep = hardware::GemmMath::Tensor16;
  std::size_t most = 0;
  for (const auto& [math, n] : shapes)
    if (n > most) most = n, keep = math;
  std::size_t short_shapes = 0;
  for (const auto& [key, v] : times) {
    if (key.math != keep) continue;
    if (median_of(v) < kMinTraceGemmS) {
      ++short_shapes;
      continue;
    }
    GemmPoint p;
    p.name = op_of[key];
    p.shape.m = key.m, p.shape.n = key.n, p.shape.k = key.k, p.shape.batch = key.batch;
    p.shape.math = key.math;
    p.measured_s = median_of(v);
    p.where = fmt::format("{} calls of {} {}x{}x{}{}", v.size(), p.name, key.m, key.n, key.k,
                          key.batch > 1 ? fmt::format(" x{}", key.batch) : std::string());
    out.points.push_back(std::move(p));
  }
  if (notes) {
    for (const auto& [math, n] : shapes)
      if (math != keep)
        notes->push_back(fmt::format("{} {} GEMM shape{} left out (one arithmetic is fitted: {})", n, hardware::gemm_math_name(math),
                                     n == 1 ? "" : "s", hardware::gemm_math_name(keep)));
    if (short_shapes > 0)
      notes->push_back(fmt::format("{} GEMM shape{} under {:g} us left out (timer resolution, launch-bound)", short_shapes,
                                   short_shapes == 1 ? "" : "s", kMinTraceGemmS * 1e6));
    if (unshaped > 0)
      notes->push_back(fmt::format("{} GEMM kernel{} without a usable shape (no Input Dims, another op than mm / addmm / "
                                   "bmm / baddbmm, or another dtype) left out", unshaped, unshaped == 1 ? "" : "s"));
  }
  return out;
}

namespace {

// Bytes per element of an `Input type` string; 0 when unknown.
double element_bytes(const std::string& type) {
  const std::string t = lower(type);
  if (t == "float" || t == "int" || t == "unsigned int") return 4;
  if (t == "double" || t == "long int" || t == "long" || t == "int64_t") return 8;
  if (t == "c10::half" || t == "c10::bfloat16" || t == "short int") return 2;
  if (t == "bool" || t == "unsigned char" || t == "signed char" || t == "char") return 1;
  return 0;
}

// Bytes of input i of `op` (its dims × its element size); 0 for a scalar, a 0-d tensor or an
// input without a shape; -1 when the input is a tensor of an unknown type.
double input_bytes(const KinetoCpuOp& op, std::size_t i) {
  if (op.input_dims.size() <= i || op.input_dims[i].empty()) return 0;
  double n = 1;
  for (std::int64_t x : op.input_dims[i]) {
    if (x < 0) return -1;
    n *= static_cast<double>(x);
  }
  const double e = op.input_types.size() > i ? element_bytes(op.input_types[i]) : 0;
  return e > 0 ? n * e : -1;
}

enum class Traffic { None, Write, Copy, Unary, Binary };

Traffic traffic_of(const std::string& op) {
  static const std::set<std::string> unary = {"aten::relu", "aten::relu_", "aten::gelu", "aten::gelu_", "aten::silu",
                                              "aten::silu_", "aten::sigmoid", "aten::sigmoid_", "aten::tanh", "aten::tanh_",
                                              "aten::neg", "aten::neg_", "aten::exp", "aten::exp_"};
  static const std::set<std::string> binary = {"aten::add", "aten::add_", "aten::sub", "aten::sub_", "aten::mul",
                                               "aten::mul_", "aten::div", "aten::div_", "aten::threshold_backward",
                                               "aten::gelu_backward", "aten::silu_backward"};
  if (op == "aten::fill_" || op == "aten::zero_") return Traffic::Write;
  if (op == "aten::copy_") return Traffic::Copy;
  if (unary.count(op) != 0) return Traffic::Unary;
  if (binary.count(op) != 0) return Traffic::Binary;
  return Traffic::None;
}

}  // namespace

std::vector<MemoryPoint> memory_points_from_traces(const std::vector<KinetoTrace>& traces, std::vector<std::string>* notes) {
  std::vector<MemoryPoint> out;
  std::int64_t broadcasts = 0, small = 0, multi = 0;
  for (const KinetoTrace& t : traces) {
    // Per op instance: its kernels (any class) and the first elementwise one.
    std::map<std::int32_t, std::pair<int, const KinetoKernel*>> per_op;
    for (const KinetoKernel& k : t.kernels) {
      if (k.step < 0 || k.device != t.device || k.cpu_op < 0) continue;
      auto& [count, first] = per_op[k.cpu_op];
      ++count;
      if (first == nullptr && k.cls == KernelClass::Elementwise) first = &k;
    }
    for (const auto& [op_index, v] : per_op) {
      const auto& [count, kernel] = v;
      if (kernel == nullptr) continue;
      const KinetoCpuOp& op = t.ops[static_cast<std::size_t>(op_index)];
      const std::string& name = t.names[op.name];
      const Traffic traffic = traffic_of(name);
      if (traffic == Traffic::None || op.input_dims.empty()) continue;
      if (count > 1) {  // which kernel moved which bytes is not recorded
        ++multi;
        continue;
      }
      const double a = input_bytes(op, 0), b = input_bytes(op, 1);
      double bytes = -1;
      switch (traffic) {
        case Traffic::Write: bytes = a; break;
        case Traffic::Copy: bytes = a > 0 && b > 0 ? a + b : -1; break;
        case Traffic::Unary: bytes = a > 0 ? 2 * a : -1; break;
        case Traffic::Binary:
          if (a > 0 && b == 0) bytes = 2 * a;
          else if (a > 0 && b == a) bytes = 3 * a;
          else if (a > 0 && b > 0) ++broadcasts;
          break;
        case Traffic::None: break;
      }
      if (bytes <= 0) continue;
      const double dur = static_cast<double>(kernel->dur_ns) * 1e-9;
      if (bytes < kMinTraceStreamBytes || dur < kMinTraceStreamS) {
        ++small;
        continue;
      }
      out.push_back({name, bytes, dur});
    }
  }
  if (notes != nullptr) {
    if (small > 0)
      notes->push_back(fmt::format("{} memory-bound kernel{} under {:g} MiB or {:g} us left out (launch-bound or held "
                                   "in L2)", small, small == 1 ? "" : "s", kMinTraceStreamBytes / 1048576.0,
                                   kMinTraceStreamS * 1e6));
    if (broadcasts > 0)
      notes->push_back(fmt::format("{} broadcasting pointwise kernel{} left out (their traffic depends on the strides)",
                                   broadcasts, broadcasts == 1 ? "" : "s"));
    if (multi > 0)
      notes->push_back(fmt::format("{} pointwise op{} that launched several kernels left out", multi, multi == 1 ? "" : "s"));
  }
  return out;
}

MemoryFitResult fit_memory_bound(const std::vector<MemoryPoint>& points, const hardware::HardwareProfile& hw,
                                 const hardware::CalibrationSource& source) {
  constexpr std::size_t kMinPoints = 5;
  const std::string where = source.file.empty() ? std::string("memory-bound fit") : source.file;
  if (points.size() < kMinPoints)
    throw InputError(where, "", fmt::format("{} memory-bound kernel{} with known traffic, fewer than the {} a fit needs "
                                            "(a trace recorded with record_shapes=True, whose pointwise kernels move {:g} "
                                            "MiB or more)", points.size(), points.size() == 1 ? "" : "s", kMinPoints,
                                            kMinTraceStreamBytes / 1048576.0));
  const double bw = hw.hbm_bandwidth_bytes_per_s;
  const auto residuals = [&](double e, std::size_t parity) {  // parity 2: every point
    std::vector<double> r;
    for (std::size_t i = 0; i < points.size(); ++i)
      if (parity == 2 || i % 2 == parity)
        r.push_back(std::abs(points[i].bytes / (bw * e) - points[i].measured_s) / points[i].measured_s);
    return r;
  };
  // The efficiency whose median relative time residual is least (a least-median fit, which the
  // few kernels a cache speeds up or a strided layout slows down cannot pull), on a 0.001 grid
  // up to 1.05 (beyond 1 is refused below).
  const auto efficiency = [&](std::size_t parity) {
    double best = 0, best_r = 1e300;
    for (int k = 1; k <= 1050; ++k) {
      const double r = median_of(residuals(k / 1000.0, parity));
      if (r < best_r) best = k / 1000.0, best_r = r;
    }
    return best;
  };
  MemoryFitResult out;
  const double e = efficiency(2);
  if (e > 1)
    throw InputError(where, "", fmt::format("the memory-bound kernels stream at {:.2f} x the profile's HBM bandwidth ({:g} "
                                            "GB/s): faster than the HBM can, so the bytes are not what they moved (a "
                                            "cache) or the profile is not this GPU's", e, bw / 1e9));
  const std::vector<double> r = residuals(e, 2);
  out.memory.hbm_efficiency = e;
  out.memory.points = static_cast<int>(points.size());
  out.memory.median_residual = median_of(r);
  out.memory.max_residual = *std::max_element(r.begin(), r.end());
  out.memory.source = source;
  out.profile_efficiency = hw.hbm_efficiency;
  out.nominal_median_residual = median_of(residuals(hw.hbm_efficiency, 2));
  out.cross_median_residual = median_of(residuals(efficiency(0), 1));
  for (const MemoryPoint& p : points) ++out.ops[p.op];
  if (out.memory.median_residual > 0.25)
    throw InputError(where, "", fmt::format("the memory-bound kernels are not one streaming rate: at {:.2f} of HBM "
                                            "bandwidth they are missed by a median {:.0f} %", e,
                                            100 * out.memory.median_residual));
  return out;
}

std::vector<HostStep> host_steps_from_traces(const std::vector<KinetoTrace>& traces) {
  std::vector<HostStep> out;
  for (std::size_t ti = 0; ti < traces.size(); ++ti) {
    const KinetoTrace& t = traces[ti];
    // One launch call per (thread, start): a graph launch's kernels share theirs.
    struct Launch {
      std::int64_t start_ns, dur_ns;
      std::int32_t thread;
    };
    std::vector<std::vector<Launch>> per_step(t.steps.size());
    std::vector<std::vector<const KinetoKernel*>> on_device(t.steps.size());  // by start (t.kernels' order)
    std::vector<std::int64_t> call_ns, graphs(t.steps.size(), 0);
    for (const KinetoKernel& k : t.kernels) {
      if (k.step < 0) continue;
      const auto si = static_cast<std::size_t>(k.step);
      if (k.launch_thread >= 0) per_step[si].push_back({k.launch_ns, k.launch_dur_ns, k.launch_thread});
      if (k.device == t.device) on_device[si].push_back(&k);
    }
    for (std::size_t si = 0; si < per_step.size(); ++si) {
      auto& v = per_step[si];
      std::sort(v.begin(), v.end(), [](const Launch& a, const Launch& b) {
        return std::tie(a.start_ns, a.thread, a.dur_ns) < std::tie(b.start_ns, b.thread, b.dur_ns);
      });
      const std::size_t events = v.size();
      v.erase(std::unique(v.begin(), v.end(), [](const Launch& a, const Launch& b) {
                return a.start_ns == b.start_ns && a.thread == b.thread;
              }), v.end());
      graphs[si] = static_cast<std::int64_t>(events - v.size());  // GPU events beyond one per launch call
      for (const Launch& l : v) call_ns.push_back(l.dur_ns);
    }
    if (call_ns.empty()) continue;
    std::nth_element(call_ns.begin(), call_ns.begin() + static_cast<std::ptrdiff_t>(call_ns.size() / 2), call_ns.end());
    const std::int64_t typical_call_ns = call_ns[call_ns.size() / 2];
    // A blocking call of `thread` overlapping (from, to).
    const auto blocked = [&](std::int32_t thread, std::int64_t from, std::int64_t to) {
      auto it = std::lower_bound(t.blocking_calls.begin(), t.blocking_calls.end(), std::pair{thread, from},
                                 [](const KinetoBlockingCall& b, const std::pair<std::int32_t, std::int64_t>& key) {
                                   return std::tie(b.thread, b.start_ns) < std::tie(key.first, key.second);
                                 });
      if (it != t.blocking_calls.begin() && std::prev(it)->thread == thread &&
          std::prev(it)->start_ns + std::prev(it)->dur_ns > from)
        return true;  // began before `from`, still running
      return it != t.blocking_calls.end() && it->thread == thread && it->start_ns < to;
    };
    for (std::size_t si = 0; si < t.steps.size(); ++si) {
      const std::vector<Launch>& v = per_step[si];
      if (v.empty()) continue;
      HostStep h;
      h.shared_launch_events = graphs[si];
      h.trace = ti;
      h.number = t.steps[si].number;
      h.step_s = static_cast<double>(t.steps[si].dur_ns) * 1e-9;
      h.launches = static_cast<std::int64_t>(v.size());
      std::map<std::int32_t, std::size_t> last;  // thread → index into v of its previous launch
      std::vector<double> kept;
      for (std::size_t i = 0; i < v.size(); ++i) {
        const auto it = last.find(v[i].thread);
        if (it != last.end()) {
          const Launch& x = v[it->second];
          const Launch& y = v[i];
          bool other = false;  // another thread's launch in between
          for (std::size_t j = it->second + 1; j < i && !other; ++j) other = v[j].thread != y.thread;
          if (other) {
            ++h.handoffs;
          } else if (blocked(y.thread, x.start_ns, y.start_ns)) {
            ++h.blocked;
          } else {
            const std::int64_t waited = std::max<std::int64_t>(0, x.dur_ns - typical_call_ns);
            kept.push_back(static_cast<double>(std::max<std::int64_t>(0, y.start_ns - x.start_ns - waited)) * 1e-9);
          }
        }
        last[v[i].thread] = i;
      }
      h.intervals = static_cast<std::int64_t>(kept.size());
      for (double x : kept) h.host_s += x;
      h.median_interval_s = kept.empty() ? 0 : median_of(kept);
      // The device idle until an event its CPU launched after the device went idle.
      std::int64_t busy_end = -1;
      for (const KinetoKernel* k : on_device[si]) {
        if (busy_end >= 0 && k->start_ns > busy_end && k->launch_thread >= 0 && k->launch_ns >= busy_end)
          h.gpu_waited_s += static_cast<double>(k->start_ns - busy_end) * 1e-9;
        busy_end = std::max(busy_end, k->start_ns + k->dur_ns);
      }
      out.push_back(h);
    }
  }
  return out;
}

HostFitResult fit_host_time(const std::vector<HostStep>& steps, const hardware::CalibrationSource& source) {
  const std::string where = source.file.empty() ? std::string("host time fit") : source.file;
  HostFitResult out;
  out.steps = steps;
  std::int64_t n = 0, launches = 0, single = 0;
  double cpu = 0, step = 0, waited = 0;
  std::vector<double> medians;
  for (const HostStep& h : steps) {
    n += h.intervals, cpu += h.host_s, step += h.step_s, waited += h.gpu_waited_s;
    launches += h.launches;
    single += h.launches < 2;
    out.blocked += h.blocked, out.handoffs += h.handoffs, out.shared_launch_events += h.shared_launch_events;
    if (h.intervals > 0) medians.push_back(h.median_interval_s);
  }
  if (n < kMinHostIntervals)
    throw InputError(where, "", launches == 0
        ? fmt::format("0 intervals between launches of GPU work, fewer than the {} a host time is measured on: no GPU "
                      "event joined to a launch (record with ProfilerActivity.CPU and CUDA)", kMinHostIntervals)
        : fmt::format("{} interval{} between launches of GPU work, fewer than the {} a host time is measured on ({} "
                      "launches in {} step{}; left out: {} around a blocking call, {} at a hand-off between threads, "
                      "{} step{} with one launch)", n, n == 1 ? "" : "s", kMinHostIntervals, launches, steps.size(),
                      steps.size() == 1 ? "" : "s", out.blocked, out.handoffs, single, single == 1 ? "" : "s"));
  const auto mean = [&](std::size_t parity) {  // parity 2: every step
    std::int64_t k = 0;
    double c = 0;
    for (std::size_t i = 0; i < steps.size(); ++i)
      if (parity == 2 || i % 2 == parity) k += steps[i].intervals, c += steps[i].host_s;
    return k > 0 ? c / static_cast<double>(k) : 0.0;
  };
  const auto residuals = [&](double h, std::size_t parity) {
    std::vector<double> r;
    for (std::size_t i = 0; i < steps.size(); ++i)
      if ((parity == 2 || i % 2 == parity) && steps[i].host_s > 0)
        r.push_back(std::abs(static_cast<double>(steps[i].intervals) * h - steps[i].host_s) / steps[i].host_s);
    return r;
  };
  const double h = mean(2);
  if (!(h > 0) || h > 0.01 * (1 + 1e-9))
    throw InputError(where, "", fmt::format("{:.4g} s of CPU per launch: not one op's host time (expected a time in (0, "
                                            "10 ms])", h));
  const std::vector<double> r = residuals(h, 2);
  out.host.host_op_s = h;
  out.host.points = static_cast<int>(n);
  out.host.steps = static_cast<int>(steps.size());
  out.host.median_residual = r.empty() ? 0 : median_of(r);
  out.host.max_residual = r.empty() ? 0 : *std::max_element(r.begin(), r.end());
  out.host.source = source;
  out.median_interval_s = medians.empty() ? 0 : median_of(medians);
  out.gpu_waited_fraction = step > 0 ? waited / step : 0;
  if (steps.size() >= 2 && mean(0) > 0) {
    const std::vector<double> odd = residuals(mean(0), 1);
    if (!odd.empty()) out.cross_median_residual = median_of(odd);
  }
  if (out.host.median_residual > 0.25)
    throw InputError(where, "", fmt::format("the steps do not share one host rate: at {:.3g} us per launch they are "
                                            "missed by a median {:.0f} %", h * 1e6, 100 * out.host.median_residual));
  return out;
}

TraceCalibration calibrate_traces(const std::vector<KinetoTrace>& traces, const hardware::HardwareProfile& hw,
                                  const CalibrateOptions& options, const std::string& overlay_name) {
  STEPSIM_ASSERT(!traces.empty(), "no traces");
  require_one_job(traces);
  std::map<std::string, std::int64_t> skipped;
  std::vector<std::string> gemm_notes;
  std::vector<NcclTestsLog> logs = collective_logs_from_traces(traces, &skipped);
  const GemmMeasurements gemms = gemm_points_from_traces(traces, &gemm_notes);
  std::vector<std::string> memory_notes;
  const std::vector<MemoryPoint> streams = memory_points_from_traces(traces, &memory_notes);
  std::size_t rows = 0;
  for (const NcclTestsLog& log : logs)
    for (const NcclTestsRun& run : log.runs) rows += run.rows.size();
  hardware::CalibrationSource src;
  for (const KinetoTrace& t : traces) src.file += (src.file.empty() ? "" : ", ") + t.source;
  src.sha256 = traces.front().sha256;
  src.format = "torch.profiler";
  src.gpu = kineto_device_name(traces.front());
  std::optional<HostFitResult> host;
  std::string host_refused;
  try {
    host = fit_host_time(host_steps_from_traces(traces), src);
  } catch (const InputError& e) {
    host_refused = e.detail();
  }
  if (rows == 0 && gemms.points.size() < 2 && streams.empty() && !host) {
    std::string why;
    for (const auto& [reason, n] : skipped) why += fmt::format("; {} {}", n, reason);
    throw InputError(traces.front().source, "",
                     fmt::format("nothing to fit: no host time ({}); no sized NCCL call{}, GEMM shape or "
                                 "memory-bound kernel (record with record_shapes=True; PyTorch 2.3+ records NCCL sizes)",
                                 host_refused, why));
  }
  TraceCalibration out;
  CalibrationResult& result = out.collectives;
  if (rows > 0) {
    result = calibrate(logs, hw, options, overlay_name);  // warns on a GPU the profile is not
  } else {
    result.overlay.name = overlay_name;
    result.overlay.hardware = hw.name;
    if (const auto mismatch = gpu_profile_mismatch(src.gpu, hw))
      result.warnings.push_back(fmt::format("{}: {}", traces.front().source, *mismatch));
  }
  if (gemms.points.size() >= 2) {
    try {
      GemmFitResult fit = fit_gemm(gemms, hw, hw.sm_count > 0 ? hw.sm_count : 1, kGemmFitTilesWithSmall);
      const hardware::GemmMath math = gemms.points.front().shape.math;
      if (fit.gemm.curve.max_efficiency_for(math) >= 0.999)
        throw InputError(gemms.source, "",
                         fmt::format("the fit pins the {} efficiency at its bound 1 (median residual {:.0f} %): the curve "
                                     "cannot follow these GEMMs, and no GPU runs at its peak",
                                     hardware::gemm_math_name(math), 100 * fit.fitted.median));
      result.overlay.gemm = fit.gemm;
      out.gemm = std::move(fit);
    } catch (const InputError& e) {
      if (rows == 0 && streams.empty() && !host)
        throw InputError(e.source(), e.path(), "nothing to fit: no NCCL call with a recorded size, and the GEMM curve is "
                                               "not fitted: " + e.detail());
      result.warnings.push_back(std::string("GEMM curve not fitted: ") + e.what());
    }
  }
  if (!streams.empty()) {
    try {
      MemoryFitResult fit = fit_memory_bound(streams, hw, src);
      result.overlay.memory = fit.memory;
      out.memory = std::move(fit);
    } catch (const InputError& e) {
      if (rows == 0 && !out.gemm && !host)
        throw InputError(e.source(), e.path(), "nothing to fit: no NCCL call with a recorded size, no GEMM curve, and "
                                               "the memory-bound efficiency is not fitted: " + e.detail());
      result.warnings.push_back(std::string("memory-bound efficiency not fitted: ") + e.what());
    }
  }
  for (const std::string& n : memory_notes) result.warnings.push_back(n);
  for (const std::string& n : gemm_notes) result.warnings.push_back(n);
  for (const auto& [reason, n] : skipped) result.warnings.push_back(fmt::format("{} {} left out of the fit", n, reason));
  if (rows > 0)
    result.warnings.push_back("a trace's NCCL kernel time includes the wait for the slowest rank: the fit prices that wait "
                              "too (nccl-tests logs measure the collective alone)");
  if (host) {
    result.overlay.host = host->host;
    out.host = std::move(host);
  } else {
    result.warnings.push_back("host time per op not fitted (scenarios keep their framework.host_op_s): " + host_refused);
  }
  return out;
}

std::string kineto_summary_text(const std::vector<KinetoTrace>& traces) {
  std::string s;
  for (const KinetoTrace& t : traces) {
    auto steps = summarize_steps(t);
    const std::size_t all_steps = steps.size();
    steps.erase(std::remove_if(steps.begin(), steps.end(), [](const KinetoStepSummary& x) { return x.gpu_span_s == 0 && x.class_count == decltype(x.class_count){}; }),
                steps.end());
    s += fmt::format("{}: {} trace, {} events ({}{})\n", one_line(t.source), t.gzipped ? "gzipped" : "plain", t.events,
                     t.rank >= 0 ? fmt::format("rank {} of {}", t.rank, t.world_size) : std::string("no distributedInfo"),
                     t.nccl_version.empty() ? "" : ", NCCL " + one_line(t.nccl_version));
    s += fmt::format("  device     {} (device {}{}), {} GPU events, {} runtime calls with a correlation id, {} CPU ops{}\n", one_line(kineto_device_name(t).empty() ? "unknown device" : kineto_device_name(t)), t.device,
                     [&] {
                       for (const KinetoDevice& d : t.devices)
                         if (d.id == t.device) return fmt::format(": {} SMs, {:.1f} GB", d.sms, d.memory_bytes / 1e9);
                       return std::string();
                     }(),
                     t.kernels.size(), t.launches, t.cpu_ops, t.shapes_recorded ? " with input shapes" : "");
    std::string numbers;
    for (std::size_t i = 0; i < t.steps.size(); ++i) {
      if (i == 3 && t.steps.size() > 6) {  // long lists: the first three and the last two
        numbers += fmt::format(", ... ({} more)", t.steps.size() - 5);
        i = t.steps.size() - 2;
      }
      numbers += (numbers.empty() ? "" : ", ") + std::to_string(t.steps[i].number);
    }
    s += fmt::format("  steps      {} ({}); median over the {} with GPU events: wall {:.3f} ms (the ProfilerStep "
                     "annotation), GPU span {:.3f} ms (its GPU events' first start to last end)\n",
                     all_steps, numbers, steps.size(),
                     1e3 * median_over(steps, [](const auto& x) { return x.wall_s; }),
                     1e3 * median_over(steps, [](const auto& x) { return x.gpu_span_s; }));
    s += fmt::format("  {:<14}{:>10}{:>14}{:>10}   (per step, median over steps; share of the summed kernel time)\n",
                     "kernel class", "count", "time ms", "share");
    double busy = 0;
    std::array<double, kKernelClasses> per{};
    std::array<double, kKernelClasses> count{};
    for (std::size_t c = 0; c < kKernelClasses; ++c) {
      per[c] = median_over(steps, [c](const auto& x) { return x.class_s[c]; });
      count[c] = median_over(steps, [c](const auto& x) { return static_cast<double>(x.class_count[c]); });
      busy += per[c];
    }
    for (std::size_t c = 0; c < kKernelClasses; ++c) {
      if (count[c] == 0 && per[c] == 0) continue;
      s += fmt::format("  {:<14}{:>10g} {:>13.3f} {:>8.1f} %\n", kClassNames[c], count[c], per[c] * 1e3,
                       busy > 0 ? 100 * per[c] / busy : 0.0);
    }
    if (busy > 0)
      s += fmt::format("  {:<14}{:>10} {:>13.3f}            (kernel time summed over streams: {:.0f} % of the GPU span)\n",
                       "all", "", busy * 1e3,
                       100 * busy / std::max(1e-12, median_over(steps, [](const auto& x) { return x.gpu_span_s; })));
    const auto coll = summarize_collectives(t);
    if (!coll.empty()) {
      s += fmt::format("  {:<34}{:>8}{:>14}  {}\n", "NCCL op / algorithm / protocol", "calls", "time ms", "sizes (in msg)");
      for (const KinetoCollectiveSummary& g : coll)
        s += fmt::format("  {:<34}{:>8} {:>13.3f}  {}\n",
                         one_line(fmt::format("{} {} {}", g.op, g.algorithm.empty() ? "-" : g.algorithm,
                                              g.protocol.empty() ? "-" : g.protocol)),
                         g.calls, g.time_s * 1e3,
                         g.sized_calls == 0 ? std::string("not recorded")
                                            : fmt::format("{} .. {} ({} of {} calls)", mb(g.min_bytes), mb(g.max_bytes),
                                                          g.sized_calls, g.calls));
      s += "  (calls and time over every step)\n";
    }
    if (!t.unknown_kernels.empty()) {
      std::vector<std::pair<std::int64_t, std::string>> u;
      std::int64_t total = 0;
      for (const auto& [name, n] : t.unknown_kernels) u.emplace_back(-n, name), total += n;
      std::sort(u.begin(), u.end());
      s += fmt::format("  unclassified kernels: {} events of {} names (counted under 'unknown'):\n", total, u.size());
      for (std::size_t i = 0; i < u.size() && i < 10; ++i)
        s += fmt::format("    {:>6}  {}\n", -u[i].first, one_line(excerpt(u[i].second, 100)));
    }
    for (const std::string& n : t.notes) s += "  note: " + one_line(n) + "\n";
  }
  return s;
}

}  // namespace stepsim::validate
