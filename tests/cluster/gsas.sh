#!/usr/bin/env bash
# GSAS acceptance through the user-space library (userspace/gsas: the Rust API behind
# `unimem-gsas` and its test rig `unimem-gsas-test`, and the C library behind the examples), 4 nodes, every node running its atomic
# service (unimem_gsas.ko, its pool from its own kram-daemon):
#  - every service answers every node; each operation's result checked across nodes (one node
#    writes, another reads, a third applies atomics) and in one process against every node;
#  - Fetch&Add from 4 nodes x 4 threads on one word ends at the exact sum, and the old values
#    the 16 threads saw are 0..N-1, each once (their sum);
#  - READ256/READ128 never see a torn value under concurrent WRITE128 from other nodes;
#  - another tree is denied every operation, counted, and the memory is unchanged;
#  - a process maps only its tree's pages of its own node (the service's memory), until freed;
#  - the bad-input matrix: each case its own clear error, the service still answers;
#  - processes of one tree on a node (unimem-gsas exec, GSAS_TREE_FD);
#  - the C examples, compiled on the host with gcc through pkg-config (the guest has no
#    compiler), run on the nodes against libgsas.so;
#  - system calls per operation (bench), reported; no kernel warnings.
# Jobs run as root; gsas_as_user.sh runs them as the unprivileged test user, in a tree that
# `unimem-gsas share-tree` serves on every node (lib.sh: job, share_tree_up).
source "$(dirname "$0")/lib.sh"
MODS=/opt/unimem/modules
SYS=/sys/kernel/unimem_gsas
# A protection tree no node makes (node field 14): the test's processes join it with --tree.
TREE=0x0e0001
FAA_COUNT=${GSAS_FAA_COUNT:-1000}
TORN_SECONDS=${GSAS_TORN_SECONDS:-5}
[ "$NODES" -ge 4 ] || fail "needs 4 nodes"
BG=gsasu

step "copy unimem-gsas, its rig, libgsas.so and the C examples (gcc + pkg-config on the host) to the nodes"
share_bins unimem-gsas unimem-gsas-test kram-daemon gsasd
c_examples gsas gsas- "$ROOT/userspace/gsas/examples" hello faa_threads

# Allocations of tree $TREE to free at the end (the service refuses to unload while pages are
# allocated).
ALLOCS=()
cleanup() { gsas_cleanup "$TREE" "${ALLOCS[@]}"; }
trap cleanup EXIT

g() { local n=$1; shift; job "$n" "unimem-gsas $(tree_opt) $*"; }
# alloc NODE HOME PAGES: an allocation of tree $TREE on HOME made from NODE; prints its address.
alloc() {
  local a; a=$(g "$1" alloc --node "$2" --pages "$3") || fail "alloc on node $2 from node $1"
  [ "$(( a >> 48 ))" = "$2" ] || fail "alloc on node $2 answered $a"
  echo "$a"
}
hex() { printf '%#x' "$1"; }
counter() { on "$1" "cat $SYS/$2"; }
counter_mbox() { on "$1" "cat /sys/kernel/unimem_mailbox/$2"; }

# Nodes 0 and 3, two threads each, 300 Fetch&Adds a thread on ADDR at once (a barrier word at
# BARRIER), with ENV: faa_sum_0_3 TAG ENV ADDR BARRIER WHAT.
faa_sum_0_3() {
  local tag=$1 env=$2 addr=$3 barrier=$4 what=$5 n out
  for n in 0 3; do
    bg_job "$n" "$tag" "$env unimem-gsas-test $(tree_opt) check faa-sum --addr $addr --threads 2 --count 300 --barrier $barrier --parties 2 --json"
  done
  for n in 0 3; do
    TIMEOUT=600 wait_log "$n" "$tag" '^exit=' 600
    out=$(on "$n" "cat /tmp/$BG-$tag.log")
    grep -q '^exit=0$' <<<"$out" || { echo "$out"; fail "node $n: faa-sum $what failed"; }
  done
}

step "every node: base modules, kram-daemon, unimem_gsas (pool from its own daemon); jobs run as $(who_runs)"
job_nodes_up "$MODS/unimem_gsas.ko"
for n in $(seq 0 $((NODES - 1))); do on "$n" "test -r $SYS/pool_pages"; done

step "every node's service answers every node (NOP)"
for n in $(seq 0 $((NODES - 1))); do
  out=$(job "$n" "unimem-gsas info --nodes $NODES --json")
  echo "node $n: $out"
  grep -q "\"node\":$n," <<<"$out" || fail "node $n: info names another node"
  grep -q '"answering":\[0,1,2,3\]' <<<"$out" || fail "node $n: not every service answered"
done

step "each operation across nodes: allocated from 0 on 2, written from 1, read from 3, atomics from 0, 2 (home) and 3"
A=$(alloc 0 2 2); ALLOCS+=("$A")
echo "allocation at $A"
expect_eq "$(g 3 read "$A")" 0x0 "a fresh page reads zero (node 3)"
g 1 write "$A" 41
expect_eq "$(g 3 read "$A")" 0x29 "WRITE from 1, READ from 3"
expect_eq "$(g 0 faa "$A" --add 1 --count 5)" 46 "Fetch&Add x5 from 0: final"
expect_eq "$(g 2 cas "$A" 45 7)" 0x2e "failed CAS from the home node returns the old value"
expect_eq "$(g 3 read "$A")" 0x2e "failed CAS changed nothing"
expect_eq "$(g 2 cas "$A" 46 7)" 0x2e "CAS from the home node"
expect_eq "$(g 3 swap "$A" 0xf0)" 0x7 "SWAP from 3"
expect_eq "$(g 1 bitwise and "$A" 0x3c)" 0xf0 "fetch-and from 1"
expect_eq "$(g 0 bitwise or "$A" 0x01)" 0x30 "fetch-or from 0"
expect_eq "$(g 3 bitwise xor "$A" 0xff)" 0x31 "fetch-xor from 3"
expect_eq "$(g 1 read "$A")" 0xce "bitwise results seen from 1"
B=$(hex $((A + 8)))
g 0 write "$B" 0xffffffffffffffff
g 1 write "$B" 5 --width 32
expect_eq "$(g 2 read "$B")" 0xffffffff00000005 "32-bit WRITE left the high half"
expect_eq "$(g 3 read "$(hex $((B + 4)))" --width 32)" 0xffffffff "32-bit READ of the high half"
expect_eq "$(g 0 faa "$B" --add 0xffffffff --count 1)" 4 "64-bit Fetch&Add of 2^32-1 carries into the high half and wraps"
expect_eq "$(g 1 cas "$B" 4 9 --width 32)" 0x4 "32-bit CAS"
expect_eq "$(g 2 swap "$B" 0xff --width 32)" 0x9 "32-bit SWAP"
expect_eq "$(g 3 bitwise and "$B" 0x0f --width 32)" 0xff "32-bit fetch-and"
expect_eq "$(g 0 bitwise or "$B" 0x30 --width 32)" 0xf "32-bit fetch-or"
expect_eq "$(g 1 bitwise xor "$B" 0x3f --width 32)" 0x3f "32-bit fetch-xor"
expect_eq "$(g 2 read "$B")" 0x0 "after the 32-bit atomics (high half carried earlier)"
W=$(hex $((A + 32)))
g 3 write "$W" 0x1111 --width 128 --high 0x2222
expect_eq "$(g 0 read "$W" --width 128)" "0x1111 0x2222" "WRITE128 from 3, READ128 from 0"
g 1 write "$(hex $((W + 16)))" 0x3333 --width 128 --high 0x4444
expect_eq "$(g 2 read "$W" --width 256)" "0x1111 0x2222 0x3333 0x4444" "READ256 from the home node"
out=$(g 3 bulk-write "$(hex $((A + 100)))" --len 6000 --seed 9)
echo "node 3: $out"
out=$(g 1 bulk-read "$(hex $((A + 100)))" --len 6000 --seed 9)
echo "node 1: $out"
grep -q '^read 6000 bytes in 2 requests, 0 differ from seed 9$' <<<"$out" || fail "bulk read from 1 of the bulk write from 3"
step "can fail: a bulk read compared with another pattern differs"
! job_may_fail 1 "unimem-gsas $(tree_opt) bulk-read $(hex $((A + 100))) --len 6000 --seed 10" >/dev/null || fail "pattern check cannot fail"

step "every operation, each result checked, from each node to another and to itself"
for pair in 0:1 1:2 2:3 3:0 0:0 2:2; do
  n=${pair%:*} h=${pair#*:}
  out=$(job "$n" "unimem-gsas-test check ops --node $h") || { echo "$out"; fail "check ops $n -> $h"; }
  tail -2 <<<"$out"
done

step "Fetch&Add: 4 nodes x 4 threads x $FAA_COUNT on one word of node 1"
# The counter, and a barrier word after it: the four processes start together.
C=$(alloc 0 1 1); ALLOCS+=("$C")
for n in $(seq 0 3); do
  bg_job "$n" faa "unimem-gsas-test $(tree_opt) check faa-sum --addr $C --threads 4 --count $FAA_COUNT --barrier $(hex $((C + 8))) --parties 4 --json"
done
total=$((16 * FAA_COUNT)) sum=0
for n in $(seq 0 3); do
  TIMEOUT=600 wait_log "$n" faa '^exit=' 600
  out=$(on "$n" "cat /tmp/$BG-faa.log")
  echo "node $n: $out"
  grep -q '^exit=0$' <<<"$out" || fail "node $n: faa-sum failed"
  s=$(sed -n 's/.*"old_sum":"\([0-9]*\)".*/\1/p' <<<"$out")
  [ -n "$s" ] || fail "node $n: no old_sum"
  sum=$((sum + s))
done
expect_eq "$(g 2 read "$C")" "$(hex $total)" "the word after $total Fetch&Adds"
expect_eq "$sum" $((total * (total - 1) / 2)) "sum of the old values the 16 threads saw (0..$((total - 1)) each once)"

step "can fail: a service applying every Fetch&Add twice would be caught by both sums"
D=$(alloc 0 1 1); ALLOCS+=("$D")
out=$(job 2 "unimem-gsas-test $(tree_opt) check faa-sum --addr $D --threads 2 --count 50 --apply-twice --json")
echo "node 2: $out"
s=$(sed -n 's/.*"old_sum":"\([0-9]*\)".*/\1/p' <<<"$out")
[ "$(g 3 read "$D")" != "$(hex 100)" ] || fail "the word is right although each request was applied twice"
[ "$s" != $((100 * 99 / 2)) ] || fail "the old values are right although each request was applied twice"

step "READ256/READ128 on node 3 and 1 under WRITE128 from nodes 0 and 2 (${TORN_SECONDS} s): never torn"
T=$(alloc 0 3 1); ALLOCS+=("$T")
bg_job 0 tw "unimem-gsas-test $(tree_opt) check torn --addr $T --writers 2 --readers 0 --seconds $TORN_SECONDS --json"
bg_job 2 tw "unimem-gsas-test $(tree_opt) check torn --addr $T --writers 1 --readers 1 --seconds $TORN_SECONDS --json"
bg_job 3 tr "unimem-gsas-test $(tree_opt) check torn --addr $T --writers 0 --readers 2 --seconds $TORN_SECONDS --json"
bg_job 1 tr "unimem-gsas-test $(tree_opt) check torn --addr $T --writers 0 --readers 1 --seconds $TORN_SECONDS --json"
reads=0 writes=0 mapped=0
for nb in 0:tw 2:tw 3:tr 1:tr; do
  n=${nb%:*} b=${nb#*:}
  TIMEOUT=300 wait_log "$n" "$b" '^exit=' 300
  out=$(on "$n" "cat /tmp/$BG-$b.log")
  echo "node $n: $out"
  grep -q '^exit=0$' <<<"$out" || fail "node $n: torn check failed"
  reads=$((reads + $(sed -n 's/.*"reads":\([0-9]*\).*/\1/p' <<<"$out")))
  writes=$((writes + $(sed -n 's/.*"writes":\([0-9]*\).*/\1/p' <<<"$out")))
  mapped=$((mapped + $(sed -n 's/.*"mapped_reads":\([0-9]*\).*/\1/p' <<<"$out")))
done
{ [ "$reads" -gt 0 ] && [ "$writes" -gt 0 ]; } || fail "no concurrency: $reads reads, $writes writes"
# Reads through mappings check the home's version word around each copy (docs/GSAS.md).
[ "$mapped" -gt 0 ] || fail "no read went through a mapping: the version check was not exercised"
echo "$writes WRITE128 and $reads READ256/READ128 ($mapped through mappings), none torn"

step "reads through mappings of a page another handle frees and another tree takes: fault, denied, never its bytes, no SIGBUS"
for n in 1 2; do
  out=$(job "$n" "unimem-gsas-test $(tree_opt) check mapped-stale --node 2") || { echo "$out"; fail "node $n: mapped-stale failed"; }
  echo "node $n (page of node 2): $(tail -1 <<<"$out")"
done

step "another tree (fresh, node 3) is denied every operation, counted; memory unchanged"
before=$(g 1 read "$A" --width 256)
d0=$(counter 2 denied)
out=$(job 3 "unimem-gsas-test check denied --addr $A") || { echo "$out"; fail "another tree was not denied"; }
tail -1 <<<"$out"
# Only the refusals reach the counter (the rig also checks its own page around a refused batch).
n_denied=$(grep -c '^ok: .*: denied (expected denied' <<<"$out")
expect_eq "$(( $(counter 2 denied) - d0 ))" "$n_denied" "node 2's denied counter"
expect_eq "$(g 1 read "$A" --width 256)" "$before" "memory after the denied requests"
expect_eq "$(g 0 read "$A")" 0xce "the owner still reads its value"
step "can fail: the owner's tree is not denied"
expect_eq "$(g 0 faa "$A" --add 0)" 206 "the owner's Fetch&Add"

step "mapping GSAS pages (node 2): the tree's own pages only, the same memory, gone when freed; counted"
m0=$(counter 2 maps) d0=$(counter 2 map_denied)
out=$(job 2 "unimem-gsas-test $(tree_opt) check map") || { echo "$out"; fail "check map"; }
echo "$out"
[ "$(( $(counter 2 maps) - m0 ))" -ge 1 ] || fail "node 2 counted no mapping"
# Two refusals of another tree; the one past the allocation may count as either.
[ "$(( $(counter 2 map_denied) - d0 ))" -ge 2 ] || fail "node 2 counted fewer than 2 denied mappings"
step "can fail: the refusal check fails when the other tree is the owner's"
! job_may_fail 2 "unimem-gsas-test $(tree_opt) check map --other-tree-is-mine" >/dev/null || fail "the mapping check cannot fail"

step "bad input: each case a clear error; the service keeps answering"
# A user without CAP_SYS_ADMIN reaches its share of the pool (user_pages_pct) before the pool's end.
quota_flag() { if [ "$AS_USER" = 1 ]; then echo --expect-quota; fi; }
out=$(job 0 "unimem-gsas-test check bad-input --node 3 --absent-node 9 --exhaust $(quota_flag) --timeout-ms 2000") || { echo "$out"; fail "bad-input matrix"; }
echo "$out"

step "processes of one tree on a node: unimem-gsas exec (GSAS_TREE_FD); a process outside it is denied"
out=$(job 1 "unimem-gsas exec -- sh -c 'a=\$(unimem-gsas alloc --node 2) && unimem-gsas write \$a 77 && unimem-gsas read \$a && { GSAS_TREE_FD= unimem-gsas read \$a 2>&1 || true; } && unimem-gsas free \$a'")
echo "$out"
grep -q '^0x4d$' <<<"$out" || fail "a second process of the tree did not read the first one's write"
grep -q 'denied, the page belongs to another protection tree' <<<"$out" || fail "a process outside the tree was not denied"

step "the C examples (built with gcc via pkg-config) on the nodes"
expect_out 1 '^hello: ok$' "hello on node 1 (pages on node 3)" "$(as_job "gsas-hello 3")"
expect_out 2 'final 800 (expected 800), 0 old values missing, 0 errors' "faa_threads on node 2" "$(as_job "gsas-faa-threads 0 4 200")"

step "system calls per operation (bench; median of 5 x 200; GSAS_SPINS=2000: poll a tenth as long)"
# One SEND or one submission slot per request. Whether a home polls depends on timing (how
# many system calls that saves is for scripts/bench/gsas.sh): here, only what cannot vary. A
# READ256 of a page read before goes through a mapping: no request (GSAS_MAPPED_READS=0: one).
jnum() { sed -n "s/.*\"$1\":\([0-9.]*\).*/\1/p" <<<"$2"; }
subs0=$(counter_mbox 1 submissions)
for spec in "0 2 faa" "2 2 faa" "3 1 faa" "0 2 nop" "1 3 read256 GSAS_MAPPED_READS=0" "1 3 read256" "3 1 bulk-read" "0 2 faa GSAS_SPINS=2000" "3 1 faa GSAS_SUBMIT=0" "3 1 faa GSAS_SUBMIT=2"; do
  read -r n h o env <<<"$spec"
  out=$(job "$n" "$env unimem-gsas-test bench --node $h --op $o --count 200 --reps 5 --warmup 20 --json")
  echo "node $n -> node $h $o ${env:-}: $out"
  per_op=$(awk -v a="$(jnum sends_per_op "$out")" -v b="$(jnum submits_per_op "$out")" 'BEGIN { printf "%.3f", a + b }')
  if [ "$o $env" = "read256 " ]; then
    expect_eq "$per_op" 0.000 "SENDs + slot requests per $o through a mapping"
    continue
  fi
  expect_eq "$per_op" 1.000 "SENDs + slot requests per $o"
  if [ "$n" = "$h" ] || [ "$env" = GSAS_SUBMIT=0 ]; then
    expect_eq "$(jnum sends_per_op "$out")" 1.000 "SENDs per $o (${env:-local})"
  elif [ "$env" = GSAS_SUBMIT=2 ]; then
    expect_eq "$(jnum submits_per_op "$out")" 1.000 "slot requests per $o ($env)"
  fi
done
subs1=$(counter_mbox 1 submissions)
echo "node 1's mailbox took $((subs1 - subs0)) requests from submission slots"
[ $((subs1 - subs0)) -ge 1020 ] || fail "node 1 took only $((subs1 - subs0)) requests from slots (1020 were left there)"

step "every request to another node in its submission slot (GSAS_SUBMIT=2, kicking a home that sleeps): operations, Fetch&Add sum, another tree denied"
kicks0=$(counter_mbox 0 kicks)
out=$(job 0 "GSAS_SUBMIT=2 unimem-gsas-test check ops --node 2") || { echo "$out"; fail "check ops through the slots"; }
tail -2 <<<"$out"
E=$(alloc 0 1 1); ALLOCS+=("$E")
faa_sum_0_3 sfaa GSAS_SUBMIT=2 "$E" "$(hex $((E + 8)))" "through the slots"
expect_eq "$(g 2 read "$E")" "$(hex 1200)" "the word after 1200 Fetch&Adds through the slots"
denied0=$(counter 2 denied)
out=$(job 3 "GSAS_SUBMIT=2 unimem-gsas-test check denied --addr $A") || { echo "$out"; fail "another tree was not denied through the slots"; }
tail -1 <<<"$out"
[ "$(counter 2 denied)" -gt "$denied0" ] || fail "node 2 counted no denial for the slot requests"
echo "node 0 kicked $(( $(counter_mbox 0 kicks) - kicks0 )) times"

step "threads asleep for their answers (GSAS_ANSWER_SLEEP_AFTER=0): operations and a Fetch&Add sum right; the homes rang them"
# Every wait for another node's answer sleeps in WAIT_ANSWER at once, and only the home's
# doorbell (or the 2 ms slice) ends it: the homes must count the doorbells and the issuers the
# sleeps, and nothing may be answered wrong or lost (a lost doorbell shows as slices run out).
door0=$(( $(counter 2 answer_doorbells) + $(counter 1 answer_doorbells) ))
sleeps0=$(counter_mbox 0 answer_sleeps)
out=$(job 0 "GSAS_ANSWER_SLEEP_AFTER=0 GSAS_SUBMIT=0 unimem-gsas-test check ops --node 2") || { echo "$out"; fail "check ops asleep for the answers"; }
tail -1 <<<"$out"
F=$(alloc 0 1 1); ALLOCS+=("$F")
faa_sum_0_3 afaa GSAS_ANSWER_SLEEP_AFTER=0 "$(hex $((F + 64)))" "$(hex $((F + 8)))" "asleep for the answers"
expect_eq "$(g 1 read "$(hex $((F + 64)))")" "$(hex 1200)" "the word after 1200 Fetch&Adds from threads asleep for their answers"
out=$(job 0 "GSAS_ANSWER_SLEEP_AFTER=0 GSAS_SUBMIT=0 unimem-gsas-test bench --node 2 --op faa --count 200 --reps 3 --warmup 20 --json")
echo "node 0 -> node 2 faa asleep: $out"
door=$(( $(counter 2 answer_doorbells) + $(counter 1 answer_doorbells) - door0 ))
sleeps=$(( $(counter_mbox 0 answer_sleeps) - sleeps0 ))
echo "node 0 slept $sleeps times for an answer; nodes 1 and 2 rang after $door answers"
[ "$sleeps" -ge 85 ] || fail "node 0's threads slept only $sleeps times for answers"
[ "$door" -ge 85 ] || fail "the homes rang only $door times for answers their issuers slept for"
awk -v a="$(jnum answer_sleeps_per_op "$out")" 'BEGIN { exit !(a > 0.5) }' || fail "the bench's requests did not sleep for their answers"

step "free everything; the services unload; no kernel warnings"
for a in "${ALLOCS[@]}"; do g 0 free "$a"; done
ALLOCS=()
for n in $(seq 0 $((NODES - 1))); do
  leftover=$(counter "$n" allocations)
  [ "$leftover" = 0 ] || echo "node $n: $leftover allocations of other trees left (processes that did not free)"
done
for n in $(seq 0 $((NODES - 1))); do
  dmesg_clean "$n" "${marks[$n]}" || fail "node $n logged a kernel warning"
done
echo "gsas: all checks passed"
