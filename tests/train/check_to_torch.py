"""scripts/halo-to-torch end to end (tests/train/check-to-torch.sh runs it).

usage: check_to_torch.py MODE SOURCE_DIR HALO_PARTITION HALO_TRAIN
  MODE numpy: export with --npz and run a numpy forward written from PyG's
              classes' semantics (the JSON's kwargs, the state_dict's names);
  MODE torch: export OUT.pt, build the JSON's class, load_state_dict(strict=
              True) and run it in eval mode (needs torch and torch_geometric).

For each model (gcn, sage with --sage-normalize and LayerNorm over 3 layers,
gin with a learned eps, gat with 2 heads, gcn over 3 layers and gin with
BatchNorm, whose running statistics the export carries; sage with --aggr
max and sum, gcn without self-loops and unnormalised), a seeded random graph (an OGB
folder written here) is partitioned in 2 parts and trained 5 epochs with
--checkpoint and --predict; the export's logits on PyG's edge_index of the
same graph must equal --predict's to 1e-4 relative to the largest logit.
Models PyG's classes cannot express are refused in one line, exit 1.
Prints one line per check; exits 1 on any failure.
"""
import gzip
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile

import h5py
import numpy as np

SEED = int(os.environ.get("HALO_TEST_SEED", "36"))
N, F, C, P = 150, 10, 4, 2


def run(cmd, expect=0):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if expect is not None and r.returncode != expect:
        sys.stdout.write(r.stdout)
        raise SystemExit(f"FAIL: {' '.join(cmd)} exited {r.returncode}, not {expect}")
    return r


def write_graph(folder, rng):
    """An OGB folder of a random graph; returns (x, edge_index) as PyG sees it."""
    pairs = set()
    while len(pairs) < 3 * N:
        i, j = rng.integers(0, N, 2)
        if i != j:
            pairs.add((min(i, j), max(i, j)))
    pairs = sorted(pairs)
    x = np.round(rng.random((N, F)) * (rng.random((N, F)) < 0.4), 3)
    labels = rng.integers(0, C, N)
    order = rng.permutation(N)
    os.makedirs(os.path.join(folder, "split"))
    with open(os.path.join(folder, "edge.csv"), "w") as f:
        f.writelines(f"{i},{j}\n" for i, j in pairs)
    with open(os.path.join(folder, "node-feat.csv"), "w") as f:
        f.writelines(",".join(f"{v:.3f}" for v in row) + "\n" for row in x)
    with open(os.path.join(folder, "node-label.csv"), "w") as f:
        f.writelines(f"{v}\n" for v in labels)
    with open(os.path.join(folder, "num-node-list.csv"), "w") as f:
        f.write(f"{N}\n")
    cuts = {"train": order[:90], "valid": order[90:120], "test": order[120:]}
    for name, ids in cuts.items():
        with open(os.path.join(folder, "split", name + ".csv"), "w") as f:
            f.writelines(f"{v}\n" for v in sorted(ids))
    src = np.array([i for i, j in pairs] + [j for i, j in pairs])
    dst = np.array([j for i, j in pairs] + [i for i, j in pairs])
    return x, np.stack([src, dst])


# --- PyG's semantics, in numpy (float64) ----------------------------------


def act_fn(name, kwargs=None):
    slope = (kwargs or {}).get("negative_slope", 0.01)  # torch.nn.LeakyReLU's default
    return {"relu": lambda v: np.maximum(v, 0.0),
            "elu": lambda v: np.where(v > 0, v, np.expm1(np.minimum(v, 0.0))),
            "leaky_relu": lambda v: np.where(v < 0, slope * v, v),
            # torch.nn.GELU(): x·Φ(x), Φ through erf
            "gelu": lambda v: v * 0.5 * (1.0 + np.vectorize(math.erf)(v / math.sqrt(2.0)))}[name]


def scatter_sum(values, index, n):
    out = np.zeros((n,) + values.shape[1:])
    np.add.at(out, index, values)
    return out


def gcn_conv(x, ei, sd, p, add_self_loops=True, normalize=True, ew=None):
    """GCNConv: with normalize, gcn_norm: self-loops of weight 1 added
    (add_self_loops), symmetric normalisation by the in-degree, the sum of the
    incoming edges' weights (a zero degree's inverse root 0); without, the
    plain (weighted) sum over the edges, no self-loops."""
    n = x.shape[0]
    src, dst = ei[0], ei[1]
    w = np.ones(ei.shape[1]) if ew is None else np.asarray(ew, dtype=float)
    h = x @ sd[p + "lin.weight"].T
    if not normalize:
        return scatter_sum(h[src] * w[:, None], dst, n) + sd[p + "bias"]
    if add_self_loops:
        loops = np.arange(n)
        src, dst = np.concatenate([src, loops]), np.concatenate([dst, loops])
        w = np.concatenate([w, np.ones(n)])
    deg = np.bincount(dst, weights=w, minlength=n)
    inv = np.zeros(n)
    inv[deg > 0] = deg[deg > 0] ** -0.5
    norm = w * inv[src] * inv[dst]
    return scatter_sum(h[src] * norm[:, None], dst, n) + sd[p + "bias"]


def sage_conv(x, ei, sd, p, normalize, aggr="mean"):
    """SAGEConv: lin_l(aggr_j x_j) + lin_r(x_i); mean, max or sum over the
    incoming edges, a node without any aggregating to 0."""
    n = x.shape[0]
    if aggr == "max":
        agg = np.full((n,) + x.shape[1:], -np.inf)
        np.maximum.at(agg, ei[1], x[ei[0]])
        agg[np.isneginf(agg)] = 0.0
    else:
        agg = scatter_sum(x[ei[0]], ei[1], n)
        if aggr == "mean":
            count = np.bincount(ei[1], minlength=n).astype(float)
            agg = agg / np.maximum(count, 1.0)[:, None]
    out = agg @ sd[p + "lin_l.weight"].T + sd[p + "lin_l.bias"] + x @ sd[p + "lin_r.weight"].T
    if normalize:
        out = out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
    return out


def batch_norm(x, sd, prefix, eps):
    """torch.nn.BatchNorm1d in eval mode (PyG's BatchNorm keeps it as
    .module): the running statistics."""
    m = prefix + "module."
    return ((x - sd[m + "running_mean"]) / np.sqrt(sd[m + "running_var"] + eps)
            * sd[m + "weight"] + sd[m + "bias"])


def gin_conv(x, ei, sd, p, act, bn_eps=None):
    """GINConv with BasicGNN's MLP [in, out, out]: lin, (norm,) act, lin."""
    h = (1.0 + sd[p + "eps"][0]) * x + scatter_sum(x[ei[0]], ei[1], x.shape[0])
    h = h @ sd[p + "nn.lins.0.weight"].T + sd[p + "nn.lins.0.bias"]
    if bn_eps is not None:
        h = batch_norm(h, sd, p + "nn.norms.0.", bn_eps)
    return act(h) @ sd[p + "nn.lins.1.weight"].T + sd[p + "nn.lins.1.bias"]


def gat_conv(x, ei, sd, p, concat):
    """GATConv: self-loops added, LeakyReLU(0.2), softmax over each node's
    incoming edges, heads concatenated or averaged, then the bias."""
    n = x.shape[0]
    keep = ei[0] != ei[1]
    loops = np.arange(n)
    src = np.concatenate([ei[0][keep], loops])
    dst = np.concatenate([ei[1][keep], loops])
    att_src, att_dst = sd[p + "att_src"][0], sd[p + "att_dst"][0]  # heads x C
    heads, c = att_src.shape
    h = (x @ sd[p + "lin.weight"].T).reshape(n, heads, c)
    a_s, a_d = (h * att_src).sum(-1), (h * att_dst).sum(-1)  # n x heads
    e = a_s[src] + a_d[dst]
    e = np.where(e > 0, e, 0.2 * e)
    emax = np.full((n, heads), -np.inf)
    np.maximum.at(emax, dst, e)
    w = np.exp(e - emax[dst])
    alpha = w / scatter_sum(w, dst, n)[dst]
    out = scatter_sum(h[src] * alpha[:, :, None], dst, n)
    out = out.reshape(n, heads * c) if concat else out.mean(axis=1)
    return out + sd[p + "bias"]


def layer_norm(x, weight, bias):
    """torch_geometric.nn.norm.LayerNorm(mode="node"): per row, eps 1e-5."""
    mean = x.mean(axis=1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=1, keepdims=True)
    return (x - mean) / np.sqrt(var + 1e-5) * weight + bias


def pyg_forward(spec, sd, x, ei, ew=None):
    """BasicGNN.forward in eval mode: conv, then (not after the last) norm,
    act; dropout is off."""
    cls = spec["class"].rsplit(".", 1)[1]
    kw = spec["kwargs"]
    act = act_fn(kw["act"], kw.get("act_kwargs"))
    sd = {k: v.astype(np.float64) for k, v in sd.items()}
    bn_eps = kw["norm_kwargs"]["eps"] if kw.get("norm") == "batch_norm" else None
    if kw.get("jk") is not None:
        raise SystemExit("FAIL: the reference implements jk=None only")
    for i in range(kw["num_layers"]):
        p = f"convs.{i}."
        last = i == kw["num_layers"] - 1
        if cls == "GCN":
            x = gcn_conv(x, ei, sd, p, kw.get("add_self_loops", True), kw.get("normalize", True), ew)
        elif cls == "GraphSAGE":
            x = sage_conv(x, ei, sd, p, kw.get("normalize", False), kw.get("aggr", "mean"))
        elif cls == "GIN":
            x = gin_conv(x, ei, sd, p, act, bn_eps)
        elif cls == "GAT":
            x = gat_conv(x, ei, sd, p, concat=not last)
        else:
            raise SystemExit(f"FAIL: no reference for {cls}")
        if last:
            break
        if kw.get("norm") == "batch_norm":
            x = batch_norm(x, sd, f"norms.{i}.", bn_eps)
        elif kw.get("norm") is not None:
            if kw["norm"] != "layer_norm" or kw.get("norm_kwargs", {}).get("mode") != "node":
                raise SystemExit(f"FAIL: the reference has no norm {kw['norm']}")
            x = layer_norm(x, sd[f"norms.{i}.weight"], sd[f"norms.{i}.bias"])
        x = act(x)
    return x


def normalized(x, spec):
    """halo's (and T.NormalizeFeatures') input: x - min, rows over max(sum, 1),
    rounded to float32 as halo stores it."""
    if not spec["input"]["normalize_features"]:
        return x.astype(np.float32).astype(np.float64)
    x = x - x.min()
    x = x / np.maximum(x.sum(axis=1, keepdims=True), 1.0)
    return x.astype(np.float32).astype(np.float64)


def torch_forward(spec, pt, x, ei, ew=None):
    import importlib

    import torch

    module, name = spec["class"].rsplit(".", 1)
    model = getattr(importlib.import_module(module), name)(**spec["kwargs"])
    model.load_state_dict(torch.load(pt), strict=True)
    model.eval()
    with torch.no_grad():
        args = [torch.tensor(x, dtype=torch.float32), torch.tensor(ei, dtype=torch.long)]
        if ew is not None:  # GCNConv's edge_weight, through BasicGNN's forward
            out = model(*args, edge_weight=torch.tensor(ew, dtype=torch.float32))
        else:
            out = model(*args)
    return out.double().numpy()


def main():
    mode, src, partition, train = sys.argv[1:5]
    tool = [sys.executable, os.path.join(src, "scripts", "halo-to-torch")]
    mpirun = ["mpirun", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none", "-np", str(P)]
    rng = np.random.default_rng(SEED)
    print(f"check-to-torch: seed {SEED} (set HALO_TEST_SEED to change), mode {mode}")
    tmp = tempfile.mkdtemp(prefix="halo-to-torch.")
    failed = 0
    try:
        x, ei = write_graph(os.path.join(tmp, "graph"), rng)
        shards = os.path.join(tmp, "shards")
        run([partition, "--input", os.path.join(tmp, "graph"), "--parts", str(P), "--out", shards])
        # Bad input: one line naming the file, exit 1, no traceback.
        for bad, words in ((os.path.join(tmp, "missing.h5"), "no such file"),
                           (os.path.join(tmp, "graph", "edge.csv"), "cannot read as HDF5"),
                           (os.path.join(shards, "manifest.h5"), "not a halo checkpoint")):
            r = run(tool + [bad, "--npz", os.path.join(tmp, "bad.npz")], expect=None)
            lines = [l for l in r.stdout.splitlines() if l.strip()]
            ok = r.returncode == 1 and len(lines) == 1 and words in lines[0] and bad in lines[0]
            print(f"{'ok  ' if ok else 'FAIL'} bad input {os.path.basename(bad)}: {r.stdout.strip()}")
            failed |= not ok
        cases = {
            "gcn": ["--hidden", "8"],
            "sage": ["--hidden", "6", "--layers", "3", "--sage-normalize", "--norm", "layer"],
            "gin": ["--hidden", str(C), "--gin-train-eps"],
            "gat": ["--heads", "2", "--output-heads", "2", "--hidden", "3"],
            "gin-wide": ["--hidden", "6"],
            "gcn-residual": ["--hidden", "8", "--residual"],
            "gin-norm": ["--hidden", str(C), "--norm", "layer"],
            "gcn-leaky": ["--hidden", "8", "--activation", "leaky_relu", "--negative-slope", "0.2"],
            "gin-leaky": ["--hidden", str(C), "--activation", "leaky_relu"],
            "sage-gelu": ["--hidden", "6", "--layers", "3", "--activation", "gelu"],
            # Training options only: a checkpoint with SGD's momentum buffer
            # and a schedule's attributes exports as any other.
            "gcn-sgd": ["--hidden", "8", "--optimizer", "sgd", "--momentum", "0.9", "--nesterov",
                        "--lr-schedule", "cosine", "--warmup-epochs", "2",
                        "--clip-grad-norm", "1"],
            "gcn-batchnorm": ["--hidden", "8", "--layers", "3", "--norm", "batch"],
            "gin-batchnorm": ["--hidden", str(C), "--norm", "batch", "--bn-momentum", "0.3"],
            "sage-max": ["--hidden", "6", "--layers", "3", "--aggr", "max"],
            "sage-sum": ["--hidden", "6", "--aggr", "sum"],
            "gcn-noloops": ["--hidden", "8", "--gcn-add-self-loops", "false"],
            "gcn-plain": ["--hidden", "8", "--gcn-normalize", "false"],
        }
        refused = {"gin-wide": "PyG's GIN builds its output layer's MLP",
                   "gcn-residual": "no residual connection",
                   "gin-norm": "PyG's GIN puts the norm inside every layer's MLP",
                   "gin-leaky": "halo's GIN MLP applies ReLU inside"}
        for name, flags in cases.items():
            model = name.split("-")[0]
            out = os.path.join(tmp, name)
            os.makedirs(out)
            ck, pred = os.path.join(out, "ck"), os.path.join(out, "pred.h5")
            run(mpirun + [train, shards, "--model", model, "--epochs", "5", "--seed", str(SEED),
                          "--threads", "1", "--quiet", "--checkpoint", ck, "--predict", pred]
                + flags)
            ckpt = os.path.join(ck, "ckpt-00000005.h5")
            target = os.path.join(out, "model.pt" if mode == "torch" else "model.npz")
            args = [ckpt, target] if mode == "torch" else [ckpt, "--npz", target]
            if name in refused:
                r = run(tool + args, expect=None)
                lines = [l for l in r.stdout.splitlines() if l.strip()]
                ok = (r.returncode == 1 and len(lines) == 1 and refused[name] in lines[0]
                      and "Traceback" not in r.stdout and not os.path.exists(target))
                print(f"{'ok  ' if ok else 'FAIL'} {name}: refused in one line: {r.stdout.strip()}")
                failed |= not ok
                continue
            run(tool + args)
            with open(os.path.join(out, "model.json")) as f:
                spec = json.load(f)
            xin = normalized(x, spec)
            if mode == "torch":
                z = torch_forward(spec, target, xin, ei)
            else:
                with np.load(target) as d:
                    z = pyg_forward(spec, dict(d), xin, ei)
            with h5py.File(pred, "r") as f:
                ids = f["original_id"][:] if "original_id" in f else f["global_id"][:]
                logits = np.empty((N, C))
                logits[ids] = f["logits"][:]
            rel = np.abs(z - logits).max() / np.abs(logits).max()
            ok = rel <= 1e-4 and np.abs(logits).max() > 1e-3
            print(f"{'ok  ' if ok else 'FAIL'} {name}: {spec['class']} {spec['kwargs']}: "
                  f"max |PyG - halo| / max |halo| = {rel:.3g}")
            failed |= not ok
        # Edge weights: the graph with an edge-feat of width 1 (one weight a
        # pair; the clean-up gives the reverse the same).  GCN exports and
        # takes edge_weight; GraphSAGE trained with weights is refused.
        pairs = ei.shape[1] // 2
        w = rng.integers(1, 17, pairs) / 4.0
        wgraph = os.path.join(tmp, "wgraph")
        shutil.copytree(os.path.join(tmp, "graph"), wgraph)
        with open(os.path.join(wgraph, "edge-feat.csv"), "w") as f:
            f.writelines(f"{v:g}\n" for v in w)
        ew = np.concatenate([w, w])
        wshards = os.path.join(tmp, "wshards")
        run([partition, "--input", wgraph, "--parts", str(P), "--out", wshards])
        for name in ("gcn", "sage"):
            out = os.path.join(tmp, "weighted-" + name)
            os.makedirs(out)
            ck, pred = os.path.join(out, "ck"), os.path.join(out, "pred.h5")
            run(mpirun + [train, wshards, "--model", name, "--hidden", "8", "--epochs", "5",
                          "--seed", str(SEED), "--threads", "1", "--quiet", "--checkpoint", ck,
                          "--predict", pred])
            ckpt = os.path.join(ck, "ckpt-00000005.h5")
            target = os.path.join(out, "model.pt" if mode == "torch" else "model.npz")
            args = [ckpt, target] if mode == "torch" else [ckpt, "--npz", target]
            if name == "sage":
                r = run(tool + args, expect=None)
                lines = [l for l in r.stdout.splitlines() if l.strip()]
                ok = (r.returncode == 1 and len(lines) == 1
                      and "PyG's SAGEConv takes no edge_weight" in lines[0]
                      and not os.path.exists(target))
                print(f"{'ok  ' if ok else 'FAIL'} weighted sage: refused in one line: "
                      f"{r.stdout.strip()}")
                failed |= not ok
                continue
            run(tool + args)
            with open(os.path.join(out, "model.json")) as f:
                spec = json.load(f)
            xin = normalized(x, spec)
            if mode == "torch":
                z = torch_forward(spec, target, xin, ei, ew)
            else:
                with np.load(target) as d:
                    z = pyg_forward(spec, dict(d), xin, ei, ew)
            with h5py.File(pred, "r") as f:
                ids = f["original_id"][:] if "original_id" in f else f["global_id"][:]
                logits = np.empty((N, C))
                logits[ids] = f["logits"][:]
            rel = np.abs(z - logits).max() / np.abs(logits).max()
            ok = spec["input"].get("edge_weight") is True and rel <= 1e-5
            print(f"{'ok  ' if ok else 'FAIL'} weighted gcn: GCNConv(edge_weight=w): "
                  f"max |PyG - halo| / max |halo| = {rel:.3g}")
            failed |= not ok
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
