#!/usr/bin/env bash
# The measurements behind docs/scale.md's partition model: for each graph,
# `halo-partition --method metis` and `mpirun -np K halo-partition --method
# ptscotch` for each K, side by side in one run, with the peak RSS of the
# largest rank (--json's peak_rss_bytes_max), the edge cut and comm volume
# against METIS', and the wall time of each phase.
#
#   bench/partition-scale.sh
#
# K larger than the cores oversubscribes them: the memory and the cut are
# what K hosts would give, the wall time is not (it measures the cores'
# sharing).  No ptscotch run here reads a file, so the load phase is the
# generators'.
#
# Environment: HALO_BUILD (build folder, default build), HALO_SCALE_SPECS
# (graphs, one a line; default the SBMs of 2.1M, 10.5M and 21M directed
# edges and an R-MAT graph of 7.6M), HALO_SCALE_KS (default "1 2 4 8"),
# HALO_SCALE_PARTS (16).  docs/scale.md's table is this script's default
# run, and the K = P = 8 rows are HALO_SCALE_PARTS=8 HALO_SCALE_KS=8 on the
# two larger SBMs.  About 15 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."

build=${HALO_BUILD:-build}
exe=$build/bin/halo-partition
parts=${HALO_SCALE_PARTS:-16}
ks=${HALO_SCALE_KS:-1 2 4 8}
specs=${HALO_SCALE_SPECS:-"sbm:nodes=100000,classes=16,avg-degree=21,homophily=0.8,feat=32,seed=1
sbm:nodes=500000,classes=16,avg-degree=21,homophily=0.8,feat=32,seed=1
sbm:nodes=1000000,classes=16,avg-degree=21,homophily=0.8,feat=32,seed=1
rmat:scale=18,edge-factor=16,seed=1"}

if [ ! -x "$exe" ]; then
  cmake -S . -B "$build" >/dev/null
  cmake --build "$build" -j "$(nproc)" --target halo-partition >/dev/null
fi
work=$(mktemp -d /tmp/halo-bench-scale.XXXXXX)
trap 'rm -rf "$work"' EXIT

# json_num FILE KEY: the first number after "KEY": in FILE.
json_num() { grep -o "\"$2\": [-0-9.e+]*" "$1" | head -1 | sed 's/.*: //'; }
# The flags that give a graph without node data features and classes.
node_flags() { case $1 in rmat:*) echo "--synthetic-features 32 --synthetic-classes 16" ;; esac; }

echo "machine  $(nproc) cores, $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo), $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)"
echo "date     $(date -u +%Y-%m-%d), $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
echo "parts    $parts"
echo
printf '%-58s %-10s %9s %9s %12s %7s %7s %8s %8s\n' graph run edges "peak MB" "edge cut" "cut x" "vol x" "part s" "total s"
while IFS= read -r spec; do
  [ -n "$spec" ] || continue
  flags=$(node_flags "$spec")
  # shellcheck disable=SC2086
  "$exe" --input "$spec" --parts "$parts" --out "$work/m" --force --json "$work/m.json" $flags </dev/null >/dev/null
  m_cut=$(json_num "$work/m.json" edge_cut)
  m_vol=$(json_num "$work/m.json" comm_volume)
  row() { # label json
    awk -v g="$spec" -v l="$1" -v e="$(json_num "$2" edges)" -v r="$(json_num "$2" peak_rss_bytes_max)" \
      -v c="$(json_num "$2" edge_cut)" -v v="$(json_num "$2" comm_volume)" -v mc="$m_cut" -v mv="$m_vol" \
      -v p="$(json_num "$2" partition)" -v t="$(json_num "$2" total)" 'BEGIN {
      printf "%-58s %-10s %9d %9.0f %12d %7.3f %7.3f %8.1f %8.1f\n", g, l, e, r / 1e6, c, c / mc, v / mv, p, t }'
  }
  row metis "$work/m.json"
  for K in $ks; do
    # shellcheck disable=SC2086
    mpirun --allow-run-as-root --oversubscribe --bind-to none -np "$K" -x OMP_NUM_THREADS=1 \
      "$exe" --method ptscotch --input "$spec" --parts "$parts" --out "$work/p$K" --force \
      --json "$work/p$K.json" $flags </dev/null >/dev/null
    row "ptscotch K=$K" "$work/p$K.json"
  done
done <<<"$specs"
echo
echo "peak MB: the largest rank's peak RSS (10^6 bytes); cut x, vol x: against METIS'"
