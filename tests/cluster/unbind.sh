#!/usr/bin/env bash
# Device removal (issue 16): the fabric device is unbound from unimem_eusrvmem on a node whose
# mailbox has a sleeping receiver, whose KRAM disk is active swap, whose NUMA node holds lent
# memory and where a process has the window mapped through /dev/eusrvmem. The node must not
# oops: the clients are told first (NUMA migrates its range back and returns it, KRAM fails
# requests with I/O errors, the mailbox fails with ENODEV and wakes its sleepers), the user
# mapping is zapped (the process dies of SIGBUS on its next access), every module unloads, the
# lender gets all its memory back, and binding the device again gives a working node. Also: a
# mapping of memory that becomes this node's RAM (NUMA hot-add) is zapped at the hot-add.
source "$(dirname "$0")/lib.sh"
MODS=/opt/unimem/modules
DRV=/sys/bus/pci/drivers/unimem_eusrvmem
B=0 L=2
[ "$NODES" -ge 3 ] || fail "needs at least 3 nodes"
BG=unbind
lent() { on "$1" "kram-daemon --status | sed -n 's/^free [0-9]*, offered [0-9]*, lent \([0-9]*\)$/\1/p'"; }
# On failure: ranges removed, swap off, modules out, and the device bound again.
cleanup() {
  bg_cleanup
  "$CLUSTER" exec $B --timeout 120 -- "echo remove all > /proc/unimem_numa 2>/dev/null; swapoff -a
    rmmod unimem_numa unimem_kram 2>/dev/null
    ls $DRV | grep -q '^0000:' || for d in /sys/bus/pci/devices/*; do
      [ \"\$(cat \$d/vendor):\$(cat \$d/device)\" = 0x1af4:0x1110 ] && echo \${d##*/} > $DRV/bind
    done; true" >/dev/null 2>&1
  kram_cleanup
}
trap cleanup EXIT

step "node $B: mailbox, KRAM swap and NUMA memory from node $L's kram-daemon"
for n in $B $L; do load_base "$n"; done
kram_daemon $L --no-state
on $B "insmod $MODS/unimem_kram.ko ninstances=1 size=16"
on $B "for i in \$(seq 100); do [ -b /dev/kram0 ] && exit 0; sleep 0.2; done; exit 1" || fail "no /dev/kram0"
on $B "mkswap /dev/kram0 >/dev/null && swapon /dev/kram0 && grep -q '^/dev/kram0' /proc/swaps"
# A process that maps node $L's lendable memory before part of it becomes node $B's RAM
# loses the mapping at the hot-add (SIGBUS at its next read).
bg $B lendable "unimem-gas watch --node $L --offset $((3 << 20)) --len $((1024 << 20)) --seconds 300"
wait_log $B lendable '^watching'
on $B "insmod $MODS/unimem_numa.ko && echo add $L > /proc/unimem_numa"
wait_log $B lendable '^exit=' 20
on $B "grep -q '^exit=135' /tmp/$BG-lendable.log" ||
  { on_may_fail $B "cat /tmp/$BG-lendable.log" >&2; fail "a mapping of memory hot-added as RAM survived"; }
! on_may_fail $B "unimem-gas watch --node $L --offset $((3 << 20)) --len $((1024 << 20)) --seconds 1 2>&1" ||
  fail "/dev/eusrvmem mapped memory that is this node's RAM"
on $B "grep -q '^range lender $L ' /proc/unimem_numa" || { on_may_fail $B "cat /proc/unimem_numa; dmesg | tail" >&2; fail "no NUMA range from node $L"; }
before=$(lent $L)
echo "node $L lends $before MiB"
[ "$before" -ge 144 ] || fail "node $L lends $before MiB, expected the 16 MiB disk and a 128 MiB range"
addr=$(on $B "ls $DRV | grep -m1 '^0000:'")
[ -n "$addr" ] || fail "unimem_eusrvmem is bound to no device"

step "a sleeping mailbox receiver and a process with the window mapped"
bg $B serve "unimem-mbox serve --count 1"
wait_log $B serve '^iface [0-9]+ node '
bg $B watch "unimem-gas watch --node $L --seconds 300"
wait_log $B watch '^watching'
on $B "test -f /tmp/$BG-watch.pid" || { on_may_fail $B "cat /tmp/$BG-watch.log" >&2; fail "the mapping process did not start"; }
mark=$(dmesg_mark $B)

step "unbind $addr on node $B"
TIMEOUT=240 on $B "echo $addr > $DRV/unbind"
on $B "! test -e $DRV/$addr && ! test -e /dev/eusrvmem" || fail "the device is still bound"
on $B "dmesg | tail -n +$((mark + 1)) | grep -E 'unimem|Oops|BUG|WARNING'"
dmesg_clean $B "$mark" || fail "node $B logged an error while unbinding"
on $B "dmesg | tail -n +$((mark + 1)) | grep -q 'offline and returned to node $L'" || fail "NUMA did not return its range before the device went"

step "clean errors afterwards"
wait_log $B serve '^exit=' 20
on $B "grep -q '^exit=[1-9]' /tmp/$BG-serve.log && grep -qi 'no such device' /tmp/$BG-serve.log" ||
  { on_may_fail $B "cat /tmp/$BG-serve.log" >&2; fail "the sleeping receiver did not fail with ENODEV"; }
wait_log $B watch '^exit=' 20
on $B "grep -q '^exit=135' /tmp/$BG-watch.log" ||
  { on_may_fail $B "cat /tmp/$BG-watch.log" >&2; fail "the process with the window mapped did not get SIGBUS"; }
out=$(on_may_fail $B "unimem-mbox info 2>&1" || true)
echo "unimem-mbox info: $out"
grep -qi 'no such device' <<<"$out" || fail "unimem-mbox info did not fail with ENODEV"
! on_may_fail $B "dd if=/dev/kram0 of=/dev/null bs=4k count=1 iflag=direct 2>/dev/null" || fail "a read of /dev/kram0 succeeded without the fabric"
on $B "echo add $L > /proc/unimem_numa" 2>/dev/null && fail "NUMA accepted an add without the fabric"
on $B "! grep -q '^range lender $L ' /proc/unimem_numa"
on $B "echo 3 > /proc/sys/vm/drop_caches; ls / >/dev/null; cat /proc/meminfo | head -2"
on $B "dmesg | tail -n +$((mark + 1)) | grep -q 'I/O error, dev kram0'" || fail "the failed read was not logged as an I/O error"
# The I/O error above is expected; from here on, nothing may be logged.
mark=$(dmesg_mark $B)

step "everything unloads; node $L gets all its memory back"
on $B "swapoff /dev/kram0 && rmmod unimem_numa && rmmod unimem_kram && rmmod unimem_mailbox"
for _ in $(seq 40); do [ "$(lent $L)" = 0 ] && break; sleep 1; done
expect_eq "$(lent $L)" 0 "MiB node $L still lends after node $B's unbind (leases lapse after 20 s)"
# Pages that were on the swap device when the fabric went (the NUMA range's pages migrating back
# can push some there) are lost: swapoff's reads of them fail, and the kernel logs each. Any
# other error, or any kernel warning, fails the test.
on $B "dmesg | tail -n +$((mark + 1)) | grep -cE 'Read-error on swap-device \(259:0:' || true" | sed 's/^/swapped pages lost with the device: /'
on $B "! dmesg | tail -n +$((mark + 1)) | grep -E 'BUG|Oops|WARNING|I/O error|Read-error' | grep -vE 'I/O error, dev kram0, |Read-error on swap-device \(259:0:'" ||
  fail "node $B logged an error while unloading"

step "bind again: the node works"
mark=$(dmesg_mark $B)  # the swap read errors of the unload step are counted there
on $B "echo $addr > $DRV/bind && test -c /dev/eusrvmem"
on $B "unimem-gas info | grep -x 'node_id: $B' >/dev/null"
on $B "insmod $MODS/unimem_mailbox.ko"
bg $L srv "unimem-mbox serve --count 5"
wait_log $L srv '^iface [0-9]+ node '
iface=$(on $L "sed -n 's/^iface \([0-9]*\) node .*/\1/p' /tmp/$BG-srv.log | head -1")
out=$(on $B "unimem-mbox ping --node $L --iface $iface --count 5 --size 25")
grep -q "^ok: 5 echoes intact" <<<"$out" || { echo "$out" >&2; fail "no mailbox after rebinding"; }
# With the engine the fabric offers again, then as a bio-based disk.
for mode in 1 0; do
  on $B "insmod $MODS/unimem_kram.ko ninstances=1 size=16 transfermode=$mode"
  on $B "for i in \$(seq 100); do [ -b /dev/kram0 ] && exit 0; sleep 0.2; done; exit 1" ||
    fail "no /dev/kram0 after rebinding (transfermode=$mode)"
  on $B "dd if=/dev/urandom of=/tmp/x bs=1M count=4 2>/dev/null && dd if=/tmp/x of=/dev/kram0 bs=1M oflag=direct 2>/dev/null &&
         cmp -n 4194304 /tmp/x /dev/kram0 && rm /tmp/x" || fail "/dev/kram0 lost data after rebinding (transfermode=$mode)"
  on $B "rmmod unimem_kram"
done
on $B "rmmod unimem_mailbox"
dmesg_clean $B "$mark" || fail "node $B logged an error"
echo "unbind: no oops, clean errors, memory returned, rebind works"
