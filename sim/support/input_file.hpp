// SPDX-License-Identifier: Apache-2.0
// Input files: the one place every reader (JSON, nccl-tests logs, vTrain CSVs, GEMM sweeps)
// opens and reads a file, so each refuses the same things with the same one-line messages.
#pragma once

#include <cstdint>
#include <string>

namespace stepsim {

/// The most bytes read_input_file reads by default (1 GiB): no log or table stepsim reads
/// comes close; past it the file is not what the user meant (or the disk holds a runaway log).
inline constexpr std::uintmax_t kMaxInputBytes = std::uintmax_t{1} << 30;

/// Reads the whole of the regular file `path` and notes it as an input (note_input_file, so no
/// output is written over it). Non-regular files are refused before they are read — a FIFO
/// would block forever, /dev/zero would be read until memory runs out — and so is a file
/// larger than `max_bytes` (checked on its size and again while reading, for a growing file).
/// Never blocks on open: a FIFO or device that turns up between the check and the open is
/// opened non-blocking and refused by its descriptor.
/// @param expected   what the file should be, for messages: "a JSON file", "an nccl-tests log"
/// @param max_bytes  the size limit (> 0)
/// @throws InputError, one line naming the file and `expected`:
///         "PATH: no such file (expected EXPECTED)"; "PATH: is a directory, expected EXPECTED";
///         "PATH: is not a regular file (a FIFO|a character device|a block device|a socket),
///         expected EXPECTED"; "PATH: cannot open for reading: REASON (expected EXPECTED)";
///         "PATH: is larger than LIMIT (the most stepsim reads), expected EXPECTED";
///         "PATH: error while reading: REASON".
std::string read_input_file(const std::string& path, const std::string& expected,
                            std::uintmax_t max_bytes = kMaxInputBytes);

/// An input file opened with read_input_file's checks, read piece by piece (for files read as
/// a stream, e.g. a gzipped profiler trace that is never held whole). Noted as an input.
class InputFile {
 public:
  /// Opens `path` with read_input_file's refusals (no such file, directory, not a regular
  /// file, cannot open, larger than `max_bytes`). @throws InputError as read_input_file.
  InputFile(const std::string& path, const std::string& expected, std::uintmax_t max_bytes = kMaxInputBytes);
  ~InputFile();
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;
  /// Reads up to `n` bytes into `buf`; 0 at the end of the file.
  /// @throws InputError on a read error or when the file grows past `max_bytes`.
  std::size_t read_some(char* buf, std::size_t n);
  /// The file's size when it was opened [bytes].
  std::uintmax_t size_bytes() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_, expected_;
  std::uintmax_t max_bytes_ = 0, size_ = 0, read_ = 0;
  int fd_ = -1;
};

/// A byte count for messages: "1 GiB", "64 MiB", "512 KiB" or "100 bytes" (the largest binary
/// unit that divides it exactly).
std::string format_byte_limit(std::uintmax_t bytes);

}  // namespace stepsim
