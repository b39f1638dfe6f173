#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Sets up dependencies, configures and builds stepsim into build/ (Release by default).
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE="${STEPSIM_BUILD_TYPE:-Release}" ${STEPSIM_CMAKE_ARGS:-} >/dev/null
cmake --build build -j "$(nproc)"
