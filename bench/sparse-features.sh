#!/usr/bin/env bash
# Sparse bag-of-words features (issue 36): peak RSS and time of
# halo-partition, and halo-train's peak RSS per rank at P = 2, with the
# shards' features stored as CSR (--features-layout sparse, what auto picks
# here) and dense (--features-layout dense, the n x F layout every run had
# before CSR).
#
# Generates (seeded, plain python3) a random graph of N nodes (a ring plus
# 4N random edges), a CSV of N rows x F binary features at DENSITY (0/1,
# written out in full: 2F bytes a row, as a real bag-of-words export is)
# and a label file, then, under /usr/bin/time -v:
#   halo-partition --input edges.txt --features feat.csv --labels labels.csv
#       --synthetic-split 0.1,0.1,0.8 --parts 2 --features-layout L
#   mpirun -np 2 /usr/bin/time -v halo-train DIR --epochs E --threads 1
# for L = sparse and dense, and, when HALO_BENCH_MAIN names a folder holding
# an older build's halo-partition and halo-train (the dense reader), those too;
# then the distributed partitioner's peak RSS per rank (#36: its rows carried
# as CSR), and the older build's when HALO_BENCH_MAIN is set:
#   mpirun -np 2 /usr/bin/time -v halo-partition --method ptscotch (same flags)
#
# Environment: HALO_BUILD (build folder, default build), HALO_BENCH_NODES
# (30000), HALO_BENCH_FEATURES (30000), HALO_BENCH_DENSITY (0.001),
# HALO_BENCH_EPOCHS (3), HALO_BENCH_SEED (36), HALO_BENCH_MAIN (unset),
# HALO_BENCH_DIR (scratch, default a new folder under /tmp, removed at the
# end).
set -euo pipefail
cd "$(dirname "$0")/.."
build=$(cd "${HALO_BUILD:-build}" && pwd)
nodes=${HALO_BENCH_NODES:-30000}
features=${HALO_BENCH_FEATURES:-30000}
density=${HALO_BENCH_DENSITY:-0.001}
epochs=${HALO_BENCH_EPOCHS:-3}
seed=${HALO_BENCH_SEED:-36}
main=${HALO_BENCH_MAIN:-}
dir=${HALO_BENCH_DIR:-$(mktemp -d /tmp/halo-bench-sparse-XXXXXX)}
[ -n "${HALO_BENCH_DIR:-}" ] || trap 'rm -rf "$dir"' EXIT
mkdir -p "$dir"
echo "sparse-features: $nodes nodes x $features features at density $density, seed $seed, in $dir"

python3 - "$dir" "$nodes" "$features" "$density" "$seed" <<'PY'
import random, sys
out, n, F, density, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
rng = random.Random(seed)
with open(f"{out}/edges.txt", "w") as f:
    for v in range(n):
        f.write(f"{v} {(v + 1) % n}\n")
    for _ in range(4 * n):
        f.write(f"{rng.randrange(n)} {rng.randrange(n)}\n")
row = bytearray(b"0," * F)
row[-1:] = b"\n"
nnz = 0
with open(f"{out}/feat.csv", "wb") as f:
    for v in range(n):
        r = bytearray(row)
        k = max(1, round(rng.gauss(density * F, (density * F) ** 0.5)))
        for j in rng.sample(range(F), min(k, F)):
            r[2 * j] = ord("1")
        nnz += min(k, F)
        f.write(r)
with open(f"{out}/labels.csv", "w") as f:
    for v in range(n):
        f.write(f"{rng.randrange(8)}\n")
print(f"sparse-features: wrote feat.csv, {nnz} non-zeros ({nnz / n / F:.4%})")
PY
ls -l "$dir/feat.csv" | awk '{printf "sparse-features: feat.csv is %.2f GB\n", $5 / 1e9}'

# peak RSS (MB = 10^6 bytes, docs/architecture.md "Units"; time's figure is in KiB) and
# wall seconds from /usr/bin/time -v's log.
rss() { awk -F': ' '/Maximum resident set size/ {printf "%.0f", $2 * 1024 / 1e6}' "$1"; }
wall() { awk -F': ' '/Elapsed \(wall clock\)/ {n = split($2, t, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + t[i]; printf "%.1f", s}' "$1"; }
rss_ranks() { awk -F': ' '/Maximum resident set size/ {printf "%s%.0f", sep, $2 * 1024 / 1e6; sep = " "}' "$1"; }

run() { # name, bin folder, extra partition flags
  local name=$1 bin=$2 flags=$3 out="$dir/p-$1"
  rm -rf "$out"
  /usr/bin/time -v "$bin/halo-partition" --input "$dir/edges.txt" --features "$dir/feat.csv" \
    --labels "$dir/labels.csv" --synthetic-split 0.1,0.1,0.8 --parts 2 $flags --out "$out" \
    >"$dir/part-$name.log" 2>"$dir/part-$name.time"
  local version shard
  version=$(h5dump -a format_version "$out/manifest.h5" | awk '/\(0\)/ {print $2}')
  shard=$(du -sb "$out" | awk '{printf "%.0f", $1 / 1e6}')
  mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2 \
    /usr/bin/time -v "$bin/halo-train" "$out" --epochs "$epochs" --threads 1 --quiet \
    >"$dir/train-$name.log" 2>"$dir/train-$name.time"
  printf "%-8s partition: %6s s, peak RSS %6s MB; shards %5s MB (format %s); train P=2: peak RSS per rank %s MB; %s\n" \
    "$name" "$(wall "$dir/part-$name.time")" "$(rss "$dir/part-$name.time")" "$shard" "$version" \
    "$(rss_ranks "$dir/train-$name.time")" "$(grep -o 'the model took.*' "$dir/train-$name.log" | head -1)"
}

run sparse "$build/bin" "--features-layout sparse"
run dense "$build/bin" "--features-layout dense"
[ -z "$main" ] || run main "$main" ""

run_dist() { # name, bin folder: the distributed partitioner, 2 ranks
  local name=$1 bin=$2 out="$dir/d-$1"
  rm -rf "$out"
  mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2 \
    /usr/bin/time -v "$bin/halo-partition" --input "$dir/edges.txt" --features "$dir/feat.csv" \
    --labels "$dir/labels.csv" --synthetic-split 0.1,0.1,0.8 --parts 2 --method ptscotch \
    --out "$out" >"$dir/dist-$name.log" 2>"$dir/dist-$name.time"
  printf "%-8s ptscotch partition, 2 ranks: peak RSS per rank %s MB\n" "$name" \
    "$(rss_ranks "$dir/dist-$name.time")"
}

run_dist sparse "$build/bin"
[ -z "$main" ] || run_dist main "$main"
