#!/usr/bin/env bash
# KRAM mirroring (issue 9, beyond the seed): `mirror=1` keeps an instance on two lenders (96 MiB:
# the swap the 1.5x-RAM workload needs, with room).
# Node 0 swaps to a mirrored device whose copies lie on nodes 1 and 3 and runs a workload
# larger than its RAM that verifies every byte; node 3's VM is killed in the middle and the
# fabric poisons its partition (its memory went away). Reads fail over to node 1's copy, the
# lost copy is mirrored again onto node 2, and the workload loses nothing. Needs 4 nodes.
source "$(dirname "$0")/lib.sh"
MODS=/opt/unimem/modules
BG=mirror
[ "$NODES" -ge 4 ] || fail "needs at least 4 nodes (scripts/test.sh starts 4)"
trap 'bg_cleanup; kram_cleanup' EXIT

daemon() { local n=$1; shift; kram_daemon "$n" --lend 100M "$@"; }
stats() { on 0 "cat /sys/kernel/debug/unimem_kram/stats"; }
parts_on() { on 0 "grep -c '^  node $1 chunks .* copy [AB] at 0 MiB: valid (' /sys/kernel/debug/unimem_kram/stats || true"; }

for n in $(seq 0 $((NODES - 1))); do load_base "$n"; on "$n" "killall kram-daemon 2>/dev/null; rm -f /run/kram-daemon.state; true"; done

mark=$(dmesg_mark 0)
step "node 0 gets a 96 MiB instance mirrored on nodes 1 and 3"
daemon 1
daemon 3
on 0 "insmod $MODS/unimem_kram.ko ninstances=1 size=96 mirror=1"
on 0 "for i in \$(seq 100); do test -b /dev/kram0 && exit 0; sleep 0.2; done; exit 1" || { stats; fail "/dev/kram0 did not appear"; }
stats
expect_eq "$(parts_on 1)" 1 "copies on node 1"
expect_eq "$(parts_on 3)" 1 "copies on node 3"
daemon 2

step "fio --verify on the mirrored device"
on 0 "fio --name=m --filename=/dev/kram0 --rw=randwrite --bs=4k --direct=1 --ioengine=psync --verify=crc32c \
        --do_verify=1 --size=100% --output-format=terse --terse-version=3 > /tmp/fio-m.out 2>&1" ||
  { on 0 "cat /tmp/fio-m.out"; fail "fio verify failed on the mirrored device"; }

step "swap on it, a verifying workload 1.5x RAM; node 3 killed and poisoned in the middle"
on 0 "mkswap /dev/kram0 >/dev/null && swapon /dev/kram0 && echo 8192 > /proc/sys/vm/min_free_kbytes"
ram_mib=$(( $(on 0 "awk '/^MemTotal/ {print \$2}' /proc/meminfo") / 1024 ))
work=$(( ram_mib * 3 / 2 ))
read -r work _ <<<"$(swap_work 0 "$work" 0)"
bg 0 work "for i in 1 2 3 4; do unimem-memtest --mib $work --seed \$i >/tmp/$BG-memtest.log 2>&1 || { cat /tmp/$BG-memtest.log; exit 1; }; echo round \$i verified; done"
wait_log 0 work 'round 1 verified' 300
"$CLUSTER" kill 3 --poison
t0=$SECONDS
on 0 "for i in \$(seq 150); do grep -q '^  node 2 chunks .* copy [AB] at 0 MiB: valid (' /sys/kernel/debug/unimem_kram/stats && exit 0; sleep 0.2; done; exit 1" ||
  { stats; fail "the lost copy was not mirrored again onto node 2 within 30 s"; }
echo "mirrored again onto node 2 $((SECONDS - t0)) s after node 3 was lost"
TIMEOUT=900 on 0 "while test -f /tmp/$BG-work.pid; do sleep 1; done"
on 0 "cat /tmp/$BG-work.log"
on 0 "grep -qx 'exit=0' /tmp/$BG-work.log" || fail "the workload lost data when a mirror's lender died"
stats
on 0 "grep -q '^kram0 96 MiB: 96 MiB lent, ready, failovers' /sys/kernel/debug/unimem_kram/stats" || fail "kram0 is not whole again"
dmesg_clean 0 "$mark" || fail "kernel errors on node 0"

step "swapoff reads every page back; unload returns both copies"
on 0 "swapoff /dev/kram0 && rmmod unimem_kram"
for n in 1 2; do
  on "$n" "for i in \$(seq 25); do kram-daemon --status | grep -q ', lent 0$' && exit 0; sleep 0.2; done; kram-daemon --status; exit 1" ||
    fail "node $n still lends after the unload"
  on "$n" "killall -TERM kram-daemon"
done
"$CLUSTER" start 3
echo "kram_mirror: all checks passed"
