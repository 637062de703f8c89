#!/usr/bin/env bash
# Installs halo's build and test dependencies from Debian 12 packages.
# Asks for nothing when they are already present; runs `apt-get update`
# only when something is missing.
set -euo pipefail

packages=(
  build-essential cmake pkg-config git
  libopenmpi-dev openmpi-bin
  libhdf5-dev hdf5-tools
  libmetis-dev metis
  libscotch-dev libptscotch-dev
  libcriterion-dev
  zlib1g-dev libbz2-dev liblzma-dev
  libopenblas-dev
  # numpy and h5py: the npy/npz tests, scripts/halo-import and scripts/halo-to-torch
  python3-numpy python3-h5py
)
# Wanted, not needed: without them the build and the other tests still run.
# python3-matplotlib: scripts/halo-plot, whose test (test-plot) is skipped
# without it. iproute2: `ip netns` for test-cluster's two hosts, skipped
# without it.
optional=(
  python3-matplotlib
  iproute2
)

absent() {
  ! dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"
}

missing=()
for p in "${packages[@]}"; do
  if absent "$p"; then missing+=("$p"); fi
done
missing_optional=()
for p in "${optional[@]}"; do
  if absent "$p"; then missing_optional+=("$p"); fi
done

if [ "${#missing[@]}" -eq 0 ] && [ "${#missing_optional[@]}" -eq 0 ]; then
  echo "install-deps: all $((${#packages[@]} + ${#optional[@]})) packages present"
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
if [ "${#missing[@]}" -ne 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
  updated=1
fi
if [ "${#missing_optional[@]}" -ne 0 ]; then
  # A machine without them, or without a package mirror, still builds.
  echo "install-deps: installing the optional ${missing_optional[*]}"
  if { [ "${updated:-0}" = 1 ] || $sudo apt-get update -qq; } &&
     $sudo apt-get install -y -qq --no-install-recommends "${missing_optional[@]}"; then
    :
  else
    echo "install-deps: warning: could not install ${missing_optional[*]};" \
         "test-plot will be skipped (pip install matplotlib gives scripts/halo-plot its plots)"
  fi
fi
