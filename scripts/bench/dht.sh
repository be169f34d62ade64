#!/usr/bin/env bash
# DHT benchmark (seed 000 section 2.5.3) on its own 4-node cluster (run directory
# build/bench-dht, or $BENCH_RUN), every node running kram-daemon and unimem_gsas as
# tests/cluster/dht.sh sets them up, every process in one protection tree. The seed's four
# workloads, each over nodes (1-4 issuing, the table always spread over all 4) x threads per
# node (1-4), in operations per second summed over the nodes:
#   get    gets of random keys of a table prefilled with DHT_BENCH_KEYS keys (Figure 15)
#   put    puts of new keys into an empty table (a fresh table per point; Figure 16)
#   mix80  80% puts of new keys, 20% gets of keys the thread put, from empty (Figure 17)
#   mix50  50/50 (Figure 18)
# and, in the same run on the same nodes, raw READ256 throughput (random 32-byte blocks of a page
# on each of the 4 nodes, as gets spread over the table). The whole sweep runs DHT_BENCH_RUNS
# times; a point is the median over the runs of its median window. Prints the ratios gets /
# READ256 (goal >= 0.8) and N nodes / 1 node (scaling efficiency = ops(N) / (N x ops(1)); called
# scaling only when nodes x vCPUs fit the host's cores, else a node-count ratio: bench_scales).
# Writes environment.csv, dht_runs.csv (every run), dht_throughput.csv (medians, efficiency,
# ratio to READ256), dht_counts.csv (where writes wait), dht_host_cpu.csv (host cores each node's
# QEMU used during each point), summary.txt and dht.png to build/bench/dht/<UTC timestamp>/.
#
#   scripts/bench/dht.sh [--quick]    --quick: nodes 1 2 4, threads 1 4, 1 run of 1.5 s points
#   env: DHT_BENCH_NODES ("1 2 3 4"), DHT_BENCH_THREADS ("1 2 3 4"), DHT_BENCH_RUNS (3),
#     DHT_BENCH_SECONDS (3 per point), DHT_BENCH_WINDOWS (3), DHT_BENCH_KEYS (4096 prefilled),
#     DHT_BENCH_CAPACITY (16384, the put tables), DHT_BENCH_NO_PLOT=1, BENCH_RUN, DHT_BENCH_OUT,
#     DHT_BENCH_ENV (environment of the measured processes, e.g. "GSAS_SPINS=0"),
#     DHT_BENCH_CLUSTER (4: the cluster's nodes, which the tables spread over; with 2 on a
#     2-core host every node has a core of its own).
# About 25 minutes on 2 shared cores in full, 3 with --quick. Needs `make` first.
# shellcheck source=scripts/lib/common.sh
source "$(dirname "$0")/../lib/common.sh"
quick=false
case ${1:-} in
  --quick) quick=true ;;
  -h|--help) sed -n '2,/^# shellcheck/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
  "") ;;
  *) die "unknown argument $1 (--help)" ;;
esac
RUN=${BENCH_RUN:-$UNIMEM_BUILD/bench-dht}
export UNIMEM_RUN=$RUN
CLUSTER=$UNIMEM_ROOT/scripts/cluster
NODES=${DHT_BENCH_CLUSTER:-4}
[[ "$NODES" =~ ^[1-9][0-9]*$ ]] && [ "$NODES" -le 16 ] || die "DHT_BENCH_CLUSTER: 1-16 nodes, not '$NODES'"
if "$quick"; then
  read -ra NODE_COUNTS <<<"${DHT_BENCH_NODES:-1 2 4}"
  read -ra THREADS <<<"${DHT_BENCH_THREADS:-1 4}"
  RUNS=${DHT_BENCH_RUNS:-1} SECONDS_PER_POINT=${DHT_BENCH_SECONDS:-1.5}
else
  read -ra NODE_COUNTS <<<"${DHT_BENCH_NODES:-1 2 3 4}"
  read -ra THREADS <<<"${DHT_BENCH_THREADS:-1 2 3 4}"
  RUNS=${DHT_BENCH_RUNS:-3} SECONDS_PER_POINT=${DHT_BENCH_SECONDS:-3}
fi
for nn in "${NODE_COUNTS[@]}"; do
  [[ "$nn" =~ ^[1-9][0-9]*$ ]] && [ "$nn" -le "$NODES" ] || die "DHT_BENCH_NODES: '$nn' is not 1-$NODES issuing nodes"
done
WINDOWS=${DHT_BENCH_WINDOWS:-3}
KEYS=${DHT_BENCH_KEYS:-4096}
CAPACITY=${DHT_BENCH_CAPACITY:-16384}
WORKLOADS=(get put mix80 mix50)
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
OUT=${DHT_BENCH_OUT:-$UNIMEM_BUILD/bench/dht/$STAMP}
# A protection tree no node makes (node field 13, another serial than gsas.sh's).
TREE=0x0d0011

[ -f "$UNIMEM_BUILT/kernel/gsas/unimem_gsas.ko" ] || die "kernel/gsas/unimem_gsas.ko missing: run 'make' first"
for b in unimem-dht unimem-dht-test unimem-gsas unimem-gsas-test; do
  [ -x "$UNIMEM_BUILT/target/release/$b" ] || die "target/release/$b missing: run 'make' first"
done
mkdir -p "$OUT"
log "starting a $NODES-node cluster in $RUN; results in $OUT"
"$CLUSTER" up -n "$NODES"
# Only a cluster this script started is stopped (up refuses to start over a running one).
sampler=''
trap '[ -z "$sampler" ] || kill "$sampler" 2>/dev/null; "$CLUSTER" down >/dev/null 2>&1 || true' EXIT
BG=dhtb
TIMEOUT=900
# shellcheck source=tests/cluster/lib.sh
source "$UNIMEM_ROOT/tests/cluster/lib.sh"
# shellcheck source=scripts/lib/bench.sh
source "$UNIMEM_ROOT/scripts/lib/bench.sh"
d() { local n=$1; shift; on "$n" "unimem-dht --tree $TREE $*"; }
g() { local n=$1; shift; on "$n" "unimem-gsas --tree $TREE $*"; }

log "every node: base modules, kram-daemon, unimem_gsas (pool from its own daemon)"
for n in $(seq 0 $((NODES - 1))); do
  load_base "$n"
  gsas_up "$n"
done
bench_environment "$OUT/environment.csv" "$NODES" runs="$RUNS" seconds_per_point="$SECONDS_PER_POINT" \
  windows="$WINDOWS" prefilled_keys="$KEYS" put_capacity="$CAPACITY" measured_env="${DHT_BENCH_ENV:-}"

# Barrier words (one per point, bench_point) on a page of node 0; pages for raw READ256 on
# every node.
BENCH_BARRIERS=$(g 0 alloc --node 0)
points=0
READ_ARGS="--op read256 --vars 128"
for n in $(seq 0 $((NODES - 1))); do READ_ARGS="$READ_ARGS --addr $(g 0 alloc --node "$n")"; done
ALL_NODES=$(seq -s, 0 $((NODES - 1)))
create() { sed -n 's/.*"root":"\(0x[0-9a-f]*\)".*/\1/p' <<<"$(d 0 create --nodes "$ALL_NODES" --capacity "$1" --json)"; }

log "prefilling a table with $KEYS keys (4 threads on node 0)"
GT=$(create "$KEYS")
[ -n "$GT" ] || die "could not create the get table"
fill=$(on 0 "unimem-dht-test --tree $TREE bench $GT --workload fill --keys $KEYS --threads 4 --json")
echo "$fill"
d 0 stats "$GT"

runs_csv=$OUT/dht_runs.csv
echo "run,workload,nodes,threads_per_node,threads,ops_per_s,min_ops_per_s,max_ops_per_s,per_node_ops_per_s,gsas_requests_per_op" >"$runs_csv"
# Where the writers wait (issue 31): per point, summed over the issuing nodes' processes (their
# JSON lines, still on the nodes after bench_point), lock retries and hold time per lock taken.
counts_csv=$OUT/dht_counts.csv
echo "run,workload,nodes,threads_per_node,ops,locks,lock_retries,lock_retries_per_lock,lock_hold_us,containers,retries,mapped_reads_per_op,unlocked_puts,unlocked_misses,yields_per_op,sleeps_per_op,answer_sleeps_per_op" >"$counts_csv"
point_counts() {
  local nn=$1 n out ops=0 locks=0 lr=0 held=0 cont=0 ret=0 mapped=0 unl=0 miss=0 yl=0 sl=0 as=0
  for n in $(seq 0 $((nn - 1))); do
    out=$(on "$n" "grep '^{' /tmp/$BG-pt.log")
    ops=$((ops + $(jv ops "$out"))) locks=$((locks + $(jv locks "$out"))) lr=$((lr + $(jv lock_retries "$out")))
    held=$(calc %.3f "$held + $(jv lock_hold_us "$out") * $(jv locks "$out")")
    cont=$((cont + $(jv containers "$out"))) ret=$((ret + $(jv retries "$out"))) mapped=$((mapped + $(jv mapped_reads "$out")))
    unl=$((unl + $(jv unlocked_puts "$out"))) miss=$((miss + $(jv unlocked_misses "$out")))
    yl=$((yl + $(jv yields "$out"))) sl=$((sl + $(jv sleeps "$out"))) as=$((as + $(jv answer_sleeps "$out")))
  done
  echo "$ops,$locks,$lr,$(calc %.3f "$lr / ($locks > 0 ? $locks : 1)"),$(calc %.1f "$held / ($locks > 0 ? $locks : 1)"),$cont,$ret,$(calc %.3f "$mapped / ($ops > 0 ? $ops : 1)"),$unl,$miss,$(calc %.3f "$yl / ($ops > 0 ? $ops : 1)"),$(calc %.3f "$sl / ($ops > 0 ? $ops : 1)"),$(calc %.3f "$as / ($ops > 0 ? $ops : 1)")"
}
# Where the host's cores go (issue 31): during each point the CPU time of each node's QEMU (all
# its threads: the vCPU and the I/O thread that delivers doorbells) is sampled every 0.2 s; the
# point's figure is the stretch of SECONDS_PER_POINT with the most CPU time (its measured
# windows, not the process start and barrier around them), in host cores.
cpu_csv=$OUT/dht_host_cpu.csv
echo "run,workload,nodes,threads_per_node,span_s,$(seq -s, -f 'node%g_cores' 0 $((NODES - 1))),total_cores" >"$cpu_csv"
TCK=$(getconf CLK_TCK)
qemu_ticks() {
  local n pid
  for n in $(seq 0 $((NODES - 1))); do
    pid=$(cat "$RUN/node$n.pid" 2>/dev/null) || pid=
    if [ -n "$pid" ] && [ -r "/proc/$pid/stat" ]; then
      awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$pid/stat"
    else echo 0; fi
  done | paste -sd' '
}
sample_cpu() { while :; do echo "$(date +%s.%N) $(qemu_ticks)"; sleep 0.2; done; }
# busiest_span FILE: "span,node0,...,total" of the busiest stretch of the samples in FILE.
busiest_span() {
  awk -v S="$SECONDS_PER_POINT" -v T="$TCK" '
    { n++; t[n] = $1; for (k = 2; k <= NF; k++) c[n, k] = $k; nf = NF }
    END {
      best = -1
      for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (t[j] - t[i] >= S) {
        tot = 0; for (k = 2; k <= nf; k++) tot += c[j, k] - c[i, k]
        tot /= T * (t[j] - t[i])
        if (tot > best) { best = tot; bi = i; bj = j }
        break
      }
      if (best < 0) { print "0"; exit }
      d = t[bj] - t[bi]; row = sprintf("%.2f", d)
      for (k = 2; k <= nf; k++) row = row sprintf(",%.3f", (c[bj, k] - c[bi, k]) / T / d)
      print row sprintf(",%.3f", best)
    }' "$1"
}
for run in $(seq 1 "$RUNS"); do
  for nn in "${NODE_COUNTS[@]}"; do
    for t in "${THREADS[@]}"; do
      for w in read256 "${WORKLOADS[@]}"; do
        log "run $run/$RUNS: $w, $nn node(s) x $t thread(s)"
        case $w in
          read256) cmd="unimem-gsas-test --tree $TREE throughput $READ_ARGS" ;;
          get) cmd="unimem-dht-test --tree $TREE bench $GT --workload get --keys $KEYS" ;;
          *) PT=$(create "$CAPACITY"); [ -n "$PT" ] || die "could not create a table"
             cmd="unimem-dht-test --tree $TREE bench $PT --workload $w" ;;
        esac
        cmd="${DHT_BENCH_ENV:+env $DHT_BENCH_ENV }$cmd"
        points=$((points + 1))
        sample_cpu >"$OUT/.cpu_samples" & sampler=$!
        read -r sum lo hi per req <<<"$(bench_point "$points" "$nn" "$t" "$cmd")"
        kill "$sampler"; wait "$sampler" 2>/dev/null || true; sampler=''
        echo "$run,$w,$nn,$t,$(busiest_span "$OUT/.cpu_samples")" >>"$cpu_csv"
        echo "$run,$w,$nn,$t,$((nn * t)),$sum,$lo,$hi,$per,${req#-}" >>"$runs_csv"
        [ "$w" = read256 ] || echo "$run,$w,$nn,$t,$(point_counts "$nn")" >>"$counts_csv"
        case $w in read256|get) ;; *) d 0 destroy "$PT" >/dev/null ;; esac
      done
    done
  done
done
d 0 destroy "$GT" >/dev/null
rm -f "$OUT/.cpu_samples"

# ---- medians over the runs, efficiency, ratios -------------------------------------------------
tput_csv=$OUT/dht_throughput.csv
echo "workload,nodes,threads_per_node,threads,ops_per_s,min_ops_per_s,max_ops_per_s,efficiency,ratio_to_read256,gsas_requests_per_op" >"$tput_csv"
declare -A OPS
for w in read256 "${WORKLOADS[@]}"; do
  for nn in "${NODE_COUNTS[@]}"; do
    for t in "${THREADS[@]}"; do
      mapfile -t v < <(awk -F, -v w="$w" -v n="$nn" -v t="$t" '$2 == w && $3 == n && $4 == t { print $6 }' "$runs_csv")
      read -r m lo hi <<<"$(stats "${v[@]}")"
      OPS[$w,$nn,$t]=$m
    done
  done
done
for w in read256 "${WORKLOADS[@]}"; do
  for nn in "${NODE_COUNTS[@]}"; do
    for t in "${THREADS[@]}"; do
      mapfile -t v < <(awk -F, -v w="$w" -v n="$nn" -v t="$t" '$2 == w && $3 == n && $4 == t { print $6 }' "$runs_csv")
      read -r m lo hi <<<"$(stats "${v[@]}")"
      req=$(awk -F, -v w="$w" -v n="$nn" -v t="$t" '$2 == w && $3 == n && $4 == t { r = $10 } END { print r }' "$runs_csv")
      one=${OPS[$w,${NODE_COUNTS[0]},$t]}
      eff=$(calc %.3f "$m / ($nn / ${NODE_COUNTS[0]} * $one)")
      echo "$w,$nn,$t,$((nn * t)),$m,$lo,$hi,$eff,$(calc %.3f "$m / ${OPS[read256,$nn,$t]}"),$req" >>"$tput_csv"
    done
  done
done

{
echo
echo "unimem DHT benchmark: $NODES nodes ($BENCH_ACCEL), ${UNIMEM_SMP:-1} vCPU each, $(nproc) host cores, kernel $BENCH_KERNEL, commit $BENCH_COMMIT"
bench_scales "${NODE_COUNTS[-1]}" ||
  echo "host: $(nproc) cores for up to $(( ${NODE_COUNTS[-1]} * ${UNIMEM_SMP:-1} )) vCPUs: figures across node counts are not scaling (the nodes share the cores)"
echo "ops/s summed over the issuing nodes (the table spread over all $NODES); median over $RUNS run(s) of the median of $WINDOWS windows of $(calc %.2f "$SECONDS_PER_POINT / $WINDOWS") s"
for w in read256 "${WORKLOADS[@]}"; do
  echo
  case $w in
    read256) echo "raw READ256, random 32-byte blocks of a page on each node" ;;
    get) echo "dhtGet of a table prefilled with $KEYS keys (seed Figure 15); x READ256 = gets / raw READ256 of the same point" ;;
    put) echo "dhtPut of new keys from empty (Figure 16)" ;;
    mix80) echo "80% dhtPut, 20% dhtGet from empty (Figure 17)" ;;
    mix50) echo "50% dhtPut, 50% dhtGet from empty (Figure 18)" ;;
  esac
  printf '%-14s' "threads/node"; for t in "${THREADS[@]}"; do printf ' %10s' "$t"; done
  if bench_scales "${NODE_COUNTS[-1]}"; then eff=efficiency; else eff="ratio (not scaling)"; fi
  printf '  | %s vs %s node(s)' "$eff" "${NODE_COUNTS[0]}"; [ "$w" = get ] && printf '  | x READ256'; echo
  for nn in "${NODE_COUNTS[@]}"; do
    printf '%-14s' "$nn node(s)"
    for t in "${THREADS[@]}"; do printf ' %10.0f' "${OPS[$w,$nn,$t]}"; done
    printf '  |'
    for t in "${THREADS[@]}"; do printf ' %5.2f' "$(calc %.3f "${OPS[$w,$nn,$t]} / ($nn / ${NODE_COUNTS[0]} * ${OPS[$w,${NODE_COUNTS[0]},$t]})")"; done
    if [ "$w" = get ]; then
      printf '  |'
      for t in "${THREADS[@]}"; do printf ' %5.2f' "$(calc %.3f "${OPS[get,$nn,$t]} / ${OPS[read256,$nn,$t]}")"; done
    fi
    echo
  done
done
echo
ratios=() scal=()
last=${NODE_COUNTS[-1]} first=${NODE_COUNTS[0]}
for nn in "${NODE_COUNTS[@]}"; do for t in "${THREADS[@]}"; do ratios+=("$(calc %.3f "${OPS[get,$nn,$t]} / ${OPS[read256,$nn,$t]}")"); done; done
read -r rm rlo rhi <<<"$(stats "${ratios[@]}")"
echo "gets / raw READ256: median $rm over the points (min $rlo, max $rhi); goal >= 0.8"
for w in "${WORKLOADS[@]}" read256; do
  scal=()
  for t in "${THREADS[@]}"; do scal+=("$(calc %.2f "${OPS[$w,$last,$t]} / ${OPS[$w,$first,$t]}")"); done
  echo "$w $(bench_scaling_word "$last"): $last node(s) / $first node(s) per threads per node (${THREADS[*]}): ${scal[*]} (linear: $(calc %.2f "$last / $first"))"
done
echo "fill: $(jv ops_per_s "$fill") puts/s (4 threads of node 0, $KEYS keys)"
echo
echo "Where writes wait (run 1; dht_counts.csv): per point, puts published without a lock (one SCATTER_IF;"
echo "misses: the entry changed, the put took the lock), locks taken, lock retries per lock, mean lock hold (us),"
echo "containers made, GSAS requests, reads through mappings, and sched_yield()s, sleeps and sleeps until a home rang"
echo "(WAIT_ANSWER, GSAS_ANSWER_SLEEP_AFTER) while waiting per operation"
for w in put mix80 mix50 get; do
  for nn in "${NODE_COUNTS[@]}"; do
    for t in "${THREADS[@]}"; do
      row=$(awk -F, -v w="$w" -v n="$nn" -v t="$t" '$1 == 1 && $2 == w && $3 == n && $4 == t' "$counts_csv")
      req=$(awk -F, -v w="$w" -v n="$nn" -v t="$t" '$1 == 1 && $2 == w && $3 == n && $4 == t { print $10 }' "$runs_csv")
      IFS=, read -r _ _ _ _ _ locks _ lrl hold cont _ mpo unl miss ypo spo apo <<<"$row"
      printf '  %-6s %s node(s) x %s: %7s unlocked (%s missed), %6s locks, %6s retries/lock, %8s us held, %5s containers, %5s requests/op, %5s mapped reads/op, %s yields/op, %s sleeps/op, %s answer sleeps/op\n' \
        "$w" "$nn" "$t" "$unl" "$miss" "$locks" "$lrl" "$hold" "$cont" "$req" "$mpo" "$ypo" "$spo" "$apo"
    done
  done
done
echo
echo "Host cores busy (run 1; dht_host_cpu.csv): the QEMU processes' CPU time over the busiest $SECONDS_PER_POINT s of each point"
for w in put get; do
  for nn in "${NODE_COUNTS[@]}"; do
    for t in "${THREADS[@]}"; do
      row=$(awk -F, -v w="$w" -v n="$nn" -v t="$t" '$1 == 1 && $2 == w && $3 == n && $4 == t' "$cpu_csv")
      IFS=, read -ra f <<<"$row"
      [ "${#f[@]}" -gt 5 ] || continue
      printf '  %-6s %s node(s) x %s: %5s of %s host cores (per node: %s)\n' "$w" "$nn" "$t" "${f[-1]}" "$(nproc)" \
        "$(IFS=' '; echo "${f[*]:5:$NODES}")"
    done
  done
done
echo
bench_tcg_note "$NODES"
} | tee "$OUT/summary.txt"

bench_results "$UNIMEM_ROOT/scripts/bench/plot_dht.py" "${DHT_BENCH_NO_PLOT:-0}"
