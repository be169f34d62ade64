#!/usr/bin/env bash
# remoteFork (seed 000 section 2.2, issue 10 item 5), 4 nodes, every node running its atomic
# service (unimem_gsas.ko) and its remoteFork daemon (gsasd):
#  - node 0's process allocates a page and remoteForks `unimem-gsas faa` on nodes 1-3, in its
#    own protection tree: the children Fetch&Add into the page and exit with distinct statuses;
#    the process waits for each (statuses checked) and reads the exact sum (invariants ii and
#    iii across nodes and binaries: `unimem-gsas-test check fork`);
#  - a process of another tree running the same binary, remoteForked on node 1 and started
#    locally, is denied on that page, which stays unchanged; a WAIT by another tree is denied;
#  - bad input: non-existent path, relative path, empty argument, too long or too many
#    arguments (library and service), WAIT on an unknown child, twice on the same child;
#  - the CLI: `unimem-gsas fork --wait` exits with the child's status; a child's output is in
#    its node's gsasd log directory;
#  - another process of the same tree waits for a child (any thread of the tree may); a child
#    whose daemon went away while it ran is reported lost;
#  - users (issue 29): a child forked by the unprivileged test user runs as that user with its
#    groups and no capabilities, and its log is that user's; root without CAP_SYS_ADMIN may not
#    fork (as root: EPERM); a node's fork policy (gsasd --policy) refuses a program outside its
#    allow-path rules and a denied user (EACCES), with clear errors at the issuer and the rule in
#    the daemon's log;
#  - a node whose daemon is not running: FORK fails with a clear error; a second daemon on a
#    node is refused; no kernel warnings.
source "$(dirname "$0")/lib.sh"
SYS=/sys/kernel/unimem_gsas
LOGS=/tmp/gsasd
[ "$NODES" -ge 4 ] || fail "needs 4 nodes"
BG=gsasf

step "copy unimem-gsas, its rig, gsasd, kram-daemon, libgsas.so and the C example to the nodes"
share_bins unimem-gsas unimem-gsas-test gsasd kram-daemon unimem-gas-test
c_examples gsas gsas- "$ROOT/userspace/gsas/examples" fork

cleanup() {
  # The daemons (started with bg) must outlive unimem_gsas's unload, which returns the pool to
  # them: killed first, they would keep the lease in their record for the next test's daemon.
  "$CLUSTER" exec 3 --timeout 20 -- "kill \$(${SLEEPERS:-true}) 2>/dev/null; true" >/dev/null 2>&1 || true
  stop_all "$STOP_GSASD; $STOP_DAEMON"
  bg_cleanup
}
trap cleanup EXIT

# gsasd NODE: (re)start NODE's remoteFork daemon and wait until the service has it.
gsasd() { gsasd_up "$1" "$LOGS"; }

step "every node: base modules, kram-daemon, unimem_gsas, gsasd"
fork_nodes_up "$LOGS"

step "a second daemon on a node is refused"
out=$(on_may_fail 1 "gsasd --log-dir $LOGS 2>&1") && fail "a second gsasd started: $out"
echo "$out"
grep -q 'another gsasd runs on this node' <<<"$out" || fail "second gsasd: unclear error"

step "remoteFork from node 0 to nodes 1-3: statuses, exact sum, another tree denied, bad input"
out=$(on 0 "unimem-gsas-test check fork --nodes 1,2,3 --count 200") || { echo "$out"; fail "check fork"; }
echo "$out"
grep -q '^3 children: .* 0 checks failed$' <<<"$out" || fail "check fork summary"

step "can fail: a child whose exit status is not the one expected is reported"
out=$(on 0 "unimem-gsas fork --node 2 --wait -- /bin/sh -c 'exit 7'; echo status=\$?") 
echo "$out"
grep -q '^status=7$' <<<"$out" || fail "fork --wait did not exit with the child's status"

step "the child's output is in its node's log directory; a killed child reports its signal"
child=$(on 0 "unimem-gsas fork --node 3 --wait -- /bin/sh -c 'echo hello from \$(hostname)'") || fail "fork echo"
serial=$(( child & 0xffffffff ))
on 3 "cat $LOGS/child-$serial.log" | tee /dev/stderr | grep -q '^hello from' || fail "child output not in node 3's $LOGS/child-$serial.log"
out=$(on 0 "unimem-gsas fork --node 1 --wait -- /bin/sh -c 'kill -9 \$\$' 2>&1; echo status=\$?")
echo "$out"
if ! grep -q 'killed by signal 9' <<<"$out" || ! grep -q '^status=137$' <<<"$out"; then
  fail "a killed child"
fi

step "a C program (remoteFork, gsas_wait in libgsas) forks the Rust tool on nodes 1-3 in its tree"
before=$(on 2 "cat $SYS/forks")
out=$(on 0 "gsas-fork /opt/unimem/bin/unimem-gsas 100 1 2 3") || { echo "$out"; fail "gsas-fork"; }
echo "$out"
grep -q '^sum 900, expected 900$' <<<"$out" || fail "C remoteFork: sum"
expect_eq "$(on 2 "cat $SYS/forks")" "$((before + 1))" "node 2's forks counter"

step "another process of the same tree (--tree) waits for a child; a daemon gone while its child runs"
T=0x0e0002
child=$(on 0 "unimem-gsas --tree $T fork --node 1 -- /bin/sh -c 'exit 5'") || fail "fork in tree $T"
out=$(on 0 "unimem-gsas --tree $T wait $child; echo status=\$?")
echo "$out"
grep -q '^status=5$' <<<"$out" || fail "wait from another process of the tree"
out=$(on_may_fail 0 "unimem-gsas --tree 0x0e0003 wait $child 2>&1") && fail "a forgotten child waited for: $out"
child=$(on 0 "unimem-gsas --tree $T fork --node 2 -- /bin/sleep 3") || fail "fork sleep"
on 2 "$STOP_GSASD; ! pidof gsasd"
out=$(on_may_fail 0 "unimem-gsas --tree $T wait $child 2>&1") && fail "WAIT answered after the daemon went: $out"
echo "$out"
grep -q 'no remoteFork daemon on node 2 (is gsasd running there?), or it went away' <<<"$out" || fail "lost child: unclear error"
gsasd 2

step "no daemon on node 3: FORK fails with a clear error; back after a restart"
on 3 "$STOP_GSASD; ! pidof gsasd"
out=$(on_may_fail 0 "unimem-gsas fork --node 3 -- /bin/true 2>&1") && fail "FORK without a daemon succeeded: $out"
echo "$out"
grep -q 'no remoteFork daemon on node 3' <<<"$out" || fail "no daemon: unclear error"
gsasd 3
on 0 "unimem-gsas fork --node 3 --wait -- /bin/true" >/dev/null || fail "fork after the daemon's restart"

step "as $TEST_USER: the child runs as that user, with its groups and no capabilities; its log is the user's"
child=$(on 0 "$(as_user "unimem-gsas fork --node 1 --wait -- /bin/grep -E '^(Uid|Gid|Groups|CapPrm|CapEff|NoNewPrivs):' /proc/self/status")") ||
  fail "fork as $TEST_USER"
serial=$(( child & 0xffffffff ))
out=$(on 1 "cat $LOGS/child-$serial.log; stat -c 'log %u:%g %a' $LOGS/child-$serial.log")
echo "$out"
grep -qE "^Uid:\s+$TEST_UID\s+$TEST_UID\s+$TEST_UID\s+$TEST_UID$" <<<"$out" || fail "the child's uid is not $TEST_UID"
grep -qE "^Groups:.*\b$UNIMEM_GID\b" <<<"$out" || fail "the child lacks group unimem ($UNIMEM_GID)"
{ grep -qE '^CapPrm:\s+0+$' <<<"$out" && grep -qE '^CapEff:\s+0+$' <<<"$out"; } || fail "the child has capabilities"
grep -qE '^NoNewPrivs:\s+1$' <<<"$out" || fail "the child may gain privileges"
grep -q "^log $TEST_UID:$TEST_UID 600$" <<<"$out" || fail "the child's log is not $TEST_USER's (0600)"

step "as root (CAP_SYS_ADMIN): the child runs as root"
child=$(on 0 "unimem-gsas fork --node 1 --wait -- /bin/grep -E '^Uid:' /proc/self/status") || fail "fork as root"
out=$(on 1 "cat $LOGS/child-$(( child & 0xffffffff )).log")
echo "$out"
grep -qE '^Uid:\s+0\s+0\s+0\s+0$' <<<"$out" || fail "root's child does not run as root"

step "root without CAP_SYS_ADMIN may not fork: refused (EPERM) with a clear error"
out=$(on_may_fail 0 "unimem-gas-test without-admin -- unimem-gsas fork --node 1 -- /bin/true 2>&1") &&
  fail "root without CAP_SYS_ADMIN forked: $out"
echo "$out"
grep -q 'root without CAP_SYS_ADMIN may not fork as root' <<<"$out" || fail "EPERM: unclear error"

step "node 2's fork policy: its programs only, not $TEST_USER; refusals (EACCES) explained, rule logged"
on 2 "printf '%s\n' 'allow-path /opt/unimem/bin/*' 'deny-user $TEST_USER' >/tmp/fork.policy; $STOP_GSASD"
gsasd_up 2 "$LOGS" --policy /tmp/fork.policy
on 0 "unimem-gsas fork --node 2 --wait -- /opt/unimem/bin/unimem-gsas --version" >/dev/null || fail "an allowed program refused"
out=$(on_may_fail 0 "unimem-gsas fork --node 2 -- /bin/true 2>&1") && fail "a program outside allow-path forked: $out"
echo "$out"
grep -q "/bin/true refused by node 2's fork policy" <<<"$out" || fail "EACCES: unclear error"
out=$(on_may_fail 0 "$(as_user "unimem-gsas fork --node 2 -- /opt/unimem/bin/unimem-gsas --version") 2>&1") &&
  fail "a denied user forked: $out"
echo "$out"
grep -q "refused by node 2's fork policy" <<<"$out" || fail "deny-user: unclear error"
out=$(on 2 "grep 'refused by the fork policy' /tmp/$BG-gsasd.log")
echo "$out"
grep -q "deny-user $TEST_USER" <<<"$out" || fail "node 2's gsasd did not log the rule"
on 2 "$STOP_GSASD"
gsasd 2

step "fork quota: $TEST_USER's 32 children on node 3 (user_forks); a 33rd refused (EDQUOT), others fork"
# Children that sleep until this step kills them: they hold the user's share while they run.
SLEEPER="/bin/sleep 600"
# Guest shell code: the pids of those children (the guests have no pgrep).
SLEEPERS="ps -o pid,args | awk '\$2 == \"/bin/sleep\" && \$3 == \"600\" { print \$1 }'"
over=$(on 3 "cat $SYS/over_quota")
on 0 "$(as_user "for i in \$(seq 32); do unimem-gsas fork --node 3 -- $SLEEPER >/dev/null || exit 1; done")" ||
  fail "$TEST_USER could not start 32 children on node 3"
out=$(on_may_fail 0 "$(as_user "unimem-gsas fork --node 3 -- $SLEEPER") 2>&1") &&
  fail "a 33rd child of $TEST_USER was started on node 3: $out"
echo "$out"
grep -q 'over your quota on node 3' <<<"$out" || fail "EDQUOT: unclear error"
[ "$(on 3 "cat $SYS/over_quota")" -gt "$over" ] || fail "over_quota was not counted"
child=$(on 0 "$(as_other "unimem-gsas fork --node 3 --wait -- /bin/grep -E '^Uid:' /proc/self/status")") ||
  fail "another user (uid $OTHER_UID) could not fork to node 3"
out=$(on 3 "cat $LOGS/child-$(( child & 0xffffffff )).log")
echo "$out"
grep -qE "^Uid:\s+$OTHER_UID\s" <<<"$out" || fail "the other user's child does not run as uid $OTHER_UID"
on 0 "unimem-gsas fork --node 3 --wait -- /bin/true" >/dev/null || fail "root (not limited) could not fork to node 3"

step "fork quota: children that exited count no more, waited for or not"
expect_eq "$(on 3 "$SLEEPERS | wc -l")" 32 "$TEST_USER's sleeping children on node 3"
on 3 "kill \$($SLEEPERS); for i in \$(seq 100); do [ -z \"\$($SLEEPERS)\" ] && exit 0; sleep 0.1; done; exit 1" ||
  fail "the sleeping children on node 3 did not end"
# gsasd reaps them and posts their exits: give it a few seconds.
on 0 "$(as_user "for i in \$(seq 50); do unimem-gsas fork --node 3 --wait -- /bin/true 2>/dev/null && exit 0; sleep 0.2; done
                  unimem-gsas fork --node 3 --wait -- /bin/true")" ||
  fail "$TEST_USER, whose children all exited (not waited for), was refused a new one"

step "counters and a clean kernel log"
for n in 1 2 3; do
  echo "node $n: $(on "$n" "cd $SYS && for c in requests_fork requests_wait forks fork_failed exits no_daemon no_child denied running; do printf '%s=%s ' \$c \$(cat \$c); done")"
done
[ "$(on 1 "cat $SYS/fork_failed")" -ge 1 ] || fail "node 1 counted no failed start"
[ "$(on 3 "cat $SYS/no_daemon")" -ge 1 ] || fail "node 3 counted no FORK without a daemon"
for n in $(seq 0 $((NODES - 1))); do
  dmesg_clean "$n" "${marks[$n]}" || fail "node $n: kernel warnings"
done
echo "PASS"
