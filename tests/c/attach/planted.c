/*
 * planted.c: the attach tracer's planted program: a hot mutex and a cold one,
 * each counting its own contended acquisitions, and a line of running totals
 * every 50 ms, so that a trace can be checked against the same window of the
 * program's own count.
 *
 *   attach_planted SECONDS COUNTS_FILE
 *
 * COUNTS_FILE gets "NS HOT COLD" lines: CLOCK_MONOTONIC ns, and the contended
 * acquisitions so far (a failed trylock before the lock) of each mutex.
 *
 * Hot: three threads take `hot_lock` for 50 us each time and work 50 us
 * outside it, so a thread that finds it held sleeps in the kernel (a hold far
 * longer than a wake-up), and one in N takes `cold_lock` for 2 us.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define THREADS 3
#define HOLD_NS 50000
#define WORK_NS 50000
#define COLD_EVERY 8

static pthread_mutex_t hot_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t cold_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_long hot_contended, cold_contended;
static atomic_int stop;

static long long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void spin_ns(long long ns)
{
	long long end = now_ns() + ns;
	while (now_ns() < end)
		;
}

/* Kept out of line, so that its call site is the lock's in the stack.  Nothing
 * slow between a failed trylock and the lock: the futex trace sees a wait
 * where the lock was still held at its futex call. */
static __attribute__((noinline)) void take(pthread_mutex_t *m, atomic_long *contended)
{
	if (pthread_mutex_trylock(m) == EBUSY) {
		atomic_fetch_add(contended, 1);
		pthread_mutex_lock(m);
	}
}

static void *worker(void *arg)
{
	(void)arg;
	for (long i = 0; !atomic_load(&stop); i++) {
		take(&hot_lock, &hot_contended);
		spin_ns(HOLD_NS);
		pthread_mutex_unlock(&hot_lock);
		spin_ns(WORK_NS);
		if (i % COLD_EVERY == 0) {
			take(&cold_lock, &cold_contended);
			spin_ns(2000);
			pthread_mutex_unlock(&cold_lock);
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: attach_planted SECONDS COUNTS_FILE\n");
		return 2;
	}
	double seconds = atof(argv[1]);
	FILE *out = fopen(argv[2], "w");
	if (!out || seconds <= 0) {
		fprintf(stderr, "attach_planted: bad arguments\n");
		return 2;
	}
	pthread_t t[THREADS];
	for (int i = 0; i < THREADS; i++)
		pthread_create(&t[i], NULL, worker, NULL);
	long long end = now_ns() + (long long)(seconds * 1e9);
	for (long long now = now_ns(); now < end; now = now_ns()) {
		fprintf(out, "%lld %ld %ld\n", now, atomic_load(&hot_contended),
			atomic_load(&cold_contended));
		fflush(out);
		struct timespec nap = { 0, 50 * 1000000L };
		nanosleep(&nap, NULL);
	}
	atomic_store(&stop, 1);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	fprintf(out, "%lld %ld %ld\n", now_ns(), atomic_load(&hot_contended),
		atomic_load(&cold_contended));
	fclose(out);
	return 0;
}
