# shellcheck shell=bash
# Helpers of the cluster benchmarks (scripts/bench/gsas.sh, dht.sh, shmem.sh), sourced after
# tests/cluster/lib.sh (shmem.sh: bench_plot only): JSON fields, arithmetic, medians, the environment CSV and the plot.

# jv KEY JSON: a number or string field of a one-line JSON object.
jv() { sed -n "s/.*\"$1\":\"\{0,1\}\([^,\"}]*\).*/\1/p" <<<"$2"; }
# calc FORMAT EXPR: awk arithmetic, printed with FORMAT.
calc() { awk "BEGIN { printf \"$1\", $2 }"; }
# stats V...: "median min max" of the values.
stats() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%.3f %.3f %.3f", m, v[1], v[NR] }'; }

# bench_needs PATH...: dies unless each PATH (relative to the tree, or to a prebuilt one) was built.
bench_needs() {
  local f
  for f in "$@"; do [ -e "$UNIMEM_BUILT/$f" ] || die "$f missing: run 'make' first"; done
}

# rotated REP WORD...: the words rotated left by REP - 1: the order of the configurations in
# repetition REP, so that none always runs first (on a cold cache) or last.
rotated() {
  local r=$1; shift
  local w=("$@") n=$# i
  for ((i = 0; i < n; i++)); do printf '%s ' "${w[(i + r - 1) % n]}"; done
}

# bench_environment FILE NODES [KEY=VALUE...]: environment.csv of a run (accelerator, vCPUs,
# nodes, host cores, guest kernel, commit with -dirty if the tree differs, date, and the rest).
# Sets BENCH_ACCEL, BENCH_KERNEL, BENCH_COMMIT for the summary.
bench_environment() {
  local file=$1 nodes=$2 kv
  shift 2
  if [ -n "${UNIMEM_ACCEL:-}" ]; then BENCH_ACCEL=$UNIMEM_ACCEL
  elif [ -w /dev/kvm ] && { [ -d /sys/module/kvm_intel ] || [ -d /sys/module/kvm_amd ]; }; then BENCH_ACCEL=kvm
  else BENCH_ACCEL=tcg; fi
  if prebuilt; then
    # The commit the archive was made from (scripts/dist.sh wrote it into the marker).
    BENCH_COMMIT=$(sed -n 's/^commit=//p' "$UNIMEM_PREBUILT/prebuilt/PREBUILT")
  else
    BENCH_COMMIT=$(git -C "$UNIMEM_ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
    git -C "$UNIMEM_ROOT" diff --quiet HEAD 2>/dev/null || BENCH_COMMIT="$BENCH_COMMIT-dirty"
  fi
  BENCH_KERNEL=$(on 0 "uname -r")
  {
    echo "key,value"
    echo "accelerator,$BENCH_ACCEL"
    echo "vcpus_per_node,${UNIMEM_SMP:-1}"
    echo "guest_cmdline,$(on 0 "cat /proc/cmdline" | tr "," ";")"
    echo "nodes,$nodes"
    echo "host_cores,$(nproc)"
    echo "kernel,$BENCH_KERNEL"
    echo "commit,$BENCH_COMMIT"
    echo "date,$(date -u +%Y-%m-%dT%H:%M:%SZ)"
    for kv in "$@"; do echo "${kv%%=*},${kv#*=}"; done
  } >"$file"
}

# bench_plot SCRIPT DIR: runs the plotting SCRIPT on DIR with matplotlib from a venv in the cache
# (installed with pip on first use; a prebuilt tree installs nothing and uses the host's python3
# if it has matplotlib); without it, says so (the CSVs are complete anyway).
bench_plot() {
  local venv=$UNIMEM_CACHE/bench-venv py
  py=$venv/bin/python
  if prebuilt; then
    py=python3
  elif ! "$py" -c 'import matplotlib' 2>/dev/null; then
    log "installing matplotlib into $venv"
    { python3 -m venv "$venv" && "$venv/bin/pip" install -q matplotlib; } >&2 ||
      log "could not install matplotlib: no plot (the CSVs are complete)"
  fi
  if "$py" -c 'import matplotlib' 2>/dev/null; then
    "$py" "$1" "$2" || log "plotting failed (the CSVs are complete)"
  elif prebuilt; then
    log "no python3 with matplotlib on this host: no plot (the CSVs are complete)"
  fi
}

# bench_point INDEX NODES THREADS CMD: CMD (a command line that takes --threads, --seconds,
# --reps, --barrier, --parties and --json, and prints ops_per_s, min_ops_per_s, max_ops_per_s)
# on nodes 0..NODES-1 with THREADS threads each, for SECONDS_PER_POINT cut into WINDOWS windows,
# all starting together at barrier word INDEX of the page at BENCH_BARRIERS. Every point needs a
# word of its own (a word already counted up holds nobody back), so the caller numbers them: a
# counter kept here would not survive the $(...) the result is read with. Prints "sum min max
# per-node(;-separated) requests-per-op" (the sums over the nodes; requests: the last node's
# gsas_requests_per_op, if CMD prints it).
bench_point() {
  local i=$1 nn=$2 t=$3 cmd=$4 b n out sum=0 lo=0 hi=0 per="" req=""
  [ "$i" -lt 512 ] || die "bench_point: barrier word $i is past the page"
  b=$(printf '%#x' $((BENCH_BARRIERS + 8 * i)))
  for n in $(seq 0 $((nn - 1))); do
    bg "$n" pt "$cmd --threads $t --seconds $SECONDS_PER_POINT --reps $WINDOWS --barrier $b --parties $nn --json"
  done
  for n in $(seq 0 $((nn - 1))); do
    wait_log "$n" pt '^exit=' 600
    out=$(on "$n" "cat /tmp/$BG-pt.log")
    grep -q '^exit=0$' <<<"$out" || die "node $n: $cmd failed: $out"
    out=$(grep '^{' <<<"$out")
    sum=$(calc %.1f "$sum + $(jv ops_per_s "$out")")
    lo=$(calc %.1f "$lo + $(jv min_ops_per_s "$out")")
    hi=$(calc %.1f "$hi + $(jv max_ops_per_s "$out")")
    per="$per${per:+;}$(jv ops_per_s "$out")"
    req=$(jv gsas_requests_per_op "$out")
  done
  echo "$sum $lo $hi $per ${req:--}"
}

# bench_tcg_note NODES: the summary's last words.
bench_tcg_note() {
  local smp=${UNIMEM_SMP:-1} what
  if [ "$smp" = 1 ]; then what="one-vCPU VMs"; else what="VMs of $smp vCPUs"; fi
  echo "Under TCG every guest instruction is emulated and $1 $what share $(nproc) host cores:"
  echo "compare figures of the same run with each other (the ratios), not with the seed's hardware."
}

# bench_scales NODES: whether figures across node counts up to NODES may be called scaling:
# only while every vCPU of the cluster has a host core of its own. With more vCPUs than cores,
# more nodes only share the same cores, and the ratio says nothing about a machine with a core
# per node.
bench_scales() {
  [ $(( $1 * ${UNIMEM_SMP:-1} )) -le "$(nproc)" ]
}

# bench_scaling_word NODES: "scaling", or what the node-count ratio is when it is not.
bench_scaling_word() {
  if bench_scales "$1"; then
    echo "scaling"
  else
    echo "node-count ratio, not scaling ($1 nodes x ${UNIMEM_SMP:-1} vCPU > $(nproc) host cores)"
  fi
}

# bench_results PLOTSCRIPT NO_PLOT: the plot (unless NO_PLOT is 1), then the files of the run.
bench_results() {
  [ "$2" = 1 ] || bench_plot "$1" "$OUT"
  echo
  echo "results: $OUT"; find "$OUT" -type f | sort
}
