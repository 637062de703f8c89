#!/usr/bin/env bash
# balance-step.sh: what --balance does to the step (issue 39), side by side
# in one run.  Partitions a power-law graph (R-MAT) into P parts under
# --balance nodes, edges and work (at the default row cost, 4, and at the
# row cost fitted for this model on this machine: see below), trains each
# on P ranks, and prints per partition: the non-zeros' and nodes' max/mean
# (from halo-partition's JSON), the edge cut, and the step's compute
# imbalance over the ranks.
#
# Two figures of the step's imbalance over the ranks, averaged over the
# epochs after the first:
#   work max/mean  each rank's CPU seconds in the step outside its MPI
#                  waits (halo-train's compute_cpu_s_max / compute_cpu_s):
#                  the work each rank did, which does not grow when ranks
#                  share a core, so it holds on a machine with fewer cores
#                  than P;
#   wall max/mean  (epoch - comm_min) / (epoch - comm_mean) from the wall
#                  clock: a rank that finishes early waits for the slowest
#                  in the exchange.  It means something only when each rank
#                  has a core of its own; with fewer cores the ranks take
#                  turns and it measures the scheduler.
#
#   bench/balance-step.sh [BUILD_DIR]          BUILD_DIR defaults to build
#
# Environment: SPEC (rmat:scale=16,edge-factor=8,seed=1), P (4), EPOCHS (30),
# HIDDEN (64), CAL_NODES (40000: the calibration graphs' nodes),
# HALO_BENCH_OUT (bench/results/balance-step).
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
  echo "balance-step.sh: warning: $parts ranks on $cores cores take turns; the wall column measures the scheduler too (the work column does not)" >&2

# The mean of compute_cpu_s over the epochs after the first, from a metrics file.
work_of() {
  python3 - "$1" <<'PY'
import json, sys
v = [d["compute_cpu_s"] for d in map(json.loads, open(sys.argv[1]))
     if not d.get("summary") and d.get("epoch", 0) > 1]
print(sum(v) / len(v))
PY
}

# train SHARDS METRICS RANKS: the same model on every partition.
train() {
  rm -f "$2"
  mpirun --allow-run-as-root --oversubscribe --bind-to none -np "$3" -x OMP_NUM_THREADS=1 \
    "$build/bin/halo-train" "$1" --threads 1 --quiet --epochs "$epochs" --hidden "$hidden" \
    --metrics "$2" >/dev/null 2>"$2.err" || { cat "$2.err" >&2; exit 1; }
}

# The row cost of this model on this machine: one rank's work on two graphs
# of the same nodes, features and classes but 8x the edges apart is
# a*nodes + b*non-zeros twice, so a/b is a row's cost in non-zeros.
cal_nodes=${CAL_NODES:-40000}
declare -A cal
for d in 4 32; do
  shards=$out/cal-$d
  rm -rf "$shards" "$shards.json"
  "$build/bin/halo-partition" --input "sbm:nodes=$cal_nodes,classes=8,avg-degree=$d,feat=32,seed=1" \
    --parts 1 --out "$shards" --json "$shards.json" >/dev/null
  train "$shards" "$shards.jsonl" 1
  cal[$d]="$(python3 -c 'import json,sys; p=json.load(open(sys.argv[1])); print(p["owned"][0], p["local_edges"][0])' "$shards.json") $(work_of "$shards.jsonl")"
done
fit=$(python3 - ${cal[4]} ${cal[32]} <<'PY'
import sys
n1, e1, t1, n2, e2, t2 = map(float, sys.argv[1:])
b = (t2 - t1) / (e2 - e1)
a = (t1 - b * e1) / n1
print(max(0, round(a / b)), f"{a * 1e9:.1f}", f"{b * 1e9:.1f}")
PY
)
read -r row_cost ns_row ns_nnz <<<"$fit"
echo "fitted: a row costs $ns_row ns and a non-zero $ns_nnz ns of one rank's CPU per epoch: --work-row-cost $row_cost"
echo

echo "$spec, $parts parts on $parts ranks, hidden $hidden, $epochs epochs, 1 thread a rank"
printf '%-14s %10s %10s %10s %14s %14s\n' balance "nodes" "non-zeros" "edge cut" "work max/mean" "wall max/mean"
for b in nodes edges work "work:$row_cost"; do
  mode=${b%%:*}
  cost=4
  [ "$b" = "${b#*:}" ] || cost=${b#*:}
  name=$mode-$cost
  shards=$out/$name-$parts
  rm -rf "$shards" "$shards.json"
  "$build/bin/halo-partition" --input "$spec" --synthetic-features 32 --synthetic-classes 8 \
    --parts "$parts" --balance "$mode" --work-row-cost "$cost" --out "$shards" --json "$shards.json" >/dev/null
  m=$out/$name-$parts.jsonl
  train "$shards" "$m" "$parts"
  python3 - "$b" "$shards.json" "$m" <<'PY'
import json, sys
b, part_json, metrics = sys.argv[1:]
p = json.load(open(part_json))
work, wall = [], []
for line in open(metrics):
    d = json.loads(line)
    if d.get("summary") or d.get("epoch", 0) <= 1:
        continue
    if d["compute_cpu_s"] > 0:
        work.append(d["compute_cpu_s_max"] / d["compute_cpu_s"])
    busy_mean, busy_max = d["epoch_s"] - d["comm_s"], d["epoch_s"] - d["comm_s_min"]
    if busy_mean > 0:
        wall.append(busy_max / busy_mean)
mean = lambda v: sum(v) / len(v) if v else float("nan")
print(f"{b:<14} {p['balance']:10.3f} {p['balance_local_edges']:10.3f} {p['edge_cut']:10d} "
      f"{mean(work):14.3f} {mean(wall):14.3f}")
PY
done
