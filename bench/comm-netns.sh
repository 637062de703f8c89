#!/usr/bin/env bash
# comm-netns.sh: halo-train's communication modes on an emulated cluster
# link (docs/train.md, "Communication modes"; issue 38), side by side in one
# run.  Two network namespaces joined by a veth pair play two hosts, 2 ranks
# each (P = 4), launched by mpirun from the first with a hostfile and Open
# MPI's rsh agent through `ip netns exec` (tests/cluster's scripts): ranks on
# one host talk through shared memory, across hosts through TCP on the veth
# pair, shaped in both directions with tc (netem's rate and delay where the
# kernel has sch_netem, else tbf's rate alone, said in the header).
#
# For each graph and mode it prints: the mean epoch time, the share of it in
# communication (comm_s / epoch_s, the ranks' mean), the time that is
# (comm ms: the ranks' mean comm_s per epoch), its two parts (the ranks'
# mean per epoch):
# the gradient allreduce (AR ms, allreduce_s) and the halo exchanges (exch
# ms, comm_s - allreduce_s), halo bytes per epoch (measured; the run fails
# if any epoch's are off the prediction: "=pred" counts the epochs that
# matched), the ratio to the plain fp32 exchange's bytes, and the final
# test accuracy (mean over SEEDS).  Epoch 1 is not timed.
#
# Then, for each stale mode whose stale-less twin ran (stale against fp32,
# int8+stale against int8, ...), what it hides: "halo exch hidden" is
# 1 - its exch ms / the twin's, the share of the halo exchange time (the
# part of comm_s that --halo-stale overlaps with compute) that it hides;
# "whole comm hidden" is 1 - its comm ms / the twin's, the older figure,
# which counts the gradient allreduce (overlapped by no mode) as exchange;
# "AR/comm" is the allreduce's share of the stale mode's comm_s (means).
# A mode whose flag this build lacks is skipped, saying so; the covers
# compose with int8 rows and stale slots (docs/train.md "Communication
# modes together"), so those pairs and the triple are modes too.  Every
# exit path removes the namespaces.
#
#   sudo bench/comm-netns.sh [BUILD_DIR]     BUILD_DIR defaults to build
#
# Environment: RATE (1gbit), DELAY (0.1ms; netem only), EPOCHS (30),
# SEEDS ("0"), SBM_NODES (20000; 0 skips the sbm graph), MODES (all),
# HALO_BENCH_OUT (bench/results/comm-netns).  Needs root (network
# namespaces); exits 77 where they cannot be made.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
build=$(cd "${1:-build}" && pwd)
out=${HALO_BENCH_OUT:-bench/results/comm-netns}
rate=${RATE:-1gbit}
delay=${DELAY:-0.1ms}
epochs=${EPOCHS:-30}
seeds=${SEEDS:-"0"}
nodes=${SBM_NODES:-20000}
for bin in "$build/bin/halo-train" "$build/bin/halo-partition"; do
  [ -x "$bin" ] || { echo "comm-netns.sh: $bin is missing; build first" >&2; exit 1; }
done
mkdir -p "$out"
out=$(cd "$out" && pwd)

# Namespaces hxbPID-a and -b on 10.213.OCTET.0/24 (interface names stay
# under Linux's 15 characters).
name=hxb$(($$ % 100000))
octet=$(($$ % 200 + 20))
subnet=10.213.$octet.0/24
cleanup() { sh "$root/tests/cluster/netns-cluster.sh" down "$name"; }
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
rc=0
sh "$root/tests/cluster/netns-cluster.sh" up "$name" "$octet" || rc=$?
[ "$rc" = 0 ] || { echo "comm-netns.sh: no namespace cluster here (see above)" >&2; exit "$rc"; }
link="tbf rate $rate"
for side in a b; do
  dev=$name-v$side
  if ! ip netns exec "$name-$side" tc qdisc add dev "$dev" root netem delay "$delay" rate "$rate" \
    2>/dev/null; then
    ip netns exec "$name-$side" tc qdisc add dev "$dev" root tbf rate "$rate" burst 256kb \
      latency 50ms
    continue
  fi
  link="netem rate $rate delay $delay"
done
hosts=$out/hostfile
printf '10.213.%d.1 slots=2\n10.213.%d.2 slots=2\n' "$octet" "$octet" >"$hosts"

# halo-train on the 4 ranks of the two hosts.
cluster_train() {
  env HALO_NETNS_HOSTS="10.213.$octet.1=$name-a=$name-a 10.213.$octet.2=$name-b=$name-b" \
    ip netns exec "$name-a" unshare --uts sh -c "hostname $name-a && exec mpirun \
      --allow-run-as-root --bind-to none --hostfile $hosts -np 4 \
      --mca plm_rsh_agent $root/tests/cluster/netns-rsh.sh --mca btl tcp,self,vader \
      --mca btl_tcp_if_include $subnet --mca oob_tcp_if_include $subnet \
      -x OMP_NUM_THREADS=1 -x OPENBLAS_NUM_THREADS=1 $build/bin/halo-train $*" </dev/null
}

all_modes="fp32:
bf16:--halo-precision bf16 --halo-precision-bwd bf16
int8:--halo-precision int8 --halo-precision-bwd int8
int4:--halo-precision int4 --halo-precision-bwd int4
stale:--halo-stale
int8+stale:--halo-precision int8 --halo-precision-bwd int8 --halo-stale
aggregate:--halo-aggregate auto
int8+aggregate:--halo-precision int8 --halo-precision-bwd int8 --halo-aggregate auto
stale+aggregate:--halo-stale --halo-aggregate auto
int8+stale+aggregate:--halo-precision int8 --halo-precision-bwd int8 --halo-stale --halo-aggregate auto
sample-0.5:--halo-sample 0.5
sample-0.1:--halo-sample 0.1"
help=$("$build/bin/halo-train" --help 2>&1 || true)

graphs="cora:$root/datasets/cora"
# A heterophilous SBM (homophily 0.3): most edges cross parts, so the
# exchange is most of the epoch.
[ "$nodes" -gt 0 ] &&
  graphs="$graphs sbm:sbm:nodes=$nodes,classes=8,avg-degree=16,homophily=0.3,feat=64,seed=1"

echo "link: $link each way between 2 hosts of 2 ranks (P = 4), $epochs epochs, seeds: $seeds"
printf '%-5s %-15s %10s %7s %8s %8s %8s %12s %6s %8s %9s\n' graph mode "epoch ms" "comm%" "comm ms" "AR ms" \
  "exch ms" "bytes/epoch" "=pred" "vs fp32" "test acc"
for g in $graphs; do
  gname=${g%%:*}
  input=${g#*:}
  shards=$out/$gname-4
  [ -d "$shards" ] || "$build/bin/halo-partition" --input "$input" --parts 4 --out "$shards" >/dev/null
  sums=$out/$gname.summary
  : >"$sums"
  while IFS= read -r entry; do
    mode=${entry%%:*}
    flags=${entry#*:}
    [ -z "${MODES:-}" ] || [[ " $MODES " == *" $mode "* ]] || continue
    missing=""
    for f in $flags; do
      case $f in --*) grep -q -- "$f" <<<"$help" || missing="$missing $f" ;; esac
    done
    if [ -n "$missing" ]; then
      printf '%-5s %-15s %s\n' "$gname" "$mode" "skipped: this build has no$missing"
      continue
    fi
    files=""
    for seed in $seeds; do
      m=$out/$gname-$mode-$seed.jsonl
      rm -f "$m"
      cluster_train "$shards" --threads 1 --quiet --epochs "$epochs" --seed "$seed" $flags \
        --metrics "$m" >"$m.log" 2>&1 || { cat "$m.log" >&2; exit 1; }
      files="$files $m"
    done
    python3 - "$gname" "$mode" "$sums" $files <<'PY'
import json, statistics, sys
gname, mode, sums, files = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
epoch, share, nbytes, fp32, acc, ar, exch, comm_s = [], [], [], [], [], [], [], []
matched = lines = 0
for path in files:
    for line in open(path):
        d = json.loads(line)
        if d.get("summary"):
            if d.get("epochs_off_prediction", 0):
                sys.exit(f"comm-netns.sh: {path}: {d['epochs_off_prediction']} epochs off the prediction")
            acc.append(d["final_test_acc"])
            fp32.append(d.get("halo_bytes_fp32_per_epoch") or d["halo_bytes_predicted_per_epoch"])
        elif "epoch" in d and d["epoch"] > 1:
            epoch.append(d["epoch_s"])
            share.append(d["comm_s"] / d["epoch_s"] if d["epoch_s"] > 0 else 0.0)
            nbytes.append(d["halo_bytes"])
            if "allreduce_s" not in d:
                sys.exit(f"comm-netns.sh: {path}: no allreduce_s in the epoch lines (an older build?)")
            ar.append(d["allreduce_s"])
            comm_s.append(d["comm_s"])
            exch.append(d["comm_s"] - d["allreduce_s"])
        if "epoch" in d and "halo_bytes_predicted" in d:
            lines += 1
            matched += d["halo_bytes"] == d["halo_bytes_predicted"]
if matched != lines:
    sys.exit(f"comm-netns.sh: {gname} {mode}: {lines - matched} of {lines} epochs' halo bytes off the prediction")
comm = statistics.mean(comm_s)
print(f"{gname:<5} {mode:<15} {1e3 * statistics.mean(epoch):10.2f} {100 * statistics.mean(share):6.1f}% "
      f"{1e3 * comm:8.2f} {1e3 * statistics.mean(ar):8.2f} {1e3 * statistics.mean(exch):8.2f} "
      f"{statistics.mean(nbytes):12.0f} {matched:>3}/{lines:<2} {statistics.mean(nbytes) / statistics.mean(fp32):8.3f} "
      f"{statistics.mean(acc):9.4f}")
with open(sums, "a") as f:
    print(json.dumps({"mode": mode, "comm": comm, "ar": statistics.mean(ar), "comm_s": statistics.mean(comm_s), "exch": statistics.mean(exch)}), file=f)
PY
  done <<<"$all_modes"
  python3 - "$gname" "$sums" <<'PY'
import json, sys
gname, sums = sys.argv[1], sys.argv[2]
runs = {d["mode"]: d for d in map(json.loads, open(sums))}
rows = []
for mode, d in runs.items():
    if "stale" not in mode.split("+"):
        continue
    twin = "+".join(m for m in mode.split("+") if m != "stale") or "fp32"
    if twin not in runs:
        continue
    t = runs[twin]
    hide = lambda a, b: f"{100 * (1 - a / b):6.1f}%" if b > 0 else "     -"
    rows.append(f"{gname:<5} {mode:<15} {twin:<15} {1e3 * t['exch']:8.2f} {1e3 * d['exch']:8.2f} "
                f"{hide(d['exch'], t['exch']):>16} {hide(d['comm'], t['comm']):>17} {100 * d['ar'] / d['comm_s'] if d['comm_s'] > 0 else 0:8.1f}%")
if rows:
    print(f"{gname}: the halo exchange time (comm_s - allreduce_s) a stale mode hides, against its stale-less twin;")
    print(f"{gname}: whole comm (comm_s, with the gradient allreduce no mode overlaps) as the older figure")
    print(f"{'graph':<5} {'mode':<15} {'twin':<15} {'twin exch':>8} {'exch ms':>8} {'halo exch hidden':>16} "
          f"{'whole comm hidden':>17} {'AR/comm':>9}")
    print("\n".join(rows))
PY
done
