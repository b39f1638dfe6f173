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

struct Fd {
  int fd;
  ~Fd() { ::close(fd); }
};

}  // namespace

std::string format_byte_limit(std::uintmax_t bytes) {
  for (const auto& [shift, unit] : {std::pair{40, "TiB"}, std::pair{30, "GiB"}, std::pair{20, "MiB"}, std::pair{10, "KiB"}})
    if (bytes >= (std::uintmax_t{1} << shift) && bytes % (std::uintmax_t{1} << shift) == 0)
      return fmt::format("{} {}", bytes >> shift, unit);
  return fmt::format("{} bytes", bytes);
}

std::string read_input_file(const std::string& path, const std::string& expected, std::uintmax_t max_bytes) {
  struct stat st {};
  // stat first: opening a device can have effects of its own, so refuse it unopened.
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) throw InputError(path, "", "no such file (expected " + expected + ")");
    throw InputError(path, "", fmt::format("cannot access the file: {} (expected {})", std::strerror(errno), expected));
  }
  require_regular(st, path, expected);
  // O_NONBLOCK: should the path have become a FIFO since, the open returns instead of waiting
  // for a writer, and fstat refuses it.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0)
    throw InputError(path, "", fmt::format("cannot open for reading: {} (expected {})", std::strerror(errno), expected));
  const Fd guard{fd};
  if (::fstat(fd, &st) != 0)
    throw InputError(path, "", fmt::format("cannot access the file: {} (expected {})", std::strerror(errno), expected));
  require_regular(st, path, expected);
  if (st.st_size > 0 && static_cast<std::uintmax_t>(st.st_size) > max_bytes) too_large(path, expected, max_bytes);
  note_input_file(path);  // outputs never go over it
  std::string text;
  text.reserve(static_cast<std::size_t>(st.st_size));
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw InputError(path, "", std::string("error while reading: ") + std::strerror(errno));
    if (n == 0) break;
    if (text.size() + static_cast<std::size_t>(n) > max_bytes) too_large(path, expected, max_bytes);  // it grew
    text.append(buf, static_cast<std::size_t>(n));
  }
  return text;
}

}  // namespace stepsim
