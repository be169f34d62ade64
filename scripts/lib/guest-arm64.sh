# shellcheck shell=bash
# Where the arm64 guest image's programs come from (UNIMEM_ARCH=arm64 scripts/build-guest.sh):
# Debian bookworm's arm64 packages of the same programs the x86_64 image copies from the host.
# This host cannot run arm64 programs, so nothing here runs one: apt downloads the packages
# through multiarch and its configured sources, dpkg-deb -x unpacks them without maintainer
# scripts into a sysroot, and readelf's NEEDED entries (not ldd) give the libraries.
# Sourced by build-guest.sh, which defines the guest_* interface these functions implement.

# The programs' own packages; apt's dependencies bring the libraries. In bookworm, swapon,
# swapoff and losetup are in mount, not util-linux; libgcc-s1 is for our Rust binaries.
ARM64_ROOTS=(busybox-static fio numactl stress-ng kmod util-linux mount libc6 libgcc-s1)
ARM64_DEBS=$UNIMEM_CACHE/debs-arm64
# The multiarch directories the arm64 dynamic loader searches without an ld.so.cache.
ARM64_LIBDIRS=(/lib/aarch64-linux-gnu /usr/lib/aarch64-linux-gnu /lib /usr/lib)

arm64_sudo() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

# "package version" of every arm64 package the roots need, recursively, at the version apt
# chooses (its candidate). Architecture-independent packages (data, perl modules) hold no arm64
# code and are left out, and so are virtual packages (<name>); alternatives are all kept, which
# costs a few unused downloads but never misses the one a library needs.
arm64_packages() {
  apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks \
      --no-replaces --no-enhances "${ARM64_ROOTS[@]/%/:arm64}" 2>/dev/null |
    grep -E '^[a-z0-9][a-z0-9.+-]*:arm64$' | sort -u |
    xargs -r apt-cache policy |
    awk '/^[^ ].*:arm64:$/ {p = $1; sub(/:arm64:$/, "", p)} /^  Candidate:/ && $2 != "(none)" {print p, $2}'
}
# The roots apt has no arm64 candidate for (all of them before the lists include arm64).
arm64_missing_roots() {
  local r
  for r in "${ARM64_ROOTS[@]}"; do grep -q "^$r " <<<"$ARM64_PKGS" || echo "$r"; done
}

guest_cache() { echo "$UNIMEM_CACHE/guest-arm64"; }

guest_resolve() {
  [ -x /bin/busybox ] || die "the host's busybox (busybox-static) is missing (run scripts/setup-host.sh)"
  command -v readelf >/dev/null || die "readelf is missing (binutils; run scripts/setup-host.sh)"
  dpkg_add_arm64
  ARM64_PKGS=$(arm64_packages) || true
  if [ -n "$(arm64_missing_roots)" ]; then
    log "apt: updating the package lists for arm64"
    arm64_sudo apt-get update -qq
    ARM64_PKGS=$(arm64_packages) || true
  fi
  [ -z "$(arm64_missing_roots)" ] || die "apt has no arm64 package of: $(arm64_missing_roots | tr '\n' ' ')"
}
guest_key_inputs() {
  echo arm64
  echo "$ARM64_PKGS"
  arm64_applet_paths
  cat "$UNIMEM_ROOT/scripts/lib/guest-arm64.sh"
}

# Downloads the packages missing from ARM64_DEBS (kept for the next build) and unpacks all of
# them into $1. Lists older than the archive name versions it no longer has: after a refresh
# of the lists the whole build starts again, since the key holds the versions.
guest_prepare() {
  local p v missing=() f
  SYSROOT=$1
  mkdir -p "$ARM64_DEBS" "$SYSROOT"
  while read -r p v; do
    [ -f "$ARM64_DEBS/$(arm64_deb "$p" "$v")" ] || missing+=("$p:arm64=$v")
  done <<<"$ARM64_PKGS"
  if ((${#missing[@]})); then
    log "apt: downloading ${#missing[@]} arm64 packages into $ARM64_DEBS"
    rm -rf "$ARM64_DEBS/partial"; mkdir -p "$ARM64_DEBS/partial"
    if ! (cd "$ARM64_DEBS/partial" && apt-get download -q "${missing[@]}" >../download.log 2>&1); then
      [ -z "${UNIMEM_GUEST_APT_REFRESHED:-}" ] || { tail -5 "$ARM64_DEBS/download.log" >&2; die "apt could not download the arm64 packages (log: $ARM64_DEBS/download.log)"; }
      log "apt: download failed, refreshing the package lists and starting again"
      arm64_sudo apt-get update -qq
      rm -rf "${SYSROOT%/*}"   # the image directory of a key that is no more
      UNIMEM_GUEST_APT_REFRESHED=1 exec "$UNIMEM_ROOT/scripts/build-guest.sh"
    fi
    mv "$ARM64_DEBS"/partial/*.deb "$ARM64_DEBS/"
  fi
  while read -r p v; do
    f=$ARM64_DEBS/$(arm64_deb "$p" "$v")
    [ -f "$f" ] || die "apt did not download $f"
    dpkg-deb -x "$f" "$SYSROOT"
  done <<<"$ARM64_PKGS"
}
# apt-get download's file name for a package version (an epoch's colon is written %3a).
arm64_deb() { echo "${1}_${2//:/%3a}_arm64.deb"; }

# The file in the sysroot that image path $1 is, following symlinks inside the sysroot (an
# absolute link target must not reach this host's own /lib/aarch64-linux-gnu).
guest_file() {
  local p=$1 t n=0
  while [ -L "$SYSROOT$p" ]; do
    t=$(readlink "$SYSROOT$p")
    case $t in /*) p=$t ;; *) p=$(dirname "$p")/$t ;; esac
    ((++n < 40)) || die "symlink loop at $1 in $SYSROOT"
  done
  echo "$SYSROOT$p"
}

guest_busybox() { echo /bin/busybox; }

# busybox --list-full cannot run here. The names come from the arm64 binary's own applet table
# (NUL-separated, "[" "[[" first, an empty string last; awk reads to the end so that tr does not
# die of SIGPIPE); where each goes, from the host's busybox-static, which Debian builds with the
# same configuration (an unknown one goes to bin/).
guest_applets() {
  local name path names
  local -A path_of=()
  while read -r name path; do path_of[$name]=$path; done < <(arm64_applet_paths)
  names=$(tr '\0' '\n' <"$(guest_file /bin/busybox)" |
    awk 'done {next} on && /^$/ {done = 1; next} on {print; next}
         /^\[$/ {getline n; if (n == "[[") {on = 1; print "["; print n}}')
  [ -n "$names" ] || die "no applet table found in the arm64 busybox"
  while read -r name; do echo "${path_of[$name]:-bin/$name}"; done <<<"$names"
}
arm64_applet_paths() {
  /bin/busybox --list-full | awk -F/ '{print $NF, $0}'
}

guest_binary() {
  local d
  for d in /usr/bin /bin /usr/sbin /sbin; do
    if [ -e "$SYSROOT$d/$1" ] || [ -L "$SYSROOT$d/$1" ]; then
      readelf -h "$(guest_file "$d/$1")" 2>/dev/null | grep -q 'Machine:.*AArch64' ||
        die "$d/$1 of the arm64 packages is not an aarch64 program"
      echo "$d/$1"; return
    fi
  done
  die "no $1 in the arm64 packages (${ARM64_ROOTS[*]})"
}

# Image paths of the shared objects image file $1 needs, recursively, its program interpreter
# first. Each object is searched where the loader will: its RUNPATH (ceph's private
# libraries), then the multiarch directories.
guest_libs() {
  local queue=("$1") obj dyn lib dir where
  local -A seen=()
  readelf -lW "$(guest_file "$1")" | sed -n 's/.*Requesting program interpreter: \(.*\)\]$/\1/p'
  while ((${#queue[@]})); do
    obj=${queue[0]}; queue=("${queue[@]:1}")
    dyn=$(readelf -dW "$(guest_file "$obj")")
    for lib in $(sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p' <<<"$dyn"); do
      [ -z "${seen[$lib]:-}" ] || continue
      where=""
      for dir in $(sed -n 's/.*(R\(UN\)\{0,1\}PATH).*\[\(.*\)\]$/\2/p' <<<"$dyn" | tr : ' ') "${ARM64_LIBDIRS[@]}"; do
        dir=${dir//\$ORIGIN/$(dirname "$obj")}
        if [ -e "$SYSROOT$dir/$lib" ] || [ -L "$SYSROOT$dir/$lib" ]; then where=$dir/$lib; break; fi
      done
      [ -n "$where" ] || die "no arm64 $lib (needed by $obj) in the packages"
      seen[$lib]=1
      echo "$where"
      queue+=("$where")
    done
  done
}

# shellcheck disable=SC2034 # read by build-guest.sh
guest_libgcc=/lib/aarch64-linux-gnu/libgcc_s.so.1
