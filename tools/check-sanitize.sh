#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the whole project and test suite with AddressSanitizer + UndefinedBehaviorSanitizer
# (GCC, -DSTEPSIM_SANITIZE=ON, Debug) into build-asan/ and runs the test suite there (issue 8).
# Any ASan report, leak or UBSan "runtime error" aborts the process and fails its test.
#   bash tools/check-sanitize.sh [extra ctest args, e.g. -L errors]
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
# Without MPI: Open MPI's own allocations (libmpi, its dlopen'ed plugins) are reported by
# LeakSanitizer at exit; the MPI sweep tests run in the Release build instead.
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DSTEPSIM_SANITIZE=ON -DSTEPSIM_BUILD_VALIDATE=OFF \
  -DSTEPSIM_WITH_MPI=OFF >/dev/null
cmake --build build-asan -j "$(nproc)"
# halt_on_error makes UBSan findings fatal (GCC's default is to print and continue).
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}"
ctest --test-dir build-asan --output-on-failure -j "$(nproc)" -LE 'gpu|slow' "$@"
