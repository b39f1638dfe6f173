// SPDX-License-Identifier: Apache-2.0
// Temporary files and folders: created safely (unique names made by mkstemp / mkdtemp, never
// through a planted link), removed on every exit path, and registered so that a signal handler
// can remove the ones in flight (remove_registered_temp_paths).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace stepsim {

/// Registers `path` for removal by remove_registered_temp_paths() for as long as the object
/// lives; the destructor only unregisters (removing is the owner's job). Thread-safe. At most
/// 64 paths are registered at once: beyond that (or for a path of 4096 bytes or more) the path
/// is silently not registered, and a signal would leave it behind.
class TempPathRegistration {
 public:
  enum class Kind { File, Directory };
  TempPathRegistration(const std::string& path, Kind kind);
  ~TempPathRegistration();
  TempPathRegistration(const TempPathRegistration&) = delete;
  TempPathRegistration& operator=(const TempPathRegistration&) = delete;

 private:
  int slot_ = -1;
};

/// Removes every registered path: files first (unlink), then folders (rmdir, so only emptied
/// ones go). Async-signal-safe (only atomics, unlink and rmdir on pre-stored strings): meant
/// for a SIGTERM/SIGINT handler, which then re-raises the signal.
void remove_registered_temp_paths() noexcept;

/// A new file "DIR/.NAME.tmp.XXXXXX" (mkstemp: a fresh name, O_EXCL, so a link planted at any
/// name is never followed; mode 0600), registered for signal cleanup and removed by the
/// destructor unless rename_over() succeeded.
class TempFile {
 public:
  /// @throws InputError "SOURCE: cannot create a temporary file in 'DIR': REASON".
  TempFile(const std::string& dir, const std::string& name, const std::string& source);
  ~TempFile();
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;

  const std::string& path() const { return path_; }
  /// Writes all of `content` (retrying short writes and EINTR).
  /// @throws InputError "SOURCE: error while writing: REASON" (EFBIG past `ulimit -f` with
  ///         SIGXFSZ ignored, ENOSPC, EIO, ...).
  void write(const std::string& content);
  /// Sets the permission bits (fchmod), closes the file and renames it to `target`; afterwards
  /// nothing is left to remove.
  /// @throws InputError "SOURCE: cannot replace output file: REASON" (the temp file is removed).
  void rename_over(const std::string& target, unsigned mode);

 private:
  std::string path_, source_;
  int fd_ = -1;
  std::optional<TempPathRegistration> registration_;
};

/// A new private folder "TMPDIR/PREFIX-XXXXXX" (mkdtemp, mode 0700), registered for signal
/// cleanup and removed with its contents by the destructor. Files made inside it should be
/// registered with file() so that a signal removes them too (and then the emptied folder).
class TempDir {
 public:
  /// @throws InputError "SOURCE: cannot create a temporary directory (check TMPDIR): REASON".
  TempDir(const std::string& prefix, const std::string& source);
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  /// The path of `name` (a plain file name) inside the folder, registered for signal cleanup
  /// while the folder lives.
  std::string file(const std::string& name);

 private:
  std::string path_;
  std::optional<TempPathRegistration> registration_;
  std::vector<std::unique_ptr<TempPathRegistration>> files_;
};

/// The permission bits a newly created output file gets: 0666 without the process's umask.
unsigned default_file_mode();

}  // namespace stepsim
