// SPDX-License-Identifier: GPL-2.0
/*
 * Exports the Rust seam functions of unimem_eusrvmem (kernel/common/unimem_fabric.rs).
 * Rust modules cannot export symbols themselves out of tree; the same workaround as
 * drivers/gpu/nova-core/nova_core_exports.c.
 */
#include <linux/export.h>

#define EXPORT_SYMBOL_RUST_GPL(sym) extern int sym; EXPORT_SYMBOL_GPL(sym)

EXPORT_SYMBOL_RUST_GPL(unimem_fabric_attach);
EXPORT_SYMBOL_RUST_GPL(unimem_fabric_detach);
EXPORT_SYMBOL_RUST_GPL(unimem_fabric_live);
EXPORT_SYMBOL_RUST_GPL(unimem_fabric_on_revoke);
EXPORT_SYMBOL_RUST_GPL(unimem_fabric_ring);
EXPORT_SYMBOL_RUST_GPL(unimem_fabric_set_handler);
EXPORT_SYMBOL_RUST_GPL(unimem_fabric_reserve);
