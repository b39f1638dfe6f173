// SPDX-License-Identifier: Apache-2.0
// `stepsim sweep` and `stepsim plan` across MPI ranks (issue 4 item 4, issue 17 item 4): how
// this process was launched, and the collectives they need (gather every rank's bytes at rank
// 0, all-gather them on every rank, broadcast rank 0's exit status). The only file that includes <mpi.h>; built with it when CMake found MPI
// (STEPSIM_WITH_MPI), else a one-process stub. The simulation (sim/, models/) knows no MPI.
//
// The launch rule: MPI is joined (MPI_Init_thread) only when the environment shows a launcher
// started this process as one of several, so a plain `stepsim sweep` never initialises MPI:
//   - Open MPI's mpirun/mpiexec: OMPI_COMM_WORLD_SIZE (and OMPI_COMM_WORLD_RANK);
//   - PMIx (Open MPI ≥ 4, `srun --mpi=pmix`): PMIX_RANK, the size from SLURM_STEP_NUM_TASKS
//     or SLURM_NTASKS when given, else learnt from MPI;
//   - PMI-1/2 (MPICH's Hydra, `srun --mpi=pmi2`): PMI_SIZE / PMI_RANK.
// A size of 1 (e.g. `srun -n 1` in a batch script) is a plain run. `srun` with several tasks
// but no PMI variables (no MPI plugin) is refused: every task would run the whole sweep.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace stepsim::tools {

/// What the environment says about how this process was started. Reads environment
/// variables only; never calls MPI.
struct MpiLaunch {
  bool launched = false;  ///< a launcher's variables are set (see the rule above)
  long long size = 1;     ///< processes in the job; 0 when launched but the variables do not say
  long long rank = 0;     ///< this process's rank (0 when unknown)
  std::string evidence;   ///< e.g. "OMPI_COMM_WORLD_SIZE=2", for messages ("" when not launched)
  /// Slurm started several tasks (SLURM_STEP_NUM_TASKS > 1) but no PMI variable is set:
  /// MPI would see one-process worlds (size and rank then come from Slurm).
  bool srun_without_pmi = false;
};

/// Reads the launch variables of this process (see the rule at the top of this file).
MpiLaunch mpi_launch_from_env();

/// The MPI world of one `stepsim sweep` job: a real one when this stepsim was built with MPI
/// and `launch` shows several processes (or an unknown count), otherwise a world of one
/// process that never touches MPI. Finalizes MPI on destruction. One per process.
class MpiWorld {
 public:
  /// @throws InputError when launched with several processes but built without MPI, or by
  ///         srun without an MPI plugin (on rank 0; the other ranks throw MpiWorld::Quiet so
  ///         that only one line is printed).
  explicit MpiWorld(const MpiLaunch& launch);
  ~MpiWorld();
  MpiWorld(const MpiWorld&) = delete;
  MpiWorld& operator=(const MpiWorld&) = delete;

  /// Thrown instead of an error on ranks other than 0, whose messages rank 0 prints.
  struct Quiet {
    int status;  ///< the process's exit status
  };

  int rank() const { return rank_; }
  int size() const { return size_; }
  /// True when MPI was initialised (built with MPI and launched as one of several processes).
  bool joined() const { return joined_; }

  /// Collective (every rank must call it, once per round): rank 0 returns every rank's
  /// `bytes` in rank order; the other ranks return an empty vector. Any size (sent in
  /// chunks of ≤ 1 GiB). Without MPI: {bytes}.
  std::vector<std::string> gather(const std::string& bytes) const;

  /// Collective (every rank must call it): every rank returns every rank's `bytes` in rank
  /// order (`stepsim plan`: each batch of simulations). Any size (sent in chunks of ≤ 1 GiB).
  /// Without MPI: {bytes}.
  std::vector<std::string> all_gather(const std::string& bytes) const;

  /// Collective: every rank returns rank 0's `value`.
  int broadcast(int value) const;

 private:
  int rank_ = 0, size_ = 1;
  bool joined_ = false;
};

/// The end of an MPI job (collective): every rank runs `body`, then rank 0's outcome is the
/// job's. Rank 0's status (0; 2 when `body` threw InputError; 1 for any other exception) is
/// broadcast, then rank 0 rethrows its exception, if any, for its one error line and returns
/// the status; the other ranks return 0 and print nothing. Rank 0 alone carries a failure's
/// status: a launcher (Open MPI's mpiexec) aborts the job as soon as any rank exits non-zero,
/// and could then drop rank 0's error line before forwarding it.
int finish_on_rank_0(const MpiWorld& world, const std::function<void()>& body);

}  // namespace stepsim::tools
