#!/usr/bin/env bash
# Writes dht.pc, the pkg-config file of libdht (built by `cargo build --release -p dht`).
# libdht carries the GSAS client too: a program links -ldht alone and may include gsas.h.
#   dht-pc.sh                    for the build tree: <target>/release/pkgconfig/dht.pc, so that
#                                PKG_CONFIG_PATH=<target>/release/pkgconfig pkg-config --cflags --libs dht
#                                finds include/dht.h, gsas.h and <target>/release/libdht.{so,a}
#   dht-pc.sh --install PREFIX   installs libdht.so, libdht.a, dht.h, gsas.h and dht.pc under
#                                PREFIX (lib/, include/, lib/pkgconfig/; LIBDIR and INCLUDEDIR
#                                override, DESTDIR stages the files under it, the .pc naming PREFIX)
# CARGO_TARGET_DIR is honoured. Prints the path of the .pc file.
source "$(dirname "$0")/../pc-lib.sh"
here=$(cd "$(dirname "$0")" && pwd)
pc_main dht "A distributed hash table on the GSAS of a unimem cluster (dhtCreate, dhtPut, dhtGet, dhtDelete, dhtDestroy)" \
  "$here/include/dht.h" "$here/../gsas/include/gsas.h" -- "$@"
