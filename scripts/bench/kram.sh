#!/usr/bin/env bash
# KRAM benchmark: fio 4 KiB random read and write at QD1 and QD32 on /dev/kram0 (memory lent by
# node 2) against brd and zram of the same size in the same VM, for both transfer modes; and the
# runtime of a swap-bound program (1.5x RAM, every byte verified) with kram swap against zram
# swap. Prints ratios against the same-VM baselines: under TCG absolute numbers mean little.
#   scripts/bench/kram.sh [--runtime SECONDS]   (default 5 s per fio run)
source "$(dirname "$0")/../lib/common.sh"
RUNTIME=5
[ "${1:-}" = --runtime ] && RUNTIME=$2
export UNIMEM_RUN=$UNIMEM_BUILD/bench-kram
CLUSTER=$UNIMEM_ROOT/scripts/cluster
on() { local n=$1; shift; "$CLUSTER" exec "$n" --timeout 900 -- "$@"; }

# start_cluster NODE0_MEM: a fresh cluster whose node 2 lends.
start_cluster() {
  "$CLUSTER" down >/dev/null 2>&1 || true
  "$CLUSTER" up -n 3 --mem-of "0=$1"
  for n in 0 1 2; do on "$n" "insmod /opt/unimem/modules/unimem_eusrvmem.ko && insmod /opt/unimem/modules/unimem_mailbox.ko"; done
  on 2 "kram-daemon --chunks 128 >/dev/null 2>&1 &"
  sleep 1
}
trap '"$CLUSTER" down >/dev/null 2>&1 || true' EXIT
# fio: node 0 needs room for brd's and zram's data in its own RAM.
start_cluster 256M
# The baselines, 32 MiB like /dev/kram0.
on 0 "modprobe brd rd_nr=1 rd_size=32768 && modprobe zram num_devices=1 &&
      echo 32M > /sys/block/zram0/disksize"

# iops DEV RW QD: IOPS of a 4 KiB random RW (randread|randwrite) run at queue depth QD.
iops() {
  local field=8; [ "$2" = randwrite ] && field=49
  on 0 "fio --name=b --filename=/dev/$1 --rw=$2 --bs=4k --iodepth=$3 --ioengine=libaio --direct=1 \
          --size=32M --time_based --runtime=$RUNTIME --output-format=terse --terse-version=3 2>/dev/null |
        awk -F';' '{print \$$field}'"
}

rows=()
for mode in 1 0; do
  log "transfermode=$mode: /dev/kram0 and /dev/kram1 from node 2"
  on 0 "insmod /opt/unimem/modules/unimem_kram.ko ninstances=2 size=32,64 transfermode=$mode &&
        for i in \$(seq 75); do test -b /dev/kram0 && test -b /dev/kram1 && exit 0; sleep 0.2; done; exit 1" ||
    die "kram devices did not appear"
  for rw in randread randwrite; do
    for qd in 1 32; do
      k=$(iops kram0 $rw $qd); b=$(iops ram0 $rw $qd); z=$(iops zram0 $rw $qd)
      rows+=("$mode|$rw|$qd|$k|$b|$z")
      log "  $rw QD$qd: kram $k, brd $b, zram $z IOPS"
    done
  done
  on 0 "rmmod unimem_kram"
done

# Swap-bound program: node 0 gets 96 MiB so 1.5x its RAM fits in RAM + 96 MiB of swap. The data
# is made compressible, or zram (which keeps swap in node 0's own RAM) could not hold it at all.
start_cluster 96M
mib=$(on 0 "awk '/^MemTotal/ {print int(\$2 * 3 / 2 / 1024)}' /proc/meminfo")
ram=$(on 0 "awk '/^MemTotal/ {print int(\$2 / 1024)}' /proc/meminfo")
swaptime() {
  on 0 "echo 8192 > /proc/sys/vm/min_free_kbytes; for d in $*; do mkswap \$d >/dev/null && swapon \$d || exit 1; done
        s=\$(cut -d' ' -f1 /proc/uptime); unimem-memtest --mib $mib --seed 7 --compressible >/dev/null || exit 1
        e=\$(cut -d' ' -f1 /proc/uptime); for d in $*; do swapoff \$d; done; echo \"\$s \$e\" | awk '{printf \"%.2f\", \$2 - \$1}'"
}
log "swap-bound program: $mib MiB on $ram MiB RAM"
on 0 "insmod /opt/unimem/modules/unimem_kram.ko ninstances=2 size=32,64 transfermode=1 &&
      for i in \$(seq 75); do test -b /dev/kram0 && test -b /dev/kram1 && exit 0; sleep 0.2; done; exit 1" || die "no kram devices"
t_kram=$(swaptime /dev/kram0 /dev/kram1) || die "workload failed on kram swap"
on 0 "rmmod unimem_kram && modprobe zram num_devices=1 && echo 96M > /sys/block/zram0/disksize"
t_zram=$(swaptime /dev/zram0) || die "workload failed on zram swap"

printf '\nKRAM fio, 4 KiB random I/O, %s s per run, 3 VMs under TCG on 2 host cores (IOPS)\n' "$RUNTIME"
printf '%-12s | %-9s | %3s | %9s | %9s | %9s | %9s | %9s\n' mode op QD kram brd zram kram/brd kram/zram
printf '%s\n' "-------------+-----------+-----+-----------+-----------+-----------+-----------+----------"
for r in "${rows[@]}"; do
  IFS='|' read -r mode rw qd k b z <<<"$r"
  label="memcpy (0)"; [ "$mode" = 1 ] && label="CDMA emu (1)"
  rb=$(awk -v a="$k" -v b="$b" 'BEGIN { printf (b > 0 ? "%.2f" : "-"), a / b }')
  rz=$(awk -v a="$k" -v b="$z" 'BEGIN { printf (b > 0 ? "%.2f" : "-"), a / b }')
  printf '%-12s | %-9s | %3s | %9s | %9s | %9s | %9s | %9s\n' "$label" "$rw" "$qd" "$k" "$b" "$z" "$rb" "$rz"
done
printf '\nswap-bound program (%s MiB, 1.5x RAM, verified): kram swap %s s, zram swap %s s, kram/zram %s\n' \
  "$mib" "$t_kram" "$t_zram" "$(awk -v a="$t_kram" -v b="$t_zram" 'BEGIN { printf "%.2f", a / b }')"
echo "brd and zram are local RAM; kram data crosses the GAS (another VM's memory). Compare ratios only."
