#!/usr/bin/env bash
# Runs cluster tests with the kernel modules of an earlier commit (REF) in place of this tree's,
# everything else (user space, daemons, the tests) from this tree, or with some of REF's daemons
# too (--ref-bins) where a fix was made in user space. It shows that a test catches what a change
# fixed: run against the commit before the fix, the test must fail at the step that checks the
# fix. The tests run with UNIMEM_KEEP_GOING (tests/cluster/lib.sh): a failed check is noted and
# the test goes on, so a step the older code fails for another reason (a feature it lacks) does
# not hide the later ones. Prints per test every step that failed and why, or PASS (then the test
# does not tell the two builds apart). Not part of the suite: the figures are the output.
#   scripts/test-against.sh [--ref COMMIT] [--ref-bins BIN,...] [-n NODES] TEST...
#     --ref       the commit whose modules are loaded (default 3874427: before issue 29's fixes)
#     --ref-bins  these user-space binaries of REF too (e.g. kram-daemon,gsasd)
#     -n          nodes (4)
# The modules and binaries are built once per commit (scripts/lib/ref-modules.sh). The cluster
# runs in build/test-against (UNIMEM_RUN), its logs in build/test-against-logs.
# shellcheck source=scripts/lib/common.sh
source "$(dirname "$0")/lib/common.sh"
# shellcheck source=scripts/lib/ref-modules.sh
source "$(dirname "$0")/lib/ref-modules.sh"
REF=3874427 nodes=4 bins=
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) sed -n '2,/^# shellcheck/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0;;
    --ref) REF=${2:?--ref needs a commit}; shift 2;;
    --ref-bins) bins=${2:?--ref-bins needs binary names}; shift 2;;
    -n) nodes=${2:?-n needs a count}; shift 2;;
    -*) die "unknown option $1 (--help lists them)";;
    *) break;;
  esac
done
[ $# -gt 0 ] || die "name the tests to run (tests/cluster/*.sh without .sh)"
for t in "$@"; do
  [ "$t" != lib ] && [ -f "$UNIMEM_ROOT/tests/cluster/$t.sh" ] || die "no cluster test '$t'"
done
ref_dir=$(ref_modules "$REF")
if [ -n "$bins" ]; then
  UNIMEM_USERSPACE_BIN=$(IFS=, read -ra names <<<"$bins"; ref_bins "$REF" "${names[@]}")
  export UNIMEM_USERSPACE_BIN
fi
export UNIMEM_RUN=$UNIMEM_BUILD/test-against
logdir=$UNIMEM_RUN-logs
mkdir -p "$logdir"
CLUSTER=$UNIMEM_ROOT/scripts/cluster
"$CLUSTER" down >/dev/null 2>&1 || true
trap '"$CLUSTER" down >/dev/null 2>&1 || true' EXIT
"$CLUSTER" up -n "$nodes" --mem-of "0=96M"
share=$(run_share "$UNIMEM_RUN" x86_64)
cp "$ref_dir"/*.ko "$share/modules/"
log "the nodes load $REF's modules ($(cd "$ref_dir" && ls -- *.ko | sed 's/\.ko$//' | paste -sd' '))${bins:+ and run its ${bins//,/, }}"
summary=()
for t in "$@"; do
  log "cluster test against $REF's modules: $t"
  status=0 noted=$logdir/$t.failed
  rm -f "$noted"
  UNIMEM_KEEP_GOING=$noted timeout -k 60 900 "$UNIMEM_ROOT/tests/cluster/$t.sh" >"$logdir/$t.log" 2>&1 || status=$?
  if [ "$status" = 0 ] && [ ! -s "$noted" ]; then
    summary+=("$t: PASS (does not tell $REF's build from this tree's)")
    continue
  fi
  summary+=("$t: FAILS")
  if [ -s "$noted" ]; then
    while IFS= read -r line; do summary+=("  at '$line'"); done <"$noted"
  fi
  if [ "$status" != 0 ]; then
    at=$(grep -a '^--- ' "$logdir/$t.log" | tail -1)
    summary+=("  and stopped at '${at#--- }': $(tail -1 "$logdir/$t.log" | tr -cd '[:print:]')")
  fi
done
echo "Against $REF's kernel modules${bins:+ and ${bins//,/, }} (logs: $logdir):"
printf '  %s\n' "${summary[@]}"
