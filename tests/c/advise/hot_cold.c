/*
 * hot_cold.c: a batch program with one hot mutex and one cold one, for
 * `locklab advise` to judge (tests/python/test_advise.py).
 *
 *   hot_lock   WORKERS threads take it, for a few nanoseconds of work each
 *              time, until they have done SECTIONS between them: a short
 *              section under many threads, where the lock's handoff is the
 *              program's whole cost, contended to the end (a barging lock
 *              that lets one thread finish early cannot thin the crowd)
 *   cold_lock  two keepers take it in turn and sleep 200 us holding it, so its
 *              waits are long and many (a share of the profile's waiting), but
 *              no lock serves a sleeping holder faster: the run's time does not
 *              depend on it
 *
 * The program ends when the workers are done (the keepers stop then), so its
 * wall time is the hot lock's.  The count is checked: a lock that failed to
 * exclude makes it exit 1.
 *
 *   hot_cold [WORKERS [SECTIONS]]   prints {"hot": N, "cold": N, "expected": N}
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
static long total;
static atomic_int stop;
static pthread_barrier_t start;

static void *worker(void *arg)
{
	(void)arg;
	pthread_barrier_wait(&start);
	for (;;) {
		pthread_mutex_lock(&hot_lock);
		if (hot_count == total) {
			pthread_mutex_unlock(&hot_lock);
			return NULL;
		}
		hot_count++;
		for (int j = 0; j < SECTION; j++)
			section_work++;
		pthread_mutex_unlock(&hot_lock);
	}
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
	total = argc > 2 ? atol(argv[2]) : 8000000;
	if (workers < 1 || workers > 256 || total < 1) {
		fprintf(stderr, "usage: hot_cold [WORKERS 1-256 [SECTIONS]]\n");
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
	printf("{\"hot\": %ld, \"cold\": %ld, \"expected\": %ld}\n", hot_count, cold_count, total);
	return hot_count == total ? 0 : 1;
}
