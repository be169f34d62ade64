#!/usr/bin/env bash
# Writes gsas.pc, the pkg-config file of libgsas (built by `cargo build --release -p gsas`).
#   gsas-pc.sh                   for the build tree: <target>/release/pkgconfig/gsas.pc, so that
#                                PKG_CONFIG_PATH=<target>/release/pkgconfig pkg-config --cflags --libs gsas
#                                finds include/gsas.h and <target>/release/libgsas.{so,a}
#   gsas-pc.sh --install PREFIX  installs libgsas.so, libgsas.a, gsas.h and gsas.pc under PREFIX
#                                (lib/, include/, lib/pkgconfig/)
# CARGO_TARGET_DIR is honoured. Prints the path of the .pc file.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
target=${CARGO_TARGET_DIR:-$root/target}
case $target in /*) ;; *) target=$root/$target ;; esac
built=$target/release
version=$(sed -n 's/^version = "\(.*\)"/\1/p' "$root/Cargo.toml" | head -1)

usage() { sed -n '2,9s/^# \{0,1\}//p' "$0"; }

write_pc() { # FILE PREFIX LIBDIR INCLUDEDIR
  mkdir -p "$(dirname "$1")"
  cat >"$1" <<PC
prefix=$2
libdir=$3
includedir=$4

Name: gsas
Description: GSAS, the global shared address space of a unimem cluster (AllocSharedPage, READ, WRITE, FetchAndAdd, CAS, SWAP, ...)
Version: ${version:-0.1.0}
Cflags: -I\${includedir}
Libs: -L\${libdir} -lgsas
Libs.private: -lgcc_s -lutil -lrt -lpthread -lm -ldl -lc
PC
  echo "$1"
}

case ${1:-} in
  -h|--help) usage ;;
  --install)
    prefix=${2:?--install needs a PREFIX}
    for f in libgsas.so libgsas.a; do
      [ -f "$built/$f" ] || { echo "gsas-pc.sh: $built/$f missing: run cargo build --release -p gsas" >&2; exit 1; }
    done
    install -D -m 0755 "$built/libgsas.so" "$prefix/lib/libgsas.so"
    install -D -m 0644 "$built/libgsas.a" "$prefix/lib/libgsas.a"
    install -D -m 0644 "$here/include/gsas.h" "$prefix/include/gsas.h"
    # shellcheck disable=SC2016 # pkg-config variables, expanded by pkg-config
    write_pc "$prefix/lib/pkgconfig/gsas.pc" "$prefix" '${prefix}/lib' '${prefix}/include'
    ;;
  "") write_pc "$built/pkgconfig/gsas.pc" "$root" "$built" "$here/include" ;;
  *) usage >&2; exit 2 ;;
esac
