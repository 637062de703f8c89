#!/usr/bin/env bash
# Downloads an OGB node-property dataset in its raw CSV layout, which halo
# reads directly (no Python, no conversion):
#
#   datasets/fetch-ogb.sh ogbn-arxiv [DEST]      # 169,343 nodes, 1.2M edges, ~81 MB zip
#   datasets/fetch-ogb.sh ogbn-products [DEST]   # 2.4M nodes, 61.9M edges, ~1.4 GB zip
#
# DEST defaults to the folder this script lives in.  The archive unpacks to
# DEST/NAME/{raw,split/<scheme>}; point halo at DEST/NAME:
#
#   build/bin/halo-partition --input datasets/ogbn-arxiv --parts 8 --out arxiv-8
#
# ogbn-papers100M is published only as binary .npz ("-bin" archive) and
# ogbn-proteins has multi-task labels and no node features, so neither is
# offered here.  Needs curl or wget, and unzip.
set -euo pipefail

usage() {
  echo "usage: $0 ogbn-arxiv|ogbn-products [DEST]" >&2
  exit 2
}

[[ $# -ge 1 && $# -le 2 ]] || usage
name=$1
dest=${2:-$(cd "$(dirname "$0")" && pwd)}

case $name in
  ogbn-arxiv) archive=arxiv ;;
  ogbn-products) archive=products ;;
  *) echo "$0: unknown dataset '$name' (ogbn-arxiv, ogbn-products)" >&2; exit 2 ;;
esac
url="http://snap.stanford.edu/ogb/data/nodeproppred/${archive}.zip"

command -v unzip >/dev/null || { echo "$0: 'unzip' is required" >&2; exit 1; }
if command -v curl >/dev/null; then
  fetch() { curl -fL --retry 3 -o "$2" "$1"; }
elif command -v wget >/dev/null; then
  fetch() { wget -O "$2" "$1"; }
else
  echo "$0: curl or wget is required" >&2
  exit 1
fi

if [[ -e "$dest/$name" ]]; then
  echo "$0: $dest/$name already exists; remove it to download again" >&2
  exit 1
fi
mkdir -p "$dest"
work=$(mktemp -d "$dest/.fetch-$name.XXXXXX")
trap 'rm -rf "$work"' EXIT

echo "downloading $url" >&2
fetch "$url" "$work/$archive.zip"
unzip -q "$work/$archive.zip" -d "$work"
[[ -f "$work/$archive/raw/edge.csv.gz" && -f "$work/$archive/raw/num-node-list.csv.gz" ]] || {
  echo "$0: $url did not unpack to $archive/raw/edge.csv.gz; the OGB layout may have changed" >&2
  exit 1
}
# Rename only once complete, so an interrupted download never looks valid.
mv "$work/$archive" "$dest/$name"
echo "$dest/$name: $(zcat "$dest/$name/raw/num-node-list.csv.gz") nodes," \
     "$(zcat "$dest/$name/raw/num-edge-list.csv.gz") edges; splits in $(ls -d "$dest/$name"/split/*)" >&2
