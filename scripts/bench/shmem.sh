#!/usr/bin/env bash
# OpenSHMEM benchmark (docs/SHMEM.md) on its own 3-node cluster (run directory
# build/bench-shmem, or $BENCH_RUN), every node running kram-daemon, unimem_gsas and gsasd as
# tests/cluster/shmem.sh sets them up. scripts/bench/shmem_bench.c, built with oshcc, runs from
# node 0 with oshrun as 2 PEs, PE 0 timing single operations on PE 1:
#   - one node: both PEs on node 1 (puts and gets are copies between mappings, atomics go
#     through node 1's service);
#   - across nodes: PE 0 on node 1, PE 1 on node 2 (puts and gets are copies through mappings
#     of node 2's memory, atomics go through node 2's service);
#   - across nodes through the service: the same with SHMEM_REMOTE_MAP=0 (puts and gets as GSAS
#     bulk transfers, a page per request: the baseline of the mappings, cross_over_service);
# putmem + quiet and getmem latency and bandwidth over 8 B - 1 MiB, atomic fetch_add,
# compare_swap and add + quiet, barrier_all; and the OpenSHMEM 1.5 operations, each against
# what a 1.4 program does instead: put_signal (putmem_signal + quiet; 8 B, 4 KiB, 64 KiB)
# against put_set (putmem + fence + atomic set + quiet), fetch_add_nbi + quiet against
# fetch_add, and the team reduction sum_reduce on SHMEM_TEAM_WORLD against sum_to_all over the
# same 2 PEs (1 and 1024 longs). Each configuration runs SHMEM_BENCH_RUNS times (default 3),
# interleaved; a figure is the median over the runs of each run's median.
# With Open MPI installed on the host (Debian openmpi-bin, libopenmpi-dev: /usr/bin/oshcc is
# its wrapper), the same source built with Open MPI's oshcc runs on node 1 with its oshrun as a
# third configuration, openmpi_one_node (its runtime and libraries are copied into node 1's root
# file system, a snapshot, from the host); the nodes have no network between them, so Open MPI
# is not run across nodes. Open MPI 4.1 implements OpenSHMEM 1.4 only: shmem_bench.c compiles
# its 1.5 parts only where shmem.h has them, so Open MPI reports the 1.4 baselines (put_set,
# fetch_add, sum_to_all) and its columns stay empty for the 1.5 operations. Open MPI 4.1's PEs
# crash in shmem_finalize here (UCX, after every result is printed): a run counts when its
# results are complete.
# Writes environment.csv, runs.csv (every run), summary.csv (per configuration, and the ratios
# across/one node and ours/Open MPI on one node, goal <= 1.0, and across nodes mapped/through
# the service), v15_over_v14.csv (per
# configuration, each 1.5 operation's time over its 1.4 way's: below 1.0 it saves time) and
# shmem.png to build/bench/shmem/<UTC timestamp>/ (SHMEM_BENCH_OUT), and prints both tables.
#   env: SHMEM_BENCH_REPS (100 operations per size and run; a tenth from 64 KiB up),
#        SHMEM_BENCH_RUNS, SHMEM_BENCH_NO_PLOT=1, BENCH_RUN, SHMEM_BENCH_OUT,
#        SHMEM_BENCH_OMPI_OSHCC (Open MPI's oshcc; default /usr/bin/oshcc; "none": skip it).
# Needs `make` (modules and user-space tools) first.
# shellcheck source=scripts/lib/common.sh
source "$(dirname "$0")/../lib/common.sh"
# shellcheck source=scripts/lib/bench.sh
source "$(dirname "$0")/../lib/bench.sh"
RUN=${BENCH_RUN:-$UNIMEM_BUILD/bench-shmem}
export UNIMEM_RUN=$RUN
CLUSTER=$UNIMEM_ROOT/scripts/cluster
NODES=3
REPS=${SHMEM_BENCH_REPS:-100}
RUNS=${SHMEM_BENCH_RUNS:-3}
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
OUT=${SHMEM_BENCH_OUT:-$UNIMEM_BUILD/bench/shmem/$STAMP}
CONFIGS=("one_node:1" "cross_node:1,2" "cross_service:1,2")
OMPI_OSHCC=${SHMEM_BENCH_OMPI_OSHCC:-/usr/bin/oshcc}
# Open MPI's packages whose files (and their libraries) node 1 gets.
OMPI_PKGS=(openmpi-bin openmpi-common libopenmpi3 libucx0 libpmix2 libhwloc15 libhwloc-plugins)

[ -f "$UNIMEM_BUILT/kernel/gsas/unimem_gsas.ko" ] || die "kernel/gsas/unimem_gsas.ko missing: run 'make' first"
for b in oshrun gsasd libshmem.so; do
  [ -e "$UNIMEM_BUILT/target/release/$b" ] || die "target/release/$b missing: run 'make' first"
done
"$UNIMEM_ROOT/userspace/shmem/shmem-pc.sh" >/dev/null
mkdir -p "$OUT"
log "starting a $NODES-node cluster in $RUN; results in $OUT"
"$CLUSTER" up -n "$NODES"
BG=shmb
TIMEOUT=900
# shellcheck source=tests/cluster/lib.sh
source "$UNIMEM_ROOT/tests/cluster/lib.sh"
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
mkdir -p "$RUN/share/lib" "$RUN/share/ompi"
cp "$UNIMEM_BUILT/target/release/libshmem.so" "$RUN/share/lib/"
# The baseline comes from Debian's Open MPI, installed through the machine's apt sources if absent.
if [ "$OMPI_OSHCC" = /usr/bin/oshcc ] && [ ! -x /usr/bin/oshcc ]; then
  (apt_install openmpi-bin libopenmpi-dev) || log "could not install Open MPI: its OpenSHMEM is not measured"
fi
ompi=none
[ "$OMPI_OSHCC" = none ] || ompi=$("$OMPI_OSHCC" --showme:version 2>/dev/null || true)
# Open MPI's wrapper says "oshcc: Open SHMEM 4.1.4 (Language: C)".
ompi=$(sed -n 's/.*Open \(SHMEM\|MPI\) \([0-9.]*\).*/\2/p' <<<"$ompi" | head -1)
if [ -n "$ompi" ]; then
  "$OMPI_OSHCC" -O2 -o "$RUN/share/bin/shmem_bench.ompi" "$UNIMEM_ROOT/scripts/bench/shmem_bench.c"
  log "Open MPI $ompi: staging its runtime for node 1"
  for p in "${OMPI_PKGS[@]}"; do dpkg -L "$p"; done | grep -v '/share/\(doc\|man\|lintian\)/' |
    while read -r f; do if [ -f "$f" ]; then echo "$f"; fi; done >"$OUT/ompi-files.txt"
  { cat "$OUT/ompi-files.txt"; ls -d /etc/openmpi/* 2>/dev/null || true
    grep -E '\.so|/bin/' "$OUT/ompi-files.txt" | while read -r f; do
      { ldd "$f" 2>/dev/null || true; } | awk '/=> \// {print $3} /^[[:space:]]*\// {print $1}'; done; } |
    sort -u | while read -r f; do cp -L --parents "$f" "$RUN/share/ompi/" 2>/dev/null || true; done
else
  ompi=none
  log "no Open MPI oshcc ($OMPI_OSHCC): Open MPI's OpenSHMEM is not measured"
fi

log "every node: base modules, kram-daemon, unimem_gsas, gsasd"
for n in $(seq 0 $((NODES - 1))); do
  load_base "$n"
  gsas_up "$n"
  gsasd_up "$n"
done
if [ "$ompi" != none ]; then
  # Files node 1 does not have yet (its own libc and the like stay), into its snapshot root.
  on 1 'cd /opt/unimem/ompi && find . -type f | while read -r f; do [ -e "/$f" ] || { mkdir -p "/${f%/*}"; cp "$f" "/$f"; }; done; ln -sf orterun /usr/bin/oshrun.openmpi'
  CONFIGS+=("openmpi_one_node:1")
fi

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
  echo "openmpi,$ompi"
} >"$OUT/environment.csv"

echo "config,run,op,size,reps,median_us,p25_us,p75_us,mb_per_s" >"$OUT/runs.csv"
for run in $(seq 1 "$RUNS"); do
  for c in "${CONFIGS[@]}"; do
    name=${c%%:*} nodes=${c#*:}
    log "run $run/$RUNS: $name (PEs on nodes $nodes)"
    if [ "$name" = openmpi_one_node ]; then
      # Open MPI wants a network interface up (lo will do) and no ssh for one node.
      raw=$(on_may_fail 1 "ip link set lo up; OMPI_MCA_plm_rsh_agent=/bin/false timeout 600 oshrun.openmpi --allow-run-as-root --oversubscribe -np 2 /opt/unimem/bin/shmem_bench.ompi $REPS 2>&1") || true
      out=$(sed -n 's/^RESULT /PE 0: RESULT /p' <<<"$raw")
      grep -q 'op=barrier_all' <<<"$out" || die "$name: incomplete results: $raw"
    else
      env=""
      [ "$name" = cross_service ] && env=SHMEM_REMOTE_MAP=0
      out=$(on 0 "$env SHMEM_SYMMETRIC_SIZE=2M oshrun -np 2 --nodes $nodes /opt/unimem/bin/shmem_bench $REPS") ||
        die "shmem_bench on nodes $nodes failed: $out"
    fi
    grep -q 'op=barrier_all' <<<"$out" || die "$name: incomplete results: $out"
    sed -n 's/^PE 0: RESULT //p' <<<"$out" | awk -v c="$name" -v r="$run" '{
      for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
      print c "," r "," v["op"] "," v["size"] "," v["reps"] "," v["median_us"] "," v["p25_us"] "," v["p75_us"] "," v["mb_per_s"]
    }' >>"$OUT/runs.csv"
  done
done

# summary.csv: per op and size, the median over the runs of each configuration, and ratios.
awk -F, 'NR > 1 { k = $3 "," $4; key[k] = 1; v[$1 "," k] = v[$1 "," k] " " $6; b[$1 "," k] = b[$1 "," k] " " $9 }
  function med(s,   a, n, i, j, t) { n = split(s, a, " "); if (n == 0) return ""
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
  function ratio(x, y) { return (x == "" || y == "" || y + 0 == 0) ? "" : sprintf("%.2f", x / y) }
  END { print "op,size,one_node_us,cross_node_us,openmpi_one_node_us,cross_over_one,one_over_openmpi,one_node_mb_per_s,cross_node_mb_per_s,openmpi_one_node_mb_per_s,cross_service_us,cross_over_service,cross_service_mb_per_s"
    for (k in key) { o = med(v["one_node," k]); x = med(v["cross_node," k]); m = med(v["openmpi_one_node," k]); sv = med(v["cross_service," k])
      print k "," o "," x "," m "," ratio(x, o) "," ratio(o, m) "," med(b["one_node," k]) "," med(b["cross_node," k]) "," med(b["openmpi_one_node," k]) "," sv "," ratio(x, sv) "," med(b["cross_service," k]) } }' \
  "$OUT/runs.csv" | sort -t, -k1,1 -k2,2n >"$OUT/summary.tmp"
{ grep '^op,' "$OUT/summary.tmp"; grep -v '^op,' "$OUT/summary.tmp"; } >"$OUT/summary.csv"
rm -f "$OUT/summary.tmp"
column -s, -t <"$OUT/summary.csv" | tee "$OUT/summary.txt"

# v15_over_v14.csv: a 1.5 operation against the 1.4 way of doing the same, same run and size.
awk -F, 'BEGIN { base["put_signal"] = "put_set"; base["fetch_add_nbi"] = "fetch_add"; base["sum_reduce"] = "sum_to_all" }
  function ratio(x, y) { return (x == "" || y == "" || y + 0 == 0) ? "" : sprintf("%.2f", x / y) }
  NR > 1 { one[$1 "," $2] = $3; cross[$1 "," $2] = $4; if ($1 in base) k[++n] = $1 "," $2 }
  END { print "op,size,baseline,one_node_ratio,cross_node_ratio"
    for (i = 1; i <= n; i++) { split(k[i], a, ","); b = base[a[1]] "," a[2]
      print k[i] "," base[a[1]] "," ratio(one[k[i]], one[b]) "," ratio(cross[k[i]], cross[b]) } }' \
  "$OUT/summary.csv" >"$OUT/v15_over_v14.csv"
echo
column -s, -t <"$OUT/v15_over_v14.csv" | tee "$OUT/v15_over_v14.txt"

if [ "${SHMEM_BENCH_NO_PLOT:-0}" != 1 ]; then
  bench_plot "$UNIMEM_ROOT/scripts/bench/plot_shmem.py" "$OUT"
fi
log "results in $OUT"
