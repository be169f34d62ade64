/* SPDX-License-Identifier: GPL-2.0 */
/*
 * faa_threads: THREADS threads of one process each FetchAndAdd 1 to one word on NODE COUNT
 * times (each thread has its own handle; all share the process's tree). The final value must
 * be THREADS * COUNT and the old values the threads saw must be 0..THREADS*COUNT-1, each once.
 *
 *   cc -o gsas-faa-threads faa_threads.c $(pkg-config --cflags --libs gsas) -pthread
 *   gsas-faa-threads NODE [THREADS [COUNT]]
 */
#include <gsas.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static uint64_t word;
static long count, total;
static unsigned char *seen;

static void *worker(void *arg)
{
	long errors = 0;

	(void)arg;
	for (long i = 0; i < count; i++) {
		uint64_t old = FetchAndAdd(word, 1);
		if (gsas_errno()) {
			fprintf(stderr, "faa_threads: FetchAndAdd: %s\n", gsas_strerror());
			errors++;
			break;
		}
		if (old >= (uint64_t)total) {
			fprintf(stderr, "faa_threads: FetchAndAdd returned %" PRIu64 ", beyond %ld\n", old, total);
			errors++;
			break;
		}
		seen[old] = 1; /* distinct indices: no two threads write the same byte */
	}
	gsas_finalize();
	return (void *)errors;
}

int main(int argc, char **argv)
{
	int node = argc > 1 ? atoi(argv[1]) : 0;
	int threads = argc > 2 ? atoi(argv[2]) : 4;
	pthread_t tid[64];
	long errors = 0, missing = 0;

	count = argc > 3 ? atol(argv[3]) : 1000;
	if (threads < 1 || threads > 64 || count < 1) {
		fprintf(stderr, "usage: faa_threads NODE [THREADS (1-64) [COUNT]]\n");
		return 2;
	}
	word = AllocSharedPage(node, 1);
	if (!word) {
		fprintf(stderr, "faa_threads: AllocSharedPage(%d): %s\n", node, gsas_strerror());
		return 1;
	}
	total = threads * count;
	seen = calloc((size_t)total, 1);
	for (int t = 0; t < threads; t++)
		pthread_create(&tid[t], NULL, worker, NULL);
	for (int t = 0; t < threads; t++) {
		void *r;
		pthread_join(tid[t], &r);
		errors += (long)r;
	}
	for (long i = 0; i < threads * count; i++)
		missing += !seen[i];
	uint64_t total = READ(word);
	printf("faa_threads: %d threads x %ld on node %d: final %" PRIu64 " (expected %ld), %ld old values missing, %ld errors\n",
	       threads, count, node, total, threads * count, missing, errors);
	FreeSharedPage(word);
	return (errors || missing || total != (uint64_t)(threads * count)) ? 1 : 0;
}
