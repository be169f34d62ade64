#!/usr/bin/env bash
# arm64 smoke boot (issue 15, first step): cross-builds the arm64 guest kernel and our modules
# (UNIMEM_ARCH=arm64: clang), our user space (Debian's rustc with its arm64 standard library
# through multiarch), boots the kernel under qemu-system-aarch64 -M virt (TCG) from an initramfs
# whose init (tests/arm64/init.c) loads our modules, runs our tools, unloads the modules, and
# checks the console: unimem_eusrvmem loads and unloads, the tools answer --version, and
# nothing oopses or warns. Not in the default tests. Adds the arm64 architecture to dpkg.
# Usage: scripts/arm64-smoke.sh [--help]. Output: build/arm64-smoke/ (console.log).
source "$(dirname "$0")/lib/common.sh"
export UNIMEM_ARCH=arm64
case ${1:-} in
  -h|--help) sed -n '2,8s/^# \{0,1\}//p' "$0"; exit 0 ;;
  '') ;;
  *) die "unknown argument $1 (see --help)" ;;
esac
"$UNIMEM_ROOT/scripts/build-arm64.sh"
kdir=$("$UNIMEM_ROOT/scripts/build-kernel.sh")
bin=$(userspace_bin)

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
# Our tools and the arm64 shared libraries they need (ldd cannot run them: readelf's NEEDED).
TOOLS=(unimem-gsas unimem-mbox unimem-dht unimem-gas kram-daemon unimem-numatest)
mkdir -p "$work/root/bin" "$work/root/lib"
: >"$work/root/commands.list"
for t in "${TOOLS[@]}"; do
  [ -x "$bin/$t" ] || die "$bin/$t was not built"
  cp "$bin/$t" "$work/root/bin/"
  echo "/bin/$t --version" >>"$work/root/commands.list"
  for lib in $(aarch64-linux-gnu-readelf -d "$bin/$t" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p'); do
    [ -e "$work/root/lib/$lib" ] && continue
    src=$(find /usr/lib/aarch64-linux-gnu /lib/aarch64-linux-gnu /usr/aarch64-linux-gnu/lib -maxdepth 1 -name "$lib" 2>/dev/null | head -1)
    [ -n "$src" ] || die "no arm64 $lib for $t"
    cp -L "$src" "$work/root/lib/$lib"
  done
done
ln -s lib "$work/root/lib64"
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
for t in "${TOOLS[@]}"; do check "arm64-smoke: run /bin/$t: exit 0"; done
check 'arm64-smoke: done'
if grep -Eq 'Oops|BUG:|WARNING:|Kernel panic|Call trace' "$work/console.log"; then
  grep -E -A5 'Oops|BUG:|WARNING:|Kernel panic|Call trace' "$work/console.log" >&2
  echo "FAIL: the kernel reported a problem" >&2; fails=1
fi
[ "$fails" = 0 ] || die "arm64 smoke boot failed (console: $work/console.log)"
log "arm64 smoke boot passed"
