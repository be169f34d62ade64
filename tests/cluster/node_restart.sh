#!/usr/bin/env bash
# Node restart acceptance (scripts/cluster kill/stop/start/restart/pause/resume): a node that
# crashes (kill -9) or is stopped cleanly comes back under its node id; what another node wrote
# into its partition, and what it wrote itself, survives (the fabric keeps the GAS); doorbells
# and the mailbox work again in both directions; the other nodes keep working meanwhile. A paused
# (SIGSTOP) node answers nothing, its partition stays usable by the others, and it works again
# once resumed. Ends with every node running; a restarted node has no modules loaded, as after
# `scripts/cluster up`.
source "$(dirname "$0")/lib.sh"
EUSRVMEM=/opt/unimem/modules/unimem_eusrvmem.ko
MAILBOX=/opt/unimem/modules/unimem_mailbox.ko
RUN=${UNIMEM_RUN:-$ROOT/build/cluster}
[ "$NODES" -ge 3 ] || fail "needs at least 3 nodes"

# Background processes (lib.sh's bg, wait_log): /tmp/restart-NAME.{log,pid} on the node.
BG=restart

# state NODE: the node's word in `scripts/cluster status` (running, paused, stopped).
state() { "$CLUSTER" status | sed -n "s/^node $1: \([a-z]*\).*/\1/p"; }
# load NODE: unimem_eusrvmem and unimem_mailbox, unless already loaded.
load() {
  on "$1" "lsmod | grep -q '^unimem_eusrvmem' || insmod $EUSRVMEM
           lsmod | grep -q '^unimem_mailbox' || insmod $MAILBOX
           test -c /dev/eusrvmem && test -c /dev/unimem_mailbox"
}
boot_id() { on "$1" cat /proc/sys/kernel/random/boot_id; }
# gas_info NODE KEY: a value from `unimem-gas info`.
gas_info() { on "$1" unimem-gas info | sed -n "s/^$2: //p"; }
# answers NODE SECS: whether the node's agent answers within SECS seconds.
answers() { "$ROOT/target/release/unimem-exec" --socket "$RUN/node$1.agent" --connect-timeout "$2" --ping 2>/dev/null; }

# ring_and_count FROM TO: FROM rings TO's doorbell vector 0; TO's count must rise by exactly one.
ring_and_count() {
  local from=$1 to=$2 before after
  before=$(on "$to" unimem-gas count --vector 0)
  on "$from" unimem-gas ring --node "$to" --vector 0
  after=$before
  for _ in $(seq 50); do
    after=$(on "$to" unimem-gas count --vector 0)
    [ "$after" -gt "$before" ] && break
    sleep 0.2
  done
  expect_eq "$after" "$((before + 1))" "node $to's doorbell count after node $from rang once"
}

# mbox_ping CLIENT SERVER: an echo server on SERVER, 10 intact round trips from CLIENT.
mbox_ping() {
  local c=$1 s=$2 iface out
  bg "$s" srv "unimem-mbox serve --count 10"
  wait_log "$s" srv '^iface [0-9]+ node '
  iface=$(on "$s" "sed -n 's/^iface \([0-9]*\) node .*/\1/p' /tmp/$BG-srv.log | head -1")
  out=$(on "$c" "unimem-mbox ping --node $s --iface $iface --count 10 --size 25")
  grep -q "^ok: 10 echoes intact, all from node $s " <<<"$out" ||
    { echo "$out" >&2; fail "mailbox ping node $c -> node $s: no intact echoes"; }
  wait_log "$s" srv '^exit='
  on "$s" "grep -q '^exit=0' /tmp/$BG-srv.log && grep -q '^served 10 packets, 0 not echoed' /tmp/$BG-srv.log" ||
    { on_may_fail "$s" "cat /tmp/$BG-srv.log" >&2; fail "node $s's echo server did not serve 10 packets"; }
  echo "mailbox: node $c <-> node $s, 10 round trips"
}

# check_node1 WHY [rung-while-down]: node 1 is back as node 1, sees the data, rings and is rung, mails and is mailed.
check_node1() {
  step "$1: node 1 is running, a new boot, node id 1 of $NODES"
  expect_eq "$(state 1)" running "node 1 in status"
  [ "$(boot_id 1)" != "$boot" ] || fail "node 1 has the boot id of before: it did not restart"
  boot=$(boot_id 1)
  on 1 "! lsmod | grep -q '^unimem_'" || fail "a fresh node 1 has unimem modules loaded (up leaves none)"
  load 1
  expect_eq "$(gas_info 1 node_id)" 1 "node_id of the restarted node 1"
  expect_eq "$(gas_info 1 node_count)" "$NODES" "node_count of the restarted node 1"
  expect_eq "$(gas_info 1 partition_size)" "$part" "partition_size of the restarted node 1"
  if [ "${2:-}" = rung-while-down ]; then
    # The fabric drains a returning node's doorbells: a ring meant for its previous boot is lost.
    expect_eq "$(on 1 unimem-gas count --vector 0)" 0 "node 1's vector 0 count (rung only while it was down)"
  fi

  step "$1: the patterns written before are still in node 1's partition"
  on 1 unimem-gas verify --node 1 --offset "$off_b" --len $len --seed "$seed_b"
  on 2 unimem-gas verify --node 1 --offset "$off_b" --len $len --seed "$seed_b"
  on 1 unimem-gas verify --node 1 --offset "$off_own" --len $len --seed "$seed_own"
  ! on_may_fail 1 unimem-gas verify --node 1 --offset "$off_b" --len $len --seed $((seed_b + 1)) 2>/dev/null ||
    fail "verify accepted a wrong seed"

  step "$1: doorbells both ways between node 1 and node 0"
  ring_and_count 0 1
  ring_and_count 1 0
  step "$1: mailbox both ways between node 1 and node 0"
  mbox_ping 1 0
  mbox_ping 0 1
}

cleanup() {
  # Leave the cluster usable for the tests after this one, whatever failed.
  [ "$(state 2)" != paused ] || "$CLUSTER" resume 2 || true
  [ "$(state 1)" != stopped ] || "$CLUSTER" start 1 || true
  bg_cleanup
}
trap cleanup EXIT

step "load unimem_eusrvmem and unimem_mailbox on every node"
declare -A dmesg_lines
for n in $(seq 0 $((NODES - 1))); do
  load "$n"
  dmesg_lines[$n]=$(on "$n" "dmesg | wc -l")
done
boot=$(boot_id 1)
expect_eq "$(state 1)" running "node 1 in status before the test"

step "node 2 writes a pattern into node 1's partition, node 1 one into its own"
part=$(gas_info 2 partition_size)
len=$((4 << 20))
# Near the end: a partition's start holds the mailbox rings and the chunks kram-daemon lends.
off_b=$((part - 3 * len))
off_own=$((part - 5 * len))
seed_b=$(( (RANDOM << 15) | RANDOM ))
seed_own=$((seed_b ^ 0x5a5a5a))
on 2 unimem-gas write --node 1 --offset $off_b --len $len --seed $seed_b
on 1 unimem-gas write --node 1 --offset $off_own --len $len --seed $seed_own
on 0 unimem-gas verify --node 1 --offset $off_b --len $len --seed $seed_b

step "kill node 1 (kill -9 of its QEMU)"
"$CLUSTER" kill 1
expect_eq "$(state 1)" stopped "node 1 in status after kill"
[ ! -e "$RUN/peer-1" ] || fail "the fabric still lists node 1 as connected"
! on_may_fail 1 true 2>/dev/null || fail "exec on a killed node succeeded"
expect_eq "$(state 0)" running "node 0 in status"
expect_eq "$(state 2)" running "node 2 in status"

step "while node 1 is down: its partition keeps node 2's data, nodes 0 and 2 keep working"
on 0 unimem-gas verify --node 1 --offset $off_b --len $len --seed $seed_b
# A doorbell for the absent node is dropped, not an error.
on 0 unimem-gas ring --node 1 --vector 0
mbox_ping 0 2

step "start node 1 again"
"$CLUSTER" start 1
check_node1 "after kill + start" rung-while-down
! grep -q 'reboot: Power down' "$RUN/node1.console.prev" || fail "the killed node's console says it powered down"

step "restart node 1 with a clean stop"
"$CLUSTER" restart 1
grep -q 'reboot: Power down' "$RUN/node1.console.prev" ||
  { tail -5 "$RUN/node1.console.prev" >&2; fail "node 1 was not powered off cleanly (console above)"; }
check_node1 "after a clean restart"

step "pause node 2: it answers nothing, the others use its partition meanwhile"
"$CLUSTER" pause 2
expect_eq "$(state 2)" paused "node 2 in status after pause"
! answers 2 3 || fail "a paused node answered"
seed_p=$((seed_b + 7))
off_p=$((part - 7 * len))
on 0 unimem-gas write --node 2 --offset $off_p --len $len --seed $seed_p
mbox_ping 1 0

step "resume node 2: it answers and sees what node 0 wrote while it was frozen"
"$CLUSTER" resume 2
expect_eq "$(state 2)" running "node 2 in status after resume"
answers 2 30 || fail "node 2 does not answer after resume"
on 2 unimem-gas verify --node 2 --offset $off_p --len $len --seed $seed_p
ring_and_count 0 2
mbox_ping 2 0
mbox_ping 1 2

step "no kernel warnings on the nodes that stayed up"
for n in 0 2; do
  ! on_may_fail "$n" "dmesg | tail -n +$((dmesg_lines[$n] + 1)) | grep -E 'BUG:|Oops|WARNING:|Call Trace|general protection'" ||
    fail "node $n logged a kernel warning (above)"
done
! on_may_fail 1 "dmesg | grep -E 'BUG:|Oops|WARNING:|Call Trace|general protection'" || fail "node 1 logged a kernel warning (above)"
"$CLUSTER" status
echo "node_restart: all checks passed"
