/*
 * hot_cold.c: a batch program with one hot mutex and one cold one, for
 * `locklab advise` to judge (tests/python/test_advise.py).
 *
 *   hot_lock   WORKERS threads take it ITERS times each for a few
 *              nanoseconds of work: a short section under many threads, where
 *              the lock's handoff is the program's whole cost
 *   cold_lock  two keepers take it in turn and sleep 200 us holding it, so its
 *              waits are long and many (a share of the profile's waiting), but
 *              no lock serves a sleeping holder faster: the run's time does not
 *              depend on it
 *
 * The program ends when the workers have done their iterations (the keepers
 * stop then), so its wall time is the hot lock's.  The counters are checked:
 * a lock that failed to exclude makes it exit 1.
 *
 *   hot_cold [WORKERS [ITERS]]   prints {"hot": N, "cold": N, "expected": N}
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define KEEPERS 2
#define SECTION 20   /* the hot section's steps: a few nanoseconds of work */

static pthread_mutex_t hot_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t cold_lock = PTHREAD_MUTEX_INITIALIZER;
static long hot_count, cold_count;
static volatile long section_work;
static long iters;
static atomic_int stop;
static pthread_barrier_t start;

static void *worker(void *arg)
{
	(void)arg;
	pthread_barrier_wait(&start);
	for (long i = 0; i < iters; i++) {
		pthread_mutex_lock(&hot_lock);
		hot_count++;
		for (int j = 0; j < SECTION; j++)
			section_work++;
		pthread_mutex_unlock(&hot_lock);
	}
	return NULL;
}

static void *keeper(void *arg)
{
	(void)arg;
	const struct timespec hold = { 0, 200 * 1000 };
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		pthread_mutex_lock(&cold_lock);
		cold_count++;
		nanosleep(&hold, NULL);
		pthread_mutex_unlock(&cold_lock);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int workers = argc > 1 ? atoi(argv[1]) : 8;
	iters = argc > 2 ? atol(argv[2]) : 1000000;
	if (workers < 1 || workers > 256 || iters < 1) {
		fprintf(stderr, "usage: hot_cold [WORKERS 1-256 [ITERS]]\n");
		return 2;
	}
	pthread_t w[256], k[KEEPERS];
	/* Every worker starts at once: none runs its share alone before the rest exist. */
	pthread_barrier_init(&start, NULL, (unsigned)workers);
	for (int i = 0; i < KEEPERS; i++)
		pthread_create(&k[i], NULL, keeper, NULL);
	for (int i = 0; i < workers; i++)
		pthread_create(&w[i], NULL, worker, NULL);
	for (int i = 0; i < workers; i++)
		pthread_join(w[i], NULL);
	atomic_store(&stop, 1);
	for (int i = 0; i < KEEPERS; i++)
		pthread_join(k[i], NULL);
	long expected = (long)workers * iters;
	printf("{\"hot\": %ld, \"cold\": %ld, \"expected\": %ld}\n", hot_count, cold_count, expected);
	return hot_count == expected ? 0 : 1;
}
