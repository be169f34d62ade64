#!/usr/bin/env bash
# Checks that kernel/patches/*.patch is a clean `git am` series on the pristine kernel source:
# unpacks the pinned linux-source tarball into a temporary git repository, commits it and applies
# every patch with `git am` (no fuzz, no three-way merge), one commit per patch.
#   scripts/check-patches.sh [--full] [--keep DIR]
# By default only the files the series touches are unpacked (git am reads nothing else), which
# takes seconds instead of minutes; --full unpacks the whole tree. --keep DIR leaves the patched
# repository in DIR (with --full, a tree to `make` or to develop the next patch in).
source "$(dirname "$0")/lib/common.sh"

keep='' full=''
while [ $# -gt 0 ]; do
  case "$1" in
    --keep) keep=${2:?--keep needs a directory}; shift 2;;
    --full) full=1; shift;;
    *) die "usage: $0 [--full] [--keep DIR]";;
  esac
done

shopt -s nullglob
patches=("$UNIMEM_ROOT"/kernel/patches/*.patch)
[ ${#patches[@]} -gt 0 ] || die "no patches in $UNIMEM_ROOT/kernel/patches"

tarball=$("$UNIMEM_ROOT/scripts/fetch-kernel-source.sh")
if [ -n "$keep" ]; then
  [ ! -e "$keep" ] || die "$keep already exists"
  tree=$keep
else
  tree=$(mktemp -d "${TMPDIR:-/tmp}/unimem-check-patches.XXXXXX")
  trap 'rm -rf "$tree"' EXIT
fi
mkdir -p "$tree"

if [ -n "$full" ]; then
  log "unpacking $(basename "$tarball") into $tree"
  tar -xf "$tarball" -C "$tree" --strip-components=1
else
  # The files the series names that exist in the source (the others are files it creates).
  tar -tf "$tarball" > "$tree.all"
  top=$(head -1 "$tree.all" | cut -d/ -f1)
  sed -n 's|^diff --git a/\([^ ]*\) b/.*|'"$top"'/\1|p' "${patches[@]}" | sort -u > "$tree.named"
  members=$tree.members
  grep -Fxf "$tree.named" "$tree.all" > "$members" || true
  rm -f "$tree.all" "$tree.named"
  log "unpacking the $(wc -l < "$members") files the series changes into $tree"
  tar -xf "$tarball" -C "$tree" --strip-components=1 -T "$members"
  rm -f "$members"
fi
g() { git -C "$tree" -c user.name=unimem -c user.email=dev@unimem.invalid -c gc.auto=0 "$@"; }
g init -q
# Debian's top-level .gitignore ignores everything outside debian/: add the tree regardless.
g add -A -f .
g commit -q -m "pristine $KERNEL_PKG $KERNEL_PKG_VERSION"
base=$(g rev-parse HEAD)

for p in "${patches[@]}"; do
  if ! g am -q --no-3way "$p"; then
    g am --abort >/dev/null 2>&1 || true
    die "$(basename "$p") does not apply with git am (see above)"
  fi
  log "ok $(basename "$p"): $(g log -1 --format=%s)"
done
n=$(g rev-list --count "$base..HEAD")
[ "$n" = "${#patches[@]}" ] || die "${#patches[@]} patches made $n commits"
[ -z "$(g status --porcelain)" ] || die "the series left changes outside its commits"
log "all ${#patches[@]} patches apply with git am on $KERNEL_PKG $KERNEL_PKG_VERSION"
