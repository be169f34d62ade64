#!/usr/bin/env bash
# Builds the guest kernel (bzImage + Rust support for out-of-tree modules) into the cache,
# keyed by a hash of source version, config fragment, patch series and toolchain.
# Prints the kernel build directory. A cached build returns in well under a second.
source "$(dirname "$0")/lib/common.sh"

kdir=$(kernel_dir)
if [ -f "$kdir/.unimem-built" ]; then echo "$kdir"; exit 0; fi

tarball=$("$UNIMEM_ROOT/scripts/fetch-kernel-source.sh")
# Built in place (kernel trees may record absolute paths); the marker file says it completed.
rm -rf "$kdir"; mkdir -p "$kdir"
log "unpacking kernel source into $kdir"
tar -xf "$tarball" -C "$kdir" --strip-components=1
shopt -s nullglob
for p in "$UNIMEM_ROOT"/kernel/patches/*.patch; do
  log "applying $(basename "$p")"
  patch -d "$kdir" -p1 --quiet --forward < "$p"
done
# shellcheck disable=SC2046
kmake() { make -C "$kdir" $(kmake_args) -j"$(( $(nproc) + 1 ))" "$@"; }
kmake -s tinyconfig
"$kdir/scripts/kconfig/merge_config.sh" -m -O "$kdir" "$kdir/.config" "$UNIMEM_ROOT"/kernel/config/*.config >/dev/null
kmake -s olddefconfig
# Every line of the fragment must have survived olddefconfig, or the kernel is not what we asked for.
missing=0
while IFS= read -r line; do
  case "$line" in ''|'#'*) continue;; esac
  opt=${line%%=*}; val=${line#*=}
  if [ "$val" = n ]; then grep -q "^$opt=" "$kdir/.config" && { echo "config: $opt should be off" >&2; missing=1; }
  else grep -qx "$line" "$kdir/.config" || { echo "config: $line did not take effect" >&2; missing=1; }; fi
done < <(cat "$UNIMEM_ROOT"/kernel/config/*.config)
[ "$missing" = 0 ] || die "kernel config fragment not satisfied (see above)"
kmake -s rustavailable >&2
log "building kernel (about 15-20 minutes on 2 cores)"
kmake bzImage modules >"$kdir/build.log" 2>&1 || { tail -40 "$kdir/build.log" >&2; die "kernel build failed"; }
touch "$kdir/.unimem-built"
log "kernel ready: $kdir"
echo "$kdir"
