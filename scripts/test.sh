#!/usr/bin/env bash
# Installs dependencies, builds halo and runs every test.
#   scripts/test.sh                   Release-with-debug-info build in build/
#   HALO_SANITIZE=1 scripts/test.sh   ASan+UBSan build in build-asan/ only
#   CI=true or HALO_FULL=1            after build/: the ASan+UBSan build and its
#                                     tests, then every fuzz harness for
#                                     HALO_FUZZ_SECONDS (20 s each)
# The whole CI run has to stay under 40 minutes on 2 cores; the stages'
# seconds are printed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."

# Each stage's seconds, printed at the end (and after a failure), so that a
# CI log says where its time went.
times=()
stage_start=$SECONDS
stage() {
  times+=("$1 $((SECONDS - stage_start)) s")
  stage_start=$SECONDS
}
report_times() { echo "test.sh: seconds per stage: ${times[*]:-none}; total $SECONDS s"; }
trap report_times EXIT

bash scripts/install-deps.sh
stage install-deps

jobs=$(nproc)

# build_and_test DIR CMAKE-FLAGS...
build_and_test() {
  local build=$1
  shift
  cmake -S . -B "$build" "$@"
  cmake --build "$build" -j "$jobs"
  stage "build($build)"
  # MPI integration tests start their own ranks, so tests run one at a time.
  ctest --test-dir "$build" --output-on-failure --timeout 900
  stage "ctest($build)"
}

# The ASan+UBSan build.  Leaks inside Open MPI, OpenBLAS, HDF5 and Criterion
# (their own start-up allocations) are suppressed; a leak in halo is not.
# Open MPI's plugins are built without frame pointers, so the fast unwinder
# stops at them and the suppressions cannot see the library: malloc stacks
# are taken with the slow (DWARF) unwinder.  The build links a no-op
# dlclose into every executable (tests/lsan-keep-plugins.c), so the plugins
# stay mapped until exit: with them dlclosed at MPI_Finalize, the leak check
# spent seconds per rank looking up their frames (docs/benchmarks.md, "CI
# time").  Every UBSan report is fatal.
# The sanitized build runs halo's CUDA code on halo-cuda-emu
# (tests/cuda-emu), not on the CUDA runtime: with cuBLAS and cuSPARSE loaded
# into an MPI rank, LeakSanitizer's tracer crashes at exit (and CUDA needs
# ASan's shadow gap unprotected anyway).  So every kernel, stream and halo
# exchange of the GPU tests runs in CI, under ASan and UBSan, without a GPU;
# the normal build above compiles and links every .cu file where nvcc is found.
sanitized() {
  export LSAN_OPTIONS="suppressions=$PWD/tests/lsan.supp:print_suppressions=0"
  export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
  # intercept_tls_get_addr=0: GCC 12's ASan tracks dynamic TLS blocks
  # through __tls_get_addr and, after Open MPI dlcloses a plugin, may keep a
  # stale range that crashes LeakSanitizer's tracer at exit ("Tracer caught
  # signal 11", seen in a singleton halo-train).  Without it those blocks
  # are not scanned as roots: a leak can only be over-reported, not hidden.
  export ASAN_OPTIONS="detect_leaks=1:fast_unwind_on_malloc=0:intercept_tls_get_addr=0"
  # -O1, as the sanitizers' own documentation advises for speed: the
  # tests ran 17% faster than at -O0 (test-train-cuda on the emulator 38%),
  # measured 2026-12-04; the checks are the same.
  build_and_test build-asan -DCMAKE_BUILD_TYPE=Debug "-DCMAKE_C_FLAGS_DEBUG=-O1 -g" \
    "-DCMAKE_CXX_FLAGS_DEBUG=-O1 -g" -DHALO_SANITIZE=ON -DHALO_CUDA_EMU=ON
}

if [ "${HALO_SANITIZE:-0}" = 1 ]; then
  sanitized
  exit 0
fi

build_and_test build -DCMAKE_BUILD_TYPE=RelWithDebInfo

if [ "${CI:-}" = true ] || [ "${HALO_FULL:-0}" = 1 ]; then
  fuzz_seconds=${HALO_FUZZ_SECONDS:-20}
  echo "test.sh: full run: the ASan+UBSan tests, then $fuzz_seconds s of each fuzz harness"
  (sanitized) # a subshell: the sanitizers' options stay out of the fuzz run
  stage "build+ctest(build-asan)"
  bash scripts/fuzz.sh "$fuzz_seconds"
  stage fuzz
fi
