#!/usr/bin/env python3
"""PyTorch Geometric's GCN on the graph of a 1-part halo shard folder.

The peer of `halo-train` in bench/train-cpu.sh: the same graph, features,
labels and split (read from DIR/part-00000-of-00001.h5 with h5py), the same
model (Kipf & Welling / PyG's examples/gcn.py: GCNConv with cached
normalisation, dropout on the input and the hidden layer, ReLU, Adam with
weight decay on the first layer only) and the same threads.

The timed part of an epoch is what halo-train's epoch_s times: forward,
loss, backward and the optimiser step.  The evaluation pass that follows is
not timed.  Two adjacency layouts are timed:
  edge_index  PyG's default message passing (gather, scatter-add)
  csr         a torch.sparse CSR adjacency (torch.sparse.mm), PyG's fast path
              without torch_sparse.

Prints one JSON object per layout.
"""
import argparse
import json
import time

import h5py
import numpy as np
import torch
import torch.nn.functional as F
from torch_geometric.nn import GCNConv


def load(path, normalize):
    with h5py.File(path, "r") as f:
        if int(f.attrs["parts"]) != 1:
            raise SystemExit(f"{path}: needs a 1-part run (has {int(f.attrs['parts'])} parts)")
        indptr = torch.from_numpy(f["/graph/indptr"][:].astype(np.int64))
        indices = torch.from_numpy(f["/graph/indices"][:].astype(np.int64))
        if "/features_csr" in f:  # sparse features (bag of words): halo stores them as CSR
            n_rows, width = indptr.numel() - 1, int(f.attrs["features"])
            xp = torch.from_numpy(f["/features_csr/indptr"][:].astype(np.int64))
            cols = torch.from_numpy(f["/features_csr/indices"][:].astype(np.int64))
            vals = torch.from_numpy(f["/features_csr/values"][:].astype(np.float32))
            x = torch.zeros(n_rows, width)
            x[torch.repeat_interleave(torch.arange(n_rows), xp[1:] - xp[:-1]), cols] = vals
        else:
            x = torch.from_numpy(f["/features"][:])
        y = torch.from_numpy(f["/labels"][:].astype(np.int64))
        splits = [torch.from_numpy(f[f"/split/{k}"][:].astype(np.int64)) for k in ("train", "valid", "test")]
    if normalize:  # torch_geometric.transforms.NormalizeFeatures
        x = x - x.min()
        x = x / x.sum(dim=-1, keepdim=True).clamp(min=1.0)
    n = indptr.numel() - 1
    # A 1-part shard has no halo rows, so its local ids index every node and
    # its arrays agree on them (the order of rows is the shard's own).
    rows = torch.repeat_interleave(torch.arange(n), indptr[1:] - indptr[:-1])
    edge_index = torch.stack([indices, rows])  # source -> target
    return x, y, splits, edge_index, indptr, indices


class GCN(torch.nn.Module):
    def __init__(self, dims, dropout):
        super().__init__()
        self.convs = torch.nn.ModuleList(GCNConv(a, b, cached=True) for a, b in zip(dims[:-1], dims[1:]))
        self.dropout = dropout

    def forward(self, x, adj):
        for i, conv in enumerate(self.convs):
            x = F.dropout(x, p=self.dropout, training=self.training)
            x = conv(x, adj)
            if i + 1 < len(self.convs):
                x = F.relu(x)
        return x


def run(layout, x, y, splits, adj, args):
    torch.manual_seed(args.seed)
    classes = int(y.max()) + 1
    dims = [x.size(1)] + [args.hidden] * (args.layers - 1) + [classes]
    model = GCN(dims, args.dropout)
    opt = torch.optim.Adam(
        [dict(params=model.convs[0].parameters(), weight_decay=args.weight_decay),
         dict(params=[p for c in model.convs[1:] for p in c.parameters()], weight_decay=0.0)],
        lr=args.lr)
    train, valid, test = splits
    times, accs = [], []
    for epoch in range(1, args.epochs + 1):
        model.train()
        t0 = time.perf_counter()
        opt.zero_grad()
        out = model(x, adj)
        loss = F.cross_entropy(out[train], y[train])
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)
        model.eval()
        with torch.no_grad():
            pred = model(x, adj).argmax(dim=-1)
            accs.append([float((pred[s] == y[s]).float().mean()) for s in (train, valid, test)])
    timed = times[args.warmup:]
    best = max(range(len(accs)), key=lambda e: accs[e][1])
    return {"pyg_layout": layout, "epochs": args.epochs, "warmup_epochs": args.warmup,
            "mean_epoch_s": sum(timed) / len(timed), "min_epoch_s": min(timed),
            "final_loss": loss.item(), "final_test_acc": accs[-1][2], "best_val_acc": accs[best][1],
            "test_acc_at_best_val": accs[best][2], "threads": torch.get_num_threads(),
            "torch": torch.__version__, "nodes": x.size(0), "features": x.size(1)}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("shard_dir")
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--hidden", type=int, default=16)
    p.add_argument("--epochs", type=int, default=200)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--weight-decay", type=float, default=5e-4)
    p.add_argument("--dropout", type=float, default=0.5)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--no-normalize", action="store_true")
    p.add_argument("--layouts", default="edge_index,csr")
    args = p.parse_args()
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    x, y, splits, edge_index, indptr, indices = load(f"{args.shard_dir}/part-00000-of-00001.h5",
                                                     not args.no_normalize)
    n = x.size(0)
    for layout in args.layouts.split(","):
        if layout == "edge_index":
            adj = edge_index
        elif layout == "csr":
            # adj_t[target, source]; symmetric, so the CSR rows serve as it is.
            adj = torch.sparse_csr_tensor(indptr, indices, torch.ones(indices.numel()), (n, n))
        else:
            raise SystemExit(f"--layouts: unknown layout {layout}")
        print(json.dumps(run(layout, x, y, splits, adj, args)), flush=True)


if __name__ == "__main__":
    main()
