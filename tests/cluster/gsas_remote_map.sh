#!/usr/bin/env bash
# Mapping another node's GSAS pages (op::MAP, mailbox::MMAP_REMOTE; docs/GSAS.md "Mapping
# another node's pages"): the home approves, the mapper's kernel maps once per approval, and a
# free or a narrower grant removes the mappings on every node. 3+ nodes, every node with its
# GSAS service; node 2 is the home, node 1 the mapper, node 0 issues the owner's requests:
#  - a page of root's tree on node 2, mapped from node 1 by the same tree: a store through the
#    mapping is what a READ on node 2 sees, and a WRITE on node 2 is what the mapping shows;
#  - the test user, granted u=r, maps it read-only from node 1, and a writable mapping is
#    refused (EACCES); a second user without a grant is refused; the home counts them;
#  - a narrower grant removes node 1's mapping (the holder dies of SIGBUS);
#  - a FREE while node 1 is frozen: the pages stay out of use (quarantined_pages, used_pages,
#    and an ALLOC on node 2 does not get them) until node 1, thawed, removed its mapping (the
#    holder dies of SIGBUS) and acknowledged; then they are free again;
#  - no GSAS page left allocated, no kernel warnings.
source "$(dirname "$0")/lib.sh"
[ "$NODES" -ge 3 ] || fail "needs 3 nodes"
BG=rmap
OWNER=0x0e0b01
HOME_NODE=2 MAPPER=1
A='' B=''
cleanup() {
  "$CLUSTER" resume "$MAPPER" >/dev/null 2>&1 || true
  gsas_cleanup "$OWNER" ${A:+"$A"} ${B:+"$B"}
}
trap cleanup EXIT
SYS=/sys/kernel/unimem_gsas
# counter NODE NAME: the GSAS service's counter NAME on NODE.
counter() { on "$1" "cat $SYS/$2"; }
# try NODE WHO CMD: runs CMD on NODE as WHO (user, other, root); prints its output; its status.
try() {
  local n=$1 who=$2; shift 2
  case $who in
    user) on_may_fail "$n" "$(as_user "$*") 2>&1" ;;
    other) on_may_fail "$n" "$(as_other "$*") 2>&1" ;;
    root) on_may_fail "$n" "$* 2>&1" ;;
  esac
}
# refused NODE WHO CMD: a map-hold CMD must be refused (exit 3) with EACCES.
refused() {
  local out s=0
  out=$(try "$@") || s=$?
  [ "$s" -eq 3 ] && grep -q 'refused: EACCES' <<<"$out" ||
    fail "$2: '${*:3}' was not refused with EACCES (status $s): $out"
}
# allowed NODE WHO CMD: CMD must work; prints its output.
allowed() {
  local out s=0
  out=$(try "$@") || s=$?
  [ "$s" -eq 0 ] || fail "$2: '${*:3}' failed (status $s): $out"
  echo "$out"
}
grant() { on 0 "unimem-gsas --tree $OWNER grant $A --uid $1 --gid $2 --mode $3" || fail "grant $*"; }
value() { on "$HOME_NODE" "unimem-gsas --tree $OWNER read $A"; }
hold() { echo "unimem-gsas-test --tree $OWNER map-hold --addr $A $*"; }

step "copy the tools to the nodes; base modules, kram-daemon and unimem_gsas everywhere"
share_bins unimem-gsas unimem-gsas-test kram-daemon
gsas_all_up
UGID=$(on 0 "$(as_user "id -g")")
used0=$(counter "$HOME_NODE" used_pages)

step "a page of root's tree $OWNER on node $HOME_NODE, mapped from node $MAPPER by the same tree"
A=$(on 0 "unimem-gsas --tree $OWNER alloc --node $HOME_NODE") || fail "alloc on node $HOME_NODE"
[ "$((A >> 48))" = "$HOME_NODE" ] || fail "alloc on node $HOME_NODE answered '$A'"
on 0 "unimem-gsas --tree $OWNER write $A 0x5ec2e7" || fail "write the page"
maps0=$(counter "$HOME_NODE" remote_maps)
out=$(allowed "$MAPPER" root "$(hold --write 0x11)")
grep -q 'mapped word=0x5ec2e7' <<<"$out" || fail "node $MAPPER's mapping does not show the page: $out"
grep -q 'wrote word=0x11' <<<"$out" || fail "node $MAPPER's store through its mapping: $out"
expect_eq "$(value)" 0x11 "a READ on node $HOME_NODE after node $MAPPER's store"
[ "$(counter "$HOME_NODE" remote_maps)" -gt "$maps0" ] || fail "node $HOME_NODE counted no MAP"
bg "$MAPPER" sametree "$(hold --seconds 120)"
wait_log "$MAPPER" sametree 'mapped word=0x11' 30
on "$HOME_NODE" "unimem-gsas --tree $OWNER write $A 0x22" || fail "write on node $HOME_NODE"
wait_log "$MAPPER" sametree '^word=0x22' 30

step "another user: a read-only grant maps read-only only; without a grant nothing"
refused "$MAPPER" user "unimem-gsas-test map-hold --addr $A --read-only"
denied0=$(counter "$HOME_NODE" denied)
grant "$TEST_UID" "$UGID" 0400
out=$(allowed "$MAPPER" user "unimem-gsas-test map-hold --addr $A --read-only")
grep -q 'mapped word=0x22' <<<"$out" || fail "$TEST_USER's read-only mapping does not show the page: $out"
refused "$MAPPER" user "unimem-gsas-test map-hold --addr $A --write 0x33"
refused "$MAPPER" other "unimem-gsas-test map-hold --addr $A --read-only"
[ "$(counter "$HOME_NODE" denied)" -ge $((denied0 + 2)) ] || fail "node $HOME_NODE did not count the refused MAPs"
expect_eq "$(value)" 0x22 "the page after the refused writable mapping"

step "a narrower grant removes node $MAPPER's mappings"
grant "$TEST_UID" "$UGID" 0600
bg "$MAPPER" userhold "$(as_user "unimem-gsas-test map-hold --addr $A --seconds 120")"
wait_log "$MAPPER" userhold 'mapped word=0x22' 30
rounds0=$(counter "$HOME_NODE" zap_rounds)
grant "$TEST_UID" "$UGID" 0
for h in userhold sametree; do
  wait_log "$MAPPER" "$h" '^exit=' 30
  on "$MAPPER" "grep -q '^exit=135' /tmp/$BG-$h.log" || fail "$h: a mapping on node $MAPPER survived the narrower grant"
done
[ "$(counter "$HOME_NODE" zap_rounds)" -gt "$rounds0" ] || fail "node $HOME_NODE sent no ZAP for the narrower grant"
refused "$MAPPER" user "unimem-gsas-test map-hold --addr $A --read-only"

step "a FREE while node $MAPPER is frozen: the page stays out of use until node $MAPPER acknowledged"
bg "$MAPPER" freehold "$(hold --read-only --seconds 120)"
wait_log "$MAPPER" freehold 'mapped word=0x22' 30
used1=$(counter "$HOME_NODE" used_pages)
acks0=$(counter "$HOME_NODE" zap_acks)
"$CLUSTER" pause "$MAPPER"
on 0 "unimem-gsas --tree $OWNER free $A" || fail "free the mapped page"
freed=$A A=''
expect_eq "$(counter "$HOME_NODE" quarantined_pages)" 1 "pages quarantined on node $HOME_NODE"
expect_eq "$(counter "$HOME_NODE" used_pages)" "$used1" "used pages on node $HOME_NODE after the FREE"
B=$(on 0 "unimem-gsas --tree $OWNER alloc --node $HOME_NODE") || fail "alloc while quarantined"
[ "$B" != "$freed" ] || fail "the quarantined page $freed was handed out again"
on 0 "unimem-gsas --tree $OWNER free $B" || fail "free $B"
B=''
"$CLUSTER" resume "$MAPPER"
wait_log "$MAPPER" freehold '^exit=' 30
on "$MAPPER" "grep -q '^exit=135' /tmp/$BG-freehold.log" || fail "node $MAPPER's mapping survived the FREE"
on "$HOME_NODE" "for i in \$(seq 100); do [ \$(cat $SYS/quarantined_pages) = 0 ] && exit 0; sleep 0.2; done; exit 1" ||
  fail "node $HOME_NODE still holds the page out of use after node $MAPPER thawed"
[ "$(counter "$HOME_NODE" zap_acks)" -gt "$acks0" ] || fail "node $HOME_NODE counted no ZAP_ACK"
on "$HOME_NODE" "for i in \$(seq 100); do [ \$(cat $SYS/used_pages) = $used0 ] && exit 0; sleep 0.2; done; exit 1" ||
  fail "node $HOME_NODE: used pages $(counter "$HOME_NODE" used_pages), expected $used0 after the acknowledgement"
out=$(try "$MAPPER" root "unimem-gsas-test --tree $OWNER map-hold --addr $freed --read-only") &&
  fail "a freed page was mapped: $out"

step "no GSAS page left allocated; a clean kernel log"
for n in $(seq 0 $((NODES - 1))); do
  expect_eq "$(counter "$n" allocations)" 0 "allocations on node $n"
  expect_eq "$(counter "$n" quarantined_pages)" 0 "quarantined pages on node $n"
  dmesg_clean "$n" "${marks[$n]}" || fail "node $n: kernel warnings"
done
echo "PASS"
