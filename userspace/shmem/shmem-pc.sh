#!/usr/bin/env bash
# Writes shmem.pc, the pkg-config file of libshmem (built by `cargo build --release -p shmem`).
#   shmem-pc.sh                   for the build tree: <target>/release/pkgconfig/shmem.pc, so that
#                                 PKG_CONFIG_PATH=<target>/release/pkgconfig pkg-config --cflags --libs shmem
#                                 finds include/shmem.h and <target>/release/libshmem.so
#   shmem-pc.sh --install PREFIX  installs libshmem.so, shmem.h, shmem.pc, oshcc and oshrun under
#                                 PREFIX (lib/, include/, lib/pkgconfig/, bin/)
# CARGO_TARGET_DIR is honoured. Prints the path of the .pc file.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../../scripts/lib/pc.sh
source "$here/../../scripts/lib/pc.sh"

usage() { sed -n '2,9s/^# \{0,1\}//p' "$0"; }

NAME=shmem
DESC="OpenSHMEM 1.4 over GSAS for unimem clusters (run programs with oshrun)"

case ${1:-} in
  -h|--help) usage ;;
  --install)
    prefix=${2:?--install needs a PREFIX}
    for f in libshmem.so oshrun; do
      [ -f "$built/$f" ] || { echo "shmem-pc.sh: $built/$f missing: run cargo build --release -p shmem" >&2; exit 1; }
    done
    install -D -m 0755 "$built/libshmem.so" "$prefix/lib/libshmem.so"
    install -D -m 0755 "$built/oshrun" "$prefix/bin/oshrun"
    install -D -m 0755 "$here/oshcc" "$prefix/bin/oshcc"
    install -D -m 0644 "$here/include/shmem.h" "$prefix/include/shmem.h"
    # shellcheck disable=SC2016 # pkg-config variables, expanded by pkg-config
    write_pc "$prefix/lib/pkgconfig/shmem.pc" "$prefix" '${prefix}/lib' '${prefix}/include' \
      "$NAME" "$DESC" -lshmem
    ;;
  "") write_pc "$built/pkgconfig/shmem.pc" "$root" "$built" "$here/include" "$NAME" "$DESC" -lshmem ;;
  *) usage >&2; exit 2 ;;
esac
