// SPDX-License-Identifier: Apache-2.0
// Kineto trace reader: bytes (plain or gzip, hashed as they are read) → nlohmann's SAX parser →
// one small DOM per element of traceEvents, reduced at once to the few records stepsim keeps;
// then launches are joined to GPU events and CPU ops (kineto.hpp has the rules).
#include "validate/kineto.hpp"

#include "sim/support/error.hpp"
#include "sim/support/input_file.hpp"
#include "sim/support/json_reader.hpp"
#include "validate/sha256.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <istream>
#include <limits>
#include <optional>
#include <streambuf>
#include <tuple>
#include <unordered_map>

namespace stepsim::validate {

namespace {

using nlohmann::json;

constexpr std::size_t kChunk = 1 << 20;
constexpr std::uintmax_t kMaxJsonBytes = std::uintmax_t{16} << 30;
constexpr std::size_t kMaxDepth = 64;
constexpr std::int64_t kMaxDurationNs = std::int64_t{86400} * 1000000000;
/// The longest run of whitespace between tokens and the longest string the reader takes: the
/// JSON parser keeps every byte of a token it is reading (whitespace before it included), so a
/// gzipped file of a few MB could otherwise hold GBs in one token. Real traces stay far below.
constexpr std::uintmax_t kMaxTokenBytes = std::uintmax_t{16} << 20;
const std::string kExpected = "a PyTorch profiler trace (Kineto Chrome-trace JSON, .json or .json.gz)";

/// The file's bytes as a stream of JSON text: inflated when the file starts with gzip's magic
/// (concatenated members included), hashed as stored.
class TraceBytes final : public std::streambuf {
 public:
  /// `read(buf, n)`: up to n more bytes of the file into buf, 0 at its end.
  using ReadSome = std::function<std::size_t(char*, std::size_t)>;
  /// `size_hint`: the file's size, when known, so a small file does not get 1 MiB buffers.
  TraceBytes(ReadSome read, std::string source, Sha256& sha, std::uintmax_t size_hint)
      : read_(std::move(read)), source_(std::move(source)), sha_(sha),
        raw_(static_cast<std::size_t>(std::clamp<std::uintmax_t>(size_hint + 1, 4096, kChunk))), out_(raw_.size()) {
    raw_len_ = read_raw();
    gzip_ = raw_len_ >= 2 && static_cast<unsigned char>(raw_[0]) == 0x1f && static_cast<unsigned char>(raw_[1]) == 0x8b;
    if (gzip_) {
      if (inflateInit2(&z_, 15 + 16) != Z_OK) throw InputError(source_, "", "cannot start gzip decompression");
      z_open_ = true;
      z_.next_in = reinterpret_cast<Bytef*>(raw_.data());
      z_.avail_in = static_cast<uInt>(raw_len_);
    }
  }
  ~TraceBytes() override {
    if (z_open_) inflateEnd(&z_);
  }
  TraceBytes(const TraceBytes&) = delete;
  TraceBytes& operator=(const TraceBytes&) = delete;
  bool gzipped() const { return gzip_; }
  std::uintmax_t produced() const { return produced_; }

 protected:
  int_type underflow() override {
    if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
    const std::size_t n = gzip_ ? inflate_some() : plain_some();
    if (n == 0) return traits_type::eof();
    produced_ += n;
    if (produced_ > kMaxJsonBytes)
      throw InputError(source_, "", fmt::format("holds more than {} of JSON (the most stepsim reads), expected {}",
                                                     format_byte_limit(kMaxJsonBytes), kExpected));
    check_tokens(n);
    setg(out_.data(), out_.data(), out_.data() + n);
    return traits_type::to_int_type(out_[0]);
  }

 private:
  /// Follows strings and whitespace over the bytes just produced (out_[0, n)).
  void check_tokens(std::size_t n) {
    const std::uintmax_t base = produced_ - n;
    for (std::size_t i = 0; i < n; ++i) {
      const char c = out_[i];
      if (in_string_) {
        if (escaped_) escaped_ = false;
        else if (c == '\\') escaped_ = true;
        else if (c == '"') in_string_ = false, run_ = 0;
        if (in_string_ && ++run_ > kMaxTokenBytes)
          throw InputError(source_, "", fmt::format("holds a JSON string longer than {} (from byte {}), expected {}",
                                                    format_byte_limit(kMaxTokenBytes), run_start_, kExpected));
      } else if (c == '"') {
        in_string_ = true, run_ = 0, run_start_ = base + i;
      } else if (c == '{' || c == '}' || c == '[' || c == ']' || c == ',' || c == ':') {
        run_ = 0;
      } else {  // whitespace, a number or a literal: the parser keeps all of it until the next token
        if (run_ == 0) run_start_ = base + i;
        if (++run_ > kMaxTokenBytes)
          throw InputError(source_, "", fmt::format("holds more than {} of whitespace or one number in a row (from byte "
                                                    "{}), expected {}", format_byte_limit(kMaxTokenBytes), run_start_, kExpected));
      }
    }
  }

  std::size_t read_raw() {
    const std::size_t n = read_(raw_.data(), raw_.size());
    sha_.update(std::string_view(raw_.data(), n));
    return n;
  }

  std::size_t plain_some() {
    if (first_) {  // the bytes already read to look for gzip's magic
      first_ = false;
      std::copy(raw_.begin(), raw_.begin() + static_cast<std::ptrdiff_t>(raw_len_), out_.begin());
      if (raw_len_ > 0) return raw_len_;
    }
    const std::size_t n = read_(out_.data(), out_.size());
    sha_.update(std::string_view(out_.data(), n));
    return n;
  }

  std::size_t inflate_some() {
    for (;;) {
      if (z_.avail_in == 0 && !raw_eof_) {
        raw_len_ = read_raw();
        raw_eof_ = raw_len_ == 0;
        z_.next_in = reinterpret_cast<Bytef*>(raw_.data());
        z_.avail_in = static_cast<uInt>(raw_len_);
      }
      if (member_done_) {
        if (z_.avail_in == 0) return 0;  // the end of the last member
        earlier_members_ += z_.total_in;  // inflateReset restarts total_in
        if (inflateReset(&z_) != Z_OK) throw InputError(source_, "", "cannot restart gzip decompression");
        member_done_ = false;
      }
      z_.next_out = reinterpret_cast<Bytef*>(out_.data());
      z_.avail_out = static_cast<uInt>(out_.size());
      const int rc = inflate(&z_, Z_NO_FLUSH);
      const std::size_t n = out_.size() - z_.avail_out;
      if (rc == Z_STREAM_END) member_done_ = true;
      else if (rc == Z_BUF_ERROR && raw_eof_ && n == 0)
        throw InputError(source_, "", "its gzip data ends early (a truncated file?), expected " + kExpected);
      else if (rc != Z_OK && rc != Z_BUF_ERROR)
        throw InputError(source_, "", fmt::format("is not valid gzip data ({}) at compressed byte {}, expected {}",
                                                       z_.msg ? z_.msg : "inflate failed", earlier_members_ + z_.total_in,
                                                       kExpected));
      if (n > 0) return n;
      if (raw_eof_ && !member_done_ && z_.avail_in == 0)
        throw InputError(source_, "", "its gzip data ends early (a truncated file?), expected " + kExpected);
    }
  }

  ReadSome read_;
  std::string source_;
  Sha256& sha_;
  std::vector<char> raw_, out_;
  std::size_t raw_len_ = 0;
  bool gzip_ = false, first_ = true, raw_eof_ = false, member_done_ = false, z_open_ = false;
  bool in_string_ = false, escaped_ = false;
  std::uintmax_t earlier_members_ = 0;  ///< compressed bytes of the gzip members before the current one
  std::uintmax_t run_ = 0, run_start_ = 0;
  z_stream z_{};
  std::uintmax_t produced_ = 0;
};

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

/// A JSON number's text as integer nanoseconds of a value in microseconds ("1712195495505583.0",
/// "4458676983543.183", "17"); false when it is not a plain decimal in range.
bool micros_text_to_ns(std::string_view s, std::int64_t& ns) {
  bool neg = false;
  std::size_t i = 0;
  if (i < s.size() && s[i] == '-') neg = true, ++i;
  std::int64_t whole = 0;
  std::size_t digits = 0;
  for (; i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])); ++i, ++digits) {
    if (whole > (std::numeric_limits<std::int64_t>::max() / 1000 - 9) / 10) return false;
    whole = whole * 10 + (s[i] - '0');
  }
  if (digits == 0) return false;
  std::int64_t frac = 0;
  int frac_digits = 0;
  bool round_up = false;
  if (i < s.size() && s[i] == '.') {
    for (++i; i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])); ++i) {
      if (frac_digits < 3) frac = frac * 10 + (s[i] - '0'), ++frac_digits;
      else if (frac_digits == 3) round_up = s[i] >= '5', ++frac_digits;
    }
  }
  if (i != s.size()) return false;  // an exponent: left to the double
  for (int d = std::min(frac_digits, 3); d < 3; ++d) frac *= 10;
  ns = whole * 1000 + frac + (round_up ? 1 : 0);
  if (neg) ns = -ns;
  return true;
}

/// Comm sizes of an event's args, when it has any.
bool read_comm_args(const JsonReader& args, KinetoCollective& c) {
  bool any = false;
  if (args.is_string("Collective name")) c.name = args.string("Collective name"), any = true;
  if (args.has("In msg nelems")) c.in_nelems = args.integer("In msg nelems", 0, std::int64_t{1} << 50), any = true;
  if (args.has("Out msg nelems")) c.out_nelems = args.integer("Out msg nelems", 0, std::int64_t{1} << 50), any = true;
  if (args.has("Group size")) c.group_size = args.integer("Group size", 1, std::int64_t{1} << 24), any = true;
  if (args.is_string("dtype")) c.dtype = args.string("dtype");
  return any;
}

/// Everything read from the events before the join.
struct RawOp {
  std::uint32_t name = 0;
  std::int64_t thread = 0;  ///< (pid, tid) as a small id
  std::int64_t ts_ns = 0, dur_ns = 0;
  std::uint32_t input_dims = 0;  ///< index into Reader::dims_ (0: not recorded); shapes repeat every step
  std::uint32_t input_types = 0;  ///< index into Reader::dims_ of `Input type` (0: not recorded)
  std::int32_t comm = -1;  ///< index into the comm args read from ops
  bool step = false;
  std::int64_t step_number = 0;
  std::int64_t index = 0;  ///< position in traceEvents, for messages
};

struct RawLaunch {
  std::int64_t correlation = 0;
  std::int64_t thread = 0;
  std::int64_t ts_ns = 0, dur_ns = 0;
};

struct RawGpu {
  KinetoKernel k;
  std::int64_t ts_ns = 0;
  std::int64_t correlation = -1;
  std::int32_t own_comm = -1;  ///< index into comm args read from the kernel's own args
};

enum class EventKind { None, Gpu, Launch, Op };

}  // namespace

bool blocking_call(std::string_view name) {
  if (name.find("Synchronize") != std::string_view::npos) return true;
  // The driver API's synchronous copies (cuMemcpyDtoH_v2, cuMemcpy, ...) and cuMemFree.
  if (name.substr(0, 8) == "cuMemcpy" && name.find("Async") == std::string_view::npos) return true;
  if (name.substr(0, 9) == "cuMemFree" && name.find("Async") == std::string_view::npos) return true;
  for (std::string_view api : {"cuda", "hip"})
    if (name.substr(0, api.size()) == api)
      for (std::string_view call : {"Memcpy", "Memcpy2D", "MemcpyWithStream", "Free"})
        if (name.substr(api.size()) == call) return true;
  return false;
}

namespace {

EventKind kind_of(const std::string& cat) {
  const std::string c = lower(cat);
  if (c == "kernel" || c == "gpu_memcpy" || c == "memcpy" || c == "gpu_memset" || c == "memset") return EventKind::Gpu;
  if (c == "cuda_runtime" || c == "cuda_driver" || c == "runtime") return EventKind::Launch;
  if (c == "cpu_op" || c == "operator" || c == "user_annotation") return EventKind::Op;
  return EventKind::None;
}

class Reader {
 public:
  explicit Reader(KinetoTrace& t) : t_(t) {}

  std::uint32_t intern(const std::string& s) {
    const auto [it, fresh] = ids_.try_emplace(s, static_cast<std::uint32_t>(t_.names.size()));
    if (fresh) t_.names.push_back(s);
    return it->second;
  }

  std::uint32_t intern_dims(const std::string& text) {
    const auto [it, fresh] = dims_ids_.try_emplace(text, static_cast<std::uint32_t>(dims_.size()));
    if (fresh) dims_.push_back(it->first);
    return it->second;
  }

  std::int64_t thread_id(const json& e) {
    const std::string key = (e.contains("pid") ? e["pid"].dump() : "") + "/" + (e.contains("tid") ? e["tid"].dump() : "");
    const auto [it, fresh] = threads_.try_emplace(key, static_cast<std::int64_t>(threads_.size()));
    return it->second;
  }

  /// One element of traceEvents. `ts_text` / `dur_text`: the numbers' JSON text when they were
  /// written with a fraction (empty otherwise).
  void event(const json& e, std::int64_t index, const std::string& ts_text, const std::string& dur_text) {
    ++t_.events;
    const std::string where = fmt::format("/traceEvents/{}", index);
    if (!e.is_object())
      throw InputError(t_.source, where, fmt::format("expected an event object, got {}", e.type_name()));
    const JsonReader r(e, t_.source, where);
    const auto ph = e.find("ph");
    if (ph != e.end() && !ph->is_string())
      r.fail("ph", fmt::format("expected the event's phase as a string (\"X\" for a complete event), got {}", ph->type_name()));
    if (ph == e.end() || *ph != "X") return;
    const auto cat = e.find("cat");
    if (cat != e.end() && !cat->is_string())
      r.fail("cat", fmt::format("expected the event's category as a string (\"kernel\", \"cpu_op\", ...), got {}", cat->type_name()));
    if (cat == e.end()) return;
    const EventKind kind = kind_of(cat->get<std::string>());
    if (kind == EventKind::None) return;
    const std::int64_t ts = time_ns(r, "ts", ts_text, "start in µs");
    const std::int64_t dur = time_ns(r, "dur", dur_text, "duration in µs");
    if (dur < 0) r.fail("dur", fmt::format("expected a duration ≥ 0 µs, got {}", e["dur"].dump()));
    if ((kind != EventKind::Launch || r.has("name")) && !r.is_string("name"))
      r.fail("name", r.has("name") ? fmt::format("expected the event's name as a string, got {}", e["name"].type_name())
                                   : std::string("required field is missing (the kernel's or op's name)"));
    const std::string name = r.is_string("name") ? r.string("name") : std::string();
    if (dur > kMaxDurationNs)
      r.fail("dur", fmt::format("expected a duration under 24 h (86,400,000,000 µs), got {}", e["dur"].dump()));
    std::optional<JsonReader> args;
    if (r.has("args")) args = r.object("args");

    if (kind == EventKind::Launch) {
      if (blocking_call(name)) blocking_.push_back({0, thread_id(e), ts, dur});
      if (!args || !args->has("correlation")) return;
      launches_.push_back({args->integer("correlation", 0, std::numeric_limits<std::int64_t>::max()), thread_id(e), ts, dur});
      ++t_.launches;
      return;
    }
    if (kind == EventKind::Op) {
      ++t_.cpu_ops;
      RawOp op;
      op.name = intern(name);
      op.thread = thread_id(e);
      op.ts_ns = ts;
      op.dur_ns = dur;
      op.index = index;
      if (name.rfind("ProfilerStep#", 0) == 0) {
        const std::string n = name.substr(13);
        if (n.empty() || n.size() > 15 || !std::all_of(n.begin(), n.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
          r.fail("name", fmt::format("expected ProfilerStep#N with N an integer, got '{}'", name));
        op.step = true;
        op.step_number = std::stoll(n);
      }
      if (args) {
        if (args->has("Input Dims")) {
          op.input_dims = intern_dims(args->value("Input Dims").dump());
          if (args->has("Input type")) op.input_types = intern_dims(args->value("Input type").dump());
          t_.shapes_recorded = true;
        }
        KinetoCollective c;
        if (read_comm_args(*args, c)) {
          op.comm = static_cast<std::int32_t>(comm_.size());
          comm_.push_back(std::move(c));
        }
      }
      ops_.push_back(std::move(op));
      return;
    }
    // GPU work.
    RawGpu g;
    const std::string c = lower(cat->get<std::string>());
    g.k.cls = c.find("memcpy") != std::string::npos   ? KernelClass::Memcpy
              : c.find("memset") != std::string::npos ? KernelClass::Memset
                                                      : classify_kernel(name);
    g.k.name = intern(name);
    g.ts_ns = ts;
    g.k.dur_ns = dur;
    const std::int64_t big = std::numeric_limits<std::int32_t>::max();
    g.k.device = static_cast<std::int32_t>(args && args->has("device") ? args->integer("device", 0, big)
                                           : e.contains("pid") && e["pid"].is_number_unsigned() ? r.integer("pid", 0, big)
                                                                                         : 0);
    g.k.stream = args && args->has("stream") && args->value("stream").is_number_unsigned()
                     ? args->integer("stream", 0, std::numeric_limits<std::int64_t>::max())
                 : e.contains("tid") && e["tid"].is_number_unsigned() ? r.integer("tid", 0, std::numeric_limits<std::int64_t>::max())
                                                                      : 0;
    if (args && args->has("correlation"))
      g.correlation = args->integer("correlation", 0, std::numeric_limits<std::int64_t>::max());
    if (args && args->has("bytes") && args->value("bytes").is_number())
      g.k.bytes = args->integer("bytes", 0, std::numeric_limits<std::int64_t>::max());
    if (g.k.cls == KernelClass::Memcpy) {
      const std::string mk = args && args->is_string("kind") ? args->string("kind") : std::string();
      g.k.host_copy = name.find("HtoD") != std::string::npos || name.find("DtoH") != std::string::npos ||
                      name.find("HtoH") != std::string::npos || mk.find('H') != std::string::npos;
    }
    if (g.k.cls == KernelClass::Nccl && args) {
      KinetoCollective col;
      if (read_comm_args(*args, col)) {
        col.args_from_kernel = true;
        g.own_comm = static_cast<std::int32_t>(comm_.size());
        comm_.push_back(std::move(col));
      }
    }
    gpu_.push_back(std::move(g));
  }

  void top_level(const std::string& key, const json& v) {
    if (key == "traceEvents")  // not an array: an array is read event by event
      throw InputError(t_.source, "/traceEvents", fmt::format("expected an array of events, got {}", v.type_name()));
    if (key == "deviceProperties") {
      if (!v.is_array()) throw InputError(t_.source, "/deviceProperties", fmt::format("expected an array of devices, got {}", v.type_name()));
      for (std::size_t i = 0; i < v.size(); ++i) {
        const std::string where = fmt::format("/deviceProperties/{}", i);
        if (!v[i].is_object()) throw InputError(t_.source, where, fmt::format("expected a device object, got {}", v[i].type_name()));
        const JsonReader d(v[i], t_.source, where);
        KinetoDevice dev;
        dev.id = d.integer_or("id", static_cast<std::int64_t>(i), 0, 1 << 20);
        dev.name = d.is_string("name") ? d.string("name") : "";
        dev.sms = d.integer_or("numSms", 0, 0, 1 << 20);
        dev.memory_bytes = d.number_or("totalGlobalMem", 0, Check::NonNegative);
        dev.compute_major = d.integer_or("computeMajor", 0, 0, 1 << 10);
        dev.compute_minor = d.integer_or("computeMinor", 0, 0, 1 << 10);
        t_.devices.push_back(std::move(dev));
      }
    } else if (key == "distributedInfo") {
      if (!v.is_object()) throw InputError(t_.source, "/distributedInfo", fmt::format("expected an object, got {}", v.type_name()));
      const JsonReader d(v, t_.source, "/distributedInfo");
      t_.rank = d.integer_or("rank", -1, 0, 1 << 24);
      t_.world_size = d.integer_or("world_size", -1, 1, 1 << 24);
      if (t_.rank >= 0 && t_.world_size > 0 && t_.rank >= t_.world_size)
        d.fail("rank", fmt::format("expected a rank below world_size {}, got {}", t_.world_size, t_.rank));
      t_.backend = d.is_string("backend") ? d.string("backend") : "";
      t_.nccl_version = d.is_string("nccl_version") ? d.string("nccl_version") : "";
      if (d.has("pg_config") && d.value("pg_config").is_array()) {
        for (const JsonReader& pg : d.objects("pg_config", false)) {
          KinetoProcessGroup g;
          g.name = pg.is_string("pg_name") ? pg.string("pg_name") : "";
          g.description = pg.is_string("pg_desc") ? pg.string("pg_desc") : "";
          g.size = pg.integer_or("pg_size", 0, 0, 1 << 24);
          if (pg.has("ranks") && pg.value("ranks").is_array()) g.ranks = pg.integers("ranks", 0, 1 << 24);
          t_.process_groups.push_back(std::move(g));
        }
      }
    }
  }

  void finish();

 private:
  /// An op that launched GPU work, its recorded shapes and types parsed (only those are kept).
  KinetoCpuOp cpu_op(const RawOp& o) const;
  std::int64_t time_ns(const JsonReader& r, std::string_view key, const std::string& text, const char* what) {
    if (!r.has(key)) r.fail(key, fmt::format("required field is missing (the event's {})", what));
    const json& v = r.value(key);
    if (!v.is_number()) r.fail(key, fmt::format("expected a number (the event's {}), got {}", what, v.type_name()));
    std::int64_t ns = 0;
    if (!text.empty() && micros_text_to_ns(text, ns)) return ns;
    const double d = v.get<double>();
    if (!(std::abs(d) < 9e15)) r.fail(key, fmt::format("expected µs below 9e15, got {}", v.dump()));
    return static_cast<std::int64_t>(std::llround(d * 1000.0));
  }

  KinetoTrace& t_;
  std::unordered_map<std::string, std::uint32_t> ids_;
  std::unordered_map<std::string, std::int64_t> threads_;
  std::unordered_map<std::string, std::uint32_t> dims_ids_;
  std::vector<std::string> dims_ = {std::string()};
  std::vector<RawOp> ops_;
  std::vector<RawLaunch> launches_;
  std::vector<RawLaunch> blocking_;  ///< runtime calls that wait for the GPU (correlation unused)
  std::vector<RawGpu> gpu_;
  std::vector<KinetoCollective> comm_;
};

bool contains_lower(const std::string& name, std::string_view what) { return lower(name).find(what) != std::string::npos; }

KinetoCpuOp Reader::cpu_op(const RawOp& o) const {
  KinetoCpuOp op;
  op.name = o.name;
  const json dims = json::parse(dims_[o.input_dims], nullptr, false);
  if (dims.is_array())
    for (const json& d : dims) {
      std::vector<std::int64_t> shape;
      if (d.is_array())
        for (const json& x : d) {
          if (!x.is_number_integer()) {
            shape.clear();
            break;
          }
          shape.push_back(x.get<std::int64_t>());
        }
      op.input_dims.push_back(std::move(shape));
    }
  const json types = json::parse(dims_[o.input_types], nullptr, false);
  if (types.is_array())
    for (const json& x : types) op.input_types.push_back(x.is_string() ? x.get<std::string>() : std::string());
  return op;
}

void Reader::finish() {
  // Steps, by start; one number once.
  std::vector<std::size_t> step_ops;
  for (std::size_t i = 0; i < ops_.size(); ++i)
    if (ops_[i].step) step_ops.push_back(i);
  std::sort(step_ops.begin(), step_ops.end(), [&](std::size_t a, std::size_t b) { return ops_[a].ts_ns < ops_[b].ts_ns; });
  std::int64_t origin = std::numeric_limits<std::int64_t>::max();
  for (std::size_t i : step_ops) origin = std::min(origin, ops_[i].ts_ns);
  for (const RawGpu& g : gpu_) origin = std::min(origin, g.ts_ns);
  if (origin == std::numeric_limits<std::int64_t>::max()) origin = 0;
  origin = origin >= 0 ? origin / 1000 * 1000 : -((-origin + 999) / 1000 * 1000);  // whole µs
  t_.origin_us = origin / 1000;
  std::map<std::int64_t, std::int64_t> seen_step;
  std::vector<std::int64_t> step_thread;
  for (std::size_t i : step_ops) {
    const RawOp& o = ops_[i];
    if (const auto it = seen_step.find(o.step_number); it != seen_step.end())
      throw InputError(t_.source, fmt::format("/traceEvents/{}/name", o.index),
                       fmt::format("expected each ProfilerStep number once, got ProfilerStep#{} again (first at "
                                   "/traceEvents/{})", o.step_number, it->second));
    seen_step.emplace(o.step_number, o.index);
    // One step after the other (1 µs of slack for rounding in the trace).
    if (!t_.steps.empty() && o.ts_ns - origin < t_.steps.back().start_ns + t_.steps.back().dur_ns - 1000)
      throw InputError(t_.source, fmt::format("/traceEvents/{}/ts", o.index),
                       fmt::format("expected ProfilerStep annotations one after the other, got ProfilerStep#{} starting "
                                   "inside ProfilerStep#{}", o.step_number, t_.steps.back().number));
    t_.steps.push_back({o.step_number, o.ts_ns - origin, o.dur_ns});
    step_thread.push_back(o.thread);
  }

  // Launches by correlation; each launch's enclosing ops by a sweep per thread.
  struct LaunchInfo {
    std::int32_t op = -1;    ///< innermost enclosing op (index into ops_)
    std::int32_t comm = -1;  ///< nearest enclosing op's comm args
    bool optimizer = false, backward = false;
    std::int32_t step = -1;
  };
  std::vector<std::size_t> by_thread(launches_.size());
  for (std::size_t i = 0; i < by_thread.size(); ++i) by_thread[i] = i;
  std::sort(by_thread.begin(), by_thread.end(), [&](std::size_t a, std::size_t b) {
    return std::tie(launches_[a].thread, launches_[a].ts_ns) < std::tie(launches_[b].thread, launches_[b].ts_ns);
  });
  std::vector<std::size_t> op_order(ops_.size());
  for (std::size_t i = 0; i < op_order.size(); ++i) op_order[i] = i;
  std::sort(op_order.begin(), op_order.end(), [&](std::size_t a, std::size_t b) {
    const RawOp &x = ops_[a], &y = ops_[b];
    if (x.thread != y.thread) return x.thread < y.thread;
    if (x.ts_ns != y.ts_ns) return x.ts_ns < y.ts_ns;
    return x.dur_ns > y.dur_ns;  // the enclosing op first
  });
  std::vector<LaunchInfo> info(launches_.size());
  struct Open {
    std::size_t op;
    std::int64_t end;
    std::int32_t comm;
    bool optimizer, backward;
  };
  std::vector<Open> stack;
  std::size_t oi = 0;
  std::int64_t thread = std::numeric_limits<std::int64_t>::min();
  for (std::size_t li : by_thread) {
    const RawLaunch& l = launches_[li];
    if (l.thread != thread) {
      thread = l.thread;
      stack.clear();
      while (oi < op_order.size() && ops_[op_order[oi]].thread < thread) ++oi;
    }
    while (oi < op_order.size() && ops_[op_order[oi]].thread == thread && ops_[op_order[oi]].ts_ns <= l.ts_ns) {
      const RawOp& o = ops_[op_order[oi]];
      while (!stack.empty() && stack.back().end <= o.ts_ns) stack.pop_back();
      const std::string& name = t_.names[o.name];
      Open open{op_order[oi], o.ts_ns + o.dur_ns, o.comm, contains_lower(name, "optimizer"), contains_lower(name, "backward")};
      if (!stack.empty()) {
        if (open.comm < 0) open.comm = stack.back().comm;
        open.optimizer = open.optimizer || stack.back().optimizer;
        open.backward = open.backward || stack.back().backward;
      }
      stack.push_back(open);
      ++oi;
    }
    while (!stack.empty() && stack.back().end < l.ts_ns) stack.pop_back();
    LaunchInfo& in = info[li];
    if (!stack.empty()) {
      in.op = static_cast<std::int32_t>(stack.back().op);
      in.comm = stack.back().comm;
      in.optimizer = stack.back().optimizer;
      in.backward = stack.back().backward;
    }
    // The step annotation holding the launch (steps do not overlap); another thread than the
    // step's launches for the autograd engine.
    const std::int64_t rel = l.ts_ns - origin;
    auto it = std::upper_bound(t_.steps.begin(), t_.steps.end(), rel,
                               [](std::int64_t v, const KinetoStep& s) { return v < s.start_ns; });
    if (it != t_.steps.begin()) {
      --it;
      if (rel <= it->start_ns + it->dur_ns) {
        in.step = static_cast<std::int32_t>(it - t_.steps.begin());
        if (l.thread != step_thread[static_cast<std::size_t>(in.step)]) in.backward = true;
      }
    }
  }
  std::vector<std::size_t> by_corr(launches_.size());
  for (std::size_t i = 0; i < by_corr.size(); ++i) by_corr[i] = i;
  std::sort(by_corr.begin(), by_corr.end(), [&](std::size_t a, std::size_t b) { return launches_[a].correlation < launches_[b].correlation; });

  // GPU events: joined to their launch.
  std::int64_t unlaunched = 0;
  std::vector<std::int32_t> op_remap(ops_.size(), -1);
  std::map<std::int32_t, std::int64_t> per_device;
  for (RawGpu& g : gpu_) {
    KinetoKernel& k = g.k;
    k.start_ns = g.ts_ns - origin;
    const LaunchInfo* in = nullptr;
    if (g.correlation >= 0) {
      const auto it = std::lower_bound(by_corr.begin(), by_corr.end(), g.correlation,
                                       [&](std::size_t i, std::int64_t c) { return launches_[i].correlation < c; });
      if (it != by_corr.end() && launches_[*it].correlation == g.correlation) in = &info[*it];
    }
    if (in) {
      const RawLaunch& l = launches_[static_cast<std::size_t>(in - info.data())];
      k.launched = true;
      k.launch_ns = l.ts_ns - origin;
      k.launch_dur_ns = l.dur_ns;
      k.launch_thread = static_cast<std::int32_t>(l.thread);
      k.step = in->step;
      if (in->op >= 0) {
        std::int32_t& m = op_remap[static_cast<std::size_t>(in->op)];
        if (m < 0) {
          m = static_cast<std::int32_t>(t_.ops.size());
          const RawOp& o = ops_[static_cast<std::size_t>(in->op)];
          t_.ops.push_back(cpu_op(o));
        }
        k.cpu_op = m;
      }
    } else {
      ++unlaunched;
      // Without its launch: the step whose annotation holds the event's start.
      auto it = std::upper_bound(t_.steps.begin(), t_.steps.end(), k.start_ns,
                                 [](std::int64_t v, const KinetoStep& s) { return v < s.start_ns; });
      if (it != t_.steps.begin() && k.start_ns <= (it - 1)->start_ns + (it - 1)->dur_ns)
        k.step = static_cast<std::int32_t>(it - 1 - t_.steps.begin());
    }
    switch (k.cls) {
      case KernelClass::Nccl: k.phase = MeasuredPhase::Communication; break;
      case KernelClass::Memcpy:
      case KernelClass::Memset: k.phase = MeasuredPhase::Overhead; break;
      default:
        k.phase = in && in->optimizer  ? MeasuredPhase::Optimizer
                  : in && in->backward ? MeasuredPhase::Backward
                                       : MeasuredPhase::Forward;
    }
    if (k.cls == KernelClass::Nccl) {
      KinetoCollective c = g.own_comm >= 0 ? comm_[static_cast<std::size_t>(g.own_comm)]
                           : in && in->comm >= 0 ? comm_[static_cast<std::size_t>(in->comm)]
                                                 : KinetoCollective{};
      const NcclKernelName n = parse_nccl_kernel_name(t_.names[k.name]);
      c.op = n.op, c.algorithm = n.algorithm, c.protocol = n.protocol;
      k.collective = static_cast<std::int32_t>(t_.collectives.size());
      t_.collectives.push_back(std::move(c));
    }
    if (k.cls == KernelClass::Unknown) ++t_.unknown_kernels[t_.names[k.name]];
    ++per_device[k.device];
    t_.kernels.push_back(k);
  }
  std::stable_sort(t_.kernels.begin(), t_.kernels.end(),
                   [](const KinetoKernel& a, const KinetoKernel& b) { return a.start_ns < b.start_ns; });
  std::int64_t most = 0;
  for (const auto& [dev, n] : per_device)
    if (n > most) most = n, t_.device = dev;
  if (per_device.size() > 1)
    t_.notes.push_back(fmt::format("GPU events on {} devices; the figures are device {}'s ({} of {} events)",
                                   per_device.size(), t_.device, most, t_.kernels.size()));
  if (unlaunched > 0)
    t_.notes.push_back(fmt::format("{} GPU event{} without a launch event (no matching correlation id): step by start "
                                   "time, phase forward",
                                   unlaunched, unlaunched == 1 ? "" : "s"));
  if (t_.steps.empty()) {
    std::int64_t end = 0;
    for (const KinetoKernel& k : t_.kernels) end = std::max(end, k.start_ns + k.dur_ns);
    const std::int64_t start = t_.kernels.empty() ? 0 : t_.kernels.front().start_ns;
    t_.steps.push_back({0, start, end - start});
    for (KinetoKernel& k : t_.kernels) k.step = 0;
    t_.notes.push_back("no ProfilerStep#N annotations (the trace was not recorded with profiler.step()): the whole "
                       "trace is one step, numbered 0");
  }
  if (t_.kernels.empty())
    t_.notes.push_back("no GPU events (kernels, memcpys, memsets): was the trace recorded with ProfilerActivity.CUDA?");
  for (const RawLaunch& b : blocking_)
    t_.blocking_calls.push_back({static_cast<std::int32_t>(b.thread), b.ts_ns - origin, b.dur_ns});
  std::sort(t_.blocking_calls.begin(), t_.blocking_calls.end(), [](const KinetoBlockingCall& a, const KinetoBlockingCall& b) {
    return std::tie(a.thread, a.start_ns) < std::tie(b.thread, b.start_ns);
  });
  std::int64_t outside = 0;
  for (const KinetoKernel& k : t_.kernels) outside += k.step < 0;
  if (outside > 0)
    t_.notes.push_back(fmt::format("{} GPU event{} launched outside every ProfilerStep annotation, left out of the steps",
                                   outside, outside == 1 ? "" : "s"));
}

/// nlohmann SAX → one DOM per element of traceEvents (handed to Reader::event at once), and
/// the other top-level members whole (handed to Reader::top_level).
class Sax final : public nlohmann::json_sax<json> {
 public:
  Sax(Reader& reader, const std::string& source) : reader_(reader), source_(source) {}

  bool null() override { return put(nullptr); }
  bool boolean(bool v) override { return put(v); }
  bool number_integer(number_integer_t v) override { return put(v); }
  bool number_unsigned(number_unsigned_t v) override { return put(v); }
  bool number_float(number_float_t v, const string_t& text) override {
    if (in_event() && stack_.size() == 3) {
      if (key_ == "ts") ts_text_ = text;
      else if (key_ == "dur") dur_text_ = text;
    }
    return put(v);
  }
  bool string(string_t& v) override { return put(std::move(v)); }
  bool binary(binary_t& v) override { return put(json::binary(std::move(v))); }
  bool start_object(std::size_t) override { return open(json::object()); }
  bool key(string_t& k) override {
    key_ = std::move(k);
    return true;
  }
  bool end_object() override { return close(); }
  bool start_array(std::size_t) override {
    const bool events_array = stack_.size() == 1 && root_.is_object() && key_ == "traceEvents";
    if (!open(json::array())) return false;
    if (events_array) events_ = stack_.back();
    return true;
  }
  bool end_array() override { return close(); }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& ex) override {
    std::string what = ex.what();  // "[json.exception.parse_error.101] parse error at line 1, column 5: ..."
    if (const auto q = what.find("] "); q != std::string::npos) what = what.substr(q + 2);
    throw InputError(source_, "", fmt::format("is not valid JSON at byte {}: {} (expected {})", position, what, kExpected));
  }

  bool saw_events() const { return events_ != nullptr; }
  const json& root() const { return root_; }

 private:
  bool in_event() const { return events_ != nullptr && stack_.size() >= 3 && stack_[1] == events_; }

  json* place(json&& v) {
    if (stack_.empty()) {
      if (!v.is_object())  // refused before a bare array is built whole
        throw InputError(source_, "", fmt::format("expected {}: a JSON object with traceEvents, got {}", kExpected, v.type_name()));
      root_ = std::move(v);
      return &root_;
    }
    json* top = stack_.back();
    if (top == events_) {  // an element of traceEvents: built apart, handed over when complete
      event_ = std::move(v);
      return &event_;
    }
    if (top->is_array()) {
      top->push_back(std::move(v));
      return &top->back();
    }
    if (top->contains(key_))
      throw InputError(source_, in_event() ? fmt::format("/traceEvents/{}", index_) : std::string(),
                       fmt::format("duplicate key '{}' in one JSON object, expected each key once", key_));
    json& slot = (*top)[key_];
    slot = std::move(v);
    return &slot;
  }

  template <class V>
  bool put(V&& v) {
    json* p = place(json(std::forward<V>(v)));
    if (!stack_.empty() && p == &event_ && stack_.back() == events_) dispatch();
    else if (stack_.size() == 1) top_done(key_, p);
    return true;
  }

  bool open(json&& v) {
    if (stack_.size() >= kMaxDepth)
      throw InputError(source_, "", fmt::format("nests JSON deeper than {} levels, expected {}", kMaxDepth, kExpected));
    json* p = place(std::move(v));
    if (stack_.size() == 1 && p != &root_) top_key_ = key_;
    stack_.push_back(p);
    return true;
  }

  bool close() {
    json* done = stack_.back();
    stack_.pop_back();
    if (done == events_) return true;
    if (done == &event_ && !stack_.empty() && stack_.back() == events_) dispatch();
    else if (stack_.size() == 1) top_done(top_key_, done);
    return true;
  }

  /// A member of the top-level object, complete.
  void top_done(const std::string& key, json* v) {
    reader_.top_level(key, *v);
    *v = nullptr;  // read: keep no copy of large members (INFO logs)
  }

  void dispatch() {
    reader_.event(event_, index_++, ts_text_, dur_text_);
    event_ = nullptr;
    ts_text_.clear();
    dur_text_.clear();
  }

  Reader& reader_;
  const std::string& source_;
  json root_, event_;
  json* events_ = nullptr;
  std::vector<json*> stack_;
  std::string key_, top_key_, ts_text_, dur_text_;
  std::int64_t index_ = 0;
};

}  // namespace

namespace {

KinetoTrace parse_trace(TraceBytes::ReadSome read, const std::string& source, std::uintmax_t file_bytes) {
  KinetoTrace t;
  t.source = source;
  t.file_bytes = file_bytes;
  Sha256 sha;
  TraceBytes bytes(std::move(read), source, sha, file_bytes);
  std::istream in(&bytes);
  Reader reader(t);
  Sax sax(reader, t.source);
  json::sax_parse(in, &sax, nlohmann::json::input_format_t::json, true);
  t.gzipped = bytes.gzipped();
  t.json_bytes = bytes.produced();
  if (!sax.root().is_object())
    throw InputError(source, "", fmt::format("expected {}: a JSON object with traceEvents, got {}", kExpected, sax.root().type_name()));
  if (!sax.saw_events()) {
    if (sax.root().contains("traceEvents"))
      throw InputError(source, "/traceEvents", fmt::format("expected an array of events, got {}", sax.root()["traceEvents"].type_name()));
    throw InputError(source, "/traceEvents",
                     sax.root().contains("schema") ? "required field is missing: this is not a profiler trace (it has a 'schema' "
                                                     "key: a stepsim.measured/1 timeline?), expected " + kExpected
                                                   : "required field is missing, expected " + kExpected);
  }
  reader.finish();
  t.sha256 = sha.hex();
  return t;
}

}  // namespace

KinetoTrace read_kineto_trace(const std::string& path) {
  InputFile file(path, kExpected);
  return parse_trace([&file](char* buf, std::size_t n) { return file.read_some(buf, n); }, path, file.size_bytes());
}

KinetoTrace parse_kineto_trace(std::string_view bytes, const std::string& source) {
  std::size_t at = 0;
  return parse_trace(
      [&](char* buf, std::size_t n) {
        const std::size_t k = std::min(n, bytes.size() - at);
        std::copy(bytes.data() + at, bytes.data() + at + k, buf);
        at += k;
        return k;
      },
      source, bytes.size());
}

bool looks_like_kineto_trace(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return true;
  if (!std::filesystem::is_regular_file(path, ec)) return false;
  std::ifstream f(path, std::ios::binary);
  std::string head(64 << 10, '\0');
  f.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<std::size_t>(f.gcount()));
  if (head.size() >= 2 && static_cast<unsigned char>(head[0]) == 0x1f && static_cast<unsigned char>(head[1]) == 0x8b) return true;
  // A bare JSON array is Chrome's trace format (a MEASURED.json is always an object): the trace
  // reader says what it expects of it.
  if (const auto first = head.find_first_not_of(" \t\r\n"); first != std::string::npos && head[first] == '[') return true;
  return head.find("\"traceEvents\"") != std::string::npos || head.find("\"schemaVersion\"") != std::string::npos;
}

std::vector<KinetoTrace> read_kineto_traces(const std::vector<std::string>& paths) {
  if (paths.empty()) throw InputError("", "", "no trace given, expected " + kExpected);
  std::vector<std::string> files;
  for (const std::string& p : paths) {
    std::error_code ec;
    if (!std::filesystem::is_directory(p, ec)) {
      files.push_back(p);
      continue;
    }
    std::vector<std::string> in_dir;
    for (const auto& e : std::filesystem::directory_iterator(p, ec)) {
      const std::string name = e.path().filename().string();
      if (!name.empty() && name[0] == '.') continue;  // hidden (editor locks, partial downloads)
      const bool trace = (name.size() > 5 && name.compare(name.size() - 5, 5, ".json") == 0) ||
                         (name.size() > 8 && name.compare(name.size() - 8, 8, ".json.gz") == 0);
      if (trace && e.is_regular_file(ec)) in_dir.push_back(e.path().string());
    }
    if (ec) throw InputError(p, "", fmt::format("cannot list the folder: {}", ec.message()));
    if (in_dir.empty()) throw InputError(p, "", "is a folder without *.json or *.json.gz files, expected traces in it");
    std::sort(in_dir.begin(), in_dir.end());
    files.insert(files.end(), in_dir.begin(), in_dir.end());
  }
  std::vector<KinetoTrace> traces;
  for (const std::string& f : files) traces.push_back(read_kineto_trace(f));
  std::stable_sort(traces.begin(), traces.end(), [](const KinetoTrace& a, const KinetoTrace& b) { return a.rank < b.rank; });
  return traces;
}

std::string kineto_summary_json(const std::vector<KinetoTrace>& traces) {
  nlohmann::ordered_json j;
  j["schema"] = "stepsim.kineto-summary/1";
  j["traces"] = nlohmann::ordered_json::array();
  for (const KinetoTrace& t : traces) {
    nlohmann::ordered_json o;
    o["source"] = t.source;
    o["sha256"] = t.sha256;
    o["file_bytes"] = t.file_bytes;
    o["json_bytes"] = t.json_bytes;
    o["gzipped"] = t.gzipped;
    o["rank"] = t.rank >= 0 ? nlohmann::ordered_json(t.rank) : nlohmann::ordered_json();
    o["world_size"] = t.world_size >= 0 ? nlohmann::ordered_json(t.world_size) : nlohmann::ordered_json();
    o["backend"] = t.backend;
    o["nccl_version"] = t.nccl_version;
    o["device"] = t.device;
    o["device_name"] = kineto_device_name(t).empty() ? "unknown device" : kineto_device_name(t);
    o["events"] = t.events;
    o["gpu_events"] = t.kernels.size();
    o["launches"] = t.launches;
    o["cpu_ops"] = t.cpu_ops;
    o["shapes_recorded"] = t.shapes_recorded;
    nlohmann::ordered_json steps = nlohmann::ordered_json::array();
    for (const KinetoStepSummary& st : summarize_steps(t)) {
      nlohmann::ordered_json x;
      x["number"] = st.number;
      x["wall_s"] = st.wall_s;
      x["gpu_span_s"] = st.gpu_span_s;
      nlohmann::ordered_json classes = nlohmann::ordered_json::object();
      for (std::size_t c = 0; c < kKernelClasses; ++c)
        if (st.class_count[c] > 0) classes[std::string(kernel_class_name(static_cast<KernelClass>(c)))] = {{"count", st.class_count[c]}, {"time_s", st.class_s[c]}};
      x["kernel_classes"] = std::move(classes);
      steps.push_back(std::move(x));
    }
    o["steps"] = std::move(steps);
    nlohmann::ordered_json coll = nlohmann::ordered_json::array();
    for (const KinetoCollectiveSummary& g : summarize_collectives(t))
      coll.push_back({{"op", g.op},
                      {"algorithm", g.algorithm},
                      {"protocol", g.protocol},
                      {"calls", g.calls},
                      {"time_s", g.time_s},
                      {"sized_calls", g.sized_calls},
                      {"min_bytes", g.sized_calls ? nlohmann::ordered_json(g.min_bytes) : nlohmann::ordered_json()},
                      {"max_bytes", g.sized_calls ? nlohmann::ordered_json(g.max_bytes) : nlohmann::ordered_json()}});
    o["collectives"] = std::move(coll);
    nlohmann::ordered_json unknown = nlohmann::ordered_json::object();
    for (const auto& [name, n] : t.unknown_kernels) unknown[name] = n;
    o["unknown_kernels"] = std::move(unknown);
    o["notes"] = t.notes;
    j["traces"].push_back(std::move(o));
  }
  // File and kernel names are bytes, not always UTF-8: invalid sequences become U+FFFD.
  return j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

}  // namespace stepsim::validate
