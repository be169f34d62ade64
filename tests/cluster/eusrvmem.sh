#!/usr/bin/env bash
# eusrvmem acceptance: distinct node ids, cross-node pattern through /dev/eusrvmem, doorbell
# counters, no private mappings, refusal to unload while in use, rmmod/insmod cycle.
source "$(dirname "$0")/lib.sh"
KO=/opt/unimem/modules/unimem_eusrvmem.ko
[ "$NODES" -ge 3 ] || fail "needs at least 3 nodes"

step "load unimem_eusrvmem on every node"
for n in $(seq 0 $((NODES - 1))); do
  on "$n" "lsmod | grep -q '^unimem_eusrvmem' || insmod $KO"
done

step "node ids are distinct and match the boot order; node count agrees"
for n in $(seq 0 $((NODES - 1))); do
  expect_eq "$(on "$n" cat /sys/class/misc/eusrvmem/node_id)" "$n" "node_id of node $n"
  expect_eq "$(on "$n" cat /sys/class/misc/eusrvmem/node_count)" "$NODES" "node_count seen by node $n"
done
on 0 unimem-gas info
out=$(on 2 "unimem-gas info --json")
echo "node 2: $out"
grep -q '"node_id":2[,}]' <<<"$out" && grep -q "\"node_count\":${NODES}[,}]" <<<"$out" ||
  fail "unimem-gas info --json on node 2 names another node or count"
grep -q '"partitions":\[{' <<<"$out" || fail "unimem-gas info --json has no partitions"

step "the physical address of the window is for root only; the layout for everyone"
expect_eq "$(on 0 stat -c %a /sys/class/misc/eusrvmem/gas_phys)" 400 "mode of gas_phys"
expect_eq "$(on 0 stat -c %a /sys/class/misc/eusrvmem/partition_size)" 444 "mode of partition_size"

step "node 0 writes a pattern into node 2's partition; node 2 reads it through its own mapping"
seed=$(( (RANDOM << 15) | RANDOM ))
len=$((4 << 20))
# The end of the partition: its start holds the mailbox rings and the chunks kram-daemon lends.
part=$(on 2 cat /sys/class/misc/eusrvmem/partition_size)
off=$(( part - 2 * len ))
on 0 unimem-gas write --node 2 --offset $off --len $len --seed $seed
# UNIMEM_TEST_BREAK_PATTERN makes the reader expect another pattern: the test must then fail.
check_seed=$seed
[ -z "${UNIMEM_TEST_BREAK_PATTERN:-}" ] || check_seed=$((seed + 1))
on 2 unimem-gas verify --node 2 --offset $off --len $len --seed $check_seed ||
  fail "node 2 did not read back node 0's pattern"
step "the check can fail: a wrong seed and a shifted range are rejected"
! on_may_fail 2 unimem-gas verify --node 2 --offset $off --len $len --seed $((seed + 1)) 2>/dev/null ||
  fail "verify accepted a wrong seed"
! on_may_fail 2 unimem-gas verify --node 2 --offset $((off - 4096)) --len $len --seed $seed 2>/dev/null ||
  fail "verify accepted a shifted range"

step "a doorbell from node 1 raises node 0's counter"
before=$(on 0 unimem-gas count --vector 0)
other_before=$(on 2 unimem-gas count --vector 0)
on 1 unimem-gas ring --node 0 --vector 0
after=$before
for _ in $(seq 50); do
  after=$(on 0 unimem-gas count --vector 0)
  [ "$after" -gt "$before" ] && break
  sleep 0.2
done
expect_eq "$after" "$((before + 1))" "node 0 doorbell count after one ring"
expect_eq "$(on 2 unimem-gas count --vector 0)" "$other_before" "node 2 count (the doorbell was for node 0)"

step "bad arguments are refused"
! on_may_fail 1 unimem-gas ring --node 99 --vector 0 2>/dev/null || fail "ring to node 99 accepted"
! on_may_fail 1 unimem-gas ring --node 0 --vector 99 2>/dev/null || fail "ring to vector 99 accepted"

step "a private (copy-on-write) mapping of /dev/eusrvmem is refused: no revocation could zap it"
share_bins unimem-isolation
on_may_fail 0 unimem-isolation map-private || fail "MAP_PRIVATE of /dev/eusrvmem was not refused with EINVAL"

step "unload is refused while /dev/eusrvmem is open"
on 0 "sleep 60 < /dev/eusrvmem > /dev/null 2>&1 & echo \$! > /tmp/holder"
sleep 1
! on_may_fail 0 rmmod unimem_eusrvmem 2>/dev/null || fail "rmmod succeeded with the device open"
on 0 'kill $(cat /tmp/holder); sleep 1'

step "rmmod/insmod cycle keeps the node id and sees the same GAS contents"
# A client module left by an earlier test would pin unimem_eusrvmem.
on 0 "if lsmod | grep -q '^unimem_mailbox'; then rmmod unimem_mailbox; fi"
for _ in 1 2; do
  on 0 rmmod unimem_eusrvmem
  on 0 "! test -e /dev/eusrvmem && ! test -e /sys/class/misc/eusrvmem"
  on 0 insmod $KO
  expect_eq "$(on 0 cat /sys/class/misc/eusrvmem/node_id)" 0 "node_id after reload"
done
on 0 unimem-gas verify --node 2 --offset $off --len $len --seed $seed
on 0 "dmesg | grep -i 'unimem_eusrvmem' | tail -3"

step "the emulated CDMA engine: one DMA_MEMCPY channel per CPU, cdma_channels=N, 0 for none"
channels() { on 0 "ls -d /sys/class/dma/dma*chan* 2>/dev/null | wc -l"; }
expect_eq "$(channels)" "$(on 0 nproc)" "CDMA channels by default (one per CPU)"
on 0 "dmesg | grep -q 'emulated CDMA engine: [0-9]* DMA_MEMCPY channel'" || fail "no log line for the CDMA engine"
for n in 3 0; do
  on 0 "rmmod unimem_eusrvmem && insmod $KO cdma_channels=$n"
  expect_eq "$(channels)" "$n" "CDMA channels with cdma_channels=$n"
done
on 0 "rmmod unimem_eusrvmem && insmod $KO && ! ls /sys/class/dma/dma*chan*/in_use | xargs grep -l 1"
echo "eusrvmem: all checks passed"
