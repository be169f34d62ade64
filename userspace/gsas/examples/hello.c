/* SPDX-License-Identifier: GPL-2.0 */
/*
 * hello: allocate a page on a remote node, write, read back, Fetch&Add, CAS, SWAP, READ128,
 * WRITE128, READ256, bulk transfer, free; map a page of this node and use it both ways. Exits 0 and prints "hello: ok" if every result is
 * right.
 *
 *   cc -o gsas-hello hello.c $(pkg-config --cflags --libs gsas)
 *   gsas-hello [NODE]          (default: the next node after this one, or 0)
 */
#include <gsas.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

#define CHECK(cond, ...)                                                     \
	do {                                                                 \
		if (!(cond)) {                                               \
			fprintf(stderr, "hello: FAIL %s:%d: ", __FILE__, __LINE__); \
			fprintf(stderr, __VA_ARGS__);                        \
			fprintf(stderr, " (gsas: %s)\n", gsas_strerror());   \
			failures++;                                          \
		}                                                            \
	} while (0)

int main(int argc, char **argv)
{
	int me, node;
	uint64_t a, old, v2[2], w[4];
	gsas_uint128_t v128;
	char in[5000], out[5000];

	if (gsas_init() < 0) {
		fprintf(stderr, "hello: gsas_init: %s\n", gsas_strerror());
		return 2;
	}
	me = gsas_node_id();
	node = argc > 1 ? atoi(argv[1]) : me + 1;
	a = AllocSharedPage(node, 2);
	if (!a) {
		fprintf(stderr, "hello: AllocSharedPage(%d, 2): %s\n", node, gsas_strerror());
		return 1;
	}
	printf("hello: node %d, tree %#x, 2 pages at %#" PRIx64 " on node %u\n", me,
	       gsas_tree_id(), a, gsas_node_of(a));

	CHECK(READ(a) == 0 && gsas_errno() == 0, "fresh page not zero");
	CHECK(WRITE(a, 41) == 0, "WRITE");
	CHECK(READ(a) == 41, "READ after WRITE");
	old = FetchAndAdd(a, 1);
	CHECK(old == 41, "FetchAndAdd returned %" PRIu64, old);
	CHECK(READ(a) == 42, "READ after FetchAndAdd");
	CHECK(CAS(a, 7, 9) == 42 && READ(a) == 42, "failed CAS changed the word");
	CHECK(CAS(a, 42, 9) == 42 && READ(a) == 9, "CAS");
	CHECK(SWAP(a, 0xff) == 9 && READ(a) == 0xff, "SWAP");
	CHECK(gsas_fetch_and64(a, 0x0f) == 0xff && gsas_fetch_or64(a, 0x30) == 0x0f &&
		      gsas_fetch_xor64(a, 0x3f) == 0x3f && READ(a) == 0,
	      "fetch and/or/xor 64");
	CHECK(gsas_fetch_add32(a + 8, 5) == 0 && gsas_read32(a + 8) == 5 && READ(a + 8) == 5,
	      "32-bit Fetch&Add");

	v2[0] = 0x1111111111111111ull;
	v2[1] = 0x2222222222222222ull;
	CHECK(WRITE128(a + 32, v2) == 0, "WRITE128");
	v128 = READ128(a + 32);
	CHECK((uint64_t)v128 == v2[0] && (uint64_t)(v128 >> 64) == v2[1], "READ128");
	CHECK(READ256(a + 32, w) == 0 && w[0] == v2[0] && w[1] == v2[1] && w[2] == 0 && w[3] == 0,
	      "READ256");

	/* Errors: unaligned, and a page that was never allocated. */
	READ(a + 4);
	CHECK(gsas_errno() == 22 /* EINVAL */, "unaligned READ gave errno %d", gsas_errno());
	CHECK(strstr(gsas_strerror(), "aligned") != NULL, "unaligned message: %s", gsas_strerror());

	for (size_t i = 0; i < sizeof(out); i++)
		out[i] = (char)(i * 13 + 1);
	CHECK(gsas_bulk_write(a + 100, out, sizeof(out)) == 0, "bulk write");
	memset(in, 0, sizeof(in));
	CHECK(gsas_bulk_read(in, a + 100, sizeof(in)) == 0 && memcmp(in, out, sizeof(in)) == 0,
	      "bulk read back");

	CHECK(FreeSharedPage(a) == 0, "FreeSharedPage");
	READ(a);
	CHECK(gsas_errno() == 14 /* EFAULT */, "READ after free gave errno %d", gsas_errno());

	/* A page of this node, mapped: stores are what READ sees, and the reverse. */
	uint64_t l = AllocSharedPage((uint16_t)me, 1);
	CHECK(l != 0, "AllocSharedPage on this node");
	volatile uint64_t *p = l ? gsas_map_local(l, 4096) : NULL;
	CHECK(p != NULL, "gsas_map_local of this node's page");
	if (p) {
		p[1] = 77;
		CHECK(READ(l + 8) == 77, "READ of a store through the mapping");
		CHECK(WRITE(l + 16, 78) == 0 && p[2] == 78, "a WRITE seen through the mapping");
	}
	CHECK(gsas_map_local(gsas_addr((uint16_t)(me + 1), 0), 4096) == NULL &&
		      gsas_errno() == 22 /* EINVAL */,
	      "mapping another node's page");
	CHECK(l == 0 || FreeSharedPage(l) == 0, "FreeSharedPage of the mapped page");

	printf("hello: %" PRIu64 " requests, %" PRIu64 " system calls\n", gsas_requests(),
	       gsas_syscalls());
	gsas_finalize();
	if (failures) {
		printf("hello: %d checks failed\n", failures);
		return 1;
	}
	printf("hello: ok\n");
	return 0;
}
