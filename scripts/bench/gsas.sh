#!/usr/bin/env bash
# GSAS benchmark on its own 4-node cluster (run directory build/bench-gsas, or $BENCH_RUN), every
# node running kram-daemon and its atomic service unimem_gsas (as tests/cluster/gsas.sh sets
# them up). In one run:
#  1. Fetch&Add and NOP latency, issuer node x home node (seed 000 Table 1's shape), each cell
#     also as a ratio to the busy-polled mailbox round trip between the same two nodes measured
#     in the same run (goal <= 1.3), and the remote/local ratio (seed hardware 4.6/2.6 = 1.77;
#     goal <= 1.5);
#  2. Fetch&Add throughput, threads per node (1-4) x nodes (1-4): on one variable of a fixed home
#     node (seed Figure 11), and on variables spread over all nodes, each operation picking one
#     at random (Figure 12);
#  3. READ256 throughput and bulk-read bandwidth (page-size pieces and larger transfers).
# Prints a summary with the ratios; writes one CSV per measurement, environment.csv (accelerator,
# vCPUs, nodes, kernel, commit, date) and gsas.png to build/bench/gsas/<UTC timestamp>/.
#
#   scripts/bench/gsas.sh     env: GSAS_BENCH_REPS (5 repetitions per latency cell),
#     GSAS_BENCH_OPS (200 operations per repetition), GSAS_BENCH_PINGS (300 polled mailbox
#     round trips per repetition), GSAS_BENCH_SECONDS (3 s per throughput point), GSAS_BENCH_WINDOWS (3
#     windows per point: the median is over them), GSAS_BENCH_THREADS ("1 2 3 4"),
#     GSAS_BENCH_VARS (16 variables per node for the many-variable runs), GSAS_BENCH_HOME (the
#     single variable's node, default the last), GSAS_BENCH_NO_PLOT=1, BENCH_RUN, GSAS_BENCH_OUT.
# Needs `make` (modules and user-space tools) first. The plot uses matplotlib from a venv under
# the cache directory, installed on first use with pip; without it the CSVs are still written.
# shellcheck source=scripts/lib/common.sh
source "$(dirname "$0")/../lib/common.sh"
RUN=${BENCH_RUN:-$UNIMEM_BUILD/bench-gsas}
export UNIMEM_RUN=$RUN
CLUSTER=$UNIMEM_ROOT/scripts/cluster
NODES=4
REPS=${GSAS_BENCH_REPS:-5}
OPS=${GSAS_BENCH_OPS:-200}
PINGS=${GSAS_BENCH_PINGS:-300}
SECONDS_PER_POINT=${GSAS_BENCH_SECONDS:-3}
WINDOWS=${GSAS_BENCH_WINDOWS:-3}
read -ra THREADS <<<"${GSAS_BENCH_THREADS:-1 2 3 4}"
VARS=${GSAS_BENCH_VARS:-16}
HOME_NODE=${GSAS_BENCH_HOME:-$((NODES - 1))}
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
OUT=${GSAS_BENCH_OUT:-$UNIMEM_BUILD/bench/gsas/$STAMP}
# A protection tree no node makes (node field 13): the benchmark's processes join it.
TREE=0x0d0001
# Seed 000 Table 1 (hardware): Fetch&Add 2.6 us same node, 4.6 us remote.
SEED_LOCAL_US=2.6 SEED_REMOTE_US=4.6

for f in unimem_mailbox unimem_gsas; do
  [ -f "$UNIMEM_BUILT/kernel/${f#unimem_}/$f.ko" ] || die "kernel/${f#unimem_}/$f.ko missing: run 'make' first"
done
for b in unimem-gsas unimem-gsas-test; do
  [ -x "$UNIMEM_BUILT/target/release/$b" ] || die "target/release/$b missing: run 'make' first"
done
mkdir -p "$OUT"
log "starting a $NODES-node cluster in $RUN; results in $OUT"
"$CLUSTER" up -n "$NODES"
# Only a cluster this script started is stopped (up refuses to start over a running one).
trap '"$CLUSTER" down >/dev/null 2>&1 || true' EXIT
# The acceptance tests' helpers: on, bg, wait_log, load_base, kram_daemon (they read $UNIMEM_RUN).
BG=gsasb
TIMEOUT=900
# shellcheck source=tests/cluster/lib.sh
source "$UNIMEM_ROOT/tests/cluster/lib.sh"

# shellcheck source=scripts/lib/bench.sh
source "$UNIMEM_ROOT/scripts/lib/bench.sh"
# kv KEY LINE: the value of KEY in a "RESULT k=v ..." line.
kv() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$2"; }
g() { local n=$1; shift; on "$n" "unimem-gsas --tree $TREE $*"; }

log "every node: base modules, kram-daemon, unimem_gsas (pool from its own daemon)"
for n in $(seq 0 $((NODES - 1))); do
  load_base "$n"
  kram_daemon "$n" --chunks 64 --offer-timeout 6
  on "$n" "insmod /opt/unimem/modules/unimem_gsas.ko && test -r /sys/kernel/unimem_gsas/pool_pages"
done
out=$(g 0 info --nodes "$NODES" --json)
grep -q '"answering":\[0,1,2,3\]' <<<"$out" || die "not every service answers: $out"

# The environment, for every CSV of this run.
bench_environment "$OUT/environment.csv" "$NODES" latency_reps="$REPS" latency_ops_per_rep="$OPS" \
  mailbox_pings="$PINGS" throughput_seconds="$SECONDS_PER_POINT" throughput_windows="$WINDOWS"
accel=$BENCH_ACCEL krel=$BENCH_KERNEL commit=$BENCH_COMMIT

# mbox_rtt SERVER CLIENT: the client's RESULT line of a busy-polled ping-pong (both sides spin
# on nonblocking RECV, yielding between tries), 25-byte payloads.
mbox_rtt() {
  local srv=$1 cli=$2 iface warm=50
  on "$srv" "rm -f /tmp/gsasb-srv.log; unimem-mbox serve --count $((PINGS + warm)) --spin </dev/null >/tmp/gsasb-srv.log 2>&1 &"
  on "$srv" "for i in \$(seq 150); do grep -q '^iface ' /tmp/gsasb-srv.log && exit 0; sleep 0.2; done; cat /tmp/gsasb-srv.log; exit 1" >&2 ||
    die "mailbox echo server on node $srv did not start"
  iface=$(on "$srv" "awk '/^iface /{print \$2; exit}' /tmp/gsasb-srv.log")
  on "$cli" "unimem-mbox ping --node $srv --iface $iface --count $PINGS --warmup $warm --size 25 --spin --timeout 900" | grep '^RESULT'
  on "$srv" "for i in \$(seq 150); do grep -q '^served ' /tmp/gsasb-srv.log && exit 0; sleep 0.2; done; cat /tmp/gsasb-srv.log; exit 1" >&2 ||
    die "mailbox echo server on node $srv did not finish"
}

# ---- 1. latency matrix ------------------------------------------------------------------------
# Per pair, REPS interleaved repetitions, each: PINGS polled mailbox round trips, then OPS
# Fetch&Adds and OPS NOPs (every one timed). Interleaving exposes both to the same host load (the
# other VMs and whatever else runs on the host's cores); the ratio is taken per repetition.
reps_csv=$OUT/latency_reps.csv
echo "issuer,home,rep,faa_median_us,faa_p25_us,faa_p75_us,nop_median_us,nop_p25_us,nop_p75_us,faa_syscalls_per_op,mbox_rtt_median_us,mbox_rtt_min_us,mbox_rtt_p99_us,faa_ratio_to_mbox,nop_ratio_to_mbox" >"$reps_csv"
lat_csv=$OUT/latency.csv
echo "issuer,home,op,median_us,min_us,max_us,p25_us,p75_us,syscalls_per_op,mbox_rtt_median_us,mbox_rtt_min_us,mbox_rtt_max_us,ratio_to_mbox,ratio_min,ratio_max,mbox_rtt_best_us,ratio_to_mbox_best" >"$lat_csv"
declare -A FAA NOP MBOX RATIO MBMIN SC
for i in $(seq 0 $((NODES - 1))); do
  for h in $(seq 0 $((NODES - 1))); do
    log "latency: node $i -> node $h ($REPS x: $PINGS polled mailbox round trips, $OPS Fetch&Add, $OPS NOP)"
    fm=() fp25=() fp75=() nm=() np25=() np75=() fr=() nr=() sc=() mbx=() mbmin=()
    for rep in $(seq 1 "$REPS"); do
      r=$(mbox_rtt "$h" "$i")
      rtt=$(calc %.3f "2 * $(kv median_us "$r")")
      j=$(on "$i" "unimem-gsas-test bench --node $h --op faa --count $OPS --reps 1 --warmup 20 --per-op --json &&
                   unimem-gsas-test bench --node $h --op nop --count $OPS --reps 1 --warmup 20 --per-op --json")
      jf=$(grep '"op":"faa"' <<<"$j") jn=$(grep '"op":"nop"' <<<"$j")
      { [ -n "$(jv op_median_us "$jf")" ] && [ -n "$(jv op_median_us "$jn")" ]; } || die "no result from bench $i -> $h: $j"
      fm+=("$(jv op_median_us "$jf")") fp25+=("$(jv op_p25_us "$jf")") fp75+=("$(jv op_p75_us "$jf")")
      nm+=("$(jv op_median_us "$jn")") np25+=("$(jv op_p25_us "$jn")") np75+=("$(jv op_p75_us "$jn")")
      sc+=("$(jv syscalls_per_op "$jf")") mbx+=("$rtt") mbmin+=("$(calc %.3f "2 * $(kv min_us "$r")")")
      fr+=("$(calc %.4f "${fm[-1]} / $rtt")") nr+=("$(calc %.4f "${nm[-1]} / $rtt")")
      echo "$i,$h,$rep,${fm[-1]},${fp25[-1]},${fp75[-1]},${nm[-1]},${np25[-1]},${np75[-1]},${sc[-1]},$rtt,${mbmin[-1]},$(calc %.3f "2 * $(kv p99_us "$r")"),${fr[-1]},${nr[-1]}" >>"$reps_csv"
    done
    read -r mbm mblo mbhi <<<"$(stats "${mbx[@]}")"
    MBOX[$i,$h]=$mbm
    read -r _ best _ <<<"$(stats "${mbmin[@]}")"
    MBMIN[$i,$h]=$best
    for op in faa nop; do
      if [ $op = faa ]; then
        read -r m lo hi <<<"$(stats "${fm[@]}")"; read -r p25 _ _ <<<"$(stats "${fp25[@]}")"
        read -r p75 _ _ <<<"$(stats "${fp75[@]}")"; read -r rm rlo rhi <<<"$(stats "${fr[@]}")"
        FAA[$i,$h]=$m RATIO[$i,$h]=$rm
      else
        read -r m lo hi <<<"$(stats "${nm[@]}")"; read -r p25 _ _ <<<"$(stats "${np25[@]}")"
        read -r p75 _ _ <<<"$(stats "${np75[@]}")"; read -r rm rlo rhi <<<"$(stats "${nr[@]}")"
        NOP[$i,$h]=$m
      fi
      read -r scm _ _ <<<"$(stats "${sc[@]}")"
      [ $op = nop ] || SC[$i,$h]=$scm
      echo "$i,$h,$op,$m,$lo,$hi,$p25,$p75,$scm,$mbm,$mblo,$mbhi,$rm,$rlo,$rhi,$best,$(calc %.3f "$m / $best")" >>"$lat_csv"
    done
  done
done

# ---- 2. Fetch&Add throughput --------------------------------------------------------------------
# Barrier words, one per throughput point, on a page of node 0 (bench_point).
BENCH_BARRIERS=$(g 0 alloc --node 0 --pages 1)
points=0

SINGLE=$(g 0 alloc --node "$HOME_NODE" --pages 1)
PAGES=()
for n in $(seq 0 $((NODES - 1))); do PAGES+=("$(g 0 alloc --node "$n" --pages 1)"); done
many_args="--op faa --vars $VARS"
for p in "${PAGES[@]}"; do many_args="$many_args --addr $p"; done
tput_csv=$OUT/faa_throughput.csv
echo "mode,variables,home,nodes,threads_per_node,threads,ops_per_s,min_ops_per_s,max_ops_per_s,per_node_ops_per_s" >"$tput_csv"
declare -A T1 TM
for mode in single many; do
  for nn in $(seq 1 "$NODES"); do
    for t in "${THREADS[@]}"; do
      if [ $mode = single ]; then
        args="--op faa --addr $SINGLE" vars=1 home=$HOME_NODE
      else
        args=$many_args vars=$((VARS * NODES)) home=all
      fi
      log "Fetch&Add throughput, $mode variable(s): $nn node(s) x $t thread(s)"
      points=$((points + 1))
      read -r sum lo hi per _ <<<"$(bench_point "$points" "$nn" "$t" "unimem-gsas-test --tree $TREE throughput $args")"
      if [ $mode = single ]; then T1[$nn,$t]=$sum; else TM[$nn,$t]=$sum; fi
      echo "$mode,$vars,$home,$nn,$t,$((nn * t)),$sum,$lo,$hi,$per" >>"$tput_csv"
    done
  done
done

# ---- 3. READ256 throughput and bulk-read bandwidth -------------------------------------------
REMOTE_ISSUER=0
[ "$HOME_NODE" = 0 ] && REMOTE_ISSUER=1
# Each READ256 point twice: through the home's service (GSAS_MAPPED_READS=0, the baseline) and
# through mappings checked against the home's version words (the library's default).
rd_csv=$OUT/read_throughput.csv
echo "op,bytes_per_op,path,issuer,home,threads,ops_per_s,min_ops_per_s,max_ops_per_s,mb_per_s" >"$rd_csv"
declare -A RD
# rd_point OP BYTES PATH ISSUER HOME THREADS THROUGHPUT-ARGS...
rd_point() {
  local op=$1 bytes=$2 path=$3 issuer=$4 home=$5 t=$6 env="" j ops mb
  shift 6
  [ "$path" = service ] && env="GSAS_MAPPED_READS=0 "
  log "$op throughput ($path): node $issuer -> node(s) $home, $t thread(s)"
  j=$(on "$issuer" "${env}unimem-gsas-test --tree $TREE throughput $* --threads $t --seconds $SECONDS_PER_POINT --reps $WINDOWS --json")
  ops=$(jv ops_per_s "$j")
  [ -n "$ops" ] || die "no result from throughput $op: $j"
  mb=$(calc %.3f "$ops * $bytes / 1e6")
  RD[$op,$path,$issuer,$home,$t]="$ops $mb"
  echo "$op,$bytes,$path,$issuer,$home,$t,$ops,$(jv min_ops_per_s "$j"),$(jv max_ops_per_s "$j"),$mb" >>"$rd_csv"
}
for path in service mapped; do
  for issuer in "$REMOTE_ISSUER" "$HOME_NODE"; do
    for t in 1 4; do rd_point read256 32 $path "$issuer" "$HOME_NODE" $t --op read256 --vars 1 --addr "$SINGLE"; done
  done
done
for issuer in "$REMOTE_ISSUER" "$HOME_NODE"; do
  for t in 1 4; do rd_point bulk-read 4096 service "$issuer" "$HOME_NODE" $t --op bulk-read --len 4096 --addr "$SINGLE"; done
done
# READ256 of variables on every node, each read picking one at random: spread over the homes.
spread_args="--op read256 --vars $((VARS * NODES))"
for p in "${PAGES[@]}"; do spread_args="$spread_args --addr $p"; done
for path in service mapped; do rd_point read256 32 $path "$REMOTE_ISSUER" all 1 $spread_args; done
bw_csv=$OUT/bulk_read.csv
echo "issuer,home,len,requests_per_read,median_us,min_us,max_us,mb_per_s,syscalls_per_op" >"$bw_csv"
declare -A BW
LENS=(256 4096 65536 1048576)
for issuer in "$REMOTE_ISSUER" "$HOME_NODE"; do
  for len in "${LENS[@]}"; do
    # About as many bytes per repetition for every length (at least 2 reads).
    count=$(( (4 << 20) / len )); [ "$count" -gt "$OPS" ] && count=$OPS; [ "$count" -lt 2 ] && count=2
    log "bulk read of $len B: node $issuer -> node $HOME_NODE ($REPS x $count)"
    j=$(on "$issuer" "unimem-gsas-test bench --node $HOME_NODE --op bulk-read --len $len --count $count --reps $REPS --warmup 2 --json")
    mb=$(jv mb_per_s "$j")
    [ -n "$mb" ] || die "no result from bulk-read bench: $j"
    BW[$issuer,$len]=$mb
    echo "$issuer,$HOME_NODE,$len,$(( (len + 4095) / 4096 )),$(jv median_us "$j"),$(jv min_us "$j"),$(jv max_us "$j"),$mb,$(jv syscalls_per_op "$j")" >>"$bw_csv"
  done
done

# ---- summary ----------------------------------------------------------------------------------
{
echo
echo "unimem GSAS benchmark: $NODES nodes ($accel), ${UNIMEM_SMP:-1} vCPU each, $(nproc) host cores, kernel $krel, commit $commit"
echo
echo "Fetch&Add latency (us): median over $REPS repetitions of the median of $OPS single operations; rows: issuer, columns: home node"
echo "x mbox: per repetition, that median / the median busy-polled mailbox round trip between the same two nodes"
echo "($PINGS round trips, measured just before), median over the repetitions"
printf '%-8s' issuer; for h in $(seq 0 $((NODES - 1))); do printf ' | %8s %7s' "home $h" "x mbox"; done; echo
for i in $(seq 0 $((NODES - 1))); do
  printf '%-8s' "node $i"
  for h in $(seq 0 $((NODES - 1))); do
    printf ' | %8.1f %7.2f' "${FAA[$i,$h]}" "${RATIO[$i,$h]}"
  done
  echo
done
echo
echo "NOP (the service's bare round trip, median as above), the polled mailbox round trip (median over the"
echo "repetitions of the median of $PINGS) and the fastest single polled round trip of the run (us)"
printf '%-8s' issuer; for h in $(seq 0 $((NODES - 1))); do printf ' | %6s %7s %6s' "NOP $h" "mbox $h" "best"; done; echo
for i in $(seq 0 $((NODES - 1))); do
  printf '%-8s' "node $i"
  for h in $(seq 0 $((NODES - 1))); do printf ' | %6.1f %7.1f %6.1f' "${NOP[$i,$h]}" "${MBOX[$i,$h]}" "${MBMIN[$i,$h]}"; done
  echo
done
loc=() rem=() rat=() scl=() scr=()
for i in $(seq 0 $((NODES - 1))); do
  for h in $(seq 0 $((NODES - 1))); do
    if [ "$i" = "$h" ]; then loc+=("${FAA[$i,$h]}") scl+=("${SC[$i,$h]}"); else rem+=("${FAA[$i,$h]}") scr+=("${SC[$i,$h]}"); fi
    rat+=("${RATIO[$i,$h]}")
  done
done
mean() { printf '%s\n' "$@" | awk '{ s += $1 } END { printf "%.2f", s / NR }'; }
maxof() { printf '%s\n' "$@" | sort -g | tail -1; }
lm=$(mean "${loc[@]}") rm=$(mean "${rem[@]}")
echo
echo "Fetch&Add local (issuer = home) mean $lm us, remote mean $rm us: remote/local $(calc %.2f "$rm / $lm")" \
  "(seed hardware $SEED_REMOTE_US/$SEED_LOCAL_US = $(calc %.2f "$SEED_REMOTE_US / $SEED_LOCAL_US"); goal <= 1.5)"
best=()
for i in $(seq 0 $((NODES - 1))); do
  for h in $(seq 0 $((NODES - 1))); do [ "$i" = "$h" ] || best+=("${MBMIN[$i,$h]}"); done
done
echo "Fetch&Add / polled mailbox round trip: mean $(mean "${rat[@]}"), best $(calc %.2f "$(printf '%s\n' "${rat[@]}" | sort -g | head -1)"), worst $(calc %.2f "$(maxof "${rat[@]}")") (goal <= 1.3);"
echo "  remote Fetch&Add mean / mean of the remote pairs' fastest polled round trip (both VMs on a host core): $(calc %.1f "$rm / $(mean "${best[@]}")")"
echo "  (a polled round trip needs both VMs on a host core at once: about 5-8 us when they are, milliseconds when"
echo "  the host time-slices them, so its median swings between runs; the service polls and is steadier)"
echo "System calls per Fetch&Add: local mean $(mean "${scl[@]}") (a SEND, which applies it), remote mean $(mean "${scr[@]}")" \
  "(the submission slot while the home polls; a SEND to learn that it does, a KICK when it stopped)"
echo
echo "Fetch&Add throughput (ops/s, sum over nodes; median of $WINDOWS windows of $(calc %.2f "$SECONDS_PER_POINT / $WINDOWS") s)"
echo "single variable on node $HOME_NODE (seed Figure 11) | $((VARS * NODES)) variables, $VARS on each node, picked at random (Figure 12)"
printf '%-16s' "threads/node"; for t in "${THREADS[@]}"; do printf ' %8s' "$t"; done
printf '  |'; for t in "${THREADS[@]}"; do printf ' %8s' "$t"; done; echo
for nn in $(seq 1 "$NODES"); do
  printf '%-16s' "$nn node(s)"
  for t in "${THREADS[@]}"; do printf ' %8.0f' "${T1[$nn,$t]}"; done
  printf '  |'
  for t in "${THREADS[@]}"; do printf ' %8.0f' "${TM[$nn,$t]}"; done
  echo
done
echo
echo "Reads from node $REMOTE_ISSUER (remote) and node $HOME_NODE (local) of node $HOME_NODE's memory, through the service"
echo "(GSAS_MAPPED_READS=0) and through mappings checked against the home's version words (the default):"
for pp in read256:service read256:mapped bulk-read:service; do
  op=${pp%:*} path=${pp#*:}
  for issuer in "$REMOTE_ISSUER" "$HOME_NODE"; do
    for t in 1 4; do
      read -r ops mb <<<"${RD[$op,$path,$issuer,$HOME_NODE,$t]}"
      printf '  %-9s %-8s node %s, %s thread(s): %9.0f ops/s, %8.2f MB/s\n' "$op" "$path" "$issuer" "$t" "$ops" "$mb"
    done
  done
done
read -r one _ <<<"${RD[read256,service,$REMOTE_ISSUER,$HOME_NODE,1]}"
read -r spread_svc _ <<<"${RD[read256,service,$REMOTE_ISSUER,all,1]}"
read -r spread_map _ <<<"${RD[read256,mapped,$REMOTE_ISSUER,all,1]}"
echo "READ256 of $((VARS * NODES)) variables spread over all $NODES homes, one thread on node $REMOTE_ISSUER: $(printf '%.0f' "$spread_svc")/s through"
echo "  the services, $(printf '%.0f' "$spread_map")/s through mappings; against READ256 to one polling home through its service"
echo "  (node $REMOTE_ISSUER -> node $HOME_NODE, $(printf '%.0f' "$one")/s): spread through mappings $(calc %.2f "$spread_map / $one")x (issue 31: goal >= 0.5),"
echo "  spread through the services $(calc %.2f "$spread_svc / $one")x"
echo "Bulk-read bandwidth, one thread, one transfer at a time (MB/s; pieces of at most a page):"
printf '  %-22s' "bytes per read"; for len in "${LENS[@]}"; do printf ' %9s' "$len"; done; echo
for issuer in "$REMOTE_ISSUER" "$HOME_NODE"; do
  printf '  %-22s' "node $issuer -> node $HOME_NODE"
  for len in "${LENS[@]}"; do printf ' %9.2f' "${BW[$issuer,$len]}"; done
  echo
done
echo
bench_tcg_note "$NODES"
} | tee "$OUT/summary.txt"

# ---- plot -------------------------------------------------------------------------------------
bench_results "$UNIMEM_ROOT/scripts/bench/plot_gsas.py" "${GSAS_BENCH_NO_PLOT:-0}"
