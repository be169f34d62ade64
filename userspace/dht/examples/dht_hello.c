/* SPDX-License-Identifier: GPL-2.0 */
/*
 * dht_hello: a table over nodes 0..N-1, puts of 128-bit values, gets, a replace, a delete,
 * a second descriptor by the root address, the invalid value refused, destroy. Exits 0 and
 * prints "dht-hello: ok" if every result is right.
 *
 *   cc -o dht-hello dht_hello.c $(pkg-config --cflags --libs dht)
 *   dht-hello [NODES]          (default 4)
 */
#include <dht.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

static int failures;

#define CHECK(cond, ...)                                                          \
	do {                                                                      \
		if (!(cond)) {                                                    \
			fprintf(stderr, "dht-hello: FAIL %s:%d: ", __FILE__, __LINE__); \
			fprintf(stderr, __VA_ARGS__);                             \
			fprintf(stderr, " (dht: %s)\n", dht_strerror());          \
			failures++;                                               \
		}                                                                 \
	} while (0)

static dht_value_t value_of(uint64_t k)
{
	return (dht_value_t)(k * 3 + 1) << 64 | (k ^ 0x5a5a);
}

int main(int argc, char **argv)
{
	uint16_t nodes[16];
	size_t n = argc > 1 ? (size_t)atoi(argv[1]) : 4, i;
	uint64_t k, keys = 500;
	DHT *t, *u;

	if (n < 1 || n > 16) {
		fprintf(stderr, "dht-hello: NODES must be 1-16\n");
		return 2;
	}
	for (i = 0; i < n; i++)
		nodes[i] = (uint16_t)i;
	t = dhtCreate(nodes, n, 1000);
	if (!t) {
		fprintf(stderr, "dht-hello: dhtCreate: %s\n", dht_strerror());
		return 1;
	}
	printf("dht-hello: table %#" PRIx64 " over %zu nodes\n", dhtRoot(t), n);
	for (k = 0; k < keys; k++)
		CHECK(dhtPut(t, k * 1000003, value_of(k)) == 0, "put %" PRIu64, k);
	for (k = 0; k < keys; k++)
		CHECK(dhtGet(t, k * 1000003) == value_of(k), "get %" PRIu64, k);
	CHECK(dhtGet(t, 7) == DHT_INVALID && dht_errno() == 0, "a missing key");
	CHECK(dhtPut(t, 1000003, 5) == 0 && dhtGet(t, 1000003) == 5, "replace");
	CHECK(dhtDelete(t, 2000006) == 1, "delete");
	CHECK(dhtDelete(t, 2000006) == 0, "delete again");
	CHECK(dhtGet(t, 2000006) == DHT_INVALID, "get after delete");
	CHECK(dhtPut(t, 9, DHT_INVALID) == EINVAL, "the invalid value is refused");
	CHECK(dhtGet(t, 9) == DHT_INVALID, "nothing stored by a refused put");

	u = dhtOpen(dhtRoot(t));
	CHECK(u != NULL, "dhtOpen");
	if (u) {
		CHECK(dhtGet(u, 3 * 1000003) == value_of(3), "get through a second descriptor");
		dhtClose(u);
	}
	CHECK(dhtOpen(dhtRoot(t) + 8) == NULL && dht_errno() == EINVAL, "a root that is no page");
	CHECK(dhtGet(NULL, 1) == DHT_INVALID && dht_errno() == EINVAL, "NULL table");

	CHECK(dhtDestroy(t) == 0, "destroy");
	if (failures) {
		fprintf(stderr, "dht-hello: %d failures\n", failures);
		return 1;
	}
	printf("dht-hello: ok\n");
	return 0;
}
