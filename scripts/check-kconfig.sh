#!/usr/bin/env bash
# Reads the modules' Kconfig files (kernel/*/Kconfig) the way the kernel's own build would, for an
# out-of-tree build that kbuild does not configure: every `config UNIMEM_X` must be one the
# Makefile builds (UNIMEM_CONFIG), and every symbol it `depends on` must be set (y or m) in the
# kernel's .config, or be another of ours. So a kernel without what a module needs fails here,
# with the module and the symbol named, instead of at load time, and the files cannot drift from
# the build unnoticed.
#   scripts/check-kconfig.sh KDIR "CONFIG_UNIMEM_A=m CONFIG_UNIMEM_B=m ..."
set -euo pipefail
kdir=${1:?usage: scripts/check-kconfig.sh KDIR UNIMEM_CONFIG}
ours=${2:?usage: scripts/check-kconfig.sh KDIR UNIMEM_CONFIG}
root=$(cd "$(dirname "$0")/.." && pwd)
config=$kdir/.config
[ -f "$config" ] || { echo "check-kconfig: no $config (build the kernel first: scripts/build-kernel.sh)" >&2; exit 1; }
built=$(tr ' ' '\n' <<<"$ours" | sed -n 's/^CONFIG_\(UNIMEM_[A-Z_]*\)=[ym]$/\1/p' | sort)
declared=""
bad=0
for k in "$root"/kernel/*/Kconfig; do
  sym=""
  while read -r word rest; do
    case "$word" in
      config) sym=$rest; declared+="$sym"$'\n' ;;
      depends)
        # "depends on A && B && C": plain conjunctions are all the files use.
        for dep in $(sed 's/^on //; s/&&/ /g' <<<"$rest"); do
          if [[ "$dep" == UNIMEM_* ]]; then
            grep -qx "$dep" <<<"$built" || { echo "check-kconfig: ${k#"$root"/}: $sym depends on $dep, which the Makefile does not build" >&2; bad=1; }
          elif ! grep -Eq "^CONFIG_$dep=(y|m)$" "$config"; then
            echo "check-kconfig: ${k#"$root"/}: $sym depends on $dep, which $config does not set" >&2; bad=1
          fi
        done ;;
    esac
  done < <(sed -n 's/^\t*\(config\|depends\) /\1 /p' "$k")
done
for sym in $built; do
  grep -qx "$sym" <<<"$declared" || { echo "check-kconfig: the Makefile builds $sym, which no kernel/*/Kconfig declares" >&2; bad=1; }
done
exit "$bad"
