# stepsim_find_nccl(): NCCL's header and library, as nccl-tests finds them: NCCL_HOME (CMake
# variable or environment; e.g. a Python wheel's nvidia/nccl folder), then the CUDA toolkit's
# folders (/usr/local/cuda/include, lib, lib64), then the system. Sets STEPSIM_NCCL_FOUND,
# STEPSIM_NCCL_INCLUDE_DIR and STEPSIM_NCCL_LIBRARY (cache) and finds Threads.
function(stepsim_find_nccl)
  find_package(Threads REQUIRED)
  set(hints)
  foreach(h ${NCCL_HOME} $ENV{NCCL_HOME} ${CUDAToolkit_ROOT} $ENV{CUDA_HOME} ${CUDAToolkit_LIBRARY_ROOT}
            ${CUDAToolkit_TARGET_DIR} /usr/local/cuda)
    list(APPEND hints ${h})
  endforeach()
  find_path(STEPSIM_NCCL_INCLUDE_DIR nccl.h HINTS ${hints} ${CUDAToolkit_INCLUDE_DIRS} PATH_SUFFIXES include)
  # Wheels ship only libnccl.so.2: look for it too.
  find_library(STEPSIM_NCCL_LIBRARY NAMES nccl libnccl.so.2 HINTS ${hints} ${CUDAToolkit_LIBRARY_DIR}
               PATH_SUFFIXES lib lib64 lib/x86_64-linux-gnu)
  if(STEPSIM_NCCL_INCLUDE_DIR AND STEPSIM_NCCL_LIBRARY)
    set(STEPSIM_NCCL_FOUND TRUE PARENT_SCOPE)
  else()
    set(STEPSIM_NCCL_FOUND FALSE PARENT_SCOPE)
  endif()
endfunction()
