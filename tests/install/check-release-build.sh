#!/bin/sh
# check-release-build.sh CMAKE SOURCE_DIR GENERATOR C_COMPILER [SKIP_REASON]
#
# Configures SOURCE_DIR in a fresh temporary build folder with
# -DCMAKE_BUILD_TYPE=Release -DHALO_WITH_CUDA=OFF and the tests on, and builds
# everything (-j2).  Release is the build most users type, and GCC's -O3
# warns where -O2 does not (-Wformat-truncation, -Wstringop-*), so under
# -Werror it can fail alone.  A non-empty SKIP_REASON prints it and exits 77
# (ctest: skipped).  POSIX sh.
set -eu
cmake=$1 src=$2 generator=$3 cc=$4 reason=${5:-}
if [ -n "$reason" ]; then
  echo "check-release-build: skipped: $reason"
  exit 77
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/halo-release.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
step() {
  echo "check-release-build: $*"
  if ! "$@" >"$tmp/step.log" 2>&1; then
    grep -E 'error|warning' "$tmp/step.log" | head -40
    tail -20 "$tmp/step.log"
    echo "check-release-build: failed: $*"
    exit 1
  fi
}
step "$cmake" -S "$src" -B "$tmp/build" -G "$generator" -DCMAKE_C_COMPILER="$cc" \
  -DCMAKE_BUILD_TYPE=Release -DHALO_WITH_CUDA=OFF -DHALO_TESTS=ON
step "$cmake" --build "$tmp/build" -j2
echo "check-release-build: the Release build with the tests compiled under -Werror"
