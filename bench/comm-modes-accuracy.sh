#!/usr/bin/env bash
# comm-modes-accuracy.sh: what each communication mode of issue 38 costs in
# accuracy, side by side in one run (docs/benchmarks.md, "The communication
# modes' accuracy").  For each graph it partitions once into P parts, then
# trains the same model with the same seeds once per mode and prints, per
# mode: the halo bytes per epoch (measured; a run whose bytes leave the
# prediction in any epoch stops the script), their ratio to the plain fp32
# exchange, the final test accuracy (mean, sample standard deviation,
# min..max over the seeds), the test accuracy at the best validation epoch
# (mean), and both means' difference from the plain exchange in points.
# The seeds are paired: seed s of a mode starts from the same weights and
# dropout draws as seed s of the plain run.  Every mode runs the float sums
# (--no-deterministic), which --halo-aggregate auto needs, so that the
# modes differ in their exchange alone.
#
#   bench/comm-modes-accuracy.sh [BUILD_DIR]     BUILD_DIR defaults to build
#
# Environment: HALO_BENCH_OUT (bench/results/comm-modes-accuracy), EPOCHS
# (200), P (4), SEEDS ("0 1 2 3 4"), SBM_NODES (20000; 0 skips the SBM),
# MODES (labels from the table below, space-separated; all by default).
set -euo pipefail
cd "$(dirname "$0")/.."

build=${1:-build}
out=${HALO_BENCH_OUT:-bench/results/comm-modes-accuracy}
epochs=${EPOCHS:-200}
p=${P:-4}
seeds=${SEEDS:-"0 1 2 3 4"}
nodes=${SBM_NODES:-20000}
mkdir -p "$out"
for bin in "$build/bin/halo-train" "$build/bin/halo-partition"; do
  [ -x "$bin" ] || { echo "comm-modes-accuracy.sh: $bin is missing; build first" >&2; exit 1; }
done

# label:flags (commas stand for spaces in the flags).  The first is the
# reference every other row is compared with.  Low-bit modes pack both
# directions (the backward's default is fp32).
all_modes="plain:
bf16:--halo-precision,bf16,--halo-precision-bwd,bf16
fp16:--halo-precision,fp16,--halo-precision-bwd,fp16
int8:--halo-precision,int8,--halo-precision-bwd,int8
int4:--halo-precision,int4,--halo-precision-bwd,int4
int2:--halo-precision,int2,--halo-precision-bwd,int2
stale:--halo-stale
int8+stale:--halo-precision,int8,--halo-precision-bwd,int8,--halo-stale
sample-0.5:--halo-sample,0.5
sample-0.1:--halo-sample,0.1
aggregate-auto:--halo-aggregate,auto
int8+stale+auto:--halo-precision,int8,--halo-precision-bwd,int8,--halo-stale,--halo-aggregate,auto"
modes=""
for m in $all_modes; do
  if [ -z "${MODES:-}" ] || [ "${m%%:*}" = plain ] || [[ " $MODES " == *" ${m%%:*} "* ]]; then
    modes="$modes $m"
  fi
done

graphs="cora:datasets/cora"
# A heterophilous SBM (homophily 0.3): most of a node's neighbours are of
# other classes, so the rows that cross the cut carry much of the signal.
[ "$nodes" -gt 0 ] &&
  graphs="$graphs sbm:sbm:nodes=$nodes,classes=8,avg-degree=10,homophily=0.3,feat=64,seed=1"

field() { grep '"summary": true' "$1" | grep -o "\"$2\": [^,}]*" | head -1 | sed 's/.*: //'; }

printf '%-5s %2s %-15s %12s %7s %8s %7s %15s %8s %8s %8s\n' graph P mode "bytes/epoch" "vs fp32" \
  "test acc" "std" "min..max" "at best" "d final" "d best"
for g in $graphs; do
  name=${g%%:*}
  input=${g#*:}
  shards="$out/$name-$p"
  [ -d "$shards" ] || "$build/bin/halo-partition" --input "$input" --parts "$p" --out "$shards" >/dev/null
  base_bytes="" base_acc="" base_best=""
  for mode in $modes; do
    label=${mode%%:*}
    flags=${mode#*:}
    flags=${flags//,/ }
    accs="" bests="" bytes_sum=0 n=0
    for seed in $seeds; do
      m="$out/$name-$p-$label-$seed.jsonl"
      rm -f "$m"
      # shellcheck disable=SC2086 # the mode's flags are words
      mpirun --allow-run-as-root --oversubscribe --bind-to none -np "$p" -x OMP_NUM_THREADS=1 \
        "$build/bin/halo-train" "$shards" --threads 1 --quiet --epochs "$epochs" --seed "$seed" \
        $flags --no-deterministic --metrics "$m" >/dev/null 2>"$m.err" ||
        { cat "$m.err" >&2; exit 1; }
      off=$(field "$m" epochs_off_prediction)
      [ "$off" = 0 ] || { echo "comm-modes-accuracy.sh: $m: $off epochs off the prediction" >&2; exit 1; }
      accs="$accs $(field "$m" final_test_acc)"
      bests="$bests $(field "$m" test_acc_at_best_val)"
      # The mean over the epochs: a sampled exchange moves different bytes
      # in each epoch.
      bytes_sum=$(grep '"epoch": ' "$m" | awk -v a="$bytes_sum" '
        match($0, /"halo_bytes": [0-9]+/) { s += substr($0, RSTART + 14, RLENGTH - 14); k++ }
        END { print a + (k ? s / k : 0) }')
      n=$((n + 1))
    done
    bytes=$(awk -v a="$bytes_sum" -v n="$n" 'BEGIN{printf "%.0f", a/n}')
    stats=$(echo $accs | awk '{ for (i = 1; i <= NF; i++) { s += $i; if (i == 1 || $i < lo) lo = $i; if (i == 1 || $i > hi) hi = $i }
      m = s / NF; for (i = 1; i <= NF; i++) v += ($i - m) ^ 2;
      printf "%.4f %.4f %.4f..%.4f", m, (NF > 1 ? sqrt(v / (NF - 1)) : 0), lo, hi }')
    acc=${stats%% *}
    best=$(echo $bests | awk '{ for (i = 1; i <= NF; i++) s += $i; printf "%.4f", s / NF }')
    [ -n "$base_bytes" ] || { base_bytes=$bytes; base_acc=$acc; base_best=$best; }
    read -r mean std range <<<"$stats"
    printf '%-5s %2s %-15s %12s %7.3f %8s %7s %15s %8s %+8.2f %+8.2f\n' "$name" "$p" "$label" "$bytes" \
      "$(awk -v a="$bytes" -v b="$base_bytes" 'BEGIN{print a/b}')" "$mean" "$std" "$range" "$best" \
      "$(awk -v a="$acc" -v b="$base_acc" 'BEGIN{print 100*(a-b)}')" \
      "$(awk -v a="$best" -v b="$base_best" 'BEGIN{print 100*(a-b)}')"
  done
done
