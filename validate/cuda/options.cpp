// SPDX-License-Identifier: Apache-2.0
// stepsim-validate: argument parsing and the DDP bucket plan (no CUDA here).
#include "options.hpp"

#include "errors.hpp"
#include "json_writer.hpp"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <sstream>

#include <sys/stat.h>
#include <unistd.h>

namespace stepsim::validate {

namespace {

constexpr double kMiB = 1024.0 * 1024.0;

/// A flag's handler takes its value (flags without a value get "").
struct Flag {
  bool takes_value = true;
  std::function<void(const std::string&)> set;
};

void parse_flags(const std::string& command, const std::vector<std::string>& args,
                 const std::map<std::string, Flag>& flags) {
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string name = args[i], value;
    bool has_value = false;
    if (const auto eq = name.find('='); name.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      has_value = true;
    }
    const auto it = flags.find(name);
    if (it == flags.end()) {
      std::string known;
      for (const auto& [k, f] : flags) known += (known.empty() ? "" : ", ") + k;
      throw UsageError(command + ": unknown argument '" + args[i] + "'; expected one of: " + known);
    }
    if (it->second.takes_value && !has_value) {
      if (i + 1 >= args.size()) throw UsageError(command + ": " + name + ": expected a value after the flag");
      value = args[++i];
    } else if (!it->second.takes_value && has_value) {
      throw UsageError(command + ": " + name + ": takes no value, got '" + value + "'");
    }
    it->second.set(value);
  }
}

std::int64_t parse_int(const std::string& flag, const std::string& text, std::int64_t lo, std::int64_t hi) {
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno == ERANGE || v < lo || v > hi)
    throw UsageError(flag + ": expected an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                     "], got '" + text + "'");
  return v;
}

double parse_positive(const std::string& flag, const std::string& text, double hi) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !std::isfinite(v) || !(v > 0) || v > hi) {
    std::ostringstream s;
    s << flag << ": expected a number in (0, " << hi << "], got '" << text << "'";
    throw UsageError(s.str());
  }
  return v;
}

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> out;
  std::string cur;
  for (const char c : text) {
    if (c == ',') {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

std::vector<std::int64_t> parse_int_list(const std::string& flag, const std::string& text, std::int64_t lo,
                                         std::int64_t hi) {
  std::vector<std::int64_t> out;
  for (const auto& w : split(text)) out.push_back(parse_int(flag, w, lo, hi));
  return out;
}

constexpr std::int64_t kMaxDim = 1 << 20;

/// --out FILE: checked when parsed (before any device is touched), stored in `target`.
Flag output_flag(std::string& target) {
  return {true, [&target](const std::string& v) {
            check_output_path("--out", v);
            target = v;
          }};
}

}  // namespace

void check_output_path(const std::string& flag, const std::string& path) {
  const auto refuse = [&](const std::string& why) {
    throw UsageError(flag + ": '" + path + "': " + why + "; expected a writable file path");
  };
  if (path.empty()) refuse("empty");
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) refuse("is a directory");
    if (!S_ISREG(st.st_mode)) refuse("is not a regular file");
  } else if (errno != ENOENT) {
    refuse(std::strerror(errno));
  }
  const auto slash = path.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  if (::stat(dir.c_str(), &st) != 0) refuse("folder '" + dir + "': " + std::strerror(errno));
  if (!S_ISDIR(st.st_mode)) refuse("'" + dir + "' is not a folder");
  if (::access(dir.c_str(), W_OK) != 0) refuse("folder '" + dir + "' is not writable: " + std::strerror(errno));
}

void write_file_atomic(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) throw UsageError(path + ": cannot write: " + std::strerror(errno));
  const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  if (std::fclose(f) != 0 || !ok) {
    std::remove(tmp.c_str());
    throw UsageError(path + ": cannot write: " + std::strerror(errno));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw UsageError(path + ": cannot rename from " + tmp + ": " + std::strerror(errno));
  }
}

std::int64_t parse_size(const std::string& flag, const std::string& text) {
  if (text.empty()) throw UsageError(flag + ": expected a size in bytes (suffix K, M or G allowed), got ''");
  std::int64_t mult = 1;
  std::string digits = text;
  switch (text.back()) {
    case 'K': case 'k': mult = 1LL << 10; break;
    case 'M': case 'm': mult = 1LL << 20; break;
    case 'G': case 'g': mult = 1LL << 30; break;
    default: break;
  }
  if (mult != 1) digits.pop_back();
  const std::int64_t max = (1LL << 40) / mult;
  try {
    return parse_int(flag, digits, 1, max) * mult;
  } catch (const UsageError&) {
    throw UsageError(flag + ": expected a size in bytes in [1, 1T] (suffix K, M or G allowed), got '" + text + "'");
  }
}

MlpStepOptions parse_mlp_step(const std::vector<std::string>& args) {
  MlpStepOptions o;
  const std::string c = "mlp-step";
  parse_flags(c, args,
              {{"--layers", {true, [&](const std::string& v) { o.layers = parse_int("--layers", v, 1, 4096); }}},
               {"--hidden", {true, [&](const std::string& v) { o.hidden = parse_int("--hidden", v, 1, kMaxDim); }}},
               {"--ffn", {true, [&](const std::string& v) { o.ffn = parse_int("--ffn", v, 1, kMaxDim); }}},
               {"--tokens", {true, [&](const std::string& v) { o.tokens = parse_int("--tokens", v, 1, kMaxDim); }}},
               {"--bucket-mb", {true, [&](const std::string& v) { o.bucket_mb = parse_positive("--bucket-mb", v, 1e6); }}},
               {"--first-bucket-mb",
                {true, [&](const std::string& v) { o.first_bucket_mb = parse_positive("--first-bucket-mb", v, 1e6); }}},
               {"--grad-accum", {true, [&](const std::string& v) { o.grad_accum = parse_int("--grad-accum", v, 1, 1024); }}},
               {"--iters", {true, [&](const std::string& v) { o.iters = parse_int("--iters", v, 1, 100000); }}},
               {"--warmup", {true, [&](const std::string& v) { o.warmup = parse_int("--warmup", v, 0, 100000); }}},
               {"--gpus", {true, [&](const std::string& v) { o.gpus = static_cast<int>(parse_int("--gpus", v, 0, 1024)); }}},
               {"--gradient-as-bucket-view", {false, [&](const std::string&) { o.gradient_as_bucket_view = true; }}},
               {"--plan-only", {false, [&](const std::string&) { o.plan_only = true; }}},
               {"--out", output_flag(o.out)}});
  // Parameters, gradients, buckets, fp32 master + Adam moments: 2+2+2+12 bytes per parameter.
  const double params = 2.0 * static_cast<double>(o.layers) * static_cast<double>(o.hidden) * static_cast<double>(o.ffn);
  if (params * 18 > 4e12)
    throw UsageError("--layers/--hidden/--ffn: " + std::to_string(o.layers) + " x " + std::to_string(o.hidden) + " x " +
                     std::to_string(o.ffn) + " is too large (expected 2·L·D·F·18 bytes of model state ≤ 4e12)");
  if (o.out.empty() && !o.plan_only) throw UsageError("mlp-step: --out MEASURED.json is required");
  return o;
}

GemmSweepOptions parse_gemm_sweep(const std::vector<std::string>& args) {
  GemmSweepOptions o;
  bool ffn_given = false;
  parse_flags("gemm-sweep", args,
              {{"--hidden", {true, [&](const std::string& v) { o.hidden = parse_int_list("--hidden", v, 1, kMaxDim); }}},
               {"--ffn", {true, [&](const std::string& v) {
                            o.ffn = parse_int_list("--ffn", v, 1, kMaxDim);
                            ffn_given = true;
                          }}},
               {"--tokens", {true, [&](const std::string& v) { o.tokens = parse_int_list("--tokens", v, 1, kMaxDim); }}},
               {"--iters", {true, [&](const std::string& v) { o.iters = parse_int("--iters", v, 1, 100000); }}},
               {"--warmup", {true, [&](const std::string& v) { o.warmup = parse_int("--warmup", v, 0, 100000); }}},
               {"--out", output_flag(o.out)}});
  if (!ffn_given) {
    o.ffn.clear();
    for (const auto d : o.hidden) o.ffn.push_back(4 * d);
  }
  if (o.ffn.size() != o.hidden.size())
    throw UsageError("--ffn: expected one value per --hidden value (" + std::to_string(o.hidden.size()) + "), got " +
                     std::to_string(o.ffn.size()));
  return o;
}

CollectiveSweepOptions parse_collective_sweep(const std::vector<std::string>& args) {
  CollectiveSweepOptions o;
  parse_flags("collective-sweep", args,
              {{"--ops", {true, [&](const std::string& v) {
                            o.ops = split(v);
                            for (const auto& op : o.ops)
                              if (op != "all_reduce" && op != "reduce_scatter" && op != "all_gather")
                                throw UsageError("--ops: unknown collective '" + op +
                                                 "'; expected all_reduce, reduce_scatter or all_gather");
                          }}},
               {"--min-bytes", {true, [&](const std::string& v) { o.min_bytes = parse_size("--min-bytes", v); }}},
               {"--max-bytes", {true, [&](const std::string& v) { o.max_bytes = parse_size("--max-bytes", v); }}},
               {"--step-factor", {true, [&](const std::string& v) { o.step_factor = parse_int("--step-factor", v, 2, 1024); }}},
               {"--iters", {true, [&](const std::string& v) { o.iters = parse_int("--iters", v, 1, 100000); }}},
               {"--warmup", {true, [&](const std::string& v) { o.warmup = parse_int("--warmup", v, 0, 100000); }}},
               {"--dtype", {true, [&](const std::string& v) {
                              if (v != "float" && v != "bfloat16")
                                throw UsageError("--dtype: expected float or bfloat16, got '" + v + "'");
                              o.dtype = v;
                            }}},
               {"--gpus", {true, [&](const std::string& v) { o.gpus = static_cast<int>(parse_int("--gpus", v, 0, 1024)); }}},
               {"--out", output_flag(o.out)}});
  if (o.min_bytes > o.max_bytes)
    throw UsageError("--min-bytes (" + std::to_string(o.min_bytes) + ") must not exceed --max-bytes (" +
                     std::to_string(o.max_bytes) + ")");
  return o;
}

BucketPlan make_bucket_plan(const MlpStepOptions& o) {
  BucketPlan plan;
  const std::int64_t bytes = o.hidden * o.ffn * 2;  // bf16, same for w_in and w_out
  for (std::int64_t l = o.layers; l-- > 0;)
    for (const bool w_out : {true, false})
      plan.tensors.push_back({"layers." + std::to_string(l) + (w_out ? ".w_out" : ".w_in"), l, w_out, bytes, 0, 0});
  const double limits[2] = {o.first_bucket_mb * kMiB, o.bucket_mb * kMiB};
  PlanBucket open;
  std::size_t limit_index = 0;
  for (std::size_t i = 0; i < plan.tensors.size(); ++i) {
    if (open.count == 0) {
      open.first = i;
      open.offset_bytes = plan.total_bytes;
    }
    plan.tensors[i].bucket = static_cast<std::int64_t>(plan.buckets.size());
    plan.tensors[i].offset_bytes = plan.total_bytes;
    plan.total_bytes += plan.tensors[i].bytes;
    open.bytes += plan.tensors[i].bytes;
    ++open.count;
    if (static_cast<double>(open.bytes) >= limits[limit_index]) {
      plan.buckets.push_back(open);
      open = {};
      limit_index = 1;
    }
  }
  if (open.count > 0) plan.buckets.push_back(open);
  return plan;
}

std::string bucket_plan_json(const MlpStepOptions& o, const BucketPlan& plan) {
  JsonWriter w;
  w.begin_object();
  w.field("layers", o.layers).field("hidden", o.hidden).field("ffn", o.ffn);
  w.field("bucket_cap_mb", o.bucket_mb).field("first_bucket_mb", o.first_bucket_mb);
  w.field("total_bytes", plan.total_bytes);
  w.key("buckets").begin_array();
  for (std::size_t b = 0; b < plan.buckets.size(); ++b) {
    const PlanBucket& k = plan.buckets[b];
    std::string names;
    for (std::size_t i = k.first; i < k.first + k.count; ++i) names += (names.empty() ? "" : ",") + plan.tensors[i].name;
    w.begin_object().field("index", static_cast<std::int64_t>(b)).field("bytes", k.bytes).field("tensors", names).end_object();
  }
  w.end_array().end_object();
  return w.str();
}

}  // namespace stepsim::validate
