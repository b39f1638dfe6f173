// SPDX-License-Identifier: Apache-2.0
// Output files: where they may go (regular files only, never over an input) and how they are
// written (a temporary file in the same directory, then renamed).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace stepsim {

/// Where an output path really writes: a symlink is followed to its final target (also when
/// that target does not exist yet: a dangling link writes where it points); any other path is
/// returned as given.
/// @throws InputError when a chain of links is longer than 40 or a link cannot be read.
std::string resolve_output_path(const std::string& path);

/// Turns input protection on or off (off by default; the CLI turns it on, a library user that
/// rewrites files it read may leave it off). While on, note_input_file records inputs.
void protect_inputs(bool on);

/// Records, while protect_inputs is on, that this process read `path` as an input (scenario,
/// profile, calibration overlay, measured log, ...; the readers call it).
/// check_output_path and write_file_atomically then refuse to write over it. Thread-safe; a
/// path that does not exist is ignored.
void note_input_file(const std::string& path);

/// Checks, before any work, that `path` may receive an output: not empty, its (resolved, see
/// resolve_output_path) directory exists, and the resolved target is absent, a character
/// device or FIFO (/dev/null, a shell pipe: written through), or a regular file that is neither
/// one of `inputs` nor a file noted with note_input_file (compared with
/// std::filesystem::equivalent), nor the file or pipe standard output goes to (the report is
/// printed there: `--trace /dev/stdout > out.txt`). An existing regular file is allowed: it
/// will be overwritten.
/// @param flag  the flag that named the path, for the empty-value message
/// @throws InputError "PATH: is a directory; ..."; "PATH: is not a regular file, a character
///         device or a FIFO; ..." for a socket or block device; "PATH: is the input FILE; ..."
///         for an input; "PATH: is this process's standard output ..."; "output directory '...' does not exist"; "FLAG: expected a file name,
///         got an empty value".
void check_output_path(const std::string& path, const std::string& flag,
                       const std::vector<std::string>& inputs = {});

/// Checks that no two outputs (flag, path) name the same file: the same resolved path, or
/// equivalent existing files.
/// @throws InputError "FLAG1 and FLAG2 name the same file 'PATH'; ..." (FLAG is the first of
///         each pair, naming the output).
void check_distinct_outputs(const std::vector<std::pair<std::string, std::string>>& outputs);

/// Writes `content` to `path` atomically: a temporary file next to the resolved target is
/// written, flushed and renamed over it, so readers never see a half-written file and a
/// failure leaves any existing file untouched. A symlink is written through (its target is
/// replaced, the link stays); an existing regular file is overwritten; a character device or
/// FIFO is written directly (nothing to replace; /dev/full reports its error). The temporary
/// file is a TempFile (temp_files.hpp): ".NAME.tmp.XXXXXX" made by mkstemp, so a link planted
/// in the folder is never written through; it is removed on every failure (and, registered, by
/// the CLI's SIGTERM/SIGINT handler). A replaced file keeps its permission bits (less setuid
/// and setgid); a new one gets 0666 less the umask.
/// @throws InputError as check_output_path (with no flag), or when the file cannot be written:
///         "PATH: cannot create a temporary file in 'DIR': REASON", "PATH: error while writing:
///         REASON" (e.g. "File too large" past `ulimit -f` with SIGXFSZ ignored, "No space left
///         on device"), "PATH: cannot replace output file: REASON".
void write_file_atomically(const std::string& path, const std::string& content);

}  // namespace stepsim
