# shellcheck shell=bash
# pkg-config files and installs of our C libraries (libgsas, libdht), sourced by
# gsas/gsas-pc.sh and dht/dht-pc.sh:
#   pc_main LIB DESCRIPTION HEADER... -- [ARGS]
# writes <target>/release/pkgconfig/LIB.pc for the build tree (Cflags: each HEADER's directory),
# or with ARGS `--install PREFIX` installs libLIB.so, libLIB.a, the HEADERs and LIB.pc under
# PREFIX (lib/, include/, lib/pkgconfig/; LIBDIR and INCLUDEDIR override, DESTDIR stages the
# files under it, the .pc naming PREFIX). CARGO_TARGET_DIR is honoured. Prints the .pc path.
set -euo pipefail
pc_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
pc_target=${CARGO_TARGET_DIR:-$pc_root/target}
case $pc_target in /*) ;; *) pc_target=$pc_root/$pc_target ;; esac
pc_built=$pc_target/release
pc_version=$(sed -n 's/^version = "\(.*\)"/\1/p' "$pc_root/Cargo.toml" | head -1)

pc_write() { # FILE PREFIX LIBDIR INCLUDEDIR CFLAGS LIB DESCRIPTION
  mkdir -p "$(dirname "$1")"
  cat >"$1" <<PC
prefix=$2
libdir=$3
includedir=$4

Name: $6
Description: $7
Version: ${pc_version:-0.1.0}
Cflags: $5
Libs: -L\${libdir} -l$6
Libs.private: -lgcc_s -lutil -lrt -lpthread -lm -ldl -lc
PC
  echo "$1"
}

# The calling script's header comment.
pc_usage() { sed -n '2,/^[^#]/p' "$0" | sed '$d; s/^# \{0,1\}//'; }

pc_main() {
  local lib=$1 desc=$2 headers=() cflags=() f d
  shift 2
  while [ "$1" != -- ]; do headers+=("$1"); shift; done
  shift
  case ${1:-} in
    -h|--help) pc_usage ;;
    --install)
      local prefix=${2:?--install needs a PREFIX} libdir includedir dest
      for f in "lib$lib.so" "lib$lib.a"; do
        [ -f "$pc_built/$f" ] || { echo "$lib-pc.sh: $pc_built/$f missing: run cargo build --release -p $lib" >&2; exit 1; }
      done
      libdir=${LIBDIR:-$prefix/lib} includedir=${INCLUDEDIR:-$prefix/include} dest=${DESTDIR:-}
      install -D -m 0755 "$pc_built/lib$lib.so" "$dest$libdir/lib$lib.so"
      install -D -m 0644 "$pc_built/lib$lib.a" "$dest$libdir/lib$lib.a"
      for f in "${headers[@]}"; do install -D -m 0644 "$f" "$dest$includedir/$(basename "$f")"; done
      # Relative to ${prefix} where they are under it, for pkg-config's --define-prefix.
      # shellcheck disable=SC2016 # pkg-config variables, expanded by pkg-config
      pc_write "$dest$libdir/pkgconfig/$lib.pc" "$prefix" "${libdir/#"$prefix"/\${prefix\}}" \
        "${includedir/#"$prefix"/\${prefix\}}" '-I${includedir}' "$lib" "$desc"
      ;;
    "")
      for f in "${headers[@]}"; do
        d=$(cd "$(dirname "$f")" && pwd)
        [[ " ${cflags[*]} " == *" -I$d "* ]] || cflags+=("-I$d")
      done
      d=$(cd "$(dirname "${headers[0]}")" && pwd)
      pc_write "$pc_built/pkgconfig/$lib.pc" "$pc_root" "$pc_built" "$d" "${cflags[*]}" "$lib" "$desc"
      ;;
    *) pc_usage >&2; exit 2 ;;
  esac
}
