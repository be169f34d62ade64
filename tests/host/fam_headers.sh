#!/usr/bin/env bash
# The OpenFAM headers (userspace/fam/include/fam) compile in every language standard they
# support and declare exactly what their C ABI and C++ class use: the header-only checks of
# userspace/fam/tests/headers/check.sh, one PASS/FAIL line each.
exec "$(dirname "$0")/../../userspace/fam/tests/headers/check.sh" "$@"
