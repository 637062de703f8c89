#!/usr/bin/env bash
# Installs dependencies, builds halo and runs every test.
#   scripts/test.sh            Release-with-debug-info build in build/
#   HALO_SANITIZE=1 scripts/test.sh   ASan+UBSan build in build-asan/
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh

build=build
flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo)
if [ "${HALO_SANITIZE:-0}" = 1 ]; then
  build=build-asan
  flags=(-DCMAKE_BUILD_TYPE=Debug -DHALO_SANITIZE=ON)
fi

jobs=$(nproc)
cmake -S . -B "$build" "${flags[@]}"
cmake --build "$build" -j "$jobs"
# MPI integration tests start their own ranks, so tests run one at a time.
ctest --test-dir "$build" --output-on-failure --timeout 900
