#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the libFuzzer targets of tests/fuzz/ with clang into build-fuzz/ (ASan + UBSan,
# -DSTEPSIM_FUZZ=ON) and runs each one for a bounded time (issue 8). Installs clang and
# compiler-rt (libFuzzer) from Debian first if they are missing; the normal GCC build never
# needs them.
#   bash tools/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]
# Default: 14 s for each of scenario, profile, model, units, nccl_tests, override (one --set
# assignment), calibration (overlay files), kineto (profiler traces). Exit 1 when a
# target crashes, leaks, times out or breaks an invariant; the reproducer is under
# build-fuzz/artifacts/<target>/ (replay: build-fuzz/bin/stepsim_fuzz_<target> FILE).
# Crash inputs belong in tests/fuzz/regressions/<target>/ once minimised (-minimize_crash=1).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-14}"
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(scenario profile model units nccl_tests override calibration kineto)

bash tools/setup.sh
fuzz_packages=(clang libclang-rt-14-dev)
missing=()
for p in "${fuzz_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "fuzz: installing ${missing[*]}" >&2
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi

CXX=clang++ cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSTEPSIM_FUZZ=ON \
  -DSTEPSIM_BUILD_TESTS=OFF >/dev/null
cmake --build build-fuzz -j "$(nproc)" --target $(printf 'stepsim_fuzz_%s ' "${targets[@]}")

declare -A seeds=(
  [scenario]="configs/examples tests/errors/inputs"
  [profile]="hardware/profiles configs/examples/hardware tests/errors/inputs"
  [model]="models/catalog tests/errors/inputs"
  [nccl_tests]="tests/fixtures/nccl$([ -d ../shared/data/nccl ] && echo ' ../shared/data/nccl')"
  [units]="tests/fuzz/corpus/units"
  [override]="tests/fuzz/corpus/override"
  [calibration]="tests/errors/inputs"
  [kineto]="tests/errors/inputs"
)
declare -A dicts=([scenario]=json [profile]=json [model]=json [units]=units [nccl_tests]=nccl_tests [override]=json
  [calibration]=json [kineto]=json)

export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:symbolize=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}"
status=0
summary=""
for t in "${targets[@]}"; do
  corpus="build-fuzz/corpus/$t"
  artifacts="build-fuzz/artifacts/$t/"
  mkdir -p "$corpus" "$artifacts"
  regress=()
  [ -d "tests/fuzz/regressions/$t" ] && regress=("tests/fuzz/regressions/$t")
  log="build-fuzz/fuzz-$t.log"
  echo "fuzz: $t for ${seconds}s" >&2
  # Working corpus first (written to), then the read-only seed and regression directories.
  # shellcheck disable=SC2086
  if build-fuzz/bin/stepsim_fuzz_"$t" "$corpus" ${seeds[$t]} "${regress[@]}" \
      -dict="tests/fuzz/dicts/${dicts[$t]}.dict" -max_total_time="$seconds" -timeout=10 \
      -rss_limit_mb=4096 -max_len=8192 -print_final_stats=1 -artifact_prefix="$artifacts" \
      >"$log" 2>&1; then
    result="ok"
  else
    result="FAILED (see $log; reproducer in $artifacts)"
    status=1
    grep -E -A40 'ERROR: libFuzzer|ERROR: AddressSanitizer|runtime error|fuzz invariant|terminate called|==ERROR' "$log" | head -80 >&2 || true
  fi
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -1 || true)
  summary+=$(printf '%-9s %10s executions  %-10s %s' "$t" "${runs:-?}" "${cov:-}" "$result")$'\n'
done
printf 'fuzz summary (%ss per target):\n%s' "$seconds" "$summary"
exit $status
