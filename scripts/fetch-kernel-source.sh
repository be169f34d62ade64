#!/usr/bin/env bash
# Fetches the pinned linux-source package WITHOUT touching the system's apt configuration, checks
# it against the SHA-256 recorded in scripts/lib/common.sh and unpacks its tarball into the cache.
# Prints the path of the source tarball. Sources, in order, the first that has it wins:
#   UNIMEM_KERNEL_TARBALL  a copy of linux-source-7.3.tar.xz of this exact version (e.g. from
#                          another machine's ~/.cache/unimem/src/), checked by its own SHA-256
#   UNIMEM_KERNEL_DEB      a copy of the exact .deb (linux-source-7.3_<version>_all.deb)
#   apt                    KERNEL_SUITE (trixie-backports) from the Debian mirror the machine's apt
#                          sources name, through a private sources list and state dir
#   the pool               the .deb's pool path under the Debian URIs of the apt sources and under
#                          UNIMEM_KERNEL_MIRRORS (space-separated base URIs given by the operator,
#                          e.g. a local mirror or an archive snapshot that still has this version:
#                          a backport leaves the archive when a newer one arrives)
source "$(dirname "$0")/lib/common.sh"

dest="$UNIMEM_CACHE/src/$KERNEL_PKG_VERSION"
tarball="$dest/usr/src/$KERNEL_PKG.tar.xz"
case ${1:-} in -h|--help) sed -n '2,/^source/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0;; esac
if [ -f "$tarball" ]; then echo "$tarball"; exit 0; fi

deb_name=${KERNEL_PKG}_${KERNEL_PKG_VERSION}_all.deb
# Debian's pool path of a package built from source package "linux".
pool_path=pool/main/l/linux/$deb_name
aptdir="$UNIMEM_CACHE/apt-$KERNEL_SUITE"
mkdir -p "$aptdir/lists/partial" "$aptdir/archives/partial"

sha_ok() { echo "$2  $1" | sha256sum --check --status; }

# Debian mirror URIs the machine's apt is configured with (never hard-coded).
debian_uris() {
  { cat /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '/^[[:space:]]*URIs:/ {for (i = 2; i <= NF; i++) print $i}'
    cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
      awk '/^[[:space:]]*deb[[:space:]]/ {for (i = 2; i <= NF; i++) if ($i !~ /^\[/ && $i !~ /\]$/) {print $i; break}}'
  } | grep -v -- '-security' | grep -i debian | awk '!seen[$0]++' || true
}

# Prints the path of the .deb downloaded through apt from KERNEL_SUITE, or fails.
from_apt() {
  local uri; uri=$(debian_uris | head -1)
  [ -n "$uri" ] || { log "apt: no Debian mirror URI found in /etc/apt sources"; return 1; }
  cat > "$aptdir/sources.list" <<SRC
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $uri $KERNEL_SUITE main
SRC
  local aptopts=(-o "Dir::Etc::SourceList=$aptdir/sources.list" -o "Dir::Etc::SourceParts=/dev/null"
           -o "Dir::State::Lists=$aptdir/lists" -o "Dir::Cache::Archives=$aptdir/archives"
           -o "Dir::Cache::pkgcache=" -o "Dir::Cache::srcpkgcache=" -o "APT::Get::List-Cleanup=0"
           -o "APT::Sandbox::User=root")
  log "fetching $KERNEL_PKG=$KERNEL_PKG_VERSION from $KERNEL_SUITE (private apt state in $aptdir)"
  apt-get "${aptopts[@]}" update -qq >&2 || return 1
  ( cd "$aptdir/archives" && apt-get "${aptopts[@]}" download "$KERNEL_PKG=$KERNEL_PKG_VERSION" >&2 ) || return 1
  ls "$aptdir/archives/$deb_name" 2>/dev/null || ls "$aptdir"/archives/"${KERNEL_PKG}"_*.deb
}

# Prints the path of the .deb downloaded from the pool under the first base URI that has it.
from_pool() {
  local base out="$aptdir/archives/$deb_name"
  # shellcheck disable=SC2086 # a list of URIs
  for base in $(debian_uris) ${UNIMEM_KERNEL_MIRRORS:-}; do
    log "fetching $pool_path under $base"
    if /usr/lib/apt/apt-helper -o APT::Sandbox::User=root download-file \
         "${base%/}/$pool_path" "$out" "SHA256:$KERNEL_DEB_SHA256" >&2; then
      echo "$out"; return 0
    fi
  done
  return 1
}

if [ -n "${UNIMEM_KERNEL_TARBALL:-}" ]; then
  sha_ok "$UNIMEM_KERNEL_TARBALL" "$KERNEL_TARBALL_SHA256" ||
    die "UNIMEM_KERNEL_TARBALL=$UNIMEM_KERNEL_TARBALL is not $KERNEL_PKG $KERNEL_PKG_VERSION (SHA-256 differs from $KERNEL_TARBALL_SHA256)"
  mkdir -p "$(dirname "$tarball")"
  cp "$UNIMEM_KERNEL_TARBALL" "$tarball.tmp" && mv "$tarball.tmp" "$tarball"
  echo "$tarball"; exit 0
fi

deb=""
if [ -n "${UNIMEM_KERNEL_DEB:-}" ]; then
  sha_ok "$UNIMEM_KERNEL_DEB" "$KERNEL_DEB_SHA256" ||
    die "UNIMEM_KERNEL_DEB=$UNIMEM_KERNEL_DEB is not $deb_name (SHA-256 differs from $KERNEL_DEB_SHA256)"
  deb=$UNIMEM_KERNEL_DEB
elif deb=$(from_apt) && sha_ok "$deb" "$KERNEL_DEB_SHA256"; then
  :
else
  [ -z "$deb" ] || { log "apt gave $deb, whose SHA-256 is not $KERNEL_DEB_SHA256"; rm -f "$deb"; }
  deb=$(from_pool) ||
    die "$deb_name (SHA-256 $KERNEL_DEB_SHA256) found nowhere: $KERNEL_SUITE no longer has it? Set UNIMEM_KERNEL_MIRRORS to a mirror or archive snapshot that does, or UNIMEM_KERNEL_DEB / UNIMEM_KERNEL_TARBALL to a copy ($0 --help)"
fi
# Unpacked beside the cache entry and moved into place, so an interrupted run leaves no tarball
# that the fast path above would take.
rm -rf "$dest.tmp"; mkdir -p "$dest.tmp"
dpkg-deb -x "$deb" "$dest.tmp"
[ "$deb" = "${UNIMEM_KERNEL_DEB:-}" ] || rm -f "$deb"
[ -f "$dest.tmp/usr/src/$KERNEL_PKG.tar.xz" ] || die "$deb_name did not contain usr/src/$KERNEL_PKG.tar.xz"
sha_ok "$dest.tmp/usr/src/$KERNEL_PKG.tar.xz" "$KERNEL_TARBALL_SHA256" ||
  die "the tarball in $deb_name does not have the recorded SHA-256 $KERNEL_TARBALL_SHA256"
rm -rf "$dest"; mv "$dest.tmp" "$dest"
echo "$tarball"
