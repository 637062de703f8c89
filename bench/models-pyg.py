#!/usr/bin/env python3
"""PyTorch Geometric's GCN, GraphSAGE-mean, GIN-0 and GAT on a 1-part halo shard.

The peer of `halo-train --model gcn|sage|gin|gat` in bench/models.sh.  The graph,
features, labels and split are read from DIR/part-00000-of-00001.h5 by
bench/train-pyg.py's own loader (h5py; features row-normalised as PyG's
NormalizeFeatures unless --no-normalize), so both sides train on the same
data.  The models are halo-train's (docs/train.md, src/layer-*.c):

  gcn   GCNConv(cached=True); weight decay on the first layer only (Kipf &
        Welling, PyG's examples/gcn.py), or on all with --weight-decay-all
  sage  SAGEConv(aggr=--aggr (mean), root_weight=True, normalize=--sage-normalize):
        h_i' = W_l·mean_{j∈N(i)} h_j + b + W_r·h_i (or max, sum); weight decay
        on every parameter
  gin   GINConv(Sequential(Linear(d_in, hidden), ReLU, Linear(hidden, d_out)),
        eps=0, train_eps=--gin-train-eps); weight decay on every parameter
  gat   GATConv(d_in, hidden, heads=--heads, concat=True, dropout=--attn-dropout)
        in hidden layers (--hidden per head), GATConv(., classes,
        heads=--output-heads, concat=False) at the top; weight decay on every
        parameter

With --norm batch, torch.nn.BatchNorm1d after every hidden layer and, for
gin, inside its MLP (Linear, BatchNorm1d, ReLU, Linear): PyG's
GIN(norm="batch_norm"); evaluation in eval mode, with the running statistics.
Between layers ReLU (or --activation elu, gelu, or leaky_relu with --negative-slope); dropout --input-dropout (default
--dropout) on the input features and --dropout on the input of every later
layer; Adam.  Weights are re-initialised as halo-train's are, Glorot-uniform
with zero biases (--init pyg keeps PyG's and torch's own initialisers).

The timed part of an epoch is what halo-train's epoch_s times: forward, loss,
backward and the optimiser step.  The evaluation pass after it is not timed.
Two adjacency layouts are timed, as in bench/train-pyg.py:
  edge_index  PyG's default message passing (gather, scatter)
  csr         a torch.sparse CSR adjacency (PyG's spmm: torch.sparse.mm, with
              reduce="mean" for SAGEConv), PyG's fast path without torch_sparse

Prints one JSON object per seed and layout.  A layout that runs out of memory
(the address space is capped at --mem-frac of the memory available, so that
a big graph fails here rather than waking the OOM killer) prints an object
with "error" and the next one runs.
"""
import argparse
import importlib.util
import json
import os
import resource
import statistics
import time

import torch
import torch.nn.functional as F
from torch_geometric.nn import GATConv, GCNConv, GINConv, SAGEConv
from torch_geometric.nn.inits import glorot, zeros


def train_pyg_loader():
    """bench/train-pyg.py's load(), so that both benchmarks read shards alike."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "train-pyg.py")
    spec = importlib.util.spec_from_file_location("train_pyg", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.load


class Net(torch.nn.Module):
    def __init__(self, model, dims, args):
        super().__init__()
        convs = []
        for i, (a, b) in enumerate(zip(dims[:-1], dims[1:])):
            top = i + 2 == len(dims)
            if model == "gat":
                # dims hold the layers' total widths: a hidden layer's is heads × per head.
                heads = args.output_heads if top else args.heads
                convs.append(GATConv(a, b if top else b // heads, heads=heads, concat=not top,
                                     dropout=args.attn_dropout))
            elif model == "gcn":
                convs.append(GCNConv(a, b, cached=True, add_self_loops=args.gcn_add_self_loops == "true",
                                     normalize=args.gcn_normalize == "true"))
            elif model == "sage":
                convs.append(SAGEConv(a, b, aggr=args.aggr, root_weight=True, normalize=args.sage_normalize))
            else:
                # --norm batch: Linear, BatchNorm, ReLU, Linear (PyG's GIN(norm="batch_norm")).
                inner = [torch.nn.BatchNorm1d(args.hidden)] if args.norm == "batch" else []
                mlp = torch.nn.Sequential(torch.nn.Linear(a, args.hidden), *inner, torch.nn.ReLU(),
                                          torch.nn.Linear(args.hidden, b))
                convs.append(GINConv(mlp, eps=0.0, train_eps=args.gin_train_eps))
        self.convs = torch.nn.ModuleList(convs)
        # --norm batch: BatchNorm1d after every hidden layer (halo's --norm batch).
        self.norms = torch.nn.ModuleList(
            torch.nn.BatchNorm1d(b) for b in dims[1:-1]) if args.norm == "batch" else None
        self.dropout, self.input_dropout = args.dropout, args.input_dropout
        slope = args.negative_slope
        self.act = {"elu": F.elu, "relu": F.relu, "gelu": F.gelu,
                    "leaky_relu": lambda v: F.leaky_relu(v, negative_slope=slope)}[args.activation]
        if args.init == "glorot":
            self.glorot_init()

    def glorot_init(self):
        """halo-train's initialisation: Glorot-uniform weights, zero biases."""
        for conv in self.convs:
            for name, p in conv.named_parameters():
                if name.endswith("weight") and p.dim() >= 2:  # not a BatchNorm's scale
                    glorot(p)
                elif name.endswith("bias"):
                    zeros(p)

    def forward(self, x, adj):
        for i, conv in enumerate(self.convs):
            x = F.dropout(x, p=self.input_dropout if i == 0 else self.dropout, training=self.training)
            x = conv(x, adj)
            if i + 1 < len(self.convs):
                if self.norms is not None:
                    x = self.norms[i](x)
                x = self.act(x)
        return x


def param_groups(model, net, args):
    if model == "gcn" and not args.weight_decay_all:
        # halo's first layer holds its BatchNorm's gamma and beta too.
        norms = list(net.norms) if net.norms is not None else []
        first = list(net.convs[0].parameters()) + [p for m in norms[:1] for p in m.parameters()]
        rest = [p for c in net.convs[1:] for p in c.parameters()]
        rest += [p for m in norms[1:] for p in m.parameters()]
        return [dict(params=first, weight_decay=args.weight_decay),
                dict(params=rest, weight_decay=0.0)]
    return [dict(params=net.parameters(), weight_decay=args.weight_decay)]


def status_bytes(key):
    """A /proc/self/status figure (VmRSS, VmHWM), in bytes."""
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) * 1024 for l in f if l.startswith(key + ":"))


def reset_peak_rss():
    """Starts VmHWM again from the current RSS (Linux: clear_refs 5)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def run(model, layout, seed, x, y, splits, adj, args):
    # The peak this run adds to what is loaded already: halo-train's
    # memory_used_bytes counts the same way (the model's peak over its base).
    base, peak_known = status_bytes("VmRSS"), reset_peak_rss()
    torch.manual_seed(seed)
    classes = int(y.max()) + 1
    width = args.hidden * args.heads if model == "gat" else args.hidden
    dims = [x.size(1)] + [width] * (args.layers - 1) + [classes]
    net = Net(model, dims, args)
    opt = torch.optim.Adam(param_groups(model, net, args), lr=args.lr)
    train, valid, test = splits
    times, accs = [], []
    for epoch in range(1, args.epochs + 1):
        net.train()
        t0 = time.perf_counter()
        opt.zero_grad()
        out = net(x, adj)
        loss = F.cross_entropy(out[train], y[train])
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)
        if args.no_eval and epoch < args.epochs:
            continue
        net.eval()
        with torch.no_grad():
            pred = net(x, adj).argmax(dim=-1)
            accs.append([float((pred[s] == y[s]).float().mean()) for s in (train, valid, test)])
    warmup = min(args.warmup, args.epochs - 1)
    timed = times[warmup:]
    best = max(range(len(accs)), key=lambda e: accs[e][1])  # the first of equals
    return {"model": model, "pyg_layout": layout, "seed": seed, "hidden": args.hidden,
            "epochs": args.epochs, "warmup_epochs": warmup,
            "mean_epoch_s": sum(timed) / len(timed), "median_epoch_s": statistics.median(timed),
            "min_epoch_s": min(timed), "final_loss": loss.item(), "final_test_acc": accs[-1][2],
            "best_val_acc": accs[best][1], "test_acc_at_best_val": accs[best][2],
            "params": sum(p.numel() for p in net.parameters()), "threads": torch.get_num_threads(),
            "torch": torch.__version__, "nodes": x.size(0), "features": x.size(1),
            "peak_bytes": status_bytes("VmHWM") - base if peak_known else -1}


def cap_address_space(frac):
    """Caps the address space at what is mapped now plus frac of MemAvailable."""
    with open("/proc/meminfo") as f:
        avail = next(int(l.split()[1]) * 1024 for l in f if l.startswith("MemAvailable:"))
    with open("/proc/self/status") as f:
        mapped = next(int(l.split()[1]) * 1024 for l in f if l.startswith("VmSize:"))
    limit = mapped + int(frac * avail)
    resource.setrlimit(resource.RLIMIT_AS, (limit, resource.RLIM_INFINITY))
    return limit


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("shard_dir")
    p.add_argument("--model", choices=("gcn", "sage", "gin", "gat"), default="gcn")
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--hidden", type=int, default=16)
    p.add_argument("--activation", choices=("relu", "elu", "leaky_relu", "gelu"), default="relu")
    p.add_argument("--negative-slope", type=float, default=0.01, help="leaky_relu's slope")
    p.add_argument("--sage-normalize", action="store_true")
    p.add_argument("--norm", choices=("none", "batch"), default="none",
                   help="batch: BatchNorm1d after every hidden layer (and in GIN's MLP)")
    p.add_argument("--aggr", choices=("mean", "max", "sum"), default="mean", help="sage's aggregator")
    p.add_argument("--gcn-add-self-loops", choices=("true", "false"), default=None,
                   help="gcn: GCNConv's add_self_loops (default: --gcn-normalize)")
    p.add_argument("--gcn-normalize", choices=("true", "false"), default="true")
    p.add_argument("--gin-train-eps", action="store_true")
    p.add_argument("--heads", type=int, default=8, help="gat: heads of the hidden layers")
    p.add_argument("--output-heads", type=int, default=1, help="gat: heads of the output layer")
    p.add_argument("--attn-dropout", type=float, default=0.6, help="gat: dropout on the coefficients")
    p.add_argument("--epochs", type=int, default=200)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--weight-decay", type=float, default=5e-4)
    p.add_argument("--weight-decay-all", action="store_true", help="gcn: decay every layer")
    p.add_argument("--dropout", type=float, default=0.5)
    p.add_argument("--input-dropout", type=float, default=None, help="default: --dropout")
    p.add_argument("--init", choices=("glorot", "pyg"), default="glorot")
    p.add_argument("--seeds", default="0", help="comma-separated seeds, one run each")
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--no-normalize", action="store_true")
    p.add_argument("--no-eval", action="store_true",
                   help="evaluate after the last epoch only (timing runs: the accuracies are the last's)")
    p.add_argument("--layouts", default="edge_index,csr")
    p.add_argument("--mem-frac", type=float, default=0.8,
                   help="address-space cap, as a fraction of MemAvailable (0: none)")
    args = p.parse_args()
    if args.gcn_add_self_loops is None:  # PyG's add_self_loops=None: as normalize
        args.gcn_add_self_loops = args.gcn_normalize
    if args.input_dropout is None:
        args.input_dropout = args.dropout
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    load = train_pyg_loader()
    x, y, splits, edge_index, indptr, indices = load(f"{args.shard_dir}/part-00000-of-00001.h5",
                                                     not args.no_normalize)
    n = x.size(0)
    if args.mem_frac > 0:
        cap_address_space(args.mem_frac)
    for seed in (int(s) for s in args.seeds.split(",")):
        for layout in args.layouts.split(","):
            if layout == "edge_index":
                adj = edge_index
            elif layout == "csr":
                # adj_t[target, source]; symmetric, so the CSR rows serve as it is.
                adj = torch.sparse_csr_tensor(indptr, indices, torch.ones(indices.numel()), (n, n))
            else:
                raise SystemExit(f"--layouts: unknown layout {layout}")
            try:
                r = run(args.model, layout, seed, x, y, splits, adj, args)
            except (RuntimeError, MemoryError) as e:
                if "memory" not in str(e) and not isinstance(e, MemoryError):
                    raise
                r = {"model": args.model, "pyg_layout": layout, "seed": seed, "hidden": args.hidden,
                     "error": "out of memory: " + str(e).strip().splitlines()[-1][:200]}
            print(json.dumps(r), flush=True)


if __name__ == "__main__":
    main()
