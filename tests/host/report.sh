#!/usr/bin/env bash
# scripts/bench/report.sh on fixture results (made here, not measured: this tests the report,
# not a benchmark): the newest complete result of each benchmark is reported, with its
# environment, summary, data files and plot; an incomplete newer run is passed over; no results
# is a clear error that writes nothing. One PASS/FAIL line per check; exits 1 if any failed.
source "$(dirname "$0")/../../scripts/lib/common.sh"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
failed=0
pass() { echo "PASS report: $1"; }
fail() { echo "FAIL report: $1"; failed=$((failed + 1)); }
expect() { if grep -qF -- "$2" "$tmp/bench/report.md"; then pass "$1"; else fail "$1: no '$2'"; fi; }
report=$UNIMEM_ROOT/scripts/bench/report.sh

# result NAME STAMP COMMIT: a fixture result directory.
result() {
  local d=$tmp/bench/$1/$2
  mkdir -p "$d"
  printf 'key,value\naccelerator,tcg\nvcpus_per_node,1\nkernel,7.3.4\ncommit,%s\n' "$3" >"$d/environment.csv"
  printf 'op,ratio\nfaa,0.5\n' >"$d/latency.csv"
  printf 'remote/local %s' "$3" >"$d/summary.txt"
  printf '\x89PNG\r\n' >"$d/$1.png"
}

if out=$("$report" "$tmp/bench" 2>&1); then fail "no results accepted: $out"; else
  grep -q 'no results' <<<"$out" && pass "no results: clear error" || fail "no results: unclear: $out"
fi
[ ! -e "$tmp/bench/report.md" ] && pass "no results: nothing written" || fail "no results: a report was written"

result gsas 20261120T100000Z old1111
result gsas 20261122T100000Z new2222
mkdir -p "$tmp/bench/gsas/20261123T100000Z"   # a run that did not finish: no environment.csv
result shmem 20261121T100000Z shm3333
if "$report" "$tmp/bench" >/dev/null 2>&1; then pass "report made"; else fail "report.sh failed"; fi
expect "the newest complete gsas result" "## gsas (20261122T100000Z)"
expect "its commit" "| commit | new2222 |"
expect "its accelerator" "| accelerator | tcg |"
expect "its summary, fenced" "remote/local new2222"
expect "its data file, linked" "[latency.csv](gsas/20261122T100000Z/latency.csv)"
expect "its plot, linked" "![gsas](gsas/20261122T100000Z/gsas.png)"
expect "the other benchmark" "## shmem (20261121T100000Z)"
if grep -q 'old1111' "$tmp/bench/report.md"; then fail "an older result was reported"; else pass "older results left out"; fi
[ "$(grep -c '^```$' "$tmp/bench/report.md")" = 4 ] && pass "summaries fenced on their own lines" || fail "code fences broken"
exit $((failed > 0))
