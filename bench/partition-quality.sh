#!/usr/bin/env bash
# Cut quality of Scotch and PT-Scotch (2 ranks) against METIS, and what
# --balance does, side by side in one run (issue 39).
#
# For each graph and K in 4 and 8: halo-partition --method metis, scotch, and
# mpirun -np 2 ... --method ptscotch; prints each edge cut and the ratios to
# METIS' (target: <= 1.1).  The graphs: Cora (datasets/cora), an SBM, an
# R-MAT, and a generated graph of one large component and many small ones
# (an edge list: a ring lattice of GIANT nodes, 3 neighbours a side and a
# random chord from 1 node in 20, and COMPS small connected random graphs of
# 3 to 62 nodes, written by the awk program below, seeded).  Then R-MAT at
# K = 16 by METIS under --balance nodes, edges and work: max/mean of nodes,
# non-zeros and step cost, and the cut over the node-balanced cut (targets
# for edges: non-zeros <= 1.10, nodes <= 1.5, cut <= 1.3x).
#
# Environment: HALO_BUILD (build folder, default build), HALO_BENCH_DIR
# (scratch folder, default a new one under /tmp, removed at the end).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${HALO_BUILD:-build}
exe=$build/bin/halo-partition
[ -x "$exe" ] || { echo "bench/partition-quality.sh: $exe is missing (build first)" >&2; exit 1; }
work=${HALO_BENCH_DIR:-$(mktemp -d /tmp/halo-quality.XXXXXX)}
mkdir -p "$work"
trap '[ -n "${HALO_BENCH_DIR:-}" ] || rm -rf "$work"' EXIT

awk -v giant=20000 -v comps=3000 -v seed=1 'BEGIN {
  srand(seed)
  for (i = 0; i < giant; i++) {
    for (d = 1; d <= 3; d++) print i, (i + d) % giant
    if (rand() < 0.05) print i, int(rand() * giant)
  }
  base = giant
  for (c = 0; c < comps; c++) {
    s = 3 + int(rand() * rand() * 60)
    for (i = 1; i < s; i++) print base + i, base + int(rand() * i)
    for (j = 0; j < s; j++) { u = int(rand() * s); v = int(rand() * s); if (u != v) print base + u, base + v }
    base += s
  }
}' > "$work/components.txt"

graphs=(datasets/cora
        "sbm:nodes=100000,classes=16,avg-degree=20,homophily=0.8,feat=8,seed=1"
        "rmat:scale=16,edge-factor=8,seed=1"
        "$work/components.txt")
names=(cora sbm-100k rmat-16 components)

cut() { sed -n 's/^edge cut *\([0-9]*\) .*/\1/p'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", (b > 0 ? a / b : (a > 0 ? 99 : 1)) }'; }

printf '%-12s %3s %9s %9s %9s %9s %9s\n' graph K metis scotch ptscotch "scotch x" "pt x"
for i in "${!graphs[@]}"; do
  for k in 4 8; do
    m=$("$exe" --input "${graphs[$i]}" --parts "$k" --out "$work/m" --force 2>&1 | cut)
    s=$("$exe" --input "${graphs[$i]}" --parts "$k" --method scotch --out "$work/s" --force 2>&1 | cut)
    p=$(mpirun --allow-run-as-root --oversubscribe -np 2 "$exe" --input "${graphs[$i]}" --parts "$k" \
          --method ptscotch --out "$work/p" --force 2>&1 | cut)
    printf '%-12s %3d %9d %9d %9d %9s %9s\n' "${names[$i]}" "$k" "$m" "$s" "$p" "$(ratio "$s" "$m")" \
      "$(ratio "$p" "$m")"
  done
done

echo
spec="rmat:scale=17,edge-factor=16,seed=1"
printf '%s, K = 16, METIS\n' "$spec"
printf '%-8s %9s %9s %9s %9s %9s\n' balance nodes nnz cost cut "cut x"
base=
for b in nodes edges work; do
  "$exe" --input "$spec" --parts 16 --balance "$b" --out "$work/b" --force --json "$work/b.json" >/dev/null 2>&1
  read -r bn bz bc c < <(python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print(j["balance"], j["balance_local_edges"], j["balance_cost"], j["edge_cut"])' "$work/b.json")
  [ -n "$base" ] || base=$c
  printf '%-8s %9.3f %9.3f %9.3f %9d %9s\n' "$b" "$bn" "$bz" "$bc" "$c" "$(ratio "$c" "$base")"
done
