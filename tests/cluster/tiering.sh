#!/usr/bin/env bash
# Memory tiering acceptance (issue 17): unimem_numa gives the remote NUMA node a memory type
# slower than DRAM (abstract distance from the SLIT distance), so node 0's memory demotes to it.
# An unmodified program (no numactl, no libnuma) whose area is 1.5x node 0's RAM, with a hot
# part (the part written last, which spills to the remote node), runs with no swap device,
# demotion on and NUMA balancing in memory-tiering mode: every byte verifies, its cold pages are
# on the remote node (numa_maps), vmstat counts demotions and promotions. Removal with tiering
# on migrates the pages back and returns the chunks; unloading takes the memory type away.
# Expects node 0 to have little RAM (scripts/test.sh starts it with --mem-of 0=96M).
source "$(dirname "$0")/lib.sh"
MODS=/opt/unimem/modules
[ "$NODES" -ge 3 ] || fail "needs at least 3 nodes"
BG=tier
TIERS=/sys/devices/virtual/memory_tiering
# A failed run must not leave remote memory online, tiering on or daemons lending.
trap 'bg_cleanup; "$CLUSTER" exec 0 --timeout 120 -- "echo 0 > /proc/sys/kernel/numa_balancing; echo false > /sys/kernel/mm/numa/demotion_enabled; echo remove all > /proc/unimem_numa; rmmod unimem_numa; true" >/dev/null 2>&1; kram_cleanup' EXIT
# vm COUNTER: the sum of node 0's /proc/vmstat counters whose names start with COUNTER.
vm() { on 0 "awk -v p='$1' 'index(\$1, p) == 1 { s += \$2 } END { print s + 0 }' /proc/vmstat"; }
lent() { on "$1" "kram-daemon --status | sed -n 's/^free [0-9]*, offered [0-9]*, lent \([0-9]*\)$/\1/p'"; }

step "load unimem_eusrvmem and unimem_mailbox everywhere; kram-daemons on nodes 1 and 2"
for n in $(seq 0 $((NODES - 1))); do load_base "$n"; done
for n in 1 2; do kram_daemon "$n" --no-state; done

step "a bad adistance fails insmod with a message naming it"
! on_may_fail 0 "insmod $MODS/unimem_numa.ko adistance=-5" 2>/dev/null || fail "insmod accepted adistance=-5"
on 0 "dmesg | tail -3 | grep -q 'adistance=-5 is invalid'" || fail "no message for adistance=-5"
on 0 "! lsmod | grep -q '^unimem_numa'" || fail "adistance=-5 left the module loaded"

step "load: the remote node's memory type is 4x DRAM's abstract distance (SLIT 40 / 10), given at the first add"
on 0 "insmod $MODS/unimem_numa.ko"
expect_eq "$(on 0 "grep '^memory_type' /proc/unimem_numa")" "memory_type adistance 2304 dram 576 given no" "memory type before any add"
on 0 "echo add 1 > /proc/unimem_numa"
expect_eq "$(on 0 "grep '^memory_type' /proc/unimem_numa")" "memory_type adistance 2304 dram 576 given yes" "memory type after add 1"
tiers=$(on 0 "for t in $TIERS/memory_tier*; do echo \"\${t##*/} \$(cat \$t/nodelist)\"; done")
echo "$tiers"
expect_eq "$(sed -n 's/^memory_tier\([0-9]*\) 1$/\1/p' <<<"$tiers")" 18 "memory tier of node 1 (2304 / 128)"
expect_eq "$(sed -n 's/^memory_tier\([0-9]*\) 0$/\1/p' <<<"$tiers")" 4 "memory tier of node 0 (DRAM)"
on 0 "dmesg | grep 'Demotion targets for Node 0' | tail -1 | grep -q 'preferred: 1'" ||
  fail "the kernel does not demote node 0 to node 1: $(on 0 "dmesg | grep 'Demotion targets' | tail -2")"

step "tiering on: demotion, NUMA balancing in memory-tiering mode, no swap device"
on 0 "swapoff -a 2>/dev/null; echo true > /sys/kernel/mm/numa/demotion_enabled && echo 2 > /proc/sys/kernel/numa_balancing"
expect_eq "$(on 0 "tail -n +2 /proc/swaps | wc -l")" 0 "swap devices"
# Node 0's own RAM (MemTotal counts the remote node's too).
ram_mib=$(on 0 "awk '/MemTotal/ {print int(\$4 / 1024)}' /sys/devices/system/node/node0/meminfo")
work=$((ram_mib * 3 / 2)) hot=16
d0=$(vm pgdemote_) p0=$(vm pgpromote_success)
bg 0 work "unimem-memtest --mib $work --hot-mib $hot --hot-seconds 40 --hold-until /tmp/tier.go"
wait_log 0 work 'holding until' 300
pid=$(on 0 "cat /tmp/$BG-work.pid")
maps() { on 0 "awk '{for (i = 1; i <= NF; i++) if (\$i ~ /^N[0-9]+=/) { split(substr(\$i, 2), a, \"=\"); s[a[1]] += a[2] } }
                END { print s[0] + 0, s[1] + 0 }' /proc/$pid/numa_maps"; }
read -r n0 n1 <<<"$(maps)"
echo "$work MiB written on $ram_mib MiB of RAM: $n0 pages on node 0, $n1 on node 1"
[ "$n1" -ge $(( (work - ram_mib) * 256 )) ] || fail "only $n1 pages on the remote node for $work MiB on $ram_mib MiB of RAM"
step "removal with tiering on while the program's pages are remote and node 0 cannot take them: refused, nothing lost"
! on_may_fail 0 "echo remove 1 > /proc/unimem_numa" 2>/dev/null || fail "remove 1 was accepted although node 0 cannot take the pages"
on 0 "dmesg | tail -5 | grep -q 'remove 1: [0-9]* pages in use on NUMA node 1 but only [0-9]* free on other nodes'" ||
  fail "no clear message for the refused removal"
expect_eq "$(on 0 "grep -c '^range' /proc/unimem_numa")" 1 "ranges after the refused removal"
on 0 "touch /tmp/tier.go"
wait_log 0 work '^exit=' 600
out=$(on 0 "cat /tmp/$BG-work.log")
echo "$out"
grep -q '^exit=0$' <<<"$out" && grep -q 'wrote and verified' <<<"$out" || fail "the workload did not verify"
d1=$(vm pgdemote_) p1=$(vm pgpromote_success)
echo "demoted $((d1 - d0)) pages, promoted $((p1 - p0)) pages; $(on 0 "grep -E '^pg(demote|promote)' /proc/vmstat | tr '\n' ' '")"
[ "$((d1 - d0))" -gt 0 ] || fail "no page was demoted"
[ "$((p1 - p0))" -gt 0 ] || fail "no page was promoted"

step "removal with tiering on: a program's pages on the remote node migrate back and verify; the chunks return"
on 0 "echo true > /sys/kernel/mm/numa/demotion_enabled && echo 2 > /proc/sys/kernel/numa_balancing"
bg 0 move "numactl --membind=1 unimem-memtest --mib 24 --hold-until /tmp/move.go"
wait_log 0 move 'holding until' 120
on 0 "echo add 2 > /proc/unimem_numa && echo remove 1 > /proc/unimem_numa && echo remove 2 > /proc/unimem_numa"
on 0 "touch /tmp/move.go"
wait_log 0 move '^exit=' 300
on 0 "grep -q '^exit=0' /tmp/$BG-move.log && grep -q 'wrote and verified' /tmp/$BG-move.log" ||
  { on_may_fail 0 "cat /tmp/$BG-move.log" >&2; fail "the moved program's data did not verify"; }
on 0 "echo 0 > /proc/sys/kernel/numa_balancing; echo false > /sys/kernel/mm/numa/demotion_enabled"
expect_eq "$(on 0 "grep -c '^range' /proc/unimem_numa")" 0 "ranges after removal"
expect_eq "$(on 0 "grep '^memory_type' /proc/unimem_numa")" "memory_type adistance 2304 dram 576 given no" "memory type after removal"
for n in 1 2; do expect_eq "$(lent "$n")" 0 "chunks still lent by node $n"; done
on 0 "rmmod unimem_numa && insmod $MODS/unimem_numa.ko adistance=-1 && echo add 1 > /proc/unimem_numa"
expect_eq "$(on 0 "grep '^memory_type' /proc/unimem_numa")" "memory_type none" "memory type with adistance=-1"
expect_eq "$(on 0 "ls -d $TIERS/memory_tier* | wc -l")" 1 "memory tiers with adistance=-1 (node 1 is DRAM)"
on 0 "echo remove all > /proc/unimem_numa && rmmod unimem_numa"
echo "tiering: all checks passed"
