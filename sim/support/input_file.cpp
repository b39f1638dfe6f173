// SPDX-License-Identifier: Apache-2.0
// read_input_file(): stat, open without blocking, fstat the descriptor, read with a cap.
#include "sim/support/input_file.hpp"

#include "sim/support/atomic_file.hpp"
#include "sim/support/error.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace stepsim {

namespace {

/// Throws unless `st` is a regular file.
void require_regular(const struct stat& st, const std::string& path, const std::string& expected) {
  if (S_ISREG(st.st_mode)) return;
  if (S_ISDIR(st.st_mode)) throw InputError(path, "", "is a directory, expected " + expected);
  const char* kind = S_ISFIFO(st.st_mode)  ? "a FIFO"
                     : S_ISCHR(st.st_mode) ? "a character device"
                     : S_ISBLK(st.st_mode) ? "a block device"
                     : S_ISSOCK(st.st_mode) ? "a socket"
                                            : "an unknown kind of file";
  throw InputError(path, "", fmt::format("is not a regular file ({}), expected {}", kind, expected));
}

[[noreturn]] void too_large(const std::string& path, const std::string& expected, std::uintmax_t max_bytes) {
  throw InputError(path, "", fmt::format("is larger than {} (the most stepsim reads), expected {}",
                                         format_byte_limit(max_bytes), expected));
}

/// Closes the descriptor unless released (the constructor's checks may throw).
struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

std::string format_byte_limit(std::uintmax_t bytes) {
  for (const auto& [shift, unit] : {std::pair{40, "TiB"}, std::pair{30, "GiB"}, std::pair{20, "MiB"}, std::pair{10, "KiB"}})
    if (bytes >= (std::uintmax_t{1} << shift) && bytes % (std::uintmax_t{1} << shift) == 0)
      return fmt::format("{} {}", bytes >> shift, unit);
  return fmt::format("{} bytes", bytes);
}

InputFile::InputFile(const std::string& path, const std::string& expected, std::uintmax_t max_bytes)
    : path_(path), expected_(expected), max_bytes_(max_bytes) {
  struct stat st {};
  // stat first: opening a device can have effects of its own, so refuse it unopened.
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) throw InputError(path, "", "no such file (expected " + expected + ")");
    throw InputError(path, "", fmt::format("cannot access the file: {} (expected {})", std::strerror(errno), expected));
  }
  require_regular(st, path, expected);
  // O_NONBLOCK: should the path have become a FIFO since, the open returns instead of waiting
  // for a writer, and fstat refuses it.
  Fd guard{::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)};
  if (guard.fd < 0)
    throw InputError(path, "", fmt::format("cannot open for reading: {} (expected {})", std::strerror(errno), expected));
  if (::fstat(guard.fd, &st) != 0)
    throw InputError(path, "", fmt::format("cannot access the file: {} (expected {})", std::strerror(errno), expected));
  require_regular(st, path, expected);
  if (st.st_size > 0 && static_cast<std::uintmax_t>(st.st_size) > max_bytes) too_large(path, expected, max_bytes);
  size_ = static_cast<std::uintmax_t>(st.st_size);
  note_input_file(path);  // outputs never go over it
  fd_ = guard.fd;
  guard.fd = -1;
}

InputFile::~InputFile() {
  if (fd_ >= 0) ::close(fd_);
}

std::size_t InputFile::read_some(char* buf, std::size_t n) {
  for (;;) {
    const ssize_t got = ::read(fd_, buf, n);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw InputError(path_, "", std::string("error while reading: ") + std::strerror(errno));
    read_ += static_cast<std::uintmax_t>(got);
    if (read_ > max_bytes_) too_large(path_, expected_, max_bytes_);  // it grew
    return static_cast<std::size_t>(got);
  }
}

std::string read_input_file(const std::string& path, const std::string& expected, std::uintmax_t max_bytes) {
  InputFile f(path, expected, max_bytes);
  std::string text;
  text.reserve(static_cast<std::size_t>(f.size_bytes()));
  char buf[1 << 16];
  while (const std::size_t n = f.read_some(buf, sizeof buf)) text.append(buf, n);
  return text;
}

}  // namespace stepsim
