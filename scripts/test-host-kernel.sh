#!/usr/bin/env bash
# Runs the host tests (every test binary of `cargo test --workspace --release`) under another
# Linux kernel than the host's: by default bookworm's own (linux-image-amd64, 6.1), the kernel a
# stock Debian bookworm machine runs, so that what needs a newer one is seen to skip, not fail.
#   scripts/test-host-kernel.sh [KERNEL_PACKAGE]     e.g. linux-image-6.1.0-56-amd64
# The package comes through apt's configured sources (apt-get download, nothing installed). A
# QEMU VM (TCG, 2 vCPUs, 2 GiB) boots it with a busybox initramfs that mounts this host's / over
# 9p read-only (tmpfs on /tmp, /run, /dev/shm and target/tmp) and runs each binary from its
# package's directory. 3-5 minutes on 2 cores. Output: $UNIMEM_BUILD/test-host-kernel/vm.log;
# ends with "N passed, N failed" and exits non-zero on a failure. Not part of scripts/test.sh.
source "$(dirname "$0")/lib/common.sh"
case ${1:-} in -h|--help) sed -n '2,/^source/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0;; esac
pkg=${1:-$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-/ {print $2; exit}')}
[ -n "$pkg" ] || die "no kernel package named and none found behind linux-image-amd64 (apt-get update?)"
out=$UNIMEM_BUILD/test-host-kernel
target_tmp=${CARGO_TARGET_DIR:-$UNIMEM_ROOT/target}/tmp  # CARGO_TARGET_TMPDIR: tests write there
rm -rf "$out"; mkdir -p "$out/pkg" "$out/initrd"/{bin,mods,proc,sys,dev,host}

log "$pkg: downloading"
(cd "$out" && apt-get -o APT::Sandbox::User=root download "$pkg" >&2)
dpkg-deb -x "$out/${pkg}"_*.deb "$out/pkg"
krel=${pkg#linux-image-}
vmlinuz=$out/pkg/boot/vmlinuz-$krel
[ -f "$vmlinuz" ] || die "$pkg has no /boot/vmlinuz-$krel"
depmod -b "$out/pkg" "$krel"
# virtio-pci and 9p are modules in Debian's kernels: loaded in dependency order.
for m in virtio_pci 9pnet_virtio 9p; do modprobe -d "$out/pkg" -S "$krel" --show-depends "$m"; done |
  awk '$1 == "insmod" && !seen[$2]++ {print $2}' | while read -r ko; do
    case $ko in *.xz) xz -dc "$ko" >"$out/initrd/mods/$(basename "$ko" .xz)";; *) cp "$ko" "$out/initrd/mods/";; esac
    basename "${ko%.xz}" >>"$out/initrd/order"
  done

log "listing the test binaries (cargo test --no-run)"
cargo test --workspace --release --no-run --message-format=json 2>/dev/null | python3 -c '
import json, os, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m["profile"]["test"] and m.get("executable"):
        print(os.path.dirname(m["manifest_path"]), m["executable"])' >"$out/tests"

cat >"$out/run" <<EOF
#!/bin/bash
echo "KERNEL \$(uname -r)"
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/tmp
while read -r dir exe; do (cd "\$dir" && timeout 300 "\$exe" --test-threads=2 2>&1); echo "EXIT \$? \$exe"; done <$out/tests
EOF
cp /bin/busybox "$out/initrd/bin/"
cat >"$out/initrd/init" <<EOF
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
for m in \$(cat /order); do insmod /mods/\$m; done
mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=512000 hostroot /host
mount -t proc proc /host/proc; mount -t sysfs sys /host/sys; mount -t devtmpfs dev /host/dev
mkdir -p /host/dev/pts /host/dev/shm; mount -t devpts devpts /host/dev/pts; mount -t tmpfs shm /host/dev/shm
for d in /tmp /run $target_tmp; do mount -t tmpfs tmp /host\$d; done
chroot /host /bin/bash $out/run
poweroff -f
EOF
chmod +x "$out/initrd/init" "$out/run"
mkdir -p "$target_tmp"
(cd "$out/initrd" && find . | cpio -o -H newc 2>/dev/null | gzip -1 >"$out/initrd.gz")

log "booting $krel and running $(wc -l <"$out/tests") test binaries (log: $out/vm.log)"
timeout 1800 qemu-system-x86_64 -accel tcg -cpu max -m 2G -smp 2 -nographic -no-reboot \
  -kernel "$vmlinuz" -initrd "$out/initrd.gz" -append "console=ttyS0 quiet panic=-1" \
  -virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on >"$out/vm.log" 2>&1 || true
sed -i 's/\x1b\[[0-9;]*m//g; s/\r$//' "$out/vm.log"
grep -q "^KERNEL $krel" "$out/vm.log" || die "the VM did not run the tests (see $out/vm.log)"
grep -oE 'SKIP [[:alnum:]_]+: .*' "$out/vm.log" >&2 || true
binaries=$(wc -l <"$out/tests") ran=$(grep -c '^EXIT ' "$out/vm.log" || true)
grep -E '^EXIT [^0]' "$out/vm.log" >&2 || true
read -r p f < <(awk '/^test result:/ {p += $4; f += $6} END {print p + 0, f + 0}' "$out/vm.log")
bad=$(grep -c '^EXIT [^0]' "$out/vm.log" || true)
[ "$ran" = "$binaries" ] || { log "only $ran of $binaries test binaries ran"; f=$((f + 1)); }
[ "$bad" = 0 ] || [ "$f" != 0 ] || f=$bad
echo "$p passed, $f failed (kernel $krel)"
[ "$f" = 0 ]
