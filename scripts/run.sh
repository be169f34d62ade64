#!/usr/bin/env bash
# The main job: set everything up, start a virtual Unimem cluster and swap to remote memory.
#   scripts/run.sh [--keep] [--transfermode 0|1] [--numa | --tiering]
# Node 0 (96 MiB of RAM) borrows memory from the kram-daemons of nodes 1 and 2 with the seed's
# `insmod unimem_kram.ko ninstances=2 size=32,64 transfermode=1`, swaps on /dev/kram0 and
# /dev/kram1, runs a program half again as large as its RAM that verifies every byte, shows
# where the pages went, then swaps off, unloads and shows the lenders' chunks free again.
# --keep leaves the cluster running (scripts/cluster exec N -- CMD; scripts/cluster down).
# --numa shows the other use of lent memory instead: a CPU-less NUMA node (docs/NUMA.md).
# --tiering makes that node a lower memory tier: an unmodified program 1.5x node 0's RAM runs
# with no swap, its cold pages demoted to lent memory and hot ones promoted (docs/NUMA.md).
source "$(dirname "$0")/lib/common.sh"
keep=0 mode=1 numa=0 tiering=0
while [ $# -gt 0 ]; do
  case "$1" in
    --keep) keep=1; shift;;
    --transfermode) mode=$2; shift 2;;
    --numa) numa=1; shift;;
    --tiering) tiering=1; shift;;
    -h|--help) sed -n '2,11s/^# \{0,1\}//p' "$0"; exit 0;;
    *) die "unknown option $1";;
  esac
done
cluster=$UNIMEM_ROOT/scripts/cluster
on() { local n=$1; shift; "$cluster" exec "$n" --timeout 900 -- "$@"; }
say() { printf '\n== %s\n' "$*"; }

"$UNIMEM_ROOT/scripts/setup.sh"
"$cluster" up -n 3 --mem-of 0=96M
[ "$keep" = 1 ] || trap '"$cluster" down' EXIT
for n in 0 1 2; do
  on "$n" "insmod /opt/unimem/modules/unimem_eusrvmem.ko && insmod /opt/unimem/modules/unimem_mailbox.ko"
done
numa_demo() {
  say "nodes 1 and 2 start their lenders"
  for n in 1 2; do on "$n" "kram-daemon >/dev/null 2>&1 & sleep 1; kram-daemon --status | sed -n 2p"; done
  say "node 0: insmod unimem_numa.ko; one 128 MiB block from each lender becomes NUMA node 1"
  on 0 "insmod /opt/unimem/modules/unimem_numa.ko && echo add 1 > /proc/unimem_numa &&
        echo add 2 > /proc/unimem_numa && cat /proc/unimem_numa && numactl --hardware"
  say "node 0: numactl --membind=1 unimem-memtest --mib 96 (more than node 0's RAM, no swap)"
  on 0 "numactl --membind=1 unimem-memtest --mib 96 --seed 2026"
  say "node 0: the seed's libnuma calls on the remote node"
  on 0 "unimem-numatest --remote 1"
  say "node 0: service level 1:3 (one remote page per three local ones)"
  on 0 "unimem-sl run --remote 1 --local 3 -- unimem-memtest --mib 32 --hold-until /tmp/go > /tmp/sl.log &
        for i in \$(seq 100); do grep -q holding /tmp/sl.log && break; sleep 0.1; done
        unimem-sl show; touch /tmp/go; sleep 1; cat /tmp/sl.log"
  say "node 0: remove and unload; the lenders get every chunk back, wiped"
  on 0 "echo remove all > /proc/unimem_numa && rmmod unimem_numa && dmesg | grep 'returned to' | tail -2"
  for n in 1 2; do on "$n" "kram-daemon --status | sed -n 2p"; done
}
tiering_demo() {
  say "nodes 1 and 2 start their lenders"
  for n in 1 2; do on "$n" "kram-daemon >/dev/null 2>&1 & sleep 1; kram-daemon --status | sed -n 2p"; done
  say "node 0: unimem_numa gives NUMA node 1 a memory type slower than DRAM; 128 MiB from node 1"
  on 0 "insmod /opt/unimem/modules/unimem_numa.ko && echo add 1 > /proc/unimem_numa &&
        grep '^memory_type' /proc/unimem_numa; for t in /sys/devices/virtual/memory_tiering/memory_tier*; do
        echo \"\${t##*/}: nodes \$(cat \$t/nodelist)\"; done; dmesg | grep 'Demotion targets for Node 0' | tail -1"
  say "node 0: tiering on (demotion, NUMA balancing in memory-tiering mode), no swap device"
  on 0 "swapoff -a 2>/dev/null; echo true > /sys/kernel/mm/numa/demotion_enabled && echo 2 > /proc/sys/kernel/numa_balancing"
  mib=$(on 0 "awk '/MemTotal/ {print int(\$4 * 3 / 2 / 1024)}' /sys/devices/system/node/node0/meminfo")
  say "node 0: an unmodified program using $mib MiB (1.5x its RAM), the last 16 MiB hot for 30 s"
  on 0 "grep -E '^pg(demote|promote)_(kswapd|success)' /proc/vmstat > /tmp/before
        unimem-memtest --mib $mib --hot-mib 16 --hot-seconds 30 --seed 2026
        grep -E '^pg(demote|promote)_(kswapd|success)' /proc/vmstat | while read -r k v; do
          echo \"\$k: +\$(( v - \$(awk -v k=\$k '\$1 == k {print \$2}' /tmp/before) ))\"; done"
  say "node 0: tiering off, remove and unload; node 1 gets every chunk back, wiped"
  on 0 "echo 0 > /proc/sys/kernel/numa_balancing; echo false > /sys/kernel/mm/numa/demotion_enabled
        echo remove all > /proc/unimem_numa && rmmod unimem_numa && dmesg | grep 'returned to' | tail -1"
}
if [ "$tiering" = 1 ]; then
  tiering_demo
  [ "$keep" = 0 ] || log "cluster left running: scripts/cluster exec N -- CMD, scripts/cluster down"
  exit 0
fi
if [ "$numa" = 1 ]; then
  numa_demo
  [ "$keep" = 0 ] || log "cluster left running: scripts/cluster exec N -- CMD, scripts/cluster down"
  exit 0
fi

say "nodes 1 and 2 start their lenders (128 chunks of 1 MiB each)"
for n in 1 2; do on "$n" "kram-daemon --chunks 128 >/dev/null 2>&1 & sleep 1; kram-daemon --status | sed -n 2p"; done
say "node 0: insmod unimem_kram.ko ninstances=2 size=32,64 transfermode=$mode"
on 0 "insmod /opt/unimem/modules/unimem_kram.ko ninstances=2 size=32,64 transfermode=$mode
      for i in \$(seq 75); do test -b /dev/kram0 && test -b /dev/kram1 && break; sleep 0.2; done
      dmesg | grep unimem_kram | tail -4; lsblk /dev/kram0 /dev/kram1"
say "node 0: swap on both devices"
on 0 "mkswap /dev/kram0 >/dev/null && mkswap /dev/kram1 >/dev/null && swapon /dev/kram0 && swapon /dev/kram1
      echo 8192 > /proc/sys/vm/min_free_kbytes; free -m"
mib=$(on 0 "awk '/^MemTotal/ {print int(\$2 * 3 / 2 / 1024)}' /proc/meminfo")
say "node 0: a program using $mib MiB (1.5x its RAM) writes and verifies every byte"
on 0 "before=\$(awk '/pswpout/ {print \$2}' /proc/vmstat)
      unimem-memtest --mib $mib --seed 2026
      echo \"pages swapped out to remote memory: \$(( \$(awk '/pswpout/ {print \$2}' /proc/vmstat) - before ))\""
say "where the pages went"
on 0 "cat /proc/swaps"
for n in 1 2; do on "$n" "kram-daemon --status | sed -n '1,4p'"; done
say "node 0: swapoff, rmmod; the lenders get every chunk back"
on 0 "swapoff /dev/kram0 && swapoff /dev/kram1 && rmmod unimem_kram && dmesg | grep 'returned chunks' | tail -2"
sleep 1
for n in 1 2; do on "$n" "kram-daemon --status | sed -n 2p"; done
[ "$keep" = 0 ] || log "cluster left running: scripts/cluster exec N -- CMD, scripts/cluster down"
