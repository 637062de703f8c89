#!/bin/sh
# check-import.sh SOURCE_DIR HALO_PARTITION npz|torch|dgl
#
# Runs tests/import/check-import.py (scripts/halo-import against numpy's
# own reading of what it wrote) with the first interpreter that imports
# numpy (and torch, for the torch case; torch and dgl for the dgl case):
# the python3 on PATH, else Debian's.  Exit 77 (skipped) when there is
# none.  POSIX sh.
set -eu
src=$1 partition=$2 what=$3
need=numpy
[ "$what" = torch ] && need="numpy, torch"
[ "$what" = dgl ] && need="numpy, torch, dgl"
. "$src/tests/find-python.sh"
if ! halo_find_python "import $need"; then
  echo "check-import: SKIP: neither python3 nor /usr/bin/python3 imports $need"
  exit 77
fi
echo "check-import: $py, $what"
exec "$py" "$src/tests/import/check-import.py" "$src" "$partition" "$what"
