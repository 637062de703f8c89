#!/bin/sh
# self-test.sh: check-includes.sh must fail, with the right lines, on
#   1. the fixture tree (tests/arch/fixture/), whose files make bad edges,
#      against the fixture's own matrix (fixture/matrix.md), which keeps a
#      cell that lists headers (the real matrix has none);
#   2. the real tree against broken or stricter copies of that matrix.
# Exit status 0 when every case failed as expected.  POSIX sh.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
check="$here/check-includes.sh"
doc="$root/docs/architecture.md"
fixture_doc="$here/fixture/matrix.md"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/arch-self-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
failed=0
# The folders the checker knows, one column each.
nfolders=$(sed -n 's/^folders="\(.*\)"$/\1/p' "$check" | wc -w)

# run NAME ARGS...: runs the checker into $tmp/NAME.out, which must fail.
run() {
  name=$1
  shift
  if sh "$check" "$@" >"$tmp/$name.out" 2>&1; then
    echo "FAIL $name: check-includes.sh passed; it must fail"
    sed 's/^/  | /' "$tmp/$name.out"
    failed=1
    return 1
  fi
  return 0
}

# expect NAME PATTERN: a line of NAME's output matches the extended regex.
expect() {
  if grep -Eq -- "$2" "$tmp/$1.out"; then
    echo "ok   $1: $2"
  else
    echo "FAIL $1: no line matches: $2"
    sed 's/^/  | /' "$tmp/$1.out"
    failed=1
  fi
}

# broken NAME SED-SCRIPT: a copy of the matrix document, edited.
broken() {
  sed "$2" "$doc" >"$tmp/$1.md"
  if cmp -s "$doc" "$tmp/$1.md"; then
    echo "FAIL $1: the edit '$2' changed nothing in docs/architecture.md"
    failed=1
  fi
}

# 1. The fixture: every bad edge, and nothing else, in this order.
cat >"$tmp/fixture.want" <<'EOF'
src/CMakeLists.txt:3 names halo_partition_internals: only tests may link a TARGET_internals target
loaders/halo-dup.h and shard/halo-dup.h: header names must be unique across the folders (core comm loaders shard spmm kernels model partition src train programs)
core/halo-status.c:3 includes src/halo-net.h: core may not include src's headers (include matrix, MATRIX)
loaders/load-x.c:5 includes "no-such.h", which no folder holds (core comm loaders shard spmm kernels model partition src train programs); system headers take <...>
kernels/cuda-x.cu:2 includes shard/halo-shard.h: kernels may not include shard's headers (include matrix, MATRIX)
src/halo-net.c:3 includes partition/halo-partition.h: src may not include partition's halo-partition.h, only halo-predict.h (include matrix, MATRIX)
programs/main.c:2 includes "../core/halo-status.h" by path: halo includes headers by name (their folder is on the include path)
check-includes: 7 problem(s) in 15 files
EOF
if run fixture --matrix "$fixture_doc" "$here/fixture"; then
  # The matrix is inside the fixture ROOT, so lines name it as matrix.md.
  sed "s#(include matrix, matrix.md)#(include matrix, MATRIX)#" "$tmp/fixture.out" >"$tmp/fixture.got"
  if diff -u "$tmp/fixture.want" "$tmp/fixture.got"; then
    echo "ok   fixture: the 7 expected lines"
  else
    echo "FAIL fixture: output differs from the expected lines (diff above)"
    failed=1
  fi
fi

# 2. The real tree, with broken copies of the matrix.
broken no-marker '/<!-- include-matrix -->/d'
run no-marker --matrix "$tmp/no-marker.md" "$root" &&
  expect no-marker 'no <!-- include-matrix --> marker'

broken no-row '/^| src |/d'
run no-row --matrix "$tmp/no-row.md" "$root" && expect no-row 'include matrix: no row for src$'

broken bad-mark 's/^| core | x |/| core | y |/'
run bad-mark --matrix "$tmp/bad-mark.md" "$root" &&
  expect bad-mark ':[0-9]+: include matrix: row core, column core: "y" is neither'

broken short-row 's/^| programs | x |/| programs |/'
run short-row --matrix "$tmp/short-row.md" "$root" &&
  expect short-row "row programs has $((nfolders - 1)) cells; the header has $nfolders columns"

broken bad-column '/^| includes/s/| core |/| cores |/'
run bad-column --matrix "$tmp/bad-column.md" "$root" &&
  expect bad-column 'column "cores" is not a folder'

# A stricter matrix fails the real tree: src may no longer include model/
# (the description it builds its network from).
broken strict 's/^| src | x | x | | x | x | x | x |/| src | x | x | | x | x | x | |/'
run strict --matrix "$tmp/strict.md" "$root" &&
  expect strict "^src/[a-z-]+[.]h:[0-9]+ includes model/halo-model.h: src may not include model's headers"

# A cell naming a header its folder does not hold is a stale rule.
# shellcheck disable=SC2016
broken stale 's/^| src | x | x | | x | x | x | x |/| src | x | x | | x | x | x | `halo-gone.h` |/'
run stale --matrix "$tmp/stale.md" "$root" &&
  expect stale 'row src, column model names halo-gone.h, which model/ does not hold'

# A list cell that names some headers refuses the others of its folder.
# shellcheck disable=SC2016
broken only 's/^| src | x | x | | x | x | x | x |/| src | x | x | | x | x | x | `halo-predict.h` |/'
run only --matrix "$tmp/only.md" "$root" &&
  expect only "^src/[a-z-]+[.]h:[0-9]+ includes model/halo-model.h: src may not include model's halo-model.h, only halo-predict.h"

# A missing matrix file, and a root without sources.
run no-file --matrix "$tmp/does-not-exist.md" "$root" && expect no-file 'cannot read the include matrix'
mkdir "$tmp/empty"
run no-sources --matrix "$doc" "$tmp/empty" && expect no-sources 'no source files in'

# 3. check-recipes.sh: the new-model recipe loses a file GAT touches, and
#    names a file that does not exist.
recipes="$here/check-recipes.sh"
# recipe NAME SED-SCRIPT PATTERN: the recipe check on an edited copy of the
# document must fail with a line matching PATTERN.
recipe() {
  broken "$1" "$2"
  if sh "$recipes" --doc "$tmp/$1.md" "$root" >"$tmp/$1.out" 2>&1; then
    echo "FAIL $1: check-recipes.sh passed; it must fail"
    failed=1
  else
    expect "$1" "$3"
  fi
}
recipe recipe-lost 's#(src/gnn-ops.c)#(the ops file)#' \
  'src/gnn-ops.c names gat, but the new-model recipe'
recipe recipe-stale 's#src/layer-KIND.c, added#src/layer-KIND-gone.c, added#' \
  'names src/layer-gat-gone.c, which does not exist'

if [ "$failed" -ne 0 ]; then
  echo "self-test: check-includes.sh did not fail as it must"
  exit 1
fi
echo "self-test: check-includes.sh failed as it must in every case"
