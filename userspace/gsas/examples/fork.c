/* SPDX-License-Identifier: GPL-2.0 */
/*
 * remoteFork from C: allocate a word on this node, remoteFork `PROG faa ADDR --add K --count
 * COUNT --exit-code S` on each node given (PROG: the unimem-gsas tool, another binary in this
 * tree), wait for each child, check its exit status and the word's exact sum.
 *
 *   gsas-fork PROG COUNT NODE...
 */
#include <gsas.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <sys/wait.h>

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: %s PROG COUNT NODE...\n", argv[0]);
		return 2;
	}
	const char *prog = argv[1];
	unsigned long count = strtoul(argv[2], NULL, 0);
	int n = argc - 3;
	uint64_t word = AllocSharedPage((uint16_t)gsas_node_id(), 1);
	if (!word) {
		fprintf(stderr, "AllocSharedPage: %s\n", gsas_strerror());
		return 1;
	}
	uint64_t children[16];
	uint64_t expected = 0;
	char addr[32], add[16], cnt[32], code[16];
	snprintf(addr, sizeof(addr), "%#" PRIx64, word);
	snprintf(cnt, sizeof(cnt), "%lu", count);
	for (int i = 0; i < n && i < 16; i++) {
		int node = atoi(argv[3 + i]);
		snprintf(add, sizeof(add), "%d", node + 1);
		snprintf(code, sizeof(code), "%d", 20 + node);
		char *const args[] = { (char *)prog, "faa", addr, "--add", add, "--count", cnt,
				       "--exit-code", code, NULL };
		children[i] = remoteFork((uint16_t)node, prog, args);
		if (!children[i]) {
			fprintf(stderr, "remoteFork on node %d: %s\n", node, gsas_strerror());
			return 1;
		}
		expected += (uint64_t)(node + 1) * count;
		printf("node %d: child %#" PRIx64 "\n", node, children[i]);
	}
	int bad = 0;
	for (int i = 0; i < n && i < 16; i++) {
		int node = atoi(argv[3 + i]), st = 0;
		if (gsas_wait(children[i], &st, 0) != 0) {
			fprintf(stderr, "gsas_wait: %s\n", gsas_strerror());
			return 1;
		}
		int ok = WIFEXITED(st) && WEXITSTATUS(st) == 20 + node;
		printf("node %d: exit status %d%s\n", node, WIFEXITED(st) ? WEXITSTATUS(st) : -1,
		       ok ? "" : " (WRONG)");
		bad += !ok;
	}
	/* A child already waited for is unknown now. */
	int st;
	if (n > 0 && gsas_wait(children[0], &st, 1) != -ECHILD) {
		printf("second gsas_wait did not fail with ECHILD\n");
		bad++;
	}
	uint64_t sum = READ(word);
	printf("sum %" PRIu64 ", expected %" PRIu64 "%s\n", sum, expected,
	       sum == expected ? "" : " (WRONG)");
	bad += sum != expected;
	FreeSharedPage(word);
	return bad ? 1 : 0;
}
