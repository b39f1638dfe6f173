// SPDX-License-Identifier: Apache-2.0
// Output files (mkstemp temp file + rename; DESIGN.md "Interfaces"): symlinks written through,
// devices and FIFOs written through, directories, sockets and inputs refused.
#include "sim/support/atomic_file.hpp"

#include "sim/support/error.hpp"
#include "sim/support/temp_files.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <sys/stat.h>
#include <unistd.h>

namespace stepsim {

namespace fs = std::filesystem;

namespace {

std::mutex& inputs_mutex() {
  static std::mutex m;
  return m;
}

bool& protecting() {
  static bool on = false;
  return on;
}

std::vector<std::string>& noted_inputs() {
  static std::vector<std::string> v;
  return v;
}

/// True when `a` and `b` are the same existing file.
bool same_existing_file(const fs::path& a, const fs::path& b) {
  std::error_code ec;
  if (!fs::exists(a, ec) || !fs::exists(b, ec)) return false;
  const bool same = fs::equivalent(a, b, ec);
  return !ec && same;
}

/// A path for comparing outputs that do not exist yet: absolute, with "." and ".." and the
/// links of existing directories resolved.
fs::path normal_form(const std::string& resolved) {
  std::error_code ec;
  fs::path p = fs::weakly_canonical(fs::absolute(resolved, ec), ec);
  return ec ? fs::path(resolved).lexically_normal() : p;
}

}  // namespace

std::string resolve_output_path(const std::string& path) {
  fs::path p(path);
  std::error_code ec;
  for (int hops = 0; fs::is_symlink(fs::symlink_status(p, ec)); ++hops) {
    if (hops == 40) throw InputError(path, "", "too many levels of symbolic links");
    const fs::path link = fs::read_symlink(p, ec);
    if (ec) throw InputError(path, "", "cannot read the symbolic link: " + ec.message());
    p = link.is_absolute() ? link : p.parent_path() / link;
  }
  return p.string();
}

void protect_inputs(bool on) {
  const std::lock_guard<std::mutex> lock(inputs_mutex());
  protecting() = on;
  if (!on) noted_inputs().clear();
}

void note_input_file(const std::string& path) {
  std::error_code ec;
  if (path.empty() || !fs::exists(path, ec)) return;
  const std::lock_guard<std::mutex> lock(inputs_mutex());
  if (!protecting()) return;
  auto& v = noted_inputs();
  if (std::find(v.begin(), v.end(), path) == v.end()) v.push_back(path);
}

void check_output_path(const std::string& path, const std::string& flag, const std::vector<std::string>& inputs) {
  if (path.empty())
    throw InputError(flag, "", "expected a file name, got an empty value");
  const fs::path target(resolve_output_path(path));
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw InputError(path, "", "output directory '" + dir.string() + "' does not exist");
  const auto st = fs::status(target, ec);
  if (fs::is_directory(st)) throw InputError(path, "", "is a directory; expected an output file name");
  if (fs::exists(st) && !fs::is_regular_file(st) && !fs::is_character_file(st) && !fs::is_fifo(st))
    throw InputError(path, "", "is not a regular file, a character device or a FIFO; stepsim writes outputs to "
                               "those only");
  // /dev/stdout (or any name of the file standard output is redirected to) would be replaced
  // or interleaved with the report printed there. A terminal or /dev/null is written through.
  struct stat out_st {}, target_st {};
  // stat() follows links, so /dev/stdout -> /proc/self/fd/1 -> a pipe is seen as that pipe.
  if (::fstat(STDOUT_FILENO, &out_st) == 0 && !S_ISCHR(out_st.st_mode) && ::stat(path.c_str(), &target_st) == 0 &&
      out_st.st_dev == target_st.st_dev && out_st.st_ino == target_st.st_ino)
    throw InputError(path, "", fmt::format("is this process's standard output ({}), where the report is printed "
                                           "as well; give {} a file of its own", S_ISREG(out_st.st_mode) ? "a file"
                                           : "a pipe", flag));
  // A file is written to a temporary file in its folder, then renamed over it: the folder must
  // take a new file (refused before any work, not after it).
  struct stat followed {};
  const bool written_through = fs::is_character_file(st) || fs::is_fifo(st) ||
                               (::stat(path.c_str(), &followed) == 0 && (S_ISCHR(followed.st_mode) || S_ISFIFO(followed.st_mode)));
  if (!written_through) {
    // Permission bits do not tell it all (root, read-only mounts, sysfs): a file is made and removed.
    std::string probe = (dir / ".stepsim-probe-XXXXXX").string();
    const int fd = ::mkstemp(probe.data());
    if (fd < 0)
      throw InputError(path, "", fmt::format("cannot write in the folder '{}' ({}); choose another output file",
                                             dir.string(), std::strerror(errno)));
    ::close(fd);
    ::unlink(probe.c_str());
  }
  std::vector<std::string> all = inputs;
  {
    const std::lock_guard<std::mutex> lock(inputs_mutex());
    all.insert(all.end(), noted_inputs().begin(), noted_inputs().end());
  }
  for (const auto& in : all)
    if (!in.empty() && same_existing_file(target, in))
      throw InputError(path, "", fmt::format("is the input '{}'; stepsim never writes over its inputs "
                                             "(choose another output file)", in));
}

void check_distinct_outputs(const std::vector<std::pair<std::string, std::string>>& outputs) {
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    if (outputs[i].second.empty()) continue;
    const std::string a = resolve_output_path(outputs[i].second);
    for (std::size_t j = i + 1; j < outputs.size(); ++j) {
      if (outputs[j].second.empty()) continue;
      const std::string b = resolve_output_path(outputs[j].second);
      if (same_existing_file(a, b) || normal_form(a) == normal_form(b))
        throw InputError("", "", fmt::format("{} and {} name the same file '{}'; give each output its own file",
                                             outputs[i].first, outputs[j].first, outputs[i].second));
    }
  }
}

void write_file_atomically(const std::string& path, const std::string& content) {
  check_output_path(path, "output file");
  const fs::path target(resolve_output_path(path));
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::error_code ec;
  if (const auto st = fs::status(target, ec); fs::is_character_file(st) || fs::is_fifo(st)) {
    // /dev/null, /dev/stdout, a pipe from the shell: nothing to replace, write through.
    std::FILE* f = std::fopen(target.c_str(), "wb");
    if (f == nullptr) throw InputError(path, "", std::string("cannot open for writing: ") + std::strerror(errno));
    const bool ok = std::fwrite(content.data(), 1, content.size(), f) == content.size() && std::fflush(f) == 0;
    const int err = errno;
    if (std::fclose(f) != 0 || !ok)
      throw InputError(path, "", std::string("error while writing: ") + std::strerror(ok ? errno : err));
    return;
  }
  // A fresh name made by mkstemp (O_EXCL: a link planted at any name in the folder is never
  // followed), removed on every failure and, through its registration, on SIGTERM/SIGINT.
  TempFile tmp(dir.string(), target.filename().string(), path);
  tmp.write(content);
  // Keep the permissions of the file replaced; a new file gets 0666 less the umask, as a
  // plain `>` redirection would (mkstemp makes it 0600).
  struct stat st {};
  const bool replacing = ::stat(target.c_str(), &st) == 0 && S_ISREG(st.st_mode);
  tmp.rename_over(target.string(), replacing ? (st.st_mode & 07777 & ~unsigned{S_ISUID | S_ISGID}) : default_file_mode());
}

}  // namespace stepsim
