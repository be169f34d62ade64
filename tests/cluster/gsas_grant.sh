#!/usr/bin/env bash
# GSAS grants (op::GRANT, docs/GSAS.md "Grants"): an allocation is its tree's, and other users
# use it only as its grant says, checked by the home against the issuer's sealed credentials,
# for requests and for mappings alike. 2+ nodes, every node with its GSAS service:
#  - a page of root's tree on node 1 (a secret in it) is denied to the test user and to a second
#    user, for every kind of operation, until granted;
#  - grant u=r: the test user reads it, but may not write or Fetch&Add (memory unchanged); the
#    second user still may not read;
#  - grant u=rw: the test user writes and Fetch&Adds; grant o=r: the second user reads, never
#    writes; grant g=r for the second user's group: it reads by its group;
#  - only the owning tree (or CAP_SYS_ADMIN) grants: the test user's GRANT is denied; bad
#    input (mode beyond 0777, a page that is not an allocation's first, unaligned) is refused
#    and changes nothing;
#  - mappings on node 1 follow the grant: refused without one, read-only with r, read-write
#    with rw (a store lands in the page); a wider grant leaves mappings held across it, a
#    narrower one removes every mapping of the allocation (the holders die of SIGBUS; the
#    owning tree maps again);
#  - KEEP: a tree keeps what the grant gave its user when it kept it, across a narrower
#    grant, and only that (not writes it was not granted); another tree of the same user does
#    not; a tree with nothing granted keeps nothing; unkeep lets go; a keep goes with its
#    allocation (the next allocation in its place is not kept);
#  - mode 0 takes everything back; no kernel warnings.
source "$(dirname "$0")/lib.sh"
[ "$NODES" -ge 2 ] || fail "needs 2 nodes"
BG=grant
OWNER=0x0e0a01 OTHER_TREE=0x0e0a02 KEEPER=0x0e0a03 STRANGER=0x0e0a04
A=''
cleanup() {
  [ -z "$A" ] || on 0 "unimem-gsas --tree $OWNER free $A" >/dev/null 2>&1 || true
  stop_all "$STOP_DAEMON"
  bg_cleanup
}
trap cleanup EXIT
# try NODE WHO CMD: runs CMD on NODE as WHO (user, other, root); prints its output; its status.
try() {
  local n=$1 who=$2; shift 2
  case $who in
    user) on_may_fail "$n" "$(as_user "$*") 2>&1" ;;
    other) on_may_fail "$n" "$(as_other "$*") 2>&1" ;;
    root) on_may_fail "$n" "$* 2>&1" ;;
  esac
}
# denied NODE WHO CMD: CMD must fail with the home's denial.
denied() {
  local out s=0
  out=$(try "$@") || s=$?
  [ "$s" -ne 0 ] && grep -q 'denied' <<<"$out" || fail "$2: '${*:3}' was not denied (status $s): $out"
}
# allowed NODE WHO CMD: CMD must work; prints its output.
allowed() {
  local out s=0
  out=$(try "$@") || s=$?
  [ "$s" -eq 0 ] || fail "$2: '${*:3}' failed (status $s): $out"
  echo "$out"
}
grant() { on 0 "unimem-gsas --tree $OWNER grant $A --uid $1 --gid $2 --mode $3" || fail "grant $*"; }
value() { on 0 "unimem-gsas --tree $OWNER read $A"; }
SYS=/sys/kernel/unimem_gsas

step "copy the tools to the nodes; base modules, kram-daemon and unimem_gsas everywhere"
share_bins unimem-gsas unimem-gsas-test kram-daemon
gsas_all_up
UGID=$(on 0 "$(as_user "id -g")")
OGID=$(on 0 "$(as_other "id -g")")
echo "$TEST_USER: uid $TEST_UID gid $UGID; second user: uid $OTHER_UID gid $OGID"
[ "$UGID" != "$OGID" ] || fail "the two users share group $UGID: the group checks would prove nothing"

step "a page of root's tree $OWNER on node 1 with a secret; nobody else may touch it"
A=$(on 0 "unimem-gsas --tree $OWNER alloc --node 1") || fail "alloc on node 1"
on 0 "unimem-gsas --tree $OWNER write $A 0x5ec2e7" || fail "write the secret"
d0=$(on 1 "cat $SYS/denied")
for who in user other; do
  denied 0 "$who" "unimem-gsas read $A"
  denied 0 "$who" "unimem-gsas write $A 1"
  denied 0 "$who" "unimem-gsas faa $A"
  denied 0 "$who" "unimem-gsas bulk-read $A --len 64"
done
[ "$(on 1 "cat $SYS/denied")" -ge $((d0 + 8)) ] || fail "node 1 did not count the denials"
expect_eq "$(value)" 0x5ec2e7 "the page after the denied writes"

step "grant u=r to $TEST_USER: it reads, may not write or Fetch&Add; the second user may not read"
grant "$TEST_UID" "$UGID" 0400
expect_eq "$(allowed 0 user "unimem-gsas read $A")" 0x5ec2e7 "$TEST_USER's read"
denied 0 user "unimem-gsas write $A 1"
denied 0 user "unimem-gsas faa $A"
denied 0 other "unimem-gsas read $A"
expect_eq "$(value)" 0x5ec2e7 "the page after the denied writes"

step "grant u=rw: $TEST_USER writes and Fetch&Adds (also from node 1, locally)"
grant "$TEST_UID" "$UGID" 0600
allowed 0 user "unimem-gsas write $A 41" >/dev/null
expect_eq "$(allowed 1 user "unimem-gsas faa $A")" 42 "$TEST_USER's Fetch&Add (the new value)"
expect_eq "$(value)" 0x2a "the page after $TEST_USER's writes"
denied 0 other "unimem-gsas read $A"

step "grant o=r: the second user reads, may not write; g=r: it reads by its group only"
grant "$TEST_UID" "$UGID" 0604
expect_eq "$(allowed 0 other "unimem-gsas read $A")" 0x2a "the second user's read (others' bits)"
denied 0 other "unimem-gsas write $A 7"
grant 4242 "$OGID" 0040
expect_eq "$(allowed 0 other "unimem-gsas read $A")" 0x2a "the second user's read (group bits)"
denied 0 other "unimem-gsas write $A 7"
denied 0 user "unimem-gsas read $A"
expect_eq "$(value)" 0x2a "the page after the denied writes"

step "only the owning tree or CAP_SYS_ADMIN grants; bad input is refused and changes nothing"
denied 0 user "unimem-gsas grant $A --uid $TEST_UID --gid $UGID --mode 0666"
allowed 0 root "unimem-gsas --tree $OTHER_TREE grant $A --uid 4242 --gid $OGID --mode 0040" >/dev/null
out=$(try 0 root "unimem-gsas --tree $OWNER grant $A --uid 1 --gid 1 --mode 1777") &&
  fail "mode 1777 accepted: $out"
grep -q 'beyond 0777' <<<"$out" || fail "mode 1777: no clear error: $out"
B=$(on 0 "unimem-gsas --tree $OWNER alloc --node 1 --pages 2") || fail "a 2-page allocation"
out=$(try 0 root "unimem-gsas --tree $OWNER grant $((B + 4096)) --uid 1 --gid 1 --mode 0666") &&
  fail "a grant of an allocation's second page worked: $out"
out=$(try 0 root "unimem-gsas --tree $OWNER grant $((B + 8)) --uid 1 --gid 1 --mode 0666") &&
  fail "an unaligned grant worked: $out"
on 0 "unimem-gsas --tree $OWNER free $B" || fail "free the 2-page allocation"
expect_eq "$(allowed 0 other "unimem-gsas read $A")" 0x2a "the second user's read after the refused grants"
denied 0 user "unimem-gsas read $A"

step "mappings on node 1 follow the grant"
out=$(try 1 user "unimem-gsas-test map-hold --addr $A --read-only") && fail "$TEST_USER mapped a page it may not read: $out"
grep -q 'refused: EACCES' <<<"$out" || fail "the refused mapping: no EACCES: $out"
grant "$TEST_UID" "$UGID" 0400
out=$(allowed 1 user "unimem-gsas-test map-hold --addr $A --read-only")
grep -q 'mapped word=0x2a' <<<"$out" || fail "$TEST_USER's read-only mapping does not show the page: $out"
out=$(try 1 user "unimem-gsas-test map-hold --addr $A") && fail "a writable mapping with a read-only grant: $out"
grep -q 'refused: EACCES' <<<"$out" || fail "the refused writable mapping: no EACCES: $out"
grant "$TEST_UID" "$UGID" 0600
out=$(allowed 1 user "unimem-gsas-test map-hold --addr $A --write 0x77")
grep -q 'wrote word=0x77' <<<"$out" || fail "$TEST_USER's store through its mapping: $out"
expect_eq "$(value)" 0x77 "the page after $TEST_USER's store through its mapping"

step "a wider grant leaves mappings; a narrower one removes every mapping of the allocation"
bg 1 userhold "$(as_user "unimem-gsas-test map-hold --addr $A --read-only --seconds 120")"
bg 1 ownerhold "unimem-gsas-test --tree $OWNER map-hold --addr $A --read-only --seconds 120"
wait_log 1 userhold 'mapped word=0x77' 30
wait_log 1 ownerhold 'mapped word=0x77' 30
grant "$TEST_UID" "$UGID" 0644
on 0 "unimem-gsas --tree $OWNER write $A 0x88" || fail "owner's write"
wait_log 1 userhold 'word=0x88' 30
on 1 "! grep -q '^exit=' /tmp/$BG-userhold.log" || fail "a wider grant removed $TEST_USER's mapping"
grant "$TEST_UID" "$UGID" 0
for h in userhold ownerhold; do
  wait_log 1 "$h" '^exit=' 30
  on 1 "grep -q '^exit=135' /tmp/$BG-$h.log" || fail "$h: a mapping survived the narrower grant"
done
out=$(allowed 1 root "unimem-gsas-test --tree $OWNER map-hold --addr $A --read-only")
grep -q 'mapped word=0x88' <<<"$out" || fail "the owning tree could not map its page again: $out"

step "KEEP: a tree keeps what the grant gave its user, as an open file keeps its access"
# Root's trees other than the owner's are users like any other here (uid 0 in the grant).
grant 0 0 0400
expect_eq "$(allowed 0 root "unimem-gsas --tree $KEEPER keep $A")" r "what $KEEPER kept"
grant 0 0 0
expect_eq "$(allowed 0 root "unimem-gsas --tree $KEEPER read $A")" 0x88 "the kept read after the grant went"
denied 0 root "unimem-gsas --tree $KEEPER write $A 5"
denied 0 root "unimem-gsas --tree $STRANGER read $A"
out=$(try 0 root "unimem-gsas --tree $STRANGER keep $A") && fail "a keep with nothing granted worked: $out"
grep -q denied <<<"$out" || fail "a keep with nothing granted: no denial: $out"
on 0 "unimem-gsas --tree $KEEPER unkeep $A" || fail "unkeep"
denied 0 root "unimem-gsas --tree $KEEPER read $A"
expect_eq "$(value)" 0x88 "the page after the denied writes"

step "a keep goes with its allocation: the next allocation in its place is not kept"
C=$(on 0 "unimem-gsas --tree $OWNER alloc --node 1") || fail "alloc C"
on 0 "unimem-gsas --tree $OWNER grant $C --uid 0 --gid 0 --mode 0600" || fail "grant C"
expect_eq "$(allowed 0 root "unimem-gsas --tree $KEEPER keep $C")" rw "what $KEEPER kept of C"
on 0 "unimem-gsas --tree $OWNER free $C" || fail "free C"
D=$(on 0 "unimem-gsas --tree $OWNER alloc --node 1") || fail "alloc D"
expect_eq "$D" "$C" "the next allocation's address (first fit)"
on 0 "unimem-gsas --tree $OWNER write $D 0x5ec2e8" || fail "write D's secret"
denied 0 root "unimem-gsas --tree $KEEPER read $D"
denied 0 root "unimem-gsas --tree $KEEPER write $D 1"
expect_eq "$(on 0 "unimem-gsas --tree $OWNER read $D")" 0x5ec2e8 "D after the denied write"
on 0 "unimem-gsas --tree $OWNER free $D" || fail "free D"

step "mode 0 took everything back"
for who in user other; do denied 0 "$who" "unimem-gsas read $A"; done

step "a clean kernel log"
for n in $(seq 0 $((NODES - 1))); do
  dmesg_clean "$n" "${marks[$n]}" || fail "node $n: kernel warnings"
done
echo "PASS"
