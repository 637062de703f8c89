#!/bin/sh
# check-install.sh CMAKE BUILD_DIR SOURCE_DIR VERSION
#
# Installs BUILD_DIR to a temporary prefix P with `cmake --install` and
# checks what a user of P gets: halo-partition and halo-train in P/bin, each
# printing "NAME VERSION ..." for --version, and README.md and every
# docs/*.md of SOURCE_DIR, unchanged, in P/share/doc/halo.  POSIX sh.
set -eu
cmake=$1 build=$2 src=$3 version=$4
tmp=$(mktemp -d "${TMPDIR:-/tmp}/halo-install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
failed=0
fail() {
  echo "FAIL $*"
  failed=1
}

if ! "$cmake" --install "$build" --prefix "$prefix" >"$tmp/install.log" 2>&1; then
  cat "$tmp/install.log"
  echo "check-install: cmake --install $build --prefix $prefix failed"
  exit 1
fi

for prog in halo-partition halo-train; do
  exe=$prefix/bin/$prog
  if [ ! -x "$exe" ]; then
    fail "$exe: not installed"
    continue
  fi
  # halo-train starts MPI (a singleton, without mpirun) and prints on rank 0.
  # In an ASan build LeakSanitizer is off here: its tracer crashes (signal
  # 11) scanning the dynamic TLS of the Open MPI components that a
  # singleton's MPI_Finalize unloads (gcc 12's libsanitizer, seen on
  # 2026-12-02, at earlier commits too); leaks are checked by every test
  # that runs the programs under mpirun.  Other builds ignore the variable.
  rc=0
  out=$(ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" "$exe" --version 2>&1) || rc=$?
  if [ "$rc" -ne 0 ]; then
    fail "$exe --version: exit status $rc: $out"
    continue
  fi
  case $out in
    "$prog $version "*) echo "ok   $exe --version: $out" ;;
    *) fail "$exe --version printed '$out', not '$prog $version ...'" ;;
  esac
done

docdir=$prefix/share/doc/halo
for doc in "$src/README.md" "$src"/docs/*.md; do
  name=${doc##*/}
  if [ ! -f "$docdir/$name" ]; then
    fail "$docdir/$name: not installed (install(FILES ...) in CMakeLists.txt lists the docs)"
  elif ! cmp -s "$doc" "$docdir/$name"; then
    fail "$docdir/$name: differs from $doc"
  else
    echo "ok   $docdir/$name"
  fi
done

if [ "$failed" -ne 0 ]; then
  echo "check-install: the installed prefix is incomplete"
  exit 1
fi
echo "check-install: both programs and every document installed"
