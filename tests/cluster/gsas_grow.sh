#!/usr/bin/env bash
# The GSAS page pool grows on demand (unimem_gsas pool_max_mib, kernel/gsas/grow.rs), with raw
# requests (`unimem-mbox-test gsas-raw`, which shows every STALLED answer) and the library (which
# asks again through them):
#  - bad pool_max_mib values fail insmod with a message;
#  - an ALLOC that finds no room is answered STALLED while the pool borrows its next range from
#    the node's own kram-daemon (another instance id, shown GSAS), then succeeds in that range;
#  - a span from the end of one range into the next is FAULT even when both pages are the
#    tree's: the next range lies elsewhere in memory (without that check, such a read returns
#    whatever follows the range in the partition);
#  - past pool_max_mib, or when the daemon has no memory to lend, the ALLOC gets NO_MEMORY
#    (counted, logged), and a smaller one still grows the pool;
#  - a growth the daemon can only partly satisfy takes what the allocation needs;
#  - unused ranges at the pool's end go back to the daemon before it grows again;
#  - unload wipes and returns every range.
GSAS_POOL_MAX_MIB=40
source "$(dirname "$0")/lib.sh"
MODS=/opt/unimem/modules
KO=$MODS/unimem_gsas.ko
SYS=/sys/kernel/unimem_gsas
HOME_NODE=2
# A protection tree no node makes (node field 15): SET_TREE'd into the test's processes.
TREE=0x0f0002
[ "$NODES" -ge 3 ] || fail "needs at least 3 nodes"
share_bins kram-daemon unimem-mbox-test unimem-gsas

BG=gsasgrow
cleanup() {
  for n in $(seq 0 $((NODES - 1))); do
    "$CLUSTER" exec "$n" --timeout "$STOP_TIMEOUT" -- "rmmod unimem_gsas 2>/dev/null; $STOP_DAEMON" >/dev/null 2>&1 || true
  done
  bg_cleanup
}
trap cleanup EXIT

raw() { local n=$1; shift; on "$n" "unimem-mbox-test gsas-raw --node $HOME_NODE --tree $TREE $*"; }
counter() { on "$HOME_NODE" "cat $SYS/$1"; }
# alloc_retry PAGES: ALLOC until the answer is not STALLED (20 s at most); prints the last output.
alloc_retry() {
  local out i
  for i in $(seq 40); do
    out=$(raw 0 "alloc:0:$1")
    [ "$(status_of "$out" 0)" = STALLED ] || break
    sleep 0.5
  done
  echo "$out"
}
MiB=$((1 << 20))

step "load the base modules; dmesg marks; node $HOME_NODE's kram-daemon lends 24 MiB"
declare -A marks
for n in $(seq 0 $((NODES - 1))); do
  load_base "$n"
  on "$n" "rmmod unimem_gsas 2>/dev/null; true"
  marks[$n]=$(dmesg_mark "$n")
done
kram_daemon "$HOME_NODE" --chunks 24 --offer-timeout 6
daemon_serving "$HOME_NODE"

step "bad pool_max_mib values fail insmod with a message and leave nothing"
for param in "pool_mib=8 pool_max_mib=4" "pool_max_mib=20000"; do
  ! on_may_fail "$HOME_NODE" "insmod $KO $param" 2>/dev/null || fail "insmod accepted $param"
  on "$HOME_NODE" "dmesg | tail -3 | grep -q 'unimem_gsas: pool_max_mib=.* is out of range' && ! test -e $SYS" ||
    fail "$param: no message, or left sysfs"
done
on "$HOME_NODE" "modinfo -F parm $KO | grep -q '^pool_max_mib:'"

step "a pool of 4 MiB that may grow to 40: one range, instance 14"
on "$HOME_NODE" "insmod $KO $GSAS_ARGS pool_mib=4"
expect_eq "$(counter pool_pages)" 1024 "pool pages"
expect_eq "$(counter pool_max_pages)" 10240 "most pool pages"
expect_eq "$(counter pool_ranges)" 1 "ranges"
on "$HOME_NODE" "kram-daemon --status | grep -E 'lent to node $HOME_NODE instance 14 \\(GSAS\\)'"

step "the first range filled (1024 pages); an ALLOC of 512 more is STALLED while the pool grows"
out=$(raw 0 "alloc:0:1024" "write:A+$((4 * MiB - 8)):0x11")
echo "$out"
expect_resp "$out" 0 OK
expect_resp "$out" 1 OK
A=$(value_of "$out" 0)
grown=$(counter pool_grown) stalled=$(counter stalled)
out=$(raw 0 "alloc:0:512")
echo "$out"
expect_resp "$out" 0 STALLED
for _ in $(seq 40); do [ "$(counter pool_ranges)" = 2 ] && break; sleep 0.5; done
expect_eq "$(counter pool_ranges)" 2 "ranges after growing"
# It asks for as much as the pool holds (4 MiB) when that covers the allocation.
expect_eq "$(counter pool_pages)" 2048 "pool pages after growing"
expect_eq "$(counter pool_grown)" $((grown + 1)) "pool_grown"
[ "$(counter stalled)" -gt "$stalled" ] || fail "the STALLED answer was not counted"
on "$HOME_NODE" "kram-daemon --status | grep -E 'lent to node $HOME_NODE instance 13 \\(GSAS\\)'"
on "$HOME_NODE" "dmesg | tail -5 | grep 'page pool grows by 4 MiB'"

step "asked again, the ALLOC succeeds in the new range; both ranges hold their data"
out=$(raw 0 "alloc:0:512" "write:A:0x22" "read:A" "read:$((A + 4 * MiB - 8))")
echo "$out"
expect_resp "$out" 0 OK
expect_resp "$out" 2 OK 0x22
expect_resp "$out" 3 OK 0x11
B=$(value_of "$out" 0)
range1=$(on "$HOME_NODE" "grep '^pool_range ' /sys/kernel/debug/unimem_gsas/stats | sed -n 2p")
echo "ranges: $(on "$HOME_NODE" "grep '^pool_range ' /sys/kernel/debug/unimem_gsas/stats | tr '\n' ';'")"
[ "$(( B & 0xffffffffffff ))" = "$(( $(awk '{print $2}' <<<"$range1") ))" ] ||
  fail "the allocation at $B is not at the start of the second range ($range1)"

step "a span from the end of the first range into the second is FAULT (both pages are the tree's)"
out=$(raw 0 "bulk_read:$((A + 4 * MiB - 16)):16" "bulk_read:$((A + 4 * MiB - 8)):16" "bulk_write:$((A + 4 * MiB - 8)):16")
echo "$out"
expect_resp "$out" 0 OK
expect_resp "$out" 1 FAULT
expect_resp "$out" 2 FAULT

step "past pool_max_mib: NO_MEMORY at once, no growth tried"
failed=$(counter pool_grow_failed)
out=$(raw 0 "alloc:0:9000")
echo "$out"
expect_resp "$out" 0 NO_MEMORY
expect_eq "$(counter pool_grow_failed)" "$failed" "growths tried for an ALLOC past the maximum"

step "more than the daemon has (16 MiB free, 20 MiB asked): STALLED, then NO_MEMORY, counted and logged"
out=$(alloc_retry 5120)
echo "$out"
expect_resp "$out" 0 NO_MEMORY
expect_eq "$(counter pool_grow_failed)" $((failed + 1)) "failed growths"
expect_eq "$(counter pool_ranges)" 2 "ranges after a failed growth"
on "$HOME_NODE" "dmesg | tail -5 | grep 'could not grow by 5120 pages'"
out=$(raw 0 "alloc:0:5120")
expect_resp "$out" 0 NO_MEMORY

step "a smaller ALLOC (12 MiB) still grows the pool"
out=$(alloc_retry 3072)
echo "$out"
expect_resp "$out" 0 OK
C=$(value_of "$out" 0)
expect_eq "$(counter pool_ranges)" 3 "ranges"
expect_eq "$(counter pool_pages)" $((2048 + 3072)) "pool pages"

step "through the library: an ALLOC of 4 MiB more takes the daemon's last 4 MiB (asked 20, a partial grant)"
D=$(on 0 "unimem-gsas --tree $TREE alloc --node $HOME_NODE --pages 1024")
echo "allocation $D"
expect_eq "$(counter pool_ranges)" 4 "ranges"
expect_eq "$(counter pool_pages)" $((2048 + 3072 + 1024)) "pool pages"
on "$HOME_NODE" "kram-daemon --status | grep -q '^free 0, offered 0, lent 24'"
on 0 "unimem-gsas --tree $TREE write $D 99 && unimem-gsas --tree $TREE read $D" | grep -qx 0x63 ||
  fail "the library's allocation in the fourth range did not read back"

step "everything freed but the first range's allocation: a 16 MiB ALLOC gives the three unused ranges back, then grows"
out=$(raw 0 "free:$B" "free:$C" "free:$D")
echo "$out"
for k in 0 1 2; do expect_resp "$out" "$k" OK; done
for _ in $(seq 50); do [ "$(counter used_pages)" = 1024 ] && break; sleep 0.2; done
expect_eq "$(counter used_pages)" 1024 "used pages once zeroed"
shrunk=$(counter pool_shrunk)
# The daemon has nothing free: only what the unused ranges give back can make 16 MiB.
out=$(alloc_retry 4096)
echo "$out"
expect_resp "$out" 0 OK
E=$(value_of "$out" 0)
expect_eq "$(counter pool_shrunk)" $((shrunk + 3)) "ranges given back"
expect_eq "$(counter pool_ranges)" 2 "ranges"
expect_eq "$(counter pool_pages)" $((1024 + 4096)) "pool pages"
on "$HOME_NODE" "dmesg | tail -8 | grep -c 'unused: wiped and returned'" | grep -qx 3 || fail "the unused ranges were not returned wiped"
on "$HOME_NODE" "kram-daemon --status | grep -q '^free 4, offered 0, lent 20'" || fail "the daemon does not show 20 MiB lent"
out=$(raw 0 "read:$((E + 4096 * 4095))" "read:$((A + 4 * MiB - 8))")
expect_resp "$out" 0 OK 0
expect_resp "$out" 1 OK 0x11

step "free everything; unload wipes and returns both ranges"
out=$(raw 0 "free:$A" "free:$E")
echo "$out"
for k in 0 1; do expect_resp "$out" "$k" OK; done
for _ in $(seq 50); do [ "$(counter used_pages)" = 0 ] && break; sleep 0.2; done
expect_eq "$(counter used_pages)" 0 "used pages once zeroed"
on "$HOME_NODE" "rmmod unimem_gsas && ! test -e $SYS"
on "$HOME_NODE" "dmesg | tail -4 | grep -c 'MiB wiped and returned'" | grep -qx 2 || fail "not every range was returned wiped"
on "$HOME_NODE" "for i in \$(seq 20); do kram-daemon --status | grep -q '^free 24, offered 0, lent 0' && exit 0; sleep 0.5; done; kram-daemon --status; exit 1" ||
  fail "the daemon did not get every range back"

step "no kernel warnings"
for n in $(seq 0 $((NODES - 1))); do
  dmesg_clean "$n" "${marks[$n]}" || fail "node $n logged a kernel warning"
done
echo "gsas_grow: all checks passed"
