# shellcheck shell=bash
# The kernel modules of an earlier commit, built for this tree's kernel, and some of its user-space
# binaries: for A/B benchmarks (scripts/bench/modules_ab.sh) and for showing that a test fails
# without a fix (scripts/test-against.sh). Needs scripts/lib/common.sh.

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

# ref_bins REF BIN...: prints a directory that holds this tree's user-space build
# (target/release: executables and lib*.so) with the named binaries of commit REF in their place,
# for fixes that were made in a daemon rather than a module. REF's binaries are built once in a
# temporary worktree (cached in $UNIMEM_CACHE/ref-bins/<commit>/, one target directory shared by
# every commit so that dependencies build once); the merged directory is $UNIMEM_BUILD/ref-bins.
ref_bins() {
  local sha dir wt b args=() out=$UNIMEM_BUILD/ref-bins
  sha=$(git -C "$UNIMEM_ROOT" rev-parse --verify -q "$1^{commit}") || die "$1: no such commit"
  shift
  dir=$UNIMEM_CACHE/ref-bins/${sha:0:12}
  for b in "$@"; do [ -x "$dir/$b" ] || args+=(--bin "$b"); done
  if [ ${#args[@]} -gt 0 ]; then
    wt=$(mktemp -d)
    log "building ${args[*]} of $sha in a worktree ($wt)"
    git -C "$UNIMEM_ROOT" worktree add -q --detach "$wt" "$sha"
    mkdir -p "$dir"
    if (cd "$wt" && CARGO_TARGET_DIR=$UNIMEM_CACHE/ref-bins/target cargo build -q --release "${args[@]}") >"$wt.log" 2>&1; then
      for b in "$@"; do cp "$UNIMEM_CACHE/ref-bins/target/release/$b" "$dir/$b.new" && mv "$dir/$b.new" "$dir/$b"; done
    else
      tail -20 "$wt.log" >&2
    fi
    git -C "$UNIMEM_ROOT" worktree remove --force "$wt"
    for b in "$@"; do [ -x "$dir/$b" ] || die "building $b of $sha failed (log: $wt.log)"; done
  fi
  rm -rf "$out"
  mkdir -p "$out"
  find "$UNIMEM_ROOT/target/release" -maxdepth 1 -type f \( -perm -u+x ! -name '*.d' -o -name 'lib*.so' \) -exec cp {} "$out/" \;
  for b in "$@"; do cp "$dir/$b" "$out/$b"; done
  echo "$out"
}
