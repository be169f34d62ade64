# shellcheck shell=bash
# Helpers for cluster acceptance tests. Sourced by each test, which runs against a cluster
# started by scripts/test.sh (UNIMEM_RUN points at it).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# The run directory's shares and the architectures' builds (run_share, userspace_bin, arch_cc).
# shellcheck source=../../scripts/lib/common.sh
source "$ROOT/scripts/lib/common.sh"
CLUSTER=$ROOT/scripts/cluster
NODES=$(cat "${UNIMEM_RUN:-$ROOT/build/cluster}/nodes")

# Sizes and times of the workloads scale through the environment, so that one suite runs on the
# normal kernel and on the debug kernel (scripts/test.sh --debug-kernel: KASAN, lockdep, kmemleak
# make every node larger and slower). Unset, everything is as the tests were written for the
# normal kernel and a 96 MiB node 0.
#   UNIMEM_TIMEOUT_SCALE=K       every command's time limit K times longer (default 1)
#   UNIMEM_SWAP_EXCESS_MIB=N     a swap workload is what the node has available plus N MiB, not a
#                                multiple of its RAM (see swap_work)
#   UNIMEM_NUMA_LOCAL_FREE_MIB=N numa.sh leaves node 0 only N MiB of local memory before checking
#                                that a remove which local memory cannot take is refused

# on NODE CMD...: run a shell command on NODE, failing the test if it fails.
on() { local n=$1; shift; "$CLUSTER" exec "$n" --timeout "$(( ${TIMEOUT:-120} * ${UNIMEM_TIMEOUT_SCALE:-1} ))" -- "$@"; }
# on_may_fail NODE CMD...: run and return its status without failing.
on_may_fail() { local n=$1; shift; set +e; "$CLUSTER" exec "$n" --timeout "$(( ${TIMEOUT:-120} * ${UNIMEM_TIMEOUT_SCALE:-1} ))" -- "$@"; local s=$?; set -e; return $s; }
# fail WHY: the check failed; the test ends. With UNIMEM_KEEP_GOING=FILE (scripts/test-against.sh)
# the failure is appended to FILE as "STEP: WHY" and the test goes on, so that one run against
# older modules shows every step that tells them from this tree's, not only the first; later
# failures may then follow from earlier ones. A setup command that fails still ends the test.
fail() {
  echo "FAIL: $*" >&2
  if [ -n "${UNIMEM_KEEP_GOING:-}" ]; then echo "${STEP_NOW:-before the first step}: $*" >>"$UNIMEM_KEEP_GOING"; return 0; fi
  exit 1
}
# expect_out NODE PATTERN WHAT CMD: runs CMD on NODE and shows its output; fails with WHAT unless a
# line matches PATTERN (grep's basic regular expression).
expect_out() { local out; out=$(on "$1" "$4"); echo "$out"; grep -q "$2" <<<"$out" || fail "$3"; }
step() { STEP_NOW=$*; echo "--- $*"; }
expect_eq() { [ "$1" = "$2" ] || fail "$3: got '$1', expected '$2'"; }

# Background processes on a node, in /tmp/$BG-NAME.{log,pid} there ($BG: the test's prefix).
# bg NODE NAME CMD: start CMD in the background; its output, then "exit=<status>", go to the
# log. The exec agent returns once the shell exits, so the process outlives this call.
bg() {
  local n=$1 name=$2; shift 2
  on "$n" "rm -f /tmp/$BG-$name.log; ( $* & echo \$! > /tmp/$BG-$name.pid; wait \$!; s=\$?; rm -f /tmp/$BG-$name.pid; echo \"exit=\$s\" ) </dev/null >/tmp/$BG-$name.log 2>&1 &"
}
# wait_log NODE NAME REGEX [SECONDS]: wait (default 30 s, times UNIMEM_TIMEOUT_SCALE) until the log
# has a line matching REGEX.
wait_log() {
  local tries=$((${4:-30} * 5 * ${UNIMEM_TIMEOUT_SCALE:-1}))
  # The command itself may take the whole wait: its time limit must not end it earlier.
  TIMEOUT=$(( ${4:-30} + 60 > ${TIMEOUT:-120} ? ${4:-30} + 60 : ${TIMEOUT:-120} )) on "$1" "for i in \$(seq $tries); do grep -qE '$3' /tmp/$BG-$2.log 2>/dev/null && exit 0; sleep 0.2; done; echo 'log of $2:'; cat /tmp/$BG-$2.log; exit 1" ||
    fail "node $1: '$2' never printed /$3/"
}
# bg_cleanup: kill what bg started on every node (the tests' EXIT trap).
bg_cleanup() {
  for n in $(seq 0 $((NODES - 1))); do
    "$CLUSTER" exec "$n" --timeout 20 -- "for f in /tmp/$BG-*.pid; do [ -f \"\$f\" ] && kill \$(cat \"\$f\") 2>/dev/null; rm -f \"\$f\"; done; true" >/dev/null 2>&1 || true
  done
}
# kram_cleanup: what a KRAM test may leave behind if it fails (the EXIT trap of those tests):
# swap off and unimem_kram out on every node, no kram-daemon running.
kram_cleanup() {
  for n in $(seq 0 $((NODES - 1))); do
    "$CLUSTER" exec "$n" --timeout "$STOP_TIMEOUT" -- "swapoff -a 2>/dev/null; rmmod unimem_kram 2>/dev/null; $STOP_DAEMON" >/dev/null 2>&1 || true
  done
}
# unimem_gsas's insmod arguments: its wait for the daemon's offer scales with the time limits
# (a debug kernel answers slowly), within the module's 60 s bound. The pool stays at its size
# (pool_max_mib=0) unless a test sets GSAS_POOL_MAX_MIB: most tests count on a pool of a known
# size (it fills, a user's share of it); gsas_grow.sh and shmem.sh test a growing one.
# shellcheck disable=SC2034 # used by the tests that source this file
GSAS_ARGS="offer_timeout_ms=$(( 5000 * ${UNIMEM_TIMEOUT_SCALE:-1} < 60000 ? 5000 * ${UNIMEM_TIMEOUT_SCALE:-1} : 60000 )) pool_max_mib=${GSAS_POOL_MAX_MIB:-0}"
# gsas_arg NAME=VALUE: sets one parameter in GSAS_ARGS, replacing its value there (a module
# parameter given twice fails insmod with EEXIST).
gsas_arg() {
  local a kept=()
  for a in $GSAS_ARGS; do [ "${a%%=*}" = "${1%%=*}" ] || kept+=("$a"); done
  GSAS_ARGS="${kept[*]} $1"
}
# Guest shell code: unimem_gsas unloaded (it returns its pool to the daemon), then kram-daemon
# stopped once it has taken the pool back, and gone before this returns: otherwise the next
# test's daemon restores a lease from the record, or a dying daemon still answers --status.
# shellcheck disable=SC2034 # used by the tests that source this file
STOP_TIMEOUT=$((60 + 60 * ${UNIMEM_TIMEOUT_SCALE:-1}))
# shellcheck disable=SC2034 # used by the tests that source this file
STOP_DAEMON="for i in \$(seq 50); do lsmod | grep -q '^unimem_gsas ' || break; rmmod unimem_gsas 2>/dev/null && break; sleep 0.2; done
  for i in \$(seq $((150 * ${UNIMEM_TIMEOUT_SCALE:-1}))); do s=\$(kram-daemon --status 2>/dev/null) || break; echo \"\$s\" | grep -q ', lent 0\$' && break; sleep 0.2; done
  killall kram-daemon 2>/dev/null
  for i in \$(seq 150); do pidof kram-daemon >/dev/null || break; sleep 0.2; done; true"
# dmesg_mark NODE: the kernel log's current length; dmesg_clean NODE MARK: fails on errors logged since.
dmesg_mark() { on "$1" "dmesg | wc -l"; }
dmesg_clean() { on "$1" "! dmesg | tail -n +$(($2 + 1)) | grep -E 'BUG|Oops|WARNING|I/O error|Read-error'"; }
# The guests' unprivileged test user (scripts/build-guest.sh writes their /etc/passwd and
# /etc/group): unimem-user, uid and gid 1000, also in group unimem (gid 900), which may open
# /dev/unimem_mailbox once load_base has run.
# shellcheck disable=SC2034 # used by the tests that source this file
TEST_USER=unimem-user TEST_UID=1000 UNIMEM_GID=900
# load_base NODE: unimem_eusrvmem and unimem_mailbox loaded on NODE (a node boots without them),
# and /dev/unimem_mailbox root:unimem 0660, as a host's udev rule (dist/udev/60-unimem.rules) makes
# it: the guests have no udev. Every time, since a reload of the module makes the node anew 0600.
load_base() {
  on "$1" "lsmod | grep -q '^unimem_eusrvmem' || insmod /opt/unimem/modules/unimem_eusrvmem.ko
           lsmod | grep -q '^unimem_mailbox' || insmod /opt/unimem/modules/unimem_mailbox.ko
           chown 0:$UNIMEM_GID /dev/unimem_mailbox && chmod 0660 /dev/unimem_mailbox"
}
# as_user CMD...: guest shell code that runs CMD (its words joined with spaces, as `on` joins
# them; quote for the guest's shell) as the test user, with its groups (initgroups), its passwd
# environment and the agent's PATH (our binaries), e.g.
#   on 0 "$(as_user "unimem-gsas fork --node 1 --wait -- /bin/sh -c 'id'")"
# /dev/unimem_mailbox is the user's only after load_base.
# squote TEXT: TEXT as one single-quoted word of the guest's shell.
squote() { local q="'"; printf '%s' "$q${1//$q/$q\\$q$q}$q"; }
as_user() {
  # shellcheck disable=SC2016 # $PATH is the guest shell's
  printf '/usr/bin/setpriv --reuid=%s --regid=%s --init-groups --reset-env /usr/bin/env PATH="$PATH" /bin/sh -c %s' \
    "$TEST_UID" "$TEST_UID" "$(squote "$*")"
}
# as_other CMD...: the same as a second unprivileged user, neither root nor the test user: uid and
# gid OTHER_UID, in group unimem only, without a passwd entry (so with an empty environment but
# the agent's PATH).
OTHER_UID=1001
as_other() {
  # shellcheck disable=SC2016 # $PATH is the guest shell's
  printf '/usr/bin/setpriv --reuid=%s --regid=%s --groups=%s /usr/bin/env -i PATH="$PATH" /bin/sh -c %s' \
    "$OTHER_UID" "$OTHER_UID" "$UNIMEM_GID" "$(squote "$*")"
}
# The GSAS, DHT and OpenSHMEM tests run as root and, from their *_as_user.sh twins
# (UNIMEM_TEST_AS_USER=1), as the test user. Their job commands go through job, job_may_fail
# and bg_job, and name the job's tree with $(tree_opt): as root `--tree $TREE` (SET_TREE); as
# the user the tree that share_tree_up serves on every node, whose id share_tree_up puts in
# TREE (so that root's cleanup, `--tree $TREE`, still frees what the job left).
AS_USER=${UNIMEM_TEST_AS_USER:-0}
TREE_SOCK=/tmp/unimem-test-tree.sock
# as_job CMD...: guest shell code running CMD as the job's user (root, or as_user).
as_job() { if [ "$AS_USER" = 1 ]; then as_user "$@"; else printf '%s' "$*"; fi; }
job() { local n=$1; shift; on "$n" "$(as_job "$@")"; }
job_may_fail() { local n=$1; shift; on_may_fail "$n" "$(as_job "$@")"; }
bg_job() { local n=$1 name=$2; shift 2; bg "$n" "$name" "$(as_job "$@")"; }
tree_opt() { if [ "$AS_USER" = 1 ]; then echo "--tree-socket $TREE_SOCK"; else echo "--tree $TREE"; fi; }
who_runs() { if [ "$AS_USER" = 1 ]; then echo "$TEST_USER"; else echo root; fi; }
# Guest shell code: the tree servers of share_tree_up stopped (before gsasd, their parent).
# shellcheck disable=SC2034 # used by the tests that source this file
STOP_TREE="killall unimem-gsas 2>/dev/null; true"
# share_tree_up: as the user, one tree for the job on every node: `unimem-gsas share-tree` on
# node 0 (bg name "tree"), remoteForked from there to the others (gsasd must run on them), each
# serving $TREE_SOCK; TREE becomes its id. As root, nothing (the job's tree is SET_TREE's).
share_tree_up() {
  [ "$AS_USER" = 1 ] || return 0
  local n
  bg_job 0 tree "exec unimem-gsas share-tree --socket $TREE_SOCK"
  wait_log 0 tree '^serving tree' 30
  TREE=$(on 0 "sed -n 's/^serving tree \(0x[0-9a-f]*\) .*/\1/p' /tmp/$BG-tree.log")
  [ -n "$TREE" ] || fail "share-tree printed no tree id"
  for n in $(seq 1 $((NODES - 1))); do
    job 0 "unimem-gsas --tree-socket $TREE_SOCK fork --node $n -- /opt/unimem/bin/unimem-gsas share-tree --socket $TREE_SOCK" >/dev/null ||
      fail "remoteFork of share-tree to node $n"
    on "$n" "for i in \$(seq 100); do [ -S $TREE_SOCK ] && exit 0; sleep 0.2; done; exit 1" ||
      fail "node $n: no tree socket $TREE_SOCK"
  done
  echo "tree $TREE of $TEST_USER served at $TREE_SOCK on nodes 0-$((NODES - 1))"
}
# job_nodes_up KO: every node ready for jobs of tree $TREE: base modules, kram-daemon and the GSAS
# service KO (gsas_all_up); as the user also gsasd (its tree reaches other nodes by remoteFork
# only) and the tree servers (share_tree_up).
job_nodes_up() {
  if [ "$AS_USER" = 1 ]; then
    fork_nodes_up /tmp/gsasd
    share_tree_up
  else
    gsas_all_up "$1"
  fi
}
# kram_daemon NODE ARGS...: (re)start NODE's kram-daemon in the background (bg name "daemon",
# log /tmp/kram-daemon.log) and wait until it answers --status.
kram_daemon() {
  local n=$1; shift
  bg "$n" daemon "kram-daemon --log-file /tmp/kram-daemon.log $*"
  on "$n" "for i in \$(seq 50); do kram-daemon --status >/dev/null 2>&1 && exit 0; sleep 0.2; done; cat /tmp/$BG-daemon.log; exit 1" ||
    fail "kram-daemon did not start on node $n"
}
# The guests' shares (scripts/cluster): one per architecture the cluster's nodes have (x86_64:
# share/, arm64: share-arm64/), with that architecture's builds, mounted at /opt/unimem.
RUNDIR=${UNIMEM_RUN:-$ROOT/build/cluster}
cluster_arches() { run_arches "$RUNDIR"; }
arch_share() { run_share "$RUNDIR" "$1"; }
# The share node N sees at /opt/unimem (for files the host hands that node).
node_share() { run_share "$RUNDIR" "$(run_node_arch "$RUNDIR" "$1")"; }
# share_bins BIN...: our binaries into the guests' shares, in case the cluster was staged before
# they were built (the guests see the directory over 9p at once).
share_bins() {
  local a b
  for a in $(cluster_arches); do
    for b in "$@"; do
      [ -x "$(userspace_bin "$a")/$b" ] || fail "$(userspace_bin "$a")/$b missing: run 'make userspace' (arm64: scripts/build-arm64.sh)"
      cp "$(userspace_bin "$a")/$b" "$(arch_share "$a")/bin/$b"
    done
  done
}
# share_lib LIB: libLIB.so into the guests' /opt/unimem/lib.
share_lib() {
  local a
  for a in $(cluster_arches); do
    [ -f "$(userspace_bin "$a")/lib$1.so" ] || fail "$(userspace_bin "$a")/lib$1.so missing: run 'make userspace' (arm64: scripts/build-arm64.sh)"
    mkdir -p "$(arch_share "$a")/lib"
    cp "$(userspace_bin "$a")/lib$1.so" "$(arch_share "$a")/lib/"
  done
}
# c_examples LIB PREFIX SRCDIR EXAMPLE...: libLIB.so into the guests' /opt/unimem/lib, and each
# SRCDIR/EXAMPLE.c built on the host via pkg-config LIB (the guests have no compiler), for each
# architecture of the cluster (arm64: the cross compiler, linked with the arm64 libLIB.so),
# linked with -rpath /opt/unimem/lib, into the guests' bin as PREFIX + EXAMPLE (_ as -).
c_examples() {
  local lib=$1 prefix=$2 src=$3 flags a ex
  shift 3
  share_lib "$lib"
  PKG_CONFIG_PATH=$(dirname "$("$ROOT/userspace/$lib/$lib-pc.sh")")
  export PKG_CONFIG_PATH
  flags=$(pkg-config --cflags --libs "$lib") || fail "pkg-config does not find $lib"
  echo "pkg-config --cflags --libs $lib: $flags"
  for a in $(cluster_arches); do
    for ex in "$@"; do
      # The architecture's own library directory first: the .pc file's is the x86_64 build's.
      # shellcheck disable=SC2086 # the flags are words
      "$(arch_cc "$a")" -Wall -Wextra -Werror -O2 -o "$(arch_share "$a")/bin/$prefix${ex//_/-}" "$src/$ex.c" \
        -L"$(userspace_bin "$a")" $flags -pthread -Wl,-rpath,/opt/unimem/lib || fail "$(arch_cc "$a") $ex.c"
    done
  done
}
# oshcc_progs PROG...: tests/shmem/PROG.c built on the host with oshcc (libshmem via pkg-config)
# for each architecture of the cluster, into the guests' bin.
oshcc_progs() {
  local a p
  "$ROOT/userspace/shmem/shmem-pc.sh" >/dev/null
  for a in $(cluster_arches); do
    for p in "$@"; do
      CC=$(arch_cc "$a") OSHCC_RPATH=/opt/unimem/lib "$ROOT/userspace/shmem/oshcc" -std=gnu11 -pthread -Wall -Wextra \
        -Werror -O2 -L"$(userspace_bin "$a")" -o "$(arch_share "$a")/bin/$p" "$ROOT/tests/shmem/$p.c" || fail "oshcc $p.c ($a)"
    done
  done
}
# stop_all [CMD]: CMD (default: $STOP_DAEMON) on every node, errors ignored (the EXIT traps).
stop_all() {
  local n
  for n in $(seq 0 $((NODES - 1))); do
    "$CLUSTER" exec "$n" --timeout "$STOP_TIMEOUT" -- "${1:-$STOP_DAEMON}" >/dev/null 2>&1 || true
  done
}
# gsas_cleanup TREE ADDR...: the end of a GSAS test's EXIT trap: frees TREE's allocations ADDR...
# (the service refuses to unload while pages are allocated), unloads the services and stops the
# daemons (stop_all: they take the pools back), then kills what bg started (a daemon killed
# first would keep the lease in its record for the next test's daemon).
gsas_cleanup() {
  local tree=$1 a
  shift
  for a in "$@"; do
    "$CLUSTER" exec 0 --timeout 30 -- "unimem-gsas --tree $tree free $a" >/dev/null 2>&1 || true
  done
  # As the user: the tree servers, then their parent gsasd, go first.
  if [ "$AS_USER" = 1 ]; then stop_all "$STOP_TREE; $STOP_GSASD; $STOP_DAEMON"; else stop_all "$STOP_DAEMON"; fi
  bg_cleanup
}
# gsas_all_up [KO]: on every node: base modules, no daemon left from before, a mark of the kernel
# log (marks[NODE], for dmesg_clean), kram-daemon and the GSAS service (gsas_up).
# shellcheck disable=SC2034 # marks is read by the tests (dmesg_clean)
gsas_all_up() {
  declare -gA marks
  local n
  for n in $(seq 0 $((NODES - 1))); do
    load_base "$n"
    on "$n" "$STOP_DAEMON"
    marks[$n]=$(dmesg_mark "$n")
    gsas_up "$n" "${1:-/opt/unimem/modules/unimem_gsas.ko}"
  done
}
# The answers of `unimem-mbox-test gsas-raw` (raw GSAS requests): status_of OUTPUT K is the status
# of response K ("resp 0.K: ..."), value_of OUTPUT K its value; expect_resp OUTPUT K STATUS
# [VALUE] fails the test unless they are as given.
status_of() { sed -n "s/^resp 0\.$2: .* status \([A-Z_0-9]*\) .*/\1/p" <<<"$1"; }
value_of() { sed -n "s/^resp 0\.$2: .* value \(0x[0-9a-f]*\)$/\1/p" <<<"$1"; }
expect_resp() { # OUTPUT K STATUS [VALUE]
  local s v; s=$(status_of "$1" "$2"); v=$(value_of "$1" "$2")
  [ "$s" = "$3" ] || { echo "$1" >&2; fail "response $2: status '$s', expected $3"; }
  [ -z "${4:-}" ] || [ "$((v))" = "$(($4))" ] || { echo "$1" >&2; fail "response $2: value $v, expected $4"; }
}
# gsas_up NODE [KO]: NODE's kram-daemon (KRAM_CHUNKS chunks, default 64), past its grace period,
# and the GSAS service loaded with its pool borrowed from it (GSAS_ARGS pool_mib= sets its size).
gsas_up() {
  kram_daemon "$1" --chunks "${KRAM_CHUNKS:-64}" --offer-timeout 6
  daemon_serving "$1"
  on "$1" "insmod ${2:-/opt/unimem/modules/unimem_gsas.ko} $GSAS_ARGS"
}
# daemon_serving NODE: waits until NODE's kram-daemon is past its grace period (a daemon that
# found no usable lease record in its partition, e.g. after the chaos test scribbled over it,
# defers REQUESTs for a lease time), so that a borrower loading now gets its offer in time.
daemon_serving() {
  on "$1" "for i in \$(seq $((150 * ${UNIMEM_TIMEOUT_SCALE:-1}))); do kram-daemon --status | grep -q '^grace:' || exit 0; sleep 0.2; done; kram-daemon --status; exit 1" ||
    fail "kram-daemon on node $1 is still in its grace period"
}
# swap_work NODE WORK_MIB EXCESS_MIB: prints "WORK_MIB EXCESS_MIB" for a verifying workload that
# must push NODE into swap, EXCESS_MIB being how much of it RAM cannot hold. The tests pass 1.5x
# the node's RAM (the seed's demonstration, sized for a 96 MiB node), printed back unchanged.
# With UNIMEM_SWAP_EXCESS_MIB=N it is MemAvailable + N: a debug kernel's node is large and most of
# its RAM is the kernel's own bookkeeping (KASAN shadow, kmemleak, lockdep, slab debugging), so
# 1.5x RAM would not fit in RAM plus the test's swap devices (about 100 MiB).
swap_work() {
  local avail
  if [ -z "${UNIMEM_SWAP_EXCESS_MIB:-}" ]; then echo "$2 $3"; return; fi
  avail=$(on "$1" "awk '/^MemAvailable/ {print int(\$2 / 1024)}' /proc/meminfo")
  echo "$((avail + UNIMEM_SWAP_EXCESS_MIB)) $UNIMEM_SWAP_EXCESS_MIB"
}
# Guest shell code: gsasd (the remoteFork daemon) stopped and gone (it holds /dev/unimem_gsas,
# so unimem_gsas cannot be unloaded before).
# shellcheck disable=SC2034 # used by the tests that source this file
STOP_GSASD="killall gsasd 2>/dev/null; for i in \$(seq 50); do pidof gsasd >/dev/null || break; sleep 0.1; done"
# gsasd_up NODE [LOG_DIR [ARGS...]]: (re)start NODE's gsasd in the background (bg name "gsasd";
# children's logs in LOG_DIR, default /tmp/gsasd; more flags ARGS, e.g. --policy FILE) and wait
# until the service has it.
gsasd_up() {
  local n=$1 logs=${2:-/tmp/gsasd}
  shift $(($# < 2 ? $# : 2))
  bg "$n" gsasd "gsasd --log-dir $logs $*"
  wait_log "$n" gsasd 'serving remoteFork' 20
}
# fork_nodes_up LOGS: every node started clean with the base modules, kram-daemon, unimem_gsas
# and gsasd (its children's logs in LOGS); each node's kernel log length before, in marks[NODE].
fork_nodes_up() {
  local n
  declare -gA marks
  for n in $(seq 0 $((NODES - 1))); do
    load_base "$n"
    on "$n" "$STOP_GSASD; $STOP_DAEMON; rm -rf $1"
    # shellcheck disable=SC2034 # read by the tests that call this
    marks[$n]=$(dmesg_mark "$n")
    gsas_up "$n"
    on "$n" "test -c /dev/unimem_gsas"
    gsasd_up "$n" "$1"
  done
}
