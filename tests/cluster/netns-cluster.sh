#!/bin/sh
# A cluster of two "hosts" on this machine, for test-cluster: two network
# namespaces joined by a veth pair on a /24 of the test's own, each with its
# loopback up.  Nothing outside the two namespaces is touched.
#
#   netns-cluster.sh up NAME OCTET    namespaces NAME-a (10.213.OCTET.1) and
#                                     NAME-b (10.213.OCTET.2)
#   netns-cluster.sh down NAME        kills what still runs in them, removes them
#
# `up` exits 77, with the reason on stderr, where namespaces cannot be made
# here (no iproute2, not root, no CAP_SYS_ADMIN in a container); it leaves
# nothing behind when it fails.
set -u
cmd=${1:-}
name=${2:-}
[ -n "$name" ] || { echo "usage: netns-cluster.sh up NAME OCTET | down NAME" >&2; exit 2; }

down() {
  for side in a b; do
    ns=$name-$side
    ip netns list 2>/dev/null | grep -q "^$ns\b" || continue
    pids=$(ip netns pids "$ns" 2>/dev/null)
    [ -n "$pids" ] && kill -9 $pids 2>/dev/null
    ip netns del "$ns" 2>/dev/null
  done
  return 0
}

case $cmd in
  up)
    octet=${3:-}
    command -v ip >/dev/null || { echo "no 'ip' command (iproute2)" >&2; exit 77; }
    command -v unshare >/dev/null || { echo "no 'unshare' command (util-linux)" >&2; exit 77; }
    if ! err=$(ip netns add "$name-a" 2>&1); then
      echo "cannot create a network namespace: $err" >&2
      exit 77
    fi
    if ! err=$( (ip netns add "$name-b" &&
      ip link add "$name-va" netns "$name-a" type veth peer name "$name-vb" netns "$name-b" &&
      ip -n "$name-a" addr add "10.213.$octet.1/24" dev "$name-va" &&
      ip -n "$name-b" addr add "10.213.$octet.2/24" dev "$name-vb" &&
      ip -n "$name-a" link set "$name-va" up && ip -n "$name-b" link set "$name-vb" up &&
      ip -n "$name-a" link set lo up && ip -n "$name-b" link set lo up &&
      ip netns exec "$name-a" unshare --uts true) 2>&1); then
      down
      echo "cannot set up the namespace pair: $err" >&2
      exit 77
    fi
    ;;
  down) down ;;
  *) echo "netns-cluster.sh: unknown command '$cmd'" >&2; exit 2 ;;
esac
