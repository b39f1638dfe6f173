# STEPSIM_WITH_MPI = AUTO | ON | OFF (style.md §3.9): whether `stepsim sweep` can split its
# points across MPI ranks (tools/mpi_partition.cpp, issue 4 item 4). AUTO uses MPI when
# find_package(MPI COMPONENTS C) finds it (Debian: openmpi-bin libopenmpi-dev); ON fails the
# configure when it does not; OFF never uses it. Sets STEPSIM_MPI (TRUE/FALSE) and, when TRUE,
# the imported target MPI::MPI_C. Only tools/ links it: sim/, hardware/ and models/ know no MPI.
include(${CMAKE_CURRENT_LIST_DIR}/stepsim_tristate.cmake)
stepsim_tristate_option(STEPSIM_WITH_MPI "Split `stepsim sweep` across MPI ranks under mpirun/srun: AUTO, ON or OFF" _stepsim_mpi_mode)

set(STEPSIM_MPI FALSE)
if(NOT _stepsim_mpi_mode STREQUAL "OFF")
  # The C bindings are all we call (the C++ bindings are deprecated and not packaged
  # everywhere). FindMPI's C component needs the C language, which stepsim otherwise does not.
  include(CheckLanguage)
  check_language(C)
  if(CMAKE_C_COMPILER)
    enable_language(C)
    find_package(MPI COMPONENTS C QUIET)
  endif()
  if(MPI_C_FOUND)
    set(STEPSIM_MPI TRUE)
    message(STATUS "MPI: `stepsim sweep` splits points across ranks (MPI ${MPI_C_VERSION}, launcher ${MPIEXEC_EXECUTABLE})")
  elseif(_stepsim_mpi_mode STREQUAL "ON")
    message(FATAL_ERROR "STEPSIM_WITH_MPI=ON but find_package(MPI COMPONENTS C) found no MPI "
                        "(Debian: apt-get install openmpi-bin libopenmpi-dev, or set MPI_HOME)")
  else()
    message(STATUS "MPI: not used (STEPSIM_WITH_MPI=AUTO and find_package(MPI COMPONENTS C) found none)")
  endif()
endif()
