#!/bin/sh
# check-no-tests-build.sh CMAKE SOURCE_DIR GENERATOR C_COMPILER VERSION [SKIP_REASON]
#
# Configures SOURCE_DIR in a fresh temporary build folder with
# -DHALO_TESTS=OFF -DHALO_WITH_CUDA=OFF, with Criterion out of pkg-config's
# reach (a pkg-config folder that holds only openblas.pc), builds only
# halo-partition and halo-train (-j2), and runs their --version.  A
# non-empty SKIP_REASON prints it and exits 77 (ctest: skipped).  POSIX sh.
set -eu
cmake=$1 src=$2 generator=$3 cc=$4 version=$5 reason=${6:-}
if [ -n "$reason" ]; then
  echo "check-no-tests-build: skipped: $reason"
  exit 77
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/halo-no-tests.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

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
step "$cmake" -S "$src" -B "$tmp/build" -G "$generator" -DCMAKE_C_COMPILER="$cc" \
  -DHALO_TESTS=OFF -DHALO_WITH_CUDA=OFF
step "$cmake" --build "$tmp/build" -j2 --target halo-partition halo-train
if [ -e "$tmp/build/tests" ] || [ -e "$tmp/build/bench" ]; then
  echo "check-no-tests-build: HALO_TESTS=OFF still configured tests/ or bench/"
  exit 1
fi
for prog in halo-partition halo-train; do
  out=$("$tmp/build/bin/$prog" --version 2>&1) || {
    echo "check-no-tests-build: $prog --version failed: $out"
    exit 1
  }
  case $out in
    "$prog $version "*) echo "ok   $prog --version: $out" ;;
    *) echo "check-no-tests-build: $prog --version printed '$out'"; exit 1 ;;
  esac
done
echo "check-no-tests-build: both programs built without Criterion (HALO_TESTS=OFF)"
