// SPDX-License-Identifier: Apache-2.0
// nccl-tests stdout and normalized-CSV reader (semantics.md §D.5; style.md §2.7).
#include "validate/nccl_tests.hpp"

#include "hardware/collective_model.hpp"
#include "sim/support/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

namespace stepsim::validate {

namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

std::vector<std::string> split_ws(std::string_view s) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && is_space(s[i])) ++i;
    std::size_t j = i;
    while (j < s.size() && !is_space(s[j])) ++j;
    if (j > i) out.emplace_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string excerpt(std::string_view line) {
  std::string s(trim(line));
  if (s.size() > 120) s = s.substr(0, 117) + "...";
  return s;
}

// Length of a timestamp at the start of s: 2024-05-06T12:34:56(.123)(Z|+02:00) or
// 2024-05-06 12:34:56,123; 0 when there is none.
std::size_t timestamp_length(std::string_view s) {
  auto digits = [&](std::size_t at, std::size_t n) {
    if (at + n > s.size()) return false;
    for (std::size_t k = 0; k < n; ++k)
      if (!is_digit(s[at + k])) return false;
    return true;
  };
  if (!(digits(0, 4) && s.size() > 19 && s[4] == '-' && digits(5, 2) && s[7] == '-' && digits(8, 2) &&
        (s[10] == 'T' || s[10] == ' ') && digits(11, 2) && s[13] == ':' && digits(14, 2) && s[16] == ':' &&
        digits(17, 2)))
    return 0;
  std::size_t i = 19;
  if (i < s.size() && (s[i] == '.' || s[i] == ',')) {
    ++i;
    while (i < s.size() && is_digit(s[i])) ++i;
  }
  if (i < s.size() && s[i] == 'Z') ++i;
  else if (i < s.size() && (s[i] == '+' || s[i] == '-') && digits(i + 1, 2)) {
    i += 3;
    if (i < s.size() && s[i] == ':') ++i;
    if (digits(i, 2)) i += 2;
  }
  return i;
}

// Removes launcher prefixes: "[1,0]<stdout>:", "0: " (srun --label), timestamps, "[...]" with a
// time in it, "host: " (pdsh). Repeats until none is left.
std::string_view strip_prefixes(std::string_view s, long long* mpi_rank = nullptr) {
  for (;;) {
    s = trim(s);
    if (s.empty()) return s;
    // OpenMPI --tag-output: [job,rank]<stdout>:
    if (s.front() == '[') {
      const auto close = s.find(']');
      if (close != std::string_view::npos) {
        const std::string_view inside = s.substr(1, close - 1);
        const std::string_view after = s.substr(close + 1);
        if (starts_with(after, "<stdout>:") || starts_with(after, "<stderr>:")) {
          // [job,rank]: the rank that printed the line.
          if (const auto comma = inside.find(','); mpi_rank != nullptr && comma != std::string_view::npos) {
            long long r = 0;
            const std::string_view digits = inside.substr(comma + 1);
            if (std::from_chars(digits.data(), digits.data() + digits.size(), r).ec == std::errc()) *mpi_rank = r;
          }
          s = after.substr(9);
          continue;
        }
        const bool time_like = !inside.empty() && std::all_of(inside.begin(), inside.end(), [](char c) {
          return is_digit(c) || c == '-' || c == ':' || c == '.' || c == ' ' || c == 'T' || c == 'Z' || c == '+' ||
                 c == ',' || c == '/';
        });
        if (time_like && inside.find(':') != std::string_view::npos) {
          s = after;
          continue;
        }
      }
    }
    if (const std::size_t n = timestamp_length(s); n > 0) {
      s = s.substr(n);
      continue;
    }
    // srun --label "12: " (digits immediately followed by ':').
    {
      std::size_t i = 0;
      while (i < s.size() && is_digit(s[i])) ++i;
      if (i > 0 && i < s.size() && s[i] == ':' && (i + 1 == s.size() || is_space(s[i + 1]))) {
        s = s.substr(i + 1);
        continue;
      }
    }
    // "host: " or "pod-name-0: " in front of a '#' line or a table row.
    if (s.front() != '#' && !is_digit(s.front())) {
      std::size_t i = 0;
      while (i < s.size() && (std::isalnum(static_cast<unsigned char>(s[i])) || s[i] == '-' || s[i] == '_' ||
                              s[i] == '.'))
        ++i;
      if (i > 0 && i + 1 < s.size() && s[i] == ':' && is_space(s[i + 1])) {
        const std::string_view rest = trim(s.substr(i + 1));
        if (!rest.empty() && (rest.front() == '#' || is_digit(rest.front()))) {
          s = rest;
          continue;
        }
      }
    }
    return s;
  }
}

std::optional<double> parse_double(const std::string& tok, bool& ok) {
  if (tok == "N/A" || tok == "n/a" || tok == "-" || tok == "nan") return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(tok.c_str(), &end);
  if (end == tok.c_str() || *end != '\0' || !std::isfinite(v)) {
    ok = false;
    return std::nullopt;
  }
  return v;
}

// Why a measured time of `us` microseconds cannot be used, or nothing (kMinMeasuredTimeS..).
std::optional<std::string> time_problem(double us) {
  if (us >= kMinMeasuredTimeS * 1e6 && us <= kMaxMeasuredTimeS * 1e6) return std::nullopt;
  return fmt::format("time {:g} us is outside [{:g}, {:g}] us (nccl-tests prints microseconds with two decimals)",
                     us, kMinMeasuredTimeS * 1e6, kMaxMeasuredTimeS * 1e6);
}

bool parse_integer(const std::string& tok, long long& out) {
  const char* b = tok.data();
  const char* e = b + tok.size();
  auto [p, ec] = std::from_chars(b, e, out);
  return ec == std::errc() && p == e;
}

// Column layouts of data rows without a header, by token count (nccl-tests ≥ 2.10 prints
// "redop root" and "#wrong"; older versions "redop" and "error"; older all_gather no redop).
std::vector<std::string> default_columns(std::size_t tokens) {
  if (tokens == 13) return {"size", "count", "type", "redop", "root", "time", "algbw", "busbw", "wrong",
                            "time", "algbw", "busbw", "wrong"};
  if (tokens == 12) return {"size", "count", "type", "redop", "time", "algbw", "busbw", "error",
                            "time", "algbw", "busbw", "error"};
  if (tokens == 11) return {"size", "count", "type", "time", "algbw", "busbw", "error",
                            "time", "algbw", "busbw", "error"};
  return {};
}

std::string column_list(const std::vector<std::string>& cols) {
  std::string s;
  for (const auto& c : cols) s += (s.empty() ? "" : " ") + c;
  return s;
}

// Reads one data row with `cols`; returns the reason on failure.
std::optional<std::string> read_row(const std::vector<std::string>& toks, const std::vector<std::string>& cols,
                                    NcclTestsRow& row) {
  if (toks.size() != cols.size())
    return fmt::format("expected {} columns ({}), got {}", cols.size(), column_list(cols), toks.size());
  int time_group = 0;  // 0 before the first "time", 1 out-of-place, 2 in-place
  for (std::size_t i = 0; i < cols.size(); ++i) {
    const std::string& c = cols[i];
    const std::string& t = toks[i];
    bool ok = true;
    if (c == "size") {
      long long v = 0;
      if (!parse_integer(t, v) || v < 0) return fmt::format("size '{}' is not a byte count", t);
      row.size_bytes = static_cast<double>(v);
    } else if (c == "count") {
      if (!parse_integer(t, row.count) || row.count < 0) return fmt::format("count '{}' is not an element count", t);
    } else if (c == "type") {
      row.dtype = t;
    } else if (c == "redop") {
      row.redop = t;
    } else if (c == "root") {
      long long v = 0;
      if (!parse_integer(t, v)) return fmt::format("root '{}' is not an integer", t);
      row.root = v;
    } else if (c == "time") {
      ++time_group;
      auto v = parse_double(t, ok);
      if (!ok) return fmt::format("time '{}' is not a number of microseconds", t);
      if (v && !(*v > 0)) return fmt::format("time '{}' must be > 0 us", t);
      if (v) {
        if (auto why = time_problem(*v)) return why;
      }
      (time_group == 1 ? row.oop_time_us : row.ip_time_us) = v;
    } else if (c == "algbw" || c == "busbw") {
      auto v = parse_double(t, ok);
      if (!ok) return fmt::format("{} '{}' is not a number of GB/s", c, t);
      if (v && !(*v >= 0)) return fmt::format("{} '{}' must be >= 0 GB/s", c, t);
      if (c == "algbw") (time_group <= 1 ? row.oop_algbw_GBps : row.ip_algbw_GBps) = v;
      else (time_group <= 1 ? row.oop_busbw_GBps : row.ip_busbw_GBps) = v;
    } else if (c == "wrong" || c == "error") {
      (time_group <= 1 ? row.oop_check : row.ip_check) = t;
    }
  }
  if (!row.oop_time_us && !row.ip_time_us) return std::string("neither out-of-place nor in-place time is given");
  return std::nullopt;
}

void infer_provenance(NcclTestsRun& run, const std::string& source) {
  if (run.op.empty()) run.op = normalize_op_name(source);
  if (run.rows.empty()) return;
  // Ranks from busbw/algbw of the row with the largest algbw (the least rounded).
  const NcclTestsRow* best = nullptr;
  for (const auto& r : run.rows)
    if (r.oop_algbw_GBps && r.oop_busbw_GBps && (!best || *r.oop_algbw_GBps > *best->oop_algbw_GBps)) best = &r;
  if (!best) return;
  const double ratio = *best->oop_busbw_GBps / std::max(1e-12, *best->oop_algbw_GBps);
  if (run.op.empty()) {
    // all_reduce ratios are ≥ 1 (2(n−1)/n with n ≥ 2); AG/RS/AlltoAll are < 1; rooted ops = 1.
    if (ratio > 1.01) run.op = "all_reduce";
    else if (ratio < 0.99) run.op = best->redop == "none" || best->redop.empty() ? "all_gather" : "reduce_scatter";
  }
  if (!run.op.empty()) {
    const int n = ranks_from_bandwidths(run.op, *best->oop_algbw_GBps, *best->oop_busbw_GBps);
    if (run.ranks <= 1 && n > 1) run.ranks = n;
    // busbw = algbw × the op's bus factor of the ranks that ran it (nccl-tests, semantics.md
    // §D.5): a listed rank count that contradicts it means the wrong rank lines or op.
    const double factor = run.ranks >= 1 ? bus_factor(run.op, run.ranks) : 0.0;
    // Off by more than the printed rounding (two decimals) and 1 %: a contradiction.
    const double expected = *best->oop_algbw_GBps * factor;
    if (run.ranks > 1 && n > 1 && n != run.ranks &&
        std::fabs(*best->oop_busbw_GBps - expected) > 0.01 + 0.01 * expected)
      throw InputError(source, fmt::format("line {}", best->line),
                       fmt::format("{} ranks listed ('#  Rank' lines or the sidecar's total_ranks), but busbw/algbw "
                                   "= {:.4g} at {:.0f} B says {} ranks for {}; the rank list or the op is wrong",
                                   run.ranks, ratio, best->size_bytes, n, run.op));
  }
}

}  // namespace

std::string normalize_op_name(std::string_view name) {
  std::string s = lower(name);
  // Keep only letters so "all_reduce_perf", "allreduce", "All-Reduce" match.
  std::string k;
  for (char c : s)
    if (std::isalpha(static_cast<unsigned char>(c))) k += c;
  // Longest names first: "reducescatter" contains "reduce"; "allreduce" too.
  if (k.find("reducescatter") != std::string::npos) return "reduce_scatter";
  if (k.find("allreduce") != std::string::npos) return "all_reduce";
  if (k.find("allgather") != std::string::npos) return "all_gather";
  if (k.find("alltoall") != std::string::npos) return "alltoall";
  if (k.find("broadcast") != std::string::npos) return "broadcast";
  if (k.find("reduceperf") != std::string::npos || k == "reduce") return "reduce";
  return "";
}

double bus_factor(const std::string& op, int ranks) {
  STEPSIM_ASSERT(ranks >= 1, "bus_factor: ranks {}", ranks);
  for (const auto& e : hardware::collective_ops())
    if (op == e.nccl_tests) return hardware::bus_factor(e.op, ranks);
  // The ops stepsim does not price, as nccl-tests' PERFORMANCE.md defines them.
  const double n = ranks;
  if (op == "alltoall") return (n - 1) / n;
  if (op == "broadcast" || op == "reduce" || op == "sendrecv") return 1;
  throw InputError("", "", fmt::format("unknown nccl-tests op '{}'; expected all_reduce, all_gather, "
                                       "reduce_scatter, alltoall, broadcast or reduce", op));
}

int ranks_from_bandwidths(const std::string& op, double algbw_GBps, double busbw_GBps) {
  if (!(algbw_GBps >= 1.0) || !(busbw_GBps > 0)) return 0;
  const double r = busbw_GBps / algbw_GBps;
  double n = 0;
  if (op == "all_reduce" && r < 2) n = 2 / (2 - r);  // r = 2(n−1)/n
  else if ((op == "all_gather" || op == "reduce_scatter" || op == "alltoall") && r < 1) n = 1 / (1 - r);
  if (!(n >= 1.5) || n > 1e7) return 0;
  return static_cast<int>(std::lround(n));
}

std::string nccl_version_from_code(long long code) {
  if (code <= 0) return "";
  if (code >= 10000) return fmt::format("{}.{}.{}", code / 10000, (code % 10000) / 100, code % 100);
  return fmt::format("{}.{}.{}", code / 1000, (code % 1000) / 100, code % 100);
}

NcclTestsLog parse_nccl_tests(std::string_view text, const std::string& source) {
  NcclTestsLog log;
  log.source = source;
  log.sha256 = sha256_hex(text);
  log.format = "nccl-tests";
  NcclTestsRun run;
  std::set<long long> rank_ids;
  std::set<std::string> hosts;
  bool in_table = false;
  long long table_printer = -1;  // MPI rank whose lines hold the current run's rows
  auto finish_run = [&] {
    if (!run.rows.empty()) {
      if (!rank_ids.empty()) run.ranks = static_cast<int>(rank_ids.size());
      if (!hosts.empty()) run.nodes = static_cast<int>(hosts.size());
      infer_provenance(run, source);
      log.runs.push_back(std::move(run));
    }
    run = NcclTestsRun{};
    rank_ids.clear();
    hosts.clear();
    in_table = false;
    table_printer = -1;
  };
  // A run header line: starts a new run if the current one already has rows.
  auto header_line = [&](int line_no) {
    if (!run.rows.empty()) finish_run();
    if (run.first_line == 0) run.first_line = line_no;
  };

  int line_no = 0;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    const std::size_t nl = text.find('\n', pos);
    const std::string_view raw = text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? text.size() + 1 : nl + 1;
    ++line_no;
    long long printer = -1;  // MPI rank that printed the line, when OpenMPI tags it
    const std::string_view s = strip_prefixes(raw, &printer);
    if (s.empty()) continue;

    if (s.find("NCCL INFO") != std::string_view::npos || s.find("NCCL WARN") != std::string_view::npos) {
      if (const auto at = s.find("NCCL version "); at != std::string_view::npos && run.nccl_version.empty()) {
        const auto toks = split_ws(s.substr(at + 13));
        if (!toks.empty()) run.nccl_version = toks[0].substr(0, toks[0].find('+'));
      }
      continue;
    }
    if (s.front() == '#') {
      std::string_view body = s;
      while (!body.empty() && body.front() == '#') body.remove_prefix(1);
      body = trim(body);
      if (starts_with(body, "nccl-tests version") || starts_with(body, "rccl-tests version")) {
        header_line(line_no);
        if (const auto at = body.find("nccl-library="); at != std::string_view::npos) {
          long long code = 0;
          const auto toks = split_ws(body.substr(at + 13));
          if (!toks.empty() && parse_integer(toks[0], code)) run.nccl_version = nccl_version_from_code(code);
        }
      } else if (starts_with(body, "Collective test starting:")) {
        header_line(line_no);
        run.op = normalize_op_name(trim(body.substr(25)));
      } else if (starts_with(body, "nThread")) {
        header_line(line_no);
      } else if (starts_with(body, "Rank ")) {
        const auto toks = split_ws(body);
        long long id = 0;
        if (toks.size() >= 2 && parse_integer(toks[1], id)) rank_ids.insert(id);
        const auto on = std::find(toks.begin(), toks.end(), "on");
        if (on != toks.end() && on + 1 != toks.end()) hosts.insert(*(on + 1));
        if (const auto dev = body.find(" device "); dev != std::string_view::npos) {
          const auto close = body.find(']', dev);
          if (close != std::string_view::npos && run.gpu.empty()) run.gpu = std::string(trim(body.substr(close + 1)));
        }
      } else if (starts_with(body, "Avg bus bandwidth")) {
        const auto colon = body.find(':');
        bool ok = true;
        if (colon != std::string_view::npos) {
          const auto toks = split_ws(body.substr(colon + 1));
          if (!toks.empty()) {
            const auto v = parse_double(toks[0], ok);
            if (ok && v) run.avg_busbw_GBps = v;
          }
        }
        in_table = false;
      } else {
        const auto toks = split_ws(body);
        if (toks.size() >= 4 && toks[0] == "size" && std::find(toks.begin(), toks.end(), "time") != toks.end()) {
          if (!run.rows.empty() && !run.columns.empty()) finish_run();  // a second table without a run header
          if (run.first_line == 0) run.first_line = line_no;
          run.columns.clear();
          for (const auto& t : toks) run.columns.push_back(t == "#wrong" ? "wrong" : t);
          in_table = true;
        }
      }
      continue;
    }
    if (starts_with(s, "NCCL version ")) {
      const auto toks = split_ws(s.substr(13));
      if (!toks.empty()) run.nccl_version = toks[0].substr(0, toks[0].find('+'));
      continue;
    }
    if (is_digit(s.front())) {
      const auto toks = split_ws(s);
      const std::vector<std::string> cols = run.columns.empty() ? default_columns(toks.size()) : run.columns;
      NcclTestsRow row;
      row.line = line_no;
      if (cols.empty()) {
        log.unreadable.push_back({line_no, excerpt(raw),
                                  fmt::format("a row of {} columns before any column header (expected 11, 12 or "
                                              "13 columns of an nccl-tests table)", toks.size())});
        continue;
      }
      if (auto why = read_row(toks, cols, row)) {
        log.unreadable.push_back({line_no, excerpt(raw), *why});
        continue;
      }
      if (run.first_line == 0) run.first_line = line_no;
      // Every MPI rank printing its own table (nccl-tests run with -t/-g per process and output
      // from all ranks) interleaves rows of several tables: refuse rather than fit a mixture.
      if (printer >= 0) {
        if (table_printer < 0) table_printer = printer;
        if (printer != table_printer)
          throw InputError(source, fmt::format("line {}", line_no),
                           fmt::format("table rows printed by MPI ranks {} and {} interleave; keep one rank's output "
                                       "(e.g. grep '^\\[1,{}\\]')", table_printer, printer, table_printer));
      }
      run.rows.push_back(std::move(row));
      continue;
    }
    if (in_table) log.unreadable.push_back({line_no, excerpt(raw), "not a table row inside an nccl-tests table"});
  }
  finish_run();
  return log;
}

namespace {

std::vector<std::string> split_csv(std::string_view s) {
  std::vector<std::string> out;
  std::size_t i = 0;
  for (;;) {
    const auto c = s.find(',', i);
    out.emplace_back(trim(s.substr(i, c == std::string_view::npos ? std::string_view::npos : c - i)));
    if (c == std::string_view::npos) break;
    i = c + 1;
  }
  return out;
}

}  // namespace

NcclTestsLog parse_nccl_tests_csv(std::string_view text, const std::string& source) {
  NcclTestsLog log;
  log.source = source;
  log.sha256 = sha256_hex(text);
  log.format = "nccl-tests-csv";
  std::vector<std::string> header;
  std::vector<NcclTestsRun> runs;
  int line_no = 0;
  std::size_t pos = 0;
  auto col = [&](const std::string& name) -> int {
    const auto it = std::find(header.begin(), header.end(), name);
    return it == header.end() ? -1 : static_cast<int>(it - header.begin());
  };
  while (pos <= text.size()) {
    const std::size_t nl = text.find('\n', pos);
    const std::string_view raw = text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? text.size() + 1 : nl + 1;
    ++line_no;
    const std::string_view s = trim(raw);
    if (s.empty() || s.front() == '#') continue;
    const auto cells = split_csv(s);
    if (header.empty()) {
      header = cells;
      if (col("size_bytes") < 0 || (col("oop_time_us") < 0 && col("ip_time_us") < 0))
        throw InputError(source, fmt::format("line {}", line_no),
                         fmt::format("CSV header '{}' lacks size_bytes or a time column (expected "
                                     "op,size_bytes,count,dtype,redop,oop_time_us,...)", excerpt(s)));
      continue;
    }
    if (cells.size() != header.size()) {
      log.unreadable.push_back({line_no, excerpt(raw), fmt::format("expected {} CSV cells, got {}", header.size(), cells.size())});
      continue;
    }
    auto cell = [&](const char* name) -> std::string {
      const int i = col(name);
      return i < 0 ? std::string() : cells[static_cast<std::size_t>(i)];
    };
    NcclTestsRow row;
    row.line = line_no;
    std::optional<std::string> why;
    long long size = 0;
    if (!parse_integer(cell("size_bytes"), size) || size < 0) why = fmt::format("size_bytes '{}' is not a byte count", cell("size_bytes"));
    row.size_bytes = static_cast<double>(size);
    if (!cell("count").empty() && !parse_integer(cell("count"), row.count)) why = fmt::format("count '{}' is not an integer", cell("count"));
    row.dtype = cell("dtype");
    row.redop = cell("redop");
    const std::pair<const char*, std::optional<double>*> numbers[] = {
        {"oop_time_us", &row.oop_time_us},       {"oop_algbw_GBps", &row.oop_algbw_GBps},
        {"oop_busbw_GBps", &row.oop_busbw_GBps}, {"ip_time_us", &row.ip_time_us},
        {"ip_algbw_GBps", &row.ip_algbw_GBps},   {"ip_busbw_GBps", &row.ip_busbw_GBps}};
    for (const auto& [name, dst] : numbers) {
      const std::string v = cell(name);
      if (v.empty()) continue;
      bool ok = true;
      *dst = parse_double(v, ok);
      if (!ok && !why) why = fmt::format("{} '{}' is not a number", name, v);
      if (ok && *dst && !(**dst >= 0) && !why) why = fmt::format("{} '{}' must be >= 0", name, v);
    }
    if (!why && !row.time_us() && !row.oop_busbw_GBps && !row.ip_busbw_GBps)
      why = "neither a time nor a busbw is given";
    if (!why && row.time_us() && !(*row.time_us() > 0)) why = fmt::format("time {} us must be > 0", *row.time_us());
    for (const auto* t : {&row.oop_time_us, &row.ip_time_us})
      if (!why && *t) why = time_problem(**t);
    if (why) {
      log.unreadable.push_back({line_no, excerpt(raw), *why});
      continue;
    }
    const std::string op = normalize_op_name(cell("op"));
    auto it = std::find_if(runs.begin(), runs.end(), [&](const NcclTestsRun& r) { return r.op == op; });
    if (it == runs.end()) {
      NcclTestsRun r;
      r.op = op;
      r.first_line = line_no;
      r.columns = header;
      runs.push_back(std::move(r));
      it = runs.end() - 1;
    }
    it->rows.push_back(std::move(row));
  }
  for (auto& r : runs) infer_provenance(r, source);
  log.runs = std::move(runs);
  return log;
}

}  // namespace stepsim::validate
