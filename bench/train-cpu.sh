#!/usr/bin/env bash
# train-cpu.sh: issue 3's benchmark of halo-train on the CPU.  Prints, from one run:
#
# 1. SpMM bandwidth against a STREAM triad measured in the same run
#    (build/bench/spmm-stream, when it was built).            Target: >= 0.70
# 2. Mean epoch time of halo-train at P=1 against PyTorch Geometric's GCNConv
#    (bench/train-pyg.py: same model, graph, split and threads), on Cora and on
#    an sbm graph of >= 1M nodes and >= 20M directed edges.  The ratio uses
#    PyG's faster adjacency layout (edge_index or torch.sparse CSR). Target: <= 0.5
# 3. halo's bytes per epoch against CAGNET-1D's formula and against a 1D
#    broadcast of halo's own widths, for P = 2, 4, 8 (halo-partition --dims),
#    with halo-train's measured bytes next to them.
#    Targets: Cora P=4 <= 1/100 of CAGNET-1D; <= 1/4 of the 1D broadcast.
#
#   bench/train-cpu.sh [BUILD_DIR]          BUILD_DIR defaults to build
#
# Environment: HALO_BENCH_OUT (results; bench/results/cpu), HALO_BENCH_VENV
# (a venv with torch, torch_geometric and h5py; created with pip when missing,
# default bench/.venv), THREADS (threads for both sides; all cores), EPOCHS
# (timed runs, 50; the first 5 are warm-up), SBM_NODES (1000000), SBM_DEGREE
# (24), SBM_FEAT (128).
set -euo pipefail
cd "$(dirname "$0")/.."

build=${1:-build}
out=${HALO_BENCH_OUT:-bench/results/cpu}
venv=${HALO_BENCH_VENV:-bench/.venv}
threads=${THREADS:-$(nproc)}
epochs=${EPOCHS:-50}
nodes=${SBM_NODES:-1000000}
degree=${SBM_DEGREE:-24}
feat=${SBM_FEAT:-128}
sbm="sbm:nodes=$nodes,classes=8,avg-degree=$degree,homophily=0.8,feat=$feat,seed=1"
mkdir -p "$out"

for bin in "$build/bin/halo-train" "$build/bin/halo-partition"; do
  [ -x "$bin" ] || { echo "train-cpu.sh: $bin is missing; build first (cmake --build $build)" >&2; exit 1; }
done
root=()
if [ "$(id -u)" -eq 0 ]; then root=(--allow-run-as-root); fi
mpi=(mpirun "${root[@]}" --oversubscribe --bind-to none)

if [ ! -x "$venv/bin/python" ]; then
  echo "# creating $venv (torch, torch_geometric, h5py from PyPI)"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet torch torch_geometric h5py
fi
py="$venv/bin/python"
export PYTHONWARNINGS=ignore

echo "# halo train-cpu benchmark, $(date -u +%Y-%m-%dT%H:%MZ)"
echo "# machine: $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)), $(free -g | awk '/Mem:/{print $2}') GiB"
echo "# torch $($py -c 'import torch; print(torch.__version__)'), torch_geometric $($py -c 'import torch_geometric as g; print(g.__version__)')"
echo "# threads $threads, epochs $epochs (5 warm-up)"

# ---- 1. SpMM against STREAM -----------------------------------------------------
echo
echo "## 1. SpMM vs STREAM"
if [ -x "$build/bench/spmm-stream" ]; then
  # The worst case (random columns) and what halo-train multiplies: the
  # partitioner's own shards at P = 1 and P = 4, on huge pages as the trainer
  # allocates X (docs/benchmarks.md, "SpMM vs STREAM").
  OMP_NUM_THREADS=$threads "$build/bench/spmm-stream" --graphs uniform,sbm-part1,sbm-part4 \
    --hugepages | tee "$out/spmm-stream.txt"
else
  echo "(skipped: $build/bench/spmm-stream was not built)"
fi

# ---- 2. epoch time against PyG at P=1 -------------------------------------------
echo
echo "## 2. mean epoch time at P=1, halo-train vs PyG GCNConv"
halo_epoch() { # DIR NAME -> mean_epoch_s
  # --normalize-features: train-pyg.py normalises unless --no-normalize.
  OMP_NUM_THREADS=$threads "${mpi[@]}" -np 1 "$build/bin/halo-train" "$1" --threads "$threads" \
    --epochs "$epochs" --quiet --force --normalize-features --metrics "$out/$2-halo.jsonl" \
    > "$out/$2-halo.txt"
  tail -1 "$out/$2-halo.jsonl" | "$py" -c 'import json,sys; print(json.load(sys.stdin)["mean_epoch_s"])'
}
pyg_epoch() { # DIR NAME -> mean_epoch_s of the faster layout
  "$py" bench/train-pyg.py "$1" --epochs "$epochs" --threads "$threads" > "$out/$2-pyg.jsonl"
  "$py" -c 'import json,sys; r=[json.loads(l) for l in open(sys.argv[1])]; b=min(r,key=lambda x:x["mean_epoch_s"]); print(b["mean_epoch_s"], b["pyg_layout"], " ".join("%s=%.4f" % (x["pyg_layout"], x["mean_epoch_s"]) for x in r))' "$out/$2-pyg.jsonl"
}
data="$out/data"
mkdir -p "$data"
printf '%-6s %21s %12s %12s %8s  %s\n' graph 'nodes edges' halo_s pyg_s ratio 'pyg layouts (s)'
for name in cora sbm; do
  input=datasets/cora
  [ "$name" = sbm ] && input=$sbm
  dims=1433,16,7
  [ "$name" = sbm ] && dims=$feat,16,8
  if [ ! -f "$data/$name-1/manifest.h5" ]; then
    "$build/bin/halo-partition" --input "$input" --parts 1 --out "$data/$name-1" \
      --dims "$dims" --json "$data/$name-1.json" --force > "$data/$name-1.txt"
  fi
  h=$(halo_epoch "$data/$name-1" "$name")
  read -r p layout detail < <(pyg_epoch "$data/$name-1" "$name")
  n=$("$py" -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["nodes"], d["edges"])' "$data/$name-1.json")
  printf '%-6s %21s %12.5f %12.5f %8.3f  %s\n' "$name" "$n" "$h" "$p" "$("$py" -c "print($h/$p)")" "$detail"
done

# ---- 3. bytes per epoch against CAGNET-1D ----------------------------------------
echo
echo "## 3. halo bytes per epoch vs CAGNET-1D and a 1D broadcast (dims: input,16,classes; input dropout on)"
printf '%-6s %3s %14s %14s %10s %16s %10s %16s\n' graph P halo_pred halo_measured 1/cagnet cagnet1d_bytes 1/bcast1d bcast1d_bytes
for name in cora sbm; do
  input=datasets/cora
  [ "$name" = sbm ] && input=$sbm
  dims=1433,16,7
  [ "$name" = sbm ] && dims=$feat,16,8
  for parts in 2 4 8; do
    d="$data/$name-$parts"
    if [ ! -f "$d/manifest.h5" ]; then
      "$build/bin/halo-partition" --input "$input" --parts "$parts" --out "$d" --dims "$dims" \
        --json "$d.json" --force > "$d.txt"
    fi
    measured="-"
    if [ "$name" = cora ] || [ "$parts" -le 4 ]; then
      OMP_NUM_THREADS=1 "${mpi[@]}" -np "$parts" "$build/bin/halo-train" "$d" --threads 1 --epochs 3 \
        --quiet --metrics "$d-halo.jsonl" > "$d-halo.txt"
      measured=$(head -1 "$d-halo.jsonl" | "$py" -c 'import json,sys; print(json.load(sys.stdin)["halo_bytes"])')
    fi
    "$py" - "$d.json" "$name" "$parts" "$measured" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
h, c, b = d["predicted_halo_bytes_per_epoch"], d["cagnet1d_bytes_per_epoch"], d["broadcast1d_bytes_per_epoch"]
print("%-6s %3s %14d %14s %10.1f %16d %10.1f %16d" % (sys.argv[2], sys.argv[3], h, sys.argv[4], c / h, c, b / h, b))
EOF
  done
done
