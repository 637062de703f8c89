#!/usr/bin/env bash
# busy-node.sh: halo-train's default threads on a node where another process
# holds a core (docs/benchmarks.md, "A busy node").  Cora in one part, one
# rank (mpirun --bind-to none, so that the rank may use every core), the
# mean epoch time of:
#   default      halo-train's defaults: threads = the cores not busy at
#                start (train/train-cores.c), OMP_WAIT_POLICY passive (set
#                by halo-train itself, cli-env.c)
#   all-passive  --threads CORES, passive: the wait policy alone
#   old          --threads CORES with OMP_WAIT_POLICY=active (libgomp's
#                spinning): the default before 2026-12-06
#   threads-1    --threads 1
# each on a quiet node and with a CPU hog pinned to core 0 (taskset -c 0 sh
# -c 'while :; do :; done'), alternated REPS times (the median is shown).
# Target: on the busy node, default within 1.5x of --threads 1; on the quiet
# one, default no slower than old beyond the noise.
#
#   bench/busy-node.sh [BUILD_DIR]          BUILD_DIR defaults to build
#
# Environment: HALO_BENCH_OUT (bench/results/busy-node), REPS (5), EPOCHS
# (100, the first 5 warm-up).
set -euo pipefail
cd "$(dirname "$0")/.."

build=${1:-build}
out=${HALO_BENCH_OUT:-bench/results/busy-node}
reps=${REPS:-5}
epochs=${EPOCHS:-100}
mkdir -p "$out"
for bin in "$build/bin/halo-train" "$build/bin/halo-partition"; do
  [ -x "$bin" ] || { echo "busy-node.sh: $bin is missing; build first" >&2; exit 1; }
done
root=()
if [ "$(id -u)" -eq 0 ]; then root=(--allow-run-as-root); fi

echo "# halo busy node, $(date -u +%Y-%m-%dT%H:%MZ), commit $(git rev-parse --short HEAD)"
echo "# machine: $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs))"
echo "# Cora, 1 rank, $epochs epochs, $reps alternated runs of each mode (median); load average" \
  "before: $(cut -d' ' -f1-3 /proc/loadavg)"

"$build/bin/halo-partition" --input datasets/cora --parts 1 --out "$out/cora-1" \
  --dims 1433,16,7 --force >/dev/null

# run MODE TAG: one run's mean epoch time (ms) and its header's threads.
run() {
  local mode=$1 tag=$2 flags=() env=()
  case $mode in
    all-passive) flags=(--threads "$(nproc)") ;;
    old) env=(OMP_WAIT_POLICY=active) flags=(--threads "$(nproc)") ;;
    threads-1) flags=(--threads 1) ;;
  esac
  env "${env[@]}" mpirun "${root[@]}" --bind-to none -np 1 \
    "$build/bin/halo-train" "$out/cora-1" --epochs "$epochs" --quiet "${flags[@]}" \
    >"$out/$tag.txt" 2>&1
  grep -o 'mean epoch [0-9.]* ms' "$out/$tag.txt" | awk '{print $3}'
}

median() { sort -g | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }

hog=
stop_hog() { if [ -n "$hog" ]; then kill "$hog" 2>/dev/null || true; wait "$hog" 2>/dev/null || true; hog=; fi; }
trap stop_hog EXIT

modes=(default all-passive old threads-1)
for node in quiet busy; do
  if [ "$node" = busy ]; then
    taskset -c 0 sh -c 'while :; do :; done' &
    hog=$!
    sleep 1
  fi
  declare -A times=()
  for rep in $(seq "$reps"); do
    for mode in "${modes[@]}"; do
      # OMP_WAIT_POLICY must not leak in from the caller's shell.
      t=$(unset OMP_WAIT_POLICY GOMP_SPINCOUNT; run "$mode" "$node-$mode-$rep")
      times[$mode]+="$t "
    done
  done
  stop_hog
  line="$node:"
  for mode in "${modes[@]}"; do
    m=$(tr ' ' '\n' <<<"${times[$mode]}" | grep . | median)
    line+=" $mode $m ms (runs: ${times[$mode]% });"
    declare "med_${node}_${mode//-/_}=$m"
  done
  echo "$line"
  head -3 "$out/$node-default-1.txt" | grep '^parts:' | sed "s/^/  $node default header: /"
done
awk -v d="$med_busy_default" -v t="$med_busy_threads_1" -v qd="$med_quiet_default" \
  -v qs="$med_quiet_old" 'BEGIN {
    printf "busy: default / threads-1 = %.2fx (target <= 1.5x); quiet: default / old = %.2fx\n",
      d / t, qd / qs }'
