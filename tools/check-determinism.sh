#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Determinism across build types (issue 8): the text and JSON reports of every
# configs/examples/*.json (and of `collective`/`threshold`) must be byte-identical between a
# Debug and a Release build (reports carry no wall time). Run-to-run determinism
# within one build is the CTest label `determinism`.
#   bash tools/check-determinism.sh
# Builds Debug into build-debug/ and Release into build-release/ unless given existing build
# trees: DEBUG_BUILD=build-asan RELEASE_BUILD=build bash tools/check-determinism.sh
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
build() {  # DIR TYPE
  cmake -S . -B "$1" -DCMAKE_BUILD_TYPE="$2" -DSTEPSIM_BUILD_TESTS=OFF >/dev/null
  cmake --build "$1" -j "$(nproc)" --target stepsim
}
debug="${DEBUG_BUILD:-build-debug}"
release="${RELEASE_BUILD:-build-release}"
[ -n "${DEBUG_BUILD:-}" ] || build "$debug" Debug
[ -n "${RELEASE_BUILD:-}" ] || build "$release" Release
for d in "$debug" "$release"; do
  [ -x "$d/bin/stepsim" ] || { echo "check-determinism: $d/bin/stepsim not built" >&2; exit 2; }
done
grep -q 'CMAKE_BUILD_TYPE:STRING=Debug' "$debug/CMakeCache.txt" || echo "check-determinism: warning: $debug is not a Debug build" >&2
grep -q 'CMAKE_BUILD_TYPE:STRING=Release' "$release/CMakeCache.txt" || echo "check-determinism: warning: $release is not a Release build" >&2

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cases=()
for f in configs/examples/*.json; do
  for fmt in text json; do cases+=("run $f --format $fmt"); done
done
for fmt in text json; do
  cases+=("collective allreduce --hardware h100-sxm --ranks 64 --size 16GB --format $fmt")
  cases+=("threshold --hardware tpu-v5p --ranks 256 --format $fmt")
done
failed=0
n=0
for c in "${cases[@]}"; do
  n=$((n + 1))
  for side in debug release; do
    d="${!side}"
    # shellcheck disable=SC2086
    if ! "$d/bin/stepsim" $c >"$out/$n.$side.raw" 2>"$out/$n.err"; then
      echo "FAILED to run: $d/bin/stepsim $c: $(cat "$out/$n.err")" >&2
      failed=$((failed + 1))
      continue 2
    fi
    cp "$out/$n.$side.raw" "$out/$n.$side"
  done
  if ! cmp -s "$out/$n.debug" "$out/$n.release"; then
    echo "DIFFERS between $debug and $release: stepsim $c" >&2
    diff "$out/$n.debug" "$out/$n.release" | head -20 >&2 || true
    failed=$((failed + 1))
  fi
done
echo "check-determinism: $n reports compared between $debug (Debug) and $release (Release), $failed differ or failed"
[ "$failed" -eq 0 ]
