#!/usr/bin/env bash
# models.sh: halo-train's four models against PyTorch Geometric at P=1
# (bench/models-pyg.py: GCNConv, SAGEConv with the mean aggregator, GINConv
# with eps = 0, GATConv; same graph, features, labels, split, settings and
# threads).
# Prints, from one run:
#
# 1. Accuracy on Cora, SEEDS seeds on each side, EPOCHS epochs, lr 0.01,
#    weight decay 5e-4 (gcn: first layer only; sage, gin: every parameter),
#    dropout 0.5, hidden 16 (gcn) and 64 (sage, gin); gat with the paper's
#    settings (8 heads of 8, one output head, lr 0.005, dropout 0.6 on every
#    layer's input and on the coefficients, ELU, GAT_EPOCHS epochs, 300),
#    weight decay on every parameter: mean ± std over the
#    seeds of the final test accuracy and of the test accuracy at the best
#    validation epoch, halo next to PyG's edge_index run (its csr run trains
#    the same model).  The seeds draw different weights and masks on the two
#    sides, so only the distributions compare: a gap in the means of more
#    than 1 point hints at a mismatch in settings.  PyG times both layouts
#    on the first PYG_LAYOUT_SEEDS seeds and runs the csr layout alone on the
#    others (both layouts train the same model: their accuracies agree).
# 2. Mean epoch time (forward, loss, backward, step; warm-up epochs left out)
#    at P=1, halo-train against PyG with the same threads: on Cora from the
#    runs of 1 (per layout, the mean over the seeds it ran), and on an sbm graph of SBM_NODES
#    nodes and ~SBM_NODES*SBM_DEGREE directed edges with hidden SBM_HIDDEN for
#    every model.  The ratio halo/PyG uses PyG's faster adjacency layout
#    (edge_index or torch.sparse CSR).                         Target: <= 0.5
#    The medians of the per-epoch times are printed next to the means: on a
#    busy machine they say more.
#
# A compact table of both ends the run; every run's JSON lines stay in
# HALO_BENCH_OUT.
#
#   bench/models.sh [BUILD_DIR]          BUILD_DIR defaults to build
#
# Environment: HALO_BENCH_OUT (results; bench/results/models), HALO_BENCH_VENV
# (a venv with torch, torch_geometric, h5py and numpy; created with pip when
# missing, default bench/.venv), THREADS (threads for both sides; all cores),
# MODELS (gcn sage gin gat; a variant MODEL-VARIANT adds its flags to both
# sides: gcn-leaky and sage-leaky, --activation leaky_relu --negative-slope
# 0.2; gcn-gelu and sage-gelu, --activation gelu; gcn-bn and gin-bn, --norm batch:
# BatchNorm after the hidden layer and, for gin, in its MLP; sage-max and sage-sum,
# --aggr max and sum; gcn-noloops, --gcn-add-self-loops false), SEEDS (seeds per model and side on Cora, 5; seeds
# 0..SEEDS-1), EPOCHS (Cora epochs, 200; the first 5 are warm-up), SBM_EPOCHS
# (10), SBM_WARMUP (2), SBM_HIDDEN (64), SBM_NODES (1000000), SBM_DEGREE (20),
# SBM_FEAT (128), PYG_LAYOUT_SEEDS (Cora seeds on which PyG times both
# layouts; SEEDS), RESUME (1: keep the runs already complete in
# HALO_BENCH_OUT, as after an interrupted run; 0).  SBM_EPOCHS=0 skips the
# sbm graph.
#
# Run time on 2 idle cores with the defaults: roughly 5 minutes for Cora and
# 15 for the sbm graph (most of it PyG's edge_index layout), plus a few
# minutes to generate and partition the graph on the first run.
set -euo pipefail
cd "$(dirname "$0")/.."

build=${1:-build}
out=${HALO_BENCH_OUT:-bench/results/models}
venv=${HALO_BENCH_VENV:-bench/.venv}
threads=${THREADS:-$(nproc)}
models=${MODELS:-gcn sage gin gat}
gat_epochs=${GAT_EPOCHS:-300}
seeds=${SEEDS:-5}
epochs=${EPOCHS:-200}
sbm_epochs=${SBM_EPOCHS:-10}
sbm_warmup=${SBM_WARMUP:-2}
sbm_hidden=${SBM_HIDDEN:-64}
layout_seeds=${PYG_LAYOUT_SEEDS:-$seeds}
resume=${RESUME:-0}
nodes=${SBM_NODES:-1000000}
degree=${SBM_DEGREE:-20}
feat=${SBM_FEAT:-128}
sbm="sbm:nodes=$nodes,classes=8,avg-degree=$degree,homophily=0.8,feat=$feat,seed=1"
mkdir -p "$out"

# The Cora width of each model (its usual setting: Kipf & Welling's 16 for GCN;
# GAT's is per head), its epochs, and the flags both sides get for it (GAT's
# paper settings, which halo-train takes as its defaults for --model gat).
# A variant (gcn-leaky) is its model's settings plus its own flags.
base_model() { echo "${1%%-*}"; }
cora_hidden() { case $(base_model "$1") in gcn) echo 16 ;; gat) echo 8 ;; *) echo 64 ;; esac; }
cora_epochs() { case $(base_model "$1") in gat) echo "$gat_epochs" ;; *) echo "$epochs" ;; esac; }
model_flags() {
  case $(base_model "$1") in
    gat) echo "--heads 8 --output-heads 1 --attn-dropout 0.6 --lr 0.005 --dropout 0.6 --activation elu" ;;
  esac
  case $1 in
    *-leaky) echo "--activation leaky_relu --negative-slope 0.2" ;;
    *-gelu) echo "--activation gelu" ;;
    *-bn) echo "--norm batch" ;;
    sage-max) echo "--aggr max" ;;
    sage-sum) echo "--aggr sum" ;;
    gcn-noloops) echo "--gcn-add-self-loops false" ;;
  esac
}
for m in $models; do
  case $m in
    gcn | sage | gin | gat | gcn-leaky | sage-leaky | gcn-gelu | sage-gelu | gcn-bn | gin-bn) ;;
    sage-max | sage-sum | gcn-noloops) ;;
    *) echo "models.sh: MODELS: no model or variant '$m'" >&2; exit 1 ;;
  esac
done

for bin in "$build/bin/halo-train" "$build/bin/halo-partition"; do
  [ -x "$bin" ] || { echo "models.sh: $bin is missing; build first (cmake --build $build)" >&2; exit 1; }
done
root=()
if [ "$(id -u)" -eq 0 ]; then root=(--allow-run-as-root); fi
mpi=(mpirun "${root[@]}" --oversubscribe --bind-to none)

if [ ! -x "$venv/bin/python" ]; then
  echo "# creating $venv (torch, torch_geometric, h5py, numpy with pip)"
  python3 -m venv "$venv"
  # PyTorch's CPU wheel where its index is reachable, else the default wheel
  # (it runs on the CPU too, at a few GB more on disk).
  "$venv/bin/pip" install --quiet torch --index-url https://download.pytorch.org/whl/cpu \
    || "$venv/bin/pip" install --quiet torch
  "$venv/bin/pip" install --quiet torch_geometric h5py numpy
fi
py="$venv/bin/python"
export PYTHONWARNINGS=ignore

echo "# halo models benchmark, $(date -u +%Y-%m-%dT%H:%MZ)"
echo "# machine: $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)), $(free -g | awk '/Mem:/{print $2}') GiB, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# $("$build/bin/halo-train" --version | head -1) ($(stat -c %y "$build/bin/halo-train" | cut -d. -f1))"
echo "# torch $($py -c 'import torch; print(torch.__version__)'), torch_geometric $($py -c 'import torch_geometric as g; print(g.__version__)')"
echo "# threads $threads; models $models; Cora: $seeds seeds x $epochs epochs (5 warm-up); sbm: $sbm_epochs epochs ($sbm_warmup warm-up), hidden $sbm_hidden"

data="$out/data"
mkdir -p "$data"
partition() { # NAME INPUT DIMS: a 1-part shard folder in $data/NAME-1, kept between runs
  if [ ! -f "$data/$1-1/manifest.h5" ]; then
    "$build/bin/halo-partition" --input "$2" --parts 1 --out "$data/$1-1" --dims "$3" \
      --json "$data/$1-1.json" --force > "$data/$1-1.txt"
  fi
}
halo_run() { # DIR OUTNAME halo-train options...
  local dir=$1 name=$2
  shift 2
  # --normalize-features: models-pyg.py normalises unless --no-normalize.
  OMP_NUM_THREADS=$threads "${mpi[@]}" -np 1 "$build/bin/halo-train" "$dir" --threads "$threads" \
    --quiet --force --normalize-features --metrics "$out/$name-halo.jsonl" "$@" \
    > "$out/$name-halo.txt"
}
pyg_run() { # DIR OUTNAME models-pyg.py options...
  local dir=$1 name=$2
  shift 2
  "$py" bench/models-pyg.py "$dir" --threads "$threads" "$@" > "$out/$name-pyg.jsonl"
}
# Whether OUTNAME's runs are complete (RESUME=1): halo's summary written, and
# a JSON line for each of the PyG layouts (a comma-separated list).
kept() { # OUTNAME LAYOUTS
  local layout
  [ "$resume" = 1 ] && tail -1 "$out/$1-halo.jsonl" 2>/dev/null | grep -q '"summary": true' || return 1
  for layout in ${2//,/ }; do
    grep -q "\"pyg_layout\": \"$layout\"" "$out/$1-pyg.jsonl" 2>/dev/null || return 1
  done
}
# One line of a stage: halo's summary and PyG's runs in OUTNAME's files.
row() { # OUTNAME LABEL
  "$py" - "$out/$1" "$2" <<'EOF'
import json, statistics, sys
base, label = sys.argv[1], sys.argv[2]
h = [json.loads(l) for l in open(base + "-halo.jsonl")]
hs = h[-1]
hw = [r["epoch_s"] for r in h[:-1]][hs["warmup_epochs"]:]
p = [json.loads(l) for l in open(base + "-pyg.jsonl")]
cells = ["%s halo acc %.3f/%.3f %.4fs (med %.4f)" % (label, hs["final_test_acc"], hs["test_acc_at_best_val"],
                                                    hs["mean_epoch_s"], statistics.median(hw))]
for r in p:
    if "error" in r:
        cells.append("pyg %s: %s" % (r["pyg_layout"], r["error"][:60]))
    else:
        cells.append("pyg %s %.3f/%.3f %.4fs (med %.4f)" % (r["pyg_layout"], r["final_test_acc"],
                     r["test_acc_at_best_val"], r["mean_epoch_s"], r["median_epoch_s"]))
print(" | ".join(cells), flush=True)
EOF
}

# ---- 1. accuracy on Cora (and Cora's epoch times) ---------------------------------
echo
echo "## 1. Cora: final / best-val test accuracy and mean epoch time, per seed"
partition cora datasets/cora 1433,16,7
for model in $models; do
  hidden=$(cora_hidden "$model")
  for ((seed = 0; seed < seeds; seed++)); do
    name="cora-$model-s$seed"
    layouts=edge_index,csr
    [ "$seed" -ge "$layout_seeds" ] && layouts=csr
    if kept "$name" "$layouts"; then
      row "$name" "$model seed $seed (kept):"
      continue
    fi
    # halo first, PyG right after, seed by seed: a busy machine slows both alike.
    # shellcheck disable=SC2046 # model_flags is a list of words
    halo_run "$data/cora-1" "$name" --model "$(base_model "$model")" --hidden "$hidden" --epochs "$(cora_epochs "$model")" \
      --seed "$seed" $(model_flags "$model")
    # shellcheck disable=SC2046
    pyg_run "$data/cora-1" "$name" --model "$(base_model "$model")" --hidden "$hidden" --epochs "$(cora_epochs "$model")" \
      --seeds "$seed" --layouts "$layouts" $(model_flags "$model")
    row "$name" "$model seed $seed:"
  done
done

# ---- 2. epoch time on the sbm graph -----------------------------------------------
if [ "$sbm_epochs" -gt 0 ]; then
  echo
  echo "## 2. sbm ($sbm): mean epoch time, hidden $sbm_hidden"
  partition sbm "$sbm" "$feat,$sbm_hidden,8"
  "$py" -c 'import json,sys; d=json.load(open(sys.argv[1])); print("# sbm: %d nodes, %d directed edges" % (d["nodes"], d["edges"]))' "$data/sbm-1.json"
  for model in $models; do
    name="sbm-$model"
    if kept "$name" edge_index,csr; then
      row "$name" "$model (kept):"
      continue
    fi
    # GAT at the same total width: sbm_hidden / 8 per head.
    hidden=$sbm_hidden
    [ "$model" = gat ] && hidden=$((sbm_hidden / 8))
    # shellcheck disable=SC2046
    halo_run "$data/sbm-1" "$name" --model "$(base_model "$model")" --hidden "$hidden" --epochs "$sbm_epochs" \
      --warmup "$sbm_warmup" $(model_flags "$model")
    # shellcheck disable=SC2046
    pyg_run "$data/sbm-1" "$name" --model "$(base_model "$model")" --hidden "$hidden" --epochs "$sbm_epochs" \
      --warmup "$sbm_warmup" --no-eval $(model_flags "$model")
    row "$name" "$model:"
  done
fi

# ---- the table -----------------------------------------------------------------------
echo
"$py" - "$out" "$seeds" "$sbm_epochs" "$threads" $models <<'EOF'
import json, os, statistics, sys
out, seeds, sbm_epochs, threads, models = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5:]

def lines(path):
    return [json.loads(l) for l in open(path)] if os.path.exists(path) else []

def ms(v):  # mean ± sample std, in percent
    v = [100 * x for x in v]
    return "%5.1f ± %3.1f" % (statistics.mean(v), statistics.stdev(v) if len(v) > 1 else 0.0)

def halo_times(base):
    h = lines(base + "-halo.jsonl")
    s = h[-1]
    return s, s["mean_epoch_s"], statistics.median([r["epoch_s"] for r in h[:-1]][s["warmup_epochs"]:])

def pyg_times(runs):  # {layout: (mean over runs of mean_epoch_s, of median_epoch_s)}
    t = {}
    for layout in dict.fromkeys(r["pyg_layout"] for r in runs):
        ok = [r for r in runs if r["pyg_layout"] == layout and "error" not in r]
        if ok:
            t[layout] = (statistics.mean(r["mean_epoch_s"] for r in ok),
                         statistics.mean(r["median_epoch_s"] for r in ok))
    return t

print("## accuracy on Cora, %d seeds each side (%%, mean ± sample std; PyG: edge_index, csr where it ran alone)" % seeds)
print("%-10s %6s | %-12s %-12s %6s | %-12s %-12s %6s" % ("model", "hidden", "halo final", "pyg final", "diff",
      "halo @bestv", "pyg @bestv", "diff"))
timing = []
for m in models:
    halo, pyg, ref = [], [], []
    for s in range(seeds):
        base = os.path.join(out, "cora-%s-s%d" % (m, s))
        hs, hm, hmed = halo_times(base)
        halo.append((hs["final_test_acc"], hs["test_acc_at_best_val"], hm, hmed))
        runs = [r for r in lines(base + "-pyg.jsonl") if "error" not in r]
        pyg += runs
        ref += sorted(runs, key=lambda r: r["pyg_layout"] != "edge_index")[:1]
    hidden = ref[0]["hidden"]
    hf, hb = [x[0] for x in halo], [x[1] for x in halo]
    pf, pb = [r["final_test_acc"] for r in ref], [r["test_acc_at_best_val"] for r in ref]
    print("%-10s %6d | %-12s %-12s %+6.1f | %-12s %-12s %+6.1f" % (m, hidden, ms(hf), ms(pf),
          100 * (statistics.mean(hf) - statistics.mean(pf)), ms(hb), ms(pb),
          100 * (statistics.mean(hb) - statistics.mean(pb))))
    timing.append(("cora", m, hidden, statistics.mean(x[2] for x in halo), statistics.mean(x[3] for x in halo),
                   pyg_times(pyg)))
for m in models if sbm_epochs > 0 else []:
    base = os.path.join(out, "sbm-%s" % m)
    if not os.path.exists(base + "-halo.jsonl"):
        continue
    hs, hm, hmed = halo_times(base)
    pyg = lines(base + "-pyg.jsonl")
    timing.append(("sbm", m, pyg[0]["hidden"], hm, hmed, pyg_times(pyg)))

mem = []
for m in models if sbm_epochs > 0 else []:
    base = os.path.join(out, "sbm-%s" % m)
    if not os.path.exists(base + "-halo.jsonl"):
        continue
    used = lines(base + "-halo.jsonl")[-1].get("memory_used_bytes", -1)
    pyg = {r["pyg_layout"]: r.get("peak_bytes", -1) for r in lines(base + "-pyg.jsonl") if "error" not in r}
    mem.append((m, used, pyg))
if mem:
    print()
    print("## sbm: peak memory the training adds to the loaded graph (MB; halo: memory_used_bytes, PyG: VmHWM over VmRSS)")
    for m, used, pyg in mem:
        print("%-5s halo %9.1f | %s" % (m, used / 1e6, " ".join("pyg %s %9.1f (halo/pyg %.2f)" % (
            k, v / 1e6, used / v if v > 0 else float("nan")) for k, v in pyg.items())))

print()
print("## mean epoch time at P=1, %s threads each side (s; med = median epoch; ratio = halo / PyG's faster layout)" % threads)
print("%-5s %-10s %6s | %10s %10s | %10s %10s %-10s | %7s %7s | %s" % ("graph", "model", "hidden", "halo", "halo med",
      "pyg", "pyg med", "layout", "ratio", "med", "pyg layouts (mean s)"))
for graph, m, hidden, hm, hmed, t in timing:
    if not t:
        print("%-5s %-10s %6d | %10.5f %10.5f | (no PyG layout ran)" % (graph, m, hidden, hm, hmed))
        continue
    best = min(t, key=lambda k: t[k][0])
    pm, pmed = t[best]
    print("%-5s %-10s %6d | %10.5f %10.5f | %10.5f %10.5f %-10s | %7.3f %7.3f | %s" % (
        graph, m, hidden, hm, hmed, pm, pmed, best, hm / pm, hmed / min(v[1] for v in t.values()),
        " ".join("%s=%.4f" % (k, v[0]) for k, v in t.items())))
EOF
