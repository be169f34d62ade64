#!/usr/bin/env bash
# OpenSHMEM over GSAS (issue 12), 4 nodes, each running unimem_gsas and gsasd:
#  - the C test programs of tests/shmem (built on the host with oshcc) run with oshrun from
#    node 0 as 6 PEs on nodes 1-3 (2 per node), each checking its own results: setup and
#    the symmetric heap, static data, RMA, atomics, locks and point-to-point sync,
#    collectives, two threads per PE calling at once (SHMEM_THREAD_MULTIPLE); OpenSHMEM 1.5
#    put-with-signal, multi-variable waits and tests, non-blocking atomics, teams (splits,
#    SHARED, team contexts: their SHMEM_TEAM_NUM_CONTEXTS limit and team PE numbers, C11 forms
#    too) and team collectives (zero-element ones with NULL buffers too); the collectives and
#    teams again as 8 PEs on all 4 nodes;
#  - standard OpenSHMEM programs compiled with oshcc unchanged: spec_example.c (written as the
#    specification's examples, 1.3 calls included) and ring11.c (1.4, C11 generic interfaces);
#  - shmem_global_exit(STATUS) from the last PE while the others wait in a barrier: every PE
#    stops and oshrun exits with STATUS (7, and 0);
#  - can fail: a PE out of range and a non-symmetric address end the job with a clear
#    message and a non-zero status, within seconds; SIGINT and SIGTERM to oshrun stop every
#    PE; so does a PE that exits without shmem_finalize while others wait for it; oshrun killed
#    with SIGKILL: its agents stop the PEs and free their pages and the job's; bad oshrun
#    arguments are refused;
#  - afterwards no PE runs on any node and no GSAS page is allocated; no kernel warnings.
# In a cluster of x86_64 and arm64 nodes (scripts/test.sh --arch), only that a job mixing
# architectures is refused with a clear message: every PE must run the same executable.
# Jobs run as root; shmem_as_user.sh runs oshrun as the unprivileged test user (lib.sh: job).
source "$(dirname "$0")/lib.sh"
SYS=/sys/kernel/unimem_gsas
LOGS=/tmp/gsasd
PROGS="setup rma amo sync coll threads ctx errors global_exit spec_example ring11 signal wait15 amo_nbi teams team_coll team_ctx nop_coll"
[ "$NODES" -ge 4 ] || fail "needs 4 nodes"
BG=shm

step "copy oshrun, libshmem.so and the GSAS tools; build the test programs with oshcc"
share_bins oshrun gsasd kram-daemon unimem-gsas
share_lib shmem
oshcc_progs $PROGS

# Guest shell code: no oshrun, agent or PE left (oshrun frees what its PEs left allocated).
STOP_JOBS="killall -TERM oshrun 2>/dev/null; for i in \$(seq 100); do pidof oshrun $PROGS >/dev/null || break; sleep 0.1; done; killall -KILL $PROGS 2>/dev/null; true"
cleanup() {
  stop_all "$STOP_JOBS; $STOP_GSASD; $STOP_DAEMON"
  bg_cleanup
}
trap cleanup EXIT

# GSAS pools that grow as large as the heaps programs expect (tests-sos allocates 16-32 MiB):
# each starts at the default 16 MiB and may grow to SHMEM_POOL_MIB, which sizes oshrun's default
# heap: with 2 PEs a node 128 MiB as root, 64 MiB as a user (user_pages_pct=50). The pools live
# in the nodes' GAS partitions (host memory), not in the VMs' RAM; partitions of at least
# SHMEM_POOL_MIB + 11 MiB are needed (kram-daemon lends from 3 MiB on; scripts/test.sh gives 2 GiB).
SHMEM_POOL_MIB=${SHMEM_POOL_MIB:-320}
export KRAM_CHUNKS=$((SHMEM_POOL_MIB + 8))
gsas_arg pool_max_mib="$SHMEM_POOL_MIB"
step "every node: base modules, kram-daemon ($KRAM_CHUNKS MiB), unimem_gsas (pool growing to $SHMEM_POOL_MIB MiB), gsasd; jobs run as $(who_runs)"
fork_nodes_up "$LOGS"

# nothing_left: no PE or oshrun runs anywhere, and no GSAS page is allocated (within 30 s: a freed
# heap of more than 1 MiB counts as used until the service's zeroing work has wiped it).
nothing_left() {
  local n
  for n in $(seq 0 $((NODES - 1))); do
    on "$n" "! pidof oshrun $PROGS" >/dev/null || fail "node $n: $1: a PE or oshrun is still running"
    on "$n" "for i in \$(seq 150); do [ \$(cat $SYS/used_pages) = 0 ] && exit 0; sleep 0.2; done; exit 1" ||
      expect_eq "$(on "$n" "cat $SYS/used_pages")" 0 "node $n: $1: GSAS pages still allocated"
  done
}

# run_ok NAME NP NODES: oshrun on node 0 (with $RUN_ENV in its environment); every PE must
# print "NAME ok" and the status be 0.
run_ok() {
  local out
  out=$(on_may_fail 0 "$(as_job "${RUN_ENV:-} oshrun -np $2 --nodes $3 /opt/unimem/bin/$1") 2>&1; echo status=\$?") || true
  echo "$out"
  grep -q '^status=0$' <<<"$out" || fail "$1 as $2 PEs on nodes $3"
  expect_eq "$(grep -c "^PE [0-9]*: $1 ok" <<<"$out")" "$2" "$1: PEs that passed"
}

if [ "$(cluster_arches | wc -l)" -gt 1 ]; then
  # A job's PEs must run one executable (its symmetric variables are at offsets of that build):
  # across x86_64 and arm64 nodes it cannot work, and must be refused before any PE writes.
  step "a mixed cluster ($(cluster_arches | paste -sd' ')): a job on every node is refused at shmem_init, clearly"
  out=$(on_may_fail 0 "$(as_job "oshrun -np $NODES --nodes 0-$((NODES - 1)) /opt/unimem/bin/setup") 2>&1; echo status=\$?") || true
  echo "$out"
  grep -q '^status=0$' <<<"$out" && fail "a job mixing architectures ran"
  grep -q 'a job cannot mix architectures' <<<"$out" || fail "a job mixing architectures: no clear error"
  nothing_left "after the refused job"
  echo "shmem: the other steps need nodes of one architecture (scripts/test.sh --arch arm64 shmem)"
  exit 0
fi

for p in setup rma amo sync coll threads ctx teams team_coll team_ctx nop_coll; do
  step "$p: 6 PEs on nodes 1-3"
  run_ok "$p" 6 1-3
done
# OpenSHMEM 1.5 point-to-point: put-with-signal (data then signal, across and within nodes),
# the waits and tests on several variables, the non-blocking atomics.
for p in signal wait15 amo_nbi; do
  step "$p (1.5): 6 PEs on nodes 1-3"
  run_ok "$p" 6 1-3
done
step "puts and gets to another node's PE are copies through approved mappings, not service requests"
# rma as 2 PEs on nodes 2-3: node 3's service approves node 2's mappings of PE 1's regions
# (remote_maps) and takes no bulk write for them; with SHMEM_REMOTE_MAP=0 every put is one.
far_run() { # ENV: the bulk writes and MAP approvals node 3 counted for one rma run
  local w0 m0
  w0=$(on 3 "cat $SYS/requests_bulk_write") m0=$(on 3 "cat $SYS/remote_maps")
  RUN_ENV=$1 run_ok rma 2 2-3 >&2
  echo "$(( $(on 3 "cat $SYS/requests_bulk_write") - w0 )) $(( $(on 3 "cat $SYS/remote_maps") - m0 ))"
}
read -r writes maps <<<"$(far_run SHMEM_REMOTE_MAP=1)"
echo "mapped: $writes bulk writes, $maps MAP approvals on node 3"
[ "$maps" -ge 2 ] || fail "node 3 approved $maps mappings (heap and static data expected)"
[ "$writes" -le 2 ] || fail "node 3 served $writes bulk writes: puts did not use the mappings"
read -r writes maps <<<"$(far_run SHMEM_REMOTE_MAP=0)"
echo "not mapped: $writes bulk writes, $maps MAP approvals on node 3"
[ "$maps" = 0 ] && [ "$writes" -ge 4 ] || fail "SHMEM_REMOTE_MAP=0: $writes bulk writes and $maps approvals (the check cannot fail?)"

step "signal with every atomic through the services (SHMEM_LOCAL_ATOMICS=0)"
RUN_ENV=SHMEM_LOCAL_ATOMICS=0 run_ok signal 6 1-3
step "can fail: an unknown signal operator ends the job with a clear message"
out=$(on_may_fail 0 "$(as_job "oshrun -np 6 --nodes 1-3 /opt/unimem/bin/signal badop") 2>&1; echo status=\$?") || true
echo "$out"
grep -q '^status=1$' <<<"$out" || fail "signal badop: status"
grep -q 'shmem: PE 0: shmem_long_put_signal: unknown signal operator 7' <<<"$out" || fail "signal badop: unclear message"
! grep -q 'not reached' <<<"$out" || fail "signal badop: a PE got past the error"
nothing_left "after signal badop"
step "amo with every atomic through the services (SHMEM_LOCAL_ATOMICS=0; one-CPU nodes use CPU atomics by default)"
RUN_ENV=SHMEM_LOCAL_ATOMICS=0 run_ok amo 6 1-3

for p in coll teams team_coll team_ctx nop_coll; do
  step "$p: 8 PEs on all 4 nodes (with oshrun's node)"
  run_ok "$p" 8 0-3
done
nothing_left "after the test programs"

step "a standard OpenSHMEM program compiled with oshcc, unchanged"
out=$(on 0 "$(as_job "oshrun -np 6 --nodes 1-3 /opt/unimem/bin/spec_example")") || { echo "$out"; fail "spec_example"; }
echo "$out"
grep -q '^PE 0: PASS: 0 errors over 6 PEs$' <<<"$out" || fail "spec_example: no PASS"
expect_eq "$(grep -c '^PE [0-9]: Hello from PE [0-9] of 6$' <<<"$out")" 6 "spec_example: hello lines"

step "a 1.4-style program (C11 generic interfaces, symmetric heap), unchanged"
out=$(on 0 "$(as_job "oshrun -np 6 --nodes 1-3 /opt/unimem/bin/ring11")") || { echo "$out"; fail "ring11"; }
echo "$out"
grep -q '^PE 0: ring11: PASS (6 PEs)$' <<<"$out" || fail "ring11: no PASS"

step "can fail: a PE out of range, a non-symmetric address: clear message, job stopped"
for mode in pe sym; do
  start=$SECONDS
  out=$(on_may_fail 0 "$(as_job "oshrun -np 6 --nodes 1-3 /opt/unimem/bin/errors $mode") 2>&1; echo status=\$?") || true
  echo "$out"
  grep -q '^status=1$' <<<"$out" || fail "errors $mode: status"
  case $mode in
    pe) grep -q 'shmem: PE 0: shmem_int_p: PE 6 out of range: this job has 6 PEs (0..5)' <<<"$out" ;;
    sym) grep -q 'shmem: PE 0: shmem_int_p: dest 0x[0-9a-f]* (+4 bytes) is not symmetric' <<<"$out" ;;
  esac || fail "errors $mode: unclear message"
  ! grep -q 'not reached' <<<"$out" || fail "errors $mode: a PE got past the error"
  [ $((SECONDS - start)) -lt 60 ] || fail "errors $mode took $((SECONDS - start)) s"
  nothing_left "after errors $mode"
done

step "SHMEM_SYMMETRIC_SIZE reaches the PEs; a heap larger than the pool is a clear error"
out=$(on_may_fail 0 "$(as_job "SHMEM_SYMMETRIC_SIZE=256K oshrun -np 2 --nodes 2 /opt/unimem/bin/errors sym") 2>&1") || true
echo "$out"
grep -q 'not in the symmetric heap (0x[0-9a-f]*+0x40000)' <<<"$out" || fail "the PEs' heap is not 256K"
out=$(on_may_fail 0 "$(as_job "SHMEM_SYMMETRIC_SIZE=1G oshrun -np 2 --nodes 2 /opt/unimem/bin/setup") 2>&1; echo status=\$?") || true
echo "$out"
grep -q '^status=1$' <<<"$out" || fail "a 1 GiB heap: status"
grep -q 'shmem_init: allocating 1073741824 bytes of symmetric heap on node 2' <<<"$out" || fail "a 1 GiB heap: unclear message"
out=$(on_may_fail 0 "$(as_job "SHMEM_SYMMETRIC_SIZE=lots oshrun -np 2 /opt/unimem/bin/setup") 2>&1") && fail "SHMEM_SYMMETRIC_SIZE=lots accepted"
grep -q 'SHMEM_SYMMETRIC_SIZE="lots" is not a size' <<<"$out" || fail "a bad SHMEM_SYMMETRIC_SIZE: unclear message"
nothing_left "after the heap sizes"

step "a PE that exits without shmem_finalize while the others wait for it: they are stopped"
out=$(on_may_fail 0 "$(as_job "oshrun -np 6 --nodes 1-3 /opt/unimem/bin/errors exit") 2>&1; echo status=\$?") || true
echo "$out"
grep -q '^status=1$' <<<"$out" || fail "errors exit: status"
grep -q 'oshrun: PE 0 exited without shmem_finalize .* stopping them' <<<"$out" || fail "errors exit: unclear message"
nothing_left "after errors exit"

step "shmem_global_exit(STATUS) from PE 5 while the others wait in a barrier: oshrun exits with STATUS"
for code in 7 0; do
  start=$SECONDS
  out=$(on_may_fail 0 "$(as_job "oshrun -np 6 --nodes 1-3 /opt/unimem/bin/global_exit $code") 2>&1; echo status=\$?") || true
  echo "$out"
  grep -q "^status=$code\$" <<<"$out" || fail "global_exit $code: oshrun's status is not $code"
  expect_eq "$(grep -c '^PE [0-4]: waiting$' <<<"$out")" 5 "global_exit $code: PEs waiting in the barrier"
  grep -q "oshrun: PE 5 called shmem_global_exit($code)" <<<"$out" || fail "global_exit $code: no message"
  ! grep -q 'not reached' <<<"$out" || fail "global_exit $code: a PE got past shmem_global_exit or the barrier"
  [ $((SECONDS - start)) -lt 60 ] || fail "global_exit $code took $((SECONDS - start)) s"
  nothing_left "after global_exit $code"
done

step "SIGINT and SIGTERM to oshrun stop every PE"
for sig in INT:130 TERM:143; do
  code=${sig#*:} sig=${sig%:*}
  # exec: the pid bg records is oshrun's, also under setpriv (as_job).
  bg_job 0 "oshrun-$sig" "exec oshrun -np 6 --nodes 1-3 /opt/unimem/bin/errors hang"
  on 0 "for i in \$(seq 300); do [ \$(grep -c waiting /tmp/$BG-oshrun-$sig.log) = 6 ] && exit 0; sleep 0.2; done; cat /tmp/$BG-oshrun-$sig.log; exit 1" ||
    fail "the waiting PEs did not all start"
  on 0 "kill -$sig \$(cat /tmp/$BG-oshrun-$sig.pid)"
  wait_log 0 "oshrun-$sig" "^exit=$code\$" 60
  on 0 "cat /tmp/$BG-oshrun-$sig.log"
  nothing_left "after SIG$sig"
done

step "oshrun killed (SIGKILL): the agents stop their PEs and free everything"
bg_job 0 oshrun-KILL "exec oshrun -np 6 --nodes 1-3 /opt/unimem/bin/errors hang"
on 0 "for i in \$(seq 300); do [ \$(grep -c waiting /tmp/$BG-oshrun-KILL.log) = 6 ] && exit 0; sleep 0.2; done; exit 1" ||
  fail "the waiting PEs did not all start"
on 0 "kill -KILL \$(cat /tmp/$BG-oshrun-KILL.pid)"
for n in $(seq 0 $((NODES - 1))); do
  on "$n" "for i in \$(seq 200); do ! pidof oshrun $PROGS >/dev/null && [ \$(cat $SYS/used_pages) = 0 ] && exit 0; sleep 0.2; done; exit 1" ||
    fail "node $n: PEs or GSAS pages left 40 s after oshrun was killed"
done
nothing_left "after oshrun was killed"

step "bad arguments are refused"
for args in "/opt/unimem/bin/setup" "-np 2 --nodes 0,7 /opt/unimem/bin/setup" "-np 0 /opt/unimem/bin/setup" "-np 2 /opt/unimem/bin/nonexistent"; do
  out=$(on_may_fail 0 "$(as_job "oshrun $args") 2>&1") && fail "oshrun $args succeeded"
  echo "oshrun $args: $out"
  grep -q '^oshrun: ' <<<"$out" || fail "oshrun $args: no message"
done
out=$(on 0 "$(as_job "oshrun --help")") || fail "oshrun --help"
grep -q -- '--nodes <LIST>' <<<"$out" || fail "oshrun --help: no --nodes"


step "nothing left; a clean kernel log"
nothing_left "at the end"
for n in $(seq 0 $((NODES - 1))); do
  dmesg_clean "$n" "${marks[$n]}" || fail "node $n: kernel warnings"
done
echo "PASS"
