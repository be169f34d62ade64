#!/usr/bin/env bash
# The project's test command: host-side Rust tests, then acceptance tests in a real virtual
# cluster (QEMU nodes running our kernel and modules). Ends with "N passed, N failed".
#   scripts/test.sh [-n NODES] [TEST...]   TEST: names under tests/cluster/ (default: all)
# Four nodes (a borrower, three lenders: KRAM mirroring needs a spare one) sharing an 8 GiB GAS
# (partitions of 2 GiB: a 2 GiB swap instance must need two lenders); UNIMEM_GAS_SIZE overrides.
source "$(dirname "$0")/lib/common.sh"
nodes=4
export UNIMEM_GAS_SIZE=${UNIMEM_GAS_SIZE:-8G}
[ "${1:-}" = -n ] && { nodes=$2; shift 2; }
passed=0 failed=0 failures=()
export UNIMEM_RUN=${UNIMEM_RUN:-$UNIMEM_BUILD/test-cluster}
# Per cluster, so that test runs in different run directories do not mix their logs.
logdir=$UNIMEM_RUN-logs
mkdir -p "$logdir"

"$UNIMEM_ROOT/scripts/setup.sh"

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

shm_before=$(ls /dev/shm | sort)
cleanup() { "$UNIMEM_ROOT/scripts/cluster" down >/dev/null 2>&1 || true; }
trap cleanup EXIT
tests=("$@")
[ ${#tests[@]} -gt 0 ] || tests=($(cd "$UNIMEM_ROOT/tests/cluster" && ls -- *.sh | grep -v '^lib\.sh$' | sed 's/\.sh$//'))
log "starting a $nodes-node cluster for: ${tests[*]}"
# Node 0 is small so the KRAM test's workload can exceed its RAM by half (tests/cluster/kram.sh).
if "$UNIMEM_ROOT/scripts/cluster" up -n "$nodes" --mem-of 0=96M 2>&1 | tee "$logdir/cluster-up.log"; [ "${PIPESTATUS[0]}" = 0 ]; then
  for t in "${tests[@]}"; do
    log "cluster test: $t"
    if "$UNIMEM_ROOT/tests/cluster/$t.sh" 2>&1 | tee "$logdir/$t.log"; [ "${PIPESTATUS[0]}" = 0 ]; then
      passed=$((passed + 1)); log "PASS $t"
    else
      failed=$((failed + 1)); failures+=("$t"); log "FAIL $t (log: $logdir/$t.log, consoles: $UNIMEM_RUN)"
    fi
  done
else
  failed=$((failed + ${#tests[@]})); failures+=(cluster-up)
fi
cleanup
# Shutdown must leave nothing behind: no processes, no shared-memory files.
if pgrep -f "qemu-system-x86_64.*$UNIMEM_RUN" >/dev/null || pgrep -f "unimem-fabric.*$UNIMEM_RUN" >/dev/null; then
  failed=$((failed + 1)); failures+=(stray-processes)
elif [ "$(ls /dev/shm | sort)" != "$shm_before" ]; then
  failed=$((failed + 1)); failures+=(stray-shm-files)
else
  passed=$((passed + 1)); log "PASS clean shutdown (no stray processes or /dev/shm files)"
fi
[ ${#failures[@]} -eq 0 ] || log "failed: ${failures[*]}"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
