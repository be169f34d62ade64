#!/usr/bin/env bash
# Fetches the pinned linux-source package from trixie-backports WITHOUT touching the system's apt
# configuration (a private sources list and state dir under the cache), and unpacks its tarball.
# Prints the path of the source tarball.
source "$(dirname "$0")/lib/common.sh"

dest="$UNIMEM_CACHE/src/$KERNEL_PKG_VERSION"
tarball="$dest/usr/src/$KERNEL_PKG.tar.xz"
if [ -f "$tarball" ]; then echo "$tarball"; exit 0; fi

# Reuse the Debian mirror URI the machine is already configured with (never hard-coded).
uri=$( { cat /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '/^[[:space:]]*URIs:/ {print $2}';
         cat /etc/apt/sources.list 2>/dev/null | awk '/^[[:space:]]*deb[[:space:]]/ {print $2}'; } |
       grep -v -- '-security' | grep -i debian | head -1 || true)
[ -n "$uri" ] || die "no Debian mirror URI found in /etc/apt sources"

aptdir="$UNIMEM_CACHE/apt-$KERNEL_SUITE"
mkdir -p "$aptdir/lists/partial" "$aptdir/archives/partial" "$dest"
cat > "$aptdir/sources.list" <<SRC
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $uri $KERNEL_SUITE main
SRC
aptopts=(-o "Dir::Etc::SourceList=$aptdir/sources.list" -o "Dir::Etc::SourceParts=/dev/null"
         -o "Dir::State::Lists=$aptdir/lists" -o "Dir::Cache::Archives=$aptdir/archives"
         -o "Dir::Cache::pkgcache=" -o "Dir::Cache::srcpkgcache=" -o "APT::Get::List-Cleanup=0"
         -o "APT::Sandbox::User=root")
log "fetching $KERNEL_PKG=$KERNEL_PKG_VERSION from $KERNEL_SUITE (private apt state in $aptdir)"
apt-get "${aptopts[@]}" update -qq >&2
( cd "$aptdir/archives" && apt-get "${aptopts[@]}" download "$KERNEL_PKG=$KERNEL_PKG_VERSION" >&2 )
deb=$(ls "$aptdir"/archives/${KERNEL_PKG}_*.deb | head -1)
dpkg-deb -x "$deb" "$dest"
rm -f "$deb"
[ -f "$tarball" ] || die "package did not contain $tarball"
echo "$tarball"
