#!/usr/bin/env bash
# OpenFAM's own tests against ours: the gtest programs of OpenFAM's test/reg-test/fam-api-reg and
# test/unit-test/fam-api and the programs of examples/api, compiled unchanged against unimem's
# headers (userspace/fam/include) and libunimem_fam with Debian's googletest, run one after
# another on node $PEER_NODE (default 0) of a 4-node cluster (run directory build/peer-openfam,
# or $PEER_RUN) with famd on node 0 and nodes $PEER_LENDERS (default 1,2,3) lending (GSAS pools
# of $POOL_MIB MiB, default 512): by default every byte the programs touch is on other nodes.
# With PEER_NP=N (N > 1) each program runs as N PEs under oshrun on nodes $PEER_NODES (default
# 0-1; lenders then default to 2,3), as OpenFAM's own runs under mpirun do.
# The PEs' nodes have $PEER_MEM of memory (default 2G), the others 512M.
# Then OpenFAM's applications, unchanged (test/apps; they include its common/fam_options.h, a
# list of option names): SpMV on the small matrix it ships (csr_perload loads it, fam_spmv
# multiplies; the product is checked here against one computed from the same files) and GUPS
# (initialized by one PE, then run by 2 PEs under oshrun on nodes 0-1 in its load/store mode,
# through fam_map; it verifies its table itself). GUPS as OpenFAM ships it (3.2.0) cannot pass:
# it sizes its table from TotalMem after its own loop has halved that to 0.5 words (a 4-byte
# item: "Check_1: 0.500000") and then indexes up to megabytes past the item's end; its put/get
# mode adds a barrier per update (262144 of them), hours under TCG, so only mode 0 runs.
#   scripts/peers/openfam.sh OPENFAM_CHECKOUT [NAME...]   (NAME: programs to run, or spmv, gups;
#                                                          default all)
# OpenFAM's sources stay outside this repository (their licence): give a checkout (git clone of
# OpenFAM/OpenFAM). Its build configuration is what its CMake would generate
# (test/common/fam_test_config.h from its .in, OPENFAM_VERSION from its VERSION file), with
# runtime $PEER_RUNTIME (default PMIX, OpenFAM's default: the tests then name regions after
# their PE, as some of them need) and cisServer "0" (famd's node). Needs `make` first and libgtest-dev.
# Writes build.log, summary.txt (one line per program: exit status, gtest cases passed and
# failed) and each program's output to build/peer-openfam/results/ (PEER_OUT), and prints the
# counts. A program passes when it exits 0.
# shellcheck source=scripts/lib/common.sh
source "$(dirname "$0")/../lib/common.sh"
case ${1:-} in
  ""|-h|--help) sed -n '2,/^# shellcheck/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
esac
src=$(cd "$1" && pwd) || die "no OpenFAM checkout at $1"
shift
[ -f "$src/test/common/fam_test_config.h.in" ] || die "$src is not an OpenFAM checkout (no test/common/fam_test_config.h.in)"
gtest=/usr/lib/$(gcc -print-multiarch)/libgtest.a
[ -f "$gtest" ] || die "$gtest missing: apt-get install libgtest-dev"
lib=$UNIMEM_ROOT/target/release
[ -f "$lib/libunimem_fam.so" ] && [ -x "$lib/famd" ] || die "libunimem_fam.so or famd missing: run make first"
RUN=${PEER_RUN:-$UNIMEM_BUILD/peer-openfam}
OUT=${PEER_OUT:-$RUN/results}
np=${PEER_NP:-1}
[[ "$np" =~ ^[1-9][0-9]*$ ]] || die "PEER_NP=$np: a number of PEs"
if [ "$np" -gt 1 ]; then lenders=${PEER_LENDERS:-2,3}; else lenders=${PEER_LENDERS:-1,2,3}; fi
PEER_NODES=${PEER_NODES:-0-1}
export UNIMEM_RUN=$RUN UNIMEM_GAS_SIZE=${UNIMEM_GAS_SIZE:-8G}
mkdir -p "$OUT/bin" "$OUT/gen/common"
version=$(cat "$src/VERSION" 2>/dev/null || echo 0.0.0)

log "building OpenFAM's test programs against unimem's headers and libunimem_fam"
sed -e 's/#cmakedefine TEST_DEFAULT_REGION .*/#define TEST_DEFAULT_REGION "Default"/' \
    -e 's/#cmakedefine TEST_OPENFAM_MODEL .*/#define TEST_OPENFAM_MODEL "memory_server"/' \
    -e 's/#cmakedefine TEST_CIS_INTERFACE_TYPE .*/#define TEST_CIS_INTERFACE_TYPE "rpc"/' \
    -e 's/#cmakedefine TEST_CIS_SERVER .*/#define TEST_CIS_SERVER "0"/' \
    -e 's/#cmakedefine TEST_GRPC_PORT .*/#define TEST_GRPC_PORT "8787"/' \
    -e 's/#cmakedefine TEST_LIBFABRIC_PROVIDER .*/#define TEST_LIBFABRIC_PROVIDER "sockets"/' \
    -e 's/#cmakedefine TEST_FAM_THREAD_MODEL .*/#define TEST_FAM_THREAD_MODEL "FAM_THREAD_MULTIPLE"/' \
    -e 's/#cmakedefine TEST_FAM_CONTEXT_MODEL .*/#define TEST_FAM_CONTEXT_MODEL "FAM_CONTEXT_DEFAULT"/' \
    -e "s/#cmakedefine TEST_RUNTIME .*/#define TEST_RUNTIME \"${PEER_RUNTIME:-PMIX}\"/" \
    -e 's/#cmakedefine TEST_NUM_CONSUMER .*/#define TEST_NUM_CONSUMER "1"/' \
    -e 's/#cmakedefine USE_CONFIG_OPTIONS .*//' -e 's/#cmakedefine TEST_MEMSERVER_IP .*//' \
    -e "s/#cmakedefine TEST_NPE .*/#define TEST_NPE \"$np\"/" -e 's/\${TEST_SKIP_STATUS}/100/' \
    "$src/test/common/fam_test_config.h.in" >"$OUT/gen/common/fam_test_config.h"
: >"$OUT/build.log"
built=() not_built=()
for f in "$src"/test/reg-test/fam-api-reg/*.cpp "$src"/test/unit-test/fam-api/*.cpp "$src"/examples/api/*.cpp; do
  n=$(basename "$f" .cpp)
  if g++ -std=c++17 -O1 -w -DOPENFAM_VERSION="\"$version\"" -I"$UNIMEM_ROOT/userspace/fam/include" \
       -I"$OUT/gen" -I"$src/test" "$f" -L"$lib" -lunimem_fam "$gtest" -lpthread \
       -Wl,-rpath,/opt/unimem/lib -o "$OUT/bin/$n" >>"$OUT/build.log" 2>&1; then
    built+=("$n")
  else
    not_built+=("$n"); echo "NOT BUILT: $f" >>"$OUT/build.log"
  fi
done
log "built ${#built[@]}, not built ${#not_built[@]}: ${not_built[*]}"
apps=(spmv gups)
if [ $# -gt 0 ]; then
  built=() apps_asked=()
  for n in "$@"; do case $n in spmv|gups) apps_asked+=("$n") ;; *) built+=("$n") ;; esac; done
  apps=("${apps_asked[@]}")
fi
app_cc() { # NAME SOURCE [FLAGS...]: one of OpenFAM's applications, built as its CMake would
  local n=$1 f=$2; shift 2
  g++ -std=c++17 -O1 -w -I"$UNIMEM_ROOT/userspace/fam/include" -I"$OUT/gen" -I"$src/test" "$@" "$f" \
    -L"$lib" -lunimem_fam -lpthread -lm -Wl,-rpath,/opt/unimem/lib -o "$OUT/bin/$n" >>"$OUT/build.log" 2>&1 ||
    die "OpenFAM's $n did not build (see $OUT/build.log)"
}
if [ ${#apps[@]} -gt 0 ]; then
  [ -f "$src/src/common/fam_options.h" ] || die "$src/src/common/fam_options.h missing: the applications need a whole checkout"
  cp "$src/src/common/fam_options.h" "$OUT/gen/common/"
  app_cc csr_perload "$src/test/apps/spmv/csr_perload.cpp"
  app_cc fam_spmv "$src/test/apps/spmv/fam_spmv.cpp"
  app_cc fam_GUPS "$src/test/apps/OSB_GUPs/fam_GUPS.cpp" -I"$src/test/apps/OSB_GUPs" -I"$src/test/apps/OSB_GUPs/include"
fi

pe=${PEER_NODE:-0}
# The PEs' nodes get PEER_MEM (OpenFAM's multithreaded tests malloc hundreds of MiB): node
# $pe, and with PEER_NP the nodes of PEER_NODES (a list, ranges a-b allowed).
pe_nodes=$pe
if [ "$np" -gt 1 ]; then
  pe_nodes=""
  for r in ${PEER_NODES//,/ }; do
    case $r in *-*) pe_nodes="$pe_nodes $(seq -s ' ' "${r%-*}" "${r#*-}")" ;; *) pe_nodes="$pe_nodes $r" ;; esac
  done
fi
mem_args=()
for n in $pe_nodes; do mem_args+=(--mem-of "$n=${PEER_MEM:-2G}"); done
log "starting a 4-node cluster in $RUN (nodes$pe_nodes with ${PEER_MEM:-2G} of memory)"
"$UNIMEM_ROOT/scripts/cluster" up -n 4 "${mem_args[@]}"
# shellcheck source=tests/cluster/lib.sh
source "$UNIMEM_ROOT/tests/cluster/lib.sh"
# PEER_KEEP=1 leaves the cluster up (UNIMEM_RUN=$RUN scripts/cluster down ends it), to look
# into a failing program.
cleanup() { [ "${PEER_KEEP:-0}" = 1 ] || "$UNIMEM_ROOT/scripts/cluster" down >/dev/null 2>&1 || true; }
trap cleanup EXIT
BG=peer
# Memory servers with room for OpenFAM's tests, which allocate items of 4-16 MiB in loops: each
# lender's kram-daemon lends a little more than the GSAS pool it gives (partitions of 2 GiB).
POOL_MIB=${POOL_MIB:-512}
export KRAM_CHUNKS=$((POOL_MIB + 8))
export GSAS_ARGS="$GSAS_ARGS pool_mib=$POOL_MIB"
share_bins famd gsasd kram-daemon oshrun
share_lib unimem_fam
fork_nodes_up /tmp/gsasd
for n in 0 1 2 3; do on "$n" "mkdir -p /etc/unimem && echo 'famd_node = 0' > /etc/unimem/fam.conf"; done
on 0 "mkdir -p /var/lib/unimem"
# famd_fresh: famd (re)started on an empty store. After a program fails, the regions it left
# (OpenFAM's programs name them after the PE: test_0...) would fail the next programs too; each
# program gets a store without them (the pages of what it left stay allocated in famd's tree
# until the cluster stops).
famd_fresh() {
  on 0 "killall -TERM famd 2>/dev/null; for i in \$(seq 50); do pidof famd >/dev/null || break; sleep 0.1; done; rm -f /var/lib/unimem/famd.json"
  bg 0 famd "famd --state /var/lib/unimem/famd.json --lenders $lenders"
  wait_log 0 famd 'serving on node' 30
}
famd_fresh
for n in "${built[@]}"; do cp "$OUT/bin/$n" "$(node_share "$pe")/bin/ofam-$n"; done
launch=""
[ "$np" -gt 1 ] && launch="oshrun -np $np --nodes $PEER_NODES"
log "running each program${launch:+ as $launch}, on node $pe, famd's lenders $lenders"
: >"$OUT/summary.txt"
passed=0 failed=0
for n in "${built[@]}"; do
  out=$(on_may_fail "$pe" "cd /tmp; timeout -k 10 ${PEER_TIMEOUT:-240} $launch /opt/unimem/bin/ofam-$n 2>&1; echo status=\$?" 2>&1) || true
  echo "$out" >"$OUT/$n.log"
  st=$(sed -n 's/^status=//p' <<<"$out" | tail -1)
  ok=$(grep -c '^\[       OK \]' <<<"$out" || true)
  bad=$(grep -c '^\[  FAILED  \] [A-Za-z]' <<<"$out" || true)
  printf '%-55s status=%-4s cases_ok=%-3s cases_failed=%s\n' "$n" "$st" "$ok" "$bad" | tee -a "$OUT/summary.txt"
  if [ "$st" = 0 ]; then passed=$((passed + 1)); else failed=$((failed + 1)); famd_fresh >/dev/null; fi
done
log "OpenFAM's programs: $passed passed, $failed failed, ${#not_built[@]} not built (details in $OUT)"

# OpenFAM's applications.
apps_passed=0 apps_failed=0
app_result() { # NAME OK
  printf '%-55s %s\n' "app $1" "$([ "$2" = 1 ] && echo passed || echo FAILED)" | tee -a "$OUT/summary.txt"
  if [ "$2" = 1 ]; then apps_passed=$((apps_passed + 1)); else apps_failed=$((apps_failed + 1)); fi
}
for app in "${apps[@]}"; do
  case $app in
  spmv)
    for n in csr_perload fam_spmv; do cp "$OUT/bin/$n" "$(node_share "$pe")/bin/ofam-$n"; done
    rm -rf "$(node_share "$pe")/ofam-spmv"; mkdir -p "$(node_share "$pe")/ofam-spmv"
    cp -r "$src/test/apps/spmv/config_3_4_1" "$src/test/apps/spmv/out_3_4_1" "$(node_share "$pe")/ofam-spmv/"
    out=$(on_may_fail "$pe" "rm -rf /tmp/spmv; cp -r /opt/unimem/ofam-spmv /tmp/spmv && cd /tmp/spmv &&
      timeout -k 10 ${PEER_TIMEOUT:-240} /opt/unimem/bin/ofam-csr_perload config_3_4_1 &&
      timeout -k 10 ${PEER_TIMEOUT:-240} /opt/unimem/bin/ofam-fam_spmv config_3_4_1 &&
      echo result=\$(od -An -tx1 -v fam_ovec.bin | tr -d ' \n')" 2>&1) || true
    echo "$out" >"$OUT/app-spmv.log"
    got=$(sed -n 's/^result=//p' <<<"$out")
    # The product from the same files: row i of the CSR matrix (rowptr0.bin: two int64 counts,
    # then int32 row offsets; column0.bin int64 columns; weight0.bin float32 weights) times
    # csr_perload's vector, v[j] = j % 5 + 1; fam_spmv sums in float32 in the same order.
    ok=$(python3 - "$src/test/apps/spmv/out_3_4_1" "$got" <<'PY' 2>>"$OUT/app-spmv.log" || echo 0
import struct, sys
d, got = sys.argv[1], bytes.fromhex(sys.argv[2])
rp = open(f"{d}/rowptr0.bin", "rb").read()
rows = struct.unpack("<q", rp[:8])[0] - 1
off = struct.unpack(f"<{(len(rp) - 16) // 4}i", rp[16:])
col = open(f"{d}/column0.bin", "rb").read()
col = struct.unpack(f"<{len(col) // 8}q", col)
w = open(f"{d}/weight0.bin", "rb").read()
w = struct.unpack(f"<{len(w) // 4}f", w)
f32 = lambda x: struct.unpack("<f", struct.pack("<f", x))[0]
n = len(got) // 4
want = []
for i in range(min(rows, n)):
    s = 0.0
    for k in range(off[i], off[i + 1]):
        s = f32(s + f32(w[k] * float(col[k] % 5 + 1)))
    want.append(s)
have = struct.unpack(f"<{n}f", got)
ok = n > 0 and all(abs(a - b) <= 1e-5 * max(1.0, abs(a)) for a, b in zip(want, have))
print(f"spmv: {n} results, expected {want}, got {list(have)}", file=sys.stderr)
print(1 if ok else 0)
PY
)
    app_result spmv "$ok"
    ;;
  gups)
    cp "$OUT/bin/fam_GUPS" "$(node_share "$pe")/bin/ofam-fam_GUPS"
    out=$(on_may_fail "$pe" "cd /tmp && timeout -k 10 ${PEER_TIMEOUT:-240} /opt/unimem/bin/ofam-fam_GUPS 0 2 0 2>&1 &&
      timeout -k 10 ${PEER_TIMEOUT:-240} oshrun -np 2 --nodes 0-1 /opt/unimem/bin/ofam-fam_GUPS 1 2 0 2>&1 || echo status=\$?" 2>&1) || true
    echo "$out" >"$OUT/app-gups.log"
    # PE 0 verifies the whole table.
    app_result gups "$(grep -q 'Verification passed' <<<"$out" && ! grep -q 'Verification failed\|^status=' <<<"$out" && echo 1 || echo 0)"
    ;;
  esac
done
[ ${#apps[@]} -eq 0 ] || log "OpenFAM's applications: $apps_passed passed, $apps_failed failed"
