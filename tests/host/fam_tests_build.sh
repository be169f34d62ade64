#!/usr/bin/env bash
# The OpenFAM test programs (tests/fam: C and C++, run on the cluster by tests/cluster/fam.sh)
# compile against unimem's OpenFAM headers: each one -fsyntax-only with -Wall -Wextra -Werror
# (C as gnu11, C++ as c++17, tests/fam/build.sh --syntax), so a header change that breaks them
# shows before the library or a cluster is there. One PASS/FAIL line per program.
here=$(cd "$(dirname "$0")" && pwd)
failed=0
out=$("$here/../fam/build.sh" --syntax 2>&1)
status=$?
n=0
while read -r word prog _; do
  case $word in
    ok) echo "PASS fam-tests-build: $prog compiles"; n=$((n + 1)) ;;
    FAILED) echo "FAIL fam-tests-build: ${prog%:} does not compile"; failed=$((failed + 1)) ;;
  esac
done <<<"$out"
if [ "$status" != 0 ] || [ "$failed" != 0 ]; then
  echo "$out"
  [ "$failed" != 0 ] || echo "FAIL fam-tests-build: build.sh failed"
  exit 1
fi
[ "$n" -gt 0 ] || { echo "FAIL fam-tests-build: no programs in tests/fam"; exit 1; }
