#!/usr/bin/env bash
# make-bundle.sh: prebuilt GPU test binaries for a GPU machine that cannot
# install halo's Debian dependencies (no package mirror there).
#
#   tests/gpu/make-bundle.sh      (on a Debian 12 machine with nvcc and the deps)
#
# Builds build-gpu-bundle/build with CUDA and packs, into
# build-gpu-bundle/bundle.tar.gz, the CUDA unit tests and bench/spmm-cuda
# with the shared libraries they need (ldd), except glibc's, libstdc++ and
# the big CUDA libraries (cuBLAS, cuSPARSE), which the GPU machine has; the
# small CUDA runtime (13.0, driver >= 580) goes in.  tests/gpu/run-device.sh unpacks it when it
# cannot build natively; the device tool carries it with
# carry: ["build-gpu-bundle"] (build*/ is git-ignored, so it must be named).
set -euo pipefail
cd "$(dirname "$0")/../.."
dir=build-gpu-bundle
build=$dir/build
stage=$dir/stage
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DHALO_WITH_CUDA=ON >/dev/null
cmake --build "$build" -j "$(nproc)" --target test-cuda-kernels test-cuda-spmm spmm-cuda
rm -rf "$stage" && mkdir -p "$stage/tests/gpu" "$stage/bench" "$stage/lib"
cp "$build"/tests/gpu/test-cuda-kernels "$build"/tests/gpu/test-cuda-spmm "$stage/tests/gpu/"
cp "$build"/bench/spmm-cuda "$stage/bench/"
for bin in "$stage"/tests/gpu/* "$stage"/bench/*; do
  ldd "$bin" | awk '$3 ~ /^\// {print $3}'
done | sort -u | while read -r lib; do
  case $(basename "$lib") in
    libc.so* | libm.so* | libdl.so* | librt.so* | libpthread.so* | libresolv.so* | ld-linux*) ;;
    libcuda.so* | libcublas* | libcusparse* | libnvJitLink*) ;; # big; the GPU machine has them
    libstdc++* | libgcc_s*) ;; # newer on the GPU machine, and backward compatible
    *) cp -L "$lib" "$stage/lib/" ;;
  esac
done
echo "$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- kernels spmm tests/gpu bench || echo +dirty), $(. /etc/os-release && echo "$PRETTY_NAME"), $(nvcc --version | grep -o 'release [0-9.]*')" >"$stage/BUNDLE"
tar -czf "$dir/bundle.tar.gz" -C "$stage" .
echo "make-bundle: $dir/bundle.tar.gz, $(du -h "$dir/bundle.tar.gz" | cut -f1) ($(cat "$stage/BUNDLE"))"
