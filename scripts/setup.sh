#!/usr/bin/env bash
# One command from a fresh Debian bookworm machine to everything built: host packages and
# bindgen, the pinned Rust-for-Linux kernel, the guest image, our modules and user space.
# Expensive outputs are cached under $UNIMEM_CACHE; a re-run with nothing changed takes seconds.
source "$(dirname "$0")/lib/common.sh"
start=$SECONDS
"$UNIMEM_ROOT/scripts/setup-host.sh"
kdir=$("$UNIMEM_ROOT/scripts/build-kernel.sh")
"$UNIMEM_ROOT/scripts/build-guest.sh" >/dev/null
log "building modules and user space"
make -C "$UNIMEM_ROOT" --no-print-directory -s KDIR="$kdir" all
log "setup done in $((SECONDS - start)) s"
