/* SPDX-License-Identifier: GPL-2.0 */
/*
 * dht_threads: THREADS threads of this process share one table (one DHT *): each puts its own
 * keys, reads every key of every thread after a barrier, and counts values that are wrong.
 * With a ROOT argument it opens that table (made by another process of the tree) instead of
 * making one, and leaves it there.
 *
 *   cc -o dht-threads dht_threads.c $(pkg-config --cflags --libs dht) -pthread
 *   dht-threads THREADS KEYS [ROOT]
 */
#include <dht.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static DHT *table;
static int threads;
static uint64_t keys;
static pthread_barrier_t all_put;
static int errors[64];

static uint64_t key_of(int t, uint64_t i)
{
	return (uint64_t)t << 32 | i;
}

static dht_value_t value_of(uint64_t k)
{
	return (dht_value_t)~k << 64 | k;
}

static void *worker(void *arg)
{
	int me = (int)(intptr_t)arg, t;
	uint64_t i;

	for (i = 0; i < keys; i++)
		if (dhtPut(table, key_of(me, i), value_of(key_of(me, i))) != 0) {
			fprintf(stderr, "thread %d: put: %s\n", me, dht_strerror());
			errors[me]++;
		}
	pthread_barrier_wait(&all_put);
	for (t = 0; t < threads; t++)
		for (i = 0; i < keys; i++)
			if (dhtGet(table, key_of(t, i)) != value_of(key_of(t, i)))
				errors[me]++;
	return NULL;
}

int main(int argc, char **argv)
{
	static const uint16_t nodes[] = { 0, 1, 2, 3 };
	pthread_t tid[64];
	int t, total = 0;

	if (argc < 3) {
		fprintf(stderr, "usage: dht-threads THREADS KEYS [ROOT]\n");
		return 2;
	}
	threads = atoi(argv[1]);
	keys = strtoull(argv[2], NULL, 0);
	if (threads < 1 || threads > 64) {
		fprintf(stderr, "dht-threads: THREADS must be 1-64\n");
		return 2;
	}
	table = argc > 3 ? dhtOpen(strtoull(argv[3], NULL, 0)) : dhtCreate(nodes, 4, keys * threads);
	if (!table) {
		fprintf(stderr, "dht-threads: %s\n", dht_strerror());
		return 1;
	}
	pthread_barrier_init(&all_put, NULL, threads);
	for (t = 0; t < threads; t++)
		pthread_create(&tid[t], NULL, worker, (void *)(intptr_t)t);
	for (t = 0; t < threads; t++) {
		pthread_join(tid[t], NULL);
		total += errors[t];
	}
	printf("dht-threads: %d threads x %" PRIu64 " keys, %d errors\n", threads, keys, total);
	if (argc > 3)
		dhtClose(table);
	else if (dhtDestroy(table) != 0) {
		fprintf(stderr, "dht-threads: destroy: %s\n", dht_strerror());
		total++;
	}
	return total ? 1 : 0;
}
