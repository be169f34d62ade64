# shellcheck shell=bash
# Shared by the benchmarks that draw a PNG (scripts/bench/gsas.sh, shmem.sh), after sourcing
# scripts/lib/common.sh.
# bench_plot SCRIPT DIR: runs the plotting SCRIPT on the result directory DIR with matplotlib
# from a venv in the cache directory, installed with pip on first use; without it, or if the
# plot fails, only says so (the CSVs are complete).
bench_plot() {
  local venv=$UNIMEM_CACHE/bench-venv
  if ! "$venv/bin/python" -c 'import matplotlib' 2>/dev/null; then
    log "installing matplotlib into $venv"
    { python3 -m venv "$venv" && "$venv/bin/pip" install -q matplotlib; } >&2 ||
      log "could not install matplotlib: no plot (the CSVs are complete)"
  fi
  if "$venv/bin/python" -c 'import matplotlib' 2>/dev/null; then
    "$venv/bin/python" "$1" "$2" || log "plotting failed (the CSVs are complete)"
  fi
}
