// SPDX-License-Identifier: Apache-2.0
// Temporary files and folders (temp_files.hpp): mkstemp / mkdtemp, and a fixed table of paths
// that a signal handler may remove without allocating or locking.
#include "sim/support/temp_files.hpp"

#include "sim/support/error.hpp"

#include <fmt/format.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace stepsim {

namespace {

constexpr int kSlots = 64;
constexpr std::size_t kMaxPath = 4096;
enum State : int { Free = 0, Filling = 1, File = 2, Directory = 3 };

// A slot is claimed (Free -> Filling), its path copied, then published as File or Directory;
// the signal handler only reads published slots. Static storage: nothing to allocate later.
struct Slot {
  std::atomic<int> state{Free};
  char path[kMaxPath];
};
std::array<Slot, kSlots> g_slots;
static_assert(std::atomic<int>::is_always_lock_free, "the signal handler needs lock-free atomics");

}  // namespace

TempPathRegistration::TempPathRegistration(const std::string& path, Kind kind) {
  if (path.size() >= kMaxPath) return;
  for (int i = 0; i < kSlots; ++i) {
    int expected = Free;
    if (!g_slots[i].state.compare_exchange_strong(expected, Filling, std::memory_order_acquire)) continue;
    std::memcpy(g_slots[i].path, path.c_str(), path.size() + 1);
    g_slots[i].state.store(kind == Kind::File ? File : Directory, std::memory_order_release);
    slot_ = i;
    return;
  }
}

TempPathRegistration::~TempPathRegistration() {
  if (slot_ >= 0) g_slots[slot_].state.store(Free, std::memory_order_release);
}

void remove_registered_temp_paths() noexcept {
  for (const int kind : {File, Directory})
    for (auto& s : g_slots)
      if (s.state.load(std::memory_order_acquire) == kind) kind == File ? (void)::unlink(s.path) : (void)::rmdir(s.path);
}

unsigned default_file_mode() {
  // The umask is read from /proc (reading it with umask() means setting it, racing other
  // threads); where /proc is missing, the usual 022 is assumed.
  static const unsigned mode = [] {
    unsigned mask = 022;
    std::ifstream status("/proc/self/status");
    for (std::string line; std::getline(status, line);)
      if (line.rfind("Umask:", 0) == 0) mask = static_cast<unsigned>(std::strtoul(line.c_str() + 6, nullptr, 8));
    return 0666u & ~mask;
  }();
  return mode;
}

TempFile::TempFile(const std::string& dir, const std::string& name, const std::string& source) : source_(source) {
  std::string templ = (std::filesystem::path(dir) / ("." + name + ".tmp.XXXXXX")).string();
  fd_ = ::mkostemp(templ.data(), O_CLOEXEC);
  if (fd_ < 0)
    throw InputError(source, "", fmt::format("cannot create a temporary file in '{}': {}", dir, std::strerror(errno)));
  path_ = templ;
  registration_.emplace(path_, TempPathRegistration::Kind::File);
}

TempFile::~TempFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!path_.empty()) ::unlink(path_.c_str());
}

void TempFile::write(const std::string& content) {
  const char* p = content.data();
  std::size_t left = content.size();
  while (left > 0) {
    const ssize_t n = ::write(fd_, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw InputError(source_, "", std::string("error while writing: ") + std::strerror(n < 0 ? errno : EIO));
    p += n;
    left -= static_cast<std::size_t>(n);
  }
}

void TempFile::rename_over(const std::string& target, unsigned mode) {
  if (::fchmod(fd_, static_cast<mode_t>(mode)) != 0)
    throw InputError(source_, "", std::string("cannot set the permissions of the output file: ") + std::strerror(errno));
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0)  // NFS and quotas may report a failed write only here
    throw InputError(source_, "", std::string("error while writing: ") + std::strerror(errno));
  if (::rename(path_.c_str(), target.c_str()) != 0)
    throw InputError(source_, "", std::string("cannot replace output file: ") + std::strerror(errno));
  path_.clear();  // renamed: nothing left to remove
  registration_.reset();
}

TempDir::TempDir(const std::string& prefix, const std::string& source) {
  std::error_code ec;
  const auto tmp = std::filesystem::temp_directory_path(ec);
  if (ec) throw InputError(source, "", "cannot create a temporary directory (check TMPDIR): " + ec.message());
  std::string templ = (tmp / (prefix + "-XXXXXX")).string();
  if (::mkdtemp(templ.data()) == nullptr)
    throw InputError(source, "", fmt::format("cannot create a temporary directory in '{}' (check TMPDIR): {}",
                                             tmp.string(), std::strerror(errno)));
  path_ = templ;
  registration_.emplace(path_, TempPathRegistration::Kind::Directory);
}

TempDir::~TempDir() {
  files_.clear();
  registration_.reset();
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::string TempDir::file(const std::string& name) {
  std::string p = (std::filesystem::path(path_) / name).string();
  files_.push_back(std::make_unique<TempPathRegistration>(p, TempPathRegistration::Kind::File));
  return p;
}

}  // namespace stepsim
