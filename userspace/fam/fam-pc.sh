#!/usr/bin/env bash
# Writes fam.pc, the pkg-config file of libunimem_fam (built by `cargo build --release -p unimem-fam`).
#   fam-pc.sh                   for the build tree: <target>/release/pkgconfig/fam.pc, so that
#                               PKG_CONFIG_PATH=<target>/release/pkgconfig pkg-config --cflags --libs fam
#                               finds include/fam/fam.h and <target>/release/libunimem_fam.so
#   fam-pc.sh --install PREFIX  installs libunimem_fam.so, the fam/ headers, fam.pc, famcc and
#                               famc++ under PREFIX (lib/, include/fam/, lib/pkgconfig/, bin/;
#                               LIBDIR, INCLUDEDIR and BINDIR override, DESTDIR stages the files)
# CARGO_TARGET_DIR is honoured. Prints the path of the .pc file.
source "$(dirname "$0")/../pc-lib.sh"
here=$(cd "$(dirname "$0")" && pwd)
desc="OpenFAM 3.x over unimem: fabric-attached memory in GSAS (metadata service famd)"

# FILE PREFIX LIBDIR INCLUDEDIR CFLAGS: pc_write names the library after the .pc file, which
# here differ (fam.pc, -lunimem_fam).
fam_pc() {
  pc_write "$1" "$2" "$3" "$4" "$5" unimem_fam "$desc" >/dev/null
  sed -i 's/^Name: unimem_fam$/Name: fam/' "$1"
  echo "$1"
}

case ${1:-} in
  -h|--help) pc_usage ;;
  --install)
    prefix=${2:?--install needs a PREFIX}
    libdir=${LIBDIR:-$prefix/lib} incdir=${INCLUDEDIR:-$prefix/include} bindir=${BINDIR:-$prefix/bin} dest=${DESTDIR:-}
    [ -f "$pc_built/libunimem_fam.so" ] ||
      { echo "fam-pc.sh: $pc_built/libunimem_fam.so missing: run cargo build --release -p unimem-fam" >&2; exit 1; }
    install -D -m 0755 "$pc_built/libunimem_fam.so" "$dest$libdir/libunimem_fam.so"
    install -D -m 0755 "$here/famcc" "$dest$bindir/famcc"
    ln -sf famcc "$dest$bindir/famc++"
    for h in "$here"/include/fam/*.h; do
      install -D -m 0644 "$h" "$dest$incdir/fam/$(basename "$h")"
    done
    # shellcheck disable=SC2016 # pkg-config variables, expanded by pkg-config
    fam_pc "$dest$libdir/pkgconfig/fam.pc" "$prefix" "${libdir/#"$prefix"/\${prefix\}}" \
      "${incdir/#"$prefix"/\${prefix\}}" '-I${includedir}'
    ;;
  "") fam_pc "$pc_built/pkgconfig/fam.pc" "$pc_root" "$pc_built" "$here/include" "-I$here/include" ;;
  *) pc_usage >&2; exit 2 ;;
esac
