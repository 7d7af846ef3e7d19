/*
 * lockmix.c: a program whose threads outnumber the CPUs and mix every way of
 * taking a mutex, for the lock swapper (`locklab run --lock X -- lockmix`):
 * a lock that cannot survive preemption hangs it, one that can finishes.
 *
 *   lockmix [--threads N] [--mutexes M] [--iterations K] [--cpus C]
 *           [--hold-ns H] [--watchdog S]
 *
 * N threads (8) each take K times (200000) one of M mutexes (32) chosen at
 * random: by pthread_mutex_lock, by pthread_mutex_trylock (then lock when
 * busy), or by pthread_mutex_timedlock with a 1 ms deadline (again until it
 * succeeds), in turn; each holds it for about H ns (200) of work and
 * increments the mutex's counter.  --cpus C pins the whole process to C
 * CPUs of its affinity mask first (default: all), so that a machine with
 * many CPUs runs the same oversubscription as a small one.  --watchdog S
 * (0: none) ends a run still going after S seconds with status 124 and one
 * line.  Exit 0 with one line of counts and the wall time when the counters
 * add up, 1 when they do not (mutual exclusion broken), 2 for bad arguments.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct counted_mutex {
	pthread_mutex_t m;
	long count;
};

static struct counted_mutex *mutexes;
static long nmutexes = 32, iterations = 200000, hold_ns = 200;
static atomic_long busy_trylocks, timeouts;

static uint64_t now_ns(clockid_t clock)
{
	struct timespec ts;
	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void work(long ns)
{
	uint64_t until = now_ns(CLOCK_MONOTONIC) + (uint64_t)ns;
	while (now_ns(CLOCK_MONOTONIC) < until)
		;
}

static void take(pthread_mutex_t *m, long i)
{
	if (i % 3 == 1) {
		if (pthread_mutex_trylock(m) == 0)
			return;
		atomic_fetch_add_explicit(&busy_trylocks, 1, memory_order_relaxed);
	} else if (i % 3 == 2) {
		for (;;) {
			uint64_t dl = now_ns(CLOCK_REALTIME) + 1000000u;
			struct timespec ts = { .tv_sec = (time_t)(dl / 1000000000u),
					       .tv_nsec = (long)(dl % 1000000000u) };
			int rc = pthread_mutex_timedlock(m, &ts);
			if (rc == 0)
				return;
			if (rc != ETIMEDOUT) {
				fprintf(stderr, "lockmix: pthread_mutex_timedlock: %s\n", strerror(rc));
				exit(1);
			}
			atomic_fetch_add_explicit(&timeouts, 1, memory_order_relaxed);
		}
	}
	pthread_mutex_lock(m);
}

static void *thread_main(void *arg)
{
	uint32_t x = (uint32_t)(uintptr_t)arg * 2654435761u | 1u;
	for (long i = 0; i < iterations; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		struct counted_mutex *cm = &mutexes[x % (uint32_t)nmutexes];
		take(&cm->m, i);
		cm->count++;
		work(hold_ns);
		pthread_mutex_unlock(&cm->m);
	}
	return NULL;
}

static long seconds;

static void watchdog(int sig)
{
	(void)sig;
	char msg[96];
	int n = snprintf(msg, sizeof(msg), "lockmix: still running after %ld s: stopped\n", seconds);
	if (write(2, msg, (size_t)n) < 0)
		_exit(125);
	_exit(124);
}

/* Keep the first `cpus` CPUs of the affinity mask; 0 on success. */
static int pin(long cpus)
{
	cpu_set_t have, keep;
	if (sched_getaffinity(0, sizeof(have), &have))
		return -1;
	CPU_ZERO(&keep);
	for (int c = 0, n = 0; c < CPU_SETSIZE && n < cpus; c++)
		if (CPU_ISSET(c, &have)) {
			CPU_SET(c, &keep);
			n++;
		}
	return sched_setaffinity(0, sizeof(keep), &keep);
}

static int usage(const char *why)
{
	fprintf(stderr, "lockmix: %s (usage: lockmix [--threads N] [--mutexes M] [--iterations K] "
			"[--cpus C] [--hold-ns H] [--watchdog S])\n", why);
	return 2;
}

int main(int argc, char **argv)
{
	long threads = 8, cpus = 0;
	for (int i = 1; i < argc; i++) {
		long *to = !strcmp(argv[i], "--threads") ? &threads
			   : !strcmp(argv[i], "--mutexes") ? &nmutexes
			   : !strcmp(argv[i], "--iterations") ? &iterations
			   : !strcmp(argv[i], "--cpus") ? &cpus
			   : !strcmp(argv[i], "--hold-ns") ? &hold_ns
			   : !strcmp(argv[i], "--watchdog") ? &seconds : NULL;
		char *end;
		if (!to)
			return usage("unknown argument");
		if (i + 1 >= argc)
			return usage("a value is missing");
		*to = strtol(argv[++i], &end, 10);
		if (*end || *to < 0 || *to > 100000000)
			return usage("values are integers in [0, 100000000]");
	}
	if (threads < 1 || nmutexes < 1)
		return usage("--threads and --mutexes take at least 1");
	if (cpus && pin(cpus))
		return usage("--cpus: the affinity mask cannot be set");
	if (seconds) {
		signal(SIGALRM, watchdog);
		alarm((unsigned)seconds);
	}

	mutexes = calloc((size_t)nmutexes, sizeof(*mutexes));
	pthread_t *tids = calloc((size_t)threads, sizeof(*tids));
	if (!mutexes || !tids)
		return usage("out of memory");
	for (long i = 0; i < nmutexes; i++)
		pthread_mutex_init(&mutexes[i].m, NULL);
	uint64_t t0 = now_ns(CLOCK_MONOTONIC);
	for (long i = 0; i < threads; i++)
		if (pthread_create(&tids[i], NULL, thread_main, (void *)(uintptr_t)(i + 1)))
			return usage("pthread_create failed");
	for (long i = 0; i < threads; i++)
		pthread_join(tids[i], NULL);
	double secs = (double)(now_ns(CLOCK_MONOTONIC) - t0) / 1e9;

	long total = 0;
	for (long i = 0; i < nmutexes; i++) {
		total += mutexes[i].count;
		pthread_mutex_destroy(&mutexes[i].m);
	}
	printf("lockmix: %ld threads x %ld iterations over %ld mutexes in %.3f s "
	       "(busy trylocks %ld, timed-out waits %ld)\n", threads, iterations, nmutexes, secs,
	       atomic_load(&busy_trylocks), atomic_load(&timeouts));
	if (total != threads * iterations) {
		fprintf(stderr, "lockmix: counters add up to %ld, expected %ld\n", total,
			threads * iterations);
		return 1;
	}
	return 0;
}
