#!/usr/bin/env bash
# Acceptance of arm64 nodes (issue 15): the cluster tests given (default: eusrvmem mailbox kram)
# in a mixed cluster of NODES nodes (default 3), once per position of its one arm64 node, the
# others x86_64: the arm64 node takes every role those tests give node 0, 1 and 2 (borrower and
# lenders, sender and receiver). Each run is `scripts/test.sh -n NODES --arch ...` in its own run
# directory (build/test-arm64-posK, logs in build/test-arm64-posK-logs). Ends with
# "N passed, N failed". Not in CI: arm64 nodes are emulated (TCG) and cross-built.
# Usage: scripts/test-arm64.sh [-n NODES] [--positions 0,1,2] [TEST...]
source "$(dirname "$0")/lib/common.sh"
nodes=3 positions=
while [ $# -gt 0 ]; do
  case "$1" in
    -n) nodes=$2; shift 2;;
    --positions) positions=$2; shift 2;;
    -h|--help) sed -n '2,8s/^# \{0,1\}//p' "$0"; exit 0;;
    -*) die "unknown option $1 (see --help)";;
    *) break;;
  esac
done
[[ "$nodes" =~ ^[0-9]+$ ]] && [ "$nodes" -ge 2 ] || die "-n wants at least 2 nodes"
[ -n "$positions" ] || positions=$(seq -s, 0 $((nodes - 1)))
[[ "$positions" =~ ^[0-9]+(,[0-9]+)*$ ]] || die "--positions wants node numbers, e.g. 0,2"
tests=("$@")
[ ${#tests[@]} != 0 ] || tests=(eusrvmem mailbox kram)
# Build once, before the first cluster (the clusters would each check it).
"$UNIMEM_ROOT/scripts/build-arm64.sh"
passed=0 failed=0 failures=()
IFS=, read -ra pos_list <<<"$positions"
for pos in "${pos_list[@]}"; do
  [ "$pos" -lt "$nodes" ] || die "position $pos: the cluster has nodes 0-$((nodes - 1))"
  arches=$(for ((i = 0; i < nodes; i++)); do if [ "$i" = "$pos" ]; then echo arm64; else echo x86_64; fi; done | paste -sd,)
  log "arm64 as node $pos: --arch $arches: ${tests[*]}"
  start=$SECONDS
  out=$(UNIMEM_RUN=$UNIMEM_BUILD/test-arm64-pos$pos "$UNIMEM_ROOT/scripts/test.sh" -n "$nodes" --arch "$arches" "${tests[@]}" 2>&1 |
    tee "$UNIMEM_BUILD/test-arm64-pos$pos.log" | grep -E '^\[[^]]*\] (PASS|FAIL) |passed, [0-9]+ failed$' || true)
  echo "$out"
  read -r p f < <(tail -1 "$UNIMEM_BUILD/test-arm64-pos$pos.log" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1 \2/p')
  if [ -z "${p:-}" ]; then p=0 f=1; fi
  passed=$((passed + p)); failed=$((failed + f))
  [ "$f" = 0 ] || failures+=("arm64-node$pos")
  log "arm64 as node $pos: $p passed, $f failed in $((SECONDS - start)) s (log: $UNIMEM_BUILD/test-arm64-pos$pos.log)"
done
[ ${#failures[@]} -eq 0 ] || log "failed: ${failures[*]}"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
