#!/usr/bin/env bash
# kram-daemon acceptance, without the kernel driver: kram-probe (userspace/kram-daemon) plays
# unimem_kram on node 0 against daemons on nodes 1 and 2. Request/offer/confirm, decline of a
# second offer, first fit across two instances, idempotent repeated requests, exhaustion
# (silence), offer timeout, FREE, malformed and inconsistent words counted and dropped, a
# forged node field, one daemon per node (EBUSY), restart with the state file, clean SIGTERM.
source "$(dirname "$0")/lib.sh"
EUSRVMEM=/opt/unimem/modules/unimem_eusrvmem.ko
MAILBOX=/opt/unimem/modules/unimem_mailbox.ko
RUN=${UNIMEM_RUN:-$ROOT/build/cluster}
CHUNKS=64
OFFER_TIMEOUT=6
[ "$NODES" -ge 3 ] || fail "needs at least 3 nodes"

# Our binaries into the share, in case the cluster was staged before they were built (the
# guests see the directory over 9p at once).
for b in kram-daemon kram-probe; do
  [ -x "$ROOT/target/release/$b" ] || fail "target/release/$b missing: run 'make userspace'"
  cp "$ROOT/target/release/$b" "$RUN/share/bin/$b"
done

# Background processes (lib.sh's bg, wait_log): /tmp/kd-NAME.{log,pid} on the node.
BG=kd

# status NODE: the daemon's status text.
status() { on "$1" "kram-daemon --status"; }
# counter NODE NAME: one counter of the status.
counter() { status "$1" | sed -n "s/.*[:,] $2 \([0-9]*\).*/\1/p"; }
# wait_status NODE REGEX: wait (up to ~20 s) until a status line matches.
wait_status() {
  on "$1" "for i in \$(seq 100); do kram-daemon --status 2>/dev/null | grep -qE '$2' && exit 0; sleep 0.2; done; kram-daemon --status; exit 1" ||
    fail "node $1: status never matched /$2/"
}
# probe ARGS...: kram-probe request on node 0; prints its output.
probe() { on 0 "kram-probe request $*"; }
result() { echo "$1" | sed -n "s/^RESULT .*$2=\([0-9a-z]*\).*/\1/p"; }

start_daemon() {
  bg "$1" daemon "kram-daemon --chunks $CHUNKS --offer-timeout $OFFER_TIMEOUT"
  wait_status "$1" "^free [0-9]+, offered"
}
stop_daemon() {
  on "$1" "[ -f /tmp/kd-daemon.pid ] && kill -TERM \$(cat /tmp/kd-daemon.pid)"
  wait_log "$1" daemon '^exit='
  local s; s=$(on "$1" "sed -n 's/^exit=//p' /tmp/kd-daemon.log")
  [ "$s" = 0 ] || { on_may_fail "$1" "cat /tmp/kd-daemon.log /var/log/kram-daemon.log" >&2; fail "node $1: kram-daemon exited with $s"; }
}

trap bg_cleanup EXIT

step "load unimem_eusrvmem and unimem_mailbox on every node; no daemon state left over"
bg_cleanup
for n in $(seq 0 $((NODES - 1))); do
  on "$n" "lsmod | grep -q '^unimem_eusrvmem' || insmod $EUSRVMEM
           lsmod | grep -q '^unimem_mailbox' || insmod $MAILBOX
           test -c /dev/unimem_mailbox && rm -f /run/kram-daemon.state /var/log/kram-daemon.log"
done

step "status without a daemon is a clear error"
out=$(on_may_fail 1 "kram-daemon --status 2>&1") && fail "--status succeeded without a daemon"
echo "$out"
echo "$out" | grep -q 'not running' || fail "--status: no 'not running' message"

step "bad --chunks values are refused with a reason"
out=$(on_may_fail 1 "kram-daemon --chunks 300 --log-file - --no-state 2>&1") && fail "--chunks 300 accepted"
echo "$out" | grep -q 'at most 256' || fail "--chunks 300: $out"

step "daemons on nodes 1 and 2 ($CHUNKS chunks, offers expire after ${OFFER_TIMEOUT}s)"
start_daemon 1
start_daemon 2
status 1
step "a second daemon on node 1 is refused (KBIND: EBUSY)"
out=$(on_may_fail 1 "kram-daemon --chunks 8 --log-file - --no-state --socket /tmp/kd-second.sock 2>&1") &&
  fail "a second daemon started on node 1"
echo "$out"
echo "$out" | grep -q 'already bound' || fail "second daemon: no 'already bound' message"
wait_status 1 "^free $CHUNKS, offered 0, lent 0$"

step "node 0 asks nodes 1 and 2 for instance 0, 32 chunks: the first offer is confirmed"
out=$(probe --instance 0 --chunks 32)
echo "$out"
A=$(result "$out" lender); FA=$(result "$out" first)
[ "$A" = 1 ] || [ "$A" = 2 ] || fail "no RESULT from node 1 or 2"
B=$((3 - A))
expect_eq "$FA" 0 "first chunk of the first grant"
wait_status "$A" "^free 32, offered 0, lent 32$"
wait_status "$A" "^chunks 0-31 lent to node 0 instance 0$"
# Node B's offer was declined by the probe (or timed out): all free again.
wait_status "$B" "^free $CHUNKS, offered 0, lent 0$"
status "$A"

step "instance 1, 64 chunks: only node $B has room"
out=$(probe --instance 1 --chunks 64)
echo "$out"
expect_eq "$(result "$out" lender)" "$B" "lender of instance 1"
FB=$(result "$out" first)
wait_status "$B" "^free 0, offered 0, lent 64$"
wait_status "$B" "^chunks 0-63 lent to node 0 instance 1$"

step "a repeated request for instance 1 gets the same range again (idempotent), not more"
out=$(probe --instance 1 --chunks 64 --node "$B")
echo "$out" | grep -E '^(offer|confirmed|RESULT)'
expect_eq "$(result "$out" first)" "$FB" "first chunk of the repeated offer"
wait_status "$B" "^free 0, offered 0, lent 64$"
[ "$(counter "$B" repeats)" -ge 1 ] || fail "node $B counted no repeated offer"

step "exhaustion: 48 contiguous chunks nowhere; the daemons stay silent"
out=$(on_may_fail 0 "kram-probe request --instance 2 --chunks 48 --timeout 3") && fail "got an offer for 48 chunks: $out"
echo "$out" | tail -1
[ "$(counter "$A" unanswered)" -ge 1 ] || fail "node $A counted no unanswered request"
[ "$(counter "$B" unanswered)" -ge 1 ] || fail "node $B counted no unanswered request"

step "offer timeout: an offer nobody answers is released after ${OFFER_TIMEOUT}s"
t0=$(counter "$A" timeouts)
out=$(probe --instance 3 --chunks 8 --node "$A" --ignore --linger 0)
echo "$out" | grep -E '^(offer|unanswered)'
wait_status "$A" "^chunks 32-39 offered to node 0 instance 3 "
wait_status "$A" "^free 32, offered 0, lent 32$"
[ "$(counter "$A" timeouts)" -gt "$t0" ] || fail "node $A counted no timeout"

step "malformed words (unimem-mbox kping, opcode 0) are counted and dropped"
m0=$(counter 1 malformed)
on 0 "unimem-mbox kping --node 1 --service 2 --no-echo --count 5" | tail -1
wait_status 1 "malformed $((m0 + 5)),"

step "a forged node field (node 0 claims to be node 2) is malformed; the loan is untouched"
m0=$(counter "$A" malformed)
on 0 "kram-probe send --node $A --kind free --from 2 --instance 0 --first $FA --chunks 32"
wait_status "$A" "malformed $((m0 + 1)),"
wait_status "$A" "^free 32, offered 0, lent 32$"

step "inconsistent messages (FREE / CONFIRM of ranges not lent/offered to node 0) are counted and dropped"
i0=$(counter "$A" inconsistent)
on 0 "kram-probe send --node $A --kind free --instance 0 --first $FA --chunks 16"
on 0 "kram-probe send --node $A --kind free --instance 5 --first 40 --chunks 8"
on 0 "kram-probe send --node $A --kind confirm --instance 6 --first 40 --chunks 8"
wait_status "$A" "inconsistent $((i0 + 3))$|inconsistent $((i0 + 3)),"
wait_status "$A" "^free 32, offered 0, lent 32$"

step "the state file keeps the loans across a daemon restart"
stop_daemon "$A"
on "$A" "! test -e /run/kram-daemon.sock && grep -q '^lent node 0 instance 0 first $FA chunks 32$' /run/kram-daemon.state" ||
  fail "node $A: socket left behind or loan missing from the state file"
start_daemon "$A"
wait_status "$A" "^chunks 0-31 lent to node 0 instance 0$"

step "FREE both instances: every chunk comes back"
on 0 "kram-probe free --node $A --instance 0 --first $FA --chunks 32"
on 0 "kram-probe free --node $B --instance 1 --first $FB --chunks 64"
wait_status "$A" "^free $CHUNKS, offered 0, lent 0$"
wait_status "$B" "^free $CHUNKS, offered 0, lent 0$"
status "$A"; status "$B"
[ "$(counter "$A" frees)" = 1 ] && [ "$(counter "$B" frees)" = 1 ] || fail "frees not counted once each"

step "SIGHUP: the daemon reopens its log and logs its table"
on 2 "mv /var/log/kram-daemon.log /var/log/kram-daemon.log.1 && kill -HUP \$(cat /tmp/kd-daemon.pid)"
on 2 "for i in \$(seq 50); do grep -q 'SIGHUP: log reopened' /var/log/kram-daemon.log 2>/dev/null && exit 0; sleep 0.2; done; exit 1" ||
  fail "node 2: no new log file after SIGHUP"
on 2 "cat /var/log/kram-daemon.log.1 >> /var/log/kram-daemon.log"

step "SIGTERM: clean exit, socket and (empty) state file removed, log has timestamped lines"
for n in 1 2; do
  stop_daemon "$n"
  on "$n" "! test -e /run/kram-daemon.sock && ! test -e /run/kram-daemon.state" || fail "node $n: files left behind"
  on "$n" "grep -E '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z INFO  kram-daemon\[node $n\]: (lent|freed) chunks ' /var/log/kram-daemon.log | head -4"
  on "$n" "grep -q 'stopped; final status' /var/log/kram-daemon.log" || fail "node $n: no final status in the log"
done
echo "kram_daemon: all checks passed"
