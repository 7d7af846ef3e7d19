/*
 * planted.c: the attach tracer's planted program: a hot mutex and a cold one,
 * each counting its own contended acquisitions, and a line of running totals
 * every 50 ms, so that a trace can be checked against the same window of the
 * program's own count.
 *
 *   attach_planted SECONDS COUNTS_FILE
 *
 * COUNTS_FILE gets "NS HOT HOT_SLEPT COLD" lines: CLOCK_MONOTONIC ns, and so
 * far: the hot mutex's contended acquisitions (a failed trylock before the
 * lock), those of them that slept in the kernel (the thread's voluntary
 * context switches rose during the lock call: what a futex trace sees; on a
 * busy machine a thread preempted between its trylock and its lock may find
 * the mutex free), and the cold mutex's contended acquisitions.
 *
 * Hot: three threads take `hot_lock` for 30 us each time and work 30 us
 * outside it, so a thread that finds it held sleeps in the kernel (a hold far
 * longer than a wake-up), and one in N takes `cold_lock` for 2 us.
 */
#include <errno.h>
#include <pthread.h>
#include <sys/resource.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define THREADS 3
#define HOLD_NS 30000
#define WORK_NS 30000
#define COLD_EVERY 8

static pthread_mutex_t hot_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t cold_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_long hot_contended, hot_slept, cold_contended;
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

static long voluntary_switches(void)
{
	struct rusage ru;
	getrusage(RUSAGE_THREAD, &ru);
	return ru.ru_nvcsw;
}

/* Kept out of line, so that its call site is the lock's in the stack. */
static __attribute__((noinline)) void take(pthread_mutex_t *m, atomic_long *contended,
					   atomic_long *slept)
{
	if (pthread_mutex_trylock(m) == EBUSY) {
		atomic_fetch_add(contended, 1);
		long before = voluntary_switches();
		pthread_mutex_lock(m);
		if (slept && voluntary_switches() != before)
			atomic_fetch_add(slept, 1);
	}
}

static void *worker(void *arg)
{
	(void)arg;
	for (long i = 0; !atomic_load(&stop); i++) {
		take(&hot_lock, &hot_contended, &hot_slept);
		spin_ns(HOLD_NS);
		pthread_mutex_unlock(&hot_lock);
		spin_ns(WORK_NS);
		if (i % COLD_EVERY == 0) {
			take(&cold_lock, &cold_contended, NULL);
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
		fprintf(out, "%lld %ld %ld %ld\n", now, atomic_load(&hot_contended),
			atomic_load(&hot_slept), atomic_load(&cold_contended));
		fflush(out);
		struct timespec nap = { 0, 50 * 1000000L };
		nanosleep(&nap, NULL);
	}
	atomic_store(&stop, 1);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	fprintf(out, "%lld %ld %ld %ld\n", now_ns(), atomic_load(&hot_contended),
		atomic_load(&hot_slept), atomic_load(&cold_contended));
	fclose(out);
	return 0;
}
