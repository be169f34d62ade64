# Helpers for cluster acceptance tests. Sourced by each test, which runs against a cluster
# started by scripts/test.sh (UNIMEM_RUN points at it).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
CLUSTER=$ROOT/scripts/cluster
NODES=$(cat "${UNIMEM_RUN:-$ROOT/build/cluster}/nodes")

# on NODE CMD...: run a shell command on NODE, failing the test if it fails.
on() { local n=$1; shift; "$CLUSTER" exec "$n" --timeout "${TIMEOUT:-120}" -- "$@"; }
# on_may_fail NODE CMD...: run and return its status without failing.
on_may_fail() { local n=$1; shift; set +e; "$CLUSTER" exec "$n" --timeout "${TIMEOUT:-120}" -- "$@"; local s=$?; set -e; return $s; }
fail() { echo "FAIL: $*" >&2; exit 1; }
step() { echo "--- $*"; }
expect_eq() { [ "$1" = "$2" ] || fail "$3: got '$1', expected '$2'"; }
