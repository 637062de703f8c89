#!/usr/bin/env bash
# halo-aggregate.sh: rows of halo-train --halo-aggregate auto against the
# plain exchange (docs/train.md, "Pre- and post-aggregation"), side by side
# in one run.  For each graph and part count K, halo-partition --dims ...
# --halo-aggregate auto prints the rows one exchange moves: every halo row
# (post, "plain") and the sum of each pair's minimum vertex cover (auto,
# "cover"), with their ratio and the predicted GCN bytes per epoch.  Then,
# at TRAIN_PARTS, halo-train runs post and auto on the same shards (same
# seed, both on the float sums that auto needs: --no-deterministic) and prints the bytes measured per epoch (each run fails its own
# check if they differ from the prediction), the mean epoch time, and the
# largest loss difference between the two runs.  The link is this
# machine's shared memory: the rows and bytes are the results; the times
# say what the partial sums cost, not what a slow link saves.
#
#   bench/halo-aggregate.sh [BUILD_DIR]          BUILD_DIR defaults to build
#
# Environment: HALO_BENCH_OUT (bench/results/halo-aggregate), PARTS
# ("2 4 8 16"), TRAIN_PARTS (4; empty skips training), EPOCHS (50),
# SBM_NODES (20000), RMAT_SCALE (14).
set -euo pipefail
cd "$(dirname "$0")/.."

build=${1:-build}
out=${HALO_BENCH_OUT:-bench/results/halo-aggregate}
parts_list=${PARTS:-"2 4 8 16"}
train_parts=${TRAIN_PARTS-4}
epochs=${EPOCHS:-50}
nodes=${SBM_NODES:-20000}
scale=${RMAT_SCALE:-14}
mkdir -p "$out"
for bin in "$build/bin/halo-train" "$build/bin/halo-partition"; do
  [ -x "$bin" ] || { echo "halo-aggregate.sh: $bin is missing; build first" >&2; exit 1; }
done

# name|input|dims|extra halo-partition flags
graphs=(
  "cora|datasets/cora|1433,16,7|"
  "sbm|sbm:nodes=$nodes,classes=8,avg-degree=10,homophily=0.3,feat=64,seed=1|64,16,8|"
  "rmat|rmat:scale=$scale,edge-factor=16,seed=1|32,16,8|--synthetic-features 32 --synthetic-classes 8"
)

jnum() { grep -o "\"$2\": [0-9.e+-]*" "$1" | head -1 | sed 's/.*: //'; }
field() { grep '"summary": true' "$1" | grep -o "\"$2\": [^,}]*" | head -1 | sed 's/.*: //'; }

echo "rows per exchange, every halo row (plain) and the covers' (auto)"
printf '%-5s %3s %10s %10s %7s %14s %14s\n' graph K "plain" "cover" "cover/plain" "GCN B/epoch" "auto B/epoch"
for g in "${graphs[@]}"; do
  IFS='|' read -r name input dims extra <<<"$g"
  for k in $parts_list; do
    shards="$out/$name-$k"
    # shellcheck disable=SC2086
    "$build/bin/halo-partition" --input "$input" --parts "$k" --out "$shards" --force \
      --dims "$dims" --halo-aggregate auto --json "$shards.json" $extra >/dev/null
    plain=$(jnum "$shards.json" comm_volume)
    cover=$(jnum "$shards.json" predicted_halo_rows_per_exchange)
    printf '%-5s %3s %10s %10s %7.3f %14s %14s\n' "$name" "$k" "$plain" "$cover" \
      "$(awk -v a="$cover" -v b="$plain" 'BEGIN{print (b > 0 ? a/b : 1)}')" \
      "$(jnum "$shards.json" predicted_halo_bytes_per_epoch_fp32_plain)" \
      "$(jnum "$shards.json" predicted_halo_bytes_per_epoch)"
  done
done

[ -n "$train_parts" ] || exit 0
echo
echo "halo-train at P=$train_parts, $epochs epochs, GCN (same seed): measured bytes, time, loss"
printf '%-5s %-5s %12s %10s %12s\n' graph mode "bytes/epoch" "epoch ms" "max |dloss|"
for g in "${graphs[@]}"; do
  IFS='|' read -r name input dims extra <<<"$g"
  shards="$out/$name-$train_parts"
  [ -d "$shards" ] || continue
  for mode in post auto; do
    m="$out/$name-$train_parts-$mode.jsonl"
    rm -f "$m"
    mpirun --allow-run-as-root --oversubscribe --bind-to none -np "$train_parts" \
      -x OMP_NUM_THREADS=1 "$build/bin/halo-train" "$shards" --threads 1 --quiet \
      --epochs "$epochs" --seed 0 --halo-aggregate "$mode" --no-deterministic --metrics "$m" \
      >/dev/null 2>"$m.err" ||
      { cat "$m.err" >&2; exit 1; }
    off=$(field "$m" epochs_off_prediction)
    [ "$off" = 0 ] || { echo "halo-aggregate.sh: $m: $off epochs off the prediction" >&2; exit 1; }
    diff=-
    if [ "$mode" = auto ]; then
      diff=$(paste <(grep -o '"loss": [0-9.e+-]*' "$out/$name-$train_parts-post.jsonl" | sed 's/.*: //') \
                   <(grep -o '"loss": [0-9.e+-]*' "$m" | sed 's/.*: //') |
        awk '{ d = $1 - $2; if (d < 0) d = -d; if (d > w) w = d } END { printf "%.2g", w }')
    fi
    printf '%-5s %-5s %12s %10.2f %12s\n' "$name" "$mode" "$(field "$m" halo_bytes_predicted_per_epoch)" \
      "$(awk -v s="$(field "$m" mean_epoch_s)" 'BEGIN{print s*1000}')" "$diff"
  done
done
