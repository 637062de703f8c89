#!/bin/sh
# check-plot.sh SOURCE_DIR HALO_PARTITION HALO_TRAIN
#
# scripts/halo-plot on real inputs: Cora in 2 METIS parts, 20 epochs under
# mpirun -np 2 with --metric f1 (so val_f1 and test_f1 are plotted too), then
# 10 more resumed from a checkpoint into a file of their own (epochs 11-20).  Every PNG must be a PNG that matplotlib decodes and
# that is not blank (tests/plot/check-png.py), and nothing but the PNGs may
# be left in the output folder.  The halo matrix comes from the partition's
# --json when it has "halo_bytes_between_parts", and from a small synthetic
# partition JSON in any case.  Bad input (a missing file, a line that is not
# JSON, no epoch line, --plots halo without the key) must give one line
# naming the file (and line), exit status 1 and no traceback.
#
# Exit 77 (skipped) when no python3 imports matplotlib.  POSIX sh.
set -eu
src=$1 partition=$2 train=$3
plot=$src/scripts/halo-plot

# The first interpreter that has matplotlib and numpy: the python3 on PATH,
# else Debian's (a pyenv or venv python3 may lack python3-matplotlib).
. "$src/tests/find-python.sh"
if ! halo_find_python 'import matplotlib, numpy'; then
  echo "check-plot: SKIP: neither python3 nor /usr/bin/python3 imports matplotlib" \
       "(install python3-matplotlib: scripts/install-deps.sh)"
  exit 77
fi
echo "check-plot: $py ($("$py" -c 'import sys, matplotlib; print(sys.version.split()[0], "matplotlib", matplotlib.__version__)'))"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/halo-plot.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
failed=0
fail() {
  echo "FAIL $*"
  failed=1
}
ok() {
  echo "ok   $*"
}

# run NAME CMD...: runs CMD with stdout and stderr in $tmp/NAME.out and
# .err, and leaves its exit status in $rc.
run() {
  name=$1
  shift
  rc=0
  "$@" >"$tmp/$name.out" 2>"$tmp/$name.err" || rc=$?
}

mpi() {
  mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2 \
    -x OMP_NUM_THREADS=1 -x OPENBLAS_NUM_THREADS=1 "$@"
}

# ---- real inputs -----------------------------------------------------------
run partition "$partition" --input "$src/datasets/cora" --parts 2 --out "$tmp/cora-2" \
  --dims 1433,16,7 --json "$tmp/cora-2.json"
if [ "$rc" -ne 0 ]; then
  cat "$tmp/partition.err"
  echo "check-plot: halo-partition failed ($rc)"
  exit 1
fi
run train mpi "$train" "$tmp/cora-2" --epochs 20 --quiet --metric f1 --metrics "$tmp/cora-2.jsonl"
if [ "$rc" -ne 0 ]; then
  cat "$tmp/train.out" "$tmp/train.err"
  echo "check-plot: halo-train failed ($rc)"
  exit 1
fi
if grep -q '"val_f1": ' "$tmp/cora-2.jsonl"; then ok "the metrics carry val_f1"; else
  fail "halo-train --metric f1 wrote no \"val_f1\" key"; fi
run train-10 mpi "$train" "$tmp/cora-2" --epochs 10 --quiet --checkpoint "$tmp/ck" \
  --checkpoint-every 10
# --eval-every 3: the resumed file's epochs 11, 13, 14, 16, 17 and 19 have no
# evaluation figures, which its plots below must draw around.
run resume mpi "$train" "$tmp/cora-2" --epochs 20 --quiet --checkpoint "$tmp/ck" \
  --resume auto --eval-every 3 --metrics "$tmp/resumed.jsonl"
if [ "$rc" -ne 0 ]; then
  cat "$tmp/train-10.err" "$tmp/resume.out" "$tmp/resume.err"
  echo "check-plot: the resumed halo-train failed ($rc)"
  exit 1
fi
first=$(sed -n '1s/^{"epoch": \([0-9]*\),.*/\1/p' "$tmp/resumed.jsonl")
if [ "$first" = 11 ]; then ok "the resumed run's metrics start at epoch 11"; else
  fail "the resumed run's metrics start at epoch '$first', not 11"; fi

# ---- the plots -------------------------------------------------------------
# check_pngs DIR NAME...: DIR holds exactly NAME... and each is a good PNG.
check_pngs() {
  dir=$1
  shift
  expected=$(printf '%s\n' "$@" | sort)
  found=$(ls -A "$dir" | sort)
  if [ "$found" != "$expected" ]; then
    fail "$dir holds '$(echo $found)', not '$(echo $expected)'"
  fi
  for name in "$@"; do
    if [ -f "$dir/$name" ]; then
      "$py" "$src/tests/plot/check-png.py" "$dir/$name" || failed=1
    fi
  done
}

has_key=0
grep -q '"halo_bytes_between_parts"' "$tmp/cora-2.json" && has_key=1

mkdir "$tmp/out"
run plot "$py" "$plot" "$tmp/cora-2.jsonl" --partition "$tmp/cora-2.json" --out "$tmp/out" \
  --prefix cora
if [ "$rc" -ne 0 ]; then
  fail "halo-plot on the real run: exit status $rc: $(cat "$tmp/plot.err")"
elif [ "$has_key" = 1 ]; then
  ok "halo-plot on the real run and its partition's halo matrix"
  check_pngs "$tmp/out" cora-curves.png cora-time.png cora-halo.png
else
  # halo-partition without the key yet: one line says so, the rest is drawn.
  if [ "$(wc -l <"$tmp/plot.err")" -eq 1 ] &&
     grep -q 'cora-2.json: no "halo_bytes_between_parts" key.*skipping the halo plot' \
       "$tmp/plot.err"; then
    ok "the partition JSON has no halo matrix yet; one line: $(cat "$tmp/plot.err")"
  else
    fail "a partition JSON without the halo matrix: stderr '$(cat "$tmp/plot.err")'"
  fi
  check_pngs "$tmp/out" cora-curves.png cora-time.png
  # Asked for explicitly, the missing plot is an error.
  run plot-halo "$py" "$plot" "$tmp/cora-2.jsonl" --partition "$tmp/cora-2.json" \
    --out "$tmp/out" --plots halo
  if [ "$rc" -eq 1 ] && [ "$(wc -l <"$tmp/plot-halo.err")" -eq 1 ] &&
     grep -q '^halo-plot: error: .*cora-2.json: no "halo_bytes_between_parts"' \
       "$tmp/plot-halo.err"; then
    ok "--plots halo without the key: exit 1, $(cat "$tmp/plot-halo.err")"
  else
    fail "--plots halo without the key: exit $rc, stderr '$(cat "$tmp/plot-halo.err")'"
  fi
fi

# A partition run without --dims has no matrix to draw: the line says so
# (not that the file predates the key).
run partition-nodims "$partition" --input "$src/datasets/cora" --parts 2 \
  --out "$tmp/cora-2n" --json "$tmp/cora-2n.json"
mkdir "$tmp/nodims"
run plot-nodims "$py" "$plot" "$tmp/cora-2.jsonl" --partition "$tmp/cora-2n.json" \
  --out "$tmp/nodims" --prefix n
if [ "$rc" -eq 0 ] && grep -q 'cora-2n.json: no halo matrix: halo-partition was run without --dims' \
     "$tmp/plot-nodims.err"; then
  ok "a partition run without --dims: $(cat "$tmp/plot-nodims.err")"
  check_pngs "$tmp/nodims" n-curves.png n-time.png
else
  fail "a partition run without --dims: exit $rc, stderr '$(cat "$tmp/plot-nodims.err")'"
fi

# A synthetic 4-part halo matrix ([sender][receiver], bytes per epoch).
cat >"$tmp/synthetic.json" <<'EOF'
{"parts": 4, "predicted_halo_bytes_per_epoch": 88688,
 "halo_bytes_between_parts": [[0, 12880, 3680, 9200], [5520, 0, 14720, 7360],
                              [4600, 11960, 0, 6440], [2760, 8280, 1288, 0]]}
EOF
mkdir "$tmp/synthetic"
run synthetic "$py" "$plot" "$tmp/cora-2.jsonl" --partition "$tmp/synthetic.json" \
  --out "$tmp/synthetic" --prefix s --plots halo
if [ "$rc" -eq 0 ]; then
  ok "--plots halo of a synthetic 4 x 4 matrix"
  check_pngs "$tmp/synthetic" s-halo.png
else
  fail "--plots halo of a synthetic 4 x 4 matrix: exit $rc: $(cat "$tmp/synthetic.err")"
fi

# A resumed run's file (epochs 11-20), whose summary says a signal stopped
# it (as a preempted run's does).
sed 's/"stopped_by": null/"stopped_by": "SIGUSR1"/' "$tmp/resumed.jsonl" >"$tmp/stopped.jsonl"
if grep -q '"stopped_by": "SIGUSR1"' "$tmp/stopped.jsonl"; then :; else
  fail "the resumed run's summary has no \"stopped_by\": null to edit"; fi
mkdir "$tmp/stopped"
run stopped "$py" "$plot" "$tmp/stopped.jsonl" --out "$tmp/stopped"
if [ "$rc" -eq 0 ]; then
  ok "a resumed run stopped by SIGUSR1 (epochs 11-20), default prefix"
  check_pngs "$tmp/stopped" stopped-curves.png stopped-time.png
else
  fail "a resumed run stopped by SIGUSR1: exit $rc: $(cat "$tmp/stopped.err")"
fi

# The PNG check itself must refuse a blank figure and a file that is no PNG.
"$py" - "$tmp/blank.png" <<'EOF'
import sys
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
fig, ax = plt.subplots(figsize=(6, 4))
fig.savefig(sys.argv[1], format="png")
EOF
cp "$tmp/cora-2.jsonl" "$tmp/not-a.png"
for bad in blank.png not-a.png; do
  if "$py" "$src/tests/plot/check-png.py" "$tmp/$bad" >"$tmp/png.out"; then
    fail "check-png.py took $bad: $(cat "$tmp/png.out")"
  else
    ok "check-png.py refuses $bad: $(cat "$tmp/png.out")"
  fi
done

# ---- bad input: one line naming the file (and line), exit 1 ---------------
# expect_error NAME PATTERN ARGS...: halo-plot ARGS exits 1 with one stderr
# line matching PATTERN (grep -E), no traceback, and writes no file.
expect_error() {
  name=$1 pattern=$2
  shift 2
  rm -rf "$tmp/bad-out"
  mkdir "$tmp/bad-out"
  run "$name" "$py" "$plot" "$@" --out "$tmp/bad-out"
  err=$(cat "$tmp/$name.err")
  if [ "$rc" -eq 1 ] && [ "$(wc -l <"$tmp/$name.err")" -eq 1 ] &&
     echo "$err" | grep -Eq "$pattern" && [ -z "$(ls -A "$tmp/bad-out")" ]; then
    ok "$name: $err"
  else
    fail "$name: exit $rc (want 1), stderr '$err' (want one line matching '$pattern')," \
         "left '$(ls -A "$tmp/bad-out")'"
  fi
}

{ sed -n 1,2p "$tmp/cora-2.jsonl"; echo '{"epoch": 3, "loss": 1.9'; sed -n '4,$p' "$tmp/cora-2.jsonl"; } \
  >"$tmp/truncated.jsonl"
expect_error not-json '^halo-plot: error: .*/truncated\.jsonl:3: not a JSON object' \
  "$tmp/truncated.jsonl"
printf '{"epoch": 1, "loss": 1.9}\nepoch 2 loss 1.8\n' >"$tmp/text.jsonl"
expect_error text-line '^halo-plot: error: .*/text\.jsonl:2: not a JSON object' "$tmp/text.jsonl"
printf '[1, 2]\n' >"$tmp/array.jsonl"
expect_error array-line '^halo-plot: error: .*/array\.jsonl:1: not a JSON object' "$tmp/array.jsonl"
tail -n 1 "$tmp/cora-2.jsonl" >"$tmp/summary-only.jsonl"
expect_error no-epochs '^halo-plot: error: .*/summary-only\.jsonl: no epoch lines' \
  "$tmp/summary-only.jsonl"
: >"$tmp/empty.jsonl"
expect_error empty '^halo-plot: error: .*/empty\.jsonl: no epoch lines' "$tmp/empty.jsonl"
expect_error missing '^halo-plot: error: .*/missing\.jsonl: cannot read: No such file' \
  "$tmp/missing.jsonl"
printf '{"parts": 2,\n "halo_bytes_between_parts": [[0, 1], [2, 0]\n' >"$tmp/cut.json"
expect_error partition-not-json '^halo-plot: error: .*/cut\.json:[0-9]+: not a JSON object' \
  "$tmp/cora-2.jsonl" --partition "$tmp/cut.json"
printf '{"parts": 2, "halo_bytes_between_parts": [[0, 1], [2]]}\n' >"$tmp/ragged.json"
expect_error partition-ragged '^halo-plot: error: .*/ragged\.json: "halo_bytes_between_parts"\[1\]' \
  "$tmp/cora-2.jsonl" --partition "$tmp/ragged.json"
expect_error halo-no-partition '^halo-plot: error: --plots halo needs --partition' \
  "$tmp/cora-2.jsonl" --plots halo

if grep -l Traceback "$tmp"/*.err >/dev/null 2>&1; then
  fail "a traceback in $(grep -l Traceback "$tmp"/*.err | tr '\n' ' ')"
fi

if [ "$failed" -ne 0 ]; then
  echo "check-plot: FAILED"
  exit 1
fi
echo "check-plot: every plot rendered and every bad input refused in one line"
