#!/usr/bin/env bash
# Header-only checks of unimem's OpenFAM headers (userspace/fam/include/fam): no library is
# needed, nothing is linked or run. One PASS/FAIL line per check (the format of tests/host/);
# exits 1 if any failed.
#   - compile_all.cpp (every C++ method and overload) under -std=c++11, c++17 and c++20, with and
#     without FAM_PROFILE; compile_c.c (every C function) under -std=c99 and -std=c11;
#     all with -Wall -Wextra -Werror -fsyntax-only
#   - each header compiles on its own, first in a translation unit, as C++ and (the C ones) C
#   - fam.h does not bring "using namespace std" (fam_exception.h does, as OpenFAM's)
#   - with nm: compile_c.c references every function fam_c.h and fam_abi.h declare, and
#     compile_all.cpp instantiates every public inline method fam.h defines
# CXX and CC choose the compilers (default g++ and gcc).
set -u
here=$(cd "$(dirname "$0")" && pwd)
inc=$(cd "$here/../../include" && pwd)
CXX=${CXX:-g++}
CC=${CC:-gcc}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
failed=0
pass() { echo "PASS fam-headers: $1"; }
fail() { echo "FAIL fam-headers: $1"; failed=$((failed + 1)); }
# run NAME CMD...: one check, its output shown only if it fails
run() {
  local name=$1; shift
  if "$@" >"$tmp/out" 2>&1; then pass "$name"; else fail "$name"; cat "$tmp/out"; fi
}
WARN=(-Wall -Wextra -Werror)

for std in c++11 c++17 c++20; do
  run "compile_all.cpp, -std=$std" \
    "$CXX" -std=$std "${WARN[@]}" -fsyntax-only -I"$inc" "$here/compile_all.cpp"
  run "compile_all.cpp, -std=$std -DFAM_PROFILE" \
    "$CXX" -std=$std "${WARN[@]}" -DFAM_PROFILE -fsyntax-only -I"$inc" "$here/compile_all.cpp"
done
for std in c99 c11; do
  run "compile_c.c, -std=$std" \
    "$CC" -std=$std "${WARN[@]}" -fsyntax-only -I"$inc" "$here/compile_c.c"
done

# Each header alone, first in the translation unit (include order must not matter).
for h in fam.h fam_c.h fam_abi.h fam_exception.h fam_types.h; do
  printf '#include <fam/%s>\n' "$h" >"$tmp/only.cpp"
  run "<fam/$h> alone, C++11 -pedantic" \
    "$CXX" -std=c++11 "${WARN[@]}" -pedantic -fsyntax-only -I"$inc" "$tmp/only.cpp"
done
for h in fam.h fam_c.h fam_abi.h fam_types.h; do
  printf '#include <fam/%s>\n' "$h" >"$tmp/only.c"
  run "<fam/$h> alone, C99 -pedantic" \
    "$CC" -std=c99 "${WARN[@]}" -pedantic -fsyntax-only -I"$inc" "$tmp/only.c"
done

# fam.h keeps std out of the global namespace: a global "string" stays unambiguous.
printf '#include <fam/fam.h>\nstatic int string = 1;\nint use_string() { return string; }\n' \
  >"$tmp/nostd.cpp"
run "fam.h does not inject namespace std" \
  "$CXX" -std=c++11 "${WARN[@]}" -fsyntax-only -I"$inc" "$tmp/nostd.cpp"
# ... and fam_exception.h does, as OpenFAM's (programs use string, cout unqualified).
printf '#include <fam/fam_exception.h>\nstring s;\n' >"$tmp/std.cpp"
run "fam_exception.h provides using namespace std" \
  "$CXX" -std=c++11 "${WARN[@]}" -fsyntax-only -I"$inc" "$tmp/std.cpp"

if command -v nm >/dev/null && command -v c++filt >/dev/null; then
  # Every C ABI function: the declarations (gcc -aux-info) against compile_c.o's references.
  printf '#include <fam/fam_abi.h>\n' >"$tmp/decl.c"
  if "$CC" -std=c99 -I"$inc" -aux-info "$tmp/decl.txt" -fsyntax-only "$tmp/decl.c" &&
     "$CC" -std=c99 -I"$inc" -c "$here/compile_c.c" -o "$tmp/c.o"; then
    grep 'include/fam/' "$tmp/decl.txt" | grep -oE '\b(c_fam|unimem_fam)_[a-z0-9_]+ \(' |
      tr -d ' (' | sort -u >"$tmp/declared"
    nm -u "$tmp/c.o" | awk '{print $NF}' | grep -E '^(c_fam|unimem_fam)_' | sort -u >"$tmp/used"
    missing=$(comm -23 "$tmp/declared" "$tmp/used")
    if [ -z "$missing" ]; then
      pass "compile_c.c calls all $(wc -l <"$tmp/declared") C ABI functions"
    else
      fail "compile_c.c misses C ABI functions:"; echo "$missing"
    fi
  else
    fail "could not list the C ABI functions"
  fi
  # Every public inline method: all of them (-fkeep-inline-functions) against those
  # compile_all.o instantiates (the ones it calls).
  printf '#include <fam/fam.h>\n' >"$tmp/all.cpp"
  classes='^openfam::(fam|fam_context|Fam_Descriptor|Fam_Region_Descriptor|Fam_Exception)::'
  helpers='::(ok_|dh_|rh_|item_|region_|get_|set_)\('
  if "$CXX" -std=c++11 -O0 -DFAM_PROFILE -fkeep-inline-functions -I"$inc" -c "$tmp/all.cpp" \
       -o "$tmp/all.o" &&
     "$CXX" -std=c++11 -O0 -DFAM_PROFILE -I"$inc" -c "$here/compile_all.cpp" -o "$tmp/use.o"; then
    nm --defined-only "$tmp/all.o" | awk '{print $NF}' | c++filt | grep -E "$classes" |
      grep -vE "$helpers" | sort -u >"$tmp/methods"
    nm --defined-only "$tmp/use.o" | awk '{print $NF}' | c++filt | grep -E "$classes" |
      sort -u >"$tmp/called"
    missing=$(comm -23 "$tmp/methods" "$tmp/called")
    if [ -z "$missing" ]; then
      pass "compile_all.cpp calls all $(wc -l <"$tmp/methods") C++ methods (ctor/dtor variants counted)"
    else
      fail "compile_all.cpp misses C++ methods:"; echo "$missing"
    fi
  else
    fail "could not list the C++ methods"
  fi
else
  echo "SKIP fam-headers: coverage checks (no nm / c++filt)"
fi

[ "$failed" = 0 ] || exit 1
