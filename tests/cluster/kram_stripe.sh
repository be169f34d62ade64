#!/usr/bin/env bash
# GiB-scale KRAM (issue 9): a 2 GiB instance, more than any one lender's partition holds, is
# assembled from two lenders over protocol v2 and passes fio --verify; the lenders lend what
# `kram-daemon --lend SIZE|PERCENT` allows. Needs partitions of more than 1 GiB: scripts/test.sh
# gives the test cluster a 4 GiB GAS (UNIMEM_GAS_SIZE).
source "$(dirname "$0")/lib.sh"
MODS=/opt/unimem/modules
BG=stripe
[ "$NODES" -ge 3 ] || fail "needs at least 3 nodes"
trap 'bg_cleanup; kram_cleanup' EXIT

for n in $(seq 0 $((NODES - 1))); do
  on "$n" "lsmod | grep -q '^unimem_eusrvmem' || insmod $MODS/unimem_eusrvmem.ko
           lsmod | grep -q '^unimem_mailbox' || insmod $MODS/unimem_mailbox.ko
           killall kram-daemon 2>/dev/null; rm -f /run/kram-daemon.state; true"
done

part_mib=$(( $(on 1 "cat /sys/class/misc/eusrvmem/partition_size") >> 20 ))
[ "$part_mib" -gt 1100 ] || fail "partitions of $part_mib MiB: kram_stripe needs more than 1 GiB (UNIMEM_GAS_SIZE=4G)"

step "bad --lend values are refused with a clear error"
for bad in 0 0% 101% 64T 12Q; do
  ! on_may_fail 1 "kram-daemon --lend $bad --log-file - >/tmp/lend.out 2>&1" || fail "kram-daemon accepted --lend $bad"
  on 1 "grep -qi 'lend' /tmp/lend.out" || { on 1 "cat /tmp/lend.out"; fail "no message naming --lend for $bad"; }
done

step "node 1 lends 1100 MiB, node 2 lends 75% of its lendable memory"
bg 1 daemon "kram-daemon --lend 1100M --log-file /tmp/kram-daemon.log"
bg 2 daemon "kram-daemon --lend 75% --log-file /tmp/kram-daemon.log"
total() { on "$1" "kram-daemon --status | sed -n 's/^free \([0-9]*\), offered \([0-9]*\), lent \([0-9]*\)$/\1 \2 \3/p' | awk '{print \$1 + \$2 + \$3}'"; }
for n in 1 2; do
  on "$n" "for i in \$(seq 50); do kram-daemon --status >/dev/null 2>&1 && exit 0; sleep 0.2; done; exit 1" || fail "no daemon on node $n"
done
expect_eq "$(total 1)" 1100 "chunks in node 1's table"
t2=$(total 2)
lendable=$((part_mib - 3))
[ "$t2" -ge $((lendable * 75 / 100 - 1)) ] && [ "$t2" -le $((lendable * 75 / 100 + 1)) ] ||
  fail "node 2 lends $t2 chunks, expected 75% of $lendable"

step "a 2 GiB swap instance striped over both lenders"
on 0 "insmod $MODS/unimem_kram.ko ninstances=1 size=2048"
on 0 "for i in \$(seq 150); do test -b /dev/kram0 && exit 0; sleep 0.2; done; cat /sys/kernel/debug/unimem_kram/stats; dmesg | tail; exit 1" ||
  fail "/dev/kram0 (2 GiB) did not appear"
on 0 "cat /sys/kernel/debug/unimem_kram/stats"
expect_eq "$(on 0 cat /sys/block/kram0/size)" $((2048 * 2048)) "sectors of /dev/kram0"
expect_eq "$(on 0 "grep -c '^  node [12] chunks .*: valid' /sys/kernel/debug/unimem_kram/stats")" 2 "parts of kram0 (one per lender)"
lent() { on "$1" "kram-daemon --status | sed -n 's/^free [0-9]*, offered [0-9]*, lent \([0-9]*\)$/\1/p'"; }
expect_eq "$(( $(lent 1) + $(lent 2) ))" 2048 "chunks lent by nodes 1 and 2 together"

step "fio --verify over all 2 GiB (both parts, across the boundary)"
TIMEOUT=1200 on 0 "fio --name=stripe --filename=/dev/kram0 --rw=randwrite --bs=64k --direct=1 --ioengine=psync \
        --verify=crc32c --do_verify=1 --size=100% --output-format=terse --terse-version=3 > /tmp/fio-stripe.out 2>&1" ||
  { on 0 "cat /tmp/fio-stripe.out"; fail "fio verify failed on the 2 GiB device"; }
on 0 "awk -F';' '{ if (\$5 != 0) exit 1 }' /tmp/fio-stripe.out" || fail "fio reported errors"

step "unload returns both parts, wiped"
on 0 "rmmod unimem_kram"
for n in 1 2; do
  on "$n" "for i in \$(seq 50); do kram-daemon --status | grep -q ', lent 0$' && exit 0; sleep 0.2; done; kram-daemon --status; exit 1" ||
    fail "node $n still lends after the unload"
  on "$n" "unimem-gas zeroed --node $n --offset $((3 << 20)) --len $(( $(total "$n") << 20 ))" >/dev/null || fail "node $n's chunks are not zero"
  on "$n" "killall -TERM kram-daemon"
done
echo "kram_stripe: all checks passed"
