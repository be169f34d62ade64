#!/usr/bin/env bash
# KRAM leases (issue 9): lent memory is never handed out twice, whatever restarts, and a dead
# borrower's memory comes back wiped.
#  1. The issue's sequence: node 0 borrows 96 MiB of node 1; node 1's kram-daemon is killed (-9)
#     and restarted without its state file (as after a reboot: /run is a tmpfs); node 2 then
#     borrows 64 MiB of node 1 and overwrites all of it. Node 0's data must be unchanged: the
#     restarted daemon knows the loans from its record in its own partition.
#  2. The same with the state file kept, and with the record destroyed (the daemon then waits a
#     lease time for the borrowers' renewals to claim their ranges back before lending anything).
#  3. Node 1's VM killed and booted again: the loans survive (record in the GAS), data intact.
#  4. Node 2's VM killed: its chunks are free again and read as zero on node 1 within the lease
#     time (LEASE_MS = 20 s) plus slack.
#  5. Node 0 frozen past its lease: node 1 holds its ranges while the fabric shows node 0
#     connected and its kernel heartbeat stalled, and lends them to nobody; thawed, node 0
#     renews and its data reads back intact. A lease that lapsed on the borrower's own clock
#     (its lender's daemon stopped) is returned unwiped at unload (FREE_UNWIPED), and the
#     lender wipes it before it is free.
#  6. Node 1's daemon stopped (no ACK, no REVOKE): with either disk, node 0's I/O to a lapsed
#     lease waits for it up to `stall_timeout`, then fails.
#  7. Node 1 frozen past the lease of its GSAS pool (lent by its own daemon): thawed, the pool is
#     renewed, not given up, and its pages read back intact.
source "$(dirname "$0")/lib.sh"
MODS=/opt/unimem/modules
BG=lease
LEASE_S=20
BORROWER_LEASE_S=16
STALL_S=30
[ "$NODES" -ge 3 ] || fail "needs at least 3 nodes"
trap 'bg_cleanup; kram_cleanup' EXIT

daemon() { local n=$1; shift; kram_daemon "$n" --lend 200M "$@"; }
kill9() { on "$1" "killall -9 kram-daemon; for i in \$(seq 50); do pidof kram-daemon >/dev/null || exit 0; sleep 0.1; done; exit 1"; }
lent() { on 1 "kram-daemon --status | sed -n 's/^free [0-9]*, offered [0-9]*, lent \([0-9]*\)$/\1/p'"; }
# range NODE INSTANCE: "FIRST LAST" of what node 1 lends to that borrower instance.
range() { on 1 "kram-daemon --status | sed -n 's/^chunks \([0-9]*\)-\([0-9]*\) lent to node $1 instance $2\b.*/\1 \2/p'"; }
wait_lent() {
  local want=$1 secs=$2 got
  for _ in $(seq $((secs * 2))); do got=$(lent); [ "$got" = "$want" ] && return 0; sleep 0.5; done
  on 1 "kram-daemon --status"; fail "node 1 lends $got chunks, expected $want (waited ${secs}s)"
}
wait_dev() {
  on "$1" "for i in \$(seq 100); do test -b /dev/$2 && exit 0; sleep 0.2; done; dmesg | tail -5; exit 1" ||
    fail "/dev/$2 did not appear on node $1"
}
sums() { on 0 "md5sum /dev/kram0 /dev/kram1 | cut -d' ' -f1 | tr '\n' ' '"; }
overlap() {
  local a b c d; read -r a b <<<"$1"; read -r c d <<<"$2"
  [ -n "$a" ] && [ -n "$c" ] || fail "missing range: '$1' / '$2'"
  [ "$b" -lt "$c" ] || [ "$d" -lt "$a" ]
}
check_disjoint() {
  local r00 r01 r20; r00=$(range 0 0); r01=$(range 0 1); r20=$(range 2 0)
  echo "node 1 lends: node 0 kram0 [$r00], kram1 [$r01]; node 2 kram0 [$r20]"
  overlap "$r00" "$r20" && overlap "$r01" "$r20" || fail "node 1 lent one range to two borrowers"
}

for n in $(seq 0 $((NODES - 1))); do load_base "$n"; on "$n" "killall kram-daemon 2>/dev/null; rm -f /run/kram-daemon.state; true"; done

mark=$(dmesg_mark 0)
step "node 0 borrows 32 + 64 MiB of node 1 (the seed's insmod line) and fills them"
daemon 1
on 0 "insmod $MODS/unimem_kram.ko ninstances=2 size=32,64 transfermode=1"
wait_dev 0 kram0; wait_dev 0 kram1
wait_lent 96 10
on 0 "dd if=/dev/urandom of=/dev/kram0 bs=1M count=32 2>/dev/null && dd if=/dev/urandom of=/dev/kram1 bs=1M count=64 2>/dev/null && sync"
before=$(sums)
echo "node 0 checksums: $before"

step "node 1's daemon killed -9 and restarted WITHOUT its state file: the loans are still there"
kill9 1
on 1 "rm -f /run/kram-daemon.state"
daemon 1 --no-state
wait_lent 96 5
on 1 "kram-daemon --status | head -3"

step "node 2 borrows 64 MiB of node 1 and overwrites all of it: node 0's data is unchanged"
on 2 "insmod $MODS/unimem_kram.ko ninstances=1 size=64"
wait_dev 2 kram0
wait_lent 160 10
check_disjoint
on 2 "dd if=/dev/urandom of=/dev/kram0 bs=1M count=64 2>/dev/null && sync"
expect_eq "$(sums)" "$before" "node 0's devices after node 2 wrote its own"
n2=$(on 2 "md5sum /dev/kram0 | cut -d' ' -f1")

step "killed -9 and restarted WITH its state file: nothing changes"
kill9 1
daemon 1
wait_lent 160 5
check_disjoint

step "record destroyed (garbage over it), no state file: grace period, the borrowers claim their ranges back"
kill9 1
on 1 "rm -f /run/kram-daemon.state"
# The record lies 64 KiB below chunk 0 (unimem_wire::lease_record::RECORD_OFFSET).
on 1 "unimem-gas write --node 1 --offset $(( (3 << 20) - 65536 )) --len 65536 --seed 7" >/dev/null
daemon 1 --no-state
on 1 "kram-daemon --status | grep -i grace" || fail "the daemon did not enter its grace period"
wait_lent 160 10
check_disjoint
# Leave the grace period before anything else asks node 1 for memory.
sleep $((LEASE_S + 2))
on 1 "! kram-daemon --status | grep -q '^grace:'" || fail "still in grace after the lease time"
expect_eq "$(sums)" "$before" "node 0's devices after the grace period"
expect_eq "$(on 2 "md5sum /dev/kram0 | cut -d' ' -f1")" "$n2" "node 2's device after the grace period"

step "node 1's VM killed and booted again: the loans survive in its partition"
"$CLUSTER" kill 1
"$CLUSTER" start 1
load_base 1
on 1 "test ! -e /run/kram-daemon.state"
daemon 1
wait_lent 160 5
check_disjoint
expect_eq "$(sums)" "$before" "node 0's devices after node 1 rebooted"
on 0 "grep -q '^  node 1 chunks .*: valid' /sys/kernel/debug/unimem_kram/stats" ||
  { on 0 "cat /sys/kernel/debug/unimem_kram/stats"; fail "node 0's leases are not valid after node 1 came back"; }

step "node 2's VM killed: within the lease time its chunks are free again, and zero"
read -r f2 l2 <<<"$(range 2 0)"
"$CLUSTER" kill 2
t0=$SECONDS
wait_lent 96 $((LEASE_S + 15))
echo "node 2's chunks $f2-$l2 came back after $((SECONDS - t0)) s"
on 1 "unimem-gas zeroed --node 1 --offset $(( (3 + f2) << 20 )) --len $(( (l2 - f2 + 1) << 20 ))" >/dev/null ||
  fail "node 2's chunks were not wiped when its lease expired"
on 1 "grep -i 'expired' /tmp/kram-daemon.log | tail -2"
"$CLUSTER" start 2
load_base 2
expect_eq "$(sums)" "$before" "node 0's devices after node 2 died"

step "node 0 frozen past its lease: node 1 holds its ranges (node 0 is connected, its heartbeat stalled), lends them to nobody; after the thaw node 0's devices read back intact"
# The lenders' lease rule, the same for every instance (docs/KRAM-DAEMON.md): a lapsed lease of
# a borrower the fabric shows connected, without a reconnection, whose kernel heartbeat stalled
# (frozen) is held, not reclaimed. (A live borrower that stops renewing is reclaimed at the
# lapse: kram_daemon.sh "lease expiry".)
r00=$(range 0 0) r01=$(range 0 1)
held_count() { on 1 "kram-daemon --status --json | sed -n 's/.*\"leases_held\":\([0-9]*\).*/\\1/p'"; }
held0=$(held_count)
"$CLUSTER" pause 0
sleep $((LEASE_S + 5))
expect_eq "$(lent)" 96 "chunks node 1 lends while node 0 is frozen"
expect_eq "$(range 0 0) / $(range 0 1)" "$r00 / $r01" "node 0's ranges on node 1 while it is frozen"
"$CLUSTER" resume 0
held1=$(held_count)
echo "node 1: lapsed leases held for a frozen borrower: $held0 -> $held1"
[ "${held1:-0}" -gt "${held0:-0}" ] || fail "node 1 did not hold node 0's lapsed leases"
on 1 "grep 'heartbeat stalled' /tmp/kram-daemon.log | tail -1" ||
  fail "node 1's kram-daemon did not log the held leases"
# Thawed, node 0 renews at once; the ACKs make its leases valid again.
on 0 "for i in \$(seq 50); do [ \$(grep -c '^  node 1 chunks .*: valid' /sys/kernel/debug/unimem_kram/stats) = 2 ] && exit 0; sleep 0.2; done
      cat /sys/kernel/debug/unimem_kram/stats; exit 1" || fail "node 0's leases are not valid again after the thaw"
expect_eq "$(sums)" "$before" "node 0's devices after its freeze"
on 0 "! dmesg | tail -n +$((mark + 1)) | grep -q 'revoked chunks'" || fail "node 0's ranges were revoked"

step "unload: node 0 returns its leases"
on 0 "rmmod unimem_kram"
sleep 2
expect_eq "$(lent)" 0 "chunks lent by node 1 after node 0 unloaded"
on 1 "kram-daemon --status | tail -2"
step "a lease that lapses on the borrower's clock is returned unwiped, and the lender wipes it"
# Node 1's daemon stopped for longer than a borrower's lease: node 0's clock runs out (the
# daemon, stopped, expires nothing); unloading then must not write the ranges, and FREEs them
# as FREE_UNWIPED; the daemon, resumed, wipes them before they are free.
on 0 "insmod $MODS/unimem_kram.ko ninstances=2 size=32,64 transfermode=1"
wait_dev 0 kram0; wait_dev 0 kram1
wait_lent 96 10
on 0 "dd if=/dev/urandom of=/dev/kram0 bs=1M count=32 2>/dev/null && dd if=/dev/urandom of=/dev/kram1 bs=1M count=64 2>/dev/null && sync"
r00=$(range 0 0) r01=$(range 0 1)
unwiped() { on 1 "kram-daemon --status --json | sed -n 's/.*\"frees_unwiped\":\([0-9]*\).*/\\1/p'"; }
unwiped0=$(unwiped)
mark1=$(dmesg_mark 0)
on 1 "killall -STOP kram-daemon"
# Past the borrower's lease (16 s after its last acknowledged RENEW), well before the lender's
# (20 s): the daemon, resumed, must still hold the loans to take the FREEs.
sleep $((BORROWER_LEASE_S + 1))
on 0 "rmmod unimem_kram"
on 0 "dmesg | tail -n +$((mark1 + 1)) | grep -q 'unwiped (lease lapsed on our clock)'" ||
  { on 1 "killall -CONT kram-daemon"; fail "node 0 did not return its lapsed leases unwiped"; }
on 1 "killall -CONT kram-daemon"
wait_lent 0 15
expect_eq "$(( $(unwiped) - unwiped0 ))" 2 "unwiped FREEs node 1 took"
for r in "$r00" "$r01"; do
  read -r f l <<<"$r"
  on 1 "unimem-gas zeroed --node 1 --offset $(( (3 + f) << 20 )) --len $(( (l - f + 1) << 20 ))" >/dev/null ||
    fail "chunks $f-$l came back unwiped"
done
on 1 "kram-daemon --status | tail -2"
for mode in 0 1; do
  step "transfermode=$mode: node 1's daemon stopped (no ACK, no REVOKE): node 0's read of the lapsed lease waits stall_timeout=$STALL_S, then fails"
  on 0 "insmod $MODS/unimem_kram.ko ninstances=1 size=8 transfermode=$mode stall_timeout=$STALL_S"
  wait_dev 0 kram0
  on 0 "dd if=/dev/urandom of=/dev/kram0 bs=1M count=8 oflag=direct 2>/dev/null" || fail "could not write /dev/kram0"
  on 1 "killall -STOP kram-daemon"
  # The last ACK came at most a RENEW period before the stop: the lease lapsed 4-5 s ago.
  sleep $((BORROWER_LEASE_S + 4))
  t0=$SECONDS
  ! on_may_fail 0 "dd if=/dev/kram0 of=/dev/null bs=4k count=1 iflag=direct" 2>/dev/null ||
    fail "node 0 read a lease whose lender stopped acknowledging it $STALL_S s ago"
  waited=$((SECONDS - t0))
  on 1 "killall -CONT kram-daemon"
  echo "the read failed after waiting $waited s (stall_timeout=$STALL_S; the default, 60, would wait about 55 s)"
  [ "$waited" -ge $((STALL_S / 2)) ] && [ "$waited" -le $((STALL_S + 15)) ] ||
    fail "the read waited $waited s, not about stall_timeout=$STALL_S s less the 4-5 s the lease had lapsed"
  on 0 "rmmod unimem_kram"
done
step "node 1 frozen past its GSAS pool's lease (lent by its own daemon, frozen with it): thawed, the pool is renewed and its pages read back intact"
# The same rule for a pool: node 1's daemon sees from node 1's heartbeat that it missed its beats
# (frozen), not that it ran without renewing, and holds the lapsed lease; the service finds it
# lapsed on its own clock, answers STALLED (the library asks again) until the renewal's ACK.
mark1=$(dmesg_mark 1)
on 1 "insmod $MODS/unimem_gsas.ko pool_mib=8"
T=0x0e0007
A=$(on 0 "unimem-gsas --tree $T alloc --node 1 --pages 2")
[ "$(( A >> 48 ))" = 1 ] || fail "alloc on node 1 answered '$A'"
on 0 "unimem-gsas --tree $T bulk-write $A --len 8192 --seed 21" >/dev/null
pool_range=$(range 1 14)
[ -n "$pool_range" ] || fail "node 1 lends no GSAS pool to itself"
"$CLUSTER" pause 1
sleep $((LEASE_S + 5))
"$CLUSTER" resume 1
out=$(on 0 "unimem-gsas --tree $T --timeout-ms 20000 bulk-read $A --len 8192 --seed 21")
echo "node 0: $out"
grep -q ', 0 differ from seed 21$' <<<"$out" || fail "node 1's pool lost its data across the freeze"
expect_eq "$(range 1 14)" "$pool_range" "node 1's pool range after the freeze"
# The read was served, so the lease was acknowledged again; the next tick logs it.
on 1 "for i in \$(seq 50); do dmesg | tail -n +$((mark1 + 1)) | grep -q 'acknowledged again after a stall' && exit 0; sleep 0.2; done; exit 1" ||
  { on 1 "dmesg | tail -n +$((mark1 + 1)) | grep -E 'unimem_gsas|page pool'"; fail "node 1's GSAS service did not renew its lapsed pool"; }
on 1 "dmesg | tail -n +$((mark1 + 1)) | grep -E 'page pool'"
on 1 "! dmesg | tail -n +$((mark1 + 1)) | grep -q 'page pool lost'" || fail "node 1 gave its pool up"
on 0 "unimem-gsas --tree $T free $A"
on 1 "rmmod unimem_gsas"

if [ "$NODES" -ge 4 ]; then
  step "a part revoked before the disk exists: the driver asks for exactly that gap; the disk has no hole"
  # 384 MiB (more than one REQUEST names, so it is striped) from lenders of 128 MiB (nodes 1 and
  # 2): the disk waits for its last third. The lender of the part at offset 0 stops past its
  # lease; back, it expires the lease and answers the next RENEW with REVOKE. The driver must
  # ask for [0, 128 MiB) again, not for the 256 MiB after the part at 128 MiB (overlapping it and
  # leaving the first 128 MiB unheld). Node 3 then lends the last third.
  for n in 1 2 3; do
    on "$n" "killall kram-daemon 2>/dev/null; for i in \$(seq 50); do pidof kram-daemon >/dev/null || break; sleep 0.1; done; rm -f /run/kram-daemon.state; true"
  done
  for n in 1 2; do kram_daemon "$n" --lend 128M; done
  on 0 "insmod $MODS/unimem_kram.ko ninstances=1 size=384 transfermode=1"
  STATS=/sys/kernel/debug/unimem_kram/stats
  parts() { on 0 "grep -c '^  node [123] chunks [0-9]*+128 at ' $STATS"; }
  for _ in $(seq 60); do [ "$(parts)" = 2 ] && break; sleep 0.5; done
  expect_eq "$(parts)" 2 "parts of 128 MiB node 0 holds (one per lender)"
  on 0 "test ! -b /dev/kram0" || fail "/dev/kram0 exists with 256 of its 384 MiB"
  first=$(on 0 "sed -n 's/^  node \([12]\) chunks [0-9]*+128 at 0 MiB.*/\1/p' $STATS")
  [ -n "$first" ] || { on 0 "cat $STATS"; fail "no part at offset 0"; }
  mark0=$(dmesg_mark 0)
  on "$first" "killall -STOP kram-daemon"
  sleep $((LEASE_S + 3))
  on "$first" "killall -CONT kram-daemon"
  on 0 "for i in \$(seq 60); do dmesg | tail -n +$((mark0 + 1)) | grep -q 'revoked chunks .* before use; asking again' && exit 0; sleep 0.5; done; exit 1" ||
    fail "node $first's REVOKE of the part at offset 0 did not reach the driver"
  kram_daemon 3 --lend 128M
  wait_dev 0 kram0
  on 0 "cat $STATS"
  for mib in 0 128 256; do
    expect_eq "$(on 0 "grep -c '^  node [123] chunks [0-9]*+128 at $mib MiB' $STATS")" 1 "parts at $mib MiB"
  done
  # Every block written and read back with its checksum: a byte no part holds fails it.
  on 0 "fio --name=hole --filename=/dev/kram0 --rw=write --bs=256k --direct=1 --ioengine=psync \
          --verify=crc32c --do_verify=1 --size=100% > /tmp/fio-hole.out 2>&1" ||
    { on 0 "tail -20 /tmp/fio-hole.out"; fail "/dev/kram0 does not hold all its 384 MiB"; }
  on 0 "rmmod unimem_kram"
  for n in 1 2 3; do on "$n" "killall -TERM kram-daemon"; done
fi
# (I/O errors are expected: the frozen borrower's reads fail on purpose.)
on 0 "! dmesg | tail -n +$((mark + 1)) | grep -E 'BUG|Oops|WARNING'" || fail "kernel warnings on node 0"
echo "kram_lease: all checks passed"
