#!/usr/bin/env bash
# mailbox acceptance: cross-node and same-node ping-pong, headers that user space cannot forge,
# the 64-interface limit, invalid arguments, ring overflow (EAGAIN + debugfs counter),
# SET_PROT, protection trees (INHERIT, SET_TREE), the GSAS area mmap, 64-bit kernel messages,
# and unload refused while in use / reload.
# Uses `unimem-mbox` (userspace/mailbox) and the test rig `unimem-mbox-test` (tests/rigs: the
# forging, flooding and bad-argument checks and kernel messages); every step checks something
# that can fail, and the steps marked "can fail" show that a check rejects a wrong expectation.
source "$(dirname "$0")/lib.sh"
share_bins unimem-mbox unimem-mbox-test
EUSRVMEM=/opt/unimem/modules/unimem_eusrvmem.ko
KO=/opt/unimem/modules/unimem_mailbox.ko
STATS=/sys/kernel/debug/unimem_mailbox/stats
[ "$NODES" -ge 3 ] || fail "needs at least 3 nodes"

# Background processes (lib.sh's bg, wait_log): /tmp/mbox-NAME.{log,pid} on the node.
BG=mbox
# status NODE NAME: wait for the process to end and print its exit status.
status() {
  wait_log "$1" "$2" '^exit='
  on "$1" "sed -n 's/^exit=//p' /tmp/mbox-$2.log"
}
# expect_ok NODE NAME: the background process must have ended successfully.
expect_ok() {
  local s; s=$(status "$1" "$2")
  [ "$s" = 0 ] || { on_may_fail "$1" "cat /tmp/mbox-$2.log" >&2; fail "node $1: '$2' exited with $s"; }
}
# field NODE NAME KEY: a value of the identity line "iface I node N thread T prot P".
field() {
  on "$1" "awk '/^iface [0-9]+ node /{for (i = 1; i < NF; i++) if (\$i == \"$3\") { print \$(i + 1); exit }}' /tmp/mbox-$2.log"
}
# start_named NODE NAME CMD: bg + wait for the identity line; prints the interface id.
start_named() {
  local n=$1 name=$2; shift 2
  bg "$n" "$name" "$@"
  wait_log "$n" "$name" '^iface [0-9]+ node '
  field "$n" "$name" iface
}

# rejected_sum: sum of every "rejected" count in debugfs stats text on stdin.
# FORMAT ASSUMPTION (kernel/mailbox/stats.rs, align if it changes): either header lines naming
# a "rejected" column followed by rows of numbers (current driver: "iface thread prot sent
# received rejected dropped" and "service sent received rejected dropped"), or "rejected N" /
# "rejected=N" / "rejected: N" pairs. Anything else contributes 0, and the overflow check fails.
rejected_sum() {
  awk '
    { col_here = 0
      for (i = 1; i <= NF; i++) {
        f = tolower($i)
        if (f ~ /^rejected[=:][0-9]+$/) { v = f; sub(/^rejected[=:]/, "", v); sum += v; continue }
        if (f ~ /^rejected:?$/) {
          if (i < NF && $(i + 1) ~ /^[0-9]+$/) { sum += $(i + 1); i++ } else { col = i; col_here = 1 }
        }
      }
      if (!col_here && col && $col ~ /^[0-9]+$/ && $1 ~ /^[0-9]+$/) sum += $col
      if (!col_here && $1 !~ /^[0-9]+$/) col = 0
    }
    END { print sum + 0 }'
}

trap bg_cleanup EXIT

step "load unimem_eusrvmem and a fresh unimem_mailbox on every node"
bg_cleanup
declare -A dmesg_lines
for n in $(seq 0 $((NODES - 1))); do
  dmesg_lines[$n]=$(on "$n" "dmesg | wc -l")
  on "$n" "lsmod | grep -q '^unimem_eusrvmem' || insmod $EUSRVMEM
           if lsmod | grep -q '^unimem_mailbox'; then rmmod unimem_mailbox; fi
           insmod $KO && test -c /dev/unimem_mailbox && test -r $STATS"
done
step "can fail: poll_us out of range is refused with a message, nothing left loaded"
on 1 "rmmod unimem_mailbox"
! on_may_fail 1 "insmod $KO poll_us=10001" 2>/dev/null || fail "insmod poll_us=10001 succeeded"
on 1 "dmesg | tail -5 | grep -q 'poll_us=10001 out of range (0-10000)' && ! lsmod | grep -q '^unimem_mailbox'" ||
  fail "no clear message for poll_us=10001, or the module stayed loaded"
on 1 "insmod $KO poll_us=0 && test \$(cat /sys/kernel/unimem_mailbox/poll_us) = 0 && rmmod unimem_mailbox && insmod $KO poll_us=3 && test \$(cat /sys/kernel/unimem_mailbox/poll_us) = 3 && rmmod unimem_mailbox && insmod $KO"

step "cross-node ping-pong: node 0 <-> node 2 (blocking, poll, epoll; server polls); sysfs counts it"
SYSC=/sys/kernel/unimem_mailbox
sent0=$(on 0 cat $SYSC/packets_sent) recv0=$(on 2 cat $SYSC/packets_received)
i=$(start_named 2 srv "unimem-mbox serve --poll --count 60")
for mode in --block --poll --epoll; do
  out=$(on 0 "unimem-mbox ping --node 2 --iface $i --count 20 --size 25 $mode")
  echo "$out" | grep -E '^(ok|RESULT)'
  grep -q '^ok: 20 echoes intact, all from node 2 ' <<<"$out" || fail "ping $mode: no intact echoes"
done
expect_ok 2 srv
on 2 "grep -q '^served 60 packets, 0 not echoed' /tmp/mbox-srv.log" || fail "server did not echo 60 packets"
[ "$(( $(on 0 cat $SYSC/packets_sent) - sent0 ))" -ge 60 ] || fail "node 0's $SYSC/packets_sent did not grow by 60"
[ "$(( $(on 2 cat $SYSC/packets_received) - recv0 ))" -ge 60 ] || fail "node 2's $SYSC/packets_received did not grow by 60"
expect_eq "$(on 2 cat $SYSC/node)" 2 "node 2's $SYSC/node"
out=$(on 2 "unimem-mbox stats --json")
echo "node 2: $out"
grep -q '"node":2[,}]' <<<"$out" && grep -q '"packets_received":[1-9]' <<<"$out" ||
  fail "unimem-mbox stats --json on node 2: no node 2 or no packets received"
step "can fail: a ping to an interface without a server times out"
! on_may_fail 0 "unimem-mbox ping --node 2 --iface 63 --count 1 --timeout 3" 2>/dev/null ||
  fail "ping succeeded without a server"

step "same-node ping-pong on node 1 (blocking server), with 8-byte and windowed runs"
i=$(start_named 1 srv "unimem-mbox serve --count 60")
on 1 "unimem-mbox ping --node 1 --iface $i --count 20 --size 8" | grep -E '^(ok|RESULT)'
on 1 "unimem-mbox ping --node 1 --iface $i --count 40 --window 8 --poll" | grep -E '^(ok|RESULT)'
expect_ok 1 srv

step "RECV_CREDS: a server sees each sender as its node sealed it (root, $TEST_USER, a second user)"
for n in 0 1; do on "$n" "chgrp $UNIMEM_GID /dev/unimem_mailbox && chmod 0660 /dev/unimem_mailbox"; done
i=$(start_named 2 who "unimem-mbox serve --whois --count 3")
on 0 "unimem-mbox ping --node 2 --iface $i --count 1" | grep '^ok'
on 0 "$(as_user "unimem-mbox ping --node 2 --iface $i --count 1")" | grep '^ok'
on 1 "$(as_other "unimem-mbox ping --node 2 --iface $i --count 1")" | grep '^ok'
expect_ok 2 who
who=$(on 2 "grep '^from ' /tmp/mbox-who.log")
echo "$who"
grep -qE '^from node 0 iface [0-9]+ tree 0x[0-9a-f]+: uid 0 gid 0 admin$' <<<"$who" || fail "root's packet: not uid 0 with ADMIN"
grep -qE "^from node 0 iface [0-9]+ tree 0x[0-9a-f]+: uid $TEST_UID gid [0-9]+\$" <<<"$who" || fail "$TEST_USER's packet: not uid $TEST_UID"
grep -qE "^from node 1 iface [0-9]+ tree 0x[0-9a-f]+: uid $OTHER_UID gid $OTHER_UID\$" <<<"$who" || fail "the second user's packet: not uid $OTHER_UID"

step "forged headers: node 2 puts 'node 9 iface 42 prot 4242' in its payload; node 0 sees the truth"
fi=$(start_named 2 forge "unimem-mbox-test send-forged --reply --count 3 --rounds 3 --timeout 300")
fp=$(field 2 forge prot)
on 0 "unimem-mbox-test expect-sender --go --count 3 --node 2 --iface $fi --prot $fp" | tail -1
step "can fail: the same packets do not pass for another protection id"
! on_may_fail 0 "unimem-mbox-test expect-sender --go --count 3 --node 2 --iface $fi --prot $((fp + 1)) --timeout 20" ||
  fail "expect-sender accepted a wrong protection id"

step "SET_PROT: a privileged service gives node 2's interface $fi protection id 777"
on 2 "unimem-mbox set-prot --iface $fi --prot 777"
on 0 "unimem-mbox-test expect-sender --go --count 3 --node 2 --iface $fi --prot 777" | tail -1
expect_ok 2 forge

step "62 interfaces per node for ALLOC (62 well-known: ALLOC_AT only; 63 the GSAS service): the 63rd is EBUSY; fresh trees, INHERIT (node 1)"
out=$(on 1 "unimem-mbox-test alloc-max")
echo "$out"
grep -q "^63rd alloc: EBUSY" <<<"$out" || fail "63rd alloc did not report EBUSY"

step "invalid arguments: EINVAL / ENOENT / EBUSY / EBADF / EACCES (trees, mmap), and EPERM without CAP_SYS_ADMIN (node 1)"
on 1 "unimem-mbox-test bad-args"

step "overflow: node 1 floods an interface of node 0 that does not read"
on 0 "rm -f /tmp/mbox-drain"
hi=$(start_named 0 hold "unimem-mbox-test hold --until-file /tmp/mbox-drain --seconds 300 --expect 32")
before=$(on 1 "cat $STATS" | rejected_sum)
out=$(on 1 "unimem-mbox-test flood --node 0 --iface $hi --expect 32")
echo "$out"
grep -q '^flood: accepted 32 packets, then EAGAIN' <<<"$out" || fail "flood: no EAGAIN after 32 packets"
# Counted while flood's interface was still allocated (its line is in flood's output).
after=$(echo "$out" | sed -n '/^--- .*stats/,/^--- end of stats/p' | rejected_sum)
echo "debugfs rejected: $before before, $after during the flood"
[ "$after" -gt "$before" ] || fail "debugfs stats show no new rejected count (format assumption in rejected_sum?)"
on 1 "cat $STATS"
on 0 "touch /tmp/mbox-drain"
expect_ok 0 hold
on 0 "grep -q 'from node 1 iface [0-9]*: 32 packets, sequence 0.. in order' /tmp/mbox-hold.log" ||
  fail "the receiver did not get the 32 accepted packets in order"

step "doorbells a user causes without queuing anything (KICK) reach node 0 at no more than doorbell_rate"
# Node 1 reloaded with 1 doorbell per ms per node: 500 KICKs take at least 436 ms there (64 go at
# once). Without the limit they would take a few ms and ring node 0 500 times.
on 1 "rmmod unimem_mailbox && insmod $KO doorbell_rate=1 && chgrp $UNIMEM_GID /dev/unimem_mailbox && chmod 0660 /dev/unimem_mailbox"
before=$(on 0 unimem-gas count --vector 1)
out=$(on 1 "$(as_user unimem-mbox-test kick --node 0 --count 500)")
echo "$out"
after=$(on 0 unimem-gas count --vector 1)
ms=$(sed -n 's/^kick: 500 kicks to node 0 in \([0-9]*\) ms$/\1/p' <<<"$out")
[ -n "$ms" ] || fail "unimem-mbox-test kick printed no time"
# The burst, one per ms of the run, and a little of other traffic.
bound=$((64 + ms + 1 + 16))
echo "node 0 heard $((after - before)) doorbells while node 1's user kicked 500 times in $ms ms (bound $bound)"
[ $((after - before)) -le "$bound" ] || fail "node 0 heard $((after - before)) doorbells in $ms ms: more than doorbell_rate=1 allows"
[ "$(on 1 cat $SYSC/doorbells_throttled)" -gt 0 ] || fail "doorbells_throttled did not count the waits"
on 1 "rmmod unimem_mailbox && insmod $KO && chgrp $UNIMEM_GID /dev/unimem_mailbox && chmod 0660 /dev/unimem_mailbox"

step "64-bit kernel messages: node 1 -> node 0, service 15, echoed back"
bg 0 kserve "unimem-mbox-test kserve --count 5 --echo --from 1"
wait_log 0 kserve '^bound service 15'
on 1 "unimem-mbox-test kping --node 0 --count 5" | grep -E '^(ok|RESULT)'
expect_ok 0 kserve
n=$(on 0 "grep -c '^kmsg from node 1 service 15 word ' /tmp/mbox-kserve.log || true")
expect_eq "$n" 5 "kernel messages node 0 received from node 1"
step "can fail: a service expecting node 2 rejects node 1's message"
bg 0 kserve2 "unimem-mbox-test kserve --count 1 --from 2"
wait_log 0 kserve2 '^bound service 15'
on 1 "unimem-mbox-test kping --node 0 --count 1 --no-echo" >/dev/null
s=$(status 0 kserve2)
[ "$s" != 0 ] || fail "kserve --from 2 accepted a message from node 1"

step "kernel clients: per-opcode callbacks of unimem_mbox_echo on node 2 (service 14)"
on 2 "insmod /opt/unimem/modules/unimem_mbox_echo.ko"
on 1 "unimem-mbox-test kping --node 2 --service 14 --reply-service 15 --opcode 1 --count 5" | grep -E '^(ok|RESULT)'
on 1 "unimem-mbox-test kping --node 2 --service 14 --reply-service 15 --opcode 2 --expect-increment --count 5" | grep '^ok'
step "can fail: opcode 2's increment is not an echo"
! on_may_fail 1 "unimem-mbox-test --timeout 10 kping --node 2 --service 14 --reply-service 15 --opcode 2 --count 1" >/dev/null 2>&1 ||
  fail "an incremented reply passed as an echo"
# Opcode 3 has no callback: the message is counted as dropped on node 2.
dropped() { on 2 "awk '\$1 == 14 && NF == 5 { print \$5 }' $STATS" | tail -1; }
before=$(dropped); before=${before:-0}
on 1 "unimem-mbox-test kping --node 2 --service 14 --opcode 3 --no-echo --count 1" >/dev/null
after=$before
for _ in $(seq 25); do after=$(dropped); [ "${after:-0}" -gt "$before" ] && break; sleep 0.2; done
expect_eq "$after" "$((before + 1))" "service 14 messages dropped on node 2 for an opcode without callback"
step "a service served by kernel callbacks cannot be bound by user space; unload frees it"
! on_may_fail 2 "unimem-mbox-test kserve --service 14 --count 0" 2>/dev/null || fail "user space bound service 14 while the kernel serves it"
! on_may_fail 2 "rmmod unimem_mailbox" 2>/dev/null || fail "unimem_mailbox unloaded under its kernel client"
on 2 "rmmod unimem_mbox_echo && unimem-mbox-test kserve --service 14 --count 0"

step "unload is refused while a mailbox file is open; the node keeps working"
on 0 "rm -f /tmp/mbox-release"
start_named 0 holdfd "unimem-mbox-test hold --until-file /tmp/mbox-release --seconds 300" >/dev/null
! on_may_fail 0 rmmod unimem_mailbox 2>/dev/null || fail "rmmod succeeded with /dev/unimem_mailbox open"
on 0 "test -c /dev/unimem_mailbox"
i=$(start_named 0 srv "unimem-mbox serve --count 5")
on 2 "unimem-mbox ping --node 0 --iface $i --count 5" | grep '^ok'
expect_ok 0 srv
on 0 "touch /tmp/mbox-release"
expect_ok 0 holdfd

step "with every file closed, rmmod succeeds; reload works"
on 0 "rmmod unimem_mailbox && ! test -e /dev/unimem_mailbox && ! test -e /sys/kernel/debug/unimem_mailbox && ! test -e $SYSC"
on 0 "insmod $KO && test -c /dev/unimem_mailbox"
i=$(start_named 0 srv "unimem-mbox serve --count 10")
on 0 "unimem-mbox ping --node 0 --iface $i --count 5" | grep '^ok'
on 2 "unimem-mbox ping --node 0 --iface $i --count 5" | grep '^ok'
expect_ok 0 srv

step "no kernel warnings during the test"
for n in $(seq 0 $((NODES - 1))); do
  ! on_may_fail "$n" "dmesg | tail -n +$((dmesg_lines[$n] + 1)) | grep -E 'BUG:|Oops|WARNING:|Call Trace|general protection'" ||
    fail "node $n logged a kernel warning (above)"
done
on 0 "dmesg | grep -i 'unimem_mailbox' | tail -3" || true
echo "mailbox: all checks passed"
