#!/usr/bin/env bash
# Builds the guest kernel (bzImage, or Image for UNIMEM_ARCH=arm64, + Rust support for out-of-tree
# modules) into the cache,
# keyed by a hash of source version, config fragment, patch series and toolchain.
# Prints the kernel build directory. A cached build returns in well under a second.
#
# A new key is seeded, where possible, from the newest earlier build of the same source and
# toolchain: the old patch series is reverted, the new one applied and make rebuilds only
# what changed (minutes instead of a full build). UNIMEM_CLEAN_KERNEL=1 forces a clean build.
# Only the two newest kernel builds are kept.
#
# UNIMEM_DEBUG_KERNEL=1 builds the debug kernel instead (kernel/config/debug/*.config merged on top),
# cached under $UNIMEM_CACHE/kernel-debug: it is seeded only from earlier debug builds and keeps its
# own two newest, so debug and normal builds never evict or seed each other. Both flavours share
# the lock: one kernel build at a time.
source "$(dirname "$0")/lib/common.sh"

kdir=$(kernel_dir)
cache=$(kernel_cache)
if [ -f "$kdir/.unimem-built" ]; then echo "$kdir"; exit 0; fi
# One build at a time: a second caller (another cluster, a helper) waits instead of deleting a
# build in progress.
mkdir -p "$UNIMEM_CACHE/kernel" "$cache"
exec 9>"$UNIMEM_CACHE/kernel/.lock"
flock 9
if [ -f "$kdir/.unimem-built" ]; then echo "$kdir"; exit 0; fi

base_id="$KERNEL_PKG_VERSION $BINDGEN_VERSION $LLVM_SUFFIX $("$HOST_RUSTC" --version)"
tarball=$("$UNIMEM_ROOT/scripts/fetch-kernel-source.sh")

newest_seed() {
  local marker d
  # Newest first (by the marker's time); the cache directory names have no spaces.
  # shellcheck disable=SC2045
  for marker in $(ls -td "$cache"/*/.unimem-built 2>/dev/null); do
    d=$(dirname "$marker")
    [ "$(cat "$d/.unimem-base" 2>/dev/null)" = "$base_id" ] && { echo "$d"; return; }
  done
}

seed_from() {
  local prev=$1 p
  log "seeding $kdir from $prev (incremental build)"
  # Without its marker: a copy that still carried it would pass for a finished build (to other
  # callers, and for good if this one is interrupted) until the copy ends.
  mkdir -p "$kdir"
  tar -C "$prev" --exclude=./.unimem-built -cf - . | tar -C "$kdir" -xf - || return 1
  touch "$kdir"
  local patches=("$kdir"/.unimem-patches/*.patch) i
  # Reverted last to first; an unmatched glob leaves its pattern, which does not exist.
  for ((i = ${#patches[@]} - 1; i >= 0; i--)); do
    p=${patches[i]}
    [ -e "$p" ] || continue
    patch -d "$kdir" -p1 -R --quiet < "$p" || return 1
  done
  rm -rf "$kdir/.unimem-patches"
}

rm -rf "$kdir"
prev=$(newest_seed)
if [ -z "${UNIMEM_CLEAN_KERNEL:-}" ] && [ -n "$prev" ] && seed_from "$prev"; then
  :
else
  rm -rf "$kdir"; mkdir -p "$kdir"
  log "unpacking kernel source into $kdir"
  tar -xf "$tarball" -C "$kdir" --strip-components=1
fi
mkdir -p "$kdir/.unimem-patches"
shopt -s nullglob
for p in "$UNIMEM_ROOT"/kernel/patches/*.patch; do
  log "applying $(basename "$p")"
  patch -d "$kdir" -p1 --quiet --forward < "$p"
  cp "$p" "$kdir/.unimem-patches/"
done
# shellcheck disable=SC2046
kmake() { make -C "$kdir" $(kmake_args) -j"$(( $(nproc) + 1 ))" "$@"; }
kmake -s tinyconfig
mapfile -t fragments < <(kernel_fragments)
"$kdir/scripts/kconfig/merge_config.sh" -m -O "$kdir" "$kdir/.config" "${fragments[@]}" >/dev/null
kmake -s olddefconfig
# Every line of the fragments must have survived olddefconfig, or the kernel is not what we asked for.
missing=0
while IFS= read -r line; do
  case "$line" in ''|'#'*) continue;; esac
  opt=${line%%=*}; val=${line#*=}
  if [ "$val" = n ]; then grep -q "^$opt=" "$kdir/.config" && { echo "config: $opt should be off" >&2; missing=1; }
  else grep -qx "$line" "$kdir/.config" || { echo "config: $line did not take effect" >&2; missing=1; }; fi
done < <(cat "${fragments[@]}")
[ "$missing" = 0 ] || die "kernel config fragment not satisfied (see above)"
kmake -s rustavailable >&2
log "building kernel (a clean build takes 10-15 minutes on 2 cores; log: $kdir/build.log)"
with_heartbeat "kernel build" "$kdir/build.log" kmake "$(kernel_image)" modules ||
  { tail -40 "$kdir/build.log" >&2; die "kernel build failed (log: $kdir/build.log)"; }
echo "$base_id" > "$kdir/.unimem-base"
touch "$kdir/.unimem-built"
log "kernel ready: $kdir"

# Keep the two newest complete builds (by their marker: a seeded copy keeps its source's
# directory mtime, and a build in progress elsewhere has no marker yet).
ls -t "$cache"/*/.unimem-built 2>/dev/null | tail -n +3 | while read -r marker; do
  old=$(dirname "$marker")
  [ "$old" = "$kdir" ] || { log "removing old kernel build $old"; rm -rf "$old"; }
done
echo "$kdir"
