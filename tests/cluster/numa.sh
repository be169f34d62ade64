#!/usr/bin/env bash
# NUMA acceptance (issue 5): memory lent by nodes 1 and 2 (through their kram-daemons) becomes
# node 0's CPU-less NUMA node 1. numactl --hardware lists it with its distance; --membind puts a
# program's pages there (numa_maps); the seed's Table 2 libnuma calls work on it and keep data;
# the weighted-interleave service level gives the ratio asked for; removal migrates pages back
# (or refuses when local memory cannot take them); unloading returns every chunk to the lenders.
# Node 0 frozen for longer than a lease (issue 29): its lenders hold the range (the fabric shows
# node 0 connected), its program's bytes verify after the thaw, nothing is lent meanwhile. A
# lender whose daemon stops answering: node 0 takes that range offline before its lease lapses.
# Expects node 0 to have little RAM (scripts/test.sh starts it with --mem-of 0=96M).
source "$(dirname "$0")/lib.sh"
share_bins unimem-mbox-test unimem-gas-test unimem-numatest unimem-numabench
MODS=/opt/unimem/modules
[ "$NODES" -ge 3 ] || fail "needs at least 3 nodes"

# pages_on NODE PID: "<pages on N0> <pages on N1>" from /proc/PID/numa_maps of NODE.
pages_on() {
  on "$1" "awk '{for (i = 1; i <= NF; i++) if (\$i ~ /^N[0-9]+=/) { split(substr(\$i, 2), a, \"=\"); s[a[1]] += a[2] } }
              END { print s[0] + 0, s[1] + 0 }' /proc/$2/numa_maps"
}
# lent NODE: chunks the daemon on NODE has lent.
lent() { on "$1" "kram-daemon --status | sed -n 's/^free [0-9]*, offered [0-9]*, lent \([0-9]*\)$/\1/p'"; }
# Background processes (lib.sh's bg, wait_log): /tmp/numa-TAG.{log,pid} on the node.
BG=numa
# A failed run must not leave remote memory online or daemons lending for the tests after it.
trap '"$CLUSTER" exec 2 --timeout 30 -- "killall -CONT kram-daemon" >/dev/null 2>&1 || true; bg_cleanup; "$CLUSTER" exec 0 --timeout 120 -- "sync; echo 3 > /proc/sys/vm/drop_caches; echo remove all > /proc/unimem_numa; rmmod unimem_numa; true" >/dev/null 2>&1; kram_cleanup' EXIT
# hold NODE TAG CMD: run CMD (a unimem-memtest) with --hold-until /tmp/TAG.go in the background
# and print its pid once it has written its memory.
hold() {
  on "$1" "rm -f /tmp/$2.go"
  bg "$1" "$2" "$3 --hold-until /tmp/$2.go"
  wait_log "$1" "$2" 'holding until' 60
  on "$1" "cat /tmp/$BG-$2.pid"
}
# release NODE TAG: let the held program verify its memory; fails unless every byte verified.
release() {
  on "$1" "touch /tmp/$2.go"
  wait_log "$1" "$2" '^exit=' 60
  on "$1" "grep -q '^exit=0' /tmp/$BG-$2.log && grep -q 'wrote and verified' /tmp/$BG-$2.log" ||
    { on_may_fail "$1" "cat /tmp/$BG-$2.log" >&2; fail "$2: the program's data did not verify"; }
}

step "load unimem_eusrvmem and unimem_mailbox everywhere; kram-daemons on nodes 1 and 2"
for n in $(seq 0 $((NODES - 1))); do
  on "$n" "lsmod | grep -q '^unimem_eusrvmem' || insmod $MODS/unimem_eusrvmem.ko
           lsmod | grep -q '^unimem_mailbox' || insmod $MODS/unimem_mailbox.ko"
done
for n in 1 2; do
  on "$n" "kram-daemon --no-state >/dev/null 2>&1 &"
  on "$n" "for i in \$(seq 50); do kram-daemon --status >/dev/null 2>&1 && exit 0; sleep 0.2; done; exit 1" ||
    fail "kram-daemon did not start on node $n"
done

step "bad parameters fail insmod with a message naming the parameter"
for args in "node=0:has CPUs" "node=7:not a possible NUMA node" "offer_timeout_ms=5:offer_timeout_ms=5"; do
  param=${args%%:*} want=${args#*:}
  ! on_may_fail 0 "insmod $MODS/unimem_numa.ko $param" 2>/dev/null || fail "insmod accepted $param"
  on 0 "dmesg | tail -3 | grep -q '$want'" || fail "no message '$want' for $param"
  on 0 "! lsmod | grep -q '^unimem_numa' && ! test -e /proc/unimem_numa" || fail "$param left the module loaded"
done

step "load: remote memory goes to node 1; nothing is added yet"
on 0 "insmod $MODS/unimem_numa.ko && modinfo -F description $MODS/unimem_numa.ko | grep -q NUMA"
expect_eq "$(on 0 stat -c %a /proc/unimem_numa)" 600 "mode of /proc/unimem_numa (it shows physical ranges)"
on 0 "head -1 /proc/unimem_numa | grep -q '^node 1 remote cpus none distance_from_0 40 managed_kib 0 '"
# has_memory, not numactl's node count: an arm64 kernel puts the memoryless node online at boot.
on 0 "grep -qx 0 /sys/devices/system/node/has_memory" || fail "node 1 has memory before any add"

step "malformed commands are refused with EINVAL and change nothing"
for cmd in "add 0" "add 1 100" "add 9" "frob 1" "add" "remove 2" "add 1 128 x"; do
  ! on_may_fail 0 "echo '$cmd' > /proc/unimem_numa" 2>/dev/null || fail "'$cmd' was accepted"
done
on 0 "! grep -q '^range' /proc/unimem_numa" || fail "a refused command left a range"

step "privilege: uid 0 without CAP_SYS_ADMIN cannot write /proc/unimem_numa (EPERM), can read it"
out=$(on_may_fail 0 "unimem-gas-test without-admin -- sh -c 'echo add 1 > /proc/unimem_numa' 2>&1") &&
  fail "a write without CAP_SYS_ADMIN was accepted"
echo "$out"
grep -q 'Operation not permitted' <<<"$out" || fail "the write without CAP_SYS_ADMIN did not fail with EPERM"
on 0 "unimem-gas-test without-admin -- grep -q '^this_node 0 ' /proc/unimem_numa"
on 0 "! grep -q '^range' /proc/unimem_numa" || fail "the refused write left a range"

step "add one memory block from each lender: numactl --hardware shows node 1, 256 MB, distance 40"
on 0 "echo add 1 > /proc/unimem_numa && echo add 2 > /proc/unimem_numa"
hw=$(on 0 "numactl --hardware")
echo "$hw"
grep -q '^node 1 size: 256 MB' <<<"$hw" || fail "node 1 is not 256 MB"
on 0 "numactl --hardware | grep -Eq '^ *0: +10 +40'" || fail "distance 0->1 is not 40"
on 0 "numactl --hardware | grep -q '^node 1 cpus: *$'" || fail "node 1 has CPUs"
expect_eq "$(on 0 "grep -c 'System RAM (unimem)' /proc/iomem")" 2 "hot-added ranges in /proc/iomem"
expect_eq "$(on 0 "grep -c '^range' /proc/unimem_numa")" 2 "ranges in /proc/unimem_numa"
for n in 1 2; do expect_eq "$(lent "$n")" 128 "chunks lent by node $n"; done
on 1 "kram-daemon --status | grep -q '^chunks [0-9]*-[0-9]* lent to node 0 instance 15 (NUMA) (lease expires in [0-9.]*s)$'" ||
  fail "node 1's daemon does not show the NUMA loan"
! on_may_fail 0 "echo add 1 > /proc/unimem_numa" 2>/dev/null || fail "a second range from node 1 was accepted"

step "/dev/eusrvmem refuses to map a hot-added range (System RAM of node 0); the lender's rings still map"
read -r lender phys <<<"$(on 0 "sed -n 's/^range lender \([0-9]*\) .* phys \(0x[0-9a-f]*\)-.*/\1 \2/p' /proc/unimem_numa | head -1")"
gas_info=$(on 0 "unimem-gas info")
attr() { sed -n "s/^$1: //p" <<<"$gas_info"; }
offset=$(($phys - $(attr gas_phys) - $(attr ctl_size) - lender * $(attr partition_size)))
echo "range of lender $lender at phys $phys: partition offset $offset"
out=$(on_may_fail 0 "unimem-gas zeroed --node $lender --offset $offset --len 4096 2>&1") &&
  fail "a hot-added range was mapped"
echo "$out"
{ grep -q 'mmap' <<<"$out" && grep -q 'EPERM' <<<"$out"; } || fail "mapping the hot-added range did not fail with EPERM"
out=$(on_may_fail 0 "unimem-gas zeroed --node $lender --offset 0 --len 4096 2>&1") || true
! grep -q 'mmap' <<<"$out" || fail "the lender's ring area (not System RAM here) did not map: $out"

step "a malformed OFFER to the NUMA driver is counted and dropped"
malformed() { on 0 "sed -n 's/.* malformed \([0-9]*\) .*/\1/p' /proc/unimem_numa"; }
m0=$(malformed)
on 1 "unimem-mbox-test kping --node 0 --service 3 --opcode 1 --no-echo --count 1" >/dev/null
m1=$m0
for _ in $(seq 25); do m1=$(malformed); [ "$m1" -gt "$m0" ] && break; sleep 0.2; done
expect_eq "$m1" "$((m0 + 1))" "malformed messages counted by unimem_numa"
expect_eq "$(on 0 "grep -c '^range' /proc/unimem_numa")" 2 "ranges after a malformed OFFER"

step "numactl --membind=1: the program's pages are on node 1 (numa_maps) and verify; numabench --json"
on 0 "numactl --membind=1 unimem-numabench --json chase --mib 4 --steps 20000" | grep -q '^{.*"ns_per_access":[0-9]' ||
  fail "unimem-numabench --json chase printed no ns_per_access"
pid=$(hold 0 bind "numactl --membind=1 unimem-memtest --mib 64")
read -r n0 n1 <<<"$(pages_on 0 "$pid")"
echo "membind=1: $n1 pages on node 1, $n0 on node 0"
[ "$n1" -ge $((64 * 256)) ] || fail "only $n1 pages of a 64 MiB area on node 1"
release 0 bind

# The lease-timing steps take a minute of waiting: the full suite's, not the quick tier's.
if [ "${UNIMEM_QUICK:-0}" = 1 ]; then
  step "skipped in the quick tier (scripts/test.sh --quick): node 0 frozen past its lease, node 2's daemon stopped"
else
  step "node 0 frozen past its lease (30 s > 20 s) with 64 MiB on node 1: nothing reclaimed, every byte verifies after"
  pid=$(hold 0 frozen "numactl --membind=1 unimem-memtest --mib 64")
  held0=$(on 1 "kram-daemon --status --json | sed -n 's/.*\"leases_held\":\([0-9]*\).*/\\1/p'")
  lent1=$(lent 1)
  "$CLUSTER" pause 0
  sleep 30
  expect_eq "$(lent 1)" "$lent1" "chunks node 1 lends while node 0 is frozen"
  "$CLUSTER" resume 0
  release 0 frozen
  held1=$(on 1 "kram-daemon --status --json | sed -n 's/.*\"leases_held\":\([0-9]*\).*/\\1/p'")
  echo "node 1: lapsed leases held for a connected borrower: $held0 -> $held1"
  [ "${held1:-0}" -gt "${held0:-0}" ] || fail "node 1 did not hold node 0's lapsed NUMA lease"
  on 1 "grep 'still connected to the fabric' /var/log/kram-daemon.log | tail -1" ||
    fail "node 1's kram-daemon did not log the held lease"
  on 0 "! dmesg | grep -q 'revoked chunks .* while they are online'" || fail "node 0's range was revoked while online"
  # Thawed, node 0 renews at once and its lenders acknowledge: nothing to take offline.
  sleep 3
  expect_eq "$(on 0 "grep -c '^range' /proc/unimem_numa")" 2 "ranges online on node 0 a few seconds after the thaw"

  step "node 2's daemon stops answering: node 0 takes its range offline before the lease lapses; every byte verifies"
  # Renewals go unacknowledged: once less than half a lease is left (8 s), at two ticks in a row,
  # node 0 migrates the range's pages to its other memory and gives the chunks back (wiped).
  hold 0 rescue "numactl --membind=1 unimem-memtest --mib 24" >/dev/null
  # The rescue, like `remove`, migrates only what local memory can take (it never waits on
  # reclaim: a work item that offlines gets no signal to stop a migration that cannot end). Earlier
  # tests may have left node 0's page cache full.
  on 0 "sync; echo 3 > /proc/sys/vm/drop_caches"
  mark=$(dmesg_mark 0)
  on 2 "killall -STOP kram-daemon"
  for _ in $(seq 40); do
    [ "$(on 0 "grep -c '^range' /proc/unimem_numa")" = 1 ] && break
    sleep 1
  done
  on 2 "killall -CONT kram-daemon"
  expect_eq "$(on 0 "grep -c '^range' /proc/unimem_numa")" 1 "ranges online on node 0 after node 2's daemon stopped answering"
  on 0 "grep -q '^range lender 1 ' /proc/unimem_numa" || fail "node 0 took the wrong range offline"
  on 0 "dmesg | tail -n +$((mark + 1)) | grep 'has not acknowledged renewals of chunks'" ||
    fail "node 0 did not log why it took node 2's range offline"
  release 0 rescue
  # The FREE sent while node 2's daemon was stopped is read once it runs again.
  for _ in $(seq 20); do [ "$(lent 2)" = 0 ] && break; sleep 1; done
  expect_eq "$(lent 2)" 0 "chunks node 2 still lends after node 0 gave its range back"
  dmesg_clean 0 "$mark" || fail "kernel errors while taking node 2's range offline"
  on 0 "echo add 2 > /proc/unimem_numa"
  expect_eq "$(on 0 "grep -c '^range' /proc/unimem_numa")" 2 "ranges online on node 0 after adding node 2's again"
fi

step "libnuma (seed Table 2): numa_alloc_onnode, numa_alloc_interleaved, numa_move_pages, numa_migrate_pages"
on 0 "unimem-numatest --remote 1 --local 0 --mib 16"

# Earlier tests leave node 0's page cache full; a local node short of free pages makes the
# kernel place interleaved pages remotely and skews the ratio.
on 0 "sync; echo 3 > /proc/sys/vm/drop_caches"
step "service level 1:3 (remote:local) through weighted interleave: 25% +- 5 of the pages remote"
for ratio in "1 3 25" "1 1 50"; do
  read -r r l want <<<"$ratio"
  pid=$(hold 0 "sl$r$l" "unimem-sl run --remote $r --local $l -- unimem-memtest --mib 32")
  read -r n0 n1 <<<"$(pages_on 0 "$pid")"
  share=$((100 * n1 / (n0 + n1)))
  echo "ratio $r:$l: $n1 remote, $n0 local pages: $share% remote (want $want +- 5)"
  [ "$share" -ge $((want - 5)) ] && [ "$share" -le $((want + 5)) ] || fail "ratio $r:$l gave $share% remote"
  on 0 "unimem-sl show --pgid $pid" | grep -q "$pid" || fail "unimem-sl show does not list group $pid"
  on 0 "unimem-sl show --pgid $pid --json" | grep -q "^\[{.*\"pgid\":$pid,.*\"ratio\":\"$r:$l\"" ||
    fail "unimem-sl show --json does not list group $pid with ratio $r:$l"
  release 0 "sl$r$l"
done

step "remove with pages in use: they migrate back to local memory, the lender gets its chunks wiped"
pid=$(hold 0 move "numactl --membind=1 unimem-memtest --mib 24")
read -r _ n1 <<<"$(pages_on 0 "$pid")"
[ "$n1" -ge $((24 * 256)) ] || fail "workload not on node 1 ($n1 pages)"
# "lender first" of each range, and whether it holds data now (so the zero check can fail).
ranges=$(on 0 "sed -n 's/^range lender \([0-9]*\) mib [0-9]* chunks \([0-9]*\)+.*/\1 \2/p' /proc/unimem_numa")
zeroed() { on_may_fail "$1" "unimem-gas zeroed --node $1 --offset $(( (3 + $2) << 20 )) --len $((128 << 20))" >/dev/null 2>&1; }
dirty=0
while read -r l first; do zeroed "$l" "$first" || dirty=$((dirty + 1)); done <<<"$ranges"
[ "$dirty" -ge 1 ] || fail "no lent range holds data while the workload runs"
# Earlier tests may have left node 0's page cache full: removal needs free local pages.
on 0 "sync; echo 3 > /proc/sys/vm/drop_caches"
on 0 "echo remove all > /proc/unimem_numa"
while read -r l first; do zeroed "$l" "$first" || fail "node $l's chunks $first+128 were not wiped"; done <<<"$ranges"
read -r n0 n1 <<<"$(pages_on 0 "$pid")"
echo "after remove: $n0 pages on node 0, $n1 on node 1"
expect_eq "$n1" 0 "pages left on node 1 after remove"
release 0 move
for n in 1 2; do expect_eq "$(lent "$n")" 0 "chunks still lent by node $n after remove"; done
on 0 "grep -qx 0 /sys/devices/system/node/has_memory" || fail "node 1 still has memory"

step "remove refuses when local memory cannot take the pages; nothing is lost"
on 0 "echo add 1 > /proc/unimem_numa && echo add 2 > /proc/unimem_numa"
# A large node 0 (the debug kernel's) could take 160 MiB back: a held program keeps all but
# UNIMEM_NUMA_LOCAL_FREE_MIB of its local memory (lib.sh).
ballast=
if [ -n "${UNIMEM_NUMA_LOCAL_FREE_MIB:-}" ]; then
  free0=$(on 0 "awk '/MemFree/ {print int(\$4 / 1024)}' /sys/devices/system/node/node0/meminfo")
  if [ "$free0" -gt "$UNIMEM_NUMA_LOCAL_FREE_MIB" ]; then
    echo "node 0 has $free0 MiB free locally: holding $((free0 - UNIMEM_NUMA_LOCAL_FREE_MIB)) MiB of it"
    hold 0 ballast "numactl --membind=0 unimem-memtest --mib $((free0 - UNIMEM_NUMA_LOCAL_FREE_MIB))" >/dev/null
    ballast=1
  fi
fi
pid=$(hold 0 full "numactl --membind=1 unimem-memtest --mib 160")
! on_may_fail 0 "echo remove all > /proc/unimem_numa" 2>/dev/null || fail "remove accepted with too little local memory"
on 0 "dmesg | tail -3 | grep -q 'free on other nodes'" || fail "no clear message for the refused remove"
expect_eq "$(on 0 "grep -c '^range' /proc/unimem_numa")" 2 "ranges after the refused remove"
release 0 full
[ -z "$ballast" ] || release 0 ballast

step "rmmod is refused while remote memory is online (nothing would renew its leases); after remove, every chunk is back"
! on_may_fail 0 "rmmod unimem_numa" 2>/dev/null || fail "rmmod succeeded with ranges online"
expect_eq "$(on 0 "grep -c '^range' /proc/unimem_numa")" 2 "ranges after the refused rmmod"
on 0 "echo remove all > /proc/unimem_numa && rmmod unimem_numa && ! test -e /proc/unimem_numa && ! grep -q 'System RAM (unimem)' /proc/iomem"
for _ in $(seq 25); do [ "$(lent 1)$(lent 2)" = 00 ] && break; sleep 0.2; done
for n in 1 2; do expect_eq "$(lent "$n")" 0 "chunks still lent by node $n after rmmod"; done

step "stop the lenders"
for n in 1 2; do
  on "$n" "killall -TERM kram-daemon; for i in \$(seq 50); do pidof kram-daemon >/dev/null || exit 0; sleep 0.1; done; exit 1" ||
    fail "kram-daemon on node $n did not exit on SIGTERM"
done

step "without a lender's daemon, add times out with a clear error and adds nothing"
on 0 "insmod $MODS/unimem_numa.ko offer_timeout_ms=500"
! on_may_fail 0 "echo add 1 > /proc/unimem_numa" 2>/dev/null || fail "add succeeded without a daemon on node 1"
on 0 "dmesg | tail -2 | grep -q 'no offer for 128 aligned MiB within 500 ms'" || fail "no clear timeout message"
on 0 "! grep -q '^range' /proc/unimem_numa && rmmod unimem_numa"
on 0 "dmesg | grep unimem_numa | tail -4"
echo "numa: all checks passed"
