#!/usr/bin/env bash
# Writes gsas.pc, the pkg-config file of libgsas (built by `cargo build --release -p gsas`).
#   gsas-pc.sh                   for the build tree: <target>/release/pkgconfig/gsas.pc, so that
#                                PKG_CONFIG_PATH=<target>/release/pkgconfig pkg-config --cflags --libs gsas
#                                finds include/gsas.h and <target>/release/libgsas.{so,a}
#   gsas-pc.sh --install PREFIX  installs libgsas.so, libgsas.a, gsas.h and gsas.pc under PREFIX
#                                (lib/, include/, lib/pkgconfig/; LIBDIR and INCLUDEDIR override,
#                                DESTDIR stages the files under it, the .pc naming PREFIX)
# CARGO_TARGET_DIR is honoured. Prints the path of the .pc file.
source "$(dirname "$0")/../pc-lib.sh"
pc_main gsas "GSAS, the global shared address space of a unimem cluster (AllocSharedPage, READ, WRITE, FetchAndAdd, CAS, SWAP, ...)" \
  "$(cd "$(dirname "$0")" && pwd)/include/gsas.h" -- "$@"
