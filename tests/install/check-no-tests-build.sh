#!/bin/sh
# check-no-tests-build.sh CMAKE SOURCE_DIR GENERATOR C_COMPILER VERSION TREE [SKIP_REASON]
#
# Configures SOURCE_DIR in TREE, emptied first, with -DHALO_TESTS=OFF
# -DHALO_WITH_CUDA=OFF and no build type (the default, RelWithDebInfo, must
# be what CMakeLists.txt sets), with Criterion out of pkg-config's reach (a
# pkg-config folder that holds only openblas.pc); then switches TREE to
# Release, builds only halo-partition and halo-train (-j2), and runs their
# --version.  On success it leaves TREE with TREE/.no-tests-ok in it:
# check-release-build.sh (test-build-release, which ctest runs next) turns
# TREE's tests on and builds the rest, so the libraries and the programs are
# compiled at -O3 once for both checks (CI's time, docs/benchmarks.md, "CI
# time").  On failure TREE is removed.  A non-empty SKIP_REASON prints it
# and exits 77 (ctest: skipped).  POSIX sh.
set -eu
cmake=$1 src=$2 generator=$3 cc=$4 version=$5 tree=$6 reason=${7:-}
if [ -n "$reason" ]; then
  echo "check-no-tests-build: skipped: $reason"
  exit 77
fi
rm -rf "$tree"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/halo-no-tests.XXXXXX")
ok=0
trap 'rm -rf "$tmp"; [ "$ok" = 1 ] || rm -rf "$tree"' EXIT

# Only OpenBLAS is found through pkg-config without the tests.
mkdir "$tmp/pkgconfig"
pc=$(pkg-config --variable=pcfiledir openblas)/openblas.pc
ln -s "$pc" "$tmp/pkgconfig/openblas.pc"
PKG_CONFIG_LIBDIR=$tmp/pkgconfig
PKG_CONFIG_PATH=
export PKG_CONFIG_LIBDIR PKG_CONFIG_PATH
if pkg-config --exists criterion; then
  echo "check-no-tests-build: Criterion is still visible to pkg-config; the check would prove nothing"
  exit 1
fi

step() {
  echo "check-no-tests-build: $*"
  if ! "$@" >"$tmp/step.log" 2>&1; then
    cat "$tmp/step.log"
    echo "check-no-tests-build: failed: $*"
    exit 1
  fi
}
step "$cmake" -S "$src" -B "$tree" -G "$generator" -DCMAKE_C_COMPILER="$cc" \
  -DHALO_TESTS=OFF -DHALO_WITH_CUDA=OFF
if ! grep -qx 'CMAKE_BUILD_TYPE:STRING=RelWithDebInfo' "$tree/CMakeCache.txt"; then
  echo "check-no-tests-build: configured without a build type, the cache does not hold RelWithDebInfo"
  exit 1
fi
step "$cmake" -S "$src" -B "$tree" -DCMAKE_BUILD_TYPE=Release
step "$cmake" --build "$tree" -j2 --target halo-partition halo-train
if [ -e "$tree/tests" ] || [ -e "$tree/bench" ]; then
  echo "check-no-tests-build: HALO_TESTS=OFF still configured tests/ or bench/"
  exit 1
fi
for prog in halo-partition halo-train; do
  out=$("$tree/bin/$prog" --version 2>&1) || {
    echo "check-no-tests-build: $prog --version failed: $out"
    exit 1
  }
  case $out in
    "$prog $version "*) echo "ok   $prog --version: $out" ;;
    *) echo "check-no-tests-build: $prog --version printed '$out'"; exit 1 ;;
  esac
done
touch "$tree/.no-tests-ok"
ok=1
echo "check-no-tests-build: both programs built without Criterion (HALO_TESTS=OFF)"
