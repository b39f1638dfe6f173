// SPDX-License-Identifier: Apache-2.0
// MPI for `stepsim sweep` (see mpi_partition.hpp). STEPSIM_WITH_MPI is defined for this file
// only, when CMake found MPI; without it MpiWorld is one process and never calls MPI.
#include "tools/mpi_partition.hpp"

#include "sim/support/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <optional>

#ifdef STEPSIM_WITH_MPI
// The C API only: Open MPI's and MPICH's mpi.h otherwise pull in the deprecated C++ bindings,
// which live in a library (libmpi_cxx) that MPI::MPI_C does not link.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#endif

namespace stepsim::tools {

namespace {

/// The integer value of environment variable `name`, or nullopt when unset or not a number.
std::optional<long long> env_int(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::nullopt;
  char* end = nullptr;
  const long long n = std::strtoll(v, &end, 10);
  if (*end != '\0' || n < 0) return std::nullopt;
  return n;
}

}  // namespace

MpiLaunch mpi_launch_from_env() {
  MpiLaunch l;
  auto found = [&](const char* size_var, const char* rank_var) {
    const auto size = size_var ? env_int(size_var) : std::nullopt;
    const auto rank = env_int(rank_var);
    if (!size && !rank) return false;
    l.launched = true;
    l.size = size.value_or(0);
    l.rank = rank.value_or(0);
    l.evidence = size ? fmt::format("{}={}", size_var, *size) : fmt::format("{}={}", rank_var, *rank);
    return true;
  };
  if (found("OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK") || found("PMI_SIZE", "PMI_RANK")) return l;
  if (found(nullptr, "PMIX_RANK")) {
    // PMIx names no size; under srun, Slurm's task count is the job's size.
    for (const char* var : {"SLURM_STEP_NUM_TASKS", "SLURM_NTASKS"})
      if (const auto n = env_int(var)) {
        l.size = *n;
        l.evidence += fmt::format(", {}={}", var, *n);
        break;
      }
    return l;
  }
  const auto tasks = env_int("SLURM_STEP_NUM_TASKS");
  const auto procid = env_int("SLURM_PROCID");
  if (tasks && *tasks > 1 && procid) {
    l.size = *tasks;
    l.rank = *procid;
    l.evidence = fmt::format("SLURM_STEP_NUM_TASKS={}", *tasks);
    l.srun_without_pmi = true;
  }
  return l;
}

namespace {

/// Refuses a launch that would make every process run the whole sweep: rank 0 says why,
/// the others stay quiet.
void refuse_if(bool refuse, const MpiLaunch& launch, const std::string& source, const std::string& why) {
  if (!refuse) return;
  if (launch.rank != 0) throw MpiWorld::Quiet{2};
  throw InputError(source, "", why);
}

void refuse_srun_without_pmi(const MpiLaunch& launch) {
  refuse_if(launch.srun_without_pmi, launch, "srun",
            fmt::format("srun started {} tasks ({}) without an MPI plugin, so each would run the whole sweep or search; "
                        "use srun --mpi=pmix (or pmi2), or srun -n 1",
                        launch.size, launch.evidence));
}

}  // namespace

#ifdef STEPSIM_WITH_MPI

namespace {

// Byte counts go as uint64; MPI counts are int, so payloads travel in chunks of ≤ 1 GiB.
constexpr std::uint64_t kChunk = std::uint64_t{1} << 30;
constexpr int kTag = 4;  // issue 4

void check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw InternalError(fmt::format("{} failed: {}", what, std::string(text, static_cast<std::size_t>(len))));
}

}  // namespace

MpiWorld::MpiWorld(const MpiLaunch& launch) {
  refuse_srun_without_pmi(launch);
  if (!launch.launched || launch.size == 1) return;
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    // Only the main thread calls MPI; the sweep's worker threads never do.
    int provided = 0;
    check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
  }
  joined_ = true;
  // Errors abort the job by default; return them instead so they become messages.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
}

MpiWorld::~MpiWorld() {
  if (joined_) MPI_Finalize();
}

std::vector<std::string> MpiWorld::gather(const std::string& bytes) const {
  if (!joined_) return {bytes};
  const std::uint64_t mine = bytes.size();
  std::vector<std::uint64_t> sizes(rank_ == 0 ? static_cast<std::size_t>(size_) : 0);
  check(MPI_Gather(&mine, 1, MPI_UINT64_T, sizes.data(), 1, MPI_UINT64_T, 0, MPI_COMM_WORLD), "MPI_Gather");
  if (rank_ != 0) {
    for (std::uint64_t at = 0; at < mine; at += kChunk) {
      const auto n = static_cast<int>(std::min(kChunk, mine - at));
      check(MPI_Send(bytes.data() + at, n, MPI_BYTE, 0, kTag, MPI_COMM_WORLD), "MPI_Send");
    }
    return {};
  }
  std::vector<std::string> all(static_cast<std::size_t>(size_));
  all[0] = bytes;
  for (int r = 1; r < size_; ++r) {
    std::string& buf = all[static_cast<std::size_t>(r)];
    buf.resize(sizes[static_cast<std::size_t>(r)]);
    for (std::uint64_t at = 0; at < buf.size(); at += kChunk) {
      const auto n = static_cast<int>(std::min<std::uint64_t>(kChunk, buf.size() - at));
      check(MPI_Recv(buf.data() + at, n, MPI_BYTE, r, kTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv");
    }
  }
  return all;
}

std::vector<std::string> MpiWorld::all_gather(const std::string& bytes) const {
  if (!joined_) return {bytes};
  const std::uint64_t mine = bytes.size();
  std::vector<std::uint64_t> sizes(static_cast<std::size_t>(size_));
  check(MPI_Allgather(&mine, 1, MPI_UINT64_T, sizes.data(), 1, MPI_UINT64_T, MPI_COMM_WORLD), "MPI_Allgather");
  // Each rank's bytes broadcast from it in turn: few ranks and small payloads (a batch of plans).
  std::vector<std::string> all(static_cast<std::size_t>(size_));
  for (int r = 0; r < size_; ++r) {
    std::string& buf = all[static_cast<std::size_t>(r)];
    if (r == rank_) buf = bytes;
    else buf.resize(sizes[static_cast<std::size_t>(r)]);
    for (std::uint64_t at = 0; at < buf.size(); at += kChunk) {
      const auto n = static_cast<int>(std::min<std::uint64_t>(kChunk, buf.size() - at));
      check(MPI_Bcast(buf.data() + at, n, MPI_BYTE, r, MPI_COMM_WORLD), "MPI_Bcast");
    }
  }
  return all;
}

int MpiWorld::broadcast(int value) const {
  if (joined_) check(MPI_Bcast(&value, 1, MPI_INT, 0, MPI_COMM_WORLD), "MPI_Bcast");
  return value;
}

#else  // built without MPI: one process

MpiWorld::MpiWorld(const MpiLaunch& launch) {
  refuse_srun_without_pmi(launch);
  // An unknown count (PMIX_RANK alone) is let through: refusing it could break a plain run.
  refuse_if(launch.launched && launch.size > 1, launch, "mpirun",
            fmt::format("launched as one of several processes ({}) but this stepsim was built without MPI, so "
                        "each would run the whole sweep or search; rebuild with -DSTEPSIM_WITH_MPI=ON (Debian: openmpi-bin "
                        "libopenmpi-dev) or run it without the launcher",
                        launch.evidence));
}

MpiWorld::~MpiWorld() = default;

std::vector<std::string> MpiWorld::gather(const std::string& bytes) const { return {bytes}; }

std::vector<std::string> MpiWorld::all_gather(const std::string& bytes) const { return {bytes}; }

int MpiWorld::broadcast(int value) const { return value; }

#endif

int finish_on_rank_0(const MpiWorld& world, const std::function<void()>& body) {
  int status = 0;
  std::exception_ptr failure;
  try {
    body();
  } catch (const InputError&) {
    status = 2;
    failure = std::current_exception();
  } catch (...) {
    status = 1;
    failure = std::current_exception();
  }
  status = world.broadcast(status);
  if (world.rank() != 0) return 0;
  if (failure) std::rethrow_exception(failure);
  return status;
}

}  // namespace stepsim::tools
