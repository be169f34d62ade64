#!/usr/bin/env bash
# A/B of the kernel modules: this tree's against those of an earlier commit (REF), both built
# for the same kernel and swapped in turn on one 3-node cluster, with the same user-space tools,
# so that a difference is the modules' alone and both sides see the same machine at about the
# same time. Each round loads one side's modules on every node (eusrvmem, mailbox, gsas, kram),
# runs the workloads, then the other side's; the side that goes first alternates per round.
#   - GSAS: median round trip of NOP and Fetch&Add on the local service (node 1 to 1), NOP,
#     Fetch&Add and READ256 to another node's service (0 to 1) (`unimem-gsas-test bench`; the median
#     of AB_GSAS_REPEATS (3) processes, since one process's figure depends on whether the home
#     happened to poll through its run);
#   - GSAS throughput: Fetch&Add/s of 4 threads (2 on node 0, 2 on node 2) to one word of node 1,
#     which then serves back to back: its cost per request, free of the wake-up noise;
#   - mailbox: median half round trip of a 16-byte user ping-pong, node 0 to 2 (poll);
#   - KRAM: 4 KiB random read and write IOPS at QD1 on /dev/kram0 (32 MiB lent by node 2),
#     through the DMA engine (transfermode=1) and the CPU (0) (fio).
# The figure of a workload is new/old within a round (latency: new time / old time; IOPS: old
# IOPS / new IOPS, so above 1 is always "slower"); the summary gives the median, min and max of
# that ratio over the rounds. Writes environment.csv, runs.csv (every figure), summary.csv,
# summary.txt and modules_ab.png to build/bench/modules_ab/<UTC timestamp>/ (AB_BENCH_OUT).
#   scripts/bench/modules_ab.sh [--ref COMMIT] [--new COMMIT] [--rounds N] [--count N] [--runtime S]
#                               [--no-kram]
#     --ref      the baseline's commit (3874427: before issue 29's kernel changes)
#     --new      another commit's modules instead of this tree's (to find which commit between
#                two costs: the same user-space tools, this tree's, drive both)
#     --rounds   rounds (7)     --count  GSAS requests / mailbox round trips per figure (3000)
#     --runtime  seconds per fio run (3)   --no-kram  GSAS and mailbox only
#   env: AB_BENCH_OUT, AB_BENCH_NO_PLOT=1, AB_GSAS_REPEATS (3), BENCH_RUN (cluster run directory).
# REF's modules are built once per (commit, kernel) into the cache ($UNIMEM_CACHE/ref-modules)
# from a temporary git worktree (scripts/lib/ref-modules.sh). Needs `make` (this tree's modules
# and tools) first. Under TCG compare the ratios, not the times.
# shellcheck source=scripts/lib/common.sh
source "$(dirname "$0")/../lib/common.sh"
# shellcheck source=scripts/lib/bench.sh
source "$(dirname "$0")/../lib/bench.sh"
# shellcheck source=scripts/lib/ref-modules.sh
source "$(dirname "$0")/../lib/ref-modules.sh"
REF=3874427 NEW='' ROUNDS=7 COUNT=3000 RUNTIME=3 DO_KRAM=1 GSAS_REPEATS=${AB_GSAS_REPEATS:-3}
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) sed -n '2,/^# shellcheck/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0;;
    --ref) REF=${2:?--ref needs a commit}; shift 2;;
    --new) NEW=${2:?--new needs a commit}; shift 2;;
    --rounds) ROUNDS=${2:?--rounds needs a count}; shift 2;;
    --count) COUNT=${2:?--count needs a count}; shift 2;;
    --runtime) RUNTIME=${2:?--runtime needs seconds}; shift 2;;
    --no-kram) DO_KRAM=0; shift;;
    *) die "unknown option $1 (--help lists them)";;
  esac
done
for v in "$ROUNDS" "$COUNT" "$RUNTIME" "$GSAS_REPEATS"; do
  [[ "$v" =~ ^[1-9][0-9]*$ ]] || die "not a positive number: '$v'"
done
REF_SHA=$(git -C "$UNIMEM_ROOT" rev-parse --verify -q "$REF^{commit}") || die "--ref $REF: no such commit"
bench_needs kernel/mailbox/unimem_mailbox.ko kernel/gsas/unimem_gsas.ko kernel/kram/unimem_kram.ko \
  target/release/unimem-gsas target/release/unimem-gsas-test target/release/unimem-mbox target/release/kram-daemon
# The baseline's modules, built for this tree's kernel.
REF_MODS=$(ref_modules "$REF_SHA")
NEW_NAME=''
if [ -n "$NEW" ]; then
  NEW_SHA=$(git -C "$UNIMEM_ROOT" rev-parse --verify -q "$NEW^{commit}") || die "--new $NEW: no such commit"
  NEW_MODS=$(ref_modules "$NEW_SHA")
  NEW_NAME="$NEW (${NEW_SHA:0:12})"
fi

export UNIMEM_RUN=${BENCH_RUN:-$UNIMEM_BUILD/bench-ab}
CLUSTER=$UNIMEM_ROOT/scripts/cluster
OUT=${AB_BENCH_OUT:-$UNIMEM_BUILD/bench/modules_ab/$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$OUT"
log "starting a 3-node cluster in $UNIMEM_RUN"
"$CLUSTER" down >/dev/null 2>&1 || true
"$CLUSTER" up -n 3 --mem-of "0=256M"
trap '"$CLUSTER" down >/dev/null 2>&1 || true' EXIT
# The acceptance tests' helpers: on, kram_daemon, daemon_serving, STOP_DAEMON (they read
# $UNIMEM_RUN).
BG=ab
TIMEOUT=900
# shellcheck source=tests/cluster/lib.sh
source "$UNIMEM_ROOT/tests/cluster/lib.sh"
SHARE=$(run_share "$UNIMEM_RUN" x86_64)
mkdir -p "$SHARE/modules-ref"
cp "$REF_MODS"/*.ko "$SHARE/modules-ref/"
if [ -n "$NEW" ]; then rm -f "$SHARE"/modules/unimem_*.ko; cp "$NEW_MODS"/*.ko "$SHARE/modules/"; fi
bench_environment "$OUT/environment.csv" 3 "ref=${REF_SHA:0:12}" "new=${NEW_SHA:-tree}" "rounds=$ROUNDS" "count=$COUNT" \
  "gsas_repeats=$GSAS_REPEATS" "fio_runtime_s=$RUNTIME"

# Guest shell code: our modules and daemons gone from a node (STOP_DAEMON: the daemon only
# once it took the pools back, or its next start restores them as lent).
UNLOAD="swapoff -a 2>/dev/null; rmmod unimem_kram 2>/dev/null; $STOP_DAEMON
  rmmod unimem_mailbox 2>/dev/null; rmmod unimem_eusrvmem 2>/dev/null; ! lsmod | grep -q '^unimem_'"

# load SIDE: SIDE's modules (modules: this tree's, modules-ref: REF's) on every node, each
# node's kram-daemon (node 2's lends to KRAM as well), GSAS services on nodes 0 and 1.
load() {
  local dir=/opt/unimem/$1 n
  for n in 0 1 2; do
    on "$n" "$UNLOAD" || die "node $n: our modules did not unload"
    on "$n" "insmod $dir/unimem_eusrvmem.ko && insmod $dir/unimem_mailbox.ko" || die "node $n: $1 did not load"
    kram_daemon "$n" --chunks 96
    daemon_serving "$n"
  done
  for n in 0 1; do
    on "$n" "insmod $dir/unimem_gsas.ko" || die "node $n: $1/unimem_gsas.ko did not load"
  done
}

# gsas_us NODE HOME OP: the median over GSAS_REPEATS processes of each one's median round trip.
# One process's figure is bimodal under TCG (the home polls through a whole run, or it does
# not), so one sample per side and round would compare modes, not modules.
gsas_us() {
  local j i medians=()
  for i in $(seq "$GSAS_REPEATS"); do
    j=$(on "$1" "unimem-gsas-test bench --node $2 --op $3 --count $COUNT --reps 1 --warmup 50 --json") || die "gsas bench $*"
    medians+=("$(jv median_us "$j")")
  done
  stats "${medians[@]}" | cut -d' ' -f1
}

# gsas_ops: Fetch&Add/s of two threads on node 0 and two on node 2 to one word of node 1 (one
# page, both processes started at one barrier), median of 3 windows of 1 s: the home serves back
# to back, so its cost per request sets the figure rather than its wake-ups, which make one
# issuer's round trip bimodal. The sum of the two processes' medians.
gsas_ops() {
  local tree=0x0e0009 a n total=0
  a=$(on 0 "unimem-gsas --tree $tree alloc --node 1") || die "gsas throughput: alloc on node 1"
  for n in 0 2; do
    on "$n" "rm -f /tmp/ab-tput.json; unimem-gsas-test --tree $tree throughput --addr $a --op faa --threads 2 --seconds 3 \
             --barrier $((a + 64)) --parties 2 --json >/tmp/ab-tput.json 2>&1 &"
  done
  for n in 0 2; do
    on "$n" "for i in \$(seq 300); do grep -q ops_per_s /tmp/ab-tput.json 2>/dev/null && exit 0; sleep 0.1; done; cat /tmp/ab-tput.json; exit 1" >&2 ||
      die "gsas throughput on node $n did not finish"
    total=$(awk -v t="$total" -v v="$(jv ops_per_s "$(on "$n" "cat /tmp/ab-tput.json")")" 'BEGIN { print t + v }')
  done
  on 0 "unimem-gsas --tree $tree free $a" >/dev/null
  echo "$total"
}

mbox_us() {
  local iface line
  on 2 "rm -f /tmp/ab-srv.log; unimem-mbox serve --count $((COUNT + 50)) </dev/null >/tmp/ab-srv.log 2>&1 &"
  on 2 "for i in \$(seq 150); do grep -q '^iface ' /tmp/ab-srv.log && exit 0; sleep 0.2; done; exit 1" ||
    die "mailbox server on node 2 did not start"
  iface=$(on 2 "awk '/^iface /{print \$2; exit}' /tmp/ab-srv.log")
  line=$(on 0 "unimem-mbox ping --node 2 --iface $iface --count $COUNT --warmup 50 --size 16 --timeout 900" | grep '^RESULT')
  on 2 "for i in \$(seq 150); do grep -q '^served ' /tmp/ab-srv.log && exit 0; sleep 0.2; done; exit 1" ||
    die "mailbox server on node 2 did not finish"
  sed -n 's/.* median_us=\([^ ]*\).*/\1/p' <<<"$line"
}

# kram_iops SIDE MODE: "read write" IOPS (4 KiB, QD1) on /dev/kram0 of SIDE's module.
kram_iops() {
  local rw out=""
  on 0 "insmod /opt/unimem/$1/unimem_kram.ko ninstances=1 size=32 transfermode=$2 &&
        for i in \$(seq 150); do test -b /dev/kram0 && exit 0; sleep 0.2; done; exit 1" ||
    die "$1: /dev/kram0 did not appear (transfermode=$2)"
  on 0 "dd if=/dev/urandom of=/dev/kram0 bs=1M count=32 oflag=direct status=none" || die "could not fill /dev/kram0"
  for rw in randread:8 randwrite:49; do
    out+="$(on 0 "fio --name=b --filename=/dev/kram0 --rw=${rw%:*} --bs=4k --iodepth=1 --ioengine=libaio --direct=1 \
                  --size=32M --time_based --runtime=$RUNTIME --output-format=terse --terse-version=3 2>/dev/null |
                awk -F';' '{print \$${rw#*:}}'") "
  done
  on 0 "rmmod unimem_kram" || die "$1: unimem_kram did not unload"
  echo "$out"
}

echo "round,side,workload,unit,value" >"$OUT/runs.csv"
row() { echo "$1,$2,$3,$4,$5" >>"$OUT/runs.csv"; }
for round in $(seq "$ROUNDS"); do
  for side in $(rotated "$round" modules modules-ref); do
    name=$([ "$side" = modules ] && echo new || echo old)
    load "$side"
    for spec in "1 1 nop local" "1 1 faa local" "0 1 nop remote" "0 1 faa remote" "0 1 read256 remote"; do
      read -r n h op where <<<"$spec"
      v=$(gsas_us "$n" "$h" "$op")
      [[ "$v" =~ ^[0-9.]+$ ]] || die "gsas $op $where printed '$v'"
      row "$round" "$name" "gsas $op $where" us "$v"
    done
    v=$(gsas_ops)
    [[ "$v" =~ ^[0-9.]+$ ]] || die "gsas throughput printed '$v'"
    row "$round" "$name" "gsas faa 4 threads to 1 home" ops "$v"
    v=$(mbox_us)
    [[ "$v" =~ ^[0-9.]+$ ]] || die "mailbox ping printed '$v'"
    row "$round" "$name" "mailbox ping 16B" us "$v"
    if [ "$DO_KRAM" = 1 ]; then
      for mode in 1 0; do
        read -r r w <<<"$(kram_iops "$side" "$mode")"
        [[ "$r$w" =~ ^[0-9]+$ ]] || die "fio on kram (transfermode=$mode) printed '$r $w'"
        row "$round" "$name" "kram randread QD1 tm$mode" iops "$r"
        row "$round" "$name" "kram randwrite QD1 tm$mode" iops "$w"
      done
    fi
    log "round $round/$ROUNDS, $name: $(awk -F, -v r="$round" -v s="$name" '$1 == r && $2 == s { printf "%s %s; ", $3, $5 }' "$OUT/runs.csv")"
  done
done
on 0 "$UNLOAD"; on 1 "$UNLOAD"; on 2 "$UNLOAD"

# Per round the ratio new/old (slower is above 1 for both units), then its median over rounds.
echo "workload,old_median,new_median,unit,ratio_median,ratio_min,ratio_max" >"$OUT/summary.csv"
mapfile -t workloads < <(awk -F, 'NR > 1 && !seen[$3]++ { print $3 }' "$OUT/runs.csv")
for w in "${workloads[@]}"; do
  unit=$(awk -F, -v w="$w" '$3 == w { print $4; exit }' "$OUT/runs.csv")
  mapfile -t ratios < <(awk -F, -v w="$w" '$3 == w { v[$1 "," $2] = $5; r[$1] = 1 }
    END { for (k in r) { o = v[k ",old"]; n = v[k ",new"]; if (o > 0 && n > 0) print (unit == "iops" || unit == "ops" ? o / n : n / o) } }' unit="$unit" "$OUT/runs.csv")
  mapfile -t olds < <(awk -F, -v w="$w" '$3 == w && $2 == "old" { print $5 }' "$OUT/runs.csv")
  mapfile -t news < <(awk -F, -v w="$w" '$3 == w && $2 == "new" { print $5 }' "$OUT/runs.csv")
  old=$(stats "${olds[@]}" | cut -d' ' -f1) new=$(stats "${news[@]}" | cut -d' ' -f1)
  read -r med lo hi <<<"$(stats "${ratios[@]}")"
  echo "$w,$old,$new,$unit,$med,$lo,$hi" >>"$OUT/summary.csv"
done
{
  echo "Modules A/B: ${NEW_NAME:-this tree ($BENCH_COMMIT)} against $REF (${REF_SHA:0:12}), $ROUNDS rounds, $BENCH_ACCEL"
  echo "ratio = new/old time per operation (IOPS, ops: old/new); above 1.05 is more than 5% slower"
  printf '%-28s %12s %12s %6s %8s %18s\n' workload old new unit ratio "[min, max]"
  tail -n +2 "$OUT/summary.csv" | while IFS=, read -r w o n u m lo hi; do
    printf '%-28s %12s %12s %6s %8s %18s\n' "$w" "$o" "$n" "$u" "$m" "[$lo, $hi]"
  done
  bench_tcg_note 3
} | tee "$OUT/summary.txt"
bench_results "$UNIMEM_ROOT/scripts/bench/plot_modules_ab.py" "${AB_BENCH_NO_PLOT:-0}"
