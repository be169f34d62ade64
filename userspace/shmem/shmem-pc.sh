#!/usr/bin/env bash
# Writes shmem.pc, the pkg-config file of libshmem (built by `cargo build --release -p shmem`).
#   shmem-pc.sh                   for the build tree: <target>/release/pkgconfig/shmem.pc, so that
#                                 PKG_CONFIG_PATH=<target>/release/pkgconfig pkg-config --cflags --libs shmem
#                                 finds include/shmem.h and <target>/release/libshmem.so
#   shmem-pc.sh --install PREFIX  installs libshmem.so, shmem.h (+ shmem/*.h), shmem.pc, oshcc, oshc++ and oshrun under
#                                 PREFIX (lib/, include/, lib/pkgconfig/, bin/; LIBDIR, INCLUDEDIR
#                                 and BINDIR override, DESTDIR stages the files under it)
# CARGO_TARGET_DIR is honoured. Prints the path of the .pc file.
source "$(dirname "$0")/../pc-lib.sh"
here=$(cd "$(dirname "$0")" && pwd)
desc="OpenSHMEM 1.4 over GSAS for unimem clusters (run programs with oshrun)"

case ${1:-} in
  -h|--help) pc_usage ;;
  --install)
    prefix=${2:?--install needs a PREFIX}
    libdir=${LIBDIR:-$prefix/lib} incdir=${INCLUDEDIR:-$prefix/include} bindir=${BINDIR:-$prefix/bin} dest=${DESTDIR:-}
    for f in libshmem.so oshrun; do
      [ -f "$pc_built/$f" ] || { echo "shmem-pc.sh: $pc_built/$f missing: run cargo build --release -p shmem" >&2; exit 1; }
    done
    install -D -m 0755 "$pc_built/libshmem.so" "$dest$libdir/libshmem.so"
    install -D -m 0755 "$pc_built/oshrun" "$dest$bindir/oshrun"
    install -D -m 0755 "$here/oshcc" "$dest$bindir/oshcc"
    install -D -m 0755 "$here/oshc++" "$dest$bindir/oshc++"
    install -D -m 0644 "$here/include/shmem.h" "$dest$incdir/shmem.h"
    # The headers shmem.h includes (shmem/p2p15.h, shmem/teams.h, ...), under incdir/shmem/.
    for h in "$here"/include/shmem/*.h; do
      install -D -m 0644 "$h" "$dest$incdir/shmem/${h##*/}"
    done
    # shellcheck disable=SC2016 # pkg-config variables, expanded by pkg-config
    pc_write "$dest$libdir/pkgconfig/shmem.pc" "$prefix" "${libdir/#"$prefix"/\${prefix\}}" \
      "${incdir/#"$prefix"/\${prefix\}}" '-I${includedir}' shmem "$desc"
    ;;
  "") pc_write "$pc_built/pkgconfig/shmem.pc" "$pc_root" "$pc_built" "$here/include" "-I$here/include" shmem "$desc" ;;
  *) pc_usage >&2; exit 2 ;;
esac
