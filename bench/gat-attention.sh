#!/usr/bin/env bash
# gat-attention.sh: GAT's attention kernels on the CPU, two builds side by
# side in one run (docs/benchmarks.md, "GAT's attention kernels").  Runs
# halo-train --model gat --profile on a generated sbm graph at P=1 with
# each build, alternated REPS times on the same shards, and prints per GAT
# op and for the step the median ms of each build, their ratio, and each
# build's ratio to the op's floor (docs/train.md, "Profile").
#
#   bench/gat-attention.sh BASE_BUILD [BUILD]     BUILD defaults to build
#
# Environment: HALO_BENCH_OUT (results; bench/results/gat-attention), REPS
# (3), EPOCHS (6), THREADS (2), SBM_NODES (200000), SBM_DEGREE (16),
# SBM_FEAT (128), FLAGS (more halo-train flags, e.g. --deterministic).
set -euo pipefail
cd "$(dirname "$0")/.."

base=${1:?usage: bench/gat-attention.sh BASE_BUILD [BUILD]}
build=${2:-build}
out=${HALO_BENCH_OUT:-bench/results/gat-attention}
reps=${REPS:-3}
epochs=${EPOCHS:-6}
threads=${THREADS:-2}
nodes=${SBM_NODES:-200000}
degree=${SBM_DEGREE:-16}
feat=${SBM_FEAT:-128}
sbm="sbm:nodes=$nodes,classes=8,avg-degree=$degree,homophily=0.8,feat=$feat,seed=1"
mkdir -p "$out"
for bin in "$base/bin/halo-train" "$build/bin/halo-train" "$build/bin/halo-partition"; do
  [ -x "$bin" ] || { echo "gat-attention.sh: $bin is missing; build first" >&2; exit 1; }
done

echo "# GAT attention kernels, $(date -u +%Y-%m-%dT%H:%MZ), commit $(git rev-parse --short HEAD)"
echo "# machine: $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# graph: $sbm, P=1, $threads threads; $epochs epochs; $reps alternated runs a build (median)"
d="$out/sbm-$nodes-1"
[ -f "$d/manifest.h5" ] || "$build/bin/halo-partition" --input "$sbm" --parts 1 --out "$d" \
  --force > "$d.txt"
for r in $(seq "$reps"); do
  for side in base this; do
    bin=$build/bin/halo-train
    [ "$side" = base ] && bin=$base/bin/halo-train
    OMP_NUM_THREADS=$threads "$bin" "$d" --model gat --threads "$threads" --epochs "$epochs" \
      --quiet --profile ${FLAGS:-} > "$out/$side-$r.txt" 2>&1
    echo "# run $r $side: step $(awk '$1 == "step" { print $5 }' "$out/$side-$r.txt") ms, load $(cut -d' ' -f1 /proc/loadavg)"
  done
done

# Each file's GAT rows and step row as "side key ms ratio", then per key
# the medians.
for f in "$out"/base-*.txt "$out"/this-*.txt; do
  side=$(basename "$f" | cut -d- -f1)
  awk -v s="$side" '$1 ~ /^gat_/ || ($1 == "step" && $2 == "train") {
    print s, $1 "/" $2 "/" $3, $5, $NF }' "$f"
done | awk '
  function median(list,   n, a, i, j, t) {
    n = split(list, a, " ")
    for (i = 2; i <= n; i++)
      for (j = i; j > 1 && a[j - 1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
  }
  { ms[$1, $2] = ms[$1, $2] " " $3; ratio[$1, $2] = ratio[$1, $2] " " $4
    if (!($2 in seen)) { seen[$2] = 1; keys[++nk] = $2 } }
  END {
    printf "%-28s %10s %10s %7s %12s %12s\n", "op/phase/layer", "base ms", "this ms", "this/base",
      "base/floor", "this/floor"
    for (k = 1; k <= nk; k++) {
      key = keys[k]; b = median(ms["base", key]); t = median(ms["this", key])
      printf "%-28s %10.1f %10.1f %7.3f %12.2f %12.2f\n", key, b, t, (b > 0 ? t / b : 0),
        median(ratio["base", key]), median(ratio["this", key])
    }
  }'
