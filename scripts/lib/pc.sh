# shellcheck shell=bash
# Shared by the pkg-config writers of our C libraries (userspace/shmem/shmem-pc.sh; gsas-pc.sh
# could use it too), which source it after setting `here` to their own directory.
# Sets root, built (<target>/release, CARGO_TARGET_DIR honoured) and version.
root=$(cd "${here:?set here to the directory of the sourcing script}/../.." && pwd)
target=${CARGO_TARGET_DIR:-$root/target}
case $target in /*) ;; *) target=$root/$target ;; esac
# shellcheck disable=SC2034 # used by the scripts that source this file
built=$target/release
version=$(sed -n 's/^version = "\(.*\)"/\1/p' "$root/Cargo.toml" | head -1)

# write_pc FILE PREFIX LIBDIR INCLUDEDIR NAME DESCRIPTION LIBS [LIBS_PRIVATE]: writes a .pc file
# and prints its path.
write_pc() {
  mkdir -p "$(dirname "$1")"
  {
    printf 'prefix=%s\nlibdir=%s\nincludedir=%s\n\n' "$2" "$3" "$4"
    printf 'Name: %s\nDescription: %s\nVersion: %s\n' "$5" "$6" "${version:-0.1.0}"
    # shellcheck disable=SC2016 # pkg-config variables, expanded by pkg-config
    printf 'Cflags: -I${includedir}\nLibs: -L${libdir} %s\n' "$7"
    [ -z "${8:-}" ] || printf 'Libs.private: %s\n' "$8"
  } >"$1"
  echo "$1"
}
