#!/usr/bin/env bash
# halo-stale.sh: halo-train --halo-stale (docs/train.md, "Stale exchange")
# against the plain exchange, side by side in one run.  For each graph and
# P, trains the same model (same seeds) plain, stale, and stale with
# momentum 0.5, and prints the halo bytes per epoch (measured; the run
# fails its own check if they differ from the prediction), the mean epoch
# time, the share of it that the exchange calls took (for a stale run:
# waiting for last epoch's messages and posting this epoch's), and the final
# test accuracy (mean over SEEDS, and the spread min..max); then the
# training loss curves of seed 0 side by side at a few epochs.  The full
# curves are in $HALO_BENCH_OUT/*.jsonl.
#
# The link is this machine's shared memory and the ranks share 2 vCPUs with
# other work, so the times are noisy and say what the bookkeeping costs,
# not what a slow link saves; the accuracy and the curves are the results.
#
#   bench/halo-stale.sh [BUILD_DIR]          BUILD_DIR defaults to build
#
# Environment: HALO_BENCH_OUT (bench/results/halo-stale), EPOCHS (200),
# PARTS ("2 4"), SEEDS ("0 1 2 3 4"), SBM_NODES (20000; 0 skips the sbm graph),
# GRAPHS ("cora sbm": the graphs to run).
set -euo pipefail
cd "$(dirname "$0")/.."

build=${1:-build}
out=${HALO_BENCH_OUT:-bench/results/halo-stale}
epochs=${EPOCHS:-200}
parts_list=${PARTS:-"2 4"}
seeds=${SEEDS:-"0 1 2 3 4"}
nodes=${SBM_NODES:-20000}
mkdir -p "$out"
for bin in "$build/bin/halo-train" "$build/bin/halo-partition"; do
  [ -x "$bin" ] || { echo "halo-stale.sh: $bin is missing; build first" >&2; exit 1; }
done

wanted=${GRAPHS:-"cora sbm"}
graphs=""
case " $wanted " in *" cora "*) graphs="cora:datasets/cora" ;; esac
# A heterophilous SBM (homophily 0.3), where boundary rows carry the signal.
case " $wanted " in *" sbm "*) [ "$nodes" -gt 0 ] &&
  graphs="$graphs sbm:sbm:nodes=$nodes,classes=8,avg-degree=10,homophily=0.3,feat=64,seed=1" ;; esac

modes="plain stale stale-m0.5"
flags_of() {
  case $1 in
    plain) echo "" ;;
    stale) echo "--halo-stale" ;;
    stale-m0.5) echo "--halo-stale --halo-stale-momentum 0.5" ;;
  esac
}
field() { grep '"summary": true' "$1" | grep -o "\"$2\": [^,}]*" | head -1 | sed 's/.*: //'; }
# The training loss of epoch $2 in metrics file $1.
loss_at() { grep "\"epoch\": $2," "$1" | grep -o '"loss": [^,}]*' | head -1 | sed 's/.*: //'; }

printf '%-5s %2s %-11s %12s %9s %6s %9s %17s\n' graph P mode "bytes/epoch" "epoch ms" "comm%" "test acc" "min..max"
curves=""
for g in $graphs; do
  name=${g%%:*}
  input=${g#*:}
  for p in $parts_list; do
    shards="$out/$name-$p"
    [ -d "$shards" ] || "$build/bin/halo-partition" --input "$input" --parts "$p" --out "$shards" >/dev/null
    for mode in $modes; do
      accs=""
      ms_sum=0
      comm_sum=0
      for seed in $seeds; do
        m="$out/$name-$p-$mode-$seed.jsonl"
        rm -f "$m"
        # shellcheck disable=SC2046
        mpirun --allow-run-as-root --oversubscribe --bind-to none -np "$p" -x OMP_NUM_THREADS=1 \
          "$build/bin/halo-train" "$shards" --threads 1 --quiet --epochs "$epochs" --seed "$seed" \
          $(flags_of "$mode") --metrics "$m" >/dev/null 2>"$m.err" ||
          { cat "$m.err" >&2; exit 1; }
        off=$(field "$m" epochs_off_prediction)
        [ "$off" = 0 ] || { echo "halo-stale.sh: $m: $off epochs off the prediction" >&2; exit 1; }
        accs="$accs $(field "$m" final_test_acc)"
        ms_sum=$(awk -v a="$ms_sum" -v s="$(field "$m" mean_epoch_s)" 'BEGIN{print a + s*1000}')
        comm=$(grep '"epoch": ' "$m" | awk '{ if (match($0, /"comm_s": [0-9.e+-]+/)) c += substr($0, RSTART + 10, RLENGTH - 10);
          if (match($0, /"epoch_s": [0-9.e+-]+/)) t += substr($0, RSTART + 11, RLENGTH - 11) }
          END { if (t > 0) printf "%.1f", 100 * c / t; else print 0 }')
        comm_sum=$(awk -v a="$comm_sum" -v c="$comm" 'BEGIN{print a + c}')
      done
      n=$(echo $seeds | wc -w)
      bytes=$(field "$m" halo_bytes_predicted_per_epoch)
      echo "$accs" | awk -v g="$name" -v p="$p" -v mode="$mode" -v b="$bytes" -v ms="$ms_sum" -v c="$comm_sum" -v n="$n" '{
        lo = 1; hi = 0; s = 0
        for (i = 1; i <= NF; i++) { s += $i; if ($i < lo) lo = $i; if ($i > hi) hi = $i }
        printf "%-5s %2s %-11s %12s %9.2f %6.0f %9.4f %8.4f..%.4f\n", g, p, mode, b, ms / n, c / n, s / NF, lo, hi }'
    done
    # Seed 0's loss curves, side by side.
    first=${seeds%% *}
    line=$(printf '%-5s %2s' "$name" "$p")
    at=""
    for e in 1 2 5 10 20 50 100; do [ "$e" -ge "$epochs" ] || at="$at $e"; done
    for e in $at $epochs; do
      vals=""
      for mode in $modes; do vals="$vals/$(loss_at "$out/$name-$p-$mode-$first.jsonl" "$e" | awk '{printf "%.4f", $1}')"; done
      line="$line  e$e ${vals#/}"
    done
    curves="$curves$line"$'\n'
  done
done
echo
echo "training loss of seed ${seeds%% *} at epoch e: plain/stale/stale-m0.5"
printf '%s' "$curves"
