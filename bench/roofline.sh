#!/usr/bin/env bash
# roofline.sh: issue 37's per-op table.  For each model and P, one run of
# halo-train --profile on a generated sbm graph: the machine's limits
# (STREAM triad and copy, the random-row gather at the widths and tables
# the SpMMs use, sgemm at the step's largest GEMM), measured in the same
# run, and per op its time, bytes, flops, floor and ratio; then the epoch's
# floor and its ratio (docs/train.md, "Profile").
#
#   bench/roofline.sh [BUILD_DIR]          BUILD_DIR defaults to build
#
# Environment: HALO_BENCH_OUT (results; bench/results/roofline), THREADS
# (threads per rank; all cores divided among the ranks), EPOCHS (15; the
# first 5 are warm-up), MODELS ("gcn sage gin gat"), PARTS ("1 2"),
# SBM_NODES (200000), SBM_DEGREE (16), SBM_FEAT (128), FLOAT_FLAGS (flags
# of every run, e.g. --deterministic).  Ranks of one thread get Open MPI's
# default binding (bench/mpi-bind.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

build=${1:-build}
out=${HALO_BENCH_OUT:-bench/results/roofline}
epochs=${EPOCHS:-15}
models=${MODELS:-gcn sage gin gat}
parts=${PARTS:-1 2}
nodes=${SBM_NODES:-200000}
degree=${SBM_DEGREE:-16}
feat=${SBM_FEAT:-128}
sbm="sbm:nodes=$nodes,classes=8,avg-degree=$degree,homophily=0.8,feat=$feat,seed=1"
mkdir -p "$out"

for bin in "$build/bin/halo-train" "$build/bin/halo-partition"; do
  [ -x "$bin" ] || { echo "roofline.sh: $bin is missing; build first (cmake --build $build)" >&2; exit 1; }
done
root=()
if [ "$(id -u)" -eq 0 ]; then root=(--allow-run-as-root); fi
. bench/mpi-bind.sh

echo "# halo roofline, $(date -u +%Y-%m-%dT%H:%MZ), commit $(git rev-parse --short HEAD)"
echo "# machine: $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)), $(free -g | awk '/Mem:/{print $2}') GiB"
echo "# graph: $sbm; epochs $epochs (5 warm-up)"
for p in $parts; do
  d="$out/sbm-$nodes-$p"
  if [ ! -f "$d/manifest.h5" ]; then
    "$build/bin/halo-partition" --input "$sbm" --parts "$p" --out "$d" --force > "$d.txt"
  fi
  threads=${THREADS:-$(($(nproc) / p > 0 ? $(nproc) / p : 1))}
  read -r -a bind <<<"$(mpi_bind "$threads")"
  mpi=(mpirun "${root[@]}" --oversubscribe "${bind[@]}")
  for m in $models; do
    echo
    echo "## $m, P=$p, $threads thread(s) a rank, binding: ${bind[*]:-the Open MPI default}"
    OMP_NUM_THREADS=$threads "${mpi[@]}" -np "$p" "$build/bin/halo-train" "$d" --model "$m" \
      --threads "$threads" --epochs "$epochs" --warmup 5 --quiet --profile ${FLOAT_FLAGS:-} \
      > "$out/$m-$p.txt" 2>&1
    sed -n '/^profile:/,$p' "$out/$m-$p.txt"
  done
done
