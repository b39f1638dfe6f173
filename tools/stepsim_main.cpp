// SPDX-License-Identifier: Apache-2.0
// The stepsim CLI: parse arguments, call the library, print. The only place that maps errors
// to exit codes: 0 ok, 2 bad input (and a request larger than the machine allows: out of
// memory, a thread the system refused to start), 1 internal error. Subcommands live in cmd_*.cpp.
#include "sim/support/atomic_file.hpp"
#include "sim/support/error.hpp"
#include "sim/support/temp_files.hpp"
#include "tools/commands.hpp"
#include "tools/mpi_partition.hpp"

#include <CLI/CLI.hpp>

#include <fcntl.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <new>
#include <string>
#include <system_error>

namespace {

// Error lines echo what the user gave, which may be any bytes (a binary file read as a
// scenario): keep valid UTF-8 and printable ASCII, write every other byte as \xNN.
std::string printable(const char* text) {
  std::string out;
  const auto* p = reinterpret_cast<const unsigned char*>(text);
  const std::size_t n = std::strlen(text);
  for (std::size_t i = 0; i < n;) {
    const unsigned char c = p[i];
    const std::size_t len = stepsim::utf8_sequence_length(p + i, n - i);
    if (len > 0 && (len > 1 || c >= 0x20 || c == '\t') && c != 0x7F) {
      out.append(text + i, len);
      i += len;
    } else {
      char hex[5];
      std::snprintf(hex, sizeof hex, "\\x%02X", c);
      out += hex;
      ++i;
    }
  }
  return out;
}

// InputError caps its own echoes; CLI11's parse errors quote whole arguments, so the line is
// capped here too (a megabyte argument must not come back as a megabyte error line).
void print_error(const char* prefix, const char* what, const char* suffix = "") {
  const std::string line = stepsim::excerpt(printable(what), 8 * stepsim::kMaxEchoBytes);
  std::fprintf(stderr, "%s%s%s\n", prefix, line.c_str(), suffix);
}

// SIGTERM, SIGINT, SIGHUP: remove the temporary files and folders in flight (async-signal-safe:
// unlink / rmdir on stored paths), then die of the same signal (SA_RESETHAND restored the
// default action), so the parent sees the usual status.
void remove_temps_and_die(int sig) {
  stepsim::remove_registered_temp_paths();
  ::raise(sig);
}

void install_signal_handlers() {
  // Past `ulimit -f` a write fails with EFBIG instead of killing the process: the error is
  // reported in one line and the temporary file removed like any other failed write.
  ::signal(SIGXFSZ, SIG_IGN);
  struct sigaction sa {};
  sa.sa_handler = remove_temps_and_die;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESETHAND | SA_NODEFER;
  for (const int sig : {SIGTERM, SIGINT, SIGHUP}) {
    struct sigaction old {};
    // A signal ignored by whoever started us (nohup, a background job) stays ignored.
    if (::sigaction(sig, nullptr, &old) == 0 && old.sa_handler == SIG_IGN) continue;
    ::sigaction(sig, &sa, nullptr);
  }
}

}  // namespace

int main(int argc, char** argv) {
  using namespace stepsim;
#if defined(__GLIBC__)
  // A sweep or plan builds and frees one task graph per point, each of megabytes: glibc would
  // hand every large block back to the kernel (mmap above 128 KiB, trim above 128 KiB free at the
  // top) and fault it in again, zeroed, for the next point. Keeping them costs no more than the
  // largest point's memory and saves about 6 % of a plan's CPU time (tools/bench_plan.sh).
  mallopt(M_MMAP_THRESHOLD, 256 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
#endif
  CLI::App app{"stepsim: discrete-event simulator of one training step: data parallelism (DDP, ZeRO, FSDP, HSDP) with tensor and pipeline parallelism"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "stepsim 0.1");
  protect_inputs(true);  // no output is written over a file this process read
  install_signal_handlers();
  tools::Action action;
  tools::add_run_command(app, action);
  tools::add_collective_commands(app, action);
  tools::add_list_command(app, action);
  tools::add_memory_command(app, action);
  tools::add_calibrate_command(app, action);
  tools::add_sweep_command(app, action);
  tools::add_batch_command(app, action);
  tools::add_compare_command(app, action);
  tools::add_kineto_command(app, action);
  tools::add_accuracy_command(app, action);
  tools::add_plan_command(app, action);
  tools::describe_output_flags(app);

  // A closed standard output would let the next file opened take descriptor 1 and receive the
  // report: refuse to run without one.
  if (fcntl(STDOUT_FILENO, F_GETFD) == -1 && errno == EBADF) {
    const int fd = open("/dev/null", O_WRONLY);  // occupies descriptor 1
    (void)fd;
    print_error("error: ", "standard output is closed; redirect it to a file or /dev/null");
    return 2;
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // Under mpirun / srun every rank parses the same command line: rank 0 alone says what is
    // wrong and carries the status (as MpiWorld's commands do).
    if (const auto launch = tools::mpi_launch_from_env(); launch.launched && launch.rank != 0) return 0;
    print_error("error: ", e.what(), " (see stepsim --help)");
    return 2;
  }

  int status = 0;
  try {
    tools::check_output_flags(app);  // before any work: a bad output path fails fast
    status = action ? action() : 0;
  } catch (const InputError& e) {
    print_error("error: ", e.what());
    status = 2;
  } catch (const InternalError& e) {
    print_error("internal error (please report): ", e.what());
    status = 1;
  } catch (const std::bad_alloc&) {
    // Not a bug and not a crash: the input asked for more memory than this process may use.
    print_error("error: ", "out of memory: this run needs more memory than the process may use (RAM, "
                           "ulimit -v); sweep fewer points, simulate fewer ranks per_rank, or use a smaller -j");
    status = 2;
  } catch (const std::system_error& e) {
    // std::thread and friends: the system refused a resource (a thread, a lock).
    print_error("error: the system refused a resource (", e.what(), "); use a smaller -j or raise the limit");
    status = 2;
  } catch (const std::exception& e) {
    print_error("error: ", e.what());
    status = 1;
  }
  // A report that could not be written (disk full, closed pipe) is a failure, not a success.
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
    print_error("error: writing standard output failed: ", std::strerror(errno));
    return status != 0 ? status : 1;
  }
  return status;
}
