// SPDX-License-Identifier: GPL-2.0
/*
 * Node queries of unimem_numa that are macros or inline functions in C (node states, zone
 * counters, watermarks), kept here rather than as Rust helpers in the kernel patch series
 * because they answer this module's questions, not generic ones. Called from numa.rs
 * (kernel/numa/mm.rs declares them); not exported.
 */
#include <linux/memory.h>
#include <linux/mm.h>
#include <linux/mmzone.h>
#include <linux/nodemask.h>
#include <linux/topology.h>
#include <linux/vmstat.h>

#include "mm_shim.h"

/* The first possible node with neither memory nor CPUs: where remote memory goes. */
int unimem_numa_free_node(void)
{
	int nid;

	for_each_node(nid)
		if (!node_state(nid, N_MEMORY) && !node_state(nid, N_CPU))
			return nid;
	return NUMA_NO_NODE;
}

int unimem_numa_node_ids(void)
{
	return nr_node_ids;
}

bool unimem_numa_node_possible(int nid)
{
	return nid >= 0 && nid < MAX_NUMNODES && node_possible(nid);
}

bool unimem_numa_node_has_cpus(int nid)
{
	return node_state(nid, N_CPU);
}

int unimem_numa_distance(int from, int to)
{
	return node_distance(from, to);
}

unsigned long unimem_numa_block_size(void)
{
	return memory_block_size_bytes();
}

/* Pages the node manages and pages free on it (0 for a node without memory). */
void unimem_numa_node_pages(int nid, unsigned long *managed, unsigned long *free)
{
	int i;

	*managed = 0;
	*free = 0;
	if (!node_state(nid, N_MEMORY))
		return;
	for (i = 0; i < MAX_NR_ZONES; i++) {
		struct zone *zone = &NODE_DATA(nid)->node_zones[i];

		*managed += zone_managed_pages(zone);
		*free += zone_page_state(zone, NR_FREE_PAGES);
	}
}

/*
 * Free pages above the high watermark on every node with memory except @nid: what migrating
 * @nid's pages elsewhere can use without pushing those nodes into reclaim.
 */
unsigned long unimem_numa_free_elsewhere(int nid)
{
	unsigned long total = 0;
	int other, i;

	for_each_node_state(other, N_MEMORY) {
		if (other == nid)
			continue;
		for (i = 0; i < MAX_NR_ZONES; i++) {
			struct zone *zone = &NODE_DATA(other)->node_zones[i];
			unsigned long free = zone_page_state(zone, NR_FREE_PAGES);
			unsigned long high = high_wmark_pages(zone);

			if (free > high)
				total += free - high;
		}
	}
	return total;
}
