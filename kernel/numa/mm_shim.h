/* SPDX-License-Identifier: GPL-2.0 */
/* The C side of kernel/numa/mm.rs: keep both in sync. */
#ifndef UNIMEM_NUMA_MM_SHIM_H
#define UNIMEM_NUMA_MM_SHIM_H

#include <linux/types.h>

int unimem_numa_free_node(void);
int unimem_numa_node_ids(void);
bool unimem_numa_node_possible(int nid);
bool unimem_numa_node_has_cpus(int nid);
int unimem_numa_distance(int from, int to);
unsigned long unimem_numa_block_size(void);
void unimem_numa_node_pages(int nid, unsigned long *managed, unsigned long *free);
unsigned long unimem_numa_free_elsewhere(int nid);

#endif
