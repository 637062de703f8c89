#!/usr/bin/env bash
# make-bundle.sh: prebuilt GPU binaries, with Open MPI's run-time, for a GPU
# machine that cannot install halo's Debian dependencies (no package mirror
# there).
#
#   tests/gpu/make-bundle.sh      (on a Debian 12 machine with nvcc and the deps)
#
# Builds build-gpu-bundle/build with CUDA and packs, into
# build-gpu-bundle/bundle.tar.gz, in the build tree's layout:
#   - the CUDA unit tests, bench/spmm-cuda, halo-train and halo-partition;
#   - mpi/: a relocatable copy of Debian's Open MPI (mpirun, orted, the
#     plugins, the help texts, PMIx), found through OPAL_PREFIX and PMIx's
#     component path.  Only the shared-memory and TCP transports go in:
#     the InfiniBand, OFI, UCX and PSM plugins would pull in their stacks,
#     and OpenSHMEM and Java are not used;
#   - lib/: the shared libraries all of these need (ldd), except glibc's,
#     libstdc++ and the big CUDA libraries (cuBLAS, cuSPARSE), which the GPU
#     machine has; the small CUDA runtime (13.0, driver >= 580) goes in.
# `HALO_DEVICE_BUILD=bundle tests/gpu/run-device.sh` unpacks and runs it on
# the GPU machine; the device tool carries it with
# carry: ["build-gpu-bundle/bundle.tar.gz"] (build*/ is git-ignored, so it
# must be named; the folder itself is far over the tool's 64 MiB).  Build
# it from a clean, committed tree: BUNDLE records the commit, "+dirty" when
# the tree was not.  tests/gpu/check-bundle.sh, run last, runs it with this
# machine's Open MPI and libraries hidden.
set -euo pipefail
cd "$(dirname "$0")/../.."
dir="build-gpu-bundle"
build=$dir/build
stage=$dir/stage
arch=$(gcc -print-multiarch)
programs=(tests/gpu/test-cuda-kernels tests/gpu/test-cuda-spmm tests/gpu/test-cuda-backend
  bench/spmm-cuda bin/halo-train bin/halo-partition)
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DHALO_WITH_CUDA=ON >/dev/null
cmake --build "$build" -j "$(nproc)" --target "${programs[@]##*/}"
rm -rf "$stage" && mkdir -p "$stage/lib" "$stage/libexec"
for p in "${programs[@]}"; do
  cp "$build/$p" "$stage/libexec/"
done

# Open MPI, laid out as under /usr so that OPAL_PREFIX=<stage>/mpi finds it all.
mpi=$stage/mpi
ompi=/usr/lib/$arch/openmpi/lib
mkdir -p "$mpi/bin" "$mpi/lib/$arch/openmpi" "$mpi/lib/$arch/pmix2" "$mpi/share"
cp -L /usr/bin/orterun /usr/bin/orted "$mpi/bin/"
ln -s orterun "$mpi/bin/mpirun"
cp -a "$ompi" "$mpi/lib/$arch/openmpi/"
cp -a /usr/share/openmpi "$mpi/share/"
cp -a "/usr/lib/$arch/pmix2/lib" "/usr/lib/$arch/pmix2/share" "$mpi/lib/$arch/pmix2/"
rm -rf "$mpi/lib/$arch/openmpi/lib/pkgconfig" "$mpi/lib/$arch/openmpi/lib/"*java* \
  "$mpi/lib/$arch/pmix2/lib/"*.a
(cd "$mpi/lib/$arch/openmpi/lib/openmpi3" &&
  rm -f ./*ucx* ./*ofi* ./*psm* ./*openib* ./*verbs* ./*portals* ./*java* \
    mca_spml_* mca_sshmem_* mca_atomic_* mca_memheap_* mca_scoll_*)
# Debian's libmpi lives in /usr/lib/$arch, linked from $ompi; it goes to lib/.
find "$mpi" -xtype l -delete

# Each program, and mpirun, is reached through a wrapper at its build-tree
# path that sets the bundle's environment for it alone: its libraries must
# not replace the GPU machine's under python3 or nvidia-smi.
cat >"$stage/bundle-env.sh" <<'ENV'
# Sourced by the bundle's wrappers with $root set to the unpacked bundle.
# HALO_GPU_LIBRARY_PATH (run-device.sh sets it) adds the GPU machine's CUDA
# libraries after the bundle's own.
export LD_LIBRARY_PATH="$root/lib:${HALO_GPU_LIBRARY_PATH:-}:${LD_LIBRARY_PATH:-}"
export OPAL_PREFIX="$root/mpi" PMIX_MCA_mca_base_component_path="$root/mpi/lib/ARCH/pmix2/lib/pmix"
export PATH="$root/mpi/bin:$PATH"
# Shared memory without cross-memory attach, which a sandboxed kernel
# (gVisor) may refuse; TCP between machines.  The transports a caller has
# set win: run-device.sh falls back to OMPI_MCA_btl=self,tcp over loopback
# when shared memory fails.  The messaging layer stays ob1, whose transports
# these are.
export OMPI_MCA_pml=ob1 OMPI_MCA_btl=${OMPI_MCA_btl:-self,vader,tcp}
export OMPI_MCA_btl_vader_single_copy_mechanism=${OMPI_MCA_btl_vader_single_copy_mechanism:-none}
ENV
sed -i "s|ARCH|$arch|" "$stage/bundle-env.sh"
wrap() { # wrap PATH-IN-STAGE REAL-PROGRAM-RELATIVE-TO-ROOT
  local up
  up=$(dirname "$1" | sed 's|[^/]*|..|g')
  mkdir -p "$stage/$(dirname "$1")"
  # shellcheck disable=SC2016 # the expansions are the wrapper's own
  printf '#!/bin/sh\nroot=$(cd "$(dirname "$0")/%s" && pwd)\n. "$root/bundle-env.sh"\nexec "$root/%s" "$@"\n' \
    "$up" "$2" >"$stage/$1"
  chmod +x "$stage/$1"
}
for p in "${programs[@]}"; do wrap "$p" "libexec/${p##*/}"; done
rm "$mpi/bin/mpirun" && wrap mpi/bin/mpirun mpi/bin/orterun

# Every shared library the programs, Open MPI and its plugins load.
deps=$(find "$stage/libexec" "$mpi" -type f \( -perm -u+x -o -name '*.so*' \) ! -name mpirun -print0 |
  xargs -0 ldd)
# A library this machine lacks would be missing there too (libcuda is the driver's).
if notfound=$(grep 'not found' <<<"$deps" | grep -v 'libcuda\.so' | sort -u) && [ -n "$notfound" ]; then
  echo "make-bundle: error: libraries not found here: $notfound" >&2
  exit 1
fi
awk '$3 ~ /^\// {print $3}' <<<"$deps" | sort -u | while read -r lib; do
  case $(basename "$lib") in
    libc.so* | libm.so* | libdl.so* | librt.so* | libpthread.so* | libresolv.so* | ld-linux*) ;;
    libcuda.so* | libcublas* | libcusparse* | libnvJitLink*) ;; # big; the GPU machine has them
    libstdc++* | libgcc_s*) ;; # newer on the GPU machine, and backward compatible
    *) cp -L "$lib" "$stage/lib/" ;;
  esac
done
# The newest glibc symbol version any of it needs: run-device.sh compares it
# with the GPU machine's before it runs anything.
glibc=$(find "$stage/libexec" "$stage/lib" "$mpi" -type f \( -perm -u+x -o -name '*.so*' \) ! -name mpirun \
  -print0 | xargs -0 objdump -T | grep -o 'GLIBC_[0-9][0-9.]*' | sort -uV | tail -1)
echo "${glibc#GLIBC_}" >"$stage/GLIBC"
echo "$(git rev-parse --short HEAD)$([ -z "$(git status --porcelain)" ] || echo +dirty), $(. /etc/os-release && echo "$PRETTY_NAME"), $(nvcc --version | grep -o 'release [0-9.]*'), $(orterun --version | head -1), glibc >= ${glibc#GLIBC_}" >"$stage/BUNDLE"
tar -czf "$dir/bundle.tar.gz" -C "$stage" .
echo "make-bundle: $dir/bundle.tar.gz, $(du -h "$dir/bundle.tar.gz" | cut -f1) ($(cat "$stage/BUNDLE"))"
# The same programs with this machine's Open MPI and libraries hidden.
bash tests/gpu/check-bundle.sh "$dir/bundle.tar.gz" || [ $? = 77 ]
