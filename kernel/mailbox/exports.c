// SPDX-License-Identifier: GPL-2.0
/*
 * Exports the Rust seam functions of unimem_mailbox (kernel/common/unimem_mailbox.rs),
 * the same workaround as drivers/gpu/nova-core/nova_core_exports.c.
 */
#include <linux/export.h>

#define EXPORT_SYMBOL_RUST_GPL(sym) extern int sym; EXPORT_SYMBOL_GPL(sym)

EXPORT_SYMBOL_RUST_GPL(unimem_mbox_register);
EXPORT_SYMBOL_RUST_GPL(unimem_mbox_send);
EXPORT_SYMBOL_RUST_GPL(unimem_mbox_serve);
EXPORT_SYMBOL_RUST_GPL(unimem_mbox_map_check);
EXPORT_SYMBOL_RUST_GPL(unimem_mbox_zap_pages);
EXPORT_SYMBOL_RUST_GPL(unimem_mbox_iface_state);
