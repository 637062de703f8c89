#!/usr/bin/env bash
# halo-partition against gpmetis on the same graph.
#
# Generates an sbm graph of >= 10M directed edges, converts the cleaned graph
# to METIS' format with `halo-partition --write-metis`, then runs, under
# /usr/bin/time -v and alternating, N times each:
#   gpmetis -ptype=kway -seed=S -ufactor=U -objtype=cut graph.metis P
#       (reads the text graph, partitions, writes graph.metis.part.P)
#   halo-partition --input SPEC --parts P --out DIR --seed S --ufactor U --order O
#       (generates the graph, cleans it, partitions with the same METIS call,
#        writes P HDF5 shards with features, labels and halo plans + manifest;
#        --order community also grows blocks of at most 1000 rows in each
#        part to number its rows, which gpmetis does not do)
# and prints the best wall time, the best cpu time (user + system: steadier
# than wall time on a shared machine) and the peak RSS of each, with ratios.
# Targets (issue 2): time <= 1.3x gpmetis, peak RSS <= 1.5x gpmetis.
#
# Environment: HALO_BUILD (build folder, default build), HALO_BENCH_SPEC,
# HALO_BENCH_PARTS (16), HALO_BENCH_REPEAT (3), HALO_BENCH_ORDER (community
# or id: halo-partition's --order, default community), HALO_BENCH_DIR (scratch
# folder, default a new one under /tmp, removed at the end).
set -euo pipefail
cd "$(dirname "$0")/.."

build=${HALO_BUILD:-build}
exe=$build/bin/halo-partition
spec=${HALO_BENCH_SPEC:-sbm:nodes=500000,classes=16,avg-degree=21,homophily=0.8,feat=32,seed=1}
parts=${HALO_BENCH_PARTS:-16}
repeat=${HALO_BENCH_REPEAT:-3}
order=${HALO_BENCH_ORDER:-community}
seed=1
ufactor=30

for tool in gpmetis /usr/bin/time; do
  command -v "$tool" >/dev/null || { echo "bench/partition.sh: $tool is missing (scripts/install-deps.sh)" >&2; exit 1; }
done
if [ ! -x "$exe" ]; then
  cmake -S . -B "$build" >/dev/null
  cmake --build "$build" -j "$(nproc)" --target halo-partition >/dev/null
fi

if [ -n "${HALO_BENCH_DIR:-}" ]; then
  work=$HALO_BENCH_DIR
  mkdir -p "$work"
else
  work=$(mktemp -d /tmp/halo-bench-partition.XXXXXX)
  trap 'rm -rf "$work"' EXIT
fi

# "Elapsed (wall clock) time (h:mm:ss or m:ss): 1:02.50" -> seconds.
wall_s() {
  sed -n 's/.*Elapsed (wall clock) time.*: //p' "$1" |
    awk -F: '{ s = 0; for (i = 1; i <= NF; i++) s = s * 60 + $i; printf "%.2f\n", s }'
}
cpu_s() { awk -F': ' '/User time|System time/ { s += $2 } END { printf "%.2f\n", s }' "$1"; }
rss_mb() { sed -n 's/.*Maximum resident set size (kbytes): //p' "$1" | awk '{ printf "%.1f\n", $1 / 1024 }'; }
min() { awk 'NR == 1 || $1 < m { m = $1 } END { print m }'; }
max() { awk 'NR == 1 || $1 > m { m = $1 } END { print m }'; }

echo "graph    $spec"
echo "order    halo-partition --order $order"
"$exe" --input "$spec" --write-metis "$work/graph.metis" --force
echo "machine  $(nproc) cores, $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo), $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)"
echo "runs     best of $repeat, alternating; load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo

: >"$work/gp.wall"; : >"$work/gp.rss"; : >"$work/gp.cpu"
: >"$work/halo.wall"; : >"$work/halo.rss"; : >"$work/halo.cpu"
for i in $(seq "$repeat"); do
  rm -f "$work/graph.metis.part.$parts"
  /usr/bin/time -v gpmetis -ptype=kway -seed=$seed -ufactor=$ufactor -objtype=cut \
    "$work/graph.metis" "$parts" >"$work/gpmetis.log" 2>"$work/gpmetis.time"
  wall_s "$work/gpmetis.time" >>"$work/gp.wall"
  rss_mb "$work/gpmetis.time" >>"$work/gp.rss"
  cpu_s "$work/gpmetis.time" >>"$work/gp.cpu"

  /usr/bin/time -v "$exe" --input "$spec" --parts "$parts" --out "$work/out" --force \
    --seed $seed --ufactor $ufactor --order "$order" --json "$work/halo.json" \
    >"$work/halo.log" 2>"$work/halo.time"
  wall_s "$work/halo.time" >>"$work/halo.wall"
  rss_mb "$work/halo.time" >>"$work/halo.rss"
  cpu_s "$work/halo.time" >>"$work/halo.cpu"
  echo "run $i: gpmetis $(tail -1 "$work/gp.wall") s wall $(tail -1 "$work/gp.cpu") s cpu" \
    "$(tail -1 "$work/gp.rss") MB; halo-partition $(tail -1 "$work/halo.wall") s wall" \
    "$(tail -1 "$work/halo.cpu") s cpu $(tail -1 "$work/halo.rss") MB"
done

gp_t=$(min <"$work/gp.wall"); gp_c=$(min <"$work/gp.cpu"); gp_m=$(max <"$work/gp.rss")
h_t=$(min <"$work/halo.wall"); h_c=$(min <"$work/halo.cpu"); h_m=$(max <"$work/halo.rss")
gp_cut=$(sed -n 's/.*Edgecut: \([0-9]*\),.*/\1/p' "$work/gpmetis.log")
h_cut=$(sed -n 's/.*"edge_cut": \([0-9]*\),.*/\1/p' "$work/halo.json")
h_phases=$(sed -n 's/.*"seconds": {\(.*\)}.*/\1/p' "$work/halo.json" | tr -d '"')
h_cpu_phases=$(sed -n 's/.*"cpu_seconds": {\(.*\)}.*/\1/p' "$work/halo.json" | tr -d '"')

echo
printf '%-16s %10s %10s %14s %12s\n' tool "wall (s)" "cpu (s)" "peak RSS (MB)" "edge cut"
printf '%-16s %10s %10s %14s %12s\n' gpmetis "$gp_t" "$gp_c" "$gp_m" "$gp_cut"
printf '%-16s %10s %10s %14s %12s\n' halo-partition "$h_t" "$h_c" "$h_m" "$h_cut"
echo "halo-partition phases, last run, wall s: $h_phases"
echo "halo-partition phases, last run, cpu s:  $h_cpu_phases"
awk -v ht="$h_t" -v gt="$gp_t" -v hc="$h_c" -v gc="$gp_c" -v hm="$h_m" -v gm="$gp_m" 'BEGIN {
  printf "ratio: wall time %.2fx (target <= 1.3x), cpu time %.2fx, peak RSS %.2fx (target <= 1.5x)\n",
         ht / gt, hc / gc, hm / gm }'
