#!/usr/bin/env bash
# check-bundle.sh: runs the prebuilt GPU bundle the way a GPU machine without
# halo's Debian packages would, on this machine, before it is carried there.
#
#   tests/gpu/check-bundle.sh [BUNDLE]     (default build-gpu-bundle/bundle.tar.gz)
#
# It unpacks the bundle and, in a private mount namespace (unshare -m; needs
# root), hides this machine's Open MPI, PMIx, HDF5, METIS, OpenBLAS, hwloc,
# libevent and Criterion, so that only the bundle's copies can be loaded.
# Then, through the bundle's own wrappers:
#   - every CUDA test program starts and reports "no CUDA device" (exit 77),
#     or passes where there is a GPU;
#   - halo-partition writes Cora in 1 and 2 parts;
#   - halo-train trains Cora alone (an MPI singleton) and under the bundle's
#     mpirun -np 2, on the CPU, with halo bytes equal to the prediction and
#     nothing on stderr: no missing plugin or help text;
#   - the same over TCP on loopback, with no other interface (run-device.sh's
#     fallback in a sandbox without a network), and a
#     run with OMPI_MCA_btl=self fails: the caller's setting reaches the ranks.
# Prints one line per check and exits non-zero when any failed.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
bundle=$(readlink -f "${1:-build-gpu-bundle/bundle.tar.gz}")
arch=$(gcc -print-multiarch)

if [ "${HALO_CHECK_BUNDLE_INSIDE:-}" != 1 ]; then
  [ -f "$bundle" ] || { echo "check-bundle: error: $bundle: no such bundle (run tests/gpu/make-bundle.sh)" >&2; exit 2; }
  if [ "$(id -u)" != 0 ] || ! unshare -m true 2>/dev/null; then
    echo "check-bundle: skipped: needs root and unshare -m to hide this machine's libraries"
    exit 77
  fi
  exec env HALO_CHECK_BUNDLE_INSIDE=1 unshare -m bash "$0" "$bundle"
fi

# ---- inside the namespace: hide, unpack, run ----------------------------------------
lib=/usr/lib/$arch
for d in "$lib/openmpi" "$lib/pmix2" /usr/share/openmpi /etc/openmpi; do
  [ -d "$d" ] && mount -t tmpfs none "$d"
done
for f in /usr/bin/orted /usr/bin/orterun "$lib"/lib{mpi,open-rte,open-pal,pmix,hdf5_serial,metis,openblas,criterion,hwloc,event_core,event_pthreads}*.so*; do
  real=$(readlink -f "$f")
  [ -f "$real" ] && mount --bind /dev/null "$real"
done
if command -v mpirun >/dev/null && mpirun --version >/dev/null 2>&1; then
  echo "check-bundle: error: this machine's mpirun still runs; the hiding failed"
  exit 1
fi

root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
tar -xzf "$bundle" -C "$root"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
failed=0
check() { # check NAME OK DETAIL
  printf 'check-bundle: %-28s %s  %s\n' "$1" "$([ "$2" = 1 ] && echo ok || echo FAIL)" "$3"
  [ "$2" = 1 ] || failed=1
}
echo "check-bundle: $(cat "$root/BUNDLE")"

for t in test-cuda-kernels test-cuda-spmm test-cuda-backend; do
  timeout 120 "$root/tests/gpu/$t" >"$root/$t.log" 2>&1
  rc=$?
  check "$t" "$([ "$rc" = 0 ] || [ "$rc" = 77 ] && echo 1)" \
    "exit $rc: $(grep -m1 -E 'skipped|Tested|error' "$root/$t.log" | cut -c1-70)"
done

for p in 1 2; do
  timeout 60 "$root/bin/halo-partition" --input datasets/cora --parts "$p" \
    --out "$root/cora$p" >"$root/partition$p.log" 2>&1
  rc=$?
  check "halo-partition --parts $p" "$([ "$rc" = 0 ] && echo 1)" "exit $rc"
done

# halo-train alone, then under mpirun; stderr must stay empty.
timeout 60 "$root/bin/halo-train" "$root/cora1" --epochs 5 >"$root/train1.out" 2>"$root/train1.err"
rc=$?
check "halo-train (singleton)" "$([ "$rc" = 0 ] && [ ! -s "$root/train1.err" ] && echo 1)" \
  "exit $rc$(head -c 200 "$root/train1.err" | tr '\n' ' ')"
timeout 120 "$root/mpi/bin/mpirun" -np 2 "$root/bin/halo-train" "$root/cora2" --epochs 5 \
  >"$root/train2.out" 2>"$root/train2.err"
rc=$?
check "mpirun -np 2 halo-train" \
  "$([ "$rc" = 0 ] && [ ! -s "$root/train2.err" ] && grep -q 'equal to the prediction' "$root/train2.out" && echo 1)" \
  "exit $rc: $(grep -m1 -o 'halo [0-9.]* MB in all ([^)]*)' "$root/train2.out")$(head -c 200 "$root/train2.err" | tr '\n' ' ')"

# run-device.sh's fallback when shared memory fails: TCP alone must work, on
# loopback, in a network namespace with no other interface (a sandbox
# without a network; TCP without btl_tcp_if_include=lo fails there), and the
# caller's OMPI_MCA_btl must reach the ranks through the wrappers (with only
# "self" two ranks cannot talk, so that run has to fail).
netns=()
command -v ip >/dev/null && unshare -n true 2>/dev/null && netns=(unshare -n sh -c 'ip link set lo up && exec "$@"' sh)
OMPI_MCA_btl=self,tcp OMPI_MCA_btl_tcp_if_include=lo timeout 120 ${netns[@]+"${netns[@]}"} \
  "$root/mpi/bin/mpirun" -np 2 "$root/bin/halo-train" "$root/cora2" --epochs 5 \
  >"$root/train-tcp.out" 2>"$root/train-tcp.err"
rc=$?
check "mpirun -np 2, tcp over lo${netns[*]:+ alone}" \
  "$([ "$rc" = 0 ] && [ ! -s "$root/train-tcp.err" ] && grep -q 'equal to the prediction' "$root/train-tcp.out" && echo 1)" \
  "exit $rc$(head -c 200 "$root/train-tcp.err" | tr '\n' ' ')"
OMPI_MCA_btl=self timeout 120 "$root/mpi/bin/mpirun" -np 2 "$root/bin/halo-train" "$root/cora2" \
  --epochs 5 >"$root/train-self.out" 2>&1
rc=$?
check "mpirun -np 2, btl self only" "$([ "$rc" != 0 ] && [ "$rc" != 124 ] && echo 1)" \
  "exit $rc (must fail: the override reaches the ranks)"
exit "$failed"
