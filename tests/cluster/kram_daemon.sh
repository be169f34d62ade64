#!/usr/bin/env bash
# kram-daemon acceptance, without the kernel driver: kram-probe (userspace/kram-daemon) plays
# unimem_kram against daemons on nodes 1 and 2 (from node 0, or from the other daemon's node
# while a probe holds node 0's KRAM_DRIVER service). Request/offer/confirm/ACK, decline of a
# second offer, first fit across two instances, idempotent repeated requests, exhaustion
# (silence), offer timeout, FREE, malformed words counted and dropped, a forged node field,
# REVOKE of RENEW/CONFIRM of ranges that are not the sender's, one daemon per node (EBUSY),
# restart with the state file; leases (issue 9): a range not renewed comes back after 20 s
# wiped, kill -9 + restart without the state file restores the loans from the lease record in
# the partition, a garbage record starts a grace period in which the holder claims its range
# back and no REQUEST is answered, a --max-version 1 daemon refuses v2, a 300-chunk v2 grant;
# SIGHUP, clean SIGTERM.
source "$(dirname "$0")/lib.sh"
EUSRVMEM=/opt/unimem/modules/unimem_eusrvmem.ko
MAILBOX=/opt/unimem/modules/unimem_mailbox.ko
CHUNKS=64
OFFER_TIMEOUT=6
LEASE=20
# unimem_wire::lease_record::RECORD_OFFSET: 3 MiB - 64 KiB of the lender's partition.
RECORD_OFFSET=$(((3 << 20) - (64 << 10)))
[ "$NODES" -ge 3 ] || fail "needs at least 3 nodes"

share_bins kram-daemon kram-probe unimem-gas unimem-mbox-test

# Background processes (lib.sh's bg, wait_log): /tmp/kd-NAME.{log,pid} on the node.
BG=kd

# status NODE: the daemon's status text.
status() { on "$1" "kram-daemon --status"; }
# counter NODE NAME: one counter of the status.
counter() { status "$1" | sed -n "s/.*[:,] $2 \([0-9]*\).*/\1/p"; }
# wait_status NODE REGEX [SECONDS]: wait (default 20 s) until a status line matches.
wait_status() {
  local tries=$((${3:-20} * 5))
  on "$1" "for i in \$(seq $tries); do kram-daemon --status 2>/dev/null | grep -qE '$2' && exit 0; sleep 0.2; done; kram-daemon --status; exit 1" ||
    fail "node $1: status never matched /$2/"
}
# no_status NODE REGEX: no status line matches now.
no_status() { ! status "$1" | grep -qE "$2" || { status "$1"; fail "node $1: status matches /$2/"; }; }
# probe ARGS...: kram-probe request on node 0; prints its output.
probe() { on 0 "kram-probe request $*"; }
result() { echo "$1" | sed -n "s/^RESULT .*$2=\([0-9a-z]*\).*/\1/p"; }
# refresh: renew node 0's loans that the flow keeps (the driver would every second).
refresh() {
  for l in ${LOANS:-}; do
    IFS=: read -r node inst first chunks <<<"$l"
    on 0 "kram-probe renew --node $node --instance $inst --first $first --chunks $chunks --expect-ack" | tail -1
  done
}

start_daemon() {
  local n=$1; shift
  bg "$n" daemon "kram-daemon ${*:---chunks $CHUNKS --offer-timeout $OFFER_TIMEOUT}"
  wait_status "$n" "^free [0-9]+, offered"
}
stop_daemon() {
  on "$1" "[ -f /tmp/kd-daemon.pid ] && kill -TERM \$(cat /tmp/kd-daemon.pid)"
  wait_log "$1" daemon '^exit='
  local s; s=$(on "$1" "sed -n 's/^exit=//p' /tmp/kd-daemon.log")
  [ "$s" = 0 ] || { on_may_fail "$1" "cat /tmp/kd-daemon.log /var/log/kram-daemon.log" >&2; fail "node $1: kram-daemon exited with $s"; }
}
# kill9 NODE: the daemon dies without cleaning up (crash, reboot).
kill9() {
  on "$1" "kill -KILL \$(cat /tmp/kd-daemon.pid)"
  wait_log "$1" daemon '^exit=137'
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
grep -q 'not running' <<<"$out" || fail "--status: no 'not running' message"

# Everything a daemon can lend: the partition after the mailbox rings (3 MiB).
ALL=$(( ($(on 1 "cat /sys/class/misc/eusrvmem/partition_size") >> 20) - 3 ))
[ "$ALL" -ge 300 ] || fail "partitions too small for the v2 checks ($ALL lendable chunks)"

step "bad --chunks / --lend values are refused with a reason"
out=$(on_may_fail 1 "kram-daemon --chunks 65537 --log-file - --no-state 2>&1") && fail "--chunks 65537 accepted"
grep -q 'at most 65536' <<<"$out" || fail "--chunks 65537: $out"
out=$(on_may_fail 1 "kram-daemon --chunks $((ALL + 1)) --log-file - --no-state 2>&1") && fail "--chunks $((ALL + 1)) accepted"
grep -q 'too large' <<<"$out" || fail "--chunks $((ALL + 1)): $out"
for bad in 0% 999G 101% 12Q; do
  out=$(on_may_fail 1 "kram-daemon --lend $bad --log-file - --no-state 2>&1") && fail "--lend $bad accepted"
  grep -q 'lend' <<<"$out" || fail "--lend $bad: $out"
done
echo "refused: --chunks 65537, --chunks $((ALL + 1)), --lend 0% 999G 101% 12Q"

step "daemons on nodes 1 and 2 ($CHUNKS chunks, offers expire after ${OFFER_TIMEOUT}s)"
start_daemon 1
start_daemon 2
# A lease record left by an earlier test may hold loans (they expire within a lease) or not
# fit 64 chunks (a grace period): wait until both serve an empty table.
for n in 1 2; do
  on "$n" "for i in \$(seq 150); do s=\$(kram-daemon --status); echo \"\$s\" | grep -q '^free $CHUNKS, offered 0, lent 0$' &&
           ! echo \"\$s\" | grep -q '^grace:' && exit 0; sleep 0.2; done; echo \"\$s\"; exit 1" ||
    fail "node $n: never served an empty table"
done
status 1
step "a second daemon on node 1 is refused (KBIND: EBUSY)"
out=$(on_may_fail 1 "kram-daemon --chunks 8 --log-file - --no-state --socket /tmp/kd-second.sock 2>&1") &&
  fail "a second daemon started on node 1"
echo "$out"
grep -q 'already bound' <<<"$out" || fail "second daemon: no 'already bound' message"
wait_status 1 "^free $CHUNKS, offered 0, lent 0$"
on 1 "kram-daemon --status --json" | grep -q '"node":1,.*"totals":{"free":64,' || fail "--status --json"

step "node 0 asks nodes 1 and 2 for instance 0, 32 chunks: the first offer is confirmed and ACKed"
out=$(probe --instance 0 --chunks 32)
echo "$out"
A=$(result "$out" lender); FA=$(result "$out" first)
[ "$A" = 1 ] || [ "$A" = 2 ] || fail "no RESULT from node 1 or 2"
B=$((3 - A))
expect_eq "$FA" 0 "first chunk of the first grant"
expect_eq "$(result "$out" acked)" yes "ACK of the CONFIRM"
grep -q "^ack: from node $A instance 0 first 0 chunks 32 tag 1$" <<<"$out" || fail "no ack line"
LOANS="$A:0:$FA:32"
wait_status "$A" "^free 32, offered 0, lent 32$"
wait_status "$A" "^chunks 0-31 lent to node 0 instance 0 \(lease expires in [0-9.]+s\)$"
# Node B's offer was declined by the probe (or timed out): all free again.
wait_status "$B" "^free $CHUNKS, offered 0, lent 0$"
status "$A"

step "instance 1, 64 chunks: only node $B has room"
out=$(probe --instance 1 --chunks 64)
echo "$out"
expect_eq "$(result "$out" lender)" "$B" "lender of instance 1"
FB=$(result "$out" first)
LOANS="$LOANS $B:1:$FB:64"
wait_status "$B" "^free 0, offered 0, lent 64$"
wait_status "$B" "^chunks 0-63 lent to node 0 instance 1 "

step "a repeated request for instance 1 gets the same range again (idempotent), not more"
out=$(probe --instance 1 --chunks 64 --node "$B")
echo "$out" | grep -E '^(offer|confirmed|ack|RESULT)'
expect_eq "$(result "$out" first)" "$FB" "first chunk of the repeated offer"
wait_status "$B" "^free 0, offered 0, lent 64$"
[ "$(counter "$B" repeats)" -ge 1 ] || fail "node $B counted no repeated offer"
refresh

step "exhaustion: 48 contiguous chunks nowhere; the daemons stay silent"
out=$(on_may_fail 0 "kram-probe --json request --instance 2 --chunks 48 --timeout 3") && fail "got an offer for 48 chunks: $out"
echo "$out" | tail -1
# --json: every line one object, the failure an event of its own.
! grep -qv '^{.*"event":' <<<"$out" || fail "kram-probe --json printed a line that is not an event object: $out"
grep -q '"event":"FAIL"' <<<"$out" || fail "kram-probe --json printed no FAIL event: $out"
[ "$(counter "$A" unanswered)" -ge 1 ] || fail "node $A counted no unanswered request"
[ "$(counter "$B" unanswered)" -ge 1 ] || fail "node $B counted no unanswered request"
refresh

step "offer timeout: an offer nobody answers is released after ${OFFER_TIMEOUT}s"
t0=$(counter "$A" timeouts)
out=$(probe --instance 3 --chunks 8 --node "$A" --ignore --linger 0)
echo "$out" | grep -E '^(offer|unanswered)'
wait_status "$A" "^chunks 32-39 offered to node 0 instance 3 "
wait_status "$A" "^free 32, offered 0, lent 32$"
[ "$(counter "$A" timeouts)" -gt "$t0" ] || fail "node $A counted no timeout"
refresh

step "malformed words (unimem-mbox-test kping, opcode 0) are counted and dropped"
m0=$(counter 1 malformed)
on 0 "unimem-mbox-test kping --node 1 --service 2 --no-echo --count 5" | tail -1
wait_status 1 "malformed $((m0 + 5)),"

step "a forged node field (node 0 claims to be node 2) is malformed; the loan is untouched"
m0=$(counter "$A" malformed)
on 0 "kram-probe send --node $A --kind free --from 2 --instance 0 --first $FA --chunks 32"
wait_status "$A" "malformed $((m0 + 1)),"
wait_status "$A" "^free 32, offered 0, lent 32$"

step "FREE of ranges not lent to node 0 is inconsistent, CONFIRM of a range never offered is REVOKEd"
i0=$(counter "$A" inconsistent); r0=$(counter "$A" revokes)
on 0 "kram-probe send --node $A --kind free --instance 0 --first $FA --chunks 16"
on 0 "kram-probe send --node $A --kind free --instance 5 --first 40 --chunks 8"
on 0 "kram-probe send --node $A --kind confirm --instance 6 --first 40 --chunks 8 --tag 3"
wait_status "$A" "inconsistent $((i0 + 2))(,|$)"
wait_status "$A" "revokes $((r0 + 1)),"
wait_status "$A" "^free 32, offered 0, lent 32$"
refresh

step "the state file keeps the loans across a daemon restart"
stop_daemon "$A"
on "$A" "! test -e /run/kram-daemon.sock && grep -q '^lent node 0 instance 0 first $FA chunks 32$' /run/kram-daemon.state" ||
  fail "node $A: socket left behind or loan missing from the state file"
start_daemon "$A"
wait_status "$A" "^chunks 0-31 lent to node 0 instance 0 "
wait_status "$A" "^start: state file"
refresh

step "FREE instance 1: node $B's chunks come back"
on 0 "kram-probe free --node $B --instance 1 --first $FB --chunks 64"
LOANS="$A:0:$FA:32"
wait_status "$B" "^free $CHUNKS, offered 0, lent 0$"
expect_eq "$(counter "$B" frees)" 1 "frees on node $B"

step "lease expiry: node 0 writes into its loan on node $A and stops renewing; ~${LEASE}s later the range is wiped and free"
on 0 "unimem-gas write --node $A --offset $(((3 + FA) << 20)) --len $((32 << 20)) --seed 9" | tail -1
on "$A" "unimem-gas zeroed --node $A --offset $(((3 + FA) << 20)) --len $((32 << 20))" >/dev/null 2>&1 &&
  fail "the pattern did not reach node $A's chunks"
e0=$(counter "$A" lease_expiries)
wait_status "$A" "^free $CHUNKS, offered 0, lent 0$" $((LEASE + 15))
status "$A"
[ "$(counter "$A" lease_expiries)" -gt "$e0" ] || fail "node $A counted no lease expiry"
[ "$(counter "$A" wiped_chunks)" -ge 32 ] || fail "node $A wiped fewer than 32 chunks"
on "$A" "unimem-gas zeroed --node $A --offset $(((3 + FA) << 20)) --len $((32 << 20))" ||
  fail "the expired loan was not wiped"
on "$A" "grep -E 'lease of chunks 0-31 .* expired' /var/log/kram-daemon.log | tail -1" || fail "no expiry in the log"
out=$(on 0 "kram-probe renew --node $A --instance 0 --first $FA --chunks 32")
echo "$out"
grep -q '^RESULT renews=1 acks=0 revokes=1$' <<<"$out" || fail "a RENEW of the expired loan was not REVOKEd"
LOANS=

step "kill -9 and restart without the state file: a held range stays lent (lease record), others get other chunks"
bg 0 hold "kram-probe request --node $A --instance 2 --chunks 16 --hold 600"
wait_log 0 hold '^RESULT .*acked=yes'
H=$(on 0 "sed -n 's/^RESULT .*first=\([0-9]*\).*/\1/p' /tmp/kd-hold.log")
wait_status "$A" "^chunks $H-$((H + 15)) lent to node 0 instance 2 "
kill9 "$A"
on "$A" "test -e /run/kram-daemon.state && rm /run/kram-daemon.state"
start_daemon "$A"
wait_status "$A" "^start: record generation [0-9]+ \(1 lent ranges\)"
wait_status "$A" "^chunks $H-$((H + 15)) lent to node 0 instance 2 "
status "$A"
out=$(on "$B" "kram-probe request --node $A --instance 0 --chunks 16 --free")
echo "$out" | grep -E '^(offer|RESULT|sent)'
F2=$(result "$out" first)
[ -n "$F2" ] && { [ $((F2 + 16)) -le "$H" ] || [ "$F2" -ge $((H + 16)) ]; } ||
  fail "node $B got chunks $F2+16, which overlap the held $H+16"
n0=$(counter "$A" renews)
wait_status "$A" "renews $((n0 + 2)),"

step "RENEW of node 0's range by node $B, or of a range never lent: REVOKE, counted, nothing changes"
r0=$(counter "$A" revokes); m0=$(counter "$A" malformed)
before=$(status "$A" | grep -E '^(free|chunks)' | sed 's/ (.*//')
out=$(on "$B" "kram-probe renew --node $A --instance 2 --first $H --chunks 16")
echo "$out"
grep -q "^revoke: from node $A instance 2 first $H chunks 16$" <<<"$out" || fail "no REVOKE for node $B"
out=$(on "$B" "kram-probe renew --node $A --instance 7 --first 50 --chunks 4 --version 2")
grep -q '^RESULT renews=1 acks=0 revokes=1$' <<<"$out" || fail "RENEW of a range never lent: $out"
on "$B" "kram-probe send --node $A --kind renew --from 0 --instance 2 --first $H --chunks 16 --tag 5"
wait_status "$A" "revokes $((r0 + 2)),"
wait_status "$A" "malformed $((m0 + 1)),"
after=$(status "$A" | grep -E '^(free|chunks)' | sed 's/ (.*//')
expect_eq "$after" "$before" "node $A's table after the REVOKEs"
on 0 "! grep -q '^revoke:' /tmp/kd-hold.log" || fail "the holder was revoked"

step "a garbage lease record and no state file: grace period, the holder claims its range back, no REQUEST is answered"
# Free chunks 32-47 hold data now: after a grace period their contents count as unknown.
on 0 "unimem-gas write --node $A --offset $(((3 + 32) << 20)) --len $((16 << 20)) --seed 12" | tail -1
on "$A" "unimem-gas write --node $A --offset $RECORD_OFFSET --len 65536 --seed 77" | tail -1
kill9 "$A"
on "$A" "rm -f /run/kram-daemon.state"
start_daemon "$A"
wait_status "$A" "^start: grace \(no usable lease record"
wait_status "$A" "^grace: [0-9.]+s left"
out=$(on_may_fail "$B" "kram-probe request --node $A --instance 1 --chunks 4 --timeout 4") && fail "REQUEST answered during grace: $out"
[ "$(counter "$A" deferred)" -ge 1 ] || fail "node $A deferred no REQUEST"
wait_status "$A" "^chunks $H-$((H + 15)) lent to node 0 instance 2 "
[ "$(counter "$A" claims)" = 1 ] || fail "node $A: claims $(counter "$A" claims), expected 1"
status "$A"
# Grace ends one lease after the start: the unclaimed chunks are wiped, REQUESTs served.
wait_status "$A" "wiped_chunks 48," $((LEASE + 10))
no_status "$A" '^grace:'
wait_status "$A" "^free 48, offered 0, lent 16$"
on "$A" "unimem-gas zeroed --node $A --offset $(((3 + 32) << 20)) --len $((16 << 20))" ||
  fail "unclaimed chunks 32-47 were not wiped at the end of grace"
on "$A" "grep 'claimed back during grace: chunks $H-' /var/log/kram-daemon.log" || fail "no claim in the log"
out=$(on "$B" "kram-probe request --node $A --instance 1 --chunks 4 --free")
echo "$out" | grep -E '^(RESULT|sent)'
on 0 "! grep -q '^revoke:' /tmp/kd-hold.log" || fail "the holder was revoked"
on 0 "kill \$(cat /tmp/kd-hold.pid)"
on 0 "kram-probe free --node $A --instance 2 --first $H --chunks 16"
wait_status "$A" "^free $CHUNKS, offered 0, lent 0$"

step "a daemon started with --max-version 1 refuses v2: malformed, nothing changes; v1 still works"
stop_daemon "$B"
start_daemon "$B" --chunks $CHUNKS --offer-timeout $OFFER_TIMEOUT --max-version 1
status "$B" | head -1 | grep -q 'protocol v1 only' || fail "node $B: not v1 only"
m0=$(counter "$B" malformed)
on 0 "kram-probe send --node $B --kind request --instance 3 --first 8 --chunks 8 --version 2"
on 0 "kram-probe send --node $B --kind request --instance 3 --first 300 --chunks 300"
wait_status "$B" "malformed $((m0 + 2)),"
[ "$(counter "$B" version_refused)" -ge 2 ] || fail "node $B counted no refused version"
expect_eq "$(counter "$B" requests)" 0 "requests on node $B"
wait_status "$B" "^free $CHUNKS, offered 0, lent 0$"
out=$(probe --node "$B" --instance 3 --chunks 8 --free)
echo "$out" | grep -E '^(RESULT|sent)'
expect_eq "$(result "$out" acked)" yes "v1 grant of a v1-only daemon"

step "v2: node $B lends all it can ($ALL chunks); 300 chunks in one grant, then $((ALL + 63)) accepting 100 gets all $ALL"
stop_daemon "$B"
start_daemon "$B" --offer-timeout $OFFER_TIMEOUT
wait_status "$B" "^free $ALL, offered 0, lent 0$"
out=$(probe --node "$B" --instance 3 --chunks 300)
echo "$out"
expect_eq "$(result "$out" chunks)" 300 "chunks of the v2 grant"
expect_eq "$(result "$out" acked)" yes "ACK of the v2 CONFIRM"
wait_status "$B" "^chunks 0-299 lent to node 0 instance 3 "
on 0 "kram-probe free --node $B --instance 3 --first 0 --chunks 300"
wait_status "$B" "^free $ALL, offered 0, lent 0$"
out=$(probe --node "$B" --instance 4 --chunks $((ALL + 63)) --min 100 --free)
echo "$out" | grep -E '^(request|RESULT|sent)'
expect_eq "$(result "$out" chunks)" "$ALL" "chunks of the partial v2 grant"
wait_status "$B" "^free $ALL, offered 0, lent 0$"

step "SIGHUP: the daemon reopens its log and logs its table"
on 2 "mv /var/log/kram-daemon.log /var/log/kram-daemon.log.1 && kill -HUP \$(cat /tmp/kd-daemon.pid)"
on 2 "for i in \$(seq 50); do grep -q 'SIGHUP: log reopened' /var/log/kram-daemon.log 2>/dev/null && exit 0; sleep 0.2; done; exit 1" ||
  fail "node 2: no new log file after SIGHUP"
on 2 "cat /var/log/kram-daemon.log.1 >> /var/log/kram-daemon.log"

step "SIGTERM: clean exit, socket and (empty) state file removed, log has timestamped lines"
for n in 1 2; do
  stop_daemon "$n"
  on "$n" "! test -e /run/kram-daemon.sock && ! test -e /run/kram-daemon.state" || fail "node $n: files left behind"
  on "$n" "grep -E '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z INFO  kram-daemon\[node $n\]: (lent|freed|wiped) chunks ' /var/log/kram-daemon.log | head -4"
  on "$n" "grep -q 'stopped; final status' /var/log/kram-daemon.log" || fail "node $n: no final status in the log"
done
echo "kram_daemon: all checks passed"
