#!/usr/bin/env bash
# dht.sh with every job command run as the guests' unprivileged user, unimem-user (issue 29: the
# GSAS, DHT and OpenSHMEM tests pass without root). Root only loads modules, starts daemons,
# reads counters and cleans up (tests/cluster/lib.sh: job, share_tree_up).
UNIMEM_TEST_AS_USER=1 exec "$(dirname "$0")/dht.sh" "$@"
