#!/usr/bin/env bash
# OpenFAM over unimem (the fam crate: famd, the metadata service, and libunimem_fam), 4 nodes
# each running the base modules, kram-daemon, unimem_gsas and gsasd; famd on node 0 with
# nodes 1-3 as its lenders. The C and C++ test programs of tests/fam (built on the host
# with tests/fam/build.sh, installed as fam-PROG) check their own results:
#  - every single-process program (regions, items, data, data-cpp, atomics, ordering,
#    options, map, interleave) on node 1 then node 2 as root, then on node 1 as the test user
#    (root passes every permission check in famd; the user does not);
#  - permissions across users: the test user creates a region and an item with modes 0600,
#    0640, 0604, 0660 and 0606, the other user (other uid and group) gets FAM_ERR_NOPERM exactly
#    where the mode says, by name and through a global descriptor, and a refused write changes
#    nothing (the owner reads it back);
#  - an open descriptor keeps its access when its item's mode narrows (to 0200, then 0), as
#    OpenFAM's do; after fam_close, and in the next process, the mode decides again;
#  - names survive famd restarting: regions and items made, famd stopped (SIGTERM) and
#    started again on its state file, then found by name on another node with their data;
#  - a region interleaved over the 3 lenders reads back what was written, its large items
#    span 3 memory servers, a non-interleaved one 1;
#  - fam_map of an item on node 2 sees what node 1 wrote, before and while mapped, and
#    node 1 sees node 2's stores through the map;
#  - fam_barrier_all with 4 PEs on nodes 1-2 (oshrun); fam_abort(5) on one of 3 PEs ends the
#    job on every PE, and oshrun exits with 5;
#  - memory-side operations (fam_queue_operation / fam_aggregate_flush, our extension): queue
#    on nodes 1 and 2 (an item interleaved over the lenders, results read back with fam_get);
#    the other user, who may only read the item, gets FAM_ERR_NOPERM at the flush of its
#    OP_ADD_INDEXED and OP_SCATTER, gathers, and the owner finds nothing changed;
#  - bad input (unknown names, offsets past the end, sizes of zero, misaligned atomics) gives
#    OpenFAM's exception and changes nothing: each program checks its own;
#  - afterwards no test program runs, no GSAS page is allocated beyond what famd held before
#    the programs ran, none once famd stopped; no kernel warnings.
source "$(dirname "$0")/lib.sh"
SYS=/sys/kernel/unimem_gsas
LOGS=/tmp/gsasd
BG=fam
STATE=/var/lib/unimem/famd.json
FAMD_CMD="famd --state $STATE --lenders 1,2,3"
FAMD_READY='famd: serving on node 0 interface 62'
# Programs find famd through /etc/unimem/fam.conf (written on every node below; oshrun's PEs
# inherit no environment but SHMEM_*); FAM_ENV adds what a step needs.
FAM_ENV=""
SINGLE="regions items data data-cpp atomics ordering options map interleave queue"
PROGS="$SINGLE perm persist barrier"
# The programs' names on the guests: fam-PROG (their own names are too common for a shared bin).
GUEST_PROGS=$(for p in $PROGS; do printf 'fam-%s ' "$p"; done)
[ "$NODES" -ge 4 ] || fail "needs 4 nodes: famd on node 0 and 3 lenders"
step "copy famd, oshrun, libunimem_fam.so and the GSAS tools; build the test programs"
share_bins famd oshrun gsasd kram-daemon unimem-gsas
share_lib unimem_fam
build=$(mktemp -d)
for a in $(cluster_arches); do
  if [ "$a" = arm64 ]; then cxx=aarch64-linux-gnu-g++; else cxx=g++; fi
  rm -rf "${build:?}"/*
  CC=$(arch_cc "$a") CXX=$cxx LIBDIR=$(userspace_bin "$a") "$ROOT/tests/fam/build.sh" "$build" ||
    fail "tests/fam/build.sh ($a)"
  for p in $PROGS; do
    [ -x "$build/$p" ] || fail "tests/fam/build.sh ($a) did not build $p"
    cp "$build/$p" "$(arch_share "$a")/bin/fam-$p"
  done
done
rm -rf "$build"

# Guest shell code: no test program left, famd stopped and gone.
STOP_FAM="killall -TERM $GUEST_PROGS oshrun 2>/dev/null; killall -TERM famd 2>/dev/null; for i in \$(seq 100); do pidof famd $GUEST_PROGS >/dev/null || break; sleep 0.1; done; killall -KILL $GUEST_PROGS 2>/dev/null; true"
cleanup() {
  stop_all "$STOP_FAM; $STOP_GSASD; $STOP_DAEMON"
  bg_cleanup
}
trap cleanup EXIT

step "every node: base modules, kram-daemon, unimem_gsas, gsasd"
fork_nodes_up "$LOGS"

# famd_up: famd started on node 0 (bg name "famd") on the state file, and ready.
famd_up() {
  bg 0 famd "$FAMD_CMD"
  wait_log 0 famd "$FAMD_READY" 30
}
# famd_down: famd stopped by SIGTERM, exiting 0 within 30 s.
famd_down() {
  on 0 "kill -TERM \$(cat /tmp/$BG-famd.pid)"
  wait_log 0 famd '^exit=0$' 30
}

step "famd on node 0, lenders 1-3, a fresh state file; /etc/unimem/fam.conf on every node"
for n in $(seq 0 $((NODES - 1))); do
  on "$n" "mkdir -p /etc/unimem && printf '# famd runs on node 0\\nfamd_node = 0\\n' > /etc/unimem/fam.conf"
done
on 0 "$STOP_FAM; mkdir -p $(dirname "$STATE") && rm -f $STATE $STATE.tree"
famd_up
declare -A base_pages
for n in $(seq 0 $((NODES - 1))); do
  base_pages[$n]=$(on "$n" "cat $SYS/used_pages")
done
echo "GSAS pages allocated with famd up: $(for n in $(seq 0 $((NODES - 1))); do printf '%s ' "${base_pages[$n]}"; done)"

# as_who WHO CMD: guest shell code running CMD as WHO: root, user (the test user) or other.
as_who() {
  case $1 in
    root) printf '%s' "$2" ;;
    user) as_user "$2" ;;
    other) as_other "$2" ;;
  esac
}
# fam_ok NODE WHO NAME CMD: runs CMD (with $FAM_ENV) on NODE as WHO; its status must be 0 and
# it must print "PE 0: NAME ok". Its output is shown and left in FAM_OUT.
fam_ok() {
  FAM_OUT=$(on_may_fail "$1" "$(as_who "$2" "$FAM_ENV $4") 2>&1; echo status=\$?") || true
  echo "$FAM_OUT"
  grep -q '^status=0$' <<<"$FAM_OUT" || fail "node $1, as $2: $4: failed"
  grep -q "^PE 0: $3 ok\$" <<<"$FAM_OUT" || fail "node $1, as $2: $4: no 'PE 0: $3 ok'"
}
# nothing_left WHEN: no test program runs anywhere, and GSAS holds what it did with famd idle.
nothing_left() {
  local n
  for n in $(seq 0 $((NODES - 1))); do
    on "$n" "! pidof $GUEST_PROGS oshrun" >/dev/null || fail "node $n: $1: a test program still runs"
    expect_eq "$(on "$n" "cat $SYS/used_pages")" "${base_pages[$n]}" "node $n: $1: GSAS pages"
  done
}

for n in 1 2; do
  for p in $SINGLE; do
    step "$p on node $n"
    args=/opt/unimem/bin/fam-$p
    [ "$p" != interleave ] || args="$args 3"
    fam_ok "$n" root "$p" "$args"
  done
done
nothing_left "after the programs as root"

step "bad input and the data path as the test user (not root: famd's permission checks apply)"
for p in regions items data data-cpp atomics ordering map; do
  fam_ok 1 user "$p" "/opt/unimem/bin/fam-$p $p-user"
done
nothing_left "after the programs as the test user"

step "permissions across users: owner $TEST_USER on node 1, the other user on node 2"
for case in 0600:none 0640:none 0604:read 0660:none 0606:write; do
  mode=${case%:*} expect=${case#*:}
  region=fam-perm-$mode
  echo "mode $mode: the other user may $expect"
  fam_ok 1 user "perm owner" "/opt/unimem/bin/fam-perm owner $region item $mode"
  global=$(sed -n 's/^global \([0-9]*\) \([0-9]*\)$/\1:\2/p' <<<"$FAM_OUT")
  [ -n "$global" ] || fail "perm owner printed no global descriptor"
  fam_ok 2 other "perm other" "/opt/unimem/bin/fam-perm other $region item $expect $global"
  fam_ok 1 user "perm check" "/opt/unimem/bin/fam-perm check $region item $expect"
done
step "an open descriptor keeps its access across narrower modes (GSAS KEEP), until closed"
fam_ok 1 user "perm keep" "/opt/unimem/bin/fam-perm keep fam-keep item"
fam_ok 1 user "perm keep-after" "/opt/unimem/bin/fam-perm keep-after fam-keep item"
nothing_left "after the permission checks"

step "names survive famd restarting"
fam_ok 1 root "persist create" "/opt/unimem/bin/fam-persist create fam-persist"
anon=$(sed -n 's/^anon \([0-9]*\) \([0-9]*\)$/\1:\2/p' <<<"$FAM_OUT")
[ -n "$anon" ] || fail "persist create printed no global descriptor"
# As the test user too: a region of another owner survives with its owner.
fam_ok 1 user "persist create" "/opt/unimem/bin/fam-persist create fam-persist-user"
famd_down
on 0 "test -s $STATE" || fail "famd left no state file $STATE"
on 0 "! pidof famd" >/dev/null || fail "famd still runs after SIGTERM"
famd_up
fam_ok 2 root "persist check" "/opt/unimem/bin/fam-persist check fam-persist $anon"
fam_ok 2 user "persist check" "/opt/unimem/bin/fam-persist check fam-persist-user"
nothing_left "after the restart"

step "interleaving over the 3 lenders"
fam_ok 3 root interleave "/opt/unimem/bin/fam-interleave 3 fam-interleave-n3"

step "fam_map on node 2 sees node 1's writes, node 1 sees node 2's stores"
fam_ok 1 root "map writer" "/opt/unimem/bin/fam-map writer fam-map-x"
bg 2 mapreader "exec env $FAM_ENV /opt/unimem/bin/fam-map reader fam-map-x"
wait_log 2 mapreader 'reader: mapped' 60
fam_ok 1 root "map poke" "/opt/unimem/bin/fam-map poke fam-map-x"
wait_log 2 mapreader '^exit=' 90
out=$(on 2 "cat /tmp/$BG-mapreader.log")
echo "$out"
grep -q '^exit=0$' <<<"$out" || fail "map reader failed"
grep -q '^PE 0: map reader ok$' <<<"$out" || fail "map reader: no 'map reader ok'"
fam_ok 1 root "map check" "/opt/unimem/bin/fam-map check fam-map-x"
nothing_left "after the cross-node map"

step "queued memory-side operations: the other user may only read: NOPERM, nothing changed"
fam_ok 1 user "queue owner" "/opt/unimem/bin/fam-queue owner fam-queue-perm"
fam_ok 2 other "queue other" "/opt/unimem/bin/fam-queue other fam-queue-perm"
fam_ok 1 user "queue check" "/opt/unimem/bin/fam-queue check fam-queue-perm"
nothing_left "after the queued operations across users"

step "fam_barrier_all: 4 PEs on nodes 1-2"
out=$(on_may_fail 0 "$FAM_ENV oshrun -np 4 --nodes 1-2 /opt/unimem/bin/fam-barrier fam-barrier-x 2>&1; echo status=\$?") || true
echo "$out"
grep -q '^status=0$' <<<"$out" || fail "barrier: status"
expect_eq "$(grep -c 'PE [0-3]: barrier ok$' <<<"$out")" 4 "barrier: PEs that passed"
nothing_left "after the barrier"

step "fam_abort(5) on PE 0 of 3 on nodes 1-2 ends the job everywhere with status 5"
out=$(on_may_fail 0 "$FAM_ENV oshrun -np 3 --nodes 1-2 /opt/unimem/bin/fam-barrier fam-abort-x abort 5 2>&1; echo status=\$?") || true
echo "$out"
grep -q '^status=5$' <<<"$out" || fail "fam_abort(5): oshrun's status"
if grep -q 'survived' <<<"$out"; then fail "a PE survived fam_abort"; fi
nothing_left "after fam_abort"

step "famd stops cleanly; nothing left; a clean kernel log"
famd_down
for n in $(seq 0 $((NODES - 1))); do
  on "$n" "! pidof famd $GUEST_PROGS oshrun" >/dev/null || fail "node $n: a program still runs"
  on "$n" "for i in \$(seq 100); do [ \$(cat $SYS/used_pages) = 0 ] && exit 0; sleep 0.2; done; exit 1" ||
    fail "node $n: GSAS pages still allocated after famd stopped: $(on "$n" "cat $SYS/used_pages")"
done
for n in $(seq 0 $((NODES - 1))); do
  dmesg_clean "$n" "${marks[$n]}" || fail "node $n: kernel warnings"
done
echo "PASS"
