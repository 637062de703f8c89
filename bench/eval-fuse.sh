#!/usr/bin/env bash
# eval-fuse.sh: issue 37 item 2 side by side.  Two halo-train builds (BASE_BIN,
# e.g. main's, and this build's) on the same sbm shards, their runs
# alternated REPS times in one run so that the VM's noise falls on both
# alike; per model and P: the median mean_epoch_s (the step) and
# mean_eval_s of each, the evaluation against the step (eval/step), and
# the model's measured memory (memory_used_bytes).  With DROPOUT 0.5 (the
# default: --dropout and --input-dropout) the fused input dropout shows;
# with DROPOUT 0 (and --attn-dropout 0 for GAT) the step that reuses the
# evaluation's forward pass does.  The float path (--no-deterministic
# where this build has it).
#
#   bench/eval-fuse.sh BASE_BIN [BUILD_DIR]        BUILD_DIR defaults to build
#
# Environment: HALO_BENCH_OUT (bench/results/eval-fuse), MODELS ("gcn sage
# gin gat"), PARTS ("1 2"), REPS (3), EPOCHS (8; the first 4 warm-up),
# DROPOUT (0.5), THREADS (cores / P), SBM_NODES (200000), SBM_DEGREE (16),
# SBM_FEAT (128).
set -euo pipefail
cd "$(dirname "$0")/.."

base=${1:?usage: bench/eval-fuse.sh BASE_BIN [BUILD_DIR]}
build=${2:-build}
out=${HALO_BENCH_OUT:-bench/results/eval-fuse}
models=${MODELS:-gcn sage gin gat}
parts=${PARTS:-1 2}
reps=${REPS:-3}
epochs=${EPOCHS:-8}
drop=${DROPOUT:-0.5}
sbm="sbm:nodes=${SBM_NODES:-200000},classes=8,avg-degree=${SBM_DEGREE:-16},homophily=0.8,feat=${SBM_FEAT:-128},seed=1"
mkdir -p "$out"
for bin in "$base" "$build/bin/halo-train" "$build/bin/halo-partition"; do
  [ -x "$bin" ] || { echo "eval-fuse.sh: $bin is missing; build first" >&2; exit 1; }
done
root=()
if [ "$(id -u)" -eq 0 ]; then root=(--allow-run-as-root); fi
mpi=(mpirun "${root[@]}" --oversubscribe --bind-to none)
float=()
# The help read whole first: under pipefail, `grep -q` closing the pipe
# early would fail the test with halo-train's SIGPIPE.
help=$("$build/bin/halo-train" --help 2>&1 || true)
if grep -q -- '--no-deterministic' <<<"$help"; then
  float=(--no-deterministic)
fi

echo "# eval-fuse, $(date -u +%Y-%m-%dT%H:%MZ), this build $(git rev-parse --short HEAD) against $base"
echo "# machine: $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)), $(free -g | awk '/Mem:/{print $2}') GiB; load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# graph: $sbm; dropout $drop; epochs $epochs (4 warm-up), $reps alternated runs each, medians"
for p in $parts; do
  d="$out/sbm-$p"
  [ -f "$d/manifest.h5" ] ||
    "$build/bin/halo-partition" --input "$sbm" --parts "$p" --out "$d" --force > "$d.txt"
  threads=${THREADS:-$(($(nproc) / p > 0 ? $(nproc) / p : 1))}
  for m in $models; do
    flags=(--model "$m" --dropout "$drop" --input-dropout "$drop")
    if [ "$m" = gat ] && [ "$drop" = 0 ]; then flags+=(--attn-dropout 0); fi
    raw="$out/$m-$p-$drop.txt"
    : > "$raw"
    for r in $(seq "$reps"); do
      for side in base this; do
        bin=$build/bin/halo-train extra=("${float[@]}")
        if [ "$side" = base ]; then bin=$base extra=(); fi
        f="$out/$m-$p-$side-$r.jsonl"
        OMP_NUM_THREADS=$threads "${mpi[@]}" -np "$p" "$bin" "$d" "${flags[@]}" --threads "$threads" \
          --epochs "$epochs" --warmup 4 --quiet --force --metrics "$f" "${extra[@]}" > "$f.txt" 2>&1
        tail -1 "$f" | python3 -c 'import json, sys; d = json.load(sys.stdin)
print(sys.argv[1], d["mean_epoch_s"], d["mean_eval_s"], d["memory_used_bytes"])' "$side" >> "$raw"
      done
    done
    python3 - "$raw" "$m" "$p" <<'PY'
import statistics as st, sys
rows = [l.split() for l in open(sys.argv[1])]
def med(side, k):
    return st.median(float(r[k]) for r in rows if r[0] == side)
def ratio(side):
    return st.median(float(r[2]) / float(r[1]) for r in rows if r[0] == side)
print("%-5s %2s base %.4f s eval %.4f (%.3f)  this %.4f s eval %.4f (%.3f)  step %.3fx  MB %.1f -> %.1f"
      % (sys.argv[2], sys.argv[3], med("base", 1), med("base", 2), ratio("base"), med("this", 1),
         med("this", 2), ratio("this"), med("this", 1) / med("base", 1), med("base", 3) / 1e6,
         med("this", 3) / 1e6))
PY
  done
done
