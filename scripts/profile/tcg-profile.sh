#!/usr/bin/env bash
# Where a GSAS request's guest instructions go: runs `unimem-gsas-test bench` on a 3-node TCG
# cluster whose profiled node (the home, 1, unless --profile 0: the issuer) counts its executed
# instructions per translated block (the QEMU plugin scripts/profile/tcg-profile.c), and prints
# that node's functions by instructions per request, user space as one line. Compare two module
# builds by running it for each (--ref).
#   scripts/profile/tcg-profile.sh [--ref COMMIT] [--op nop|faa|read256] [--from NODE] [--count N]
#                                [--top N] [--profile NODE]
#     --ref    profile that commit's modules instead of this tree's (built into the cache)
#     --op     the request (nop)     --from  the issuing node: 1 (local, default) or 0 (remote)
#     --count  requests (20000)      --top   functions shown (40)
#     --profile  the node counted: 1 (the home, default) or 0 (a remote issuer, with --from 0)
# Writes build/tcg-profile/<side>-<op>-<from>-<profiled>.txt. Needs `make` first. Instruction
# counts are exact; the per-request figure includes whatever else the node ran meanwhile (timer
# ticks, and an issuer's spinning on its answer, which depends on the other node's timing).
# shellcheck source=scripts/lib/common.sh
source "$(dirname "$0")/../lib/common.sh"
# shellcheck source=scripts/lib/bench.sh
source "$(dirname "$0")/../lib/bench.sh"
# shellcheck source=scripts/lib/ref-modules.sh
source "$(dirname "$0")/../lib/ref-modules.sh"
REF='' OP=nop FROM=1 COUNT=20000 TOP=40 PROF=1
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) sed -n '2,/^# shellcheck/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0;;
    --ref) REF=${2:?--ref needs a commit}; shift 2;;
    --op) OP=${2:?--op needs nop, faa or read256}; shift 2;;
    --from) FROM=${2:?--from needs a node}; shift 2;;
    --count) COUNT=${2:?--count needs a number}; shift 2;;
    --top) TOP=${2:?--top needs a number}; shift 2;;
    --profile) PROF=${2:?--profile needs a node}; shift 2;;
    *) die "unknown option $1 (--help lists them)";;
  esac
done
case "$OP" in nop|faa|read256) ;; *) die "--op: nop, faa or read256, not '$OP'";; esac
case "$FROM" in 0|1) ;; *) die "--from: 0 or 1, not '$FROM'";; esac
case "$PROF" in 0|1) ;; *) die "--profile: 0 or 1, not '$PROF'";; esac
bench_needs kernel/gsas/unimem_gsas.ko target/release/unimem-gsas-test target/release/kram-daemon
OUTDIR=$UNIMEM_BUILD/tcg-profile
mkdir -p "$OUTDIR"
PLUGIN=$OUTDIR/tcg-profile.so
if [ ! -e "$PLUGIN" ] || [ "$UNIMEM_ROOT/scripts/profile/tcg-profile.c" -nt "$PLUGIN" ]; then
  gcc -O2 -shared -fPIC -fvisibility=hidden -Wall -Wextra -o "$PLUGIN" \
    "$UNIMEM_ROOT/scripts/profile/tcg-profile.c" -lpthread || die "cannot build the plugin"
fi
SIDE=tree
[ -n "$REF" ] && SIDE=$(git -C "$UNIMEM_ROOT" rev-parse --short=7 "$REF")
PREFIX=$OUTDIR/dump-$$
rm -f "$PREFIX".*
export UNIMEM_RUN=$UNIMEM_BUILD/tcg-profile/run UNIMEM_TCG_ICOUNT=0 UNIMEM_ACCEL=tcg
export UNIMEM_TCG_PLUGIN="$PROF:$PLUGIN,out=$PREFIX"
CLUSTER=$UNIMEM_ROOT/scripts/cluster
"$CLUSTER" down >/dev/null 2>&1 || true
"$CLUSTER" up -n 3 --mem-of "0=256M"
trap '"$CLUSTER" down >/dev/null 2>&1 || true; rm -f "$PREFIX".*' EXIT
BG=prof
TIMEOUT=900
# shellcheck source=tests/cluster/lib.sh
source "$UNIMEM_ROOT/tests/cluster/lib.sh"
dir=/opt/unimem/modules
if [ -n "$REF" ]; then
  SHARE=$(run_share "$UNIMEM_RUN" x86_64)
  mkdir -p "$SHARE/modules-ref"
  cp "$(ref_modules "$(git -C "$UNIMEM_ROOT" rev-parse "$REF^{commit}")")"/*.ko "$SHARE/modules-ref/"
  dir=/opt/unimem/modules-ref
fi
for n in 0 1 2; do
  on "$n" "insmod $dir/unimem_eusrvmem.ko && insmod $dir/unimem_mailbox.ko" || die "node $n: modules did not load"
  kram_daemon "$n" --chunks 96
  daemon_serving "$n"
done
for n in 0 1; do on "$n" "insmod $dir/unimem_gsas.ko" || die "node $n: unimem_gsas did not load"; done
bench() { on "$FROM" "unimem-gsas-test bench --node 1 --op $OP --count $1 --reps 1 --warmup 50 --json" >/dev/null || die "gsas bench failed"; }
bench 2000
dump() {
  : >"$PREFIX.trigger"
  for _ in $(seq 200); do [ -e "$PREFIX.trigger" ] || return 0; sleep 0.1; done
  die "the plugin wrote no dump"
}
dump
bench "$COUNT"
dump
on "$PROF" "cat /proc/kallsyms" >"$OUTDIR/kallsyms"
REPORT=$OUTDIR/$SIDE-$OP-$FROM-$PROF.txt
python3 - "$PREFIX.0" "$PREFIX.1" "$OUTDIR/kallsyms" "$COUNT" "$TOP" "$PROF" >"$REPORT" <<'PY'
import bisect, collections, sys
before, after, syms, count, top, node = sys.argv[1:7]
count, top = int(count), int(top)
def load(path):
    d = collections.Counter()
    for line in open(path):
        a, n, e = line.split()
        d[(int(a, 16), int(n))] += int(e)
    return d
delta = load(after)
delta.subtract(load(before))
table = []
for line in open(syms):
    f = line.split()
    if len(f) >= 3 and f[1] in "tTwW":
        table.append((int(f[0], 16), f[2] + (" " + f[3] if len(f) > 3 else "")))
table.sort()
addrs = [a for a, _ in table]
per = collections.Counter()
for (a, n), e in delta.items():
    if e <= 0:
        continue
    if a < 0xffff800000000000:
        name = "(user space)"
    else:
        i = bisect.bisect_right(addrs, a) - 1
        name = table[i][1] if i >= 0 else "(kernel, unknown)"
    per[name] += n * e
total = sum(per.values())
print(f"{total / count:10.1f}  instructions per request (all of node {node}, {count} requests)")
for name, v in per.most_common(top):
    print(f"{v / count:10.1f}  {name}")
PY
cat "$REPORT"
