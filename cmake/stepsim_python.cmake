# SPDX-License-Identifier: Apache-2.0
# STEPSIM_PYTHON=AUTO|ON|OFF: the Python module `stepsim` (python/, pybind11). AUTO builds it
# where Python's development headers and pybind11 are found (tools/setup.sh installs both);
# under CI=true a missing one is an error, so the module's tests cannot be skipped silently.
# Not with the sanitizers or the fuzzers (an instrumented module cannot load into a plain
# python3). The static libraries are then compiled as position-independent code, which a
# shared module needs.
set(STEPSIM_PYTHON AUTO CACHE STRING "Build the Python module: AUTO, ON or OFF")
set_property(CACHE STEPSIM_PYTHON PROPERTY STRINGS AUTO ON OFF)
set(STEPSIM_PYTHON_MODULE OFF)
if(NOT STEPSIM_PYTHON STREQUAL "OFF" AND NOT STEPSIM_SANITIZE AND NOT STEPSIM_FUZZ)
  # Debian's python3 (its python3-dev and python3-pytest are what tools/setup.sh installs), not
  # another one first on PATH, unless Python3_EXECUTABLE says otherwise.
  if(NOT DEFINED Python3_EXECUTABLE AND EXISTS /usr/bin/python3)
    set(Python3_EXECUTABLE /usr/bin/python3 CACHE FILEPATH "Python interpreter of the stepsim module and its tests")
  endif()
  find_package(Python3 COMPONENTS Interpreter Development.Module)
  set(PYBIND11_FINDPYTHON ON)
  find_package(pybind11 CONFIG QUIET)
  if(Python3_Development.Module_FOUND AND pybind11_FOUND)
    set(STEPSIM_PYTHON_MODULE ON)
    set(CMAKE_POSITION_INDEPENDENT_CODE ON)
  elseif(STEPSIM_PYTHON STREQUAL "ON" OR "$ENV{CI}" STREQUAL "true")
    message(FATAL_ERROR "the Python module needs python3-dev and pybind11-dev (tools/setup.sh installs them)")
  else()
    message(STATUS "stepsim: Python module not built (python3-dev or pybind11-dev missing)")
  endif()
endif()
