#!/usr/bin/env bash
# Cross-builds everything an arm64 node runs (issue 15): the arm64 guest kernel (clang,
# UNIMEM_ARCH=arm64: its own cache), our modules for it (build/modules-arm64/out) and our user
# space (Debian's rustc with its arm64 standard library through multiarch, linked by
# aarch64-linux-gnu-gcc, into target/arm64). Installs what it needs (adds dpkg's arm64
# architecture). Incremental: a second run only rebuilds what changed. Logs in build/arm64-*.log.
# Usage: scripts/build-arm64.sh [--help]
source "$(dirname "$0")/lib/common.sh"
export UNIMEM_ARCH=arm64
case ${1:-} in
  -h|--help) sed -n '2,7s/^# \{0,1\}//p' "$0"; exit 0 ;;
  '') ;;
  *) die "unknown argument $1 (see --help)" ;;
esac
need=()
for t in qemu-system-aarch64:qemu-system-arm aarch64-linux-gnu-gcc:gcc-aarch64-linux-gnu cpio:cpio file:file; do
  command -v "${t%%:*}" >/dev/null || need+=("${t#*:}")
done
# The static C library for test inits (a Recommends of the compiler, not installed with it here).
[ -f /usr/aarch64-linux-gnu/lib/libc.a ] || need+=(libc6-dev-arm64-cross)
[ ${#need[@]} = 0 ] || apt_install "${need[@]}"
# User space: the arm64 standard library of the same Debian rustc the kernel uses, and the arm64
# C libraries our crates link (libnuma), through multiarch. rustup's arm64 target would work too,
# but its server is not one of the registries this project may use.
dpkg_add_arm64
std=libstd-rust-web-dev
dpkg-query -W -f='${Version}' "$std:arm64" 2>/dev/null | grep -qxF "$(dpkg-query -W -f='${Version}' "$std:amd64")" ||
  apt_install "$std:arm64=$(dpkg-query -W -f='${Version}' "$std:amd64")" libnuma-dev:arm64

start=$SECONDS
kdir=$("$UNIMEM_ROOT/scripts/build-kernel.sh")
log "arm64 kernel ready after $((SECONDS - start)) s: $kdir/$(kernel_image_path)"
start=$SECONDS
make -C "$UNIMEM_ROOT" -s modules >"$UNIMEM_BUILD/arm64-modules.log" 2>&1 ||
  { tail -30 "$UNIMEM_BUILD/arm64-modules.log" >&2; die "arm64 module build failed"; }
log "arm64 modules built in $((SECONDS - start)) s into $(modules_out)"
start=$SECONDS
RUSTC=$HOST_RUSTC CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc \
  CARGO_TARGET_DIR=$UNIMEM_ROOT/target/arm64 cargo build --release --workspace --target aarch64-unknown-linux-gnu \
  >"$UNIMEM_BUILD/arm64-userspace.log" 2>&1 ||
  { tail -30 "$UNIMEM_BUILD/arm64-userspace.log" >&2; die "arm64 user-space build failed"; }
log "arm64 user space built in $((SECONDS - start)) s into $(userspace_bin)"
