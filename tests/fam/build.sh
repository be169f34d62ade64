#!/usr/bin/env bash
# Builds the OpenFAM test programs of tests/fam on the host: C as gnu11, C++ as c++17, with
# -Wall -Wextra -Werror, against userspace/fam/include.
#   build.sh [OUTDIR]      with libunimem_fam.so in $LIBDIR (default target/release): link
#                          every program into OUTDIR (default build/fam-tests), run-path
#                          /opt/unimem/lib (the guests' library directory; C++ programs carry
#                          their C++ runtime: the guests have no libstdc++); without the
#                          library: -fsyntax-only, nothing written
#   build.sh --syntax      -fsyntax-only in any case
# CC and CXX choose the compilers (default gcc and g++; the cluster script passes the
# architecture's). Prints one line per program; exits 1 if any failed.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
inc=$root/userspace/fam/include
CC=${CC:-gcc}
CXX=${CXX:-g++}
LIBDIR=${LIBDIR:-$root/target/release}
WARN=(-Wall -Wextra -Werror)

syntax=0
if [ "${1:-}" = --syntax ]; then syntax=1; shift; fi
out=${1:-$root/build/fam-tests}
if [ "$syntax" = 0 ] && [ ! -f "$LIBDIR/libunimem_fam.so" ]; then
  echo "no $LIBDIR/libunimem_fam.so: syntax check only"
  syntax=1
fi
[ "$syntax" = 1 ] || mkdir -p "$out" || exit 1

failed=0
shopt -s nullglob
for src in "$here"/*.c "$here"/*.cpp; do
  prog=$(basename "${src%.*}")
  case $src in
    *.c) cmd=("$CC" -std=gnu11 "${WARN[@]}" -I"$inc" -I"$here" "$src") ;;
    *.cpp) cmd=("$CXX" -std=c++17 "${WARN[@]}" -I"$inc" -I"$here" "$src") ;;
  esac
  # data.c and data.cpp both test the data path: the C++ one is data-cpp.
  [[ $src == *.cpp ]] && [ -f "$here/$prog.c" ] && prog=$prog-cpp
  if [ "$syntax" = 1 ]; then
    cmd+=(-fsyntax-only)
  else
    cmd+=(-O2 -o "$out/$prog" -L"$LIBDIR" -lunimem_fam -pthread "-Wl,-rpath,/opt/unimem/lib")
    [[ $src == *.cpp ]] && cmd+=(-static-libstdc++ -static-libgcc)
  fi
  if "${cmd[@]}"; then
    echo "ok $prog"
  else
    echo "FAILED $prog: ${cmd[*]}"
    failed=$((failed + 1))
  fi
done
[ "$failed" = 0 ]
