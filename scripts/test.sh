#!/usr/bin/env bash
# The project's test command: host-side Rust tests and host scripts (tests/host/: make install),
# then acceptance tests in a real virtual cluster (QEMU nodes running our kernel and modules).
# Ends with "N passed, N failed".
#   scripts/test.sh [-n NODES] [--quick | --debug-kernel | --arch A,...] [TEST...]
#                                        TEST: names under tests/cluster/ (default: all)
#
# --quick: the inner loop: host tests, then one short cluster test per kernel module (QUICK:
# eusrvmem, mailbox, gsas_fork, numa, kram; UNIMEM_QUICK=1 leaves out numa's minute of lease
# timing), under 5 minutes warm here. The full suite (no option) is what CI runs.
# Four nodes (a borrower, three lenders: KRAM mirroring needs a spare one) sharing an 8 GiB GAS
# (partitions of 2 GiB: a 2 GiB swap instance must need two lenders); UNIMEM_GAS_SIZE overrides.
#
# --debug-kernel: the cluster tests on the debug kernel (KASAN, lockdep, DEBUG_ATOMIC_SLEEP,
# kmemleak, DEBUG_LIST: kernel/config/debug/debug.config), built and cached apart from the normal
# one, our modules built for it into build/modules-debug. Nodes of 512 MiB (UNIMEM_DEBUG_NODE_MEM),
# workloads and time limits scaled (tests/cluster/lib.sh), no host tests (nothing kernel in them).
# After the suite every running node unloads our modules and runs a kmemleak scan; any report in
# any node's console or scan fails the run (scripts/lib/debug-kernel.sh). Not part of CI: it takes
# a kernel build (12 minutes on 2 cores here, cached after) and a suite of about two hours.
#
# --arch A,...: the cluster tests on nodes of these architectures (scripts/cluster up --arch: one
# for all nodes, or one per node, e.g. x86_64,x86_64,arm64), no host tests. arm64 nodes are
# cross-built and emulated (scripts/build-arm64.sh, TCG): not part of CI. scripts/test-arm64.sh
# runs a set of tests once with an arm64 node in each position of a mixed cluster.
#
# Each cluster test runs under a time limit, UNIMEM_TEST_TIMEOUT seconds (default 900: the
# slowest test, kram_soak, takes about 2 minutes warm) times UNIMEM_TIMEOUT_SCALE (3 on the debug
# kernel). At the limit its process group gets SIGTERM (its cleanup trap runs), SIGKILL 60 s
# later, and it counts as failed: "TEST: timed out after N s".
source "$(dirname "$0")/lib/common.sh"
nodes=4
export UNIMEM_GAS_SIZE=${UNIMEM_GAS_SIZE:-8G}
debug=false
quick=false
arch_args=()
# --quick's cluster tests: one short test per module (eusrvmem, mailbox, gsas, kram, numa).
QUICK=(eusrvmem mailbox gsas_fork numa kram)
while [ $# -gt 0 ]; do
  case "$1" in
    -n) nodes=$2; shift 2;;
    --debug-kernel) debug=true; shift;;
    --quick) quick=true; shift;;
    --arch) [ -n "${2:-}" ] || { echo "scripts/test.sh: --arch wants a list (x86_64, arm64, or one per node)" >&2; exit 2; }
            arch_args=(--arch "$2"); shift 2;;
    -h|--help) sed -n '2,/^source/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0;;
    -*) echo "scripts/test.sh: unknown option $1 (--help lists them)" >&2; exit 2;;
    *) break;;
  esac
done
for t in "$@"; do
  [ "$t" != lib ] && [ -f "$(dirname "$0")/../tests/cluster/$t.sh" ] ||
    { echo "scripts/test.sh: no cluster test '$t' (tests/cluster/*.sh, without .sh)" >&2; exit 2; }
done
if "$quick"; then
  [ $# = 0 ] || { echo "scripts/test.sh: --quick runs its own tests (${QUICK[*]}); name tests without it" >&2; exit 2; }
  set -- "${QUICK[@]}"
  # The tests leave out their long waits (numa.sh: the lease-timing steps), which the full
  # suite runs.
  export UNIMEM_QUICK=1
fi
if "$debug" && [ ${#arch_args[@]} != 0 ]; then
  echo "scripts/test.sh: --debug-kernel is x86_64 only (not with --arch)" >&2; exit 2
fi
passed=0 failed=0 failures=()
# Node 0 is small so the KRAM test's workload can exceed its RAM by half (tests/cluster/kram.sh).
mem_args=(--mem-of "0=96M")
if "$debug"; then
  export UNIMEM_DEBUG_KERNEL=1
  # KASAN's shadow, kmemleak's and lockdep's tables and slab debugging: 96 MiB does not boot, and
  # hot-adding 128 MiB (memmap and shadow come from local memory) runs 192 MiB out of memory.
  mem_args=(-m "${UNIMEM_DEBUG_NODE_MEM:-512M}")
  export UNIMEM_TIMEOUT_SCALE=${UNIMEM_TIMEOUT_SCALE:-3} UNIMEM_BOOT_TIMEOUT=${UNIMEM_BOOT_TIMEOUT:-600}
  export UNIMEM_SWAP_EXCESS_MIB=${UNIMEM_SWAP_EXCESS_MIB:-48} UNIMEM_NUMA_LOCAL_FREE_MIB=${UNIMEM_NUMA_LOCAL_FREE_MIB:-96}
  # A debug kernel takes 1-2 ms between two requests of one issuer, ten times the busy-polling
  # window: that requests arrive while the home polls is a speed property this lane cannot show.
  export UNIMEM_BUSY_POLL_MIN=${UNIMEM_BUSY_POLL_MIN:-0}
  export UNIMEM_RUN=${UNIMEM_RUN:-$UNIMEM_BUILD/test-cluster-debug}
else
  unset UNIMEM_DEBUG_KERNEL  # only --debug-kernel picks that kernel (and sizes the nodes for it)
fi
export UNIMEM_RUN=${UNIMEM_RUN:-$UNIMEM_BUILD/test-cluster}
# Per cluster, so that test runs in different run directories do not mix their logs.
logdir=$UNIMEM_RUN-logs
mkdir -p "$logdir"
if "$debug"; then source "$UNIMEM_ROOT/scripts/lib/debug-kernel.sh"; fi

"$UNIMEM_ROOT/scripts/setup.sh"

if "$debug"; then
  log "debug kernel: host tests skipped (they do not run on the kernel)"
elif [ ${#arch_args[@]} != 0 ]; then
  log "${arch_args[1]} nodes: host tests skipped (they do not run on the nodes)"
else
  log "host tests: cargo test --workspace"
  set +e
  cargo test --workspace --release >"$logdir/cargo-test.log" 2>&1
  status=$?
  set -e
  read -r p f < <(awk '/^test result:/ {p += $4; f += $6} END {print p + 0, f + 0}' "$logdir/cargo-test.log")
  passed=$((passed + p)); failed=$((failed + f))
  log "host tests: $p passed, $f failed (log: $logdir/cargo-test.log)"
  if [ "$status" != 0 ]; then
    failures+=(cargo-test); [ "$f" != 0 ] || failed=$((failed + 1))
    tail -30 "$logdir/cargo-test.log" >&2
  fi
  # Tests that this host cannot run (its kernel too old, say) pass after a "SKIP test: why" line
  # (mid-line when the tests run one at a time).
  if skips=$(grep -oE 'SKIP [[:alnum:]_]+: .*' "$logdir/cargo-test.log"); then
    log "host tests skipped here: $(wc -l <<<"$skips")"; printf '%s\n' "$skips" >&2
  fi
  # Host scripts (tests/host/*.sh): one PASS or FAIL line per check, each counted.
  for t in "$UNIMEM_ROOT"/tests/host/*.sh; do
    name=host-$(basename "$t" .sh)
    set +e; "$t" >"$logdir/$name.log" 2>&1; status=$?; set -e
    p=$(grep -c '^PASS ' "$logdir/$name.log" || true); f=$(grep -c '^FAIL ' "$logdir/$name.log" || true)
    passed=$((passed + p)); failed=$((failed + f))
    log "$name: $p passed, $f failed (log: $logdir/$name.log)"
    if [ "$status" != 0 ]; then
      failures+=("$name"); [ "$f" != 0 ] || failed=$((failed + 1))
      grep -A20 '^FAIL ' "$logdir/$name.log" >&2 || tail -20 "$logdir/$name.log" >&2
    fi
  done
fi

test_limit=$(( ${UNIMEM_TEST_TIMEOUT:-900} * ${UNIMEM_TIMEOUT_SCALE:-1} ))
shm_before=$(ls /dev/shm | sort)
cleanup() { "$UNIMEM_ROOT/scripts/cluster" down >/dev/null 2>&1 || true; }
trap cleanup EXIT
tests=("$@")
if [ ${#tests[@]} -eq 0 ]; then
  for t in "$UNIMEM_ROOT"/tests/cluster/*.sh; do
    t=$(basename "$t" .sh)
    [ "$t" = lib ] || tests+=("$t")
  done
fi
log "starting a $nodes-node cluster for: ${tests[*]}"
if "$UNIMEM_ROOT/scripts/cluster" up -n "$nodes" "${mem_args[@]}" "${arch_args[@]}" 2>&1 | tee "$logdir/cluster-up.log"; [ "${PIPESTATUS[0]}" = 0 ]; then
  ! "$debug" || reports=$(debug_count_reports)
  for t in "${tests[@]}"; do
    log "cluster test: $t"
    start_t=$SECONDS
    status=0
    timeout -k 60 "$test_limit" "$UNIMEM_ROOT/tests/cluster/$t.sh" 2>&1 | tee "$logdir/$t.log" || status=${PIPESTATUS[0]}
    # Every step of a cluster test ("--- what it checks", tests/cluster/lib.sh's step) counts:
    # all of them when the test passes; when it fails, the steps before the failing one passed.
    steps=$(grep -c '^--- ' "$logdir/$t.log" || true)
    [ "$steps" -ge 1 ] || steps=1
    if [ "$status" = 0 ]; then
      passed=$((passed + steps)); log "PASS $t ($steps steps)"
    else
      passed=$((passed + steps - 1))
      if [ "$status" = 124 ] || [ "$status" = 137 ]; then
        log "$t: timed out after $test_limit s"; echo "FAIL $t: timed out after $test_limit s" >>"$logdir/$t.log"
      fi
      failed=$((failed + 1)); failures+=("$t"); log "FAIL $t (log: $logdir/$t.log, consoles: $UNIMEM_RUN)"
    fi
    if "$debug"; then
      # Which test a report came with (all of them are printed after the suite).
      now=$(debug_count_reports)
      log "debug kernel: $t took $((SECONDS - start_t)) s; $((now - reports)) new report line(s) in the consoles"
      reports=$now
    fi
  done
else
  failed=$((failed + ${#tests[@]})); failures+=(cluster-up)
fi
# Also after a failed start: the consoles say why.
if "$debug"; then
  if debug_kernel_checks 2>&1 | tee "$logdir/debug-kernel.log"; [ "${PIPESTATUS[0]}" = 0 ]; then
    passed=$((passed + 1)); log "PASS debug kernel: no reports"
  else
    failed=$((failed + 1)); failures+=(debug-kernel-reports)
  fi
fi
cleanup
# Shutdown must leave nothing behind: no processes, no shared-memory files.
if pgrep -f "qemu-system-(x86_64|aarch64).*$UNIMEM_RUN" >/dev/null || pgrep -f "unimem-fabric.*$UNIMEM_RUN" >/dev/null; then
  failed=$((failed + 1)); failures+=(stray-processes)
elif [ "$(ls /dev/shm | sort)" != "$shm_before" ]; then
  failed=$((failed + 1)); failures+=(stray-shm-files)
else
  passed=$((passed + 1)); log "PASS clean shutdown (no stray processes or /dev/shm files)"
fi
[ ${#failures[@]} -eq 0 ] || log "failed: ${failures[*]}"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
