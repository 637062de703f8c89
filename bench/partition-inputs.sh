#!/usr/bin/env bash
# Peak RSS and wall time of halo-partition on one drawn graph given as an
# OGB CSV folder and as an npy edge list with npy node data (dense
# float32 features, int64 labels): what reading the binary layout saves.
#
#   bench/partition-inputs.sh            # 1M nodes x 128 features, ~5M edges
#   HALO_INPUTS_NODES=200000 bench/partition-inputs.sh
#
# Needs numpy (the first of python3, /usr/bin/python3 that imports it) to
# write the inputs, /usr/bin/time for the peak RSS.  Environment:
# HALO_BUILD (default build), HALO_INPUTS_NODES (1000000),
# HALO_INPUTS_FEATURES (128), HALO_INPUTS_DEGREE (5 edges a node),
# HALO_INPUTS_DIR (scratch folder, default a fresh one under /tmp, removed).
set -euo pipefail
cd "$(dirname "$0")/.."

build=${HALO_BUILD:-build}
exe=$build/bin/halo-partition
nodes=${HALO_INPUTS_NODES:-1000000}
feat=${HALO_INPUTS_FEATURES:-128}
degree=${HALO_INPUTS_DEGREE:-5}
py=
for cand in python3 /usr/bin/python3; do
  if "$cand" -c 'import numpy' 2>/dev/null; then py=$cand; break; fi
done
[ -n "$py" ] || { echo "partition-inputs: needs numpy" >&2; exit 1; }
dir=${HALO_INPUTS_DIR:-$(mktemp -d /tmp/halo-inputs.XXXXXX)}
[ -n "${HALO_INPUTS_DIR:-}" ] || trap 'rm -rf "$dir"' EXIT

"$py" - "$dir" "$nodes" "$feat" "$degree" <<'PY'
import os, sys
import numpy as np
d, n, f, deg = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
rng = np.random.default_rng(1)
m = n * deg
edge_index = rng.integers(0, n, size=(2, m), dtype=np.int64)
edge_index[0, 0] = n - 1
x = np.round(rng.standard_normal((n, f), dtype=np.float32), 3)
y = rng.integers(0, 16, size=n, dtype=np.int64)
os.makedirs(d + "/npy", exist_ok=True)
np.save(d + "/npy/edges.npy", edge_index)
np.save(d + "/npy/feat.npy", x)
np.save(d + "/npy/labels.npy", y)
os.makedirs(d + "/csv", exist_ok=True)
open(d + "/csv/num-node-list.csv", "w").write("%d\n" % n)
np.savetxt(d + "/csv/edge.csv", edge_index.T, fmt="%d", delimiter=",")
np.savetxt(d + "/csv/node-label.csv", y, fmt="%d")
with open(d + "/csv/node-feat.csv", "w") as out:
    for lo in range(0, n, 50000):
        np.savetxt(out, x[lo:lo + 50000], fmt="%.3f", delimiter=",")
PY

printf '| input | bytes on disk | wall (s) | load (s) | peak RSS (MB) |\n|---|---:|---:|---:|---:|\n'
run() {
  local name=$1 bytes=$2
  shift 2
  rm -rf "$dir/out"
  /usr/bin/time -v "$exe" "$@" --parts 4 --out "$dir/out" >"$dir/log" 2>"$dir/time"
  local wall rss load
  wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {n = split($2, t, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + t[i]; print s}' "$dir/time")
  rss=$(awk -F': ' '/Maximum resident set size/ {printf "%.0f", $2 * 1024 / 1e6}' "$dir/time")
  load=$(sed -n 's/.*(wall: load \([0-9.]*\),.*/\1/p' "$dir/log")
  printf '| %s | %s | %s | %s | %s |\n' "$name" "$bytes" "$wall" "$load" "$rss"
}
run "OGB CSV folder" "$(du -sb "$dir/csv" | cut -f1)" --input "$dir/csv"
run "npy edge list + npy features, labels" "$(du -sb "$dir/npy" | cut -f1)" \
  --input "$dir/npy/edges.npy" --features "$dir/npy/feat.npy" --labels "$dir/npy/labels.npy"
