# shellcheck shell=bash
# Shared settings for unimem scripts. Sourced, not executed.
# Everything expensive lives under $UNIMEM_CACHE (outside the repo), keyed by input hashes.
set -euo pipefail

UNIMEM_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
UNIMEM_CACHE=${UNIMEM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/unimem}
UNIMEM_BUILD=${UNIMEM_BUILD:-$UNIMEM_ROOT/build}

# Pinned toolchain and kernel (DESIGN.md section 4).
# shellcheck disable=SC2034 # read by fetch-kernel-source.sh
KERNEL_PKG=linux-source-7.3
KERNEL_PKG_VERSION=7.3.4-1~bpo13+1
# shellcheck disable=SC2034 # read by fetch-kernel-source.sh
KERNEL_SUITE=trixie-backports
# The same package wherever it comes from (a backport leaves the archive when a newer one
# arrives; a mirror or a copy may be anything): SHA-256 of the .deb as the signed index of
# KERNEL_SUITE lists it, and of the source tarball inside it. Not part of kernel_key.
# shellcheck disable=SC2034 # read by fetch-kernel-source.sh
KERNEL_DEB_SHA256=703e369ddd4cce971452f5a593ee55df3a5c10c83caf0fa0df039633ed181ee3
# shellcheck disable=SC2034 # read by fetch-kernel-source.sh
KERNEL_TARBALL_SHA256=76df1affb19f24926949369be1d74b60071c963c598ce8780bddd4bbf0fc3bc4
BINDGEN_VERSION=0.72.1
LLVM_SUFFIX=-19
HOST_RUSTC=/usr/bin/rustc

BINDGEN="$UNIMEM_CACHE/bindgen-$BINDGEN_VERSION/bin/bindgen"

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# A prebuilt tree (`make dist`, scripts/dist.sh): UNIMEM_PREBUILT=DIR, or this tree itself when
# it carries the archive's marker. Kernel, guest image, modules, binaries (UNIMEM_BUILT: kernel/
# and target/release laid out as in a checkout) and QEMU then come from DIR, and nothing is built
# or installed. DIR/prebuilt/bin goes first on PATH: QEMU and the host tools, run by the packed
# loader with the packed libraries.
if [ -z "${UNIMEM_PREBUILT:-}" ] && [ -f "$UNIMEM_ROOT/prebuilt/PREBUILT" ]; then UNIMEM_PREBUILT=$UNIMEM_ROOT; fi
if [ -n "${UNIMEM_PREBUILT:-}" ]; then
  [ -f "$UNIMEM_PREBUILT/prebuilt/PREBUILT" ] ||
    die "UNIMEM_PREBUILT=$UNIMEM_PREBUILT is not an unpacked unimem archive (no prebuilt/PREBUILT; see make dist)"
  UNIMEM_PREBUILT=$(cd "$UNIMEM_PREBUILT" && pwd)
  export UNIMEM_PREBUILT
  case :$PATH: in *":$UNIMEM_PREBUILT/prebuilt/bin:"*) ;; *) export PATH=$UNIMEM_PREBUILT/prebuilt/bin:$PATH ;; esac
fi
UNIMEM_BUILT=${UNIMEM_PREBUILT:-$UNIMEM_ROOT}
prebuilt() { [ -n "${UNIMEM_PREBUILT:-}" ]; }
# The scripts that build refuse in a prebuilt tree: checked here, by name, rather than in each
# of them, because build-guest.sh's own text is part of the guest image's cache key.
case ${0##*/} in
  build-*.sh|setup*.sh|fetch-kernel-source.sh|test-against.sh)
    ! prebuilt || die "${0##*/} builds, and a prebuilt tree ($UNIMEM_PREBUILT) builds nothing: use a source checkout without UNIMEM_PREBUILT" ;;
esac
# with_heartbeat WHAT LOG CMD...: runs CMD with its output in LOG and, while it runs, logs every
# UNIMEM_HEARTBEAT seconds (60) how long WHAT has taken and LOG's last line, so that a long
# step (a kernel build) shows progress and where to look. Returns CMD's status.
with_heartbeat() {
  local what=$1 out=$2 pid start=$SECONDS every=${UNIMEM_HEARTBEAT:-60} next
  shift 2
  "$@" >"$out" 2>&1 &
  pid=$!
  next=$((SECONDS + every))
  while kill -0 "$pid" 2>/dev/null; do
    sleep 1
    if [ "$SECONDS" -ge "$next" ]; then
      log "$what: $(( (SECONDS - start) / 60 )) min $(( (SECONDS - start) % 60 )) s so far, at: $(tail -1 "$out" 2>/dev/null | cut -c1-70) (log: $out)"
      next=$((SECONDS + every))
    fi
  done
  wait "$pid"
}
# apt_install PKG...: Debian packages installed through the machine's configured apt sources
# (sudo unless root). A first install on a fresh machine has been seen to fail in dpkg's
# configure step; finishing the configuration and retrying once makes it converge.
apt_install() {
  ! prebuilt || die "a prebuilt tree installs nothing: install the Debian packages $* yourself if you need them"
  local sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
  log "apt: installing $*"
  $sudo apt-get update -qq
  if ! DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "$@" >/dev/null; then
    log "apt: install failed once; configuring pending packages and retrying"
    DEBIAN_FRONTEND=noninteractive $sudo dpkg --configure -a || true
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "$@" >/dev/null
  fi
}
# Adds dpkg's arm64 architecture (multiarch: arm64 packages beside the host's), once.
dpkg_add_arm64() {
  dpkg --print-foreign-architectures | grep -qx arm64 && return 0
  log "dpkg: adding the arm64 architecture (multiarch)"
  local sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo dpkg --add-architecture arm64
}

# Hash of files/strings given on stdin, short form for directory names.
hash_inputs() { sha256sum | cut -c1-16; }

# The debug kernel (scripts/test.sh --debug-kernel sets UNIMEM_DEBUG_KERNEL=1 for everything it
# runs): the normal config fragment plus kernel/config/debug/*.config (KASAN, lockdep, kmemleak...),
# cached apart from the normal kernel, with modules built into their own output directory.
debug_kernel() { [ "${UNIMEM_DEBUG_KERNEL:-0}" = 1 ]; }
# The guest architecture (UNIMEM_ARCH): x86_64 (the default, the virtual cluster's nodes) or
# arm64 (the seed's boards; cross-built with clang, issue 15). An arm64 kernel is a flavour of its
# own, as the debug kernel is: its own cache, fragments and module output directory.
case ${UNIMEM_ARCH:-x86_64} in
  x86_64|arm64) ;;
  *) die "UNIMEM_ARCH=$UNIMEM_ARCH: x86_64 or arm64" ;;
esac
kernel_arch() { echo "${UNIMEM_ARCH:-x86_64}"; }
arm64_kernel() {
  [ "$(kernel_arch)" = arm64 ] || return 1
  debug_kernel && die "the debug kernel is x86_64 only (UNIMEM_DEBUG_KERNEL=1 with UNIMEM_ARCH=arm64)"
  return 0
}
# Where our user-space binaries of ARCH (default: this flavour's) are (scripts/build-arm64.sh
# cross-builds the arm64 ones), and the C compiler for programs of ARCH built on the host.
# UNIMEM_USERSPACE_BIN replaces the x86_64 directory (scripts/test-against.sh: this tree's
# binaries with some of an earlier commit's in their place).
userspace_bin() {
  if [ "${1:-$(kernel_arch)}" = arm64 ]; then echo "$UNIMEM_ROOT/target/arm64/aarch64-unknown-linux-gnu/release"
  else echo "${UNIMEM_USERSPACE_BIN:-$UNIMEM_BUILT/target/release}"; fi
}
arch_cc() { if [ "$1" = arm64 ]; then echo aarch64-linux-gnu-gcc; else echo gcc; fi; }
# A cluster's run directory RUN (scripts/cluster): the share its ARCH nodes mount at /opt/unimem,
# the architecture `up` recorded for node N (x86_64 for clusters started before --arch), and
# the architectures of its nodes, once each.
run_share() { if [ "$2" = arm64 ]; then echo "$1/share-arm64"; else echo "$1/share"; fi; }
run_node_arch() { cat "$1/node$2.arch" 2>/dev/null || echo x86_64; }
run_arches() {
  local i n; n=$(cat "$1/nodes" 2>/dev/null || echo 0)
  for ((i = 0; i < n; i++)); do run_node_arch "$1" "$i"; done | sort -u
}
# Config fragments of the kernel to build, in merge order. For arm64: unimem.config without the
# lines kernel/config/arm64/dropped-lines lists (ACPI: virt and the boards use a device tree),
# then the arm64 fragment.
kernel_fragments() {
  if arm64_kernel; then
    local d=$UNIMEM_BUILD/kernel-arm64
    mkdir -p "$d"
    grep -vxF -f "$UNIMEM_ROOT/kernel/config/arm64/dropped-lines" "$UNIMEM_ROOT/kernel/config/unimem.config" >"$d/unimem.config"
    echo "$d/unimem.config"
    ls "$UNIMEM_ROOT"/kernel/config/arm64/*.config
    return
  fi
  ls "$UNIMEM_ROOT"/kernel/config/*.config
  if debug_kernel; then ls "$UNIMEM_ROOT"/kernel/config/debug/*.config; fi
}
# What make builds of the kernel, and where the boot image lands.
kernel_image() { if arm64_kernel; then echo Image; else echo bzImage; fi; }
kernel_image_path() { echo "arch/$(if arm64_kernel; then echo arm64; else echo x86; fi)/boot/$(kernel_image)"; }

# Key of the kernel build: source version, config fragment, patch series, toolchain (for the
# debug kernel, its fragment too: the normal kernel's key does not depend on it).
kernel_key() {
  {
    echo "$KERNEL_PKG_VERSION $BINDGEN_VERSION $LLVM_SUFFIX"
    "$HOST_RUSTC" --version 2>/dev/null || echo no-rustc
    cat "$UNIMEM_ROOT"/kernel/config/*.config
    find "$UNIMEM_ROOT/kernel/patches" -name '*.patch' -print0 | sort -z | xargs -0r cat
    if debug_kernel; then echo debug; cat "$UNIMEM_ROOT"/kernel/config/debug/*.config; fi
    if arm64_kernel; then echo arm64; cat "$UNIMEM_ROOT"/kernel/config/arm64/*; fi
  } | hash_inputs
}
# Where builds of this flavour are cached: each flavour seeds from and prunes only its own.
kernel_cache() {
  if debug_kernel; then echo "$UNIMEM_CACHE/kernel-debug"
  elif arm64_kernel; then echo "$UNIMEM_CACHE/kernel-arm64"
  else echo "$UNIMEM_CACHE/kernel"; fi
}
kernel_dir() { echo "$(kernel_cache)/$(kernel_key)"; }
# Where `make modules` puts our .ko files: next to the sources for the normal kernel, a
# directory of its own for the debug kernel (Kbuild's MO=), so neither build clobbers the other.
modules_out() {
  if debug_kernel; then echo "$UNIMEM_BUILD/modules-debug/out"
  elif arm64_kernel; then echo "$UNIMEM_BUILD/modules-arm64/out"
  else echo "$UNIMEM_BUILT/kernel"; fi
}
# Whether the modules are built apart from their sources (Kbuild's MO=): every flavour but the
# normal x86_64 kernel.
modules_apart() { debug_kernel || arm64_kernel; }
# The debug kernel's module build reads a copy of kernel/ without build output: Kbuild refuses
# MO= when the source directory holds a build of its own (the normal one, in place), since make
# would find those objects through VPATH. Copies keep their times, so make rebuilds what changed.
# The modules reach the wire formats by relative path (kernel/common/wire.rs): wire/ sits
# next to the copy as a link. Prints the copy's directory.
modules_src_copy() {
  local top src
  top=$(dirname "$(modules_out)")/src src=$(dirname "$(modules_out)")/src/kernel
  rm -rf "$top"; mkdir -p "$src"
  ln -s "$UNIMEM_ROOT/wire" "$top/wire"
  (cd "$UNIMEM_ROOT/kernel" && find . -type f ! \( -name '*.o' -o -name '*.ko' -o -name '*.mod' -o -name '*.mod.c' \
     -o -name '*.cmd' -o -name '*.rmeta' -o -name '.*.d' -o -name '*.a' -o -name modules.order -o -name Module.symvers \) \
     -exec cp -p --parents -t "$src" {} +)
  echo "$src"
}

# make arguments every kernel or module build uses.
kmake_args() {
  echo "LLVM=$LLVM_SUFFIX RUSTC=$HOST_RUSTC BINDGEN=$BINDGEN CLIPPY_DRIVER=/usr/bin/clippy-driver$(if arm64_kernel; then echo " ARCH=arm64"; fi)"
}
