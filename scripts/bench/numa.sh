#!/usr/bin/env bash
# NUMA benchmark: STREAM-like bandwidth (copy, scale, add, triad) and pointer-chase latency with
# the program's memory bound to the remote NUMA node (memory lent by node 1 through
# unimem_numa) against the local node, in the same VM; and the same under the service levels
# 1:3 and 1:1 (weighted interleave). Under TCG the "remote" memory is host RAM like the local
# one, so expect ratios near 1 here; on the boards they measure the fabric. Last, the two uses
# of lent memory side by side: a program 1.5x as large as node 0's RAM spilling into the remote
# NUMA node (no swap) against the same program swapping to KRAM.
# Each part runs BENCH_RUNS times, its configurations interleaved; ratios are taken within a
# run, then the median [min-max] over the runs. Writes environment.csv, runs.csv, summary.csv,
# summary.txt and numa.png to build/bench/numa/<UTC timestamp>/ (NUMA_BENCH_OUT).
#   scripts/bench/numa.sh [--mib N]   (STREAM array size in MiB, default 32; chase uses 2x)
#   env: BENCH_RUNS (3), NUMA_BENCH_OUT, NUMA_BENCH_NO_PLOT=1
# shellcheck source=scripts/lib/common.sh
source "$(dirname "$0")/../lib/common.sh"
# shellcheck source=scripts/lib/bench.sh
source "$(dirname "$0")/../lib/bench.sh"
MIB=32
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) sed -n '2,/^# shellcheck/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0;;
    --mib) MIB=${2:?--mib needs a size}; shift 2;;
    *) die "unknown option $1 (--help lists them)";;
  esac
done
RUNS=${BENCH_RUNS:-3}
for v in "$MIB" "$RUNS"; do [[ "$v" =~ ^[1-9][0-9]*$ ]] || die "not a positive number: '$v'"; done
bench_needs kernel/numa/unimem_numa.ko kernel/kram/unimem_kram.ko target/release/unimem-numabench
export UNIMEM_RUN=$UNIMEM_BUILD/bench-numa
CLUSTER=$UNIMEM_ROOT/scripts/cluster
OUT=${NUMA_BENCH_OUT:-$UNIMEM_BUILD/bench/numa/$(date -u +%Y%m%dT%H%M%SZ)}
MODS=/opt/unimem/modules
on() { local n=$1; shift; "$CLUSTER" exec "$n" --timeout 900 -- "$@"; }
mkdir -p "$OUT"
echo "run,config,metric,value" >"$OUT/runs.csv"
# record RUN CONFIG LINES: the benchmark's "name unit value" lines as runs.csv rows (metric:
# every word but the value; "stream valid 1" is not a measurement).
record() {
  awk -v r="$1" -v c="$2" 'NF >= 3 && $2 != "valid" { m = $1; for (i = 2; i < NF; i++) m = m " " $i; print r "," c "," m "," $NF }' \
    <<<"$3" >>"$OUT/runs.csv"
}

trap '"$CLUSTER" down >/dev/null 2>&1 || true' EXIT
"$CLUSTER" down >/dev/null 2>&1 || true
"$CLUSTER" up -n 2 -m 512M
for n in 0 1; do on "$n" "insmod $MODS/unimem_eusrvmem.ko && insmod $MODS/unimem_mailbox.ko"; done
on 1 "kram-daemon --no-state >/dev/null 2>&1 &"
sleep 1
on 0 "insmod $MODS/unimem_numa.ko && echo add 1 > /proc/unimem_numa && numactl --hardware"
bench_environment "$OUT/environment.csv" 2 "runs=$RUNS" "stream_mib=$MIB" "chase_mib=$((MIB * 2))"

# TCG translates the benchmark's code on first use: a discarded warm-up keeps that out of the
# first measured case.
on 0 "numactl --membind=0 unimem-numabench stream --mib 8 --reps 2" >/dev/null
for run in $(seq "$RUNS"); do
  for cfg in $(rotated "$run" local remote sl13 sl11); do
    log "run $run/$RUNS: $cfg"
    case $cfg in
      local) pol="numactl --membind=0";;
      remote) pol="numactl --membind=1";;
      sl13) pol="unimem-sl run --remote 1 --local 3 --force --";;
      sl11) pol="unimem-sl run --remote 1 --local 1 --force --";;
    esac
    record "$run" "$cfg" "$(on 0 "$pol unimem-numabench stream --mib $MIB --reps 5")"
    case $cfg in local|remote) record "$run" "$cfg" "$(on 0 "$pol unimem-numabench chase --mib $((MIB * 2))")";; esac
  done
done
on 0 "echo remove all > /proc/unimem_numa && rmmod unimem_numa"

# Spill: node 0 gets 96 MiB; node 1 lends the NUMA block, node 2 the swap.
"$CLUSTER" down >/dev/null 2>&1 || true
"$CLUSTER" up -n 3 --mem-of 0=96M
for n in 0 1 2; do on "$n" "insmod $MODS/unimem_eusrvmem.ko && insmod $MODS/unimem_mailbox.ko"; done
on 1 "kram-daemon --no-state >/dev/null 2>&1 &"
on 2 "kram-daemon --no-state >/dev/null 2>&1 &"
sleep 1
mib=$(on 0 "awk '/^MemTotal/ {print int(\$2 * 3 / 2 / 1024)}' /proc/meminfo")
# seconds: wall time of a verifying unimem-memtest of $mib MiB on node 0.
seconds() {
  on 0 "echo 8192 > /proc/sys/vm/min_free_kbytes; s=\$(cut -d' ' -f1 /proc/uptime)
        unimem-memtest --mib $mib --seed 7 >/dev/null || exit 1
        e=\$(cut -d' ' -f1 /proc/uptime); echo \"\$s \$e\" | awk '{printf \"%.2f\", \$2 - \$1}'"
}
for run in $(seq "$RUNS"); do
  for cfg in $(rotated "$run" spill swap); do
    if [ "$cfg" = spill ]; then
      log "run $run/$RUNS: $mib MiB program, default policy, remote NUMA node from node 1, no swap"
      on 0 "insmod $MODS/unimem_numa.ko node=1 && echo add 1 > /proc/unimem_numa"
      t=$(seconds) || die "workload failed with the NUMA node"
      on 0 "echo remove all > /proc/unimem_numa && rmmod unimem_numa"
    else
      log "run $run/$RUNS: the same program, 128 MiB of KRAM swap from node 2"
      on 0 "insmod $MODS/unimem_kram.ko ninstances=1 size=128 &&
            for i in \$(seq 75); do test -b /dev/kram0 && break; sleep 0.2; done
            mkswap /dev/kram0 >/dev/null && swapon /dev/kram0" || die "no kram swap"
      t=$(seconds) || die "workload failed on kram swap"
      on 0 "swapoff /dev/kram0 && rmmod unimem_kram"
    fi
    echo "$run,$cfg,seconds $mib MiB,$t" >>"$OUT/runs.csv"
  done
done

# summary.csv: per metric the median [min, max] of each configuration, and the ratios
# remote/local and swap/spill taken within each run.
awk -F, -v OFS=, '
  function f(x) { return x == "" ? "" : sprintf("%.2f", x) }
  function med(s,   a, n, i, j, t) { n = split(s, a, " "); if (n == 0) { lo = hi = ""; return "" }
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
    lo = a[1]; hi = a[n]; return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
  NR > 1 { if (!($3 in seen)) { seen[$3] = 1; order[++n] = $3 }
           v[$2, $3] = v[$2, $3] " " $4; x[$1, $2, $3] = $4; runs[$1] = 1 }
  END { print "metric,local,remote,remote_over_local,min,max,sl13,sl11,spill_s,swap_s,swap_over_spill,min,max"
    for (i = 1; i <= n; i++) { m = order[i]; r = q = ""
      for (k in runs) {
        if (x[k, "local", m] > 0) r = r " " x[k, "remote", m] / x[k, "local", m]
        if (x[k, "spill", m] > 0) q = q " " x[k, "swap", m] / x[k, "spill", m] }
      rr = f(med(r)); rl = f(lo); rh = f(hi); qq = f(med(q)); ql = f(lo); qh = f(hi)
      print m, f(med(v["local", m])), f(med(v["remote", m])), rr, rl, rh, f(med(v["sl13", m])), f(med(v["sl11", m])),
            f(med(v["spill", m])), f(med(v["swap", m])), qq, ql, qh } }' "$OUT/runs.csv" >"$OUT/summary.csv"
{
  echo "NUMA benchmark: medians of $RUNS runs; ratios median [min-max] within runs"
  printf '%-18s %10s %10s %-18s %10s %10s\n' metric local remote "remote/local" "sl 1:3" "sl 1:1"
  grep -v '^seconds' "$OUT/summary.csv" | tail -n +2 | while IFS=, read -r m l r q ql qh s13 s11 _; do
    printf '%-18s %10s %10s %-18s %10s %10s\n' "$m" "$l" "$r" "$q [$ql-$qh]" "$s13" "$s11"
  done
  echo "(seed 000 section 4: remote-bound memory-heavy programs run 2-3x slower on the boards)"
  grep '^seconds' "$OUT/summary.csv" | while IFS=, read -r m _ _ _ _ _ _ _ sp sw q ql qh; do
    printf '%s program on a 96 MiB node (every byte verified): remote NUMA node %s s, KRAM swap %s s, swap/numa %s [%s-%s]\n' \
      "${m#seconds }" "$sp" "$sw" "$q" "$ql" "$qh"
  done
  bench_tcg_note 3
} | tee "$OUT/summary.txt"
bench_results "$UNIMEM_ROOT/scripts/bench/plot_numa.py" "${NUMA_BENCH_NO_PLOT:-0}"
