#!/usr/bin/env bash
# Installs the host packages and tools unimem needs (Debian bookworm), idempotently.
source "$(dirname "$0")/lib/common.sh"

APT_PKGS=(
  rustc-web rust-web-src rust-web-clippy
  clang-19 lld-19 llvm-19 libclang-19-dev
  build-essential bc bison flex libelf-dev libssl-dev cpio xz-utils patch kmod python3
  qemu-system-x86 busybox-static e2fsprogs
  numactl libnuma-dev fio stress-ng util-linux procps
  shellcheck
)

missing=()
for p in "${APT_PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
done
# rustc-web 1.96 comes from bookworm-security; an older one from bookworm main is not enough.
if ! "$HOST_RUSTC" --version 2>/dev/null | grep -q '^rustc 1\.9[6-9]'; then
  missing+=(rustc-web rust-web-src)
fi
if ((${#missing[@]})); then
  log "apt: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  # A first install on a fresh machine has been seen to fail in dpkg's configure step; finishing the
  # configuration and retrying once makes it converge.
  if ! DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; then
    log "apt: install failed once; configuring pending packages and retrying"
    DEBIAN_FRONTEND=noninteractive $SUDO dpkg --configure -a || true
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
fi
"$HOST_RUSTC" --version | grep -q '^rustc 1\.9[6-9]' || die "need rustc-web >= 1.96 at $HOST_RUSTC"

if [ ! -x "$BINDGEN" ] || ! "$BINDGEN" --version | grep -q "$BINDGEN_VERSION"; then
  log "cargo: installing bindgen-cli $BINDGEN_VERSION into the cache (about 2 minutes)"
  cargo install --quiet --locked bindgen-cli --version "$BINDGEN_VERSION" --root "$UNIMEM_CACHE/bindgen-$BINDGEN_VERSION"
fi
log "host tools ready"
