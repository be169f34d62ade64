#!/usr/bin/env bash
# Mailbox latency benchmark on its own 3-node cluster (run directory build/bench-cluster, or
# $BENCH_RUN; never the cluster of UNIMEM_RUN): for 8, 16 and 25-byte payloads, cross-node
# ping-pong (node 0 <-> node 2) with poll(2) and with blocking RECV, same-node ping-pong
# (node 1), 64-bit kernel messages, and a pipe / eventfd ping-pong between two threads in the
# same VM as the baseline. Prints a table of half round-trip times and message rates.
#
#   scripts/bench/mailbox.sh      env: BENCH_COUNT (2000 timed round trips per run),
#                                      BENCH_WARMUP (50), BENCH_RUN (run directory)
# Needs `make` (modules incl. unimem_mailbox.ko, and the user-space tools) first.
source "$(dirname "$0")/../lib/common.sh"
RUN=${BENCH_RUN:-$UNIMEM_BUILD/bench-cluster}
export UNIMEM_RUN=$RUN
CLUSTER=$UNIMEM_ROOT/scripts/cluster
COUNT=${BENCH_COUNT:-2000}
WARMUP=${BENCH_WARMUP:-50}
SIZES=(8 16 25)
# The seed's hardware figure, for reference only.
SEED_HOP_US=1.2

on() { local n=$1; shift; "$CLUSTER" exec "$n" --timeout "${TIMEOUT:-900}" -- "$@"; }
# kv KEY LINE: the value of KEY in a "RESULT k=v ..." line.
kv() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$2"; }

[ -f "$UNIMEM_ROOT/kernel/mailbox/unimem_mailbox.ko" ] || die "kernel/mailbox/unimem_mailbox.ko missing: run 'make' first"
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
  on 0 "unimem-mbox kserve --count $((COUNT + WARMUP)) --echo </dev/null >/tmp/bench-kserve.log 2>&1 &"
  on 0 "for i in \$(seq 150); do grep -q '^bound ' /tmp/bench-kserve.log && exit 0; sleep 0.2; done; exit 1" ||
    die "kserve on node 0 did not start"
  on 2 "unimem-mbox kping --node 0 --count $COUNT --warmup $WARMUP --timeout 900" | grep '^RESULT'
  on 0 "for i in \$(seq 150); do grep -q '^kserve: ' /tmp/bench-kserve.log && exit 0; sleep 0.2; done; exit 1" ||
    die "kserve on node 0 did not finish"
}

rows=()
# row SIZE LABEL RESULT_LINE
row() { [ -n "$3" ] || die "no result for $2 ($1 B)"; rows+=("$1|$2|$3"); }
for size in "${SIZES[@]}"; do
  # Polled: both sides busy-poll nonblocking RECV; interrupt-driven: they sleep until the
  # doorbell wakes them (in RECV, or in poll(2)).
  log "payload $size B: cross-node busy-polled"
  r=$(mbox_ping 2 0 "$size" --spin); row "$size" "mailbox cross-node, polled" "$r"
  log "payload $size B: cross-node interrupt (blocking RECV)"
  r=$(mbox_ping 2 0 "$size" --block); row "$size" "mailbox cross-node, irq/block" "$r"
  log "payload $size B: cross-node interrupt (poll)"
  r=$(mbox_ping 2 0 "$size" --poll); row "$size" "mailbox cross-node, irq/poll" "$r"
  log "payload $size B: same-node blocking"
  r=$(mbox_ping 1 1 "$size" --block); row "$size" "mailbox same-node, block" "$r"
  if [ "$size" = 8 ]; then
    log "64-bit kernel messages cross-node"
    r=$(mbox_kping); row "$size" "kernel msg cross-node" "$r"
  fi
  log "payload $size B: baselines"
  base=$(on 0 "unimem-mbox bench-baseline --count $COUNT --warmup $WARMUP --size $size")
  row "$size" "pipe, 2 threads" "$(grep '^RESULT.* mode=pipe ' <<<"$base")"
  row "$size" "eventfd, 2 threads" "$(grep '^RESULT.* mode=eventfd ' <<<"$base")"
done

# As scripts/cluster decides it: KVM only where a hardware KVM module is loaded.
if [ -n "${UNIMEM_ACCEL:-}" ]; then accel=$UNIMEM_ACCEL
elif [ -w /dev/kvm ] && { [ -d /sys/module/kvm_intel ] || [ -d /sys/module/kvm_amd ]; }; then accel=kvm
else accel=tcg; fi
echo
echo "unimem mailbox benchmark: 3 nodes ($accel), ${UNIMEM_SMP:-1} vCPU each, $(nproc) host cores;" \
  "$COUNT timed round trips per row after $WARMUP warm-up"
echo "half-RTT = half a round trip (one hop incl. wake-up); msgs/s counts both directions"
printf '%-7s | %-29s | %12s | %12s | %10s | %10s\n' payload mode "half-RTT med" "half-RTT avg" msgs/s "x eventfd"
printf '%s\n' "--------+-------------------------------+--------------+--------------+------------+-----------"
for size in "${SIZES[@]}"; do
  ev=""
  for r in "${rows[@]}"; do
    IFS='|' read -r s label line <<<"$r"
    [ "$s" = "$size" ] && [ "$label" = "eventfd, 2 threads" ] && ev=$(kv median_us "$line")
  done
  for r in "${rows[@]}"; do
    IFS='|' read -r s label line <<<"$r"
    [ "$s" = "$size" ] || continue
    med=$(kv median_us "$line") avg=$(kv mean_us "$line") rate=$(kv msgs_per_s "$line")
    ratio=$(awk -v a="$med" -v b="$ev" 'BEGIN { if (b > 0 && a != "") printf "%.2f", a / b; else print "-" }')
    printf '%-7s | %-29s | %9s us | %9s us | %10s | %10s\n' "$s B" "$label" "${med:--}" "${avg:--}" "${rate:--}" "$ratio"
  done
done
echo
echo "Reference: seed hardware ${SEED_HOP_US} us per hop. Seed 000 Table 1 measures Fetch&Add at"
echo "2.6 us (same node) / 4.6 us (remote), two packets each, i.e. ~1.3 / ~2.3 us per packet."
echo "These TCG figures are NOT comparable to hardware: every guest instruction is emulated, a"
echo "doorbell is an eventfd through the host scheduler, and 3 VMs share $(nproc) host cores."
echo "Compare rows with each other and with the eventfd/pipe baselines of the same VM only."
