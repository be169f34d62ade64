#!/usr/bin/env bash
# Gathers the latest result of every benchmark under build/bench/<name>/<UTC timestamp>/ (what
# scripts/bench/*.sh write) into one Markdown report,
# build/bench/report.md: per benchmark its environment (accelerator, vCPUs, kernel, commit,
# date, repetitions), its summary (the medians and ratios it printed), its CSV files and its plot.
#   scripts/bench/report.sh [--out FILE] [BENCH_DIR]    BENCH_DIR: default build/bench
# Exits 1 with a message when there is no result at all. Runs no benchmark itself.
source "$(dirname "$0")/../lib/common.sh"
out='' dir=''
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) sed -n '2,/^source/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0;;
    --out) out=${2:?--out needs a file}; shift 2;;
    -*) die "unknown option $1 (--help lists them)";;
    *) dir=$1; shift;;
  esac
done
dir=${dir:-$UNIMEM_BUILD/bench}
out=${out:-$dir/report.md}
[ -d "$dir" ] || die "no results: $dir does not exist (run a benchmark first, e.g. scripts/bench/shmem.sh)"

# latest NAME: the newest result directory of benchmark NAME that has an environment.csv.
latest() {
  local d
  for d in $(ls -1d "$dir/$1"/*/ 2>/dev/null | sort -r); do
    [ -f "$d/environment.csv" ] && { echo "${d%/}"; return; }
  done
}

benches=()
for b in "$dir"/*/; do
  b=$(basename "$b")
  [ -n "$(latest "$b")" ] && benches+=("$b")
done
[ ${#benches[@]} -gt 0 ] || die "no results under $dir (each benchmark writes $dir/<name>/<timestamp>/environment.csv)"

tmp=$(mktemp "$out.XXXXXX")
trap 'rm -f "$tmp"' EXIT
{
  echo "# unimem benchmark report"
  echo
  echo "Made $(date -u +%Y-%m-%dT%H:%M:%SZ) from the latest result of each benchmark in \`$dir\`."
  echo "Under TCG absolute times mean little: read the ratios, measured in the same run."
  for b in "${benches[@]}"; do
    r=$(latest "$b")
    rel=${r#"$(dirname "$out")"/}
    echo
    echo "## $b ($(basename "$r"))"
    echo
    echo "| setting | value |"
    echo "|---|---|"
    tail -n +2 "$r/environment.csv" | while IFS=, read -r k v; do echo "| $k | $v |"; done
    if [ -f "$r/summary.txt" ]; then
      echo
      echo '```'
      sed -e '$a\' "$r/summary.txt"
      echo '```'
    fi
    echo
    echo "Data: $(for f in "$r"/*.csv; do printf '[%s](%s) ' "$(basename "$f")" "$rel/$(basename "$f")"; done)"
    for p in "$r"/*.png; do
      [ -f "$p" ] || continue
      echo
      echo "![$b]($rel/$(basename "$p"))"
    done
  done
} >"$tmp"
mv "$tmp" "$out"
trap - EXIT
log "report of ${#benches[@]} benchmark(s) (${benches[*]}): $out"
