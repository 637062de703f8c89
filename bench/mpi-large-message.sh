#!/usr/bin/env bash
# Tries this machine's MPI with messages past 2 GB and 4 GB, as the
# distributed partitioner's routing sends them (bench/mpi-large-message.c),
# over shared memory (vader) and TCP: the wrong items (0 expected) and the
# rate of each.  Needs about 4 x GiB of memory per rank.
#
#   bench/mpi-large-message.sh [GiB ...]      (default: 2.5 4.2)
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d /tmp/halo-mpi-large.XXXXXX)
trap 'rm -rf "$work"' EXIT
mpicc -O2 -Wall -Wextra -Werror -o "$work/mpi-large-message" bench/mpi-large-message.c
echo "$(ompi_info --version 2>/dev/null | head -1), $(nproc) cores, $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo)"
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(2.5 4.2)
for gib in "${sizes[@]}"; do
  for btl in self,vader self,tcp; do
    printf '%-11s ' "$btl:"
    mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2 --mca btl "$btl" \
      "$work/mpi-large-message" "$gib"
  done
done
