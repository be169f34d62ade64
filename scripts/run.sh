#!/usr/bin/env bash
# The main job: set everything up, start a virtual Unimem cluster and show it working.
#   scripts/run.sh [-n NODES] [--keep]    --keep leaves the cluster running (scripts/cluster down)
source "$(dirname "$0")/lib/common.sh"
nodes=3 keep=0
while [ $# -gt 0 ]; do
  case "$1" in
    -n|--nodes) nodes=$2; shift 2;;
    --keep) keep=1; shift;;
    -h|--help) sed -n '2,3s/^# \{0,1\}//p' "$0"; exit 0;;
    *) die "unknown option $1";;
  esac
done
[ "$nodes" -ge 3 ] || die "the demo needs at least 3 nodes"
cluster=$UNIMEM_ROOT/scripts/cluster
"$UNIMEM_ROOT/scripts/setup.sh"
"$cluster" up -n "$nodes"
[ "$keep" = 1 ] || trap '"$cluster" down' EXIT
for n in $(seq 0 $((nodes - 1))); do
  "$cluster" exec "$n" -- insmod /opt/unimem/modules/unimem_eusrvmem.ko
done
echo "== node 0's view of the global address space"
"$cluster" exec 0 -- unimem-gas info
echo "== node 0 writes 16 MiB into node 2's memory; node 2 reads it in its own partition"
"$cluster" exec 0 -- unimem-gas write --node 2 --len $((16 << 20)) --seed 2026
"$cluster" exec 2 -- unimem-gas verify --node 2 --len $((16 << 20)) --seed 2026
echo "== node 1 rings node 0's doorbell"
"$cluster" exec 0 -- unimem-gas count --vector 0
"$cluster" exec 1 -- unimem-gas ring --node 0 --vector 0
sleep 1
"$cluster" exec 0 -- unimem-gas count --vector 0
[ "$keep" = 0 ] || log "cluster left running: scripts/cluster exec N -- CMD, scripts/cluster down"
