#!/usr/bin/env bash
# Builds the guest root filesystem image (busybox + Debian's numactl, fio, stress-ng, kmod,
# util-linux tools with their shared libraries) into the cache, keyed by the package versions
# and this script's inputs. Our own modules and binaries are not in it: they reach the guest
# through a 9p share (scripts/stage-guest.sh), so rebuilding them never rebuilds the image.
# Prints the image path.
source "$(dirname "$0")/lib/common.sh"

BINARIES=(numactl numastat migratepages fio stress-ng kmod mkswap swapon swapoff lsblk losetup
          blkdiscard taskset flock setsid)
PKGS=(busybox-static numactl fio stress-ng kmod util-linux libc6)

key=$( { for p in "${PKGS[@]}"; do dpkg-query -W -f='${Package} ${Version}\n' "$p"; done
         printf '%s\n' "${BINARIES[@]}"
         cat "$0" "$UNIMEM_ROOT"/scripts/guest/*; } | hash_inputs)
out="$UNIMEM_CACHE/guest/$key"
img="$out/rootfs.ext4"
if [ -f "$img" ]; then echo "$img"; exit 0; fi

log "building guest root filesystem ($out)"
root="$out/root.tmp"
rm -rf "$out"; mkdir -p "$root"
mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,lib,lib64,etc/init.d,proc,sys,dev,tmp,run,var/log,root,mnt,opt/unimem,lib/modules}
cp /bin/busybox "$root/bin/busybox"
for applet in $(/bin/busybox --list-full); do
  [ -e "$root/$applet" ] || ln -s /bin/busybox "$root/$applet"
done

copy_with_libs() {
  local bin=$1 dest
  dest="$root/usr/bin/$(basename "$bin")"
  rm -f "$dest"; cp -L "$bin" "$dest"
  ldd "$bin" 2>/dev/null | awk '/=> \// {print $3} /^[[:space:]]*\// {print $1}' | while read -r lib; do
    mkdir -p "$root$(dirname "$lib")"
    [ -e "$root$lib" ] || cp -L "$lib" "$root$lib"
  done
}
for b in "${BINARIES[@]}"; do
  path=$(command -v "$b" || true)
  [ -n "$path" ] || die "host tool $b not found (run scripts/setup-host.sh)"
  copy_with_libs "$path"
done
# Our Rust binaries (9p share) need libgcc_s besides libc.
for lib in /lib/x86_64-linux-gnu/libgcc_s.so.1; do mkdir -p "$root$(dirname "$lib")"; cp -L "$lib" "$root$lib"; done
for tool in insmod rmmod modprobe lsmod modinfo depmod; do
  rm -f "$root/sbin/$tool" "$root/usr/sbin/$tool" "$root/bin/$tool"; ln -s /usr/bin/kmod "$root/sbin/$tool"
done
for tool in mkswap swapon swapoff losetup blkdiscard; do
  rm -f "$root/sbin/$tool"; ln -s "/usr/bin/$tool" "$root/sbin/$tool"
done
install -m 0644 "$UNIMEM_ROOT/scripts/guest/inittab" "$root/etc/inittab"
install -m 0755 "$UNIMEM_ROOT/scripts/guest/rcS" "$root/etc/init.d/rcS"
install -m 0755 "$UNIMEM_ROOT/scripts/guest/agent" "$root/etc/init.d/agent"
echo "root:x:0:0:root:/root:/bin/sh" > "$root/etc/passwd"
echo "root:x:0:" > "$root/etc/group"
ln -sf /proc/mounts "$root/etc/mtab"
size_mb=$(( $(du -sm "$root" | cut -f1) * 3 / 2 + 64 ))
mkfs.ext4 -q -F -L unimem-root -d "$root" "$img.tmp" "${size_mb}M" >&2
mv "$img.tmp" "$img"
rm -rf "$root"
log "guest image ready: $img (${size_mb} MiB)"
echo "$img"
