#!/usr/bin/env bash
# halo-precision.sh: bytes and accuracy of halo-train --halo-precision
# (docs/train.md, "Low-bit halo rows"), side by side in one run.  For each
# graph and P, trains the same model (same seed) once per precision and
# prints the halo bytes per epoch (measured; the run fails its own check if
# they differ from the prediction), the ratio to fp32's bytes, the mean
# epoch time, the share of it in communication, and the final test
# accuracy.  The link is this machine's shared memory, so the times say
# what packing costs, not what a slow link saves; the bytes and the
# accuracy are the results.  bench/comm-netns.sh runs the modes over an
# emulated cluster link.
#
#   bench/halo-precision.sh [BUILD_DIR]          BUILD_DIR defaults to build
#
# Environment: HALO_BENCH_OUT (bench/results/halo-precision), EPOCHS (100),
# PARTS ("2 4"), SEEDS ("0"), SBM_NODES (20000; 0 skips the sbm graph).
set -euo pipefail
cd "$(dirname "$0")/.."

build=${1:-build}
out=${HALO_BENCH_OUT:-bench/results/halo-precision}
epochs=${EPOCHS:-100}
parts_list=${PARTS:-"2 4"}
seeds=${SEEDS:-"0"}
nodes=${SBM_NODES:-20000}
mkdir -p "$out"
for bin in "$build/bin/halo-train" "$build/bin/halo-partition"; do
  [ -x "$bin" ] || { echo "halo-precision.sh: $bin is missing; build first" >&2; exit 1; }
done

graphs="cora:datasets/cora"
# A heterophilous SBM (homophily 0.3), where boundary rows carry the signal.
[ "$nodes" -gt 0 ] &&
  graphs="$graphs sbm:sbm:nodes=$nodes,classes=8,avg-degree=10,homophily=0.3,feat=64,seed=1"

field() { grep '"summary": true' "$1" | grep -o "\"$2\": [^,}]*" | head -1 | sed 's/.*: //'; }

printf '%-5s %2s %-10s %12s %7s %10s %7s %9s\n' graph P "fwd/bwd" "bytes/epoch" "vs fp32" "epoch ms" "comm%" "test acc"
for g in $graphs; do
  name=${g%%:*}
  input=${g#*:}
  for p in $parts_list; do
    shards="$out/$name-$p"
    [ -d "$shards" ] || "$build/bin/halo-partition" --input "$input" --parts "$p" --out "$shards" >/dev/null
    base=""
    for mode in fp32/fp32 bf16/bf16 fp16/fp16 int8/int8 int4/int4 int2/int2 int8/bf16; do
      fwd=${mode%/*}
      bwd=${mode#*/}
      acc_sum=0
      for seed in $seeds; do
        m="$out/$name-$p-$fwd-$bwd-$seed.jsonl"
        rm -f "$m"
        mpirun --allow-run-as-root --oversubscribe --bind-to none -np "$p" -x OMP_NUM_THREADS=1 \
          "$build/bin/halo-train" "$shards" --threads 1 --quiet --epochs "$epochs" --seed "$seed" \
          --halo-precision "$fwd" --halo-precision-bwd "$bwd" --metrics "$m" >/dev/null 2>"$m.err" ||
          { cat "$m.err" >&2; exit 1; }
        off=$(field "$m" epochs_off_prediction)
        [ "$off" = 0 ] || { echo "halo-precision.sh: $m: $off epochs off the prediction" >&2; exit 1; }
        acc_sum=$(awk -v a="$acc_sum" -v b="$(field "$m" final_test_acc)" 'BEGIN{print a+b}')
      done
      n=$(echo $seeds | wc -w)
      bytes=$(field "$m" halo_bytes_predicted_per_epoch)
      [ -n "$base" ] || base=$bytes
      ms=$(awk -v s="$(field "$m" mean_epoch_s)" 'BEGIN{printf "%.2f", s*1000}')
      comm=$(grep '"epoch": ' "$m" | awk '{ if (match($0, /"comm_s": [0-9.e+-]+/)) c += substr($0, RSTART + 10, RLENGTH - 10);
        if (match($0, /"epoch_s": [0-9.e+-]+/)) t += substr($0, RSTART + 11, RLENGTH - 11) }
        END { if (t > 0) printf "%.0f", 100 * c / t; else print "n/a" }')
      printf '%-5s %2s %-10s %12s %7.3f %10s %7s %9.4f\n' "$name" "$p" "$mode" "$bytes" \
        "$(awk -v a="$bytes" -v b="$base" 'BEGIN{print a/b}')" "$ms" "$comm" \
        "$(awk -v a="$acc_sum" -v n="$n" 'BEGIN{print a/n}')"
    done
  done
done
