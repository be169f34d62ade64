# shellcheck shell=bash
# The kernel modules of an earlier commit, built for this tree's kernel: for A/B benchmarks
# (scripts/bench/modules_ab.sh) and for showing that a test fails without a fix
# (scripts/test-against.sh). Needs scripts/lib/common.sh.

# ref_modules REF: prints the directory that holds every unimem_*.ko of commit REF built for this
# tree's kernel, building them once in a temporary git worktree (cached in
# $UNIMEM_CACHE/ref-modules/<commit>-<kernel key>, keyed by both).
ref_modules() {
  local sha kdir dir wt
  sha=$(git -C "$UNIMEM_ROOT" rev-parse --verify -q "$1^{commit}") || die "$1: no such commit"
  kdir=$(kernel_dir)
  [ -f "$kdir/Module.symvers" ] || die "no kernel build at $kdir: run 'make' first"
  dir=$UNIMEM_CACHE/ref-modules/${sha:0:12}-$(basename "$kdir")
  if [ ! -f "$dir/.complete" ]; then
    wt=$(mktemp -d)
    log "building $1's modules in a worktree ($wt) for $kdir"
    git -C "$UNIMEM_ROOT" worktree add -q --detach "$wt" "$sha"
    if make -C "$wt" modules KDIR="$kdir" >"$wt.log" 2>&1; then
      rm -rf "$dir"
      mkdir -p "$dir"
      find "$wt/kernel" -name 'unimem_*.ko' -exec cp {} "$dir/" \;
      touch "$dir/.complete"
    else
      tail -20 "$wt.log" >&2
    fi
    git -C "$UNIMEM_ROOT" worktree remove --force "$wt"
    [ -f "$dir/.complete" ] || die "building $1's modules failed (log: $wt.log)"
  fi
  echo "$dir"
}
