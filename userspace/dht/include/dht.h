/* SPDX-License-Identifier: GPL-2.0 */
/*
 * dht.h: a distributed hash table on the GSAS of a unimem cluster (seed 000 section 2.5).
 * C interface of libdht (userspace/dht). Design and choices: docs/DHT.md.
 *
 *   cc prog.c $(pkg-config --cflags --libs dht)
 *
 * Keys are 64 bits (any value), values 128 bits (any value but DHT_INVALID). A table is made
 * by dhtCreate over a list of nodes and named by its root address (dhtRoot): another process
 * of the same protection tree, on any node, opens it with dhtOpen(root). Processes of other
 * trees are denied every operation (EACCES) and cannot change it.
 *
 * Threads: a DHT * may be shared by the threads of a process; each thread uses the table
 * through a GSAS handle of its own (a mailbox interface; at most 63 per node), opened at its
 * first call and closed when the thread exits (or dht_thread_exit()).
 *
 * libdht contains libgsas: a program links -ldht alone and may use gsas.h's calls too, in the
 * same protection tree as its tables.
 *
 * Errors: every call sets the calling thread's dht_errno(): 0 on success, else a positive
 * errno value, and dht_strerror() describes it (the same slot as gsas_errno/gsas_strerror):
 *   EINVAL     a bad argument (NULL table, no nodes, capacity 0, the invalid value)
 *   EXFULL     the key's container is full (128 keys share one first-level entry)
 *   EBUSY      an entry stayed locked through every retry (5 s; DHT_BUSY_MS): a writer holds
 *              it, or died holding it
 *   EBADMSG    the table's memory holds something this library never writes (nothing changed)
 *   EACCES     the table belongs to another protection tree
 *   ENOMEM     a node has not enough free GSAS pages (create, or a new container)
 *   EFAULT     not a table's memory (destroyed, or a wrong root)
 *   ETIMEDOUT  a node's GSAS service did not answer (GSAS_TIMEOUT_MS)
 *   other      gsas.h's errors
 */
#ifndef DHT_H
#define DHT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef unsigned __int128 dht_value_t;
/* What dhtGet returns for a missing key (and on error); dhtPut refuses to store it. */
#define DHT_INVALID (~(dht_value_t)0)

typedef struct DHT DHT;

/* dhtCreate: a table for about `capacity` keys, its first level spread over the `n_nodes`
 * nodes listed (contiguous slices, in that order), its root page on nodes[0]. NULL on error. */
DHT *dhtCreate(const uint16_t *nodes, size_t n_nodes, uint64_t capacity);
/* Opens the table whose root is at `root` (made by a process of this tree). NULL on error. */
DHT *dhtOpen(uint64_t root);
/* The table's root address (0 for NULL). */
uint64_t dhtRoot(const DHT *dht);
/* dhtPut: inserts key with value, or replaces its value. 0, or an error code (the errno). */
uint64_t dhtPut(DHT *dht, uint64_t key, dht_value_t value);
/* dhtGet: the value, or DHT_INVALID if the key is absent or on error (dht_errno() != 0). */
dht_value_t dhtGet(DHT *dht, uint64_t key);
/* dhtDelete: 1 if the key was there, 0 if not, or -errno. */
int dhtDelete(DHT *dht, uint64_t key);
/* dhtDestroy: frees the table's memory (when no other process uses it any more) and the
 * descriptor. 0 or -errno; the descriptor is freed either way. */
int dhtDestroy(DHT *dht);
/* Frees the descriptor and this thread's handle on the table; the table stays. */
void dhtClose(DHT *dht);
/* Closes the calling thread's handles on all tables. */
void dht_thread_exit(void);
/* The error of this thread's last call: 0 if it succeeded. */
int dht_errno(void);
/* The last error of this thread in words ("" if the last call succeeded). */
const char *dht_strerror(void);

#ifdef __cplusplus
}
#endif

#endif /* DHT_H */
