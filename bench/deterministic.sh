#!/usr/bin/env bash
# deterministic.sh: the cost of halo-train --deterministic (docs/reproducibility.md).
# Prints, from one run, the mean epoch time of the float path
# (--no-deterministic) and of --deterministic, alternated REPS times on the
# same shards, with their ratio, on Cora and on the sbm graph of issue 37
# (1,000,000 nodes, 24M directed edges, 128 features, each model's default
# width: about 6 minutes on the 2-vCPU development VM), at P = 1 and P = 2;
# and whether the two P gave the same params_sha256 (they must with
# --deterministic).
#
#   bench/deterministic.sh [BUILD_DIR]          BUILD_DIR defaults to build
#
# Environment: HALO_BENCH_OUT (bench/results/deterministic), THREADS per rank
# (the cores over P: 2 at P = 1 and 1 at P = 2 on two cores), REPS (3),
# EPOCHS on Cora (60) and on sbm (12), the first 5 warm-up; SBM_NODES
# (1000000), SBM_DEGREE (24), SBM_FEAT (128), HIDDEN on sbm (the model's
# default; the sessions of 2026-12-06 and 07 measured 200,000 nodes,
# degree 20 and HIDDEN=64, a wider first layer whose exact gradient weighs
# more), MODEL (gcn).  Ranks of one thread get Open MPI's
# default binding (bench/mpi-bind.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

build=${1:-build}
out=${HALO_BENCH_OUT:-bench/results/deterministic}
threads=${THREADS:-}
reps=${REPS:-3}
cora_epochs=${EPOCHS:-60}
sbm_epochs=${SBM_EPOCHS:-12}
nodes=${SBM_NODES:-1000000}
degree=${SBM_DEGREE:-24}
feat=${SBM_FEAT:-128}
hidden=${HIDDEN:-}
model=${MODEL:-gcn}
sbm="sbm:nodes=$nodes,classes=8,avg-degree=$degree,homophily=0.8,feat=$feat,seed=1"
mkdir -p "$out"
for bin in "$build/bin/halo-train" "$build/bin/halo-partition"; do
  [ -x "$bin" ] || { echo "deterministic.sh: $bin is missing; build first" >&2; exit 1; }
done
root=()
if [ "$(id -u)" -eq 0 ]; then root=(--allow-run-as-root); fi
. bench/mpi-bind.sh

echo "# halo --deterministic cost, $(date -u +%Y-%m-%dT%H:%MZ), commit $(git rev-parse --short HEAD)"
echo "# machine: $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs))"
echo "# threads per rank ${threads:-$(nproc) over P}, $reps alternated runs of each mode (the median is shown, then the fastest run of each)"

# The float path's flag: --no-deterministic where the build has it (where
# --deterministic is the default), none where it is the default.
float_flag=""
# (The help is read whole first: under pipefail, `grep -q` closing the
# pipe early would fail the test with halo-train's SIGPIPE.)
help=$("$build/bin/halo-train" --help 2>&1 || true)
if grep -q -- --no-deterministic <<<"$help"; then float_flag=--no-deterministic; fi
[ "$float_flag" ] || echo "# this build's default is the float path: no flag for it"

# json KEY FILE: the summary's value of KEY.
json() { grep '"summary"' "$2" | grep -o "\"$1\": [^,}]*" | cut -d' ' -f2 | tr -d '"'; }

# median of the arguments.
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# minimum of the arguments: the run least disturbed by the neighbours of a
# shared machine, printed beside the median.
minimum() { printf '%s\n' "$@" | sort -g | head -1; }

# row NAME INPUT EPOCHS EXTRA: partitions INPUT at P = 1 and 2, then times both modes.
row() {
  local name=$1 input=$2 epochs=$3 extra=$4
  for p in 1 2; do
    local d="$out/$name-$p"
    [ -f "$d/manifest.h5" ] || "$build/bin/halo-partition" --input "$input" --parts "$p" \
      --out "$d" --force >"$d.partition.log" 2>&1
    local plain=() det=() t=${threads:-$(($(nproc) / p > 0 ? $(nproc) / p : 1))} bind
    read -r -a bind <<<"$(mpi_bind "$t")"
    local mpi=(mpirun "${root[@]}" --oversubscribe "${bind[@]}")
    for r in $(seq "$reps"); do
      for mode in plain det; do
        local flag=$float_flag m="$out/$name-$p-$mode-$r.jsonl"
        [ "$mode" = det ] && flag=--deterministic
        OMP_NUM_THREADS=$t "${mpi[@]}" -np "$p" "$build/bin/halo-train" "$d" \
          --threads "$t" --epochs "$epochs" --quiet --force --metrics "$m" $flag $extra \
          >"$m.log" 2>&1
        local want=false
        [ "$mode" = det ] && want=true
        if [ "$(json deterministic "$m")" != "$want" ]; then
          echo "deterministic.sh: $m ran with deterministic $(json deterministic "$m"), not $want" >&2
          exit 1
        fi
        if [ "$mode" = det ]; then det+=("$(json mean_epoch_s "$m")"); else plain+=("$(json mean_epoch_s "$m")"); fi
      done
    done
    local a b a0 b0
    a=$(median "${plain[@]}")
    b=$(median "${det[@]}")
    a0=$(minimum "${plain[@]}")
    b0=$(minimum "${det[@]}")
    awk -v n="$name" -v p="$p" -v a="$a" -v b="$b" -v a0="$a0" -v b0="$b0" \
      -v s="$(json params_sha256 "$out/$name-$p-det-1.jsonl" | cut -c1-16)" \
      'BEGIN { printf "%-6s P=%d  float %9.2f ms  deterministic %9.2f ms  ratio %.3f  (fastest runs %9.2f / %9.2f ms: %.3f)  params_sha256 %s\n", n, p, 1e3 * a, 1e3 * b, b / a, 1e3 * a0, 1e3 * b0, b0 / a0, s }'
  done
}

row cora datasets/cora "$cora_epochs" "--model $model"
row sbm "$sbm" "$sbm_epochs" "--model $model${hidden:+ --hidden $hidden}"
