#!/usr/bin/env bash
# small-graphs.sh: a small graph's epoch, this build against commit BASE's,
# on a quiet node and beside a CPU hog.  Cora in one part, one rank of
# THREADS threads (`--threads` forced, so that the hog's core is used: what
# a neighbour that starts after halo-train meets), each case's runs of the
# two builds alternated REPS times; per case the median mean_epoch_s of
# each (with the range) and their ratio.  With HOG=1 a second table repeats
# the cases beside `taskset -c 0` busy loop (bench/busy-node.sh's hog),
# which is stopped on every exit.  A small graph's epoch is a chain of
# short OpenMP regions: this measures what the team's wakes, the scalar
# remainders of small loops and a second pool of threads cost there
# (docs/benchmarks.md, "Small graphs: the team's wake and the scalar
# loops").
#
#   bench/small-graphs.sh [BUILD_DIR]        BUILD_DIR defaults to build
#
# Environment: BASE (3abb0e6, the commit before that section's changes),
# BASE_DIR (/tmp/halo-base-BASE: its worktree and build-cpu),
# HALO_BENCH_OUT (bench/results/small-graphs), THREADS (2), REPS (3),
# EPOCHS (200; GAT 100), HOG (1), CASES (the lines of the list below).
set -euo pipefail
cd "$(dirname "$0")/.."

build=${1:-build}
base=${BASE:-3abb0e6}
base_dir=${BASE_DIR:-/tmp/halo-base-$base}
out=${HALO_BENCH_OUT:-bench/results/small-graphs}
threads=${THREADS:-2}
reps=${REPS:-3}
epochs=${EPOCHS:-200}
hog_too=${HOG:-1}
default_cases='gcn|--model gcn
gcn --hidden 128|--model gcn --hidden 128
sage|--model sage
gin|--model gin
gat|--model gat --epochs 100
gcn --deterministic|--model gcn --deterministic'
cases=${CASES:-$default_cases}
mkdir -p "$out"
for bin in "$build/bin/halo-train" "$build/bin/halo-partition"; do
  [ -x "$bin" ] || { echo "small-graphs.sh: $bin is missing; build first" >&2; exit 1; }
done
. bench/base-build.sh
base_build "$base" "$base_dir" "$out/base-build.log"
cora="$out/cora-1"
[ -f "$cora/manifest.h5" ] || "$build/bin/halo-partition" --input datasets/cora --parts 1 \
  --out "$cora" --force >"$out/cora-1.txt"

hog=
stop_hog() { if [ -n "$hog" ]; then kill "$hog" 2>/dev/null || true; wait "$hog" 2>/dev/null || true; hog=; fi; }
trap stop_hog EXIT

# epoch BIN FLAGS...: one run's mean_epoch_s.
epoch() {
  local bin=$1 m="$out/run.jsonl"
  shift
  # OMP_WAIT_POLICY must not leak in from the caller's shell: halo-train sets it.
  (unset OMP_WAIT_POLICY GOMP_SPINCOUNT
    OMP_NUM_THREADS=$threads "$bin" "$cora" --threads "$threads" --epochs "$epochs" --quiet \
      --force --metrics "$m" "$@" >"$out/run.log" 2>&1)
  grep '"summary"' "$m" | grep -o '"mean_epoch_s": [^,}]*' | cut -d' ' -f2
}

# stats VALUES...: "median ms (min-max)" and the median alone on fd 3.
middle() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
range() { printf '%s\n' "$@" | sort -g | awk 'NR==1{lo=$1} {hi=$1} END {printf "%.3f-%.3f", 1e3*lo, 1e3*hi}'; }

table() {
  local node=$1
  echo "# $node: Cora, 1 rank x $threads threads, $reps alternated runs of each build, medians (range) in ms"
  printf '%-22s %24s %24s %7s\n' case "$base" "this" ratio
  while IFS='|' read -r name flags; do
    [ -n "$name" ] || continue
    local a=() b=()
    read -r -a f <<<"$flags"
    for _ in $(seq "$reps"); do
      a+=("$(epoch "$base_dir/build-cpu/bin/halo-train" "${f[@]}")")
      b+=("$(epoch "$build/bin/halo-train" "${f[@]}")")
    done
    local ma mb
    ma=$(middle "${a[@]}")
    mb=$(middle "${b[@]}")
    awk -v n="$name" -v ma="$ma" -v mb="$mb" -v ra="$(range "${a[@]}")" -v rb="$(range "${b[@]}")" \
      'BEGIN { printf "%-22s %9.3f (%12s) %9.3f (%12s) %7.2f\n", n, 1e3 * ma, ra, 1e3 * mb, rb, mb / ma }'
  done <<<"$cases"
}

echo "# halo small graphs vs $base, $(date -u +%Y-%m-%dT%H:%MZ), this build $(git rev-parse --short HEAD)"
echo "# machine: $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)); load before $(cut -d' ' -f1-3 /proc/loadavg)"
table quiet
if [ "$hog_too" = 1 ]; then
  taskset -c 0 sh -c 'while :; do :; done' &
  hog=$!
  sleep 1
  table "a CPU hog on core 0"
  stop_hog
fi
