# Shared settings for unimem scripts. Sourced, not executed.
# Everything expensive lives under $UNIMEM_CACHE (outside the repo), keyed by input hashes.
set -euo pipefail

UNIMEM_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
UNIMEM_CACHE=${UNIMEM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/unimem}
UNIMEM_BUILD=${UNIMEM_BUILD:-$UNIMEM_ROOT/build}

# Pinned toolchain and kernel (DESIGN.md section 4).
KERNEL_PKG=linux-source-7.3
KERNEL_PKG_VERSION=7.3.4-1~bpo13+1
KERNEL_SUITE=trixie-backports
BINDGEN_VERSION=0.72.1
LLVM_SUFFIX=-19
HOST_RUSTC=/usr/bin/rustc

BINDGEN="$UNIMEM_CACHE/bindgen-$BINDGEN_VERSION/bin/bindgen"

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# Hash of files/strings given on stdin, short form for directory names.
hash_inputs() { sha256sum | cut -c1-16; }

# Key of the kernel build: source version, config fragment, patch series, toolchain.
kernel_key() {
  {
    echo "$KERNEL_PKG_VERSION $BINDGEN_VERSION $LLVM_SUFFIX"
    "$HOST_RUSTC" --version 2>/dev/null || echo no-rustc
    cat "$UNIMEM_ROOT"/kernel/config/*.config
    find "$UNIMEM_ROOT/kernel/patches" -name '*.patch' -print0 | sort -z | xargs -0r cat
  } | hash_inputs
}
kernel_dir() { echo "$UNIMEM_CACHE/kernel/$(kernel_key)"; }

# make arguments every kernel or module build uses.
kmake_args() {
  echo "LLVM=$LLVM_SUFFIX RUSTC=$HOST_RUSTC BINDGEN=$BINDGEN CLIPPY_DRIVER=/usr/bin/clippy-driver"
}
