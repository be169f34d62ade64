#!/usr/bin/env bash
# Mailbox latency benchmark on its own 3-node cluster (run directory build/bench-cluster, or
# $BENCH_RUN; never the cluster of UNIMEM_RUN): for 8, 16 and 25-byte payloads, cross-node
# ping-pong (node 0 <-> node 2) with poll(2) and with blocking RECV, same-node ping-pong
# (node 1), 64-bit kernel messages, and a pipe / eventfd ping-pong between two threads in the
# same VM as the baseline. Each configuration runs BENCH_RUNS times, interleaved (every
# configuration of run 1, then of run 2, ...); a ratio to eventfd is taken within a run.
# Writes environment.csv, runs.csv (every run's figures), summary.csv (per payload and mode the
# median [min, max] over the runs of the half round trip, the message rate and the ratio to
# eventfd), summary.txt and mailbox.png to build/bench/mailbox/<UTC timestamp>/
# (MAILBOX_BENCH_OUT), and prints the summary.
#
#   scripts/bench/mailbox.sh      env: BENCH_COUNT (2000 timed round trips per run),
#                                      BENCH_WARMUP (50), BENCH_RUNS (3), BENCH_RUN (run
#                                      directory), MAILBOX_BENCH_OUT, MAILBOX_BENCH_NO_PLOT=1
# Needs `make` (modules incl. unimem_mailbox.ko, and the user-space tools) first.
# shellcheck source=scripts/lib/common.sh
source "$(dirname "$0")/../lib/common.sh"
# shellcheck source=scripts/lib/bench.sh
source "$(dirname "$0")/../lib/bench.sh"
case "${1:-}" in
  -h|--help) sed -n '2,/^# shellcheck/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0;;
  "") ;;
  *) die "unknown option $1 (--help lists them)";;
esac
RUN=${BENCH_RUN:-$UNIMEM_BUILD/bench-cluster}
export UNIMEM_RUN=$RUN
CLUSTER=$UNIMEM_ROOT/scripts/cluster
COUNT=${BENCH_COUNT:-2000}
WARMUP=${BENCH_WARMUP:-50}
RUNS=${BENCH_RUNS:-3}
OUT=${MAILBOX_BENCH_OUT:-$UNIMEM_BUILD/bench/mailbox/$(date -u +%Y%m%dT%H%M%SZ)}
SIZES=(8 16 25)
# The seed's hardware figure, for reference only.
SEED_HOP_US=1.2

on() { local n=$1; shift; "$CLUSTER" exec "$n" --timeout "${TIMEOUT:-900}" -- "$@"; }
# kv KEY LINE: the value of KEY in a "RESULT k=v ..." line.
kv() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$2"; }

bench_needs kernel/mailbox/unimem_mailbox.ko target/release/unimem-mbox target/release/unimem-mbox-test
mkdir -p "$OUT"
log "starting a 3-node cluster in $RUN"
"$CLUSTER" up -n 3
# Only a cluster this script started is stopped (up refuses to start over a running one).
trap '"$CLUSTER" down >/dev/null 2>&1 || true' EXIT
for n in 0 1 2; do
  on "$n" "lsmod | grep -q '^unimem_eusrvmem' || insmod /opt/unimem/modules/unimem_eusrvmem.ko
           lsmod | grep -q '^unimem_mailbox' || insmod /opt/unimem/modules/unimem_mailbox.ko"
done

# mbox_ping SERVER_NODE CLIENT_NODE SIZE MODE: prints the client's RESULT line.
mbox_ping() {
  local srv=$1 cli=$2 size=$3 mode=$4 iface
  on "$srv" "rm -f /tmp/bench-srv.log; unimem-mbox serve --count $((COUNT + WARMUP)) $mode </dev/null >/tmp/bench-srv.log 2>&1 &"
  on "$srv" "for i in \$(seq 150); do grep -q '^iface ' /tmp/bench-srv.log && exit 0; sleep 0.2; done; cat /tmp/bench-srv.log; exit 1" >&2 ||
    die "server on node $srv did not start"
  iface=$(on "$srv" "awk '/^iface /{print \$2; exit}' /tmp/bench-srv.log")
  on "$cli" "unimem-mbox ping --node $srv --iface $iface --count $COUNT --warmup $WARMUP --size $size $mode --timeout 900" | grep '^RESULT'
  # The server ends after count + warmup echoes; wait so the next run starts clean.
  on "$srv" "for i in \$(seq 150); do grep -q '^served ' /tmp/bench-srv.log && exit 0; sleep 0.2; done; cat /tmp/bench-srv.log; exit 1" >&2 ||
    die "server on node $srv did not finish"
}

mbox_kping() {
  on 0 "unimem-mbox-test kserve --count $((COUNT + WARMUP)) --echo </dev/null >/tmp/bench-kserve.log 2>&1 &"
  on 0 "for i in \$(seq 150); do grep -q '^bound ' /tmp/bench-kserve.log && exit 0; sleep 0.2; done; exit 1" ||
    die "kserve on node 0 did not start"
  on 2 "unimem-mbox-test kping --node 0 --count $COUNT --warmup $WARMUP --timeout 900" | grep '^RESULT'
  on 0 "for i in \$(seq 150); do grep -q '^kserve: ' /tmp/bench-kserve.log && exit 0; sleep 0.2; done; exit 1" ||
    die "kserve on node 0 did not finish"
}

# row RUN SIZE LABEL RESULT_LINE: one line of runs.csv.
row() {
  [ -n "$4" ] || die "no result for $3 ($2 B)"
  echo "$1,$2,$3,$(kv median_us "$4"),$(kv mean_us "$4"),$(kv msgs_per_s "$4")" >>"$OUT/runs.csv"
}
echo "run,payload,mode,median_us,mean_us,msgs_per_s" >"$OUT/runs.csv"
for run in $(seq "$RUNS"); do
  for size in "${SIZES[@]}"; do
    # Polled: both sides busy-poll nonblocking RECV; interrupt-driven: they sleep until the
    # doorbell wakes them (in RECV, or in poll(2)).
    log "run $run/$RUNS, payload $size B: cross-node polled, irq/block, irq/poll; same-node; baselines"
    row "$run" "$size" "mailbox cross-node polled" "$(mbox_ping 2 0 "$size" --spin)"
    row "$run" "$size" "mailbox cross-node irq/block" "$(mbox_ping 2 0 "$size" --block)"
    row "$run" "$size" "mailbox cross-node irq/poll" "$(mbox_ping 2 0 "$size" --poll)"
    row "$run" "$size" "mailbox same-node block" "$(mbox_ping 1 1 "$size" --block)"
    if [ "$size" = 8 ]; then
      row "$run" "$size" "kernel msg cross-node" "$(mbox_kping)"
    fi
    base=$(on 0 "unimem-mbox-test bench-baseline --count $COUNT --warmup $WARMUP --size $size")
    row "$run" "$size" "pipe 2 threads" "$(grep '^RESULT.* mode=pipe ' <<<"$base")"
    row "$run" "$size" "eventfd 2 threads" "$(grep '^RESULT.* mode=eventfd ' <<<"$base")"
  done
done
bench_environment "$OUT/environment.csv" 3 "runs=$RUNS" "count=$COUNT" "warmup=$WARMUP"

# summary.csv: per payload and mode, medians [min, max] over the runs; the ratio to eventfd of
# the same payload is taken within each run.
awk -F, -v OFS=, '
  function med(s,   a, n, i, j, t) { n = split(s, a, " ")
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
    lo = a[1]; hi = a[n]; return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
  NR > 1 { k = $2 "," $3; if (!(k in seen)) { seen[k] = 1; order[++n] = k }
           us[k] = us[k] " " $4; rate[k] = rate[k] " " $6; v[$1, k] = $4; runs[$1] = 1 }
  END { print "payload,mode,half_rtt_us,half_rtt_min_us,half_rtt_max_us,msgs_per_s,x_eventfd,x_eventfd_min,x_eventfd_max"
    for (i = 1; i <= n; i++) { k = order[i]; split(k, p, ","); r = ""
      for (run in runs) { e = v[run, p[1] ",eventfd 2 threads"]; if (e > 0) r = r " " v[run, k] / e }
      m = med(us[k]); l = lo; h = hi; q = med(rate[k])
      x = r == "" ? "" : sprintf("%.2f,%.2f,%.2f", med(r), lo, hi)
      printf "%s,%.1f,%.1f,%.1f,%.0f,%s\n", k, m, l, h, q, (x == "" ? ",," : x) } }' \
  "$OUT/runs.csv" >"$OUT/summary.csv"

{
  echo "unimem mailbox benchmark: 3 nodes ($BENCH_ACCEL), ${UNIMEM_SMP:-1} vCPU each, $(nproc) host cores;" \
    "$COUNT timed round trips per run after $WARMUP warm-up, $RUNS runs"
  echo "half-RTT = half a round trip (one hop incl. wake-up), median over runs [min-max]; msgs/s counts both directions"
  printf '%-7s | %-29s | %-24s | %10s | %-18s\n' payload mode "half-RTT us [min-max]" msgs/s "x eventfd"
  tail -n +2 "$OUT/summary.csv" | while IFS=, read -r size mode m l h rate x xl xh; do
    ratio=-; [ -n "$x" ] && ratio="$x [$xl-$xh]"
    printf '%-7s | %-29s | %-24s | %10s | %-18s\n' "$size B" "$mode" "$m [$l-$h]" "$rate" "$ratio"
  done
  echo
  echo "Reference: seed hardware ${SEED_HOP_US} us per hop. Seed 000 Table 1 measures Fetch&Add at"
  echo "2.6 us (same node) / 4.6 us (remote), two packets each, i.e. ~1.3 / ~2.3 us per packet."
  echo "These TCG figures are NOT comparable to hardware: every guest instruction is emulated, a"
  echo "doorbell is an eventfd through the host scheduler, and 3 VMs share $(nproc) host cores."
  echo "Compare rows with each other and with the eventfd/pipe baselines of the same VM only."
} | tee "$OUT/summary.txt"
bench_results "$UNIMEM_ROOT/scripts/bench/plot_mailbox.py" "${MAILBOX_BENCH_NO_PLOT:-0}"
