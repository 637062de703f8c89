#!/bin/sh
# check-numpy.sh SOURCE_DIR HALO_PARTITION
#
# The binary readers against NumPy itself:
#  1. numpy.load reads every array gen-binary.py writes (each dtype, order,
#     byte order and header version) as the decimal text beside it, so the
#     standard-library writer the C tests trust writes real .npy files;
#  2. NumPy writes a graph of its own (np.save: int64 edge_index, int32
#     E x 2 in Fortran order, big-endian float64 features, float labels
#     with NaN; np.savez_compressed / np.savez in both .npz layouts, a
#     sparse attribute matrix; an OGB binary folder) from gen-binary.py's
#     CSV folder, and halo-partition reads each as the CSV folder: the same
#     cleaned graph (--write-metis, byte for byte) and the same summary
#     line (nodes, edges, features, classes);
#  3. the shards of gen-binary.py's npy edge list and node data, of the
#     folder's edge.csv as a SNAP list with them, and of header CSVs are
#     the CSV folder's (h5diff: only the run id differs).
#
# Exit 77 (skipped) when neither python3 nor /usr/bin/python3 imports numpy.
set -eu
src=$1 partition=$2
. "$src/tests/find-python.sh"
if ! halo_find_python 'import numpy'; then
  echo "check-numpy: SKIP: neither python3 nor /usr/bin/python3 imports numpy" \
       "(install python3-numpy: scripts/install-deps.sh)"
  exit 77
fi
tmp=$(mktemp -d /tmp/halo-check-numpy.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
seed=${HALO_TEST_SEED:-$(( $(date +%s) % 100000 ))}
echo "check-numpy: seed $seed (HALO_TEST_SEED repeats it)"
python3 "$src/tests/loaders/gen-binary.py" "$tmp/gen" "$seed"

"$py" - "$tmp" <<'PY'
import glob, os, sys
import numpy as np
tmp = sys.argv[1]
g = tmp + "/gen"
for f in sorted(glob.glob(g + "/dtypes/*.npy")):
    a = np.load(f)
    lines = open(f[:-4] + ".txt").read().split()
    rows, cols = int(lines[0]), int(lines[1])
    want = np.array([float(x) for x in lines[2:]])
    assert a.shape == (rows, cols), (f, a.shape)
    assert np.array_equal(a.astype(np.float64).ravel(), want), f
# NumPy's own files, from the CSV folder.
csv = g + "/csv"
n = int(open(csv + "/num-node-list.csv").read())
e = np.loadtxt(csv + "/edge.csv", delimiter=",", dtype=np.int64, ndmin=2)
x = np.loadtxt(csv + "/node-feat.csv", delimiter=",", dtype=np.float32, ndmin=2)
y = np.genfromtxt(csv + "/node-label.csv", dtype=np.float64)
d = tmp + "/np"
os.makedirs(d + "/ogb/raw")
np.save(d + "/edges.npy", e.T.copy())
np.save(d + "/edges-f.npy", np.asfortranarray(e.astype(np.int32)))
np.save(d + "/feat.npy", x)
np.save(d + "/feat-be.npy", x.astype(">f8"))
np.save(d + "/labels.npy", y)
yi = np.where(np.isnan(y), 0, y).astype(np.int64)
np.savez_compressed(d + "/hetero.npz", node_features=x, node_labels=y, edges=e,
                    train_masks=np.zeros((1, n), bool), val_masks=np.zeros((1, n), bool),
                    test_masks=np.zeros((1, n), bool))
order = np.lexsort((e[:, 1], e[:, 0]))
indptr = np.searchsorted(e[order, 0], np.arange(n + 1)).astype(np.int32)
rows_nz, cols_nz = np.nonzero(x)
attr_indptr = np.searchsorted(rows_nz, np.arange(n + 1))
np.savez(d + "/shchur.npz", adj_data=np.ones(len(e), np.float32),
         adj_indices=e[order, 1].astype(np.int32), adj_indptr=indptr,
         adj_shape=np.array([n, n]), attr_data=x[rows_nz, cols_nz],
         attr_indices=cols_nz, attr_indptr=attr_indptr, attr_shape=np.array(x.shape), labels=yi,
         class_names=np.array(["a", "b"], dtype=object))
np.savez_compressed(d + "/ogb/raw/data.npz", edge_index=e.T.copy(), node_feat=x,
                    num_nodes_list=np.array([n]), num_edges_list=np.array([len(e)]))
np.savez_compressed(d + "/ogb/raw/node-label.npz", node_label=y.reshape(-1, 1))
PY

summary() { # the "graph" line and the cleaned graph of one input
  name=$1
  shift
  "$partition" "$@" --parts 2 --out "$tmp/out-$name" --synthetic-split 0.5,0.2,0.3 |
    grep '^graph' > "$tmp/$name.graph"
  "$partition" "$@" --write-metis "$tmp/$name.metis" > /dev/null
}
"$partition" --input "$tmp/gen/csv" --parts 2 --out "$tmp/out-csv" --synthetic-split 0.5,0.2,0.3 |
  grep '^graph' > "$tmp/csv.graph"
"$partition" --input "$tmp/gen/csv" --write-metis "$tmp/csv.metis" > /dev/null
np=$tmp/np
summary npy --input "$np/edges.npy" --features "$np/feat.npy" --labels "$np/labels.npy"
summary npy-f --input "$np/edges-f.npy" --features "$np/feat-be.npy" --labels "$np/labels.npy"
summary hetero --input "$np/hetero.npz"
summary shchur --input "$np/shchur.npz"
summary ogb --input "$np/ogb"
status=0
for name in npy npy-f hetero shchur ogb; do
  if ! cmp -s "$tmp/csv.metis" "$tmp/$name.metis"; then
    echo "check-numpy: $name: the cleaned graph differs from the CSV folder's"
    status=1
  fi
  # gnn-benchmark labels every node (0 where the CSV has nan): its class count may differ.
  want=$(cat "$tmp/csv.graph")
  got=$(cat "$tmp/$name.graph")
  if [ "$want" != "$got" ] && [ "$name" != shchur ]; then
    echo "check-numpy: $name: '$got', want '$want'"
    status=1
  fi
done
# 3. The shards of the generator's npy files (with the CSV folder's split)
#    are the CSV folder's, attribute for attribute, bar the run id; so are
#    those of the folder's edge.csv read as a SNAP list (--nodes N) with
#    the npy node data, and of header CSVs (a 'src,dst' edge list, a
#    named-column features file, a 'label' file; --header auto finds them).
"$partition" --input "$tmp/gen/csv" --parts 3 --out "$tmp/shards-csv" > /dev/null
g=$tmp/gen/npy c=$tmp/gen/csv
"$partition" --input "$g/edges.npy" --features "$g/feat.npy" --labels "$g/labels.npy" \
  --split "$c/split" --parts 3 --out "$tmp/shards-npy" > /dev/null
n=$(head -1 "$c/num-node-list.csv")
"$partition" --input "$c/edge.csv" --format edgelist --nodes "$n" --features "$g/feat.npy" \
  --labels "$g/labels.npy" --split "$c/split" --parts 3 --out "$tmp/shards-snap" > /dev/null
{ echo src,dst; cat "$c/edge.csv"; } > "$tmp/header-edges.csv"
awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) printf "%sf%d", (i > 1 ? "," : ""), i; print "" } 1' \
  "$c/node-feat.csv" > "$tmp/header-feat.csv"
{ echo label; cat "$c/node-label.csv"; } > "$tmp/header-labels.csv"
"$partition" --input "$tmp/header-edges.csv" --nodes "$n" --features "$tmp/header-feat.csv" \
  --labels "$tmp/header-labels.csv" --split "$c/split" --parts 3 --out "$tmp/shards-header" \
  > /dev/null
for kind in npy snap header; do
  for p in 0 1 2; do
    part=part-0000$p-of-00003.h5
    diffs=$(h5diff -c "$tmp/shards-csv/$part" "$tmp/shards-$kind/$part" 2>&1 |
      grep -v -e 'run_id of' -e 'differences found' -e 'Not comparable' -e '^$' || true)
    if [ -n "$diffs" ]; then
      echo "check-numpy: $part of the $kind files differs from the CSV folder's: $diffs"
      status=1
    fi
  done
done
[ "$status" = 0 ] && echo "check-numpy: numpy reads the generator's arrays; halo reads numpy's as the CSV folder"
exit $status
