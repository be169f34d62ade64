#!/usr/bin/env bash
# arm64 smoke boot (issue 15, first step): cross-builds the arm64 guest kernel and our modules
# (UNIMEM_ARCH=arm64: clang for the kernel and the modules, Debian's aarch64 gcc for a static
# init), boots the kernel under qemu-system-aarch64 -M virt (TCG) from an initramfs whose init
# (tests/arm64/init.c) loads our modules in order and unloads them, and checks the console:
# unimem_eusrvmem must load and unload cleanly, and nothing may oops or warn. The others are
# reported (they need the fabric, which this boot does not attach). Not in the default tests.
# Usage: scripts/arm64-smoke.sh [--help]. Output: build/arm64-smoke/ (console.log).
source "$(dirname "$0")/lib/common.sh"
export UNIMEM_ARCH=arm64
case ${1:-} in
  -h|--help) sed -n '2,8s/^# \{0,1\}//p' "$0"; exit 0 ;;
  '') ;;
  *) die "unknown argument $1 (see --help)" ;;
esac
need=()
for t in qemu-system-aarch64:qemu-system-arm aarch64-linux-gnu-gcc:gcc-aarch64-linux-gnu cpio:cpio file:file; do
  command -v "${t%%:*}" >/dev/null || need+=("${t#*:}")
done
# The static C library for the init (a Recommends of the compiler, not installed with it here).
[ -f /usr/aarch64-linux-gnu/lib/libc.a ] || need+=(libc6-dev-arm64-cross)
[ ${#need[@]} = 0 ] || apt_install "${need[@]}"

start=$SECONDS
kdir=$("$UNIMEM_ROOT/scripts/build-kernel.sh")
log "arm64 kernel ready after $((SECONDS - start)) s: $kdir/$(kernel_image_path)"
start=$SECONDS
make -C "$UNIMEM_ROOT" -s modules >"$UNIMEM_BUILD/arm64-modules.log" 2>&1 ||
  { tail -30 "$UNIMEM_BUILD/arm64-modules.log" >&2; die "arm64 module build failed"; }
log "arm64 modules built in $((SECONDS - start)) s into $(modules_out)"

work=$UNIMEM_BUILD/arm64-smoke
rm -rf "$work"; mkdir -p "$work/root/proc" "$work/root/sys" "$work/root/dev"
aarch64-linux-gnu-gcc -static -O2 -Wall -Wextra -Werror -o "$work/root/init" "$UNIMEM_ROOT/tests/arm64/init.c"
: >"$work/root/modules.list"
for m in eusrvmem mailbox mbox_echo kram numa gsas; do
  ko=$(find "$(modules_out)" -name "unimem_$m.ko" | head -1)
  [ -n "$ko" ] || die "unimem_$m.ko was not built"
  file "$ko" | grep -q 'ARM aarch64' || die "$ko is not an aarch64 object: $(file -b "$ko")"
  cp "$ko" "$work/root/"
  echo "/unimem_$m.ko" >>"$work/root/modules.list"
done
mknod "$work/root/dev/console" c 5 1
(cd "$work/root" && find . | cpio -o -H newc --quiet) | gzip >"$work/initramfs.cpio.gz"

log "booting the arm64 kernel (qemu-system-aarch64 -M virt, TCG); console: $work/console.log"
timeout "${UNIMEM_ARM64_BOOT_TIMEOUT:-600}" qemu-system-aarch64 -M virt,gic-version=3 -cpu max -smp 1 -m 512 \
  -nographic -no-reboot -kernel "$kdir/$(kernel_image_path)" -initrd "$work/initramfs.cpio.gz" \
  -append "console=ttyAMA0 rdinit=/init panic=-1" >"$work/console.log" 2>&1 ||
  die "the arm64 boot did not power off by itself (console: $work/console.log)"
{ grep 'arm64-smoke:' "$work/console.log" || true; } | tr -d '\r'
fails=0
check() { grep -q "$1" "$work/console.log" || { echo "FAIL: no '$1' on the console" >&2; fails=1; }; }
check 'arm64-smoke: kernel 7\.3.* aarch64'
check 'arm64-smoke: load unimem_eusrvmem: ok'
check 'arm64-smoke: unload unimem_eusrvmem: ok'
check 'arm64-smoke: done'
if grep -Eq 'Oops|BUG:|WARNING:|Kernel panic|Call trace' "$work/console.log"; then
  grep -E -A5 'Oops|BUG:|WARNING:|Kernel panic|Call trace' "$work/console.log" >&2
  echo "FAIL: the kernel reported a problem" >&2; fails=1
fi
[ "$fails" = 0 ] || die "arm64 smoke boot failed (console: $work/console.log)"
log "arm64 smoke boot passed"
