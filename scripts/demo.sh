#!/usr/bin/env bash
# Installs dependencies, builds halo, partitions the bundled Cora into 4 parts
# with METIS and trains a 2-layer GCN on 4 MPI ranks.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j "$(nproc)" >/dev/null

out=${HALO_DEMO_OUT:-/tmp/halo-demo}
build/partition/halo-partition --input datasets/cora --parts 4 --out "$out/cora-4" \
  --dims 1433,16,7 --json "$out/cora-4.json" --force
if [ -x build/src/halo-train ]; then
  root=()
  if [ "$(id -u)" -eq 0 ]; then root=(--allow-run-as-root); fi
  mpirun "${root[@]}" --oversubscribe -np 4 build/src/halo-train "$out/cora-4" \
    --epochs 200 --metrics "$out/cora-4.jsonl"
fi
