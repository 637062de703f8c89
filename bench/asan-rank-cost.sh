#!/usr/bin/env bash
# asan-rank-cost.sh: what one mpirun of a sanitized halo program costs before
# it does any work (docs/benchmarks.md, "CI time"), side by side in one run.
# train-probe with no arguments starts MPI on every rank, refuses its
# command line and finalizes: the start-up and exit every integration test
# of the sanitized build pays per mpirun.  Five ASan settings alternate with
# the build without sanitizers, REPS times each; the median seconds of each
# are printed.  The settings of scripts/test.sh's sanitized() are the first
# row.  The second is the same with Open MPI's plugins dlclosed at
# MPI_Finalize (HALO_LSAN_DLCLOSE=1, tests/lsan-keep-plugins.c), as every
# sanitized run did before 2026-12-07: LeakSanitizer's check at exit then
# re-reads the module list for every frame in an unloaded plugin.  The
# others say where the rest goes (the leak check, and the slow unwinder
# that its suppressions need), not settings to test with.
#
#   bench/asan-rank-cost.sh [ASAN_BUILD [BUILD]]   (build-asan, build)
#
# Environment: REPS (3), NP (3 ranks).
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
asan=${1:-build-asan}
plain=${2:-build}
reps=${REPS:-3}
np=${NP:-3}
for b in "$asan" "$plain"; do
  if [ ! -x "$b/tests/train/train-probe" ]; then
    echo "asan-rank-cost: $b/tests/train/train-probe: not built (cmake --build $b --target train-probe)" >&2
    exit 2
  fi
done
if ! nm -D --defined-only "$asan/tests/train/train-probe" | grep -qw dlclose; then
  echo "asan-rank-cost: $asan/tests/train/train-probe: no tests/lsan-keep-plugins.c (built before 2026-12-07?): its rows 1 and 2 are the same" >&2
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export LSAN_OPTIONS="suppressions=$root/tests/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
base="intercept_tls_get_addr=0"
names=("asan: CI's settings" "asan: plugins dlclosed" "asan: no leak check" "asan: fast unwinder"
       "asan: neither" "no sanitizers")
opts=("detect_leaks=1:fast_unwind_on_malloc=0" "detect_leaks=1:fast_unwind_on_malloc=0"
      "detect_leaks=0:fast_unwind_on_malloc=0" "detect_leaks=1:fast_unwind_on_malloc=1"
      "detect_leaks=0:fast_unwind_on_malloc=1" "")
dlclose=(0 1 0 0 0 0)
declare -A samples leaks
err=$(mktemp)
trap 'rm -f "$err"' EXIT
for ((r = 0; r < reps; r++)); do
  for i in "${!names[@]}"; do
    exe=$asan/tests/train/train-probe
    [ -z "${opts[$i]}" ] && exe=$plain/tests/train/train-probe
    s=$(date +%s.%N)
    HALO_LSAN_DLCLOSE=${dlclose[$i]} ASAN_OPTIONS="${opts[$i]}:$base" \
      mpirun --allow-run-as-root --oversubscribe --bind-to none -np "$np" "$exe" >/dev/null 2>"$err"
    e=$(date +%s.%N)
    samples[$i]+="$(echo "$e - $s" | bc) "
    leaks[$i]=$((${leaks[$i]:-0} + $(grep -c "ERROR: LeakSanitizer" "$err")))
  done
done
echo "asan-rank-cost: mpirun -np $np train-probe (MPI start and exit only), $reps runs each, $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg)"
printf '%-24s %9s  %-12s %s\n' setting median "leak reports" samples
for i in "${!names[@]}"; do
  med=$(tr ' ' '\n' <<<"${samples[$i]}" | grep . | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
  printf '%-24s %8.2fs  %-12s %s\n' "${names[$i]}" "$med" "${leaks[$i]}" "${samples[$i]}"
done
echo "(leak reports: the ranks' LeakSanitizer reports over all runs; the fast unwinder's stacks stop in"
echo " Open MPI's plugins and libc, where the suppressions cannot match them: not a setting to test with)"
