#!/usr/bin/env bash
# balance-step.sh: what --balance does to the step (issue 39), side by side
# in one run.  Partitions a power-law graph (R-MAT) into P parts under
# --balance nodes, edges and work, trains each on P ranks, and prints per
# partition: the non-zeros' and nodes' max/mean (from halo-partition's
# JSON), the edge cut, and the step's compute imbalance over the ranks.
#
# A rank's compute time in an epoch is the epoch minus its time in
# communication (waits included: a rank that finishes early waits for the
# slowest in the exchange).  halo-train's metrics give the epoch time, and
# the least and mean communication time over the ranks, so
#   compute max / mean = (epoch - comm_min) / (epoch - comm_mean),
# averaged over the epochs after the first.  Ranks must each have a core
# of their own for this to mean anything: on a machine with fewer cores
# than P the ranks take turns and the figure measures the scheduler.
#
#   bench/balance-step.sh [BUILD_DIR]          BUILD_DIR defaults to build
#
# Environment: SPEC (rmat:scale=16,edge-factor=8,seed=1), P (4), EPOCHS (30),
# HIDDEN (64), HALO_BENCH_OUT (bench/results/balance-step).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
spec=${SPEC:-rmat:scale=16,edge-factor=8,seed=1}
parts=${P:-4}
epochs=${EPOCHS:-30}
hidden=${HIDDEN:-64}
out=${HALO_BENCH_OUT:-bench/results/balance-step}
for bin in "$build/bin/halo-train" "$build/bin/halo-partition"; do
  [ -x "$bin" ] || { echo "balance-step.sh: $bin is missing; build first" >&2; exit 1; }
done
mkdir -p "$out"
cores=$(nproc)
[ "$cores" -ge "$parts" ] ||
  echo "balance-step.sh: warning: $parts ranks on $cores cores take turns; the imbalance below measures the scheduler too" >&2

echo "$spec, $parts parts on $parts ranks, hidden $hidden, $epochs epochs, 1 thread a rank"
printf '%-8s %10s %10s %10s %12s\n' balance "nodes" "non-zeros" "edge cut" "compute max/mean"
for b in nodes edges work; do
  shards=$out/$b-$parts
  rm -rf "$shards" "$shards.json"
  "$build/bin/halo-partition" --input "$spec" --synthetic-features 32 --synthetic-classes 8 \
    --parts "$parts" --balance "$b" --out "$shards" --json "$shards.json" >/dev/null
  m=$out/$b-$parts.jsonl
  rm -f "$m"
  mpirun --allow-run-as-root --oversubscribe --bind-to none -np "$parts" -x OMP_NUM_THREADS=1 \
    "$build/bin/halo-train" "$shards" --threads 1 --quiet --epochs "$epochs" --hidden "$hidden" \
    --metrics "$m" >/dev/null 2>"$m.err" || { cat "$m.err" >&2; exit 1; }
  python3 - "$b" "$shards.json" "$m" <<'PY'
import json, sys
b, part_json, metrics = sys.argv[1:]
p = json.load(open(part_json))
ratios = []
for line in open(metrics):
    d = json.loads(line)
    if d.get("summary") or d.get("epoch", 0) <= 1:
        continue
    comm_mean = d["comm_s"]
    busy_mean, busy_max = d["epoch_s"] - comm_mean, d["epoch_s"] - d["comm_s_min"]
    if busy_mean > 0:
        ratios.append(busy_max / busy_mean)
print(f"{b:<8} {p['balance']:10.3f} {p['balance_local_edges']:10.3f} {p['edge_cut']:10d} "
      f"{sum(ratios) / len(ratios):12.3f}")
PY
done
