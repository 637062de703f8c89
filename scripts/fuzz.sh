#!/usr/bin/env bash
# Builds the libFuzzer harnesses (clang, ASan + UBSan, build-fuzz/) and runs
# each for SECONDS (default 60), one after the other.  Fails on any crash,
# leak, sanitizer report, timeout (10 s per input) or broken oracle, and
# prints the executions each harness reached.
#
#   scripts/fuzz.sh [SECONDS] [HARNESS...]     harnesses: snap mtx ogb spec npy shard shard-bytes
#
# Inputs found on the way stay in build-fuzz/fuzz-work/NAME/corpus; a failing
# input is saved as build-fuzz/fuzz-work/NAME/crash-*, leak-* or timeout-* and
# can be replayed with build-fuzz/tests/fuzz/fuzz-NAME FILE.  Once fixed, copy
# it into tests/fuzz/NAME/ so that test-fuzz-replay keeps it fixed.
# HALO_FUZZ_BUILD names another build folder (default build-fuzz).
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-60}
shift || true
harnesses=("$@")
[ ${#harnesses[@]} -gt 0 ] || harnesses=(snap mtx ogb spec npy shard shard-bytes)
build=${HALO_FUZZ_BUILD:-build-fuzz}

cmake -S . -B "$build" -DCMAKE_C_COMPILER=clang -DHALO_FUZZ=ON -DHALO_WITH_CUDA=OFF \
      -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j 2 --target halo-fuzz >/dev/null

work="$build/fuzz-work"
failed=()
summary=$(printf '%-12s %12s %9s %6s %8s  %s' harness executions exec/s cov corpus result)
for h in "${harnesses[@]}"; do
  dir="$work/$h"
  rm -rf "$dir"
  mkdir -p "$dir/corpus"
  seeds=("tests/fuzz/$h")
  opts=(-max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
        -artifact_prefix="$dir/")
  case $h in
    shard) opts+=(-max_len=1024 -len_control=0) ;;
    shard-bytes) opts+=(-max_len=65536); seeds+=(tests/fuzz/shard-base) ;;
    *) opts+=(-max_len=8192) ;;
  esac
  echo "fuzz: $h for ${seconds} s"
  rc=0
  "$build/tests/fuzz/fuzz-$h" "${opts[@]}" "$dir/corpus" "${seeds[@]}" >"$dir/log.txt" 2>&1 || rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/log.txt" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$dir/log.txt" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$dir/log.txt" | tail -1 | cut -d' ' -f2)
  units=$(find "$dir/corpus" -type f | wc -l)
  artifacts=$(find "$dir" -maxdepth 1 -name 'crash-*' -o -maxdepth 1 -name 'leak-*' -o -maxdepth 1 -name 'timeout-*' \
              -o -maxdepth 1 -name 'oom-*' | head -3)
  result=ok
  if [ "$rc" != 0 ] || [ -n "$artifacts" ]; then
    result="FAILED (exit $rc) ${artifacts}"
    failed+=("$h")
    echo "---- $h: last lines of $dir/log.txt"
    tail -n 40 "$dir/log.txt"
  fi
  summary+=$'\n'$(printf '%-12s %12s %9s %6s %8s  %s' "$h" "${execs:-?}" "${rate:-?}" "${cov:-?}" "$units" "$result")
done
echo
echo "$summary"
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: FAILED: ${failed[*]}"
  exit 1
fi
echo "fuzz: all ${#harnesses[@]} harnesses ran ${seconds} s without a finding"
