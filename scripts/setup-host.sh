#!/usr/bin/env bash
# Installs the host packages and tools unimem needs (Debian bookworm), idempotently, then checks
# that every command the build, `make check`, `make install` and the tests call is there.
source "$(dirname "$0")/lib/common.sh"

# Debian packages needed as such: the kernel's rustc, its library source and clippy-driver
# (kmake_args) must be the same 1.96 toolchain, and the guest image copies Debian's binaries.
APT_PKGS=(
  rustc-web rust-web-src rust-web-clippy
  clang-19 lld-19 llvm-19 libclang-19-dev
  build-essential bc bison flex libelf-dev libssl-dev cpio xz-utils patch kmod python3
  qemu-system-x86 busybox-static e2fsprogs
  numactl libnuma-dev fio stress-ng util-linux procps
  shellcheck device-tree-compiler
)
# command package: every command the build, `make check`, `make install` and the tests call.
# Its package is installed when the command is not found, and named when it is still missing.
# Recommends are not installed (--no-install-recommends): rustc-web only recommends cargo-web,
# which is how a stock bookworm machine ended up without cargo.
TOOLS=(
  "cargo cargo-web" "rustfmt rustfmt-web" "cargo-fmt rustfmt-web" "cargo-clippy rust-web-clippy"
  "clang-19 clang-19" "ld.lld-19 lld-19" "llvm-ar-19 llvm-19" "gcc build-essential"
  "make build-essential" "bc bc" "bison bison" "flex flex" "cpio cpio" "xz xz-utils"
  "patch patch" "depmod kmod" "modinfo kmod" "python3 python3" "git git" "pkg-config pkg-config"
  "qemu-system-x86_64 qemu-system-x86" "mkfs.ext4 e2fsprogs" "numactl numactl" "fio fio"
  "stress-ng stress-ng" "flock util-linux" "pgrep procps" "shellcheck shellcheck" "dtc device-tree-compiler"
  "systemd-analyze systemd" "logrotate logrotate" "man man-db" "unshare util-linux" "setpriv util-linux"
)
# Prints "command package" for each command not found (depmod and logrotate live in sbin,
# which a user's PATH may lack).
absent_tools() {
  local t cmd pkg
  for t in "${TOOLS[@]}"; do
    read -r cmd pkg <<<"$t"
    PATH=$PATH:/usr/sbin:/sbin command -v "$cmd" >/dev/null || echo "$cmd $pkg"
  done
}

missing=()
for p in "${APT_PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
done
while read -r _ pkg; do missing+=("$pkg"); done < <(absent_tools)
# rustc-web 1.96 comes from bookworm-security; an older one from bookworm main is not enough.
if ! "$HOST_RUSTC" --version 2>/dev/null | grep -q '^rustc 1\.9[6-9]'; then
  missing+=(rustc-web rust-web-src)
fi
if ((${#missing[@]})); then
  mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)
  apt_install "${missing[@]}"
fi
"$HOST_RUSTC" --version | grep -q '^rustc 1\.9[6-9]' || die "need rustc-web >= 1.96 at $HOST_RUSTC"

# A cargo or rustfmt of another toolchain earlier on the PATH is used as it is.
absent=$( { absent_tools; [ -x /usr/bin/clippy-driver ] || echo /usr/bin/clippy-driver rust-web-clippy; } |
          awk '{printf "%s%s (Debian package %s)", (NR > 1 ? ", " : ""), $1, $2}')
[ -z "$absent" ] || die "still missing after the install: $absent"

if [ ! -x "$BINDGEN" ] || ! "$BINDGEN" --version | grep -q "$BINDGEN_VERSION"; then
  log "cargo: installing bindgen-cli $BINDGEN_VERSION into the cache (about 2 minutes)"
  cargo install --quiet --locked bindgen-cli --version "$BINDGEN_VERSION" --root "$UNIMEM_CACHE/bindgen-$BINDGEN_VERSION"
fi
log "host tools ready"
