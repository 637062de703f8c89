#!/bin/sh
# check-to-torch.sh MODE SOURCE_DIR HALO_PARTITION HALO_TRAIN
#
# scripts/halo-to-torch end to end (tests/train/check_to_torch.py says what
# it checks).  MODE numpy needs numpy and h5py; MODE torch needs torch and
# torch_geometric besides.  Exit 77 (skipped) when neither the python3 on
# PATH nor /usr/bin/python3 imports what MODE needs.  POSIX sh.
set -eu
mode=$1 src=$2 partition=$3 train=$4
need='import numpy, h5py'
[ "$mode" = torch ] && need='import numpy, h5py, torch, torch_geometric'
. "$src/tests/find-python.sh"
if ! halo_find_python "$need"; then
  echo "check-to-torch: SKIP: neither python3 nor /usr/bin/python3 runs '$need'" \
       "(numpy and h5py: scripts/install-deps.sh; torch and torch_geometric are never required)"
  exit 77
fi
exec "$py" "$src/tests/train/check_to_torch.py" "$mode" "$src" "$partition" "$train"
