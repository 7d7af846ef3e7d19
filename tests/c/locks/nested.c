/*
 * nested.c: test_locks nested, every algorithm and peer held at once,
 * released in any order.
 */
#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "suite.h"
#include "bench/locks.h"

enum { NEST_THREADS = 8, NEST_MAX = 64 };

static ll_mutex_t nest_locks[NEST_MAX];
static volatile long nest_counter[NEST_MAX];
static int nest_count;

static void *nested_main(void *p)
{
	long iters = *(long *)p;
	unsigned r = (unsigned)(uintptr_t)p;
	int order[NEST_MAX];

	for (long i = 0; i < iters; i++) {
		/* Acquire in one global order (no deadlock), release in a random one. */
		for (int k = 0; k < nest_count; k++) {
			ll_mutex_lock(&nest_locks[k]);
			nest_counter[k] = nest_counter[k] + 1;
			order[k] = k;
		}
		for (int k = nest_count - 1; k > 0; k--) {
			r = r * 1103515245u + 12345u;
			int j = (int)((r >> 16) % (unsigned)(k + 1));
			int tmp = order[k];
			order[k] = order[j];
			order[j] = tmp;
		}
		for (int k = 0; k < nest_count; k++)
			ll_mutex_unlock(&nest_locks[order[k]]);
	}
	return NULL;
}

int test_nested(void)
{
	/* Two locks of each algorithm and peer: a thread holds two MCS nodes at once, and so on. */
	CHECK(2 * bench_lock_count() <= NEST_MAX, "%zu locks, NEST_MAX %d", 2 * bench_lock_count(),
	      NEST_MAX);
	for (size_t a = 0; a < bench_lock_count(); a++)
		for (int copy = 0; copy < 2; copy++)
			init_lock(&nest_locks[nest_count++], bench_lock_at(a)->name, NULL);
	long iters = test_scaled(2000);
	long args[NEST_THREADS];
	for (int i = 0; i < NEST_THREADS; i++)
		args[i] = iters;
	test_watchdog("nested", 600);
	test_run_threads(NEST_THREADS, nested_main, args, sizeof(long));
	for (int k = 0; k < nest_count; k++) {
		CHECK(nest_counter[k] == iters * NEST_THREADS, "lock %d (%s): %ld, expected %ld", k,
		      ll_mutex_algo(&nest_locks[k]), nest_counter[k], iters * NEST_THREADS);
		ll_mutex_destroy(&nest_locks[k]);
	}
	printf("nested: %d locks of %zu algorithms, %d threads x %ld rounds\n", nest_count,
	       bench_lock_count(), NEST_THREADS, iters);
	return 0;
}
