# base-build.sh: sourced by the bench scripts that time this build against
# an older commit's.  base_build BASE DIR LOG builds commit BASE's
# halo-train (CPU only, no tests) in a git worktree at DIR, into
# DIR/build-cpu, unless DIR/build-cpu/bin/halo-train is there already;
# the build's output goes to LOG.
base_build() {
  local base=$1 dir=$2 log=$3
  [ -x "$dir/build-cpu/bin/halo-train" ] && return 0
  echo "# building $base in $dir (CPU only, halo-train alone)"
  [ -d "$dir" ] || git worktree add --detach "$dir" "$base" >/dev/null
  cmake -S "$dir" -B "$dir/build-cpu" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DHALO_WITH_CUDA=OFF -DHALO_TESTS=OFF >/dev/null
  cmake --build "$dir/build-cpu" -j2 --target halo-train >"$log"
}
