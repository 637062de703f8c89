#!/bin/sh
# check-recipes.sh [--doc FILE] [ROOT]
#
# Checks docs/architecture.md's recipe for a new model against the models
# halo has: every production file (or a folder's CMakeLists.txt) whose code
# names GAT (or GIN) must be a
# file the recipe names, so that the recipe lists every file a model
# touches.  The recipe is the text from "**A new model**" to "**A new
# layer shape**" (the model, its options, its flags) and the model-op part
# of "**A new backend op.**" (up to "A slot of its own"), where KIND stands
# for the model's name and a `*` or `[ch]` names several files.  A path the
# recipe names that matches no file fails too (a stale recipe).  One line
# per problem; exit status 1 when there is any.  POSIX sh and awk.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
doc=""
if [ "${1:-}" = --doc ]; then
  doc=$2
  shift 2
fi
root=${1:-$(cd "$here/../.." && pwd)}
[ -n "$doc" ] || doc="$root/docs/architecture.md"
folders="core comm loaders shard spmm kernels model partition src train programs"
if [ ! -r "$doc" ]; then
  echo "check-recipes: cannot read $doc"
  exit 1
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/check-recipes.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# The recipe's text.
awk '/^\*\*A new model\*\*/ { on = 1 } /^\*\*A new layer shape\*\*/ { on = 0 }
     /^\*\*A new backend op\.\*\*/ { on = 1 } /^A slot of its own/ { on = 0 }
     on' "$doc" >"$tmp/recipe"
if [ ! -s "$tmp/recipe" ]; then
  echo "check-recipes: $doc has no '**A new model**' recipe"
  exit 1
fi

problems=0
# check MODEL PATTERN: MODEL's files against the recipe with KIND = MODEL.
check() {
  model=$1 pattern=$2
  # The paths the recipe names, KIND replaced, expanded in ROOT.
  : >"$tmp/named"
  for path in $(sed "s/KIND/$model/g" "$tmp/recipe" |
    grep -oE "(^|[^/[:alnum:]_.-])($(echo "$folders" | tr ' ' '|'))/[A-Za-z0-9_.*-]+(\\[ch\\])?" |
    sed -e 's/^[^a-z]//' -e 's/[.]$//' |
    sort -u); do
    case $path in
      *'[ch]') set -- "${path%\[ch\]}c" "${path%\[ch\]}h" ;;
      *) set -- "$path" ;;
    esac
    for one in "$@"; do
      found=0
      # Unquoted on purpose: a `*` in the recipe is a glob.
      for file in $root/$one; do
        if [ -f "$file" ]; then
          echo "${file#"$root"/}" >>"$tmp/named"
          found=1
        fi
      done
      if [ $found = 0 ]; then
        echo "check-recipes: the new-model recipe names $one, which does not exist"
        problems=$((problems + 1))
      fi
    done
  done
  # The production files whose code names the model.
  for folder in $folders; do
    [ -d "$root/$folder" ] || continue
    find "$root/$folder" -maxdepth 1 -type f \( -name '*.c' -o -name '*.h' -o -name '*.cu' \
      -o -name '*.cuh' -o -name CMakeLists.txt \)
  done | sort | while read -r file; do
    if grep -qE "$pattern" "$file"; then echo "${file#"$root"/}"; fi
  done >"$tmp/touched"
  for file in $(sort -u "$tmp/named" | comm -13 - "$tmp/touched"); do
    echo "check-recipes: $file names $model, but the new-model recipe of docs/architecture.md does not name it"
    problems=$((problems + 1))
  done
  echo "check-recipes: $model: $(wc -l <"$tmp/touched" | tr -d ' ') production files name it; the recipe names $(sort -u "$tmp/named" | wc -l | tr -d ' ')"
}

check gat '\b(layer|cpu|cuda)-gat\b|\bHALO_MODEL_GAT\b|\bhalo_(cuda_)?gat[a-z_]*|\bgat_[a-z_]+|\blayer_gat|\bHALO_GAT|HALO_OP_GAT|"gat"'
check gin '\blayer-gin\b|\bHALO_MODEL_GIN\b|\bgin_[a-z_]+|\blayer_gin|"gin"'
if [ $problems -gt 0 ]; then
  echo "check-recipes: $problems problem(s)"
  exit 1
fi
