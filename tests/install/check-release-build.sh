#!/bin/sh
# check-release-build.sh CMAKE SOURCE_DIR GENERATOR C_COMPILER TREE [SKIP_REASON]
#
# Configures SOURCE_DIR in build folder TREE with -DCMAKE_BUILD_TYPE=Release
# -DHALO_WITH_CUDA=OFF and the tests on, and builds everything (-j2).
# Release is the build most users type, and GCC's -O3 warns where -O2 does
# not (-Wformat-truncation, -Wstringop-*), so under -Werror it can fail
# alone.  Where check-no-tests-build.sh (test-build-no-tests, which ctest
# runs first) left TREE/.no-tests-ok, TREE is its Release build of the
# libraries and programs from this same source: only the tests' configure
# and the targets it did not build are added, since HALO_TESTS changes no
# compile command of the rest (CMake rebuilds any object whose command
# changed).  Otherwise TREE is emptied and built from nothing, as when this
# test runs alone.  TREE is removed at the end.  A non-empty SKIP_REASON
# prints it and exits 77 (ctest: skipped).  POSIX sh.
set -eu
cmake=$1 src=$2 generator=$3 cc=$4 tree=$5 reason=${6:-}
if [ -n "$reason" ]; then
  echo "check-release-build: skipped: $reason"
  rm -rf "$tree"
  exit 77
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/halo-release.XXXXXX")
trap 'rm -rf "$tmp" "$tree"' EXIT
step() {
  echo "check-release-build: $*"
  if ! "$@" >"$tmp/step.log" 2>&1; then
    grep -E 'error|warning' "$tmp/step.log" | head -40
    tail -20 "$tmp/step.log"
    echo "check-release-build: failed: $*"
    exit 1
  fi
}
if [ -f "$tree/.no-tests-ok" ]; then
  echo "check-release-build: $tree: the Release libraries and programs of test-build-no-tests, reused"
else
  rm -rf "$tree"
fi
step "$cmake" -S "$src" -B "$tree" -G "$generator" -DCMAKE_C_COMPILER="$cc" \
  -DCMAKE_BUILD_TYPE=Release -DHALO_WITH_CUDA=OFF -DHALO_TESTS=ON
step "$cmake" --build "$tree" -j2
echo "check-release-build: $(grep -c 'Building C object' "$tmp/step.log") C files compiled"
echo "check-release-build: the Release build with the tests compiled under -Werror"
