#!/usr/bin/env bash
# halo-sample.sh: bytes and accuracy of halo-train --halo-sample (BNS-GCN's
# boundary sampling; docs/train.md, "Boundary sampling"), side by side in
# one run.  For each graph at P parts (4 by default), trains the same model
# (same seeds) with p = 1 (the plain exchange), 0.5 and 0.1 and prints the
# mean halo bytes per epoch (measured; a run fails its own check if an
# epoch's bytes differ from that epoch's prediction), their ratio to p = 1,
# the mean epoch time, and the final and best-validation test accuracy,
# averaged over the seeds.  The link is this machine's shared memory and
# the machine is shared with other jobs, so the times are noise; the bytes
# and the accuracy are the results.
#
#   bench/halo-sample.sh [BUILD_DIR]             BUILD_DIR defaults to build
#
# Environment: HALO_BENCH_OUT (bench/results/halo-sample), EPOCHS (200),
# PARTS (4), SEEDS ("0 1 2"), SAMPLES ("1 0.5 0.1"), SBM_NODES (20000; 0
# skips the sbm graph), MODEL (gcn).
set -euo pipefail
cd "$(dirname "$0")/.."

build=${1:-build}
out=${HALO_BENCH_OUT:-bench/results/halo-sample}
epochs=${EPOCHS:-200}
parts_list=${PARTS:-4}
seeds=${SEEDS:-"0 1 2"}
samples=${SAMPLES:-"1 0.5 0.1"}
nodes=${SBM_NODES:-20000}
model=${MODEL:-gcn}
mkdir -p "$out"
for bin in "$build/bin/halo-train" "$build/bin/halo-partition"; do
  [ -x "$bin" ] || { echo "halo-sample.sh: $bin is missing; build first" >&2; exit 1; }
done

graphs="cora:datasets/cora"
# A heterophilous SBM (homophily 0.3), where boundary rows carry the signal.
[ "$nodes" -gt 0 ] &&
  graphs="$graphs sbm:sbm:nodes=$nodes,classes=8,avg-degree=10,homophily=0.3,feat=64,seed=1"

field() { grep '"summary": true' "$1" | grep -o "\"$2\": [^,}]*" | head -1 | sed 's/.*: //'; }
# The mean of an epoch-line key over a --metrics file.
mean_key() { grep '"epoch": ' "$1" | grep -o "\"$2\": [0-9.e+-]*" | sed 's/.*: //' |
  awk '{ s += $1; n++ } END { if (n) printf "%.0f", s / n }'; }

printf '%-5s %2s %-5s %5s %13s %8s %9s %9s %9s\n' graph P model p "bytes/epoch" "vs p=1" \
  "epoch ms" "test acc" "at best"
for g in $graphs; do
  name=${g%%:*}
  input=${g#*:}
  for parts in $parts_list; do
    shards="$out/$name-$parts"
    [ -d "$shards" ] ||
      "$build/bin/halo-partition" --input "$input" --parts "$parts" --out "$shards" >/dev/null
    base=""
    for p in $samples; do
      acc=0 best=0 bytes=0 ms=0
      for seed in $seeds; do
        m="$out/$name-$parts-$model-p$p-$seed.jsonl"
        rm -f "$m"
        mpirun --allow-run-as-root --oversubscribe --bind-to none -np "$parts" -x OMP_NUM_THREADS=1 \
          "$build/bin/halo-train" "$shards" --model "$model" --threads 1 --quiet \
          --epochs "$epochs" --seed "$seed" --halo-sample "$p" --metrics "$m" >/dev/null \
          2>"$m.err" || { cat "$m.err" >&2; exit 1; }
        off=$(field "$m" epochs_off_prediction)
        [ "$off" = 0 ] || { echo "halo-sample.sh: $m: $off epochs off the prediction" >&2; exit 1; }
        acc=$(awk -v a="$acc" -v b="$(field "$m" final_test_acc)" 'BEGIN{print a+b}')
        best=$(awk -v a="$best" -v b="$(field "$m" test_acc_at_best_val)" 'BEGIN{print a+b}')
        bytes=$(awk -v a="$bytes" -v b="$(mean_key "$m" halo_bytes)" 'BEGIN{print a+b}')
        ms=$(awk -v a="$ms" -v b="$(field "$m" mean_epoch_s)" 'BEGIN{print a+1000*b}')
      done
      n=$(echo $seeds | wc -w)
      bytes=$(awk -v a="$bytes" -v n="$n" 'BEGIN{printf "%.0f", a/n}')
      [ -n "$base" ] || base=$bytes
      printf '%-5s %2s %-5s %5s %13s %8.3f %9.2f %9.4f %9.4f\n' "$name" "$parts" "$model" "$p" \
        "$bytes" "$(awk -v a="$bytes" -v b="$base" 'BEGIN{print (b > 0 ? a/b : 0)}')" \
        "$(awk -v a="$ms" -v n="$n" 'BEGIN{print a/n}')" \
        "$(awk -v a="$acc" -v n="$n" 'BEGIN{print a/n}')" \
        "$(awk -v a="$best" -v n="$n" 'BEGIN{print a/n}')"
    done
  done
done
