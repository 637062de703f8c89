#!/usr/bin/env python3
"""Writes the binary files of the bad-input corpus (tests/data/bad/*.npy,
*.npz, ogb-bin-*): run from the repository root, commit what it writes.
Standard library only; the arrays come from tests/loaders/gen-binary.py."""
import os
import struct
import sys
import zipfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "loaders"))
import importlib.util
spec = importlib.util.spec_from_file_location(
    "gen", os.path.join(os.path.dirname(__file__), "..", "loaders", "gen-binary.py"))
gen = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gen)

BAD = os.path.join(os.path.dirname(__file__), "..", "data", "bad")
edges = [0, 1, 1, 2, 2, 3, 3, 4, 4, 0]  # 5 x 2


def put(name, data):
    with open(os.path.join(BAD, name), "wb") as f:
        f.write(data)


good = gen.npy_bytes(edges, (5, 2), "i8")
put("npy-good.npy", good)
put("npy-truncated.npy", good[:-12])
put("npy-object.npy", gen.npy_bytes([], (0,), "i8").replace(b"'<i8'", b"'|O' "))
put("npy-bad-magic.npy", b"\x93NUMPZ" + good[6:])
put("npy-3d.npy", gen.npy_bytes([0] * 8, (2, 2, 2), "i8"))
put("npy-float-ids.npy", gen.npy_bytes([float(e) for e in edges], (5, 2), "f4"))
put("npy-shape-3-columns.npy", gen.npy_bytes(list(range(9)), (3, 3), "i8"))
put("npy-feat-nan.npy", gen.npy_bytes([0.5, 1.0, float("nan"), 2.0, 3.0], (5, 1), "f4"))
put("npy-feat-4-rows.npy", gen.npy_bytes([0.5, 1.0, 2.0, 3.0], (4, 1), "f4"))
put("npy-labels-half.npy", gen.npy_bytes([0.0, 1.0, 1.5, 0.0, 1.0], (5,), "f8"))

members = [("node_features", gen.npy_bytes([0.5] * 10, (5, 2), "f4")),
           ("node_labels", gen.npy_bytes([0, 1, 0, 1, 0], (5,), "i8")),
           ("edges", good),
           ("train_masks", gen.npy_bytes([1, 0, 0, 0, 0], (1, 5), "b1")),
           ("val_masks", gen.npy_bytes([0, 1, 0, 0, 0], (1, 5), "b1")),
           ("test_masks", gen.npy_bytes([0, 0, 1, 1, 0], (1, 5), "b1"))]
gen.npz(os.path.join(BAD, "npz-good.npz"), members)
gen.npz(os.path.join(BAD, "npz-missing-member.npz"), [m for m in members if m[0] != "node_labels"])
gen.npz(os.path.join(BAD, "npz-stored.npz"), members, deflate=False)
data = open(os.path.join(BAD, "npz-stored.npz"), "rb").read()
# A byte of edges.npy's data flipped: only the CRC sees it (ids stay in range).
at = data.index(good) + len(good) - 8
put("npz-bad-crc.npz", data[:at] + bytes([data[at] ^ 1]) + data[at + 1:])
# The deflate stream of node_features.npy spoiled in its middle.
big = [("node_features", gen.npy_bytes([float(i % 7) for i in range(4000)], (2000, 2), "f4"))]
gen.npz(os.path.join(BAD, "npz-corrupt-deflate.npz"), big + members[1:])
data = bytearray(open(os.path.join(BAD, "npz-corrupt-deflate.npz"), "rb").read())
for k in range(60, 90):
    data[k] ^= 0x5a
put("npz-corrupt-deflate.npz", bytes(data))
# Node 1 in the train and the valid masks; node 2 masked but unlabelled (NaN).
two = [m if m[0] != "val_masks" else ("val_masks", gen.npy_bytes([0, 1, 0, 0, 0], (1, 5), "b1"))
       for m in members]
two = [m if m[0] != "train_masks" else ("train_masks", gen.npy_bytes([1, 1, 0, 0, 0], (1, 5), "b1"))
       for m in two]
gen.npz(os.path.join(BAD, "npz-mask-twice.npz"), two)
nan = [m if m[0] != "node_labels" else
       ("node_labels", gen.npy_bytes([0.0, 1.0, float("nan"), 1.0, 0.0], (5,), "f8")) for m in members]
gen.npz(os.path.join(BAD, "npz-mask-unlabelled.npz"), nan)
good_npz = open(os.path.join(BAD, "npz-good.npz"), "rb").read()
put("npz-truncated.npz", good_npz[: len(good_npz) // 2])

for name, counts in (("ogb-bin-two-graphs", [3, 2]),):
    raw = os.path.join(BAD, name, "raw")
    os.makedirs(raw, exist_ok=True)
    gen.npz(os.path.join(raw, "data.npz"),
            [("edge_index", gen.npy_bytes([0, 1, 1, 2, 3, 4, 4, 3], (2, 4), "i8")),
             ("num_nodes_list", gen.npy_bytes(counts, (len(counts),), "i8")),
             ("num_edges_list", gen.npy_bytes([2, 2], (2,), "i8"))])

# Labels of npy-good's 5 nodes with a stray 99: the class rule, --classes.
put("npy-labels-stray.npy", gen.npy_bytes([0, 1, 0, 1, 99], (5,), "i8"))
# A --split folder whose train.csv is a .npy: split files are text.
split = os.path.join(BAD, "npy-split")
os.makedirs(split, exist_ok=True)
put(os.path.join("npy-split", "train.csv"), gen.npy_bytes([0, 1], (2,), "i8"))
put(os.path.join("npy-split", "valid.csv"), b"2\n")
put(os.path.join("npy-split", "test.csv"), b"3\n")

# Edge weights for npy-good.npy's 5 edges (--edge-weights): good, NaN at
# edge 3, negative at edge 1, and one weight short.
put("npy-weights-good.npy", gen.npy_bytes([0.5, 1.0, 2.0, 1.5, 0.25], (5,), "f4"))
put("npy-weights-nan.npy", gen.npy_bytes([0.5, 1.0, 2.0, float("nan"), 0.25], (5,), "f4"))
put("npy-weights-negative.npy", gen.npy_bytes([0.5, -1.0, 2.0, 1.5, 0.25], (5,), "f4"))
put("npy-weights-short.npy", gen.npy_bytes([0.5, 1.0, 2.0, 1.5], (4,), "f4"))
