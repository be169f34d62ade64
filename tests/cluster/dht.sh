#!/usr/bin/env bash
# The DHT on GSAS (userspace/dht: unimem-dht and libdht), 4 nodes, every node running its
# atomic service (unimem_gsas.ko, its pool from its own kram-daemon):
#  - a table over nodes 0-3: put, get, replace, delete from different nodes, each result
#    checked; the invalid value and bad roots refused with clear errors;
#  - a create that cannot finish (a node without room) leaves no allocation behind;
#  - a writer stopped while holding a lock makes others fail with EBUSY; once killed, its lock
#    is broken by the next put (the holder's interface is asked with IFACE_STATE);
#  - the concurrency checker: 4 nodes x 4 threads put, get and delete on one table at once; every
#    get returned a value put for that key, never a torn one, and no update is lost; the checker
#    itself fails when values are torn on purpose;
#  - a process of another protection tree is denied every operation; the table is unchanged;
#  - the C examples (gcc via pkg-config dht on the host) on the nodes;
#  - destroy frees every page, also containers allocated but never linked (found by their tag,
#    the root), and not another tree's page with the same tag: the services' allocation counts
#    are back where they started.
# Jobs run as root; dht_as_user.sh runs them as the unprivileged test user, in a tree that
# `unimem-gsas share-tree` serves on every node (lib.sh: job, share_tree_up).
source "$(dirname "$0")/lib.sh"
MODS=/opt/unimem/modules
SYS=/sys/kernel/unimem_gsas
# A protection tree no node makes (node field 14, another serial than gsas.sh's).
TREE=0x0e0011
OTHER_TREE=0x0e0012
CHECK_OPS=${DHT_CHECK_OPS:-300}
[ "$NODES" -ge 4 ] || fail "needs 4 nodes"
BG=dhtt

step "copy unimem-dht, its rig, libdht.so and the C examples (gcc + pkg-config dht on the host) to the nodes"
share_bins unimem-dht unimem-dht-test unimem-gsas kram-daemon gsasd
c_examples dht "" "$ROOT/userspace/dht/examples" dht_hello dht_threads

# Tables and allocations of tree $TREE to free at the end (the service refuses to unload while
# pages are allocated).
TABLES=() ALLOCS=()
cleanup() {
  local t
  for t in "${TABLES[@]}"; do
    "$CLUSTER" exec 0 --timeout 60 -- "unimem-dht --tree $TREE destroy $t" >/dev/null 2>&1 || true
  done
  gsas_cleanup "$TREE" "${ALLOCS[@]}"
}
trap cleanup EXIT

d() { local n=$1; shift; job "$n" "unimem-dht $(tree_opt) $*"; }
g() { local n=$1; shift; job "$n" "unimem-gsas $(tree_opt) $*"; }
allocations() { local n s=""; for n in $(seq 0 $((NODES - 1))); do s+="$(on "$n" "cat $SYS/allocations") "; done; echo "$s"; }
# drop DIR VALUE: removes VALUE from the array named DIR (it was freed by the test itself).
drop() { local -n arr=$1; local keep=() x; for x in "${arr[@]}"; do [ "$x" = "$2" ] || keep+=("$x"); done; arr=("${keep[@]}"); }
num() { sed -n "s/.*\"$1\":\\([0-9]*\\).*/\\1/p" <<<"$2"; }

step "every node: base modules, kram-daemon, unimem_gsas (pool from its own daemon); jobs run as $(who_runs)"
job_nodes_up "$MODS/unimem_gsas.ko"
base=$(allocations)
echo "allocations per node before: $base"

step "a table over nodes 0-3 (made on node 1); operations from every node"
out=$(d 1 create --nodes 0,1,2,3 --capacity 64 --json)
echo "node 1: $out"
T=$(sed -n 's/.*"root":"\(0x[0-9a-f]*\)".*/\1/p' <<<"$out")
[ -n "$T" ] || fail "create printed no root"
TABLES+=("$T")
expect_eq "$(d 3 get "$T" 42)" invalid "a key never put (node 3)"
d 0 put "$T" 42 0x1111 --high 0x2222
expect_eq "$(d 3 get "$T" 42)" "0x1111 0x2222" "put from 0, get from 3"
d 2 put "$T" 42 0x3333 --high 0x4444
expect_eq "$(d 1 get "$T" 42)" "0x3333 0x4444" "replaced from 2, read from 1"
for k in $(seq 100 139); do d $((k % 4)) put "$T" "$k" "$((k * 7))" >/dev/null; done
for k in 100 117 139; do expect_eq "$(d $(((k + 1) % 4)) get "$T" "$k")" "$(printf '%#x 0x0' $((k * 7)))" "key $k read from another node"; done
expect_eq "$(d 3 delete "$T" 117)" deleted "delete from 3"
expect_eq "$(d 0 delete "$T" 117)" absent "delete again from 0"
expect_eq "$(d 0 get "$T" 117)" invalid "get after delete"
out=$(d 2 stats "$T" --json)
echo "node 2: $out"
expect_eq "$(num keys "$out")" 40 "keys in the table (41 put, 1 deleted)"
expect_eq "$(num locked "$out")" 0 "locked entries"
expect_eq "$(num malformed "$out")" 0 "malformed entries"

step "bad input: each a clear error, nothing made or changed"
out=$(job_may_fail 1 "unimem-dht $(tree_opt) put $T 5 0xffffffffffffffff --high 0xffffffffffffffff 2>&1") && fail "the invalid value was stored"
echo "$out"; grep -q "invalid value" <<<"$out" || fail "no clear error for the invalid value"
expect_eq "$(d 1 get "$T" 5)" invalid "nothing stored by the refused put"
P=$(g 0 alloc --node 2); ALLOCS+=("$P")
out=$(job_may_fail 0 "unimem-dht $(tree_opt) get $P 1 2>&1") && fail "a page that is no table opened"
echo "$out"; grep -q "no table here" <<<"$out" || fail "no clear error for a page that is no table"
out=$(job_may_fail 0 "unimem-dht $(tree_opt) get $(printf '%#x' $((T + 8))) 1 2>&1") && fail "a root inside a page opened"
echo "$out"; grep -q "not a table root" <<<"$out" || fail "no clear error for an unaligned root"
for bad in "--nodes 0,0 --capacity 10" "--nodes 0,1 --capacity 0" "--nodes 0,1 --capacity 100000000"; do
  out=$(job_may_fail 2 "unimem-dht $(tree_opt) create $bad 2>&1") && fail "create $bad succeeded"
  echo "create $bad: $out"
done
# Node 3 without room for its slice: the pages already taken on 0-2 are freed again.
pool3=$(on 3 "cat $SYS/pool_pages") used3=$(on 3 "cat $SYS/used_pages")
# Root fills it (in the job's tree): a user's share of a pool (user_pages_pct) is not all of it.
F=$(on 0 "unimem-gsas --tree $TREE alloc --node 3 --pages $((pool3 - used3 - 4))"); ALLOCS+=("$F")
before=$(allocations)
out=$(job_may_fail 1 "unimem-dht $(tree_opt) create --nodes 0,1,2,3 --capacity 20000 2>&1") && fail "create without room on node 3 succeeded"
echo "$out"; grep -q "not enough free GSAS pages" <<<"$out" || fail "no clear error for a node without room"
expect_eq "$(allocations)" "$before" "allocations per node after the failed create"
g 0 free "$F"; drop ALLOCS "$F"
g 0 free "$P"; drop ALLOCS "$P"

step "a writer that stops holding a lock: others fail with EBUSY naming it; once it is killed, the next put breaks its lock"
d 0 put "$T" 77 0x77
# exec: the pid bg records is the holder's, also under setpriv (as_job).
bg_job 2 hold "exec unimem-dht-test $(tree_opt) hold $T 77"
wait_log 2 hold '^held key'
on 2 "kill -STOP \$(cat /tmp/$BG-hold.pid)"
out=$(job_may_fail 1 "DHT_BUSY_MS=2000 unimem-dht $(tree_opt) put $T 77 0x78 2>&1") && fail "a put went through the lock of a live holder"
echo "$out"; grep -q "still locked by node 2 interface" <<<"$out" || fail "no clear EBUSY naming the holder"
on 2 "kill -9 \$(cat /tmp/$BG-hold.pid)"
wait_log 2 hold '^exit='
out=$(job 1 "unimem-dht $(tree_opt) put $T 77 0x79 2>&1")
echo "$out"; grep -q "broke the lock of node 2 interface" <<<"$out" || fail "the dead holder's lock was not broken (or not said)"
expect_eq "$(d 3 get "$T" 77)" "0x79 0x0" "the put that broke the lock (get from node 3)"

step "the concurrency checker: 4 nodes x 4 threads x $CHECK_OPS operations on table $T at once"
B=$(g 0 alloc --node 0); ALLOCS+=("$B")
# The last-writes files of an earlier run (root's, in sticky /tmp) would be the job user's to
# overwrite: gone first.
for n in $(seq 0 3); do on "$n" "rm -f /tmp/dht-last-$n"; done
for n in $(seq 0 3); do
  bg_job "$n" check "unimem-dht-test $(tree_opt) check $T --threads 4 --ops $CHECK_OPS --barrier $B --parties 4 --last-writes /tmp/dht-last-$n --json"
done
ops=0 foreign=0 found=0
for n in $(seq 0 3); do
  TIMEOUT=600 wait_log "$n" check '^exit=' 600
  out=$(on "$n" "cat /tmp/$BG-check.log")
  echo "node $n: $out"
  grep -q '^exit=0$' <<<"$out" || fail "node $n: the checker found violations or failed"
  expect_eq "$(num violations "$out")" 0 "node $n: violations"
  expect_eq "$(num torn "$out")" 0 "node $n: torn values"
  ops=$((ops + $(num puts "$out") + $(num gets "$out") + $(num deletes "$out")))
  foreign=$((foreign + $(num foreign "$out")))
  found=$((found + $(num gets_found "$out")))
done
expect_eq "$ops" $((16 * CHECK_OPS)) "operations checked"
[ "$found" -gt 0 ] || fail "no get found a value"
[ "$foreign" -gt 0 ] || fail "no get saw another node's value: the processes did not share keys"
echo "$ops operations, $found gets found a value ($foreign written on another node): no violation"
# The keys all four processes wrote: every process's last writes, through the 9p share.
# Node 1 reads them: its architecture's share.
SHARE=$(node_share 1)
for n in $(seq 0 3); do on "$n" "cat /tmp/dht-last-$n" >"$SHARE/dht-last-$n"; done
out=$(job 1 "unimem-dht-test $(tree_opt) check-final $T /opt/unimem/dht-last-0 /opt/unimem/dht-last-1 /opt/unimem/dht-last-2 /opt/unimem/dht-last-3 --json") || { echo "$out"; fail "an update to a key all nodes shared was lost"; }
echo "node 1: $out"
[ "$(num keys "$out")" -gt 0 ] || fail "no key shared by all nodes was checked"
lw=$(cat "$SHARE"/dht-last-*)
rm -f "$SHARE"/dht-last-*
out=$(d 2 stats "$T" --json)
echo "node 2: $out"
expect_eq "$(num locked "$out")" 0 "locked entries after the check"
expect_eq "$(num malformed "$out")" 0 "malformed entries after the check"
[ "$(num containers "$out")" -gt 0 ] || fail "hundreds of keys in 512 first-level entries made no container"

step "can fail: check-final reports a shared key that holds an earlier write (a lost update)"
read -r k _ <<<"$(grep -v ' -$' <<<"$lw" | head -1)"
[ -n "$k" ] || fail "no put among the last writes"
printf '%s\n' "$lw" >"$SHARE/dht-last-all"
d 2 put "$T" "$k" 0x5 >/dev/null
! job_may_fail 1 "unimem-dht-test $(tree_opt) check-final $T /opt/unimem/dht-last-all" >/dev/null || fail "check-final passed a value no thread wrote last"
rm -f "$SHARE/dht-last-all"

step "can fail: the checker reports values torn on purpose"
out=$(job_may_fail 2 "unimem-dht-test $(tree_opt) check $T --threads 2 --ops 50 --inject-torn 5 --seed 9 --json 2>&1") && fail "the checker passed torn values"
echo "$out" | tail -3
[ "$(num torn "$(tail -1 <<<"$out")")" -gt 0 ] || fail "the checker counted no torn value"

step "another tree (fresh, node 3) is denied every operation; the table is unchanged"
layout=$(d 2 stats "$T" | sed -n 's/^layout: //p')
before=$(d 0 get "$T" 42)
den0=$(on 0 "cat $SYS/denied")
out=$(job 3 "unimem-dht-test denied $T $layout") || { echo "$out"; fail "another tree was not denied"; }
tail -1 <<<"$out"
[ "$(( $(on 0 "cat $SYS/denied") - den0 ))" -gt 0 ] || fail "node 0 counted no denial"
expect_eq "$(d 1 get "$T" 42)" "$before" "key 42 after the other tree's attempts"
step "can fail: the table's own tree is not denied"
! job_may_fail 3 "unimem-dht-test $(tree_opt) denied $T $layout --keys 1" >/dev/null || fail "the owner's tree was denied"

step "the C examples (built with gcc via pkg-config dht) on the nodes"
expect_out 2 '^dht-hello: ok$' "dht-hello on node 2" "$(as_job "dht-hello 4")"
expect_out 1 '4 threads x 40 keys, 0 errors' "dht-threads on node 1 (its own table)" "$(as_job "dht-threads 4 40")"
expect_out 3 '2 threads x 20 keys, 0 errors' "dht-threads on node 3 (table $T, opened by its root)" \
  "$(as_job "unimem-gsas $(tree_opt) exec -- dht-threads 2 20 $T")"

step "destroy frees every page, also containers allocated but never linked (tagged with the root); not another tree's; no kernel warnings"
# Containers of this tree that a writer lost (the allocation answered too late, or it died
# before linking them): pages tagged with the table's root, linked nowhere.
LOST1=$(g 2 alloc --node 1 --tag "$T") LOST2=$(g 0 alloc --node 3 --pages 2 --tag "$T")
# Another tree's page with the same tag survives.
FOREIGN=$(on 2 "unimem-gsas --tree $OTHER_TREE alloc --node 1 --tag $T")
out=$(d 3 destroy "$T" --json)
echo "node 3: $out"
drop TABLES "$T"
expect_eq "$(num free_errors "$out")" 0 "frees that failed"
expect_eq "$(num unlinked "$out")" 2 "unlinked containers freed ($LOST1, $LOST2)"
out=$(job_may_fail 0 "unimem-gsas $(tree_opt) free $LOST1 2>&1") && fail "$LOST1 was still allocated after destroy"
on 2 "unimem-gsas --tree $OTHER_TREE free $FOREIGN" || fail "another tree's page with the table's tag did not survive destroy"
out=$(job_may_fail 0 "unimem-gsas $(tree_opt) free-tag --node 1 --tag 0 2>&1") && fail "FREE_TAG of tag 0 succeeded"
echo "$out"; grep -q "INVALID\|invalid" <<<"$out" || fail "no clear error for FREE_TAG of tag 0"
out=$(job_may_fail 0 "unimem-dht $(tree_opt) get $T 42 2>&1") && fail "a destroyed table opened"
g 0 free "$B"; drop ALLOCS "$B"
expect_eq "$(allocations)" "$base" "allocations per node after destroy"
for n in $(seq 0 $((NODES - 1))); do
  dmesg_clean "$n" "${marks[$n]}" || fail "node $n logged a kernel warning"
done
echo "dht: all checks passed"
