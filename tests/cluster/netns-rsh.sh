#!/bin/sh
# Open MPI's plm_rsh_agent for the namespace cluster of test-cluster: where
# mpirun would run `ssh HOST COMMAND`, this runs COMMAND in HOST's network
# namespace, under a UTS namespace of its own that carries HOST's name.
# HALO_NETNS_HOSTS maps each host (an address of the hostfile) to its
# namespace and name: "ADDR=NS=NAME ADDR=NS=NAME". The command runs with a
# fresh environment, as under ssh.
set -eu
while [ $# -gt 0 ] && [ "${1#-}" != "$1" ]; do shift; done # ssh options, if any
host=$1
shift
for entry in ${HALO_NETNS_HOSTS:-}; do
  addr=${entry%%=*}
  rest=${entry#*=}
  if [ "$addr" = "$host" ]; then
    # As ssh would: a fresh environment (mpirun's reaches the remote ranks
    # only through its -x flags), the command line read by a shell.
    exec env -i PATH="$PATH" HOME="${HOME:-/root}" ip netns exec "${rest%%=*}" \
      unshare --uts sh -c 'hostname "$0" && eval "$1"' "${rest#*=}" "$*"
  fi
done
echo "netns-rsh.sh: no namespace for host '$host' in HALO_NETNS_HOSTS" >&2
exit 255
