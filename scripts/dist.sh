#!/usr/bin/env bash
# make dist: one relocatable archive with everything the virtual cluster and its benchmarks need,
# for any x86-64 Linux with nothing to build or install there (docs/CLUSTER.md, "A prebuilt
# tree"): the guest kernel, its own modules installed, the guest image, our modules, binaries and
# libraries (target/release), scripts/ and the test helpers the benchmarks source, and this
# host's qemu-system-x86_64 with every library it loads, the dynamic loader, its TCG module and
# the firmware the nodes' command line makes it read. It packs what was built and builds nothing
# but the guest image (on first use, as scripts/cluster up does); it names whatever else is missing.
#
#   scripts/dist.sh [-o FILE]    (scripts/cluster pack, make dist)
#     FILE: default build/unimem-<commit>.tar.xz; XZ_OPT: xz's options (default -6 -T0)
#
# Then, anywhere: tar xJf FILE (busybox tar xJf where xz is absent), and run
# unimem-<commit>/scripts/cluster or scripts/bench/*.sh there; or, from a checkout,
# UNIMEM_PREBUILT=<that directory> scripts/cluster ...
source "$(dirname "$0")/lib/common.sh"

usage() { sed -n '2,/^source/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
out=
while [ $# -gt 0 ]; do
  case $1 in
    -o) [ -n "${2:-}" ] || die "-o wants a file name"; out=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) die "unknown argument $1 (--help)" ;;
  esac
done
! prebuilt || die "$UNIMEM_PREBUILT is a prebuilt tree already: make dist in a source checkout"
! debug_kernel && [ "$(kernel_arch)" = x86_64 ] || die "dist packs the normal x86_64 kernel: unset UNIMEM_DEBUG_KERNEL and UNIMEM_ARCH"

commit=$(git -C "$UNIMEM_ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
git -C "$UNIMEM_ROOT" diff --quiet HEAD 2>/dev/null || commit+=-dirty
name=unimem-$commit
out=${out:-$UNIMEM_BUILD/$name.tar.xz}
case $out in /*) ;; *) out=$PWD/$out ;; esac

# ---- what must have been built; everything missing is named at once -------------------------
missing=()
kdir=$(kernel_dir)
[ -f "$kdir/.unimem-built" ] || missing+=("the guest kernel ($kdir): scripts/build-kernel.sh, or make")
# Our modules: those the Makefile configures (CONFIG_UNIMEM_MBOX_ECHO=m: kernel/mbox_echo/unimem_mbox_echo.ko).
mapfile -t modules < <(sed -n 's/^UNIMEM_CONFIG := //p' "$UNIMEM_ROOT/Makefile" | grep -o 'CONFIG_UNIMEM_[A-Z_]*' |
  sed 's/^CONFIG_UNIMEM_//' | tr '[:upper:]' '[:lower:]' | sed 's|.*|kernel/&/unimem_&.ko|')
[ ${#modules[@]} -gt 0 ] || die "no CONFIG_UNIMEM_ modules in the Makefile's UNIMEM_CONFIG"
for f in "${modules[@]}"; do [ -f "$UNIMEM_ROOT/$f" ] || missing+=("$f: make modules"); done
# Our user space: every binary and C library (cdylib) of the Cargo workspace.
mapfile -t userspace < <(cargo metadata --no-deps --offline --format-version 1 --manifest-path "$UNIMEM_ROOT/Cargo.toml" |
  python3 -c 'import json, sys
for p in json.load(sys.stdin)["packages"]:
    for t in p["targets"]:
        if "bin" in t["kind"]: print(t["name"])
        elif "cdylib" in t["kind"]: print("lib" + t["name"].replace("-", "_") + ".so")')
[ ${#userspace[@]} -gt 0 ] || die "cargo metadata listed no binaries of the workspace"
for f in "${userspace[@]}"; do [ -f "$UNIMEM_ROOT/target/release/$f" ] || missing+=("target/release/$f: make userspace"); done
qemu=$(command -v qemu-system-x86_64) || missing+=("qemu-system-x86_64 (Debian qemu-system-x86: scripts/setup-host.sh)")
# What the x86 nodes' QEMU opens besides the kernel and image (strace of scripts/cluster's command
# line): SeaBIOS, the option ROM that boots -kernel, and the APIC's TPR-patching ROM.
firmware=(bios-256k.bin linuxboot_dma.bin kvmvapic.bin)
declare -A fw_path=()
tcg=
if [ -n "${qemu:-}" ]; then
  qemu=$(readlink -f "$qemu")
  # QEMU's own search path for them (-L help: Debian adds seabios' and ipxe's directories).
  mapfile -t datadirs < <("$qemu" -L help)
  for f in "${firmware[@]}"; do
    for d in "${datadirs[@]}"; do [ -e "$d/$f" ] && { fw_path[$f]=$(readlink -f "$d/$f"); break; }; done
    [ -n "${fw_path[$f]:-}" ] || missing+=("QEMU firmware $f (in none of: ${datadirs[*]})")
  done
  # Debian's QEMU has TCG in a module (none: built in; the check below tells).
  for d in "${QEMU_MODULE_DIR:-}" "$(dirname "$qemu")/../lib/x86_64-linux-gnu/qemu" /usr/lib/x86_64-linux-gnu/qemu /usr/lib64/qemu /usr/lib/qemu; do
    [ -n "$d" ] && [ -f "$d/accel-tcg-x86_64.so" ] && { tcg=$(readlink -f "$d/accel-tcg-x86_64.so"); break; }
  done
fi
if [ ${#missing[@]} -gt 0 ]; then
  printf 'error: not built, so not packed:\n' >&2
  printf '  %s\n' "${missing[@]}" >&2
  exit 1
fi
img=$("$UNIMEM_ROOT/scripts/build-guest.sh")

# ---- the tree ---------------------------------------------------------------------------------
t=$UNIMEM_BUILD/dist/$name
p=$t/prebuilt
log "packing $name in $t"
rm -rf "$t"
# The staging tree (350 MiB) goes once packed, or when anything fails.
trap 'rm -rf "$t" "$out.tmp"' EXIT
mkdir -p "$p/bin" "$p/lib" "$p/qemu/modules" "$p/qemu/firmware" "$t/target/release" "$t/tests/cluster" "$t/docs"
# The scripts the user runs, and what the benchmarks source from tests/ (the cluster tests
# themselves build C programs on the host, so they stay in the source checkout).
cp -r "$UNIMEM_ROOT/scripts" "$t/"
find "$t/scripts" -name __pycache__ -prune -exec rm -rf {} +
cp "$UNIMEM_ROOT/tests/cluster/lib.sh" "$t/tests/cluster/"
cp "$UNIMEM_ROOT/README.md" "$UNIMEM_ROOT/LICENSE" "$UNIMEM_ROOT/COPYING" "$t/"
cp "$UNIMEM_ROOT/docs/CLUSTER.md" "$t/docs/"
# Our builds where a checkout has them (UNIMEM_BUILT: kernel/*/*.ko, target/release).
(cd "$UNIMEM_ROOT" && cp --parents "${modules[@]}" "$t/")
for f in "${userspace[@]}"; do cp -p "$UNIMEM_ROOT/target/release/$f" "$t/target/release/"; done
log "kernel $(cat "$kdir/include/config/kernel.release"), its modules, guest image"
mkdir -p "$p/kernel/$(dirname "$(kernel_image_path)")"
cp "$kdir/$(kernel_image_path)" "$p/kernel/$(kernel_image_path)"
cp "$kdir/.config" "$p/kernel/config"
# shellcheck disable=SC2046
make -C "$kdir" $(kmake_args) -s modules_install INSTALL_MOD_PATH="$p/kernel-modules" INSTALL_MOD_STRIP=1 >/dev/null
rm -f "$p"/kernel-modules/lib/modules/*/build   # a link into this host's kernel build
cp --sparse=always "$img" "$p/rootfs.ext4"

log "QEMU $("$qemu" --version | head -1 | awk '{print $4}') with its libraries, loader, TCG module and firmware"
cp "$qemu" "$p/qemu/"
[ -z "$tcg" ] || cp "$tcg" "$p/qemu/modules/"
for f in "${firmware[@]}"; do cp "${fw_path[$f]}" "$p/qemu/firmware/$f"; done
# The libraries of QEMU, its module and the host's side of the cluster (unimem-fabric,
# unimem-exec), and the loader they name, all from this host.
host_elves=("$qemu" ${tcg:+"$tcg"} "$UNIMEM_ROOT/target/release/unimem-fabric" "$UNIMEM_ROOT/target/release/unimem-exec")
! ldd "${host_elves[@]}" | grep 'not found' || die "libraries missing on this host (above)"
mapfile -t libs < <(ldd "${host_elves[@]}" | awk '/=> \// {print $3}' | sort -u)
loader=$(ldd "$qemu" | awk '/^[[:space:]]+\/.*ld-linux/ {print $1}')
[ -n "$loader" ] || die "ldd names no dynamic loader for $qemu"
for f in "${libs[@]}"; do cp -L "$f" "$p/lib/"; done
cp -L "$loader" "$p/lib/ld-linux-x86-64.so.2"
# prebuilt/bin (first on PATH in a prebuilt tree, common.sh): each program run by the packed
# loader on the packed libraries only, whatever the host's C library; QEMU with its packed TCG
# module (QEMU_MODULE_DIR) and firmware (-L).
wrapper() {
  cat >"$p/bin/$1" <<EOF
#!/bin/sh
# $1 with the archive's own loader and libraries (scripts/dist.sh made this).
top=\$(cd "\${0%/*}/../.." && pwd)
export QEMU_MODULE_DIR="\$top/prebuilt/qemu/modules"
exec "\$top/prebuilt/lib/ld-linux-x86-64.so.2" --library-path "\$top/prebuilt/lib" --argv0 "\$0" "\$top/$2" ${3:-}"\$@"
EOF
  chmod 755 "$p/bin/$1"
}
# shellcheck disable=SC2016 # $top is the wrapper's
wrapper qemu-system-x86_64 prebuilt/qemu/qemu-system-x86_64 '-L "$top/prebuilt/qemu/firmware" '
wrapper unimem-fabric target/release/unimem-fabric
wrapper unimem-exec target/release/unimem-exec
# Their licences travel with them: the Debian copyright files of the packages they come from
# (dpkg knows a library by the path it installed, /lib/... or /usr/lib/...: both are asked).
if command -v dpkg-query >/dev/null; then
  mkdir -p "$p/licenses"
  owned=()
  for f in "$qemu" "${libs[@]}" "$loader" ${tcg:+"$tcg"} "${fw_path[@]}"; do owned+=("$f" "$(readlink -f "$f")"); done
  for pkg in $({ dpkg-query -S "${owned[@]}" 2>/dev/null || true; } | cut -d: -f1 | sort -u); do
    cp "/usr/share/doc/$pkg/copyright" "$p/licenses/$pkg" 2>/dev/null || true
  done
fi
{
  echo "# An unpacked unimem archive (scripts/dist.sh): scripts/lib/common.sh finds this file and takes"
  echo "# kernel, guest image, modules, binaries and QEMU from this tree (docs/CLUSTER.md)."
  echo "commit=$commit"
  echo "date=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "kernel=$(cat "$kdir/include/config/kernel.release")"
  echo "qemu=$("$qemu" --version | head -1)"
  echo "built_on=$(sed -n 's/^PRETTY_NAME=//p' /etc/os-release 2>/dev/null | tr -d '"')"
} >"$p/PREBUILT"

# ---- the packed programs load nothing from this host ------------------------------------------
log "checking that the packed programs resolve every library inside the archive"
for f in "$p/qemu/qemu-system-x86_64" "$p/qemu/modules/"*.so "$t/target/release/unimem-fabric" "$t/target/release/unimem-exec"; do
  [ -e "$f" ] || continue
  outside=$("$p/lib/ld-linux-x86-64.so.2" --library-path "$p/lib" --list "$f" | awk -v lib="$p/lib/" '/=>/ && index($3, lib) != 1')
  [ -z "$outside" ] || die "${f#"$t"/} loads from outside the archive: $outside"
done
env -i "$p/bin/qemu-system-x86_64" --version >/dev/null || die "the packed QEMU does not start"
env -i "$p/bin/qemu-system-x86_64" -accel help | grep -qx tcg || die "the packed QEMU has no TCG accelerator"
env -i "$p/bin/unimem-fabric" --help >/dev/null || die "the packed unimem-fabric does not start"

# ---- the archive ------------------------------------------------------------------------------
log "compressing (xz ${XZ_OPT:--6 -T0}; about a minute on 2 cores)"
mkdir -p "$(dirname "$out")"
# No --sparse: busybox tar cannot unpack GNU sparse entries; xz squeezes the image's zeros anyway.
XZ_OPT=${XZ_OPT:--6 -T0} tar -C "$UNIMEM_BUILD/dist" --owner=0 --group=0 --numeric-owner -cJf "$out.tmp" "$name"
mv "$out.tmp" "$out"
size=$(stat -c %s "$out")
log "wrote $out: $(awk "BEGIN { printf \"%.1f\", $size / 1048576 }") MiB; unpack it anywhere, then run its scripts/cluster"
[ "$size" -lt $((60 << 20)) ] || log "warning: the archive is over 60 MiB"
echo "$out"
