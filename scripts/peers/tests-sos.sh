#!/usr/bin/env bash
# Sandia's OpenSHMEM test suite (openshmem-org/tests-sos) against ours (issue 33): the programs of
# its test/unit (the check_PROGRAMS of its Makefile.am: the C ones, the pthread ones, global_exit;
# not the Fortran ones nor the profiling ones, which need pshmem) compiled unchanged with our
# oshcc, and its C++ ones (cxx_*) with oshc++, on the host; then run one after another from node 0
# of a 4-node cluster (run directory build/peer-tests-sos, or $PEER_RUN) with
# `oshrun -np 2 --nodes 1-2` (one PE a node), or with PEER_NP=4 as 4 PEs on nodes 1-2 (two a node:
# node-local and remote paths mix); PEER_NODES changes the nodes.
#   scripts/peers/tests-sos.sh TESTS_SOS_CHECKOUT [NAME...]   (NAME: programs to run; default all)
# The suite stays outside this repository: give a checkout (git clone of openshmem-org/tests-sos;
# it is only read). Each program runs under `timeout` ($PEER_TIMEOUT s, default 300). Every node
# gets a GSAS pool that starts at 16 MiB and grows as the heaps need, up to $POOL_MIB MiB (default
# 512; kram-daemon lends 8 more), so that oshrun's default heap is 256 MiB with one PE a node and
# 128 MiB with two (root; docs/SHMEM.md). POOL_FIXED=1 borrows all of it at load instead.
# Needs `make` first (libshmem.so, oshrun, the modules). Not part of CI: the suite is not ours.
# Writes build.log, summary.txt (one line per program: name, compiled yes/no, exit status) and
# each program's output to build/peer-tests-sos/results/ (PEER_OUT), and prints the counts. A
# program passes when it compiled and exits 0. PEER_COMPILE_ONLY=1 stops after compiling.
# shellcheck source=scripts/lib/common.sh
source "$(dirname "$0")/../lib/common.sh"
case ${1:-} in
  ""|-h|--help) sed -n '2,/^# shellcheck/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
esac
src=$(cd "$1" && pwd) || die "no tests-sos checkout at $1"
shift
wanted=("$@")
unit=$src/test/unit
[ -f "$unit/Makefile.am" ] && [ -f "$unit/hello.c" ] || die "$src is not a tests-sos checkout (no test/unit/Makefile.am)"
lib=$UNIMEM_ROOT/target/release
[ -f "$lib/libshmem.so" ] && [ -x "$lib/oshrun" ] || die "libshmem.so or oshrun missing: run make first"
RUN=${PEER_RUN:-$UNIMEM_BUILD/peer-tests-sos}
OUT=${PEER_OUT:-$RUN/results}
np=${PEER_NP:-2}
[[ "$np" =~ ^[1-9][0-9]*$ ]] || die "PEER_NP=$np: a number of PEs"
nodes=${PEER_NODES:-1-2}
export UNIMEM_RUN=$RUN UNIMEM_GAS_SIZE=${UNIMEM_GAS_SIZE:-8G}
mkdir -p "$OUT/bin"

# The programs of check_PROGRAMS, by automake conditional: every block but Fortran
# (HAVE_FORTRAN) and profiling (ENABLE_PROFILING); C++ ones (HAVE_CXX) apart.
programs() { # programs c|cxx
  awk -v want="$1" '
    /^if / { cond = $2; next }
    /^endif/ { cond = ""; next }
    /^check_PROGRAMS *\+?=/ { inlist = 1; sub(/^check_PROGRAMS *\+?= */, "") }
    inlist {
      line = $0; cont = sub(/\\[ \t]*$/, "", line)
      n = split(line, w, /[ \t]+/)
      for (i = 1; i <= n; i++) {
        if (w[i] == "") continue
        if (cond == "HAVE_FORTRAN" || cond == "!HAVE_LONG_FORTRAN_HEADER" || cond == "ENABLE_PROFILING") continue
        if ((cond == "HAVE_CXX") == (want == "cxx")) print w[i]
      }
      if (!cont) inlist = 0
    }' "$unit/Makefile.am"
}
# The sources and flags of a program (the Makefile.am's special cases; by default NAME.c or, for
# C++, NAME.cpp).
sources() {
  case $1 in
    query_thread_funneled) echo "-DENABLE_THREADS $unit/query_thread.c" ;;
    mt_lock_test) echo "$unit/mt_lock_test.c $unit/mt_lock.c" ;;
    *) if [ -f "$unit/$1.cpp" ]; then echo "$unit/$1.cpp"; else echo "$unit/$1.c"; fi ;;
  esac
}

log "building tests-sos's test/unit programs with oshcc (C) and oshc++ (C++)"
"$UNIMEM_ROOT/userspace/shmem/shmem-pc.sh" >/dev/null
: >"$OUT/build.log"
declare -A compiled=()
all=()
for kind in c cxx; do
  for p in $(programs "$kind"); do
    all+=("$p")
    # shellcheck disable=SC2046 # sources prints words
    set -- $(sources "$p")
    cc=$UNIMEM_ROOT/userspace/shmem/oshcc
    case ${*: -1} in *.cpp) cc=$UNIMEM_ROOT/userspace/shmem/oshc++ ;; esac
    echo "== $p" >>"$OUT/build.log"
    if OSHCC_RPATH=/opt/unimem/lib "$cc" -O2 -pthread -I"$src/test/include" "$@" -lm \
         -o "$OUT/bin/$p" >>"$OUT/build.log" 2>&1; then
      compiled[$p]=yes
    else
      compiled[$p]=no
      echo "NOT BUILT: $p" >>"$OUT/build.log"
    fi
  done
done
n_built=0
not_built=()
for p in "${all[@]}"; do
  if [ "${compiled[$p]}" = yes ]; then n_built=$((n_built + 1)); else not_built+=("$p"); fi
done
log "compiled $n_built of ${#all[@]}; not compiled (${#not_built[@]}): ${not_built[*]}"
if [ "${PEER_COMPILE_ONLY:-0}" = 1 ]; then
  for p in "${all[@]}"; do printf '%-40s compiled=%-3s status=-\n' "$p" "${compiled[$p]}"; done >"$OUT/summary.txt"
  exit 0
fi
run=("${all[@]}")
[ ${#wanted[@]} -gt 0 ] && run=("${wanted[@]}")

log "starting a 4-node cluster in $RUN"
"$UNIMEM_ROOT/scripts/cluster" up -n 4
# shellcheck source=tests/cluster/lib.sh
source "$UNIMEM_ROOT/tests/cluster/lib.sh"
# PEER_KEEP=1 leaves the cluster up (UNIMEM_RUN=$RUN scripts/cluster down ends it), to look
# into a failing program.
cleanup() { [ "${PEER_KEEP:-0}" = 1 ] || "$UNIMEM_ROOT/scripts/cluster" down >/dev/null 2>&1 || true; }
trap cleanup EXIT
BG=peer
POOL_MIB=${POOL_MIB:-512}
export KRAM_CHUNKS=$((POOL_MIB + 8))
if [ "${POOL_FIXED:-0}" = 1 ]; then
  gsas_arg pool_mib="$POOL_MIB"
else
  gsas_arg pool_max_mib="$POOL_MIB"
fi
export GSAS_ARGS
share_bins oshrun gsasd kram-daemon
share_lib shmem
fork_nodes_up /tmp/gsasd
for p in "${run[@]}"; do
  [ "${compiled[$p]:-no}" = yes ] && cp "$OUT/bin/$p" "$(node_share 0)/bin/sos-$p"
done
log "running each program as oshrun -np $np --nodes $nodes, from node 0"
: >"$OUT/summary.txt"
passed=0 failed=0
for p in "${run[@]}"; do
  if [ "${compiled[$p]:-no}" != yes ]; then
    printf '%-40s compiled=no  status=-\n' "$p" | tee -a "$OUT/summary.txt"
    continue
  fi
  out=$(TIMEOUT=$((${PEER_TIMEOUT:-300} + 60)) on_may_fail 0 "cd /tmp; timeout -k 10 ${PEER_TIMEOUT:-300} oshrun -np $np --nodes $nodes /opt/unimem/bin/sos-$p 2>&1; echo status=\$?" 2>&1) || true
  echo "$out" >"$OUT/$p.log"
  st=$(sed -n 's/^status=//p' <<<"$out" | tail -1)
  printf '%-40s compiled=yes status=%s\n' "$p" "${st:-?}" | tee -a "$OUT/summary.txt"
  if [ "$st" = 0 ]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
  # The next program needs the pool this one's heap had: wait until every node's GSAS pages are
  # free again (a stopped job's are freed by its agents, and large heaps are zeroed first).
  for n in $(seq 0 $((NODES - 1))); do
    on "$n" "for i in \$(seq 300); do [ \$(cat /sys/kernel/unimem_gsas/used_pages) = 0 ] && exit 0; sleep 0.2; done; exit 1" >/dev/null 2>&1 ||
      echo "  (node $n: GSAS pages still in use 60 s after $p)" | tee -a "$OUT/summary.txt"
  done
done
counts="tests-sos test/unit as $np PEs on nodes $nodes: $passed passed, $failed failed, ${#not_built[@]} not compiled (of ${#all[@]})"
echo "$counts" >>"$OUT/summary.txt"
log "$counts (details in $OUT)"
