#!/usr/bin/env bash
# halo-partition against gpmetis on the same graph, and its Scotch method
# against its METIS one.
#
# Generates an sbm graph of >= 20M directed edges, converts the cleaned graph
# to METIS' format with `halo-partition --write-metis`, then runs, under
# /usr/bin/time -v and alternating, N times each:
#   gpmetis -ptype=kway -seed=S -ufactor=U -objtype=cut graph.metis P
#       (reads the text graph, partitions, writes graph.metis.part.P)
#   halo-partition --input SPEC --parts P --out DIR --seed S --ufactor U --order O
#       (generates the graph, cleans it, partitions with the same METIS call,
#        writes P HDF5 shards with features, labels and halo plans + manifest;
#        --order community also grows blocks of at most 1000 rows in each
#        part to number its rows, which gpmetis does not do)
#   halo-partition ... --method scotch
#       (the same run, partitioned by Scotch's int64 library)
#   mpirun -np K halo-partition ... --method ptscotch, K = 1, 2 and 4
#       (the distributed partitioner: each rank draws its slice of the spec,
#        cleans its block of rows, halo's distributed coarsening and then
#        PT-Scotch partition, each part is written by one rank; peak RSS per
#        rank from its --json, the largest rank's and the sum)
#       (K = 4 oversubscribes a 2-core machine: its wall time is not a
#        speed, its memory and cut are what a 4-host run would give)
#   the same at K = 2 with --coarsen-levels 0 (PT-Scotch's own multilevel
#       alone, as before halo coarsened)
# and prints the best wall time, the best cpu time (user + system: steadier
# than wall time on a shared machine), the peak RSS, the edge cut and (for
# halo-partition) the comm volume of each, with ratios.
# Targets: halo-partition's time <= 1.3x gpmetis', peak RSS <= 1.5x (issue 2);
# scotch's wall time <= 2x metis', edge cut <= 1.3x metis'; ptscotch at K = 2
# at most 0.6x metis' peak RSS per rank, edge cut <= 1.3x metis' (issue 21).
#
# Environment: HALO_BUILD (build folder, default build), HALO_BENCH_SPEC,
# HALO_BENCH_PARTS (16), HALO_BENCH_REPEAT (3), HALO_BENCH_ORDER (community
# or id: halo-partition's --order, default community), HALO_BENCH_DIR (scratch
# folder, default a new one under /tmp, removed at the end).
set -euo pipefail
cd "$(dirname "$0")/.."

build=${HALO_BUILD:-build}
exe=$build/bin/halo-partition
spec=${HALO_BENCH_SPEC:-sbm:nodes=1000000,classes=16,avg-degree=21,homophily=0.8,feat=32,seed=1}
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
rss_mb() { sed -n 's/.*Maximum resident set size (kbytes): //p' "$1" | awk '{ printf "%.1f\n", $1 * 1024 / 1e6 }'; } # KiB -> MB (10^6)
min() { awk 'NR == 1 || $1 < m { m = $1 } END { print m }'; }
max() { awk 'NR == 1 || $1 > m { m = $1 } END { print m }'; }

echo "graph    $spec"
echo "order    halo-partition --order $order"
"$exe" --input "$spec" --write-metis "$work/graph.metis" --force
echo "machine  $(nproc) cores, $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo), $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)"
echo "runs     best of $repeat, alternating; load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo

: >"$work/gp.wall"; : >"$work/gp.rss"; : >"$work/gp.cpu"
for m in metis scotch pt1 pt2 pt2c0; do : >"$work/$m.wall"; : >"$work/$m.rss"; : >"$work/$m.cpu"; done
mpirun=(mpirun --oversubscribe --bind-to none)
[ "$(id -u)" = 0 ] && mpirun+=(--allow-run-as-root)

# One halo-partition run with method $1: its figures appended to $work/$1.*.
run_halo() {
  /usr/bin/time -v "$exe" --input "$spec" --parts "$parts" --out "$work/out" --force \
    --method "$1" --seed $seed --ufactor $ufactor --order "$order" --json "$work/$1.json" \
    >"$work/$1.log" 2>"$work/$1.time"
  wall_s "$work/$1.time" >>"$work/$1.wall"
  rss_mb "$work/$1.time" >>"$work/$1.rss"
  cpu_s "$work/$1.time" >>"$work/$1.cpu"
}

# One ptscotch run on $1 ranks, named $2, with the flags after: its figures
# appended to $work/$2.*; the peak RSS is the largest rank's (from the
# JSON), the sum goes to $2.sum.
run_ptscotch() {
  local k=$1 t=$2
  shift 2
  /usr/bin/time -v "${mpirun[@]}" -np "$k" "$exe" --input "$spec" --parts "$parts" \
    --out "$work/out" --force --method ptscotch --seed $seed --ufactor $ufactor --order "$order" \
    --json "$work/$t.json" "$@" >"$work/$t.log" 2>"$work/$t.time"
  wall_s "$work/$t.time" >>"$work/$t.wall"
  cpu_s "$work/$t.time" >>"$work/$t.cpu"
  sed -n 's/.*"peak_rss_bytes_max": \([0-9]*\),.*/\1/p' "$work/$t.json" |
    awk '{ printf "%.1f\n", $1 / 1e6 }' >>"$work/$t.rss"
  sed -n 's/.*"peak_rss_bytes_sum": \([0-9]*\),.*/\1/p' "$work/$t.json" |
    awk '{ printf "%.1f\n", $1 / 1e6 }' >>"$work/$t.sum"
}

for i in $(seq "$repeat"); do
  rm -f "$work/graph.metis.part.$parts"
  /usr/bin/time -v gpmetis -ptype=kway -seed=$seed -ufactor=$ufactor -objtype=cut \
    "$work/graph.metis" "$parts" >"$work/gpmetis.log" 2>"$work/gpmetis.time"
  wall_s "$work/gpmetis.time" >>"$work/gp.wall"
  rss_mb "$work/gpmetis.time" >>"$work/gp.rss"
  cpu_s "$work/gpmetis.time" >>"$work/gp.cpu"
  run_halo metis
  run_halo scotch
  run_ptscotch 1 pt1
  run_ptscotch 2 pt2
  run_ptscotch 4 pt4
  run_ptscotch 2 pt2c0 --coarsen-levels 0
  echo "run $i: gpmetis $(tail -1 "$work/gp.wall") s wall $(tail -1 "$work/gp.rss") MB;" \
    "metis $(tail -1 "$work/metis.wall") s wall $(tail -1 "$work/metis.rss") MB;" \
    "scotch $(tail -1 "$work/scotch.wall") s wall $(tail -1 "$work/scotch.rss") MB;" \
    "ptscotch K=1 $(tail -1 "$work/pt1.wall") s $(tail -1 "$work/pt1.rss") MB;" \
    "K=2 $(tail -1 "$work/pt2.wall") s $(tail -1 "$work/pt2.rss") MB a rank;" \
    "K=4 $(tail -1 "$work/pt4.wall") s $(tail -1 "$work/pt4.rss") MB a rank;" \
    "K=2 PT-Scotch alone $(tail -1 "$work/pt2c0.wall") s $(tail -1 "$work/pt2c0.rss") MB a rank"
done

json_int() { sed -n "s/.*\"$2\": \([0-9]*\),.*/\1/p" "$work/$1.json" | head -1; }
gp_t=$(min <"$work/gp.wall"); gp_c=$(min <"$work/gp.cpu"); gp_m=$(max <"$work/gp.rss")
gp_cut=$(sed -n 's/.*Edgecut: \([0-9]*\),.*/\1/p' "$work/gpmetis.log")
h_t=$(min <"$work/metis.wall"); h_c=$(min <"$work/metis.cpu"); h_m=$(max <"$work/metis.rss")
s_t=$(min <"$work/scotch.wall"); s_c=$(min <"$work/scotch.cpu"); s_m=$(max <"$work/scotch.rss")
h_cut=$(json_int metis edge_cut); h_vol=$(json_int metis comm_volume)
s_cut=$(json_int scotch edge_cut); s_vol=$(json_int scotch comm_volume)
p1_t=$(min <"$work/pt1.wall"); p1_c=$(min <"$work/pt1.cpu"); p1_m=$(max <"$work/pt1.rss")
p2_t=$(min <"$work/pt2.wall"); p2_c=$(min <"$work/pt2.cpu"); p2_m=$(max <"$work/pt2.rss")
p2_sum=$(max <"$work/pt2.sum")
p4_t=$(min <"$work/pt4.wall"); p4_c=$(min <"$work/pt4.cpu"); p4_m=$(max <"$work/pt4.rss")
p4_cut=$(json_int pt4 edge_cut); p4_vol=$(json_int pt4 comm_volume)
p0_t=$(min <"$work/pt2c0.wall"); p0_c=$(min <"$work/pt2c0.cpu"); p0_m=$(max <"$work/pt2c0.rss")
p0_cut=$(json_int pt2c0 edge_cut); p0_vol=$(json_int pt2c0 comm_volume)
p1_cut=$(json_int pt1 edge_cut); p1_vol=$(json_int pt1 comm_volume)
p2_cut=$(json_int pt2 edge_cut); p2_vol=$(json_int pt2 comm_volume)
h_phases=$(sed -n 's/.*"seconds": {\(.*\)}.*/\1/p' "$work/metis.json" | tr -d '"')
h_cpu_phases=$(sed -n 's/.*"cpu_seconds": {\(.*\)}.*/\1/p' "$work/metis.json" | tr -d '"')
s_phases=$(sed -n 's/.*"seconds": {\(.*\)}.*/\1/p' "$work/scotch.json" | tr -d '"')

echo
row='%-25s %10s %10s %14s %12s %12s\n'
printf "$row" tool "wall (s)" "cpu (s)" "peak RSS (MB)" "edge cut" "comm volume"
printf "$row" gpmetis "$gp_t" "$gp_c" "$gp_m" "$gp_cut" -
printf "$row" "halo-partition (metis)" "$h_t" "$h_c" "$h_m" "$h_cut" "$h_vol"
printf "$row" "halo-partition (scotch)" "$s_t" "$s_c" "$s_m" "$s_cut" "$s_vol"
printf "$row" "ptscotch K=1" "$p1_t" "$p1_c" "$p1_m" "$p1_cut" "$p1_vol"
printf "$row" "ptscotch K=2 (per rank)" "$p2_t" "$p2_c" "$p2_m" "$p2_cut" "$p2_vol"
printf "$row" "ptscotch K=4 (per rank)" "$p4_t" "$p4_c" "$p4_m" "$p4_cut" "$p4_vol"
printf "$row" "K=2 --coarsen-levels 0" "$p0_t" "$p0_c" "$p0_m" "$p0_cut" "$p0_vol"
echo "ptscotch K=2: peak RSS summed over the ranks $p2_sum MB"
echo "metis phases, last run, wall s:  $h_phases"
echo "metis phases, last run, cpu s:   $h_cpu_phases"
echo "scotch phases, last run, wall s: $s_phases"
awk -v ht="$h_t" -v gt="$gp_t" -v hc="$h_c" -v gc="$gp_c" -v hm="$h_m" -v gm="$gp_m" 'BEGIN {
  printf "ratio: wall time %.2fx (target <= 1.3x), cpu time %.2fx, peak RSS %.2fx (target <= 1.5x)\n",
         ht / gt, hc / gc, hm / gm }'
awk -v st="$s_t" -v ht="$h_t" -v sm="$s_m" -v hm="$h_m" -v sc="$s_cut" -v hc="$h_cut" \
    -v sv="$s_vol" -v hv="$h_vol" 'BEGIN {
  printf "scotch / metis: wall time %.2fx (target <= 2x), peak RSS %.2fx, edge cut %.3fx (target <= 1.3x), comm volume %.3fx\n",
         st / ht, sm / hm, sc / hc, sv / hv }'
awk -v pt="$p2_t" -v ht="$h_t" -v pm="$p2_m" -v hm="$h_m" -v pc="$p2_cut" -v hc="$h_cut" \
    -v pv="$p2_vol" -v hv="$h_vol" 'BEGIN {
  printf "ptscotch K=2 / metis: wall time %.2fx, peak RSS per rank %.2fx (target <= 0.6x), edge cut %.3fx (target <= 1.3x), comm volume %.3fx\n",
         pt / ht, pm / hm, pc / hc, pv / hv }'
awk -v pm="$p4_m" -v hm="$h_m" -v pc="$p4_cut" -v hc="$h_cut" -v pv="$p4_vol" -v hv="$h_vol" 'BEGIN {
  printf "ptscotch K=4 / metis: peak RSS per rank %.2fx, edge cut %.3fx, comm volume %.3fx\n",
         pm / hm, pc / hc, pv / hv }'
awk -v pt="$p0_t" -v ht="$h_t" -v pm="$p0_m" -v hm="$h_m" -v pc="$p0_cut" -v hc="$h_cut" \
    -v pv="$p0_vol" -v hv="$h_vol" 'BEGIN {
  printf "ptscotch K=2 --coarsen-levels 0 / metis: wall time %.2fx, peak RSS per rank %.2fx, edge cut %.3fx, comm volume %.3fx\n",
         pt / ht, pm / hm, pc / hc, pv / hv }'
