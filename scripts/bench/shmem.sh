#!/usr/bin/env bash
# OpenSHMEM benchmark (docs/SHMEM.md) on its own 3-node cluster (run directory
# build/bench-shmem, or $BENCH_RUN), every node running kram-daemon, unimem_gsas and gsasd as
# tests/cluster/shmem.sh sets them up. scripts/bench/shmem_bench.c, built with oshcc, runs from
# node 0 with oshrun as 2 PEs, PE 0 timing single operations on PE 1:
#   - one node: both PEs on node 1 (puts and gets are copies between mappings, atomics go
#     through node 1's service);
#   - across nodes: PE 0 on node 1, PE 1 on node 2 (everything through node 2's service);
# putmem + quiet and getmem latency and bandwidth over 8 B - 1 MiB, atomic fetch_add,
# compare_swap and add + quiet, barrier_all. Each configuration runs SHMEM_BENCH_RUNS times
# (default 3), interleaved; a figure is the median over the runs of each run's median.
# Writes environment.csv, runs.csv (every run), summary.csv (one node, across nodes, their
# ratio) and shmem.png to build/bench/shmem/<UTC timestamp>/ (SHMEM_BENCH_OUT), and prints the
# summary. Open MPI's OpenSHMEM is not run (see docs/SHMEM.md, "Benchmark").
#   env: SHMEM_BENCH_REPS (100 operations per size and run; a tenth from 64 KiB up),
#        SHMEM_BENCH_RUNS, SHMEM_BENCH_NO_PLOT=1, BENCH_RUN, SHMEM_BENCH_OUT.
# Needs `make` (modules and user-space tools) first.
# shellcheck source=scripts/lib/common.sh
source "$(dirname "$0")/../lib/common.sh"
RUN=${BENCH_RUN:-$UNIMEM_BUILD/bench-shmem}
export UNIMEM_RUN=$RUN
CLUSTER=$UNIMEM_ROOT/scripts/cluster
NODES=3
REPS=${SHMEM_BENCH_REPS:-100}
RUNS=${SHMEM_BENCH_RUNS:-3}
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
OUT=${SHMEM_BENCH_OUT:-$UNIMEM_BUILD/bench/shmem/$STAMP}
CONFIGS=("one_node:1" "cross_node:1,2")

[ -f "$UNIMEM_ROOT/kernel/gsas/unimem_gsas.ko" ] || die "kernel/gsas/unimem_gsas.ko missing: run 'make' first"
for b in oshrun gsasd libshmem.so; do
  [ -e "$UNIMEM_ROOT/target/release/$b" ] || die "target/release/$b missing: run 'make' first"
done
"$UNIMEM_ROOT/userspace/shmem/shmem-pc.sh" >/dev/null
mkdir -p "$OUT"
log "starting a $NODES-node cluster in $RUN; results in $OUT"
"$CLUSTER" up -n "$NODES"
BG=shmb
TIMEOUT=900
# shellcheck source=tests/cluster/lib.sh
source "$UNIMEM_ROOT/tests/cluster/lib.sh"
STOP_GSASD="killall gsasd 2>/dev/null; for i in \$(seq 50); do pidof gsasd >/dev/null || break; sleep 0.1; done"
# Only a cluster this script started is stopped (up refuses to start over a running one).
cleanup() {
  for n in $(seq 0 $((NODES - 1))); do
    "$CLUSTER" exec "$n" --timeout 120 -- "killall -TERM oshrun 2>/dev/null; sleep 1; $STOP_GSASD; $STOP_DAEMON" >/dev/null 2>&1 || true
  done
  "$CLUSTER" down >/dev/null 2>&1 || true
}
trap cleanup EXIT

OSHCC_RPATH=/opt/unimem/lib "$UNIMEM_ROOT/userspace/shmem/oshcc" -O2 -Wall -Werror \
  -o "$RUN/share/bin/shmem_bench" "$UNIMEM_ROOT/scripts/bench/shmem_bench.c"
mkdir -p "$RUN/share/lib"
cp "$UNIMEM_ROOT/target/release/libshmem.so" "$RUN/share/lib/"
log "every node: base modules, kram-daemon, unimem_gsas, gsasd"
for n in $(seq 0 $((NODES - 1))); do
  load_base "$n"
  gsas_up "$n"
  bg "$n" gsasd "gsasd --log-dir /tmp/gsasd"
  wait_log "$n" gsasd 'serving remoteFork' 20
done

if [ -n "${UNIMEM_ACCEL:-}" ]; then accel=$UNIMEM_ACCEL
elif [ -w /dev/kvm ] && { [ -d /sys/module/kvm_intel ] || [ -d /sys/module/kvm_amd ]; }; then accel=kvm
else accel=tcg; fi
commit=$(git -C "$UNIMEM_ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
git -C "$UNIMEM_ROOT" diff --quiet HEAD 2>/dev/null || commit="$commit-dirty"
{
  echo "key,value"
  echo "accelerator,$accel"
  echo "vcpus_per_node,${UNIMEM_SMP:-1}"
  echo "nodes,$NODES"
  echo "host_cores,$(nproc)"
  echo "host_load,$(cut -d' ' -f1-3 /proc/loadavg)"
  echo "kernel,$(on 0 "uname -r")"
  echo "commit,$commit"
  echo "date,$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "reps,$REPS"
  echo "runs,$RUNS"
  echo "openmpi,not measured"
} >"$OUT/environment.csv"

echo "config,run,op,size,reps,median_us,p25_us,p75_us,mb_per_s" >"$OUT/runs.csv"
for run in $(seq 1 "$RUNS"); do
  for c in "${CONFIGS[@]}"; do
    name=${c%%:*} nodes=${c#*:}
    log "run $run/$RUNS: $name (PEs on nodes $nodes)"
    out=$(on 0 "SHMEM_SYMMETRIC_SIZE=2M oshrun -np 2 --nodes $nodes /opt/unimem/bin/shmem_bench $REPS") ||
      die "shmem_bench on nodes $nodes failed: $out"
    sed -n 's/^PE 0: RESULT //p' <<<"$out" | awk -v c="$name" -v r="$run" '{
      for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
      print c "," r "," v["op"] "," v["size"] "," v["reps"] "," v["median_us"] "," v["p25_us"] "," v["p75_us"] "," v["mb_per_s"]
    }' >>"$OUT/runs.csv"
  done
done

# summary.csv: per op and size, the median over the runs of each configuration, and the ratio.
awk -F, 'NR > 1 { k = $3 "," $4; key[k] = 1; v[$1 "," k] = v[$1 "," k] " " $6; b[$1 "," k] = b[$1 "," k] " " $9 }
  function med(s,   a, n, i, j, t) { n = split(s, a, " ")
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
  END { print "op,size,one_node_us,cross_node_us,cross_over_one,one_node_mb_per_s,cross_node_mb_per_s"
    for (k in key) { o = med(v["one_node," k]); x = med(v["cross_node," k])
      printf "%s,%s,%s,%.2f,%s,%s\n", k, o, x, o > 0 ? x / o : 0, med(b["one_node," k]), med(b["cross_node," k]) } }' \
  "$OUT/runs.csv" | sort -t, -k1,1 -k2,2n >"$OUT/summary.tmp"
{ grep '^op,' "$OUT/summary.tmp"; grep -v '^op,' "$OUT/summary.tmp"; } >"$OUT/summary.csv"
rm -f "$OUT/summary.tmp"
column -s, -t <"$OUT/summary.csv" | tee "$OUT/summary.txt"

if [ "${SHMEM_BENCH_NO_PLOT:-0}" != 1 ]; then
  venv=$UNIMEM_CACHE/bench-venv
  if ! "$venv/bin/python" -c 'import matplotlib' 2>/dev/null; then
    log "installing matplotlib into $venv"
    { python3 -m venv "$venv" && "$venv/bin/pip" install -q matplotlib; } >&2 ||
      log "could not install matplotlib: no plot (the CSVs are complete)"
  fi
  if "$venv/bin/python" -c 'import matplotlib' 2>/dev/null; then
    "$venv/bin/python" "$UNIMEM_ROOT/scripts/bench/plot_shmem.py" "$OUT" || log "plotting failed (the CSVs are complete)"
  fi
fi
log "results in $OUT"
