#!/usr/bin/env bash
# KRAM soak (issue 9): node 0 swaps to memory lent by nodes 1 and 2 and runs a workload larger
# than its RAM that verifies every byte, while the lenders' daemons are killed and restarted
# (with and without state) and their VMs are killed, rebooted or kept down for longer than a
# lease, in a loop. Zero verification errors, no kernel warning, no lease lost. Once with the
# DMA engine (transfermode=1, blk-mq requeues what waits for a lease) and once with the CPU
# (transfermode=0, the bio-based disk sleeps on it); SOAK_ROUNDS (default 5, every kind of
# chaos once) chaos rounds each.
source "$(dirname "$0")/lib.sh"
MODS=/opt/unimem/modules
BG=soak
ROUNDS=${SOAK_ROUNDS:-5}
[ "$NODES" -ge 3 ] || fail "needs at least 3 nodes"
trap 'bg_cleanup; kram_cleanup' EXIT

daemon() { local n=$1; shift; kram_daemon "$n" --lend 100M "$@"; }
kill9() { on "$1" "killall -9 kram-daemon; for i in \$(seq 50); do pidof kram-daemon >/dev/null || exit 0; sleep 0.1; done; exit 1"; }
running() { on 0 "test -f /tmp/$BG-work.pid"; }

for n in $(seq 0 $((NODES - 1))); do load_base "$n"; on "$n" "killall kram-daemon 2>/dev/null; rm -f /run/kram-daemon.state; true"; done

chaos() {
  local r=$1
  case $((r % 5)) in
    0) step "transfermode=$mode, round $r: node 1's daemon killed -9, restarted without state"
       kill9 1; on 1 "rm -f /run/kram-daemon.state"; daemon 1 --no-state ;;
    1) step "transfermode=$mode, round $r: node 2's VM killed and booted again"
       "$CLUSTER" kill 2; "$CLUSTER" start 2; load_base 2; daemon 2 ;;
    2) step "transfermode=$mode, round $r: node 2's daemon killed -9, restarted with its state file"
       kill9 2; daemon 2 ;;
    3) step "transfermode=$mode, round $r: node 1's VM rebooted cleanly"
       "$CLUSTER" restart 1; load_base 1; daemon 1 ;;
    4) step "transfermode=$mode, round $r: node 2's VM down for 25 s, longer than node 0 may use a lease unacknowledged"
       # Node 0's I/O to node 2's part waits (requeued by blk-mq, or sleeping in submit_bio) until
       # node 2's restored daemon ACKs again.
       "$CLUSTER" kill 2; sleep 25; "$CLUSTER" start 2; load_base 2; daemon 2 ;;
  esac
}
soak() {
  local mode=$1 r
  daemon 1
  daemon 2
  mark=$(dmesg_mark 0)
  step "transfermode=$mode: node 0 swaps to 64 + 64 MiB lent by nodes 1 and 2"
  # A lender VM down longer than a lease stalls I/O until it is back: as long as its reboot,
  # which the debug kernel's lane (UNIMEM_TIMEOUT_SCALE) makes minutes.
  on 0 "insmod $MODS/unimem_kram.ko ninstances=2 size=64,64 transfermode=$mode stall_timeout=$((60 * ${UNIMEM_TIMEOUT_SCALE:-1}))"
  on 0 "for i in \$(seq 100); do test -b /dev/kram0 && test -b /dev/kram1 && exit 0; sleep 0.2; done; exit 1" ||
    fail "the devices did not appear"
  on 0 "mkswap /dev/kram0 >/dev/null && mkswap /dev/kram1 >/dev/null && swapon /dev/kram0 && swapon /dev/kram1"
  on 0 "echo 8192 > /proc/sys/vm/min_free_kbytes"
  on 0 "cat /sys/kernel/debug/unimem_kram/stats"
  ram_mib=$(( $(on 0 "awk '/^MemTotal/ {print \$2}' /proc/meminfo") / 1024 ))
  work=$(( ram_mib * 3 / 2 ))
  read -r work _ <<<"$(swap_work 0 "$work" 0)"
  on 0 "rm -f /tmp/$BG-stop"
  bg 0 work "i=0; while [ ! -e /tmp/$BG-stop ]; do i=\$((i + 1)); unimem-memtest --mib $work --seed \$i >/tmp/$BG-memtest.log 2>&1 || { cat /tmp/$BG-memtest.log; exit 1; }; echo round \$i verified; done"

  for r in $(seq 0 $((ROUNDS - 1))); do
    running || break
    chaos "$r"
    sleep 8
    on 0 "grep -c 'verified' /tmp/$BG-work.log || true"
  done
  on 0 "touch /tmp/$BG-stop"
  TIMEOUT=900 on 0 "while test -f /tmp/$BG-work.pid; do sleep 1; done"
  on 0 "cat /tmp/$BG-work.log"
  on 0 "grep -qx 'exit=0' /tmp/$BG-work.log" || fail "the workload failed verification under lender restarts (transfermode=$mode)"
  rounds=$(on 0 "grep -c 'verified' /tmp/$BG-work.log")
  [ "$rounds" -ge 1 ] || fail "no workload round completed"
  echo "$rounds workload rounds of $work MiB verified on $ram_mib MiB RAM across $ROUNDS chaos rounds, transfermode=$mode"
  on 0 "cat /sys/kernel/debug/unimem_kram/stats"
  on 0 "! grep -q LOST /sys/kernel/debug/unimem_kram/stats" || fail "a lease was lost during the soak"
  dmesg_clean 0 "$mark" || fail "kernel errors on node 0"
  on 0 "swapoff /dev/kram0 && swapoff /dev/kram1 && rmmod unimem_kram"
  for n in 1 2; do
    on "$n" "for i in \$(seq 25); do kram-daemon --status | grep -q ', lent 0$' && exit 0; sleep 0.2; done; kram-daemon --status; exit 1" ||
      fail "node $n still lends memory after node 0 unloaded"
    on "$n" "killall -TERM kram-daemon; for i in \$(seq 150); do pidof kram-daemon >/dev/null || exit 0; sleep 0.2; done; exit 1" ||
      fail "kram-daemon on node $n did not exit on SIGTERM"
  done
}
soak 1
soak 0
echo "kram_soak: all checks passed"
