#!/usr/bin/env bash
# GSAS atomic service (unimem_gsas.ko) acceptance, with raw requests (`unimem-mbox-test gsas-raw`,
# no GSAS library): parameters checked, no pool without a kram-daemon, the pool borrowed from
# the node's own daemon (shown "(GSAS)"), ALLOC on a remote node, write/read back across
# processes and nodes of one tree, every operation's result, Fetch&Add from two nodes at once
# ends at the exact sum, a request from another tree is DENIED, counted, memory unchanged,
# UNALIGNED / FAULT / INVALID for bad addresses and arguments, the counters in sysfs and
# debugfs, unload refused while pages are allocated, unload returns the pool (0 lent), and
# device removal zaps mapped response slots (SIGBUS) and stops the service (rebind works).
source "$(dirname "$0")/lib.sh"
MODS=/opt/unimem/modules
KO=$MODS/unimem_gsas.ko
SYS=/sys/kernel/unimem_gsas
HOME_NODE=2
# A protection tree no node makes (node field 15): SET_TREE'd into the test's processes.
TREE=0x0f0001
FAA=${GSAS_FAA_COUNT:-100}
[ "$NODES" -ge 3 ] || fail "needs at least 3 nodes"

share_bins kram-daemon unimem-mbox-test unimem-gas-test

BG=gsas
cleanup() {
  # The daemons (started with bg) must outlive unimem_gsas's unload, which returns the pool to
  # them: killed first, they would keep the lease in their record for the next test's daemon.
  for n in $(seq 0 $((NODES - 1))); do
    rebind "$n" >/dev/null 2>&1 || true
    "$CLUSTER" exec "$n" --timeout "$STOP_TIMEOUT" -- "$STOP_DAEMON" >/dev/null 2>&1 || true
  done
  bg_cleanup
}
trap cleanup EXIT

# raw NODE ARGS...: unimem-mbox-test gsas-raw on NODE against the home node.
raw() { local n=$1; shift; on "$n" "unimem-mbox-test gsas-raw --node $HOME_NODE $*"; }
counter() { on "$HOME_NODE" "cat $SYS/$1"; }
# all_free: within 10 s the home node's daemon has all 64 chunks free again (shown either way).
all_free() {
  on "$HOME_NODE" "for i in \$(seq 20); do kram-daemon --status | grep -q '^free 64, offered 0, lent 0' && break; sleep 0.5; done
    kram-daemon --status | head -2; kram-daemon --status | grep -q '^free 64, offered 0, lent 0'"
}
DRV=/sys/bus/pci/drivers/unimem_eusrvmem
# rebind NODE: the fabric device bound to unimem_eusrvmem again.
rebind() {
  on "$1" "ls $DRV | grep -q '^0000:' || for d in /sys/bus/pci/devices/*; do
    [ \"\$(cat \$d/vendor):\$(cat \$d/device)\" = 0x1af4:0x1110 ] && echo \${d##*/} > $DRV/bind
  done; test -c /dev/eusrvmem"
}

step "load the base modules; dmesg marks"
declare -A marks
for n in $(seq 0 $((NODES - 1))); do
  load_base "$n"
  on "$n" "rmmod unimem_gsas 2>/dev/null; true"
  marks[$n]=$(dmesg_mark "$n")
done

step "bad parameters fail insmod with a message and leave nothing"
for param in pool_mib=0 pool_mib=5000 offer_timeout_ms=50; do
  ! on_may_fail 1 "insmod $KO $param" 2>/dev/null || fail "insmod accepted $param"
  on 1 "dmesg | tail -3 | grep -q 'unimem_gsas: ${param%%=*}=' && ! test -e $SYS" || fail "$param: no message, or left sysfs"
done
on 1 "modinfo -F description $KO | grep -q 'GSAS atomic service' && modinfo -F parm $KO | grep -q '^pool_mib:'"

step "no kram-daemon on node 1: loading fails after the offer timeout, clearly"
! on_may_fail 1 "insmod $KO offer_timeout_ms=500" 2>/dev/null || fail "loaded without a pool"
on 1 "dmesg | tail -5 | grep 'no page pool'" || fail "no 'no page pool' message"
on 1 "! lsmod | grep -q '^unimem_gsas' && ! test -e $SYS"

step "node $HOME_NODE: the pool comes from its own kram-daemon (instance 14, shown GSAS)"
gsas_up "$HOME_NODE" "$KO"
expect_eq "$(counter pool_pages)" 4096 "pool pages (16 MiB)"
on "$HOME_NODE" "kram-daemon --status | grep -E 'lent to node $HOME_NODE instance 14 \\(GSAS\\)'"
on "$HOME_NODE" "kram-daemon --status | grep -q '^free 48, offered 0, lent 16'"
on "$HOME_NODE" "grep -q '^pool_pages 4096' /sys/kernel/debug/unimem_gsas/stats"

step "ALLOC of 2 pages on node $HOME_NODE from node 0 (tree $TREE), write and read back"
out=$(raw 0 --tree $TREE alloc:0:2 write:A:0x1234 read:A write:A+4096:7 read:A+4096 nop)
echo "$out"
expect_resp "$out" 0 OK
A=$(value_of "$out" 0)
[ "$(( A >> 48 ))" = "$HOME_NODE" ] || fail "ALLOC answered $A: not an address of node $HOME_NODE"
expect_resp "$out" 2 OK 0x1234
expect_resp "$out" 4 OK 7
expect_resp "$out" 5 OK
echo "allocation at $A"

step "the same tree from node 1 (another process, another node) sees the data"
out=$(raw 1 --tree $TREE "read:$A" "read:$((A + 4096))")
expect_resp "$out" 0 OK 0x1234
expect_resp "$out" 1 OK 7

step "every operation: results from the home node itself"
W=$((A + 64))
out=$(raw "$HOME_NODE" --tree $TREE "write:$W:10" "fetch_add:$W:5" "cas:$W:15:20" "cas:$W:99:1" "swap:$W:0xff" \
  "fetch_and:$W:0x0f" "fetch_or:$W:0x30" "fetch_xor:$W:0x3f" "read:$W" \
  "write:$W:0xffffffff00000005" "fetch_add32:$W:0xfffffffb" "read:$W" "cas32:$W:0:9" "read32:$((W + 4))" \
  "write128:$((W + 32)):0x1111:0x2222" "read128:$((W + 32))" "write128:$((W + 48)):0x3333:0x4444" "read256:$((W + 32))")
echo "$out"
expect_resp "$out" 1 OK 10          # fetch_add: old value
expect_resp "$out" 2 OK 15          # cas hit: old value
expect_resp "$out" 3 OK 20          # cas miss: old value, nothing written
expect_resp "$out" 4 OK 20          # swap: old
expect_resp "$out" 5 OK 0xff        # and
expect_resp "$out" 6 OK 0x0f        # or
expect_resp "$out" 7 OK 0x3f        # xor
expect_resp "$out" 8 OK 0           # 0x3f ^ 0x3f
expect_resp "$out" 10 OK 5          # 32-bit fetch_add: old low half, zero-extended
expect_resp "$out" 11 OK 0xffffffff00000000  # low half wrapped to 0, high half untouched
expect_resp "$out" 12 OK 0          # 32-bit cas hit (low half was 0)
expect_resp "$out" 13 OK 0xffffffff # high half, 32-bit read
expect_resp "$out" 15 OK 0x1111
grep -q '^value words: 0x1111 0x2222 0x0 0x0$' <<<"$out" || fail "READ128 did not return both words"
grep -q '^value words: 0x1111 0x2222 0x3333 0x4444$' <<<"$out" || fail "READ256 did not return the four words"

step "bulk write and read of 4096 bytes across the two pages (unaligned)"
out=$(raw 1 --tree $TREE --fill 0x5a "bulk_write:$((A + 100)):4096" "bulk_read:$((A + 100)):4096" "read:$((A + 4096 + 88))")
echo "$out"
expect_resp "$out" 0 OK
expect_resp "$out" 1 OK
grep -q '^bulk-in: 4096 bytes, all 0x5a: yes' <<<"$out" || fail "bulk read did not return the bulk write"
expect_resp "$out" 2 OK 0x5a5a5a5a5a5a5a5a

step "Fetch&Add from nodes 0 and 1 at once, $FAA each: exactly $((2 * FAA))"
C=$((A + 128))
raw 0 --tree $TREE "write:$C:0" >/dev/null
before=$(counter requests_fetch_add)
bg 0 faa "unimem-mbox-test --timeout 600 gsas-raw --node $HOME_NODE --tree $TREE --quiet --repeat $FAA fetch_add:$C:1"
bg 1 faa "unimem-mbox-test --timeout 600 gsas-raw --node $HOME_NODE --tree $TREE --quiet --repeat $FAA fetch_add:$C:1"
TIMEOUT=300 wait_log 0 faa '^exit=' 300
TIMEOUT=300 wait_log 1 faa '^exit=' 300
for n in 0 1; do
  on "$n" "cat /tmp/gsas-faa.log"
  on "$n" "grep -q '^summary: $FAA requests, OK=$FAA ' /tmp/gsas-faa.log && grep -q '^exit=0' /tmp/gsas-faa.log" ||
    fail "node $n: not every Fetch&Add was answered OK"
done
out=$(raw 0 --tree $TREE "read:$C")
expect_resp "$out" 0 OK $((2 * FAA))
expect_eq "$(( $(counter requests_fetch_add) - before ))" $((2 * FAA)) "fetch_add requests counted"

step "round trips: NOP and Fetch&Add, remote (node 0 -> $HOME_NODE) and local; the home's busy polling serves remote ones"
polled=$(on "$HOME_NODE" cat /sys/kernel/unimem_mailbox/busy_poll_packets)
skipped=$(on 0 cat /sys/kernel/unimem_mailbox/doorbells_skipped)
expect_eq "$(on "$HOME_NODE" cat /sys/kernel/unimem_mailbox/poll_us)" 200 "node $HOME_NODE's poll_us (the default)"
for n in 0 "$HOME_NODE"; do
  for req in nop "fetch_add:$C:1"; do
    r=$(on "$n" "unimem-mbox-test gsas-raw --node $HOME_NODE --tree $TREE --quiet --repeat 200 $req | tail -1")
    echo "node $n -> $HOME_NODE ${req%%:*}: $r"
  done
done
polled=$(( $(on "$HOME_NODE" cat /sys/kernel/unimem_mailbox/busy_poll_packets) - polled ))
echo "node $HOME_NODE served $polled requests while busy polling"
# 400 remote requests, each sent right after the previous answer: most arrive while the home
# polls (unless the host descheduled its vCPU); none would without polling. The debug kernel's
# lane sets UNIMEM_BUSY_POLL_MIN=0 (scripts/test.sh): its requests come too far apart.
min_polled=${UNIMEM_BUSY_POLL_MIN:-40}
[ "$polled" -ge "$min_polled" ] || fail "node $HOME_NODE served only $polled of 400 back-to-back remote requests by busy polling (want $min_polled)"
# While the home polls, node 0 does not ring its doorbell (the same speed property: not on the
# debug kernel's lane either).
skipped=$(( $(on 0 cat /sys/kernel/unimem_mailbox/doorbells_skipped) - skipped ))
echo "node 0 skipped $skipped doorbells"
[ "$skipped" -ge "$min_polled" ] || fail "node 0 skipped only $skipped doorbells to a polling home (want $min_polled)"
raw 0 --tree $TREE "write:$C:$((2 * FAA))" >/dev/null

step "another tree (a fresh one on node 1) is DENIED, counted, memory unchanged"
denied=$(counter denied)
out=$(raw 1 "write:$A:999" "read:$A" "fetch_add:$C:1" "free:$A" "bulk_read:$((A + 4000)):200")
echo "$out"
for k in 0 1 2 3 4; do expect_resp "$out" $k DENIED; done
expect_eq "$(counter denied)" $((denied + 5)) "denied counter"
out=$(raw 0 --tree $TREE "read:$A" "read:$C")
expect_resp "$out" 0 OK 0x1234
expect_resp "$out" 1 OK $((2 * FAA))
step "can fail: the owner's own write is not denied"
out=$(raw 0 --tree $TREE "write:$A:0x1234")
[ "$(status_of "$out" 0)" != DENIED ] || fail "the owner was denied"

step "bad requests: UNALIGNED, FAULT (unallocated, past the pool, other node, freed), INVALID"
faults=$(counter faults); invalid=$(counter invalid); unaligned=$(counter unaligned)
other=$(( (1 << 48) | (A & 0xffffffffffff) ))
out=$(raw 0 --tree $TREE "read:$((A + 4))" "read128:$((A + 8))" "read:$((A + 8192))" "read:$((A & ~0xffffffffffff))" \
  "read:$other" "0x7f:$A" "0x14:$A" "alloc:0:0" "alloc:0:0x10001" "bulk_read:$A:0" "bulk_read:$A:4097" \
  "free:$((A + 4096))" "free:$((A + 1))" "alloc:0:5000" "nop")
echo "$out"
expect_resp "$out" 0 UNALIGNED
expect_resp "$out" 1 UNALIGNED
expect_resp "$out" 2 FAULT      # the page after the allocation
expect_resp "$out" 3 FAULT      # offset 0 of the partition: the mailbox rings
expect_resp "$out" 4 FAULT      # node 1's address sent to node 2
expect_resp "$out" 5 INVALID    # unknown opcode
expect_resp "$out" 6 INVALID    # READ256 has no 32-bit width
expect_resp "$out" 7 INVALID    # 0 pages
expect_resp "$out" 8 INVALID    # more than MAX_ALLOC_PAGES
expect_resp "$out" 9 INVALID    # bulk of 0 bytes
expect_resp "$out" 10 INVALID   # bulk of more than a page
expect_resp "$out" 11 FAULT     # FREE of a page that does not start an allocation
expect_resp "$out" 12 UNALIGNED # FREE of an unaligned address
expect_resp "$out" 13 NO_MEMORY # more pages than the pool has
expect_resp "$out" 14 OK
expect_eq "$(counter faults)" $((faults + 4)) "fault counter"
expect_eq "$(counter invalid)" $((invalid + 6)) "invalid counter"
expect_eq "$(counter unaligned)" $((unaligned + 3)) "unaligned counter"

step "node 1 scribbles over node $HOME_NODE's mailbox rings (interface 63's included) for 6 s: the service keeps answering correctly"
malformed_before=$(on "$HOME_NODE" "sed -n 's/^malformed //p' /sys/kernel/debug/unimem_mailbox/stats")
bg 1 scribble "unimem-gas-test scribble --node $HOME_NODE --rings --seconds 6 --chase-ms 2000 --seed 7"
wait_log 1 scribble '^exit=' 60
on 1 "grep -q '^exit=0' /tmp/gsas-scribble.log" || { on_may_fail 1 "cat /tmp/gsas-scribble.log" >&2; fail "scribble failed"; }
malformed_after=$(on "$HOME_NODE" "sed -n 's/^malformed //p' /sys/kernel/debug/unimem_mailbox/stats")
echo "mailbox malformed on node $HOME_NODE: $malformed_before -> $malformed_after; service: malformed $(counter malformed), invalid $(counter invalid), unknown opcodes $(counter requests_unknown)"
[ "$malformed_after" -gt "$malformed_before" ] || fail "the scribbling reached no ring of node $HOME_NODE"
# The rings are shared memory: the scribbler also replays old slots (genuine requests of our
# tree) and forges headers, so the tree's memory may have changed; what must hold is that the
# service and the node keep working.
out=$(raw 0 --tree $TREE nop "write:$A:0x4321" "read:$A")
expect_resp "$out" 0 OK
expect_resp "$out" 2 OK 0x4321

step "unload is refused while pages are allocated"
! on_may_fail "$HOME_NODE" "rmmod unimem_gsas" 2>/dev/null || fail "rmmod succeeded with an allocation"
expect_eq "$(counter allocations)" 1 "allocations"

step "FREE by the owner; the freed pages FAULT and read zero when allocated again"
out=$(raw 0 --tree $TREE "free:$A" "read:$A" "free:$A" "alloc:0:2" "read:A" "read:A+4096" "read:A+200" "free:A")
echo "$out"
expect_resp "$out" 0 OK
expect_resp "$out" 1 FAULT
expect_resp "$out" 2 FAULT
expect_resp "$out" 3 OK
expect_resp "$out" 4 OK 0
expect_resp "$out" 5 OK 0
expect_resp "$out" 6 OK 0
expect_resp "$out" 7 OK
expect_eq "$(counter allocations)" 0 "allocations after FREE"
expect_eq "$(counter used_pages)" 0 "used pages after FREE"
on "$HOME_NODE" "cat /sys/kernel/debug/unimem_gsas/stats"

step "FREE of 8 MiB: answered at once, zeroed by a work item after; the pages are nobody's until then"
# Zeroing 8 MiB inside the mailbox's served section would hold up every other request there.
later=$(counter zeroed_later)
out=$(raw 0 --tree $TREE "alloc:0:2048" "write:A+5000:0x77" "write:A+8380000:0x78" "free:A" "read:A+5000")
echo "$out"
expect_resp "$out" 0 OK
expect_resp "$out" 3 OK
expect_resp "$out" 4 FAULT
expect_eq "$(counter zeroed_later)" $((later + 1)) "freed allocations zeroed by the work"
# Once zeroed, the whole pool is free again: allocated at once, it reads zero where the data was.
for _ in $(seq 50); do
  [ "$(counter used_pages)" = 0 ] && break
  sleep 0.2
done
expect_eq "$(counter used_pages)" 0 "used pages once the zeroing work is done"
out=$(raw 0 --tree $TREE "alloc:0:4096" "read:A+5000" "read:A+8380000" "free:A")
echo "$out"
expect_resp "$out" 0 OK
expect_resp "$out" 1 OK 0
expect_resp "$out" 2 OK 0
expect_resp "$out" 3 OK
# Unload is refused until freed pages are zeroed (the module reference stays with them).
for _ in $(seq 50); do
  [ "$(counter used_pages)" = 0 ] && break
  sleep 0.2
done
expect_eq "$(counter used_pages)" 0 "used pages once the whole pool's free is zeroed"

step "unload returns the pool: the daemon shows 0 lent"
on "$HOME_NODE" "rmmod unimem_gsas && ! test -e $SYS && dmesg | tail -3 | grep 'returned'"
all_free || fail "the pool was not returned"

step "no answer without the service (the request waits in the ring, the client times out)"
! on_may_fail 0 "unimem-mbox-test gsas-raw --node $HOME_NODE --wait-ms 1500 nop" 2>/dev/null || fail "answered without a service"

step "device removal: node 0's mapped response slots are zapped (SIGBUS), node $HOME_NODE's service stops and unloads"
on "$HOME_NODE" "insmod $KO $GSAS_ARGS"
out=$(raw 0 --tree $TREE alloc:0:1)
expect_resp "$out" 0 OK
bg 0 watch "unimem-mbox-test --timeout 0 gsas-raw --node $HOME_NODE --then-watch 300 nop"
wait_log 0 watch '^watching'
for n in 0 "$HOME_NODE"; do
  addr=$(on "$n" "ls $DRV | grep -m1 '^0000:'")
  TIMEOUT=240 on "$n" "echo $addr > $DRV/unbind"
  echo "node $n: unbound $addr"
done
wait_log 0 watch '^exit=' 30
on 0 "cat /tmp/gsas-watch.log"
on 0 "grep -q '^exit=135' /tmp/gsas-watch.log" || fail "the process with the zapped mapping did not die of SIGBUS"
on "$HOME_NODE" "dmesg | grep -E 'unimem_gsas: fabric device go'"
on "$HOME_NODE" "dmesg | grep -q 'unimem_gsas: fabric device going: 1 GSAS allocations (1 pages) are lost'" ||
  fail "node $HOME_NODE did not report the allocation lost with the device"
on "$HOME_NODE" "rmmod unimem_gsas && rmmod unimem_mailbox"
on 0 "rmmod unimem_mailbox"
for n in 0 "$HOME_NODE"; do
  rebind "$n"
  load_base "$n"
done
step "after rebinding, the service works again"
# The daemon lost its mailbox with the device. Its successor restores the lost pool's lease from
# the state file and hands the same range to the reloaded service (a repeated REQUEST), which
# frees it at unload: nothing stays lent for the next test's daemon.
on "$HOME_NODE" "killall kram-daemon 2>/dev/null; for i in \$(seq 150); do pidof kram-daemon >/dev/null || exit 0; sleep 0.2; done; exit 1" ||
  fail "node $HOME_NODE's kram-daemon did not exit"
kram_daemon "$HOME_NODE" --chunks 64 --offer-timeout 6
daemon_serving "$HOME_NODE"
on "$HOME_NODE" "insmod $KO $GSAS_ARGS"
out=$(raw 0 --tree $TREE alloc:0:1 write:A:77 read:A free:A)
expect_resp "$out" 2 OK 77
expect_resp "$out" 3 OK
on "$HOME_NODE" "rmmod unimem_gsas"
all_free || fail "the pool lost with the device stayed lent"

step "no kernel warnings"
for n in $(seq 0 $((NODES - 1))); do
  dmesg_clean "$n" "${marks[$n]}" || fail "node $n logged a kernel warning"
done
echo "gsas_service: all checks passed"
