#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs stepsim's build dependencies from Debian packages. Idempotent: does nothing
# (and needs no root) when every package is already installed.
set -euo pipefail
# gnuplot-nox (sweep --plot), Open MPI (sweep across MPI ranks, STEPSIM_WITH_MPI=AUTO) and the
# Python module's python3-dev, pybind11-dev, python3-pytest, python3-numpy and python3-pandas (STEPSIM_PYTHON=AUTO) are optional
# for the build, which works without them, but installed so that the tests cover them; chromium is the
# headless browser tools.report_html loads `stepsim run --report` pages in; python3-torch and
# python3-torchvision (CPU) run tools/export_model.py's test (tests/export).
packages=(cmake g++ make libboost-graph-dev libfmt-dev nlohmann-json3-dev zlib1g-dev catch2 libcli11-dev gnuplot-nox python3
          openmpi-bin libopenmpi-dev python3-dev pybind11-dev python3-pytest python3-numpy python3-pandas chromium
          python3-torch python3-torchvision)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "setup: installing ${missing[*]}" >&2
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
