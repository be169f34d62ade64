#!/usr/bin/env bash
# Runs cluster tests with the kernel modules of an earlier commit (REF) in place of this tree's,
# everything else (user space, daemons, the tests) from this tree. It shows that a test catches
# what a change fixed: run against the commit before the fix, the test must fail, at the step
# that checks the fix. Prints per test the step it failed at and the failure, or PASS (then the
# test does not tell the two module sets apart). Not part of the suite: the figures are the output.
#   scripts/test-against.sh [--ref COMMIT] [-n NODES] TEST...
#     --ref  the commit whose modules are loaded (default 3874427: before issue 29's fixes)
#     -n     nodes (4)
# The modules are built once per (commit, kernel) (scripts/lib/ref-modules.sh). The cluster runs in
# build/test-against (UNIMEM_RUN), its logs in build/test-against-logs.
# shellcheck source=scripts/lib/common.sh
source "$(dirname "$0")/lib/common.sh"
# shellcheck source=scripts/lib/ref-modules.sh
source "$(dirname "$0")/lib/ref-modules.sh"
REF=3874427 nodes=4
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) sed -n '2,/^# shellcheck/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0;;
    --ref) REF=${2:?--ref needs a commit}; shift 2;;
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
export UNIMEM_RUN=$UNIMEM_BUILD/test-against
logdir=$UNIMEM_RUN-logs
mkdir -p "$logdir"
CLUSTER=$UNIMEM_ROOT/scripts/cluster
"$CLUSTER" down >/dev/null 2>&1 || true
trap '"$CLUSTER" down >/dev/null 2>&1 || true' EXIT
"$CLUSTER" up -n "$nodes" --mem-of "0=96M"
share=$(run_share "$UNIMEM_RUN" x86_64)
cp "$ref_dir"/*.ko "$share/modules/"
log "the nodes load $REF's modules ($(cd "$ref_dir" && echo ./*.ko | tr -d './'))"
summary=()
for t in "$@"; do
  log "cluster test against $REF's modules: $t"
  status=0
  timeout -k 60 900 "$UNIMEM_ROOT/tests/cluster/$t.sh" >"$logdir/$t.log" 2>&1 || status=$?
  if [ "$status" = 0 ]; then
    summary+=("$t: PASS (does not tell $REF's modules from this tree's)")
  else
    at=$(grep '^--- ' "$logdir/$t.log" | tail -1)
    why=$(grep -m1 '^FAIL' "$logdir/$t.log" || tail -1 "$logdir/$t.log")
    summary+=("$t: FAILS at '${at#--- }': $why")
  fi
done
echo "Against $REF's kernel modules (logs: $logdir):"
printf '  %s\n' "${summary[@]}"
