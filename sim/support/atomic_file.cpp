// SPDX-License-Identifier: Apache-2.0
// Atomic output files (temp file + rename; DESIGN.md "Interfaces").
#include "sim/support/atomic_file.hpp"

#include "sim/support/error.hpp"

#include <filesystem>
#include <fstream>
#include <unistd.h>

namespace stepsim {

void write_file_atomically(const std::string& path, const std::string& content) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw InputError(path, "", "output directory '" + dir.string() + "' does not exist");
  if (fs::is_directory(target, ec)) throw InputError(path, "", "is a directory, expected a file path");
  const fs::path tmp = dir / ("." + target.filename().string() + ".tmp." + std::to_string(::getpid()));
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw InputError(path, "", "cannot create output file (check permissions)");
    out << content;
    out.flush();
    if (!out) {
      fs::remove(tmp, ec);
      throw InputError(path, "", "error while writing output file");
    }
  }
  fs::rename(tmp, target, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw InputError(path, "", "cannot replace output file: " + ec.message());
  }
}

}  // namespace stepsim
