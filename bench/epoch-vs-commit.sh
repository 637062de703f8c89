#!/usr/bin/env bash
# epoch-vs-commit.sh: issue 37's side-by-side measurement.  This build's
# halo-train against commit BASE's (2d5ab35 by default; a git worktree of it
# built in /tmp, CPU only), on the same shards, the two runs of each case
# alternated REPS times so that the VM's noise falls on both alike; per
# model (GCN, SAGE, GIN, GAT) and P (1, 2): the median mean_epoch_s of each
# and their ratio, this build's evaluation against its step
# (mean_eval_s / mean_epoch_s), and the model's measured memory
# (memory_used_bytes) of each.  This build runs the float path
# (--no-deterministic where it has that flag; BASE's default is the float
# path).  A rank of one thread gets Open MPI's default binding, a rank of
# more threads none (bench/mpi-bind.sh).
#
#   bench/epoch-vs-commit.sh [BUILD_DIR]       BUILD_DIR defaults to build
#
# Environment: BASE (2d5ab35), BASE_DIR (/tmp/halo-base-BASE: its worktree
# and build-cpu), HALO_BENCH_OUT (bench/results/epoch-vs-commit), THREADS
# (threads per rank; cores / P), EPOCHS (15, the first 5 warm-up), REPS (3),
# MODELS ("gcn sage gin gat"), PARTS ("1 2"), SBM_NODES (200000),
# SBM_DEGREE (16), SBM_FEAT (128).
set -euo pipefail
cd "$(dirname "$0")/.."

build=${1:-build}
base=${BASE:-2d5ab35}
base_dir=${BASE_DIR:-/tmp/halo-base-$base}
out=${HALO_BENCH_OUT:-bench/results/epoch-vs-commit}
epochs=${EPOCHS:-15}
reps=${REPS:-3}
models=${MODELS:-gcn sage gin gat}
parts=${PARTS:-1 2}
nodes=${SBM_NODES:-200000}
degree=${SBM_DEGREE:-16}
feat=${SBM_FEAT:-128}
sbm="sbm:nodes=$nodes,classes=8,avg-degree=$degree,homophily=0.8,feat=$feat,seed=1"
mkdir -p "$out"

for bin in "$build/bin/halo-train" "$build/bin/halo-partition"; do
  [ -x "$bin" ] || { echo "epoch-vs-commit.sh: $bin is missing; build first" >&2; exit 1; }
done
. bench/base-build.sh
base_build "$base" "$base_dir" "$out/base-build.log"
root=()
if [ "$(id -u)" -eq 0 ]; then root=(--allow-run-as-root); fi
. bench/mpi-bind.sh
float=()
# The help read whole first: under pipefail, `grep -q` closing the pipe
# early would fail the test with halo-train's SIGPIPE.
help=$("$build/bin/halo-train" --help 2>&1 || true)
if grep -q -- '--no-deterministic' <<<"$help"; then
  float=(--no-deterministic)
fi

field() { # FILE KEY -> the summary's value
  tail -1 "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin).get(sys.argv[1], "nan"))' "$2"
}
median() { # the middle value; of an even count, the mean of the middle two
  printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR % 2 ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2)}'
}

echo "# halo epoch vs $base, $(date -u +%Y-%m-%dT%H:%MZ), this build $(git rev-parse --short HEAD)"
echo "# machine: $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)), $(free -g | awk '/Mem:/{print $2}') GiB; load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# graph: $sbm; epochs $epochs (5 warm-up), $reps alternated runs each, medians"
printf '%-5s %2s %12s %12s %7s %10s %9s %9s %7s\n' model P base_s this_s ratio eval/step base_MB this_MB mem
for p in $parts; do
  d="$out/sbm-$nodes-$p"
  if [ ! -f "$d/manifest.h5" ]; then
    "$build/bin/halo-partition" --input "$sbm" --parts "$p" --out "$d" --force > "$d.txt"
  fi
  threads=${THREADS:-$(($(nproc) / p > 0 ? $(nproc) / p : 1))}
  read -r -a bind <<<"$(mpi_bind "$threads")"
  mpi=(mpirun "${root[@]}" --oversubscribe "${bind[@]}")
  echo "# P=$p: $threads threads a rank, binding: ${bind[*]:-the Open MPI default}"
  for m in $models; do
    b=() t=() ev=() bm=() tm=()
    for r in $(seq "$reps"); do
      for side in base this; do
        bin=$build/bin/halo-train extra=("${float[@]}")
        if [ "$side" = base ]; then bin=$base_dir/build-cpu/bin/halo-train extra=(); fi
        f="$out/$m-$p-$side-$r.jsonl"
        OMP_NUM_THREADS=$threads "${mpi[@]}" -np "$p" "$bin" "$d" --model "$m" --threads "$threads" \
          --epochs "$epochs" --warmup 5 --quiet --force --metrics "$f" "${extra[@]}" > "$f.txt" 2>&1
        if [ "$side" = base ]; then
          b+=("$(field "$f" mean_epoch_s)") bm+=("$(field "$f" memory_used_bytes)")
        else
          if [ "$(field "$f" deterministic)" = True ]; then
            echo "epoch-vs-commit.sh: $f ran the exact sums, not the float path" >&2
            exit 1
          fi
          t+=("$(field "$f" mean_epoch_s)") tm+=("$(field "$f" memory_used_bytes)")
          ev+=("$(python3 -c "print($(field "$f" mean_eval_s) / $(field "$f" mean_epoch_s))")")
        fi
      done
    done
    mb=$(median "${b[@]}") mt=$(median "${t[@]}") me=$(median "${ev[@]}")
    bmem=$(median "${bm[@]}") tmem=$(median "${tm[@]}")
    python3 -c "print('%-5s %2d %12.4f %12.4f %7.3f %10.3f %9.1f %9.1f %7.3f' % ('$m', $p, $mb, $mt, $mt / $mb, $me, $bmem / 1e6, $tmem / 1e6, $tmem / $bmem))"
  done
done
