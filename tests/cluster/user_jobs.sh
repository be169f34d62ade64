#!/usr/bin/env bash
# Jobs of an unprivileged user (issue 29), 4 nodes with their services and remoteFork daemons,
# everything below run as the guests' test user (group unimem, no capabilities):
#  - GSAS: every operation checked from node 0 against every home, and from another node;
#  - the DHT: a table over nodes 0-3 made, filled, read and destroyed by one process tree of
#    the user (its pages on every home), every page given back;
#  - OpenSHMEM: oshrun places the PEs on other nodes by remoteFork; they run as the user (their
#    uid checked on the target node) and pass rma, amo, coll;
#  - nothing of the user's is left allocated anywhere; no kernel warnings.
source "$(dirname "$0")/lib.sh"
SYS=/sys/kernel/unimem_gsas
LOGS=/tmp/gsasd
BG=userj
PROGS="rma amo coll"
[ "$NODES" -ge 4 ] || fail "needs 4 nodes"

step "copy the tools and libraries; build the OpenSHMEM programs with oshcc"
share_bins unimem-gsas unimem-gsas-test unimem-dht oshrun gsasd kram-daemon
share_lib shmem
oshcc_progs $PROGS

cleanup() {
  stop_all "killall -TERM oshrun 2>/dev/null; $STOP_GSASD; $STOP_DAEMON"
  bg_cleanup
}
trap cleanup EXIT

step "every node: base modules (mailbox root:unimem 0660), kram-daemon, unimem_gsas, gsasd"
fork_nodes_up "$LOGS"
on 0 "stat -c '%U:%G %a' /dev/unimem_mailbox"
expect_eq "$(on 0 "stat -c '%G %a' /dev/unimem_mailbox")" "unimem 660" "the mailbox's group and mode"
on 0 "$(as_user "id")"

step "GSAS as $TEST_USER: every operation, each result checked, node 0 to every home and 2 to 3"
for pair in 0:0 0:1 0:2 0:3 2:3; do
  n=${pair%:*} h=${pair#*:}
  out=$(on "$n" "$(as_user "unimem-gsas-test check ops --node $h")") || { echo "$out"; fail "check ops $n -> $h as $TEST_USER"; }
  tail -1 <<<"$out"
done

step "the DHT as $TEST_USER: a table over nodes 0-3, put, get, delete, destroy in one process tree"
# The script reaches node 0 through its share (/opt/unimem), which the test user can read.
cat >"$(node_share 0)/bin/userj-dht.sh" <<'SCRIPT'
set -e
t=$(unimem-dht create --nodes 0,1,2,3 --capacity 64 --json | sed -n 's/.*"root":"\(0x[0-9a-f]*\)".*/\1/p')
[ -n "$t" ]
for k in $(seq 1 40); do unimem-dht put "$t" "$k" $((k * 3)) >/dev/null; done
unimem-dht get "$t" 17
unimem-dht delete "$t" 17
unimem-dht get "$t" 17
unimem-dht get "$t" 40
unimem-dht destroy "$t"
SCRIPT
out=$(on 0 "$(as_user "unimem-gsas exec -- sh /opt/unimem/bin/userj-dht.sh")") || { echo "$out"; fail "the DHT as $TEST_USER"; }
echo "$out"
expect_eq "$(sed -n 1p <<<"$out")" "0x33 0x0" "key 17 read back"
grep -q '^deleted$' <<<"$out" || fail "delete of key 17"
expect_eq "$(sed -n 3p <<<"$out")" invalid "key 17 after delete"
expect_eq "$(sed -n 4p <<<"$out")" "0x78 0x0" "key 40 read back"

step "OpenSHMEM as $TEST_USER: oshrun on node 0, PEs on nodes 1-3 (remoteFork) run as the user"
for p in $PROGS; do
  out=$(on_may_fail 0 "$(as_user "oshrun -np 6 --nodes 1-3 /opt/unimem/bin/$p") 2>&1; echo status=\$?") || true
  echo "$out" | tail -3
  grep -q '^status=0$' <<<"$out" || { echo "$out"; fail "$p as $TEST_USER"; }
  expect_eq "$(grep -c "^PE [0-9]*: $p ok" <<<"$out")" 6 "$p: PEs that passed"
done
out=$(on 1 "stat -c '%u' $LOGS/child-*.log | sort -u")
echo "owners of node 1's child logs: $out"
grep -qx "$TEST_UID" <<<"$out" || fail "no child on node 1 ran as $TEST_USER"

step "nothing of the user's is left allocated; no kernel warnings"
for n in $(seq 0 $((NODES - 1))); do
  expect_eq "$(on "$n" "cat $SYS/used_pages")" 0 "node $n: GSAS pages still allocated"
  dmesg_clean "$n" "${marks[$n]}"
done
