#!/usr/bin/env bash
# OpenFAM benchmark (docs/FAM.md) on its own 5-node cluster (run directory build/bench-fam, or
# $BENCH_RUN), every node running the base modules, kram-daemon, unimem_gsas and gsasd as
# tests/cluster/fam.sh sets them up; famd on node 0, restarted on a fresh state file with 1, 2
# and 4 memory servers (--lenders 1 / 1,2 / 1,2,3,4). scripts/bench/fam_bench.c, built with
# famcc and libgsas, measures in one process, with the memory servers' baseline in that process:
#   - latency (famd with 1 server): fam_get and fam_put of 256 B against gsas_bulk_read and
#     gsas_bulk_write of 256 B to a GSAS page on the item's server, and gsas_nop (the bare round
#     trip), from node 0 (item remote) and node 1 (item local); the ratios fam/GSAS, goal <= 1.3
#     (the seed reports ~1 us of software over the fabric round trip);
#   - throughput (every server count, from node 0): fam_get / fam_put of 4 KiB - 4 MiB over 2
#     items of 4 MiB per server, interleaved (64 KiB stripes over every server) or whole (famd
#     deals the items round-robin), with FAM_BENCH_THREADS threads; placement "even": each
#     thread goes through the items (so the servers) in turn, "random": each transfer to an item
#     picked at random, so the servers' shares and order are uneven (the seed's Figures 3, 4
#     and 7); the ratio to the same point with 1 server;
#   - fam_map (1 server): memcpy loads and stores of 256 B - 1 MiB through the mapping of an item
#     against a malloc'd buffer, on node 1 (item local) and node 0 (item on another node,
#     mapped with the home's approval); the ratio mapping/local.
# Every run (FAM_BENCH_RUNS, default 3) measures everything, the server counts and
# configurations in an order rotated per run; a figure is the median over the runs of each
# run's median, a ratio the median of the per-run ratios.
# Writes environment.csv, runs.csv (every measurement of every run), summary.csv (per point:
# runs, median_us, mb_per_s with min/max over the runs, ratio, its baseline and goal),
# summary.txt and fam.png to build/bench/fam/<UTC timestamp>/ (FAM_BENCH_OUT), and prints the
# summary. Under TCG absolute times mean little: compare the ratios.
#   scripts/bench/fam.sh
#   env: FAM_BENCH_RUNS (3), FAM_BENCH_REPS (100: latency operations and map samples per run;
#        throughput transfers per thread and size, at most 8 MiB of them and at least 3),
#        FAM_BENCH_THREADS ("1 4"; a run with more than one thread that fails is logged in
#        failures.txt and skipped), FAM_BENCH_NO_PLOT=1, BENCH_RUN, FAM_BENCH_OUT.
# Needs `make` (modules and user-space tools, libunimem_fam.so and libgsas.so) first. The plot
# uses matplotlib from a venv under the cache directory, installed on first use with pip;
# without it the CSVs are still written.
# shellcheck source=scripts/lib/common.sh
source "$(dirname "$0")/../lib/common.sh"
# shellcheck source=scripts/lib/bench.sh
source "$(dirname "$0")/../lib/bench.sh"
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) sed -n '2,/^# shellcheck/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0;;
    *) die "unknown option $1 (--help lists them)";;
  esac
done
RUN=${BENCH_RUN:-$UNIMEM_BUILD/bench-fam}
export UNIMEM_RUN=$RUN
CLUSTER=$UNIMEM_ROOT/scripts/cluster
NODES=5
REPS=${FAM_BENCH_REPS:-100}
RUNS=${FAM_BENCH_RUNS:-3}
read -ra THREADS <<<"${FAM_BENCH_THREADS:-1 4}"
[ "${#THREADS[@]}" -gt 0 ] || die "FAM_BENCH_THREADS is empty"
for v in "$REPS" "$RUNS" "${THREADS[@]}"; do [[ "$v" =~ ^[1-9][0-9]*$ ]] || die "not a positive number: '$v'"; done
for v in "${THREADS[@]}"; do [ "$v" -le 64 ] || die "FAM_BENCH_THREADS: at most 64 threads (fam_bench's limit)"; done
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
OUT=${FAM_BENCH_OUT:-$UNIMEM_BUILD/bench/fam/$STAMP}
# famd's lenders for 1, 2 and 4 memory servers; node 0 runs famd and the throughput client.
SERVER_SETS=("1" "1,2" "1,2,3,4")
# Throughput configurations: placement:interleave.
TPUT_CONFIGS=(even:0 even:1 random:0 random:1)

bench_needs kernel/mailbox/unimem_mailbox.ko kernel/gsas/unimem_gsas.ko target/release/famd \
  target/release/gsasd target/release/kram-daemon target/release/unimem-gsas \
  target/release/libunimem_fam.so target/release/libgsas.so
"$UNIMEM_ROOT/userspace/fam/fam-pc.sh" >/dev/null
GSAS_PC=$("$UNIMEM_ROOT/userspace/gsas/gsas-pc.sh")
mkdir -p "$OUT"
log "starting a $NODES-node cluster in $RUN; results in $OUT"
"$CLUSTER" up -n "$NODES"
BG=famb
TIMEOUT=900
# shellcheck source=tests/cluster/lib.sh
source "$UNIMEM_ROOT/tests/cluster/lib.sh"
STATE=/var/lib/unimem/famd.json
FAMD_READY='famd: serving on node 0 interface 62'
# Guest shell code: no fam_bench left, famd stopped and gone.
STOP_FAM="killall -TERM fam_bench 2>/dev/null; killall -TERM famd 2>/dev/null; for i in \$(seq 100); do pidof famd fam_bench >/dev/null || break; sleep 0.1; done; killall -KILL fam_bench 2>/dev/null; true"
# Only a cluster this script started is stopped (up refuses to start over a running one).
cleanup() {
  stop_all "$STOP_FAM; $STOP_GSASD; $STOP_DAEMON"
  bg_cleanup
  "$CLUSTER" down >/dev/null 2>&1 || true
}
trap cleanup EXIT

log "copying famd, the GSAS tools, libunimem_fam.so and libgsas.so; building fam_bench"
share_bins famd gsasd kram-daemon unimem-gsas
share_lib unimem_fam
share_lib gsas
gsas_flags=$(PKG_CONFIG_PATH=$(dirname "$GSAS_PC") pkg-config --cflags --libs gsas)
for a in $(cluster_arches); do
  # The architecture's own library directory first: the .pc files' are the x86_64 build's.
  # shellcheck disable=SC2086 # the flags are words
  CC=$(arch_cc "$a") FAMCC_RPATH=/opt/unimem/lib "$UNIMEM_ROOT/userspace/fam/famcc" -std=gnu11 -O2 \
    -Wall -Wextra -Werror -pthread -L"$(userspace_bin "$a")" -o "$(arch_share "$a")/bin/fam_bench" \
    "$UNIMEM_ROOT/scripts/bench/fam_bench.c" $gsas_flags || die "famcc fam_bench.c ($a)"
done

log "every node: base modules, kram-daemon, unimem_gsas, gsasd; /etc/unimem/fam.conf"
fork_nodes_up /tmp/gsasd
for n in $(seq 0 $((NODES - 1))); do
  on "$n" "mkdir -p /etc/unimem && printf '# famd runs on node 0\\nfamd_node = 0\\n' > /etc/unimem/fam.conf"
done

# famd_with LENDERS: famd (re)started on node 0 on a fresh state file, lending from LENDERS.
famd_with() {
  on 0 "$STOP_FAM; mkdir -p $(dirname "$STATE") && rm -f $STATE $STATE.tree"
  bg 0 famd "famd --state $STATE --lenders $1"
  wait_log 0 famd "$FAMD_READY" 30
}

bench_environment "$OUT/environment.csv" "$NODES" "reps=$REPS" "runs=$RUNS" "threads=${THREADS[*]}" \
  "servers=1 2 4" "famd_node=0" "host_load=$(cut -d' ' -f1-3 /proc/loadavg)"
echo "run,part,servers,placement,interleave,threads,client_node,item_node,op,size,reps,median_us,p25_us,p75_us,mb_per_s" >"$OUT/runs.csv"
: >"$OUT/failures.txt"

# measure RUN PART SERVERS PLACEMENT INTERLEAVE NODE ARGS: fam_bench ARGS on NODE; its RESULT
# lines appended to runs.csv. Prints nothing; fails (status 1, output in FAM_OUT) if the
# program does or its results are incomplete.
measure() {
  local run=$1 part=$2 servers=$3 place=$4 il=$5 node=$6 args=$7
  FAM_OUT=$(on_may_fail "$node" "/opt/unimem/bin/fam_bench $args 2>&1; echo status=\$?") || true
  grep -q '^status=0$' <<<"$FAM_OUT" || return 1
  grep -q "^RESULT part=$part " <<<"$FAM_OUT" || return 1
  sed -n "s/^RESULT \(part=$part \)/\1/p" <<<"$FAM_OUT" | awk -v r="$run" -v s="$servers" -v p="$place" -v il="$il" '{
    for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
    print r "," v["part"] "," s "," p "," il "," v["threads"] "," v["client"] "," v["item_node"] "," v["op"] "," v["size"] "," v["reps"] "," v["median_us"] "," v["p25_us"] "," v["p75_us"] "," v["mb_per_s"]
  }' >>"$OUT/runs.csv"
}
# must RUN PART SERVERS PLACEMENT INTERLEAVE NODE ARGS: measure, or the benchmark ends.
must() {
  measure "$@" || die "run $1: fam_bench $7 on node $6 failed: $FAM_OUT"
}

for run in $(seq 1 "$RUNS"); do
  for set in $(rotated "$run" "${SERVER_SETS[@]}"); do
    servers=$(tr ',' '\n' <<<"$set" | wc -l)
    log "run $run/$RUNS: famd with $servers memory server(s) (lenders $set)"
    famd_with "$set"
    if [ "$servers" = 1 ]; then
      for node in $(rotated "$run" 0 1); do
        log "run $run/$RUNS: 256 B latency from node $node (item on node 1)"
        must "$run" lat 1 - 0 "$node" "lat $REPS"
        log "run $run/$RUNS: fam_map load/store from node $node (item on node 1)"
        must "$run" map 1 - 0 "$node" "map $REPS"
      done
    fi
    for t in "${THREADS[@]}"; do
      for c in $(rotated "$run" "${TPUT_CONFIGS[@]}"); do
        place=${c%:*} il=${c#*:}
        log "run $run/$RUNS: throughput, $servers server(s), $place, interleave $il, $t thread(s)"
        if [ "$t" = 1 ]; then
          must "$run" tput "$servers" "$place" "$il" 0 "tput $REPS $t $place $il $servers"
        elif ! measure "$run" tput "$servers" "$place" "$il" 0 "tput $REPS $t $place $il $servers"; then
          log "fam_bench with $t threads failed (failures.txt): skipped"
          printf 'run %s, %s servers, %s, interleave %s, %s threads:\n%s\n\n' \
            "$run" "$servers" "$place" "$il" "$t" "$FAM_OUT" >>"$OUT/failures.txt"
        fi
      done
    done
  done
done
on 0 "$STOP_FAM"

# summary.csv: per point, the median over the runs (n/a where nothing was measured), and the
# median over the runs of each run's ratio to its baseline: lat fam/GSAS time, map mapping/local
# time, tput throughput over the same point with 1 server.
awk -F, 'NR == 1 { next }
  { k = $2 "," $3 "," $4 "," $5 "," $6 "," $7 "," $9 "," $10
    if (!(k in seen)) { seen[k] = 1; keys[++nk] = k }
    if ($12 != "n/a") { U[k] = U[k] " " $12; B[k] = B[k] " " $15; n[k]++ }
    us[$1, k] = $12; mb[$1, k] = $15; runs[$1] = 1 }
  function med(s,   a, m, i, j, t) { m = split(s, a, " "); if (m == 0) return "n/a"
    for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
    return m % 2 ? a[(m + 1) / 2] : sprintf("%.3f", (a[m / 2] + a[m / 2 + 1]) / 2) }
  function ext(s, hi,   a, m, i, x) { m = split(s, a, " "); if (m == 0) return "n/a"; x = a[1]
    for (i = 2; i <= m; i++) if (hi ? a[i] + 0 > x + 0 : a[i] + 0 < x + 0) x = a[i]; return x }
  function num(x) { return x != "" && x != "n/a" && x + 0 > 0 }
  END {
    print "part,servers,placement,interleave,threads,client_node,op,size,runs,median_us,mb_per_s,min_mb_per_s,max_mb_per_s,ratio,baseline,goal"
    base["lat,fam_get"] = "gsas_read"; base["lat,fam_put"] = "gsas_write"
    base["map,map_load"] = "local_load"; base["map,map_store"] = "local_store"
    for (i = 1; i <= nk; i++) {
      k = keys[i]; split(k, f, ","); b = ""; bname = ""; goal = ""; rs = ""
      if ((f[1] "," f[7]) in base) {
        bname = base[f[1] "," f[7]]; b = f[1] "," f[2] "," f[3] "," f[4] "," f[5] "," f[6] "," bname "," f[8]
        if (f[1] == "lat") goal = "<= 1.3"
      } else if (f[1] == "tput" && f[2] != 1) {
        bname = "1 server"; b = f[1] ",1," f[3] "," f[4] "," f[5] "," f[6] "," f[7] "," f[8]
      }
      if (b != "") for (r in runs) {
        if (f[1] == "tput") { x = mb[r, k]; y = mb[r, b] } else { x = us[r, k]; y = us[r, b] }
        if (num(x) && num(y)) rs = rs " " sprintf("%.3f", x / y)
      }
      print k "," (n[k] + 0) "," med(U[k]) "," med(B[k]) "," ext(B[k], 0) "," ext(B[k], 1) "," (b == "" ? "" : med(rs)) "," bname "," goal
    } }' "$OUT/runs.csv" >"$OUT/summary.tmp"
{ head -1 "$OUT/summary.tmp"; tail -n +2 "$OUT/summary.tmp" |
    sort -t, -k1,1 -k2,2n -k3,3 -k4,4n -k5,5n -k6,6n -k7,7 -k8,8n; } >"$OUT/summary.csv"
rm -f "$OUT/summary.tmp"

{
  column -s, -t <"$OUT/summary.csv"
  echo
  awk -F, 'NR > 1 && $16 != "" {
      printf "%s %s B / %s, from node %s: %s (goal %s)%s\n", $7, $8, $15, $6, $14, $16,
        ($14 == "n/a" || $14 == "") ? "" : ($14 + 0 <= 1.3 ? ": met" : ": missed") }' "$OUT/summary.csv"
  awk -F, 'NR > 1 && $1 == "map" && $14 == "n/a" && $7 ~ /^map_/ { na[$6] = 1 }
    END { for (n in na) print "fam_map from node " n ": n/a (the item is on another node)" }' "$OUT/summary.csv"
  if [ -s "$OUT/failures.txt" ]; then echo "some multi-threaded throughput runs failed: $OUT/failures.txt"; fi
  bench_tcg_note "$NODES"
} | tee "$OUT/summary.txt"

[ -s "$OUT/failures.txt" ] || rm -f "$OUT/failures.txt"
bench_results "$UNIMEM_ROOT/scripts/bench/plot_fam.py" "${FAM_BENCH_NO_PLOT:-0}"
