/*
 * wakeup.c: test_rwlocks wakeup ALGO, 256 threads mixing readers, writers and
 * timed waits: no lost wake-up.
 */
#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "suite.h"

enum { WAKEUP_THREADS = 256 };

static volatile long wake_counter;
static atomic_long wake_timeouts, wake_writes;
static atomic_int wake_readers, wake_writers, wake_bad;

struct wake_arg {
	long iters;
	unsigned id;
};

static void *wakeup_main(void *p)
{
	const struct wake_arg *a = p;
	long iters = a->iters;
	unsigned id = a->id;
	for (long i = 0; i < iters; i++) {
		/* A quarter of each thread's sections write; a quarter of the waits are timed. */
		int write = ((unsigned)i + id) % 4 == 0, timed = i % 4 == 3;
		if (timed) {
			while ((write ? ll_rwlock_timedwrlock_ns(&shared, 200000)
				      : ll_rwlock_timedrdlock_ns(&shared, 200000)) == ETIMEDOUT)
				atomic_fetch_add_explicit(&wake_timeouts, 1, memory_order_relaxed);
		} else {
			CHECK((write ? ll_rwlock_wrlock(&shared) : ll_rwlock_rdlock(&shared)) == 0,
			      "lock");
		}
		if (write) {
			if (atomic_fetch_add(&wake_writers, 1) || atomic_load(&wake_readers))
				atomic_fetch_add(&wake_bad, 1);
			if ((i & 7) == 0)
				sched_yield();
			wake_counter = wake_counter + 1;
			atomic_fetch_sub(&wake_writers, 1);
			atomic_fetch_add_explicit(&wake_writes, 1, memory_order_relaxed);
		} else {
			atomic_fetch_add(&wake_readers, 1);
			if (atomic_load(&wake_writers))
				atomic_fetch_add(&wake_bad, 1);
			if ((i & 7) == 1)
				sched_yield();
			atomic_fetch_sub(&wake_readers, 1);
		}
		ll_rwlock_unlock(&shared);
	}
	return NULL;
}

int test_wakeup(void)
{
	long iters = test_scaled(400);
	struct wake_arg *args = malloc(sizeof(*args) * WAKEUP_THREADS);
	for (int i = 0; i < WAKEUP_THREADS; i++)
		args[i] = (struct wake_arg){ iters, (unsigned)i };
	init_rw(&shared, NULL);
	test_watchdog("wakeup", 300);
	test_run_threads(WAKEUP_THREADS, wakeup_main, args, sizeof(*args));
	CHECK(atomic_load(&wake_bad) == 0, "%s: %d sections saw a writer beside them", algo,
	      atomic_load(&wake_bad));
	CHECK(wake_counter == atomic_load(&wake_writes), "%s: counter %ld, %ld writes", algo,
	      wake_counter, atomic_load(&wake_writes));
	ll_rwlock_destroy(&shared);
	printf("wakeup %s: %d threads x %ld sections (%ld writes) finished, %ld timed-out waits\n",
	       algo, WAKEUP_THREADS, iters, atomic_load(&wake_writes), atomic_load(&wake_timeouts));
	free(args);
	return 0;
}
