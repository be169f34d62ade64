#!/usr/bin/env bash
# Memory tiering benchmark (docs/NUMA.md, "A lower memory tier"): the same verifying hot/cold
# workload on node 0 (96 MiB of RAM): unimem-memtest 1.5x its RAM, compressible data, the last
# 16 MiB checked --sweeps times, with
#   tiering  128 MiB lent by node 1 as a lower memory tier, demotion on, NUMA balancing in
#            memory-tiering mode, no swap;
#   kram     swap on a 128 MiB KRAM device lent by node 2 (no remote NUMA node);
#   zram     swap on a 128 MiB zram device in node 0's own RAM;
#   remote   everything bound to the remote node (numactl --membind=1);
# each repetition runs the four in an order that rotates from one repetition to the next; the
# ratios (runtime / tiering's) are taken within a repetition, then the median (min, max).
# Writes environment.csv, runs.csv, summary.csv, summary.txt and tiering.png to
# build/bench/tiering/<UTC timestamp>/ (TIERING_BENCH_OUT) and prints the summary.
#   scripts/bench/tiering.sh [--reps N] [--sweeps N]    (5 repetitions, 2000 sweeps)
#   env: TIERING_BENCH_OUT, TIERING_BENCH_NO_PLOT=1, BENCH_RUN (cluster run directory)
# Needs `make` first. Goal: tiering faster than KRAM swap and zram (ratios above 1).
# shellcheck source=scripts/lib/common.sh
source "$(dirname "$0")/../lib/common.sh"
# shellcheck source=scripts/lib/bench.sh
source "$(dirname "$0")/../lib/bench.sh"
REPS=5 SWEEPS=2000 HOT=16
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) sed -n '2,/^# shellcheck/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0;;
    --reps) REPS=${2:?--reps needs a count}; shift 2;;
    --sweeps) SWEEPS=${2:?--sweeps needs a count}; shift 2;;
    *) die "unknown option $1 (--help lists them)";;
  esac
done
for v in "$REPS" "$SWEEPS"; do [[ "$v" =~ ^[1-9][0-9]*$ ]] || die "not a positive number: '$v'"; done
bench_needs kernel/numa/unimem_numa.ko kernel/kram/unimem_kram.ko target/release/unimem-memtest
export UNIMEM_RUN=${BENCH_RUN:-$UNIMEM_BUILD/bench-tiering}
CLUSTER=$UNIMEM_ROOT/scripts/cluster
OUT=${TIERING_BENCH_OUT:-$UNIMEM_BUILD/bench/tiering/$(date -u +%Y%m%dT%H%M%SZ)}
MODS=/opt/unimem/modules
trap '"$CLUSTER" down >/dev/null 2>&1 || true' EXIT
mkdir -p "$OUT"

"$CLUSTER" down >/dev/null 2>&1 || true
"$CLUSTER" up -n 3 --mem-of 0=96M
BG=tierb TIMEOUT=900
# shellcheck source=tests/cluster/lib.sh
source "$UNIMEM_ROOT/tests/cluster/lib.sh"
for n in 0 1 2; do load_base "$n"; done
for n in 1 2; do kram_daemon "$n" --no-state; done
on 0 "swapoff -a 2>/dev/null; echo 8192 > /proc/sys/vm/min_free_kbytes; modprobe zram num_devices=1"
MIB=$(on 0 "awk '/^MemTotal/ {print int(\$2 * 3 / 2 / 1024)}' /proc/meminfo")
bench_environment "$OUT/environment.csv" 3 "reps=$REPS" "workload_mib=$MIB" "hot_mib=$HOT" "hot_sweeps=$SWEEPS" \
  "node0_ram=96M" "host_load=$(cut -d' ' -f1-3 /proc/loadavg)"

# run CONFIG: seconds of the workload under CONFIG, set up before and taken down after.
run() {
  local setup teardown prefix=''
  case $1 in
    tiering) setup="insmod $MODS/unimem_numa.ko && echo add 1 > /proc/unimem_numa &&
                    echo true > /sys/kernel/mm/numa/demotion_enabled && echo 2 > /proc/sys/kernel/numa_balancing"
             teardown="echo 0 > /proc/sys/kernel/numa_balancing; echo false > /sys/kernel/mm/numa/demotion_enabled
                       echo remove all > /proc/unimem_numa && rmmod unimem_numa";;
    remote)  setup="insmod $MODS/unimem_numa.ko && echo add 1 > /proc/unimem_numa"
             teardown="echo remove all > /proc/unimem_numa && rmmod unimem_numa"
             prefix="numactl --membind=1";;
    kram)    setup="insmod $MODS/unimem_kram.ko ninstances=1 size=128 &&
                    for i in \$(seq 150); do test -b /dev/kram0 && break; sleep 0.2; done
                    mkswap /dev/kram0 >/dev/null && swapon /dev/kram0"
             teardown="swapoff /dev/kram0 && rmmod unimem_kram";;
    zram)    setup="echo 1 > /sys/block/zram0/reset && echo 128M > /sys/block/zram0/disksize &&
                    mkswap /dev/zram0 >/dev/null && swapon /dev/zram0"
             teardown="swapoff /dev/zram0";;
  esac
  on 0 "$setup" >/dev/null || die "$1: setup failed"
  on 0 "sync; echo 3 > /proc/sys/vm/drop_caches; s=\$(cut -d' ' -f1 /proc/uptime)
        $prefix unimem-memtest --mib $MIB --compressible --hot-mib $HOT --hot-sweeps $SWEEPS --seed $RANDOM >/dev/null || exit 1
        e=\$(cut -d' ' -f1 /proc/uptime); echo \"\$s \$e\" | awk '{printf \"%.2f\", \$2 - \$1}'" ||
    die "$1: the workload failed or did not verify"
  on 0 "$teardown" >/dev/null || die "$1: teardown failed"
}

echo "rep,config,seconds,pgdemote,pgpromote" >"$OUT/runs.csv"
vm() { on 0 "awk -v p='$1' 'index(\$1, p) == 1 { s += \$2 } END { print s + 0 }' /proc/vmstat"; }
for rep in $(seq "$REPS"); do
  for cfg in $(rotated "$rep" tiering kram zram remote); do
    d0=$(vm pgdemote_) p0=$(vm pgpromote_success)
    t=$(run "$cfg")
    echo "$rep,$cfg,$t,$(( $(vm pgdemote_) - d0 )),$(( $(vm pgpromote_success) - p0 ))" >>"$OUT/runs.csv"
    log "repetition $rep/$REPS: $cfg $t s"
  done
done

awk -F, -v OFS=, '
  function med(s,   a, n, i, j, t) { n = split(s, a, " ")
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
    lo = a[1]; hi = a[n]; return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
  NR > 1 { t[$1, $2] = $3; d[$2] = d[$2] " " $4; p[$2] = p[$2] " " $5; reps[$1] = 1 }
  END { print "config,seconds,seconds_min,seconds_max,over_tiering,over_tiering_min,over_tiering_max,pgdemote,pgpromote"
    n = split("tiering kram zram remote", c, " ")
    for (i = 1; i <= n; i++) { s = r = ""
      for (k in reps) { s = s " " t[k, c[i]]; if (t[k, "tiering"] > 0) r = r " " t[k, c[i]] / t[k, "tiering"] }
      m = med(s); l = lo; h = hi; q = med(r)
      printf "%s,%.2f,%.2f,%.2f,%.2f,%.2f,%.2f,%d,%d\n", c[i], m, l, h, q, lo, hi, med(d[c[i]]), med(p[c[i]]) } }' \
  "$OUT/runs.csv" >"$OUT/summary.csv"
{
  printf 'hot/cold workload: %s MiB (1.5x RAM) on a 96 MiB node, last %s MiB checked %s times; median of %s\n' \
    "$MIB" "$HOT" "$SWEEPS" "$REPS"
  printf '%-8s | %8s | %-13s | %-19s | %9s | %9s\n' config seconds "[min-max]" "x tiering [min-max]" pgdemote pgpromote
  tail -n +2 "$OUT/summary.csv" | while IFS=, read -r c m l h q ql qh d p; do
    printf '%-8s | %8s | %-13s | %-19s | %9s | %9s\n' "$c" "$m" "[$l-$h]" "$q [$ql-$qh]" "$d" "$p"
  done
  echo "goal: tiering faster than KRAM swap and zram (their 'x tiering' above 1.0)"
  bench_tcg_note 3
} | tee "$OUT/summary.txt"
bench_results "$UNIMEM_ROOT/scripts/bench/plot_tiering.py" "${TIERING_BENCH_NO_PLOT:-0}"
