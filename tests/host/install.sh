#!/usr/bin/env bash
# `make install` as a package build or an operator runs it, on what `make` built (no cluster):
# the staged tree holds every piece, the units pass `systemd-analyze verify` and are hardened,
# the modules' dependencies resolve against the kernel's symbols, libgsas links through its
# pkg-config file, the logrotate file parses, the udev rule opens /dev/unimem_mailbox (only) to
# the group unimem that sysusers.d creates, `make uninstall` removes it all; without root and
# without DESTDIR, and with a piece not built, it refuses and writes nothing. One PASS/FAIL line
# per check (scripts/test.sh counts them); exits 1 if any failed.
source "$(dirname "$0")/../../scripts/lib/common.sh"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
failed=0
pass() { echo "PASS install: $1"; }
fail() { echo "FAIL install: $1"; failed=$((failed + 1)); }
# check WHAT CMD...: passes when CMD succeeds; its output is shown when it fails.
check() {
  local what=$1 out; shift
  if out=$("$@" 2>&1); then pass "$what"; else fail "$what"; printf '%s\n' "$out" | tail -20; fi
}
# quiet WHAT CMD...: passes when CMD succeeds and prints nothing (systemd-analyze verify and
# logrotate --debug warn and still exit 0).
quiet() {
  local what=$1 out; shift
  out=$("$@" 2>&1) && [ -z "$out" ] && pass "$what" || { fail "$what"; printf '%s\n' "$out" | tail -20; }
}

d=$tmp/root
check "make install DESTDIR" make -s -C "$UNIMEM_ROOT" install DESTDIR="$d"
krel=$(ls "$d/lib/modules" 2>/dev/null | head -1)
local_files=(sbin/kram-daemon sbin/gsasd sbin/famd share/man/man8/famd.8 lib/systemd/system/famd.service bin/unimem-gas bin/unimem-mbox bin/unimem-gsas
  bin/unimem-memtest bin/unimem-sl
  lib/libgsas.so lib/libgsas.a lib/pkgconfig/gsas.pc include/gsas.h
  bin/unimem-dht lib/libdht.so lib/libdht.a lib/pkgconfig/dht.pc include/dht.h share/man/man1/unimem-dht.1
  bin/oshrun bin/oshcc bin/oshc++ lib/libshmem.so lib/pkgconfig/shmem.pc include/shmem.h include/shmem/p2p15.h include/shmem/teams.h share/man/man1/oshrun.1
  lib/systemd/system/kram-daemon.service lib/systemd/system/gsasd.service lib/tmpfiles.d/gsasd.conf
  lib/udev/rules.d/60-unimem.rules lib/sysusers.d/unimem.conf
  share/man/man8/kram-daemon.8 share/man/man8/gsasd.8 share/man/man1/unimem-gsas.1
  share/man/man1/unimem-gsas-fork.1 share/bash-completion/completions/kram-daemon
  share/zsh/vendor-completions/_unimem-gas share/fish/vendor_completions.d/unimem-sl.fish
  share/doc/unimem/README.md share/doc/unimem/KRAM-DAEMON.md share/doc/unimem/COPYING)
absent=()
for f in "${local_files[@]}"; do [ -f "$d/usr/local/$f" ] || absent+=("usr/local/$f"); done
for f in etc/default/kram-daemon etc/default/gsasd etc/default/famd etc/unimem/fam.conf.example etc/logrotate.d/kram-daemon etc/unimem/fork.policy.example \
         lib/modules/"$krel"/extra/unimem_{eusrvmem,mailbox,kram,numa,gsas}.ko; do
  [ -f "$d/$f" ] || absent+=("$f")
done
check "tree complete${absent:+ (missing: ${absent[*]})}" test ${#absent[@]} = 0
# Product crates without test rigs: no binary of tests/rigs is installed, nor a man page of a
# rig or of a subcommand that moved there.
leaked=()
for f in $(sed -n '/^\[\[bin\]\]/{n;s|^name = "\(.*\)"$|bin/\1|p}' "$UNIMEM_ROOT/tests/rigs/Cargo.toml") \
         share/man/man1/unimem-mbox-flood.1 share/man/man1/unimem-gas-scribble.1 \
         share/man/man1/unimem-gsas-{check,check-fork,bench,throughput}.1 \
         share/man/man1/unimem-dht-{check,check-final,denied,hold,bench}.1 \
         share/man/man1/unimem-{numatest,numabench}.1; do
  [ ! -e "$d/usr/local/$f" ] || leaked+=("usr/local/$f")
done
check "no test rig installed${leaked:+ (found: ${leaked[*]})}" test ${#leaked[@]} = 0
check "nothing outside /usr/local, /etc, /lib/modules" \
  test "$(cd "$d" && echo ./* lib/* usr/*)" = "./etc ./lib ./usr lib/modules usr/local"

units=("$d"/usr/local/lib/systemd/system/*.service)
# The units name /usr/local/sbin/...: verified with the staged binaries there (a private mount
# namespace) and the staged man pages for Documentation=, against the host's systemd.
verify() {
  if unshare -m --propagation private true 2>/dev/null; then
    MANPATH=$d/usr/local/share/man unshare -m --propagation private sh -c \
      'mount --bind "$1/usr/local/sbin" /usr/local/sbin && shift && systemd-analyze verify "$@"' sh "$d" "${units[@]}"
  else
    echo "(no mount namespace here: units verified with ExecStart= pointing into the staged tree)"
    mkdir -p "$tmp/units"
    for u in "${units[@]}"; do sed "s|=/usr/local/sbin/|=$d/usr/local/sbin/|" "$u" >"$tmp/units/${u##*/}"; done
    MANPATH=$d/usr/local/share/man systemd-analyze verify "$tmp"/units/*.service
  fi
}
quiet "systemd-analyze verify ${units[*]##*/}" verify
for u in "${units[@]}"; do
  keys=()
  for k in NoNewPrivileges=yes ProtectSystem= CapabilityBoundingSet= DevicePolicy=closed DeviceAllow= EnvironmentFile=-/etc/default/; do
    grep -q "^$k" "$u" || keys+=("$k")
  done
  check "${u##*/} hardened${keys:+ (lacks ${keys[*]})}" test ${#keys[@]} = 0
done

kdir=$("$UNIMEM_ROOT/scripts/build-kernel.sh")
check "depmod resolves every module symbol against the kernel's" \
  quiet "depmod -e" depmod -b "$d" -e -F "$kdir/System.map" "$krel"
check "modules.dep: unimem_mailbox needs unimem_eusrvmem" \
  grep -q '^extra/unimem_mailbox.ko:.*extra/unimem_eusrvmem.ko' "$d/lib/modules/$krel/modules.dep"
for m in "$d/lib/modules/$krel"/extra/*.ko; do
  check "${m##*/} license GPL v2" test "$(modinfo -F license "$m")" = "GPL v2"
done

export PKG_CONFIG_SYSROOT_DIR=$d PKG_CONFIG_PATH=$d/usr/local/lib/pkgconfig
check "gsas.pc validates" pkg-config --validate gsas
check "hello.c builds and links against the staged libgsas" sh -c \
  'cc -o "$1/hello" "$2" $(pkg-config --cflags --libs gsas)' sh "$tmp" "$UNIMEM_ROOT/userspace/gsas/examples/hello.c"
check "dht.pc validates" pkg-config --validate dht
check "dht_hello.c builds and links against the staged libdht" sh -c \
  'cc -o "$1/dht-hello" "$2" $(pkg-config --cflags --libs dht)' sh "$tmp" "$UNIMEM_ROOT/userspace/dht/examples/dht_hello.c"
unset PKG_CONFIG_SYSROOT_DIR PKG_CONFIG_PATH
# --debug only reads the file (and always talks); a bad file gets "error:" lines.
check "logrotate file parses" sh -c \
  '! logrotate --debug --state "$1" "$2" 2>&1 | grep -i "error"' sh "$tmp/logrotate.state" "$d/etc/logrotate.d/kram-daemon"
quiet "tmpfiles.d/gsasd.conf creates /var/log/gsasd" sh -c \
  'systemd-tmpfiles --root="$1" --create "$2" && test -d "$1/var/log/gsasd"' sh "$tmp/tmpfiles-root" "$d/usr/local/lib/tmpfiles.d/gsasd.conf"
check "sysusers.d/unimem.conf creates group unimem" sh -c \
  'mkdir -p "$1/etc" && systemd-sysusers --root="$1" "$2" && grep -q "^unimem:x:" "$1/etc/group"' sh "$tmp/sysusers-root" "$d/usr/local/lib/sysusers.d/unimem.conf"
rules=$d/usr/local/lib/udev/rules.d/60-unimem.rules
check "udev rule: /dev/unimem_mailbox 0660 group unimem" \
  grep -qx 'SUBSYSTEM=="misc", KERNEL=="unimem_mailbox", GROUP="unimem", MODE="0660"' "$rules"
check "udev rule: /dev/eusrvmem and /dev/unimem_gsas stay root's" sh -c '! grep -v "^#" "$1" | grep -qE "eusrvmem|unimem_gsas"' sh "$rules"
if udevadm verify --help >/dev/null 2>&1; then
  quiet "udevadm verify 60-unimem.rules" udevadm verify --no-style "$rules"
fi
check "gsasd(8) and /etc/default/gsasd tell of --policy" sh -c \
  'MANWIDTH=80 man -l "$1" 2>/dev/null | grep -q -- "--policy <FILE>" && grep -q -- "--policy" "$2"' sh "$d/usr/local/share/man/man8/gsasd.8" "$d/etc/default/gsasd"
check "fork.policy.example: every rule commented out" sh -c '! grep -qE "^[[:space:]]*(allow|deny)-" "$1"' sh "$d/etc/unimem/fork.policy.example"
for p in "$d"/usr/local/share/man/man8/*.8 "$d"/usr/local/share/man/man1/unimem-gsas.1; do
  quiet "man page ${p##*/} renders without warnings" sh -c 'MANWIDTH=80 man --warnings -l "$1" >/dev/null' sh "$p"
done
for c in "$d"/usr/local/share/bash-completion/completions/*; do
  check "bash completion ${c##*/} parses" bash -n "$c"
done

check "PREFIX=/usr: units and gsas.pc name /usr" sh -c '
  make -s -C "$1" install DESTDIR="$2" PREFIX=/usr >/dev/null 2>&1 &&
  grep -qx "ExecStart=/usr/sbin/kram-daemon \$KRAM_DAEMON_ARGS" "$2/usr/lib/systemd/system/kram-daemon.service" &&
  grep -qx "prefix=/usr" "$2/usr/lib/pkgconfig/gsas.pc"' sh "$UNIMEM_ROOT" "$tmp/usr"

check "make uninstall removes every file it installed" sh -c '
  make -s -C "$1" uninstall DESTDIR="$2" PREFIX=/usr >/dev/null 2>&1 && test -z "$(find "$2" -type f)"' sh "$UNIMEM_ROOT" "$tmp/usr"

echo "# edited by the operator" >>"$d/etc/default/kram-daemon"
check "an edited /etc/default file is kept, the shipped one put beside it" sh -c '
  make -s -C "$1" install DESTDIR="$2" >/dev/null 2>&1 && grep -q "edited by the operator" "$2/etc/default/kram-daemon" &&
  cmp -s "$1/dist/default/kram-daemon" "$2/etc/default/kram-daemon.dist"' sh "$UNIMEM_ROOT" "$d"

refuses() { # WHAT EXPECTED-MESSAGE DIR CMD...: CMD fails, says EXPECTED-MESSAGE and leaves DIR empty
  local what=$1 msg=$2 dir=$3 out; shift 3
  if out=$("$@" 2>&1); then fail "$what (it succeeded)"
  elif ! grep -q -- "$msg" <<<"$out"; then fail "$what (no '$msg' in: $out)"
  elif [ -n "$(ls -A "$dir" 2>/dev/null)" ]; then fail "$what (it wrote into $dir)"
  else pass "$what"; fi
}
mkdir -p "$tmp/half"
refuses "a piece not built: refused, nothing written" "run make first" "$tmp/half" \
  env CARGO_TARGET_DIR="$tmp/no-target" DESTDIR="$tmp/half" "$UNIMEM_ROOT/scripts/install.sh"
if [ "$(id -u)" = 0 ]; then
  # As nobody, from a copy it can read (the checkout may be in root's home).
  pub=$(mktemp -d); chmod 755 "$pub"; mkdir -p "$pub/scripts/lib"
  cp "$UNIMEM_ROOT/scripts/install.sh" "$pub/scripts/"; cp "$UNIMEM_ROOT/scripts/lib/common.sh" "$pub/scripts/lib/"
  refuses "not root, no DESTDIR: refused" "run it as root" "$tmp/half" \
    setpriv --reuid=65534 --regid=65534 --clear-groups env HOME=/ "$pub/scripts/install.sh"
  rm -rf "$pub"
else
  refuses "not root, no DESTDIR: refused" "run it as root" "$tmp/half" "$UNIMEM_ROOT/scripts/install.sh"
fi
[ "$failed" = 0 ]
