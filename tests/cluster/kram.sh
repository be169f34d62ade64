#!/usr/bin/env bash
# KRAM acceptance (issue 4): the seed's insmod line on node 0 with kram-daemons on nodes 1 and 2,
# devices that appear once a lender answers, fio verify, swap on both devices, a verifying
# workload half again as large as node 0's RAM, chunks returned on swapoff + rmmod, the same
# with transfermode=0, an engine whose copies fail now and then (the CPU serves those requests
# again), the same with callbacks in hard IRQ context, and clear errors for bad parameters.
# Expects node 0 to have little RAM (scripts/test.sh starts it with --mem-of 0=96M).
source "$(dirname "$0")/lib.sh"
share_bins unimem-mbox-test
# A failed run leaves no swap, module or daemon to the next test.
trap kram_cleanup EXIT
MODS=/opt/unimem/modules
[ "$NODES" -ge 3 ] || fail "needs at least 3 nodes"

step "load unimem_eusrvmem and unimem_mailbox everywhere"
for n in $(seq 0 $((NODES - 1))); do
  on "$n" "lsmod | grep -q '^unimem_eusrvmem' || insmod $MODS/unimem_eusrvmem.ko
           lsmod | grep -q '^unimem_mailbox' || insmod $MODS/unimem_mailbox.ko"
done

step "bad parameters fail insmod with a message naming the parameter, and leave nothing"
bad() {
  local args=$1 pattern=$2
  ! on_may_fail 0 "insmod $MODS/unimem_kram.ko $args" 2>/dev/null || fail "insmod accepted '$args'"
  on 0 "dmesg | tail -3 | grep -q -- \"$pattern\"" || { on 0 "dmesg | tail -3"; fail "no '$pattern' message for '$args'"; }
  on 0 "! lsmod | grep -q '^unimem_kram' && ! ls /dev/kram* 2>/dev/null"
}
bad "ninstances=0 size=32" "ninstances=0"
bad "ninstances=17 size=32" "ninstances=17"
bad "ninstances=2 size=32" "size: 1 size(s) given for ninstances=2"
bad "ninstances=1 size=70000" "parameter .size"
bad "ninstances=1 size=32,x" "parameter .size"
bad "ninstances=1 size=32 transfermode=2" "transfermode=2"
bad "ninstances=1 size=32 stall_timeout=0" "stall_timeout=0"
# transfermode=1 (the default) needs a DMA_MEMCPY channel: none while unimem_eusrvmem offers
# no engine.
reload_fabric() {
  on 0 "rmmod unimem_mailbox && rmmod unimem_eusrvmem && insmod $MODS/unimem_eusrvmem.ko $1 &&
        insmod $MODS/unimem_mailbox.ko" || fail "could not reload unimem_eusrvmem $1 on node 0"
}
reload_fabric cdma_channels=0
bad "ninstances=1 size=32" "transfermode=1 needs a free DMA_MEMCPY channel"
reload_fabric ""

# lent NODE: "free F offered O lent L" of the daemon on NODE.
lent() { on "$1" "kram-daemon --status | sed -n 's/^free \([0-9]*\), offered \([0-9]*\), lent \([0-9]*\)$/\1 \2 \3/p'"; }
total_lent() { local a b; a=$(lent 1 | awk '{print $3}'); b=$(lent 2 | awk '{print $3}'); echo $(( ${a:-0} + ${b:-0} )); }
wait_disks() {
  on 0 "for i in \$(seq 75); do test -b /dev/kram0 && test -b /dev/kram1 && exit 0; sleep 0.2; done; dmesg | tail -5; exit 1" ||
    fail "/dev/kram0 and /dev/kram1 did not appear within 15 s"
}

# "copies cpu-copies failed-requests" of the driver's DMA engine line, empty without one.
dma_stats() {
  on 0 "sed -n 's/^dma channels .*: copies \([0-9]*\), by the CPU instead \([0-9]*\), failed requests \([0-9]*\)\$/\1 \2 \3/p' /sys/kernel/debug/unimem_kram/stats"
}

# fio_verify DEV WHEN: 4 KiB random writes over all of DEV, each read back and checked (crc32c);
# fails on a mismatch or any I/O error (WHEN completes the failure message).
fio_verify() {
  on 0 "fio --name=verify-$1 --filename=/dev/$1 --rw=randwrite --bs=4k --direct=1 --ioengine=psync \
          --verify=crc32c --do_verify=1 --size=100% --output-format=terse --terse-version=3 > /tmp/fio-$1.out 2>&1" ||
    { on 0 "cat /tmp/fio-$1.out"; fail "fio verify failed on /dev/$1$2"; }
  on 0 "awk -F';' '{ if (\$5 != 0) exit 1 }' /tmp/fio-$1.out" || fail "fio reported errors on /dev/$1$2"
}

cycle() {
  local mode=$1
  step "transfermode=$mode: the seed's insmod line, then lenders"
  on 0 "insmod $MODS/unimem_kram.ko ninstances=2 size=32,64 transfermode=$mode"
  if [ "$mode" = 1 ]; then
    sleep 3
    on 0 "! test -e /dev/kram0" || fail "/dev/kram0 exists although no daemon runs"
    for n in 1 2; do
      on "$n" "kram-daemon --chunks 128 >/dev/null 2>&1 &"
      on "$n" "for i in \$(seq 50); do kram-daemon --status >/dev/null 2>&1 && exit 0; sleep 0.2; done; exit 1" ||
        fail "kram-daemon did not start on node $n"
    done
  fi
  wait_disks
  expect_eq "$(on 0 cat /sys/block/kram0/size)" 65536 "sectors of /dev/kram0 (32 MiB)"
  expect_eq "$(on 0 cat /sys/block/kram1/size)" 131072 "sectors of /dev/kram1 (64 MiB)"
  [ "$(total_lent)" = 96 ] || { on 1 "kram-daemon --status"; on 2 "kram-daemon --status"; } >&2
  expect_eq "$(total_lent)" 96 "chunks lent by nodes 1 and 2"
  on 0 "cat /sys/kernel/debug/unimem_kram/stats"
  expect_eq "$(on 0 cat /sys/kernel/unimem_kram/lent_mib)" 96 "/sys/kernel/unimem_kram/lent_mib"
  expect_eq "$(on 0 cat /sys/kernel/unimem_kram/instances_ready)" 2 "/sys/kernel/unimem_kram/instances_ready"
  for d in kram0 kram1; do
    expect_eq "$(on 0 cat /sys/block/$d/queue/iostats)" 0 "queue/iostats of /dev/$d (no I/O accounting)"
    if [ "$mode" = 1 ]; then
      expect_eq "$(on 0 "sed -n 's/.*\\[\\(.*\\)\\].*/\\1/p' /sys/block/$d/queue/scheduler")" none "I/O scheduler of /dev/$d"
      expect_eq "$(on 0 "ls /sys/block/$d/mq | wc -l")" "$(on 0 nproc)" "hardware queues of /dev/$d (one per CPU)"
    else
      # Bio-based, as brd: no blk-mq queues and no I/O scheduler.
      on 0 "! test -e /sys/block/$d/mq && ! test -e /sys/block/$d/queue/scheduler" ||
        fail "/dev/$d has blk-mq queues or a scheduler with transfermode=0 (bio-based, as brd)"
    fi
    expect_eq "$(on 0 cat /sys/block/$d/queue/max_hw_sectors_kb)" 1024 "largest request of /dev/$d (KiB)"
    # A discard is zeroed with preemption off: no larger than a read or write.
    expect_eq "$(on 0 cat /sys/block/$d/queue/discard_max_hw_bytes)" $((1 << 20)) "largest discard of /dev/$d (bytes)"
  done
  on 0 "grep -q '^kram0 32 MiB: 32 MiB lent, ready' /sys/kernel/debug/unimem_kram/stats && grep -q '^  node [12] chunks [0-9]*+32 at 0 MiB: valid' /sys/kernel/debug/unimem_kram/stats" || fail "driver stats do not show kram0's valid lease"
  step "transfermode=$mode: a malformed OFFER (reserved bits set) is counted and dropped by the driver"
  m0=$(on 0 "sed -n 's/.*malformed \([0-9]*\).*/\1/p' /sys/kernel/debug/unimem_kram/stats")
  on 1 "unimem-mbox-test kping --node 0 --service 1 --opcode 1 --no-echo --count 1" >/dev/null
  m1=$m0
  for _ in $(seq 25); do
    m1=$(on 0 "sed -n 's/.*malformed \([0-9]*\).*/\1/p' /sys/kernel/debug/unimem_kram/stats")
    [ "$m1" -gt "$m0" ] && break; sleep 0.2
  done
  expect_eq "$m1" "$((m0 + 1))" "malformed daemon messages counted by unimem_kram"
  expect_eq "$(on 0 cat /sys/kernel/unimem_kram/malformed)" "$m1" "/sys/kernel/unimem_kram/malformed"
  on 0 "test -b /dev/kram0 && test -b /dev/kram1" || fail "a malformed message disturbed the devices"

  step "transfermode=$mode: fio --verify=crc32c over both devices"
  for d in kram0 kram1; do
    fio_verify "$d" ""
  done
  # transfermode=1: the engine's channels did the copies (a 4 KiB write and its verifying read
  # per block of both devices), none failed, and the CPU stood in for almost none.
  read -r copies cpu failed <<<"$(dma_stats)"
  if [ "$mode" = 1 ]; then
    echo "DMA engine: $copies copies, $cpu by the CPU instead, $failed failed requests"
    [ "${copies:-0}" -ge $(( 2 * 96 * 256 )) ] || fail "the DMA engine did ${copies:-no} copies for 96 MiB written and read"
    expect_eq "$failed" 0 "requests whose DMA copy failed"
    [ "$cpu" -le $(( copies / 100 )) ] || fail "the CPU copied $cpu segments instead of the engine"
    expect_eq "$(on 0 "cat /sys/class/dma/*/in_use | sort -u | tr '\n' ' '")" "1 " "in_use of the engine's channels (KRAM takes one per CPU)"
  else
    [ -z "$copies" ] || fail "transfermode=0 used a DMA engine"
  fi

  step "transfermode=$mode: I/O accounting, off by default, counts while queue/iostats is 1"
  # Reads 64 blocks of kram0 and writes them back unchanged, direct: 64 reads and 64 writes.
  rw64() { on 0 "dd if=/dev/kram0 of=/dev/kram0 bs=4k count=64 iflag=direct oflag=direct conv=notrunc status=none" ||
             fail "dd on /dev/kram0 failed"; }
  iostat() { on 0 "awk '{print \$1, \$5, \$9}' /sys/block/kram0/stat"; }
  read -r r0 w0 _ <<<"$(iostat)"
  rw64
  expect_eq "$(iostat)" "$r0 $w0 0" "reads, writes and in-flight of /dev/kram0 with iostats 0"
  on 0 "echo 1 > /sys/block/kram0/queue/iostats"
  rw64
  read -r r1 w1 inflight <<<"$(iostat)"
  on 0 "echo 0 > /sys/block/kram0/queue/iostats"
  [ "$((r1 - r0))" -ge 64 ] && [ "$((w1 - w0))" -ge 64 ] ||
    fail "iostats 1: /dev/kram0 counted $((r1 - r0)) reads and $((w1 - w0)) writes for 64 of each"
  expect_eq "$inflight" 0 "I/O in flight on /dev/kram0 after it ended (every accounted bio ended its accounting)"

  step "transfermode=$mode: discard (a request without data) zeroes its range and nothing else"
  # fio left random data everywhere; discard MiB 1-3 of kram0 and check MiB 0-4.
  nonzero() { on 0 "dd if=/dev/kram0 bs=1M skip=$1 count=1 iflag=direct 2>/dev/null | tr -d '\\000' | wc -c"; }
  # Three MiB in one call: the block layer splits it into 1 MiB requests (discard_max_hw_bytes).
  on 0 "blkdiscard -o $((1 << 20)) -l $((3 << 20)) /dev/kram0" || fail "blkdiscard failed on /dev/kram0"
  for mib in 1 2 3; do expect_eq "$(nonzero $mib)" 0 "non-zero bytes left in discarded MiB $mib"; done
  for mib in 0 4; do [ "$(nonzero $mib)" -gt 0 ] || fail "discard zeroed MiB $mib too"; done

  step "transfermode=$mode: swap on both, a verifying workload 1.5x node 0's RAM"
  on 0 "mkswap /dev/kram0 >/dev/null && mkswap /dev/kram1 >/dev/null && swapon /dev/kram0 && swapon /dev/kram1"
  # A 96 MiB node's default reserve (~1 MiB) leaves kswapd nothing to allocate its swap tables
  # from under this much pressure; give reclaim the headroom a larger machine has anyway.
  on 0 "echo 8192 > /proc/sys/vm/min_free_kbytes"
  ram_kib=$(on 0 "awk '/^MemTotal/ {print \$2}' /proc/meminfo")
  work_mib=$(( (ram_kib * 3 / 2 + 1023) / 1024 ))
  read -r work_mib excess_mib <<<"$(swap_work 0 "$work_mib" $(( work_mib - ram_kib / 1024 )))"
  ! on_may_fail 0 rmmod unimem_kram 2>/dev/null || fail "rmmod succeeded while the devices are swap"
  on 0 "grep pswpout /proc/vmstat" > /tmp/kram-before.$$
  TIMEOUT=900 on 0 "unimem-memtest --mib $work_mib --seed $RANDOM" ||
    fail "the ${work_mib} MiB workload failed or did not verify"
  out=$(( $(on 0 "awk '/pswpout/ {print \$2}' /proc/vmstat") - $(awk '{print $2}' /tmp/kram-before.$$) ))
  rm -f /tmp/kram-before.$$
  echo "workload ${work_mib} MiB on ${ram_kib} KiB RAM: $out pages swapped out; where they went:"
  on 0 "cat /proc/swaps"
  for n in 1 2; do on "$n" "kram-daemon --status | sed -n '2,4p'"; done
  [ "$out" -gt $(( excess_mib * 256 / 2 )) ] || fail "too little was swapped out ($out pages) for a workload larger than RAM"

  step "transfermode=$mode: swapoff + rmmod return every chunk, wiped"
  on 0 "swapoff /dev/kram0 && swapoff /dev/kram1 && rmmod unimem_kram && ! test -e /dev/kram0"
  expect_eq "$(on 0 "cat /sys/class/dma/*/in_use | sort -u | tr '\n' ' '")" "0 " "in_use of the engine's channels after rmmod"
  for _ in $(seq 25); do [ "$(total_lent)" = 0 ] && break; sleep 0.2; done
  expect_eq "$(total_lent)" 0 "chunks still lent after rmmod"
  for n in 1 2; do expect_eq "$(lent "$n" | awk '{print $1}')" 128 "free chunks on node $n"; done
  for n in 1 2; do
    on "$n" "unimem-gas zeroed --node $n --offset $((3 << 20)) --len $((128 << 20))" >/dev/null ||
      fail "node $n's lent chunks were not wiped when they came back"
  done
}
cycle 1
cycle 0

step "an engine that fails every 5th copy: the CPU serves those requests again, fio verifies"
reload_fabric cdma_fail_every=5
on 0 "insmod $MODS/unimem_kram.ko ninstances=2 size=32,64 transfermode=1"
wait_disks
fio_verify kram0 " with failing copies"
read -r copies cpu failed <<<"$(dma_stats)"
echo "DMA engine failing every 5th copy: $copies copies, $cpu by the CPU instead, $failed requests served again"
# 32 MiB written and read back in 4 KiB requests: about a fifth of 2 * 8192 copies failed.
[ "${failed:-0}" -ge $(( 2 * 8192 / 5 / 2 )) ] || fail "only ${failed:-no} requests saw a failed copy"
on 0 "rmmod unimem_kram"
reload_fabric ""

step "an engine whose callbacks run in hard IRQ context, failing every 7th copy: fio verifies"
# A board's engine may complete in its interrupt handler. On the debug kernel (scripts/test.sh
# --debug-kernel) lockdep and DEBUG_ATOMIC_SLEEP watch that path: a lock also taken with
# interrupts on, or anything that sleeps, is a report there.
mark=$(dmesg_mark 0)
reload_fabric "cdma_fail_every=7 cdma_hardirq=1"
on 0 "insmod $MODS/unimem_kram.ko ninstances=2 size=32,64 transfermode=1"
wait_disks
fio_verify kram0 " with completions in hard IRQ context"
read -r copies cpu failed <<<"$(dma_stats)"
echo "callbacks in hard IRQ context: $copies copies, $failed requests served again by the CPU"
[ "${failed:-0}" -gt 0 ] || fail "no request saw a failed copy: the CPU's second try was not exercised"
on 0 "rmmod unimem_kram"
reload_fabric ""
dmesg_clean 0 "$mark" || fail "kernel errors with completions in hard IRQ context"
step "stop the lenders (SIGTERM: clean exit)"
for n in 1 2; do
  on "$n" "killall -TERM kram-daemon; for i in \$(seq 50); do pidof kram-daemon >/dev/null || exit 0; sleep 0.1; done; exit 1" ||
    fail "kram-daemon on node $n did not exit on SIGTERM"
done
on 0 "dmesg | grep unimem_kram | tail -4"
echo "kram: all checks passed"
