// SPDX-License-Identifier: GPL-2.0
/*
 * tcg-profile: a QEMU TCG plugin that counts the guest instructions executed per translated
 * block, for finding where a code path's instructions go (scripts/profile/tcg-profile.sh).
 *
 * Each translated block gets a record {start address, instructions, executions}; QEMU adds 1
 * to its executions inline, so profiling costs little. While QEMU runs, a thread of the plugin
 * waits for PREFIX.trigger to appear; it then writes every record to PREFIX.N (N = 0, 1, ...)
 * as "address instructions executions" lines and removes the trigger. The difference of two
 * dumps is the profile of what ran between them.
 *
 * Only the plugin API's entry points used here are declared (QEMU's plugin ABI, version 1, as
 * in QEMU 7.2 and later): Debian ships no qemu-plugin.h.
 *   -plugin /path/tcg-profile.so,out=/tmp/prof
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef uint64_t qemu_plugin_id_t;
struct qemu_plugin_tb;
typedef struct qemu_info_t qemu_info_t;
enum qemu_plugin_op { QEMU_PLUGIN_INLINE_ADD_U64 };
typedef void (*tb_trans_cb)(qemu_plugin_id_t, struct qemu_plugin_tb *);
typedef void (*udata_cb)(qemu_plugin_id_t, void *);

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, tb_trans_cb cb);
void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb *tb, enum qemu_plugin_op op,
					      void *ptr, uint64_t imm);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *tb);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, udata_cb cb, void *userdata);

__attribute__((visibility("default"))) int qemu_plugin_version = 1;

struct record {
	uint64_t vaddr;
	uint64_t insns;
	uint64_t execs; /* added to by the translated code, from any vCPU */
};

/* Records are allocated in blocks that are never freed or moved: QEMU holds their address. */
#define BLOCK 65536
static struct record **blocks;
static size_t nblocks, used; /* records used in the last block */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char prefix[4096];
static int dumps;

static struct record *new_record(void)
{
	if (!nblocks || used == BLOCK) {
		struct record **b = realloc(blocks, (nblocks + 1) * sizeof(*b));
		if (!b)
			return NULL;
		blocks = b;
		blocks[nblocks] = calloc(BLOCK, sizeof(struct record));
		if (!blocks[nblocks])
			return NULL;
		nblocks++;
		used = 0;
	}
	return &blocks[nblocks - 1][used++];
}

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	(void)id;
	pthread_mutex_lock(&lock);
	struct record *r = new_record();
	if (r) {
		r->vaddr = qemu_plugin_tb_vaddr(tb);
		r->insns = qemu_plugin_tb_n_insns(tb);
		qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64,
							 &r->execs, 1);
	}
	pthread_mutex_unlock(&lock);
}

static void dump(void)
{
	char path[4200];
	snprintf(path, sizeof(path), "%s.%d", prefix, dumps++);
	FILE *f = fopen(path, "w");
	if (!f) {
		perror(path);
		return;
	}
	pthread_mutex_lock(&lock);
	for (size_t b = 0; b < nblocks; b++) {
		size_t n = b + 1 == nblocks ? used : BLOCK;
		for (size_t i = 0; i < n; i++) {
			struct record *r = &blocks[b][i];
			if (r->execs)
				fprintf(f, "%" PRIx64 " %" PRIu64 " %" PRIu64 "\n", r->vaddr, r->insns,
					__atomic_load_n(&r->execs, __ATOMIC_RELAXED));
		}
	}
	pthread_mutex_unlock(&lock);
	fclose(f);
}

static void *watch(void *arg)
{
	char trigger[4200];
	(void)arg;
	snprintf(trigger, sizeof(trigger), "%s.trigger", prefix);
	for (;;) {
		if (access(trigger, F_OK) == 0) {
			dump();
			unlink(trigger);
		}
		usleep(50000);
	}
	return NULL;
}

static void at_exit(qemu_plugin_id_t id, void *p)
{
	(void)id;
	(void)p;
}

__attribute__((visibility("default"))) int qemu_plugin_install(qemu_plugin_id_t id,
							       const qemu_info_t *info, int argc,
							       char **argv)
{
	(void)info;
	for (int i = 0; i < argc; i++)
		if (!strncmp(argv[i], "out=", 4))
			snprintf(prefix, sizeof(prefix), "%s", argv[i] + 4);
	if (!prefix[0]) {
		fprintf(stderr, "tcg-profile: needs out=PREFIX\n");
		return -1;
	}
	pthread_t t;
	if (pthread_create(&t, NULL, watch, NULL))
		return -1;
	pthread_detach(t);
	qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
	qemu_plugin_register_atexit_cb(id, at_exit, NULL);
	return 0;
}
