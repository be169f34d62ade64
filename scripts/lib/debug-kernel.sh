# shellcheck shell=bash
# The debug-kernel lane of scripts/test.sh (--debug-kernel): what it checks once the suite has
# run on a kernel built with KASAN, lockdep, DEBUG_ATOMIC_SLEEP, kmemleak and DEBUG_LIST
# (kernel/config/debug/debug.config). Sourced after lib/common.sh; expects UNIMEM_RUN and logdir.
: "${logdir:?where the lane writes its logs}"
#
# A report is any of these in a node's console (every boot of every node: scripts/cluster keeps a
# restarted node's earlier consoles in nodeN.console.earlier) or in its kmemleak scan:
#   KASAN ("BUG: KASAN: ..."), lockdep ("WARNING: possible circular locking dependency",
#   "WARNING: inconsistent lock state", "BUG: key ... has not been registered!", "BUG: Invalid
#   wait context"...), sleeping in atomic context ("BUG: sleeping function called from invalid
#   context"), list corruption, and generally every "BUG:", "WARNING:", oops, panic, RCU stall,
#   hung task or OOM kill; kmemleak's unreferenced objects after the modules are unloaded.

# Start of a report in a kernel log line (after its timestamp). Only kernel lines count: the
# console also carries user space (the command agent logs every command it runs, and tests grep
# the kernel log for these very words).
DEBUG_KERNEL_LINE_RE='^\[ *[0-9]+\.[0-9]+\] '
DEBUG_REPORT_RE='BUG:|WARNING:|Oops|general protection fault|Kernel panic|kernel BUG at|list_(add|del) corruption|UBSAN:|invoked oom-killer|blocked for more than|rcu_.*detected stall|INFO: task |kmemleak: [0-9]+ new suspected|kmemleak: .*(disabled|[Ee]mpty|[Cc]annot)|printk messages dropped'

# debug_console_files NODE: that node's console files, oldest boot first.
debug_console_files() {
  local f
  for f in "$UNIMEM_RUN/node$1.console.earlier" "$UNIMEM_RUN/node$1.console"; do
    [ -f "$f" ] && echo "$f"
  done
  return 0
}

# debug_log_reports NODE SOURCE < LOG: prints every report in LOG (a kernel log) with up to 40
# lines of context, each headed by NODE and SOURCE; prints nothing when there is none.
debug_log_reports() {
  awk -v node="$1" -v src="$2" -v re="$DEBUG_REPORT_RE" '
    { line = $0; sub(/\r$/, "", line); text = line; kernel = sub(/^\[ *[0-9]+\.[0-9]+\] /, "", text) }
    # Register dumps say little here: leave the 40 lines to the message and the stack.
    left > 0 && text ~ /^(Code: |RSP: |R[A-Z0-9][A-Z0-9]: |FS: |CS: |CR2: |PKRU: )/ { next }
    # Inside a report: its lines until a closing rule or end-of-trace marker, at most 40.
    left > 0 {
      print "    " line; left--
      if (text ~ /^(=+|-+\[ end trace [0-9a-f]+ \]-+)$/ && shown > 1) left = 0
      shown++
      next
    }
    kernel && text ~ re {
      n++
      printf "node %s (%s), report %d:\n", node, src, n
      print "    " line; left = 39; shown = 1
    }'
}

# debug_count_reports: number of reports in every node's console so far.
debug_count_reports() {
  local i f total=0 c
  for ((i = 0; i < $(cat "$UNIMEM_RUN/nodes" 2>/dev/null || echo 0); i++)); do
    for f in $(debug_console_files "$i"); do
      c=$(grep -E "$DEBUG_KERNEL_LINE_RE" "$f" | grep -cE "$DEBUG_REPORT_RE" || true)
      total=$((total + c))
    done
  done
  echo "$total"
}

# debug_kmemleak NODE: on a running node, stops what the tests may have left running, unloads our
# modules (leaks at unload are the ones to find), scans twice (kmemleak does not report an object
# whose contents changed since the previous scan, nor one younger than 5 s) and saves the result
# in $logdir/kmemleak-nodeN.txt, the kernel log in $logdir/dmesg-nodeN.txt.
debug_kmemleak() {
  local n=$1 ex=("$UNIMEM_ROOT/scripts/cluster" exec "$1" --timeout 900 --)
  "${ex[@]}" "killall kram-daemon unimem-mbox unimem-memtest 2>/dev/null; sleep 1; swapoff -a 2>/dev/null
    [ -e /proc/unimem_numa ] && echo remove all > /proc/unimem_numa
    for m in unimem_kram unimem_numa unimem_mbox_echo unimem_mailbox unimem_eusrvmem; do
      lsmod | grep -q \"^\$m \" || continue
      rmmod \$m || echo \"note: \$m did not unload\"
    done; true" || log "debug kernel: node $n: could not unload the modules"
  "${ex[@]}" "test -w /sys/kernel/debug/kmemleak || { echo 'kmemleak: no /sys/kernel/debug/kmemleak'; exit 1; }
    echo scan > /sys/kernel/debug/kmemleak && sleep 6 && echo scan > /sys/kernel/debug/kmemleak &&
    cat /sys/kernel/debug/kmemleak" >"$logdir/kmemleak-node$n.txt" 2>&1 ||
    { log "debug kernel: node $n: kmemleak scan failed"; cat "$logdir/kmemleak-node$n.txt" >&2; return 1; }
  "${ex[@]}" dmesg >"$logdir/dmesg-node$n.txt" 2>&1 || true
}

# debug_kmemleak_reports NODE < SCAN: prints each unreferenced object of a kmemleak scan, headed
# by NODE and whether a frame of its allocation is in one of our modules ([unimem_...]).
# Every leak counts, ours or not: on this minimal guest the kernel itself leaks nothing the
# lane has seen, and a leak in kernel code (a bio, a kernfs node, a swap map) can still be ours
# when one of our modules drives that code and never releases what it asked for.
debug_kmemleak_reports() {
  awk -v node="$1" '
    function flush() {
      if (obj == "") return
      n++
      printf "node %s (kmemleak), report %d%s:\n%s", node, n, (obj ~ /\[unimem_/ ? " (allocated in a unimem module)" : ""), obj
      obj = ""
    }
    /^unreferenced object/ { flush() }
    /^unreferenced object/ || obj != "" { obj = obj "    " $0 "\n" }
    END { flush() }'
}

# debug_kernel_checks: after the suite, the kmemleak scan on every running node, then every
# report of every node. Prints them; fails if there is any.
debug_kernel_checks() {
  local nodes i f out reports=0 c
  nodes=$(cat "$UNIMEM_RUN/nodes" 2>/dev/null || echo 0)
  for ((i = 0; i < nodes; i++)); do
    if [ -S "$UNIMEM_RUN/node$i.agent" ]; then
      log "debug kernel: node $i: unloading the modules, kmemleak scan"
      debug_kmemleak "$i" || reports=$((reports + 1))
    else
      log "debug kernel: node $i is not running: only its console is checked"
    fi
  done
  out=$logdir/debug-kernel-reports.txt
  : >"$out"
  for ((i = 0; i < nodes; i++)); do
    for f in $(debug_console_files "$i"); do
      # shellcheck disable=SC2094 # reads a console, appends to the report file
      debug_log_reports "$i" "$(basename "$f")" <"$f" >>"$out"
    done
    [ ! -f "$logdir/kmemleak-node$i.txt" ] || debug_kmemleak_reports "$i" <"$logdir/kmemleak-node$i.txt" >>"$out"
  done
  c=$(grep -c '^node [0-9]* (.*), report [0-9]*' "$out" || true)
  reports=$((reports + c))
  if [ "$reports" -gt 0 ]; then
    cat "$out"
    log "debug kernel: $reports report(s) (all of them: $out)"
    return 1
  fi
  log "debug kernel: no KASAN, lockdep, BUG, WARNING or kmemleak report on any of $nodes nodes"
}
