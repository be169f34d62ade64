/* SPDX-License-Identifier: GPL-2.0 */
/*
 * gsas.h: GSAS, the global shared address space of a unimem cluster (seed 000 section 2,
 * with Gmem's extensions from seed 001). C interface of libgsas (userspace/gsas).
 *
 *   cc prog.c $(pkg-config --cflags --libs gsas)
 *
 * Addresses are 64 bits: node id in bits 48-63, byte offset in that node's partition in bits
 * 0-47 (gsas_addr, gsas_node_of). Pages are 4 KiB. Every operation on an address is applied
 * by the home node's atomic service (unimem_gsas.ko), atomically with respect to every other
 * GSAS operation on that node's memory, and costs one system call (the request is sent with
 * one ioctl; the answer is read from memory the service writes).
 *
 * Threads: each thread has its own handle (a mailbox interface; at most 63 per node), opened
 * by gsas_init() or by its first call, closed by gsas_finalize() or when the thread exits.
 * All threads of a process share one protection tree: memory allocated by one is usable by
 * all, and by processes started with GSAS_TREE_FD naming a mailbox file of the tree. Other
 * trees are denied (EACCES) and cannot change it.
 *
 * Errors: every call sets the calling thread's gsas_errno(): 0 on success, else a positive
 * errno value:
 *   EINVAL     invalid request (unknown operation, bad length or page count) or an address
 *              not aligned to the operation's size (8 bytes; 4 for *32; 16 for READ128 and
 *              WRITE128; 32 for READ256), or a NULL buffer
 *   EFAULT     not an allocated GSAS page of that node (never allocated, freed)
 *   EACCES     the page belongs to another protection tree (memory unchanged)
 *   ENOMEM     not enough free GSAS pages on that node
 *   ENOSPC     that node's service has no memory pool (no kram-daemon answered it)
 *   EDQUOT     you hold as many pages (or remoteForked children) on that node as it allows
 *              one user
 *   EAGAIN     that node's pool lease was still being renewed after a stall (the node was
 *              frozen) when the timeout ran out: nothing was done; try again
 *   ETIMEDOUT  no answer within the timeout (5 s; gsas_set_timeout_ms, GSAS_TIMEOUT_MS)
 *   ENOENT     /dev/unimem_mailbox is missing (unimem_mailbox not loaded)
 *   EBUSY      all 63 interfaces of this node are taken
 *   other      the mailbox device's errno (EINVAL from SEND: no such node)
 * gsas_strerror() describes the last error in words (operation, address, cause).
 * Calls returning int return 0 or -errno. Calls returning a value return 0 on error: when 0
 * is a possible value, check gsas_errno().
 *
 * Environment: GSAS_TIMEOUT_MS (timeout per operation), GSAS_SPINS and GSAS_YIELDS (how long
 * a thread polls and then yields before it sleeps between looks at its answer), GSAS_TREE_FD,
 * GSAS_SUBMIT (0: always a SEND system call; 1, the default: requests to another node's
 * polling service go through the submission slot, no system call; 2: always the slot) and
 * GSAS_KICK_POLLS (looks at an answer before a slot request rings the home, default 200).
 */
#ifndef GSAS_H
#define GSAS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* READ128's value: the word at the lower address in the low 64 bits. */
typedef unsigned __int128 gsas_uint128_t;

#define GSAS_PAGE_SIZE 4096u
#define GSAS_NODE_SHIFT 48

/* Opens the calling thread's handle: 0 or -errno. Optional (the first call opens it). */
int gsas_init(void);
/* Closes the calling thread's handle. */
void gsas_finalize(void);
/* The error of this thread's last call: 0 if it succeeded (see above). */
int gsas_errno(void);
/* The last error of this thread in words ("" if the last call succeeded). */
const char *gsas_strerror(void);
/* Timeout per operation of the calling thread, in ms (> 0). 0 or -EINVAL. */
int gsas_set_timeout_ms(uint64_t ms);
/* This node's id, or -errno. */
int gsas_node_id(void);
/* The calling thread's protection tree id (24 bits), or -errno. */
int gsas_tree_id(void);
/* System calls made so far by the calling thread's operations (SENDs, yields, sleeps), and
 * requests answered: their ratio is the system calls per operation. */
uint64_t gsas_syscalls(void);
uint64_t gsas_requests(void);

/* Address arithmetic. */
uint64_t gsas_addr(uint16_t node, uint64_t offset);
uint16_t gsas_node_of(uint64_t addr);

/* A round trip to node's service (no memory touched): 0 or -errno. */
int gsas_nop(uint16_t node);

/* n zeroed pages on node, owned by the calling thread's tree: the address of the first
 * (the pages are consecutive), or 0 on error. */
uint64_t AllocSharedPage(uint16_t node, uint64_t n);
/* Frees the allocation that starts at addr: 0 or -errno. */
int FreeSharedPage(uint64_t addr);

/* 64-bit read and write (8-byte aligned). */
uint64_t READ(uint64_t addr);
int WRITE(uint64_t addr, uint64_t val);
/* 32-bit read and write (4-byte aligned). */
uint32_t gsas_read32(uint64_t addr);
int gsas_write32(uint64_t addr, uint32_t val);

/* Atomic 128-bit read (16-byte aligned). */
gsas_uint128_t READ128(uint64_t addr);
/* Atomic 256-bit read (32-byte aligned) into buffer (32 bytes): 0 or -errno. */
int READ256(uint64_t addr, void *buffer);
/* Atomic 128-bit write of val[0] (lower address) and val[1] (16-byte aligned): 0 or -errno. */
int WRITE128(uint64_t addr, const uint64_t val[2]);

/* Atomics. Each returns the value the word had before. */
uint64_t FetchAndAdd(uint64_t addr, uint64_t val);              /* wrapping add */
uint64_t CAS(uint64_t addr, uint64_t expected, uint64_t desired); /* swapped iff old == expected */
uint64_t SWAP(uint64_t addr, uint64_t val);
uint64_t gsas_fetch_and64(uint64_t addr, uint64_t val);
uint64_t gsas_fetch_or64(uint64_t addr, uint64_t val);
uint64_t gsas_fetch_xor64(uint64_t addr, uint64_t val);
uint32_t gsas_fetch_add32(uint64_t addr, uint32_t val);
uint32_t gsas_cas32(uint64_t addr, uint32_t expected, uint32_t desired);
uint32_t gsas_swap32(uint64_t addr, uint32_t val);
uint32_t gsas_fetch_and32(uint64_t addr, uint32_t val);
uint32_t gsas_fetch_or32(uint64_t addr, uint32_t val);
uint32_t gsas_fetch_xor32(uint64_t addr, uint32_t val);

/* Bulk transfers of any length, a page per request (each page piece is atomic, the whole
 * is not): 0 or -errno. */
int gsas_bulk_read(void *dst, uint64_t addr, size_t len);
int gsas_bulk_write(uint64_t addr, const void *src, size_t len);

/* Maps `len` bytes (whole pages, page-aligned `addr`) of this node's GSAS memory into the
 * process, shared and read-write: pages allocated to this thread's protection tree only (the
 * node's service checks each). Loads and stores on it are the memory the operations above
 * change, with no request; atomics still go through the operations (FetchAndAdd, CAS, ...).
 * Freeing the pages removes the mapping (a later access gets SIGBUS); otherwise munmap(p, len).
 * NULL on error, gsas_errno():
 *   EACCES     a page belongs to another protection tree
 *   ENXIO      a page is not allocated (never, or freed)
 *   EINVAL     addr is on another node, not page-aligned, or len is 0 */
void *gsas_map_local(uint64_t addr, size_t len);

/* Maps `len` bytes (whole pages, page-aligned `addr`) of GSAS memory on any node into the
 * process, shared, read-write if `write` is non-zero, else read-only (and never writable).
 * On this node as gsas_map_local; on another node its service first approves the mapping
 * (each page checked as for a bulk read, or write, by this thread: its tree's pages, or pages
 * whose grant lets this user read, and write), then this node's driver maps the home's pages:
 * loads and stores are that node's memory. Freeing the pages, or a narrower grant, removes
 * the mapping (a later access gets SIGBUS); otherwise munmap(p, len). NULL on error,
 * gsas_errno(): EACCES (another tree's pages without a grant that allows it), EFAULT (a page
 * not allocated), EINVAL (not page-aligned, len 0 or not whole pages), or the mailbox's. */
void *gsas_map(uint64_t addr, size_t len, int write);

/* remoteFork: start the program at the absolute path `path` on `node`, with argv[0] = path
 * and the arguments argv[1], argv[2], ... up to a NULL (argv may be NULL: no arguments;
 * argv[0] is ignored), in this thread's protection tree: the child reaches this tree's GSAS
 * memory and this tree reaches the child's. Returns the child's id (never 0), or 0 on error:
 *   ESRCH      no remoteFork daemon (gsasd) runs on that node
 *   ENOENT, EACCES, ...  the program could not be started there: the errno of execve
 *   EINVAL     relative path, an empty argument, more than 255 arguments or 4096 bytes
 *   EAGAIN     that node runs 64 remoteForked children already
 * The child's stdout and stderr go to that node's gsasd log directory. */
uint64_t remoteFork(uint16_t node, const char *path, char *const argv[]);
/* Waits until child `child` (of this tree) exits and stores its wait status (as waitpid's:
 * WIFEXITED, WEXITSTATUS) in *status. 0 or -errno: ECHILD no such child (or already waited
 * for), EACCES a child of another tree, ESRCH its node's daemon went away while it ran.
 * With nohang != 0 it returns -EAGAIN at once if the child still runs. */
int gsas_wait(uint64_t child, int *status, int nohang);

#ifdef __cplusplus
}
#endif

#endif /* GSAS_H */
