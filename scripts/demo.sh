#!/usr/bin/env bash
# Installs dependencies, builds halo, partitions the bundled Cora into 4 parts
# with METIS and trains a 2-layer GCN on 4 MPI ranks.
#
# Environment: HALO_DEMO_OUT (shards and metrics; /tmp/halo-demo, created
# when missing), HALO_DEMO_BUILD (a finished build folder to use instead of
# installing and building into build/), HALO_DEMO_EPOCHS (200).
set -euo pipefail
cd "$(dirname "$0")/.."

build=${HALO_DEMO_BUILD:-}
if [ -z "$build" ]; then
  bash scripts/install-deps.sh
  build=build
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build "$build" -j "$(nproc)" >/dev/null
fi

out=${HALO_DEMO_OUT:-/tmp/halo-demo}
mkdir -p "$out"
"$build/bin/halo-partition" --input datasets/cora --parts 4 --out "$out/cora-4" \
  --dims 1433,16,7 --json "$out/cora-4.json" --force
if [ -x "$build/bin/halo-train" ]; then
  root=()
  if [ "$(id -u)" -eq 0 ]; then root=(--allow-run-as-root); fi
  mpirun "${root[@]}" --oversubscribe -np 4 "$build/bin/halo-train" "$out/cora-4" \
    --epochs "${HALO_DEMO_EPOCHS:-200}" --normalize-features --metrics "$out/cora-4.jsonl" --force
fi
