// SPDX-License-Identifier: Apache-2.0
// Reading nccl-tests results as engineers have them: raw stdout of all_reduce_perf,
// all_gather_perf, reduce_scatter_perf, alltoall_perf, broadcast_perf, reduce_perf (any
// launcher, several runs per file), and the normalized CSV of ../shared/data/nccl/.
// Vocabulary is nccl-tests' own (semantics.md §D.5, style.md §2.7).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace stepsim::validate {

/// One size row of an nccl-tests table. Times in µs and bandwidths in GB/s (1e9 B/s) as
/// nccl-tests prints them; a value printed as "N/A" (or a blank CSV cell) is empty.
/// Range of a measured collective time the readers accept (and fit_table requires), seconds:
/// nccl-tests prints microseconds with two decimals, so 0.01 µs is the smallest it can show;
/// 10^4 s is far beyond any single collective. Outside it a row is unreadable (reported with its
/// line): 1e-207 s once overflowed the fit's 1/t² weights (issue 13 item 11).
inline constexpr double kMinMeasuredTimeS = 1e-8;
inline constexpr double kMaxMeasuredTimeS = 1e4;

struct NcclTestsRow {
  int line = 0;                      ///< 1-based line number in the file
  double size_bytes = 0;             ///< S: the total buffer (gathered size for AG/RS/AlltoAll)
  long long count = 0;               ///< elements, as printed (per rank for AG/RS)
  std::string dtype;
  std::string redop;                 ///< "" when the layout has no redop column
  std::optional<long long> root;     ///< root column (newer layouts), -1 for rootless ops
  std::optional<double> oop_time_us, oop_algbw_GBps, oop_busbw_GBps;
  std::optional<double> ip_time_us, ip_algbw_GBps, ip_busbw_GBps;
  std::string oop_check, ip_check;   ///< "#wrong" count or "error" value as printed ("N/A" kept)

  /// The time a fit uses: out-of-place, else in-place. Empty when neither was printed.
  std::optional<double> time_us() const { return oop_time_us ? oop_time_us : ip_time_us; }
};

/// A line the reader had to skip: where, what, why. Never dropped silently.
struct UnreadableLine {
  int line = 0;
  std::string text;    ///< the line as read (launcher prefix included), truncated to 120 chars
  std::string reason;  ///< e.g. "expected 13 columns (size count type redop root time ...), got 9"
};

/// One table: one run of one nccl-tests binary (a file may hold several).
struct NcclTestsRun {
  std::string op;            ///< nccl-tests name: "all_reduce", "all_gather", "reduce_scatter",
                             ///< "alltoall", "broadcast", "reduce"; "" when the log does not say
  int first_line = 0;        ///< line of the run's first header or row
  int ranks = 0;             ///< from "#  Rank  N ..." lines; 0 when none were printed
  int nodes = 0;             ///< distinct hosts in those lines; 0 when unknown
  std::string gpu;           ///< device name printed after "[0x..]" / "[0000:..]"
  std::string nccl_version;  ///< "2.18.5" from "# nccl-tests version ... nccl-library=21805" or
                             ///< "NCCL version 2.18.5+cuda12.2"; "" when not printed
  std::vector<std::string> columns;  ///< the column header as printed ("size", "count", ...)
  std::vector<NcclTestsRow> rows;
  std::optional<double> avg_busbw_GBps;  ///< "# Avg bus bandwidth : X"
};

/// Everything read from one file.
struct NcclTestsLog {
  std::string source;   ///< file name for messages and provenance
  std::string sha256;   ///< hex SHA-256 of the file's bytes
  std::string format;   ///< "nccl-tests" (raw stdout) or "nccl-tests-csv"
  std::vector<NcclTestsRun> runs;
  std::vector<UnreadableLine> unreadable;
};

/// Parses raw nccl-tests stdout.
///
/// Accepts: launcher prefixes on any line (`[1,0]<stdout>:`, `0: ` from srun --label, ISO or
/// bracketed timestamps, `host: `), both the `#wrong` layout (size count type redop root …)
/// and the older `error` layouts (no root column; no redop column for all_gather), a single
/// out-of-place group, "N/A" in any value column, interleaved NCCL INFO/WARN lines, several
/// runs in one file (a new run starts at "# nccl-tests version", "# Collective test starting"
/// or "# nThread" once the current run has rows).
/// Rows without a preceding column header are read with the layout their column count implies.
/// Every other non-comment line inside a table, and every data-like line that cannot be
/// read, is listed in `unreadable` with its line number and the reason.
/// @param source  file name recorded in the result (no I/O is done)
NcclTestsLog parse_nccl_tests(std::string_view text, const std::string& source);

/// Parses the normalized CSV (header `op,size_bytes,count,dtype,redop,oop_time_us,...`;
/// ../shared/data/README.md). Rows of different `op` become separate runs. Bad rows go to
/// `unreadable`. Provenance (ranks, nodes, GPU, NCCL version) is not in the CSV: see
/// read_nccl_tests_file().
/// @throws InputError when the header lacks size_bytes or both time columns.
NcclTestsLog parse_nccl_tests_csv(std::string_view text, const std::string& source);

/// Reads a file: CSV when its first line starts with "op,", raw stdout otherwise. For a CSV,
/// a sidecar `<stem>.json` with `gpu`, `nodes`, `total_ranks`, `nccl_version` (the format of
/// ../shared/data/nccl/*.json) fills the run provenance when present.
/// @throws InputError when the file is empty or holds no table at all; as read_input_file
///         (expecting "an nccl-tests log or CSV", at most 1 GiB) when it is missing, a
///         directory, not a regular file (FIFO, device, socket), unreadable or larger.
NcclTestsLog read_nccl_tests_file(const std::string& path);

/// nccl-tests' busbw/algbw factor (semantics.md §D.5): 2(n−1)/n for all_reduce, (n−1)/n for
/// all_gather, reduce_scatter and alltoall, 1 for broadcast and reduce. Precondition n ≥ 1.
/// @throws InputError for an unknown op name.
double bus_factor(const std::string& op, int ranks);

/// Rank count implied by a row's busbw/algbw ratio for `op` (inverse of bus_factor); 0 when
/// the row's values are too rounded (algbw < 1 GB/s) or the op has no rank-dependent factor.
int ranks_from_bandwidths(const std::string& op, double algbw_GBps, double busbw_GBps);

/// "all_reduce" etc. from a name such as "all_reduce_perf", "allreduce", "AllReduce",
/// "reducescatter"; "" when not recognised.
std::string normalize_op_name(std::string_view name);

/// "2.18.5" from an NCCL_VERSION_CODE (21805; old style 2708 → "2.7.8").
std::string nccl_version_from_code(long long code);

/// Hex SHA-256 (FIPS 180-4) of `bytes`.
std::string sha256_hex(std::string_view bytes);

}  // namespace stepsim::validate
