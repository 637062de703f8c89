#!/bin/sh
# check-includes.sh [--matrix FILE] [ROOT]
#
# Checks halo's include graph against the include matrix of
# docs/architecture.md ("The include matrix" says how it is read).  Every
# `#include "NAME"` in ROOT's folders core comm loaders shard spmm kernels
# model partition src train programs (*.c *.h *.cu *.cuh) is an edge from the folder of
# the including file to the folder that holds NAME.  It fails, with one line
# each, on:
#   - an edge whose cell in the matrix is empty, or names other headers;
#   - an include by path ("../core/x.h", "core/x.h"): halo includes by name;
#   - a quoted include that no folder holds (system headers take <...>);
#   - a header name held by two folders (the name must say whose it is);
#   - a folder's CMakeLists.txt naming a TARGET_internals target (only
#     tests may link one);
#   - a missing or malformed matrix.
# ROOT defaults to the source tree this script is in; FILE to
# ROOT/docs/architecture.md.  Exit status 0: every edge is allowed; 1: not.
# POSIX sh and awk only.
set -eu

matrix=
while [ $# -gt 0 ]; do
  case $1 in
    --matrix) matrix=$2; shift 2 ;;
    -h | --help) sed -n '2,19p' "$0"; exit 0 ;;
    -*) echo "check-includes: unknown option $1" >&2; exit 1 ;;
    *) break ;;
  esac
done
root=${1:-$(dirname "$0")/../..}
root=$(cd "$root" && pwd)
[ -n "$matrix" ] || matrix=$root/docs/architecture.md
case $matrix in /*) ;; *) matrix=$(pwd)/$matrix ;; esac
# Messages name the matrix as a path inside ROOT when it is one.
case $matrix in "$root"/*) shown=${matrix#"$root"/} ;; *) shown=$matrix ;; esac
if [ ! -r "$matrix" ]; then
  echo "check-includes: $matrix: cannot read the include matrix" >&2
  exit 1
fi

folders="core comm loaders shard spmm kernels model partition src train programs"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/check-includes.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

cd "$root"
: >"$tmp/sources"
for f in $folders; do
  [ -d "$f" ] || continue
  find "$f" -type f \( -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \) \
    | LC_ALL=C sort >>"$tmp/sources"
done
if [ ! -s "$tmp/sources" ]; then
  echo "check-includes: $root: no source files in $folders" >&2
  exit 1
fi
grep -E '\.(h|cuh)$' "$tmp/sources" >"$tmp/headers" || :

# White-box tests alone link TARGET_internals (docs/architecture.md): a
# folder's own CMakeLists.txt that names one opens its private headers.
: >"$tmp/internals"
for f in $folders; do
  [ -f "$f/CMakeLists.txt" ] || continue
  grep -n '^[^#]*_internals' "$f/CMakeLists.txt" | sed "s#^#$f/CMakeLists.txt:#" >>"$tmp/internals" || :
done

# The awk program reads, in order: the matrix document, the list of headers,
# then every source file (its name in FILENAME).
# shellcheck disable=SC2046  # file names are plain: word splitting is meant
awk -v folders="$folders" -v matrix="$matrix" -v shown="$shown" -v headers="$tmp/headers" -v internals="$tmp/internals" '
function trim(s) {
  sub(/^[ \t]+/, "", s)
  sub(/[ \t]+$/, "", s)
  return s
}
# Strips backticks and one trailing slash: `src/` -> src.
function name_of(s) {
  s = trim(s)
  gsub(/`/, "", s)
  sub(/\/$/, "", s)
  return s
}
function matrix_error(msg) {
  printf "%s:%d: include matrix: %s\n", shown, FNR, msg
  matrix_bad = 1
}
function table_error(msg) {
  printf "%s: include matrix: %s\n", shown, msg
  matrix_bad = 1
}
# Splits a table line "| a | b |" into cell[1..n]; returns n (0: not a row).
function cells(line, cell,    parts, n, i) {
  line = trim(line)
  if (line !~ /^\|/ || line !~ /\|$/) return 0
  n = split(line, parts, "|")
  for (i = 2; i < n; i++) cell[i - 1] = trim(parts[i])
  return n - 2
}
# Once the document is read: every folder has its row and its column.
function check_matrix(    i) {
  checked_matrix = 1
  if (state == "before") {
    printf "%s: include matrix: no <!-- include-matrix --> marker followed by the table\n", shown
    matrix_bad = 1
    return
  }
  for (i = 1; i <= nfold; i++) {
    if (!(fold[i] in colseen)) table_error("no column for " fold[i])
    if (!(fold[i] in rowseen)) table_error("no row for " fold[i])
  }
}
BEGIN {
  while ((getline line < internals) > 0) {
    # FILE:LINE:TEXT
    p = index(line, ":")
    q = p + index(substr(line, p + 1), ":")
    text = substr(line, q + 1)
    match(text, /[A-Za-z0-9_]*_internals/)
    printf "%s names %s: only tests may link a TARGET_internals target\n", substr(line, 1, q - 1), substr(text, RSTART, RLENGTH)
    bad++
  }
  nfold = split(folders, fold, " ")
  for (i = 1; i <= nfold; i++) known[fold[i]] = 1
  state = "before"  # before, header, separator, rows, after
}

# ---- the matrix -------------------------------------------------------
FILENAME == matrix {
  if (state == "before") {
    if ($0 ~ /<!-- *include-matrix *-->/) state = "header"
    next
  }
  if (state == "after") next
  if (state == "header" && trim($0) == "") next
  n = cells($0, cell)
  if (n == 0) {
    if (state == "header") matrix_error("no table after the <!-- include-matrix --> marker")
    else if (state == "separator") matrix_error("no separator row (|---|...) after the header")
    state = "after"
    next
  }
  if (state == "header") {
    ncol = n - 1
    for (i = 2; i <= n; i++) {
      c = name_of(cell[i])
      if (!(c in known)) matrix_error("column \"" c "\" is not a folder (folders: " folders ")")
      else if (c in colseen) matrix_error("column " c " appears twice")
      colseen[c] = 1
      col[i - 1] = c
    }
    state = "separator"
    next
  }
  if (state == "separator") {
    for (i = 1; i <= n; i++)
      if (cell[i] !~ /^:?-+:?$/) {
        matrix_error("the second line of the table must be the separator |---|...")
        break
      }
    state = "rows"
    next
  }
  # A row: the including folder, then one cell per column.
  r = name_of(cell[1])
  if (!(r in known)) { matrix_error("row \"" r "\" is not a folder (folders: " folders ")"); next }
  if (r in rowseen) { matrix_error("row " r " appears twice"); next }
  rowseen[r] = 1
  if (n != ncol + 1) {
    matrix_error("row " r " has " (n - 1) " cells; the header has " ncol " columns")
    next
  }
  for (i = 1; i <= ncol; i++) {
    v = trim(cell[i + 1])
    if (v == "") continue
    if (v == "x") { allow[r, col[i]] = "x"; continue }
    # Only these headers of the column folder: `a.h`, `b.h`.
    list = v
    gsub(/[`,]/, " ", list)
    m = split(list, names, " ")
    ok = m > 0
    for (k = 1; k <= m; k++) if (names[k] !~ /^[A-Za-z0-9_.-]+\.(h|cuh)$/) ok = 0
    if (!ok) {
      matrix_error("row " r ", column " col[i] ": \"" v "\" is neither x, empty nor a list of headers")
      continue
    }
    allow[r, col[i]] = "list"
    only[r, col[i]] = ""
    for (k = 1; k <= m; k++) {
      only_has[r, col[i], names[k]] = 1
      only[r, col[i]] = only[r, col[i]] (k > 1 ? ", " : "") names[k]
      listed[r, col[i], k] = names[k]
    }
    listed_n[r, col[i]] = m
  }
  next
}

# ---- the headers ------------------------------------------------------
!checked_matrix {
  check_matrix()
  if (matrix_bad) exit 1
}
FILENAME == headers {
  path = $0
  folder = path
  sub(/\/.*/, "", folder)
  name = path
  sub(/.*\//, "", name)
  if (name in owner) {
    printf "%s and %s: header names must be unique across the folders (%s)\n", owner_path[name], path, folders
    bad++
  } else {
    owner[name] = folder
    owner_path[name] = path
  }
  next
}

# ---- the sources ------------------------------------------------------
FNR == 1 {
  files++
  from = FILENAME
  sub(/\/.*/, "", from)
}
/^[ \t]*#[ \t]*include[ \t]*"/ {
  inc = $0
  sub(/^[ \t]*#[ \t]*include[ \t]*"/, "", inc)
  sub(/".*/, "", inc)
  includes++
  where = FILENAME ":" FNR
  if (inc ~ /\//) {
    printf "%s includes \"%s\" by path: halo includes headers by name (their folder is on the include path)\n", where, inc
    bad++
    next
  }
  if (!(inc in owner)) {
    printf "%s includes \"%s\", which no folder holds (%s); system headers take <...>\n", where, inc, folders
    bad++
    next
  }
  to = owner[inc]
  edges[from, to] = 1
  mode = allow[from, to]
  if (mode == "x") next
  if (mode == "list" && ((from, to, inc) in only_has)) next
  if (mode == "list")
    printf "%s includes %s: %s may not include %s'"'"'s %s, only %s (include matrix, %s)\n", where, owner_path[inc], from, to, inc, only[from, to], shown
  else
    printf "%s includes %s: %s may not include %s'"'"'s headers (include matrix, %s)\n", where, owner_path[inc], from, to, shown
  bad++
}
END {
  if (!checked_matrix) check_matrix()
  if (matrix_bad) exit 1
  # A header a cell names must exist in its column folder, or the rule is stale.
  for (i = 1; i <= nfold; i++)
    for (j = 1; j <= nfold; j++) {
      r = fold[i]; c = fold[j]
      if (allow[r, c] != "list") continue
      for (k = 1; k <= listed_n[r, c]; k++) {
        h = listed[r, c, k]
        if (!(h in owner) || owner[h] != c) {
          printf "%s: include matrix: row %s, column %s names %s, which %s/ does not hold\n", shown, r, c, h, c
          bad++
        }
      }
    }
  nedges = 0
  for (i = 1; i <= nfold; i++)
    for (j = 1; j <= nfold; j++)
      if ((fold[i], fold[j]) in edges) nedges++
  if (bad) {
    printf "check-includes: %d problem(s) in %d files\n", bad, files
    exit 1
  }
  printf "check-includes: %d files, %d includes, %d folder edges, all allowed by %s\n", files, includes, nedges, shown
}
' "$matrix" "$tmp/headers" $(cat "$tmp/sources")
