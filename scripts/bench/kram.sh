#!/usr/bin/env bash
# KRAM benchmark (docs/ARCHITECTURE.md, KRAM): /dev/kram0 (32 MiB lent by node 2) against brd
# and zram of the same size in the same VM, and swap on KRAM against zram and a virtio disk.
#   - fio 4 KiB random read and write at QD1 and QD32, both transfer modes: every device is
#     filled with random data first (an unwritten brd or zram serves zero pages without a copy),
#     then each repetition measures kram, brd and zram back to back, in an order that rotates
#     from one repetition to the next; a ratio is taken within a repetition, then the median
#     (and the spread) over the repetitions.
#   - a swap-bound program (unimem-memtest, 1.5x node 0's 96 MiB RAM, every byte verified) with
#     compressible data on KRAM swap and on zram swap, and with incompressible data on KRAM swap
#     and on swap on two virtio disks backed by host files (`scripts/cluster up --disk-of`):
#     "disk" goes through the host's page cache, so it is host RAM behind virtio, faster than
#     any disk; "disk_direct" bypasses it (cache=none), so its I/O reaches the host's storage,
#     as a real disk's would.
# All of it for each vCPU count (UNIMEM_SMP of every node), on a fresh 3-node cluster each.
# Writes environment.csv, fio_runs.csv, swap_runs.csv, summary.csv, summary.txt and kram.png
# to build/bench/kram/<UTC timestamp>/ (KRAM_BENCH_OUT) and prints the summary.
#   scripts/bench/kram.sh [--runtime S] [--reps N] [--smp "1 2"] [--no-fio] [--no-swap] [--swap-mode M]
#   scripts/bench/kram.sh --summary DIR   summary and plot of an earlier run's CSVs again
#     --runtime  seconds per fio run (5)       --reps  repetitions (5)
#     --smp      vCPU counts to run ("1 2")    --no-fio / --no-swap  skip a part
#     --swap-mode  KRAM's transfermode for the swap part (1: the DMA engine, 0: the CPU)
#   env: KRAM_BENCH_OUT, KRAM_BENCH_NO_PLOT=1, BENCH_RUN (cluster run directory).
# Needs `make` (modules and user-space tools) first. Under TCG compare ratios, not IOPS.
# shellcheck source=scripts/lib/common.sh
source "$(dirname "$0")/../lib/common.sh"
# shellcheck source=scripts/lib/bench.sh
source "$(dirname "$0")/../lib/bench.sh"
RUNTIME=5 REPS=5 SMPS="1 2" DO_FIO=1 DO_SWAP=1 SUMMARY_OF='' SWAP_MODE=1
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) sed -n '2,/^# shellcheck/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0;;
    --runtime) RUNTIME=${2:?--runtime needs seconds}; shift 2;;
    --reps) REPS=${2:?--reps needs a count}; shift 2;;
    --smp) SMPS=${2:?--smp needs vCPU counts}; shift 2;;
    --no-fio) DO_FIO=0; shift;;
    --no-swap) DO_SWAP=0; shift;;
    --swap-mode) SWAP_MODE=${2:?--swap-mode needs 0 or 1}; shift 2
                 [[ "$SWAP_MODE" =~ ^[01]$ ]] || die "--swap-mode is 0 or 1, not '$SWAP_MODE'";;
    --summary) SUMMARY_OF=${2:?--summary needs a result directory}; shift 2
               [ -f "$SUMMARY_OF/fio_runs.csv" ] || die "$SUMMARY_OF holds no fio_runs.csv";;
    *) die "unknown option $1 (--help lists them)";;
  esac
done
for v in "$RUNTIME" "$REPS" $SMPS; do
  [[ "$v" =~ ^[1-9][0-9]*$ ]] || die "not a positive number: '$v'"
done
if [ -z "$SUMMARY_OF" ]; then
  bench_needs kernel/kram/unimem_kram.ko target/release/kram-daemon target/release/unimem-memtest
fi
export UNIMEM_RUN=${BENCH_RUN:-$UNIMEM_BUILD/bench-kram}
CLUSTER=$UNIMEM_ROOT/scripts/cluster
OUT=${KRAM_BENCH_OUT:-$UNIMEM_BUILD/bench/kram/$(date -u +%Y%m%dT%H%M%SZ)}
MODS=/opt/unimem/modules
on() { local n=$1; shift; "$CLUSTER" exec "$n" --timeout 900 -- "$@"; }
trap '"$CLUSTER" down >/dev/null 2>&1 || true' EXIT

# start_cluster SMP NODE0_MEM [DISK]: a fresh cluster of SMP-vCPU nodes whose node 2 lends;
# with DISK, node 0 gets two disks of that size: /dev/vdb through the host's page cache,
# /dev/vdc direct.
start_cluster() {
  local disk=()
  [ -n "${3:-}" ] && disk=(--disk-of "0=$3" --disk-of "0=$3,direct")
  "$CLUSTER" down >/dev/null 2>&1 || true
  UNIMEM_SMP=$1 "$CLUSTER" up -n 3 --mem-of "0=$2" "${disk[@]}"
  for n in 0 1 2; do on "$n" "insmod $MODS/unimem_eusrvmem.ko && insmod $MODS/unimem_mailbox.ko"; done
  on 2 "kram-daemon --chunks 128 >/dev/null 2>&1 &"
  on 2 "for i in \$(seq 50); do kram-daemon --status >/dev/null 2>&1 && exit 0; sleep 0.2; done; exit 1" ||
    die "kram-daemon did not start on node 2"
}

# load_kram MODE: /dev/kram0 (32 MiB) and /dev/kram1 (64 MiB) from node 2.
load_kram() {
  on 0 "insmod $MODS/unimem_kram.ko ninstances=2 size=32,64 transfermode=$1 &&
        for i in \$(seq 150); do test -b /dev/kram0 && test -b /dev/kram1 && exit 0; sleep 0.2; done; exit 1" ||
    die "kram devices did not appear (transfermode=$1)"
}

# prefill DEV: random (incompressible) data over all of it.
prefill() {
  on 0 "dd if=/dev/urandom of=/dev/$1 bs=1M count=32 oflag=direct status=none" || die "could not fill /dev/$1"
}

# iops DEV RW QD: IOPS of a 4 KiB random RW (randread|randwrite) run at queue depth QD.
iops() {
  local field=8; [ "$2" = randwrite ] && field=49
  on 0 "fio --name=b --filename=/dev/$1 --rw=$2 --bs=4k --iodepth=$3 --ioengine=libaio --direct=1 \
          --size=32M --time_based --runtime=$RUNTIME --output-format=terse --terse-version=3 2>/dev/null |
        awk -F';' '{print \$$field}'"
}

fio_part() {
  local smp=$1 mode rep op qd dev v
  log "vCPUs $smp: fio on kram, brd and zram (32 MiB each, filled with random data)"
  start_cluster "$smp" 256M
  on 0 "modprobe brd rd_nr=1 rd_size=32768 && modprobe zram num_devices=1 && echo 32M > /sys/block/zram0/disksize"
  prefill ram0
  prefill zram0
  for mode in 1 0; do
    load_kram "$mode"
    prefill kram0
    for rep in $(seq "$REPS"); do
      for op in randread randwrite; do
        for qd in 1 32; do
          for dev in $(rotated "$rep" kram0 ram0 zram0); do
            v=$(iops "$dev" "$op" "$qd")
            [[ "$v" =~ ^[0-9]+$ ]] || die "fio on /dev/$dev ($op QD$qd) printed '$v'"
            echo "$smp,$mode,$op,$qd,$rep,$dev,$v" >>"$OUT/fio_runs.csv"
          done
        done
      done
      log "  transfermode=$mode repetition $rep/$REPS: $(awk -F, -v s="$smp" -v m="$mode" -v r="$rep" \
        '$1 == s && $2 == m && $5 == r { printf "%s %s QD%s %s %s; ", $3, $6, $4, $7, "IOPS" }' "$OUT/fio_runs.csv")"
    done
    on 0 "rmmod unimem_kram"
  done
}

# swaptime DEVS MEMTEST_FLAGS: seconds the verifying workload takes with swap on DEVS.
swaptime() {
  on 0 "for d in $1; do mkswap \$d >/dev/null && swapon \$d || exit 1; done
        s=\$(cut -d' ' -f1 /proc/uptime); unimem-memtest --mib $MIB --seed $RANDOM $2 >/dev/null || exit 1
        e=\$(cut -d' ' -f1 /proc/uptime); for d in $1; do swapoff \$d || exit 1; done
        echo \"\$s \$e\" | awk '{printf \"%.2f\", \$2 - \$1}'"
}

swap_part() {
  local smp=$1 rep cfg t
  log "vCPUs $smp: a swap-bound program on KRAM, zram and virtio disks"
  start_cluster "$smp" 96M 96M
  MIB=$(on 0 "awk '/^MemTotal/ {print int(\$2 * 3 / 2 / 1024)}' /proc/meminfo")
  on 0 "echo 8192 > /proc/sys/vm/min_free_kbytes && modprobe zram num_devices=1 && test -b /dev/vdb && test -b /dev/vdc" ||
    die "node 0 has no zram, /dev/vdb or /dev/vdc"
  load_kram "$SWAP_MODE"
  for rep in $(seq "$REPS"); do
    for cfg in $(rotated "$rep" kram:compressible zram:compressible kram:random disk:random disk_direct:random); do
      case $cfg in
        kram:*) devs="/dev/kram0 /dev/kram1";;
        disk:*) devs=/dev/vdb;;
        disk_direct:*) devs=/dev/vdc;;
        zram:*) devs=/dev/zram0
                on 0 "echo 1 > /sys/block/zram0/reset && echo 96M > /sys/block/zram0/disksize";;
      esac
      flags=; [ "${cfg#*:}" = compressible ] && flags=--compressible
      t=$(swaptime "$devs" "$flags") || die "the $MIB MiB workload failed or did not verify on $cfg swap"
      echo "$smp,$rep,${cfg#*:},${cfg%%:*},$MIB,$t" >>"$OUT/swap_runs.csv"
      log "  repetition $rep/$REPS: ${cfg%%:*} swap, ${cfg#*:} data: $t s"
    done
  done
  on 0 "rmmod unimem_kram"
}

# summary.csv: per configuration the medians over the repetitions, and the median (min, max)
# of the ratios taken within each repetition.
summarize() {
  local env=$OUT/environment.csv
  if [ -f "$env" ]; then
    REPS=$(sed -n 's/^reps,//p' "$env")
    SWAP_MODE=$(sed -n 's/^swap_transfermode,//p' "$env")
    RUNTIME=$(sed -n 's/^fio_runtime_s,//p' "$env")
  fi
awk -F, -v OFS=, '
  function med(s,   a, n, i, j, t) { n = split(s, a, " "); if (n == 0) return ""
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
    lo = a[1]; hi = a[n]; return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
  function spread(s,   m) { m = med(s); return sprintf("%.2f,%.2f,%.2f", m, lo, hi) }
  FNR == 1 { next }
  FILENAME ~ /fio_runs/ { k = $1 "," $2 "," $3 "," $4; keys[k] = 1; v[k, $5, $6] = $7; reps[k, $5] = 1 }
  FILENAME ~ /swap_runs/ { s = $1 "," $3; t[s, $2, $4] = $6; sreps[s, $2] = 1; if ($4 != "kram") sb[s "," $4] = 1 }
  END {
    print "part,vcpus,transfermode_or_data,op_or_baseline,qd,kram,brd_or_baseline,zram,kram_over_brd_or_baseline,min,max,kram_over_zram,min,max"
    for (k in keys) { K = Z = B = rb = rz = ""
      for (r = 1; (k, r) in reps; r++) { K = K " " v[k, r, "kram0"]; B = B " " v[k, r, "ram0"]; Z = Z " " v[k, r, "zram0"]
        if (v[k, r, "ram0"] > 0) rb = rb " " v[k, r, "kram0"] / v[k, r, "ram0"]
        if (v[k, r, "zram0"] > 0) rz = rz " " v[k, r, "kram0"] / v[k, r, "zram0"] }
      print "fio", k, med(K), med(B), med(Z), spread(rb), spread(rz) }
    for (x in sb) { split(x, p, ","); s = p[1] "," p[2]; b = p[3]; K = B = rb = ""
      for (r = 1; (s, r) in sreps; r++) { K = K " " t[s, r, "kram"]; B = B " " t[s, r, b]
        if (t[s, r, b] > 0) rb = rb " " t[s, r, "kram"] / t[s, r, b] }
      print "swap", p[1], p[2], b, "", med(K), med(B), "", spread(rb), ",," }
  }' "$OUT/fio_runs.csv" "$OUT/swap_runs.csv" | sort -t, -k1,1 -k2,2n -k3,3 -k4,4 -k5,5n >"$OUT/summary.tmp"
{ grep '^part,' "$OUT/summary.tmp"; grep -v '^part,' "$OUT/summary.tmp"; } >"$OUT/summary.csv"
rm -f "$OUT/summary.tmp"

{
  echo "KRAM benchmark: ratios against brd, zram and disk swap measured in the same VM"
  if grep -q '^fio,' "$OUT/summary.csv"; then
    printf '\n4 KiB random I/O, IOPS (median of %s repetitions, %s s each); ratios: median [min-max] within repetitions\n' "$REPS" "$RUNTIME"
    printf '%5s | %-14s | %-9s | %4s | %8s | %8s | %8s | %-17s | %-17s\n' vCPUs mode op QD kram brd zram kram/brd kram/zram
    grep '^fio,' "$OUT/summary.csv" | while IFS=, read -r _ smp mode op qd k b z rb rbl rbh rz rzl rzh; do
      label="CPU (0)"; [ "$mode" = 1 ] && label="DMA engine (1)"
      printf '%5s | %-14s | %-9s | %4s | %8s | %8s | %8s | %-17s | %-17s\n' "$smp" "$label" "$op" "$qd" "$k" "$b" "$z" \
        "$rb [$rbl-$rbh]" "$rz [$rzl-$rzh]"
    done
    echo "goal: kram/brd >= 1.0 at QD1 and QD32, both modes"
    awk -F, '$1 == "fio" && $5 == 32 { k[$2 "," $4, $3] = $6 } END {
      for (x in k) { split(x, p, SUBSEP); if (p[2] == 1 && k[p[1], 0] > 0) printf "transfermode 1 / 0 at QD32, %s vCPU(s), %s: %.2f (goal with 2 vCPUs: >= 1.0)\n", substr(p[1], 1, index(p[1], ",") - 1), substr(p[1], index(p[1], ",") + 1), k[x] / k[p[1], 0] } }' \
      "$OUT/summary.csv" | sort
  fi
  if grep -q '^swap,' "$OUT/summary.csv"; then
    printf '\nswap-bound program (1.5x RAM, verified; KRAM transfermode=%s), seconds (median of %s)\n' "${SWAP_MODE:-1}" "$REPS"
    grep '^swap,' "$OUT/summary.csv" | while IFS=, read -r _ smp data base _ k b _ r rl rh _; do
      printf '%s vCPU(s), %s data: kram %s s, %s %s s, kram/%s %s [%s-%s]\n' "$smp" "$data" "$k" "$base" "$b" "$base" "$r" "$rl" "$rh"
    done
    echo "goals: kram/zram <= 1.0 (compressible); kram/disk <= 0.2, i.e. 5x faster (incompressible)"
    echo "disk: through the host's page cache (host RAM behind virtio); disk_direct: cache=none, the host's storage"
  fi
  bench_tcg_note 3
} | tee "$OUT/summary.txt"
bench_results "$UNIMEM_ROOT/scripts/bench/plot_kram.py" "${KRAM_BENCH_NO_PLOT:-0}"
}

if [ -n "$SUMMARY_OF" ]; then
  OUT=$SUMMARY_OF
  summarize
  exit 0
fi
mkdir -p "$OUT"
echo "vcpus,transfermode,op,qd,rep,device,iops" >"$OUT/fio_runs.csv"
echo "vcpus,rep,data,swap,mib,seconds" >"$OUT/swap_runs.csv"
for smp in $SMPS; do
  [ "$DO_FIO" = 1 ] && fio_part "$smp"
  [ "$DO_SWAP" = 1 ] && swap_part "$smp"
  [ -f "$OUT/environment.csv" ] ||
    UNIMEM_SMP="${SMPS// /;}" bench_environment "$OUT/environment.csv" 3 "reps=$REPS" "fio_runtime_s=$RUNTIME" "swap_transfermode=$SWAP_MODE" \
      "node0_ram=256M (fio) 96M (swap)" "host_load=$(cut -d' ' -f1-3 /proc/loadavg)"
done
summarize
