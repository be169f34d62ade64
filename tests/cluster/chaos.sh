#!/usr/bin/env bash
# chaos: a hostile peer cannot hang or crash a node. Node 1 writes random bytes over node 0's
# mailbox rings and the rest of its partition (unimem-gas-test scribble, a test rig: wild
# indices, garbage slots, forged kernel messages, doorbells, and chases that keep one ring's
# tail a full ring ahead of its head for 8 s) for 24 s while nodes 0 and 2 ping each other.
# Node 0 must stay responsive, log no kernel warning (and only rate-limited peer warnings),
# count what it dropped and resynced in debugfs, and carry normal traffic with nodes 1 and 2
# afterwards.
source "$(dirname "$0")/lib.sh"
share_bins unimem-mbox unimem-mbox-test unimem-gas-test
EUSRVMEM=/opt/unimem/modules/unimem_eusrvmem.ko
KO=/opt/unimem/modules/unimem_mailbox.ko
STATS=/sys/kernel/debug/unimem_mailbox/stats
SECONDS_OF_CHAOS=${CHAOS_SECONDS:-24}
[ "$NODES" -ge 3 ] || fail "needs at least 3 nodes"

BG=chaos
status() {
  wait_log "$1" "$2" '^exit=' "${3:-60}"
  on "$1" "sed -n 's/^exit=//p' /tmp/chaos-$2.log"
}
expect_ok() {
  local s; s=$(status "$1" "$2" "${3:-60}")
  [ "$s" = 0 ] || { on_may_fail "$1" "cat /tmp/chaos-$2.log" >&2; fail "node $1: '$2' exited with $s"; }
}
# start_server NODE NAME [ARGS]: unimem-mbox serve in the background; prints its interface.
start_server() {
  bg "$1" "$2" "unimem-mbox serve ${3:-}"
  wait_log "$1" "$2" '^iface [0-9]+ node '
  on "$1" "sed -n 's/^iface \([0-9]*\) node .*/\1/p' /tmp/chaos-$2.log | head -1"
}
# counter NAME: a "NAME N" line of node 0's mailbox stats.
counter() { on 0 "awk '\$1 == \"$1\" && NF == 2 { print \$2 }' $STATS"; }

# Leave the cluster as the next test expects it (eusrvmem unloads its module): no mailbox.
unload() {
  for n in $(seq 0 $((NODES - 1))); do
    "$CLUSTER" exec "$n" --timeout 30 -- "for i in \$(seq 40); do lsmod | grep -q '^unimem_mailbox' || exit 0; rmmod unimem_mailbox 2>/dev/null; sleep 0.25; done; exit 1" >/dev/null 2>&1 ||
      echo "node $n: unimem_mailbox still loaded" >&2
  done
}
trap 'bg_cleanup; unload' EXIT

step "load unimem_eusrvmem and a fresh unimem_mailbox on every node"
bg_cleanup
for n in $(seq 0 $((NODES - 1))); do
  on "$n" "lsmod | grep -q '^unimem_eusrvmem' || insmod $EUSRVMEM
           if lsmod | grep -q '^unimem_mailbox'; then rmmod unimem_mailbox; fi
           insmod $KO && test -c /dev/unimem_mailbox && test -r $STATS"
done
mark=$(dmesg_mark 0)
m0=$(counter malformed); r0=$(counter resynced)
[ -n "$m0" ] && [ -n "$r0" ] || fail "node 0's stats have no malformed/resynced counters"

step "traffic: node 2 pings a server on node 0, node 0 pings a server on node 2 (loops)"
i0=$(start_server 0 srv0)
i2=$(start_server 2 srv2)
# Pings during the chaos may lose packets and time out: the loops count, not fail.
bg 2 ping20 "while :; do if unimem-mbox --timeout 5 ping --node 0 --iface $i0 --count 5 >/dev/null 2>&1; then echo ok; else echo lost; fi; done"
bg 0 ping02 "while :; do if unimem-mbox --timeout 5 ping --node 2 --iface $i2 --count 5 >/dev/null 2>&1; then echo ok; else echo lost; fi; done"
wait_log 2 ping20 '^ok' 30
wait_log 0 ping02 '^ok' 30

step "node 1 scribbles over node 0's rings and partition for ${SECONDS_OF_CHAOS} s"
bg 1 scribble "unimem-gas-test scribble --node 0 --all-partition --seconds $SECONDS_OF_CHAOS --chase-ms 8000 --seed 16"
end=$((SECONDS + SECONDS_OF_CHAOS + 5)); answers=0
while [ "$SECONDS" -lt "$end" ]; do
  # A node that spins with interrupts off for a chase does not answer within 6 s.
  TIMEOUT=6 on 0 "cat $STATS >/dev/null && unimem-mbox --timeout 5 info >/dev/null" ||
    fail "node 0 did not answer during the chaos"
  answers=$((answers + 1))
  sleep 1
done
echo "node 0 answered $answers times while scribbled"
expect_ok 1 scribble 60
on 1 "grep -E '^scribbled|chasing' /tmp/chaos-scribble.log"

step "node 0 counted what it dropped and resynced"
on 0 "cat $STATS | grep -E '^(malformed|resynced) '"
m1=$(counter malformed); r1=$(counter resynced)
[ "$((m1 + r1))" -gt "$((m0 + r0))" ] || fail "no malformed or resynced entries counted on node 0"

step "traffic after the chaos: 0 <-> 2 and 0 <-> 1, packets and kernel messages"
for p in "2 ping20" "0 ping02"; do
  set -- $p
  echo "ping loop on node $1 during and after the chaos: $(on "$1" "grep -c '^ok' /tmp/chaos-$2.log || true") rounds ok, $(on "$1" "grep -c '^lost' /tmp/chaos-$2.log || true") lost"
done
bg_cleanup
i0=$(start_server 0 srv0b "--count 15")
on 2 "unimem-mbox ping --node 0 --iface $i0 --count 5" | grep '^ok'
on 1 "unimem-mbox ping --node 0 --iface $i0 --count 10 --poll" | grep '^ok'
expect_ok 0 srv0b
i1=$(start_server 1 srv1 "--count 5")
on 0 "unimem-mbox ping --node 1 --iface $i1 --count 5" | grep '^ok'
expect_ok 1 srv1
i2=$(start_server 2 srv2b "--count 5")
on 0 "unimem-mbox ping --node 2 --iface $i2 --count 5" | grep '^ok'
expect_ok 2 srv2b
bg 0 kserve "unimem-mbox-test kserve --count 5 --echo --from 1"
wait_log 0 kserve '^bound service 15'
on 1 "unimem-mbox-test kping --node 0 --count 5" | grep -E '^(ok|RESULT)'
expect_ok 0 kserve

step "node 0's kernel log: no BUG/Oops/WARNING/panic, peer warnings rate-limited"
! on_may_fail 0 "dmesg | tail -n +$((mark + 1)) | grep -E 'BUG|Oops|WARNING|panic|Call Trace|general protection'" ||
  fail "node 0 logged a kernel warning (above)"
lines=$(on 0 "dmesg | tail -n +$((mark + 1)) | grep -c 'rate-limited' || true")
echo "peer warnings logged: $lines (malformed $m0 -> $m1, resynced $r0 -> $r1)"
# 10 lines per 5 s window at most; the chaos, with its margins, lasts well under a minute.
[ "$lines" -le 130 ] || fail "peer-caused warnings are not rate-limited ($lines lines)"
echo "chaos: all checks passed"
