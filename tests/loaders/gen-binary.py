#!/usr/bin/env python3
"""Writes one drawn graph in every layout halo reads, for test-load-binary.

    gen-binary.py OUT SEED

OUT/csv            OGB CSV folder (num-node-list, edge, node-feat, node-label, split/)
OUT/ogb-bin        OGB binary folder: raw/data.npz, raw/node-label.npz, split/
OUT/hetero.npz     heterophilous-graphs layout, deflated, 2 splits (split 1 is the CSV's)
OUT/hetero-f.npz   the same, stored, every array in Fortran order, big endian
OUT/hetero-z64.npz the same with ZIP64 records (extra fields, end records)
OUT/shchur.npz     gnn-benchmark layout, sparse attributes (attr_*), deflated
OUT/shchur-u.npz   the same, each row's columns backwards and its first entry split in two
OUT/shchur-d.npz   gnn-benchmark layout, dense attr_matrix, stored
OUT/npy/           edges.npy (2 x E edge_index), edges-e2.npy (E x 2, Fortran, int32),
                   feat.npy, labels.npy (float64, NaN = unlabelled), feat-f.npy
                   (Fortran order, big-endian float64)
OUT/dtypes/        NAME.npy for each dtype, order and byte order, with NAME.txt, the
                   values as decimal text, one a line (row-major)

Only the standard library: .npy headers and element bytes by struct, .npz
archives by zipfile (deflated by zlib).
"""
import io
import math
import os
import random
import struct
import sys
import zipfile

FMT = {"b1": "?", "i1": "b", "i2": "h", "i4": "i", "i8": "q", "u1": "B", "u2": "H", "u4": "I",
       "u8": "Q", "f2": "e", "f4": "f", "f8": "d"}


def npy_bytes(values, shape, dtype, fortran=False, endian="<", version=1):
    """The .npy file of `values` (row-major, len = prod(shape))."""
    size = int(dtype[1:])
    order = "|" if size == 1 else endian
    descr = order + dtype
    if len(shape) == 1:
        shape_text = "(%d,)" % shape[0]
    else:
        shape_text = "(" + ", ".join(str(d) for d in shape) + ")"
    header = "{'descr': '%s', 'fortran_order': %s, 'shape': %s, }" % (
        descr, "True" if fortran else "False", shape_text)
    pre = 10 if version == 1 else 12
    pad = (64 - (pre + len(header) + 1) % 64) % 64
    header = header + " " * pad + "\n"
    out = io.BytesIO()
    out.write(b"\x93NUMPY" + bytes([version, 0]))
    out.write(struct.pack("<H" if version == 1 else "<I", len(header)))
    out.write(header.encode("latin1"))
    if fortran and len(shape) == 2:
        rows, cols = shape
        values = [values[r * cols + c] for c in range(cols) for r in range(rows)]
    fmt = (">" if order == ">" else "<") + FMT[dtype]
    for v in values:
        out.write(struct.pack(fmt, v))
    return out.getvalue()


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def npz(path, members, deflate=True):
    method = zipfile.ZIP_DEFLATED if deflate else zipfile.ZIP_STORED
    with zipfile.ZipFile(path, "w", method) as z:
        for name, data in members:  # a fixed time stamp: the same bytes on every run
            info = zipfile.ZipInfo(name + ".npy", date_time=(2020, 1, 1, 0, 0, 0))
            info.compress_type = method
            z.writestr(info, data)


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def main():
    out, seed = sys.argv[1], int(sys.argv[2])
    rng = random.Random(seed)
    n = rng.randint(30, 60)
    m = rng.randint(2 * n, 4 * n)
    F = rng.randint(2, 6)
    C = rng.randint(2, 5)
    edges = [(rng.randrange(n), rng.randrange(n)) for _ in range(m)]
    edges[0] = (n - 1, 0)  # the largest id names the node count
    # half of the features 0: a CSV of F >= 5 is read as CSR, an npz's attr_* hold gaps
    feat = [f32(rng.uniform(-3, 3)) if rng.random() < 0.5 else 0.0 for _ in range(n * F)]
    labels = [rng.randrange(C) if rng.random() > 0.15 else None for _ in range(n)]
    labels[0] = C - 1
    split = []
    for v in range(n):
        split.append(0 if labels[v] is None else rng.choice([0, 1, 1, 2, 3]))
    other = [0 if labels[v] is None else rng.choice([0, 1, 2, 3]) for v in range(n)]

    # ---- OGB CSV
    csv = os.path.join(out, "csv")
    write(os.path.join(csv, "num-node-list.csv"), b"%d\n" % n)
    write(os.path.join(csv, "edge.csv"), "".join("%d,%d\n" % e for e in edges).encode())
    write(os.path.join(csv, "node-feat.csv"), "".join(
        ",".join("%.9g" % feat[v * F + c] for c in range(F)) + "\n" for v in range(n)).encode())
    write(os.path.join(csv, "node-label.csv"), "".join(
        ("nan" if l is None else "%d" % l) + "\n" for l in labels).encode())
    names = ["train", "valid", "test"]
    split_files = {}
    for s in range(3):
        text = "".join("%d\n" % v for v in range(n) if split[v] == s + 1).encode()
        split_files[names[s]] = text
        write(os.path.join(csv, "split", names[s] + ".csv"), text)

    # ---- OGB binary
    ogb = os.path.join(out, "ogb-bin")
    os.makedirs(os.path.join(ogb, "raw"), exist_ok=True)
    edge_index = [e[0] for e in edges] + [e[1] for e in edges]
    npz(os.path.join(ogb, "raw", "data.npz"), [
        ("edge_index", npy_bytes(edge_index, (2, m), "i8")),
        ("node_feat", npy_bytes(feat, (n, F), "f4")),
        ("num_nodes_list", npy_bytes([n], (1,), "i8")),
        ("num_edges_list", npy_bytes([m], (1,), "i8")),
    ])
    nan_labels = [math.nan if l is None else float(l) for l in labels]
    npz(os.path.join(ogb, "raw", "node-label.npz"),
        [("node_label", npy_bytes(nan_labels, (n, 1), "f8"))])
    for s in range(3):
        write(os.path.join(ogb, "split", "time", names[s] + ".csv"), split_files[names[s]])

    # ---- heterophilous-graphs: split 0 is `other`, split 1 the CSV's
    def masks(which):
        return [1 if sp[v] == which else 0 for sp in (other, split) for v in range(n)]

    elist = [i for e in edges for i in e]
    for name, fortran, endian, deflate in (("hetero.npz", False, "<", True),
                                           ("hetero-f.npz", True, ">", False)):
        npz(os.path.join(out, name), [
            ("node_features", npy_bytes(feat, (n, F), "f4", fortran, endian)),
            ("node_labels", npy_bytes(nan_labels, (n,), "f8", fortran, endian)),
            ("edges", npy_bytes(elist, (m, 2), "i8", fortran, endian)),
            ("train_masks", npy_bytes(masks(1), (2, n), "b1", fortran)),
            ("val_masks", npy_bytes(masks(2), (2, n), "b1", fortran)),
            ("test_masks", npy_bytes(masks(3), (2, n), "b1", fortran)),
        ], deflate)

    # ---- ZIP64: zipfile writes ZIP64 extra fields and end records past
    # ZIP64_LIMIT, here lowered so that a small archive has them
    limit = zipfile.ZIP64_LIMIT
    zipfile.ZIP64_LIMIT = 64
    try:
        with zipfile.ZipFile(os.path.join(out, "hetero-z64.npz"), "w", zipfile.ZIP_DEFLATED,
                             allowZip64=True) as z:
            for name, data in (("node_features", npy_bytes(feat, (n, F), "f4")),
                               ("node_labels", npy_bytes(nan_labels, (n,), "f8")),
                               ("edges", npy_bytes(elist, (m, 2), "i8")),
                               ("train_masks", npy_bytes(masks(1), (2, n), "b1")),
                               ("val_masks", npy_bytes(masks(2), (2, n), "b1")),
                               ("test_masks", npy_bytes(masks(3), (2, n), "b1"))):
                with z.open(name + ".npy", "w", force_zip64=True) as f:
                    f.write(data)
    finally:
        zipfile.ZIP64_LIMIT = limit

    # ---- gnn-benchmark CSR: rows by source, the edges' multiset
    order = sorted(range(m), key=lambda j: edges[j])
    indptr = [0] * (n + 1)
    for s, _ in edges:
        indptr[s + 1] += 1
    for v in range(n):
        indptr[v + 1] += indptr[v]
    indices = [edges[j][1] for j in order]
    attr_data, attr_indices, attr_indptr = [], [], [0]
    for v in range(n):
        for c in range(F):
            if feat[v * F + c] != 0:
                attr_data.append(feat[v * F + c])
                attr_indices.append(c)
        attr_indptr.append(len(attr_data))
    int_labels = [0 if l is None else l for l in labels]  # gnn-benchmark labels every node
    adj = [("adj_data", npy_bytes([1.0] * m, (m,), "f4")),
           ("adj_indices", npy_bytes(indices, (m,), "i4")),
           ("adj_indptr", npy_bytes(indptr, (n + 1,), "i4")),
           ("adj_shape", npy_bytes([n, n], (2,), "i8")),
           ("labels", npy_bytes(int_labels, (n,), "i8"))]
    npz(os.path.join(out, "shchur.npz"), adj + [
        ("attr_data", npy_bytes(attr_data, (len(attr_data),), "f4")),
        ("attr_indices", npy_bytes(attr_indices, (len(attr_indices),), "i4")),
        ("attr_indptr", npy_bytes(attr_indptr, (n + 1,), "i4")),
        ("attr_shape", npy_bytes([n, F], (2,), "i8"))])
    # scipy allows a row's columns in any order and a column twice (summed):
    # each row backwards, its first entry split into two halves
    u_data, u_indices = [], []
    for v in range(n):
        lo, hi = attr_indptr[v], attr_indptr[v + 1]
        row = list(zip(attr_indices[lo:hi], attr_data[lo:hi]))[::-1]
        if row:
            c, x = row[0]
            row = [(c, x / 2)] + row[1:] + [(c, x / 2)]
        u_indices += [c for c, _ in row]
        u_data += [x for _, x in row]
    u_indptr = [0]
    for v in range(n):
        lo, hi = attr_indptr[v], attr_indptr[v + 1]
        u_indptr.append(u_indptr[-1] + (hi - lo) + (1 if hi > lo else 0))
    npz(os.path.join(out, "shchur-u.npz"), adj + [
        ("attr_data", npy_bytes(u_data, (len(u_data),), "f4")),
        ("attr_indices", npy_bytes(u_indices, (len(u_indices),), "i8")),
        ("attr_indptr", npy_bytes(u_indptr, (n + 1,), "i8")),
        ("attr_shape", npy_bytes([n, F], (2,), "i8"))])
    npz(os.path.join(out, "shchur-d.npz"), adj + [
        ("attr_matrix", npy_bytes(feat, (n, F), "f4", True, ">", 2))], deflate=False)

    # ---- npy edge list with npy node data
    d = os.path.join(out, "npy")
    write(os.path.join(d, "edges.npy"), npy_bytes(edge_index, (2, m), "i8"))
    write(os.path.join(d, "edges-e2.npy"), npy_bytes(elist, (m, 2), "i4", True, "<", 3))
    write(os.path.join(d, "feat.npy"), npy_bytes(feat, (n, F), "f4"))
    write(os.path.join(d, "feat-f.npy"), npy_bytes(feat, (n, F), "f8", True, ">"))
    write(os.path.join(d, "labels.npy"), npy_bytes(nan_labels, (n,), "f8"))
    write(os.path.join(d, "labels-i.npy"), npy_bytes([-1 if l is None else l for l in labels],
                                                      (n, 1), "i2", False, ">"))

    # ---- every dtype, order and byte order against decimal text
    dt = os.path.join(out, "dtypes")
    ranges = {"b1": (0, 1), "i1": (-128, 127), "i2": (-32768, 32767), "i4": (-2**31, 2**31 - 1),
              "i8": (-2**53, 2**53), "u1": (0, 255), "u2": (0, 65535), "u4": (0, 2**32 - 1),
              "u8": (0, 2**53)}
    for dtype in FMT:
        for fortran in (False, True):
            for endian in ("<", ">"):
                rows, cols = rng.randint(1, 9), rng.randint(1, 5)
                if dtype in ranges:
                    lo, hi = ranges[dtype]
                    vals = [rng.randint(lo, hi) for _ in range(rows * cols)]
                    vals[0] = hi
                    if dtype == "b1":
                        vals = [bool(v) for v in vals]
                    text = "".join("%d\n" % v for v in vals)
                else:
                    vals = [rng.uniform(-1000, 1000) for _ in range(rows * cols)]
                    if dtype == "f2":
                        vals = [struct.unpack("<e", struct.pack("<e", v))[0] for v in vals]
                        vals[-1] = 2.0 ** -20  # a subnormal half
                    if dtype == "f4":
                        vals = [f32(v) for v in vals]
                    text = "".join("%r\n" % v for v in vals)
                name = "%s-%s-%s" % (dtype, "F" if fortran else "C", "be" if endian == ">" else "le")
                write(os.path.join(dt, name + ".npy"),
                      npy_bytes(vals, (rows, cols), dtype, fortran, endian, rng.choice([1, 2, 3])))
                write(os.path.join(dt, name + ".txt"),
                      ("%d %d\n" % (rows, cols) + text).encode())


if __name__ == "__main__":
    main()
