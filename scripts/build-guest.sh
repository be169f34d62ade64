#!/usr/bin/env bash
# Builds the guest root filesystem image (busybox + Debian's numactl, fio, stress-ng, kmod,
# util-linux tools with their shared libraries) into the cache, keyed by the package versions
# and this script's inputs. Our own modules and binaries are not in it: they reach the guest
# through a 9p share (scripts/stage-guest.sh), so rebuilding them never rebuilds the image.
# UNIMEM_ARCH=arm64: the same userland from Debian's arm64 packages (scripts/lib/guest-arm64.sh).
# Prints the image path.
source "$(dirname "$0")/lib/common.sh"

BINARIES=(numactl numastat migratepages fio stress-ng kmod mkswap swapon swapoff lsblk losetup
          blkdiscard taskset flock setsid setpriv)
PKGS=(busybox-static numactl fio stress-ng kmod util-linux libc6)

# Where the image's programs come from, by architecture. Paths are those of the image; guest_file
# names the file that becomes one. guest_resolve runs first, in this shell (it may set what the
# others read); guest_prepare only when the image must be built, with a scratch directory.
# x86_64: this host's own (bookworm) programs and the libraries ldd finds for them; PKGS are the
# packages whose versions key the image.
if [ "$(kernel_arch)" = arm64 ]; then
  # shellcheck source=lib/guest-arm64.sh
  source "$UNIMEM_ROOT/scripts/lib/guest-arm64.sh"
else
  guest_resolve() { :; }
  guest_key_inputs() { for p in "${PKGS[@]}"; do dpkg-query -W -f='${Package} ${Version}\n' "$p"; done; }
  guest_cache() { echo "$UNIMEM_CACHE/guest"; }
  guest_prepare() { :; }
  guest_file() { echo "$1"; }
  guest_busybox() { echo /bin/busybox; }
  guest_applets() { /bin/busybox --list-full; }
  guest_binary() { command -v "$1" || die "host tool $1 not found (run scripts/setup-host.sh)"; }
  guest_libs() { ldd "$1" 2>/dev/null | awk '/=> \// {print $3} /^[[:space:]]*\// {print $1}'; }
  guest_libgcc=/lib/x86_64-linux-gnu/libgcc_s.so.1
fi

guest_resolve
key=$( { guest_key_inputs
         printf '%s\n' "${BINARIES[@]}"
         cat "$0" "$UNIMEM_ROOT"/scripts/guest/*; } | hash_inputs)
out="$(guest_cache)/$key"
img="$out/rootfs.ext4"
if [ -f "$img" ]; then echo "$img"; exit 0; fi

log "building guest root filesystem ($out)"
root="$out/root.tmp"
rm -rf "$out"; mkdir -p "$root"
guest_prepare "$out/sources.tmp"
mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,lib,lib64,etc/init.d,proc,sys,dev,tmp,run,var/log,root,home,mnt,opt/unimem,lib/modules}
cp "$(guest_file "$(guest_busybox)")" "$root/bin/busybox"
applets=$(guest_applets)
for applet in $applets; do
  [ -e "$root/$applet" ] || ln -s /bin/busybox "$root/$applet"
done

# Each library lands where the loader finds it in the image: the path it has at its source.
copy_lib() {
  mkdir -p "$root$(dirname "$1")"
  [ -e "$root$1" ] || cp -L "$(guest_file "$1")" "$root$1"
}
copy_with_libs() {
  local bin=$1 dest libs lib
  dest="$root/usr/bin/$(basename "$bin")"
  rm -f "$dest"; cp -L "$(guest_file "$bin")" "$dest"
  libs=$(guest_libs "$bin")
  for lib in $libs; do copy_lib "$lib"; done
}
for b in "${BINARIES[@]}"; do
  path=$(guest_binary "$b")
  copy_with_libs "$path"
done
# Our Rust binaries (9p share) need libgcc_s besides libc.
rm -f "$root$guest_libgcc"; copy_lib "$guest_libgcc"
for tool in insmod rmmod modprobe lsmod modinfo depmod; do
  rm -f "$root/sbin/$tool" "$root/usr/sbin/$tool" "$root/bin/$tool"; ln -s /usr/bin/kmod "$root/sbin/$tool"
done
for tool in mkswap swapon swapoff losetup blkdiscard; do
  rm -f "$root/sbin/$tool"; ln -s "/usr/bin/$tool" "$root/sbin/$tool"
done
install -m 0644 "$UNIMEM_ROOT/scripts/guest/inittab" "$root/etc/inittab"
install -m 0755 "$UNIMEM_ROOT/scripts/guest/rcS" "$root/etc/init.d/rcS"
install -m 0755 "$UNIMEM_ROOT/scripts/guest/agent" "$root/etc/init.d/agent"
# unimem-user: the unprivileged user of the tests (tests/cluster/lib.sh, as_user), in group unimem,
# which may open /dev/unimem_mailbox (lib.sh's load_base; a host has dist/udev/60-unimem.rules).
# Its home is made at boot (rcS), so that it is uid 1000's whoever builds the image.
printf '%s\n' "root:x:0:0:root:/root:/bin/sh" \
  "unimem-user:x:1000:1000:unimem test user:/home/unimem-user:/bin/sh" >"$root/etc/passwd"
printf '%s\n' "root:x:0:" "unimem:x:900:unimem-user" "unimem-user:x:1000:" >"$root/etc/group"
ln -sf /proc/mounts "$root/etc/mtab"
rm -rf "$out/sources.tmp"
size_mb=$(( $(du -sm "$root" | cut -f1) * 3 / 2 + 64 ))
mkfs.ext4 -q -F -L unimem-root -d "$root" "$img.tmp" "${size_mb}M" >&2
mv "$img.tmp" "$img"
rm -rf "$root"
log "guest image ready: $img (${size_mb} MiB)"
echo "$img"
