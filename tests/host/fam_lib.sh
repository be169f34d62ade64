#!/usr/bin/env bash
# libunimem_fam on the host: it exports exactly the C ABI the headers declare (nm), and a C
# program and a C++ program built with famcc / famc++ link and run against it; with no famd
# (and usually no /dev/unimem_mailbox) fam_initialize fails cleanly with FAM_ERR_RPC or
# FAM_ERR_TIMEOUT and a message, within the control timeout. One PASS/FAIL line per check.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
fam=$root/userspace/fam
target=${CARGO_TARGET_DIR:-$root/target}
case $target in /*) ;; *) target=$root/$target ;; esac
lib=$target/release/libunimem_fam.so
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
failed=0
pass() { echo "PASS fam-lib: $1"; }
fail() { echo "FAIL fam-lib: $1"; failed=$((failed + 1)); }
run() {
  local name=$1; shift
  if "$@" >"$tmp/out" 2>&1; then pass "$name"; else fail "$name"; cat "$tmp/out"; fi
}

if ! (cd "$root" && cargo build --release -q -p unimem-fam) >"$tmp/build" 2>&1; then
  fail "cargo build -p unimem-fam"; cat "$tmp/build"; exit 1
fi
run "fam-pc.sh writes fam.pc" "$fam/fam-pc.sh"

# Exactly the declared functions are exported (the headers' coverage check's list).
printf '#include <fam/fam_abi.h>\n' >"$tmp/decl.c"
if gcc -std=c99 -I"$fam/include" -aux-info "$tmp/decl.txt" -fsyntax-only "$tmp/decl.c"; then
  grep 'include/fam/' "$tmp/decl.txt" | grep -oE '\b(c_fam|unimem_fam)_[a-z0-9_]+ \(' |
    tr -d ' (' | sort -u >"$tmp/declared"
  nm -D --defined-only "$lib" | awk '{print $NF}' | grep -E '^(c_fam|unimem_fam)_' |
    sort -u >"$tmp/exported"
  diff=$(comm -3 "$tmp/declared" "$tmp/exported")
  if [ -z "$diff" ]; then
    pass "libunimem_fam.so exports all $(wc -l <"$tmp/exported") declared functions, no others"
  else
    fail "exports differ from the declarations (left: missing, right: extra):"; echo "$diff"
  fi
else
  fail "could not list the declared functions"
fi

export PKG_CONFIG_PATH=$target/release/pkgconfig
run "famcc builds a C program (-std=c99)" \
  "$fam/famcc" -std=c99 -Wall -Wextra -Werror "$fam/tests/lib/no_famd.c" -o "$tmp/no_famd_c"
run "famc++ builds a C++ program (-std=c++11)" \
  "$fam/famc++" -std=c++11 -Wall -Wextra -Werror "$fam/tests/lib/no_famd.cpp" -o "$tmp/no_famd_cpp"

# No famd: a clean failure, not a hang (2 s control timeout, 60 s hard limit).
export UNIMEM_FAM_TIMEOUT_MS=2000
for prog in no_famd_c no_famd_cpp; do
  if [ -x "$tmp/$prog" ]; then
    run "$prog: fam_initialize without famd fails with FAM_ERR_RPC or FAM_ERR_TIMEOUT" \
      timeout 60 "$tmp/$prog"
    grep -h 'error\|Exception' "$tmp/out" || true
  fi
done

[ "$failed" = 0 ] || exit 1
