#!/usr/bin/env bash
# NUMA benchmark: STREAM-like bandwidth (copy, scale, add, triad) and pointer-chase latency with
# the program's memory bound to the remote NUMA node (memory lent by node 1 through
# unimem_numa) against the local node, in the same VM; and the same under the service levels
# 1:3 and 1:1 (weighted interleave). Prints remote/local ratios: under TCG the "remote" memory
# is host RAM like the local one, so expect ratios near 1 here; on the boards they measure the
# fabric. Last, the two uses of lent memory side by side: a program 1.5x as large as node 0's
# RAM spilling into the remote NUMA node (no swap) against the same program swapping to KRAM.
#   scripts/bench/numa.sh [--mib N]   (STREAM array size in MiB, default 32; chase uses 2x)
source "$(dirname "$0")/../lib/common.sh"
MIB=32
[ "${1:-}" = --mib ] && MIB=$2
export UNIMEM_RUN=$UNIMEM_BUILD/bench-numa
CLUSTER=$UNIMEM_ROOT/scripts/cluster
on() { local n=$1; shift; "$CLUSTER" exec "$n" --timeout 900 -- "$@"; }

trap '"$CLUSTER" down >/dev/null 2>&1 || true' EXIT
"$CLUSTER" down >/dev/null 2>&1 || true
"$CLUSTER" up -n 2 -m 512M
for n in 0 1; do on "$n" "insmod /opt/unimem/modules/unimem_eusrvmem.ko && insmod /opt/unimem/modules/unimem_mailbox.ko"; done
on 1 "kram-daemon --no-state >/dev/null 2>&1 &"
sleep 1
on 0 "insmod /opt/unimem/modules/unimem_numa.ko && echo add 1 > /proc/unimem_numa && numactl --hardware"

# metric POLICY ARGS: the benchmark's "name unit value" lines, run under POLICY.
metric() { on 0 "$1 unimem-numabench $2"; }
value() { awk -v k="$1" '$0 ~ "^" k " " {print $NF}' <<<"$2"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }

# TCG translates the benchmark's code on first use: a discarded warm-up keeps that out of the
# first measured case.
metric "numactl --membind=0" "stream --mib 8 --reps 2" >/dev/null
declare -A out
for where in local:--membind=0 remote:--membind=1; do
  name=${where%%:*} pol="numactl ${where#*:}"
  log "$name: stream and chase"
  out[$name]="$(metric "$pol" "stream --mib $MIB --reps 5")
$(metric "$pol" "chase --mib $((MIB * 2))")"
done
for sl in "1 3" "1 1"; do
  read -r r l <<<"$sl"
  log "service level $r:$l (remote:local): stream"
  out[sl$r$l]="$(metric "unimem-sl run --remote $r --local $l --force --" "stream --mib $MIB --reps 5")"
done

printf '\n%-14s %12s %12s %8s %12s %12s\n' "kernel" "local" "remote" "rem/loc" "sl 1:3" "sl 1:1"
for k in copy scale add triad; do
  lo=$(value "stream $k" "${out[local]}") re=$(value "stream $k" "${out[remote]}")
  s13=$(value "stream $k" "${out[sl13]}") s11=$(value "stream $k" "${out[sl11]}")
  printf '%-14s %12s %12s %8s %12s %12s\n' "$k MB/s" "$lo" "$re" "$(ratio "$re" "$lo")" "$s13" "$s11"
done
lo=$(value "chase" "${out[local]}") re=$(value "chase" "${out[remote]}")
printf '%-14s %12s %12s %8s\n' "chase ns" "$lo" "$re" "$(ratio "$re" "$lo")"
echo "(seed 000 section 4: remote-bound memory-heavy programs run 2-3x slower on the boards)"
on 0 "echo remove all > /proc/unimem_numa && rmmod unimem_numa"

# Spill: node 0 gets 96 MiB; node 1 lends the NUMA block, node 2 the swap.
"$CLUSTER" down >/dev/null 2>&1 || true
"$CLUSTER" up -n 3 --mem-of 0=96M
for n in 0 1 2; do on "$n" "insmod /opt/unimem/modules/unimem_eusrvmem.ko && insmod /opt/unimem/modules/unimem_mailbox.ko"; done
on 1 "kram-daemon --no-state >/dev/null 2>&1 &"
on 2 "kram-daemon --no-state >/dev/null 2>&1 &"
sleep 1
mib=$(on 0 "awk '/^MemTotal/ {print int(\$2 * 3 / 2 / 1024)}' /proc/meminfo")
# seconds: wall time of a verifying unimem-memtest of $mib MiB on node 0.
seconds() {
  on 0 "echo 8192 > /proc/sys/vm/min_free_kbytes; s=\$(cut -d' ' -f1 /proc/uptime)
        unimem-memtest --mib $mib --seed 7 >/dev/null || exit 1
        e=\$(cut -d' ' -f1 /proc/uptime); echo \"\$s \$e\" | awk '{printf \"%.2f\", \$2 - \$1}'"
}
log "spill: $mib MiB program, default policy, remote NUMA node from node 1, no swap"
on 0 "insmod /opt/unimem/modules/unimem_numa.ko node=1 && echo add 1 > /proc/unimem_numa"
t_numa=$(seconds) || die "workload failed with the NUMA node"
on 0 "echo remove all > /proc/unimem_numa && rmmod unimem_numa"
log "swap: the same program, 128 MiB of KRAM swap from node 2"
on 0 "insmod /opt/unimem/modules/unimem_kram.ko ninstances=1 size=128 &&
      for i in \$(seq 75); do test -b /dev/kram0 && break; sleep 0.2; done
      mkswap /dev/kram0 >/dev/null && swapon /dev/kram0" || die "no kram swap"
t_swap=$(seconds) || die "workload failed on kram swap"
on 0 "swapoff /dev/kram0 && rmmod unimem_kram"
printf '\n%s MiB program on 96 MiB node (every byte verified): remote NUMA node %s s, KRAM swap %s s, swap/numa %s\n' \
  "$mib" "$t_numa" "$t_swap" "$(ratio "$t_swap" "$t_numa")"
