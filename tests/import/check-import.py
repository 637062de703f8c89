"""check-import.py SOURCE_DIR HALO_PARTITION npz|torch|dgl

scripts/halo-import against numpy: a seeded random graph (seed printed,
HALO_TEST_SEED changes it) saved as an .npz (or, for "torch", with
torch.save as a dict of tensors; for "dgl", with dgl.save_graphs as a
DGLGraph whose ndata have DGL's names: feat, label, train_mask, ...),
converted, and every file it wrote read
back with numpy and compared with the arrays: edge_index, x (as float32),
y (NaN -> -1; N x T multi-label), the split folders (N x S masks give
split/0 ..), the printed command; in chunks of a few bytes
(HALO_IMPORT_CHUNK_BYTES) as in one.  The halo-partition command it
prints is then run, P and DIR filled in: it reads the imported .npy files
and split and gives all N nodes, the isolated ones included.  Bad inputs
give one line and exit status 1.  Exits 1 on the first failure.
"""

import os
import shlex
import shutil
import subprocess
import sys
import tempfile

import numpy as np

src, partition, what = sys.argv[1:4]
IMPORT = os.path.join(src, "scripts", "halo-import")
seed = int(os.environ.get("HALO_TEST_SEED", "36"))
print(f"check-import: seed {seed} (set HALO_TEST_SEED to change)")
rng = np.random.default_rng(seed)
tmp = tempfile.mkdtemp(prefix="halo-import.")
failures = 0


def fail(msg):
    global failures
    failures += 1
    print(f"FAIL {msg}")


def run(args, env=None):
    e = dict(os.environ)
    e.update(env or {})
    p = subprocess.run([sys.executable, IMPORT] + args, capture_output=True, text=True, env=e)
    return p.returncode, p.stdout, p.stderr


def draw(n, m, f, classes, splits=1, tasks=0):
    g = {"edge_index": rng.integers(0, n, (2, m)).astype(np.int64),
         "x": rng.standard_normal((n, f))}
    if tasks:
        y = rng.integers(0, 2, (n, tasks)).astype(np.float32)
        y[rng.random((n, tasks)) < 0.1] = np.nan
    else:
        y = rng.integers(0, classes, n).astype(np.float64)
        y[rng.random(n) < 0.1] = np.nan
    g["y"] = y
    shape = (n,) if splits == 1 else (n, splits)
    r = rng.random(shape)
    g["train_mask"], g["val_mask"], g["test_mask"] = r < 0.5, (r >= 0.5) & (r < 0.7), r >= 0.7
    return g


def ids_of(path):
    with open(path) as fh:
        return np.array([int(line) for line in fh if line.strip()], dtype=np.int64)


def check_outputs(g, out, tag):
    n = g["x"].shape[0]
    ei = np.load(os.path.join(out, "edge_index.npy"))
    if ei.dtype != np.int64 or ei.shape != g["edge_index"].shape or not (ei == g["edge_index"]).all():
        fail(f"{tag}: edge_index.npy {ei.dtype} {ei.shape} differs")
    x = np.load(os.path.join(out, "x.npy"))
    if x.dtype != np.float32 or not np.array_equal(x, g["x"].astype(np.float32)):
        fail(f"{tag}: x.npy differs")
    y = np.load(os.path.join(out, "y.npy"))
    want = np.where(np.isnan(g["y"]), -1, g["y"]).astype(np.int64)
    if y.dtype != np.int64 or not np.array_equal(y, want):
        fail(f"{tag}: y.npy differs ({y.dtype} {y.shape})")
    yy = g["y"].reshape(n, -1)
    labelled = (~np.isnan(yy)).any(axis=1)  # split nodes without a label are left out
    masks = [g["train_mask"], g["val_mask"], g["test_mask"]]
    splits = 1 if masks[0].ndim == 1 else masks[0].shape[1]
    for k in range(splits):
        folder = os.path.join(out, "split", str(k)) if splits > 1 else os.path.join(out, "split")
        for name, mask in zip(("train", "valid", "test"), masks):
            m = (mask if splits == 1 else mask[:, k]) & labelled
            got = ids_of(os.path.join(folder, name + ".csv"))
            if not np.array_equal(got, np.flatnonzero(m)):
                fail(f"{tag}: {folder}/{name}.csv differs")
    left = [f for f in os.listdir(out) if ".tmp." in f]
    if left:
        fail(f"{tag}: temporaries left: {left}")
    return n


def expect_command(stdout, out, n, split_dir, tag):
    want = (f"halo-partition --input {out}/edge_index.npy --nodes {n} --features {out}/x.npy "
            f"--labels {out}/y.npy --split {split_dir} --parts P --out DIR")
    if want not in stdout.splitlines():
        fail(f"{tag}: the command is not\n  {want}\nin:\n{stdout}")


def save(g, path):
    if what == "torch":
        import torch
        torch.save({k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in g.items()}, path)
    elif what == "dgl":
        import dgl
        import torch
        n = g["x"].shape[0]
        src, dst = (torch.from_numpy(np.ascontiguousarray(a)) for a in g["edge_index"])
        graph = dgl.graph((src, dst), num_nodes=n)
        names = {"x": "feat", "y": "label"}
        for k, v in g.items():
            if k != "edge_index":
                graph.ndata[names.get(k, k)] = torch.from_numpy(np.ascontiguousarray(v))
        dgl.save_graphs(path, [graph])
    else:
        np.savez(path, **g)


ext = {"torch": ".pt", "dgl": ".bin"}.get(what, ".npz")

# A graph with one split, whole and in chunks of 40 bytes.
g = draw(300, 2000, 7, 5)
inp = os.path.join(tmp, "g" + ext)
save(g, inp)
for chunk in ("", "40"):
    out = os.path.join(tmp, f"out{chunk}")
    rc, so, se = run([inp, out], {"HALO_IMPORT_CHUNK_BYTES": chunk} if chunk else None)
    if rc != 0:
        fail(f"import ({chunk or 'whole'}): rc {rc}: {se}")
        continue
    n = check_outputs(g, out, f"one split, chunk {chunk or 'default'}")
    expect_command(so, out, n, f"{out}/split", "one split")

# halo-partition runs the command halo-import printed, P and DIR filled
# in, on the files it wrote: the .npy edge list with --nodes keeps the
# isolated nodes, so the graph has all n of them.
def partition_printed(stdout, n, tag):
    line = next((ln for ln in stdout.splitlines() if ln.startswith("halo-partition ")), None)
    if line is None:
        fail(f"{tag}: no halo-partition command in:\n{stdout}")
        return
    shards = os.path.join(tmp, "shards-" + tag.replace(" ", "-"))
    args = [{"P": "2", "DIR": shards}.get(a, a) for a in shlex.split(line)[1:]]
    p = subprocess.run([partition] + args, capture_output=True, text=True)
    if p.returncode != 0 or f"{n} nodes" not in p.stdout:
        fail(f"{tag}: the printed command: rc {p.returncode}: {p.stdout}{p.stderr}")


partition_printed(so, 300, "one split")

# N x S masks: split/0 .. split/2, --split-name picks the printed one;
# multi-label y (N x T) with missing entries.
g = draw(120, 500, 3, 4, splits=3, tasks=6)
inp = os.path.join(tmp, "s" + ext)
save(g, inp)
out = os.path.join(tmp, "outs")
rc, so, se = run([inp, out, "--split-name", "2"])
if rc != 0:
    fail(f"import (3 splits): rc {rc}: {se}")
else:
    n = check_outputs(g, out, "three splits, multi-label")
    expect_command(so, out, n, f"{out}/split/2", "three splits")
    partition_printed(so, n, "three splits")

# src/dst and index arrays (an .npz as DGL's names would give it).
if what == "npz":
    n = 40
    src_ids, dst_ids = rng.integers(0, n, 90), rng.integers(0, n, 90)
    perm = rng.permutation(n)
    np.savez(os.path.join(tmp, "d.npz"), src=src_ids.astype(np.int32), dst=dst_ids.astype(np.int32),
             feat=rng.standard_normal((n, 2)), label=rng.integers(0, 3, n),
             train_idx=perm[:20], valid_idx=perm[20:30], test_idx=perm[30:])
    out = os.path.join(tmp, "outd")
    rc, so, se = run([os.path.join(tmp, "d.npz"), out])
    ei = np.load(os.path.join(out, "edge_index.npy")) if rc == 0 else None
    if rc != 0 or not np.array_equal(ei, np.stack([src_ids, dst_ids])):
        fail(f"src/dst: rc {rc}: {se}")
    elif not np.array_equal(ids_of(os.path.join(out, "split", "valid.csv")), perm[20:30]):
        fail("index arrays: valid.csv differs")

# Bad input: one line, exit status 1, nothing written.
bad = os.path.join(tmp, "bad")
cases = [
    ("no edges", {"x": np.zeros((3, 2))}, "no edges"),
    ("edge outside", {"edge_index": np.array([[0, 5], [1, 1]]), "x": np.zeros((3, 2))},
     "an edge names a node outside 0..2"),
    ("mask shape", {"edge_index": np.array([[0, 1], [1, 2]]), "x": np.zeros((3, 2)),
                    "train_mask": np.ones(4, bool), "val_mask": np.ones(4, bool),
                    "test_mask": np.ones(4, bool)}, "train_mask has shape (4,)"),
    ("one split missing", {"edge_index": np.array([[0, 1], [1, 2]]),
                           "train_mask": np.ones(3, bool)}, "but not all of train, valid and test"),
]
for tag, arrays, words in cases:
    path = os.path.join(tmp, tag.replace(" ", "-") + ".npz")
    np.savez(path, **arrays)
    shutil.rmtree(bad, ignore_errors=True)
    rc, so, se = run([path, bad])
    lines = [ln for ln in se.splitlines() if ln.strip()]
    if rc != 1 or len(lines) != 1 or words not in se or "Traceback" in se:
        fail(f"bad input '{tag}': rc {rc}, stderr: {se}")
    if os.path.exists(os.path.join(bad, "edge_index.npy")) and tag != "mask shape":
        fail(f"bad input '{tag}': wrote edge_index.npy")
rc, so, se = run([inp, os.path.join(tmp, "outs")])
if rc != 1 or "already exists (pass --force" not in se:
    fail(f"an earlier import is replaced without --force: rc {rc}: {se}")
with open(os.path.join(tmp, "edges.csv"), "w") as fh:
    fh.write("src,dst\n0,1\n1,2\n")
rc, so, se = run([os.path.join(tmp, "edges.csv"), bad])
if rc != 1 or "not a torch.save file, a DGL graph file or a NumPy .npz" not in se:
    fail(f"a CSV input: rc {rc}: {se}")

shutil.rmtree(tmp)
print("check-import: " + ("FAILED" if failures else "ok"))
sys.exit(1 if failures else 0)
