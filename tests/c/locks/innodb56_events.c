/*
 * innodb56_events.c: test_locks innodb56-events, two innodb56 locks that
 * share their event, contended.
 */
#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "suite.h"
#include "locks/innodb56_sync.h"

/*
 * innodb56's locks share a table of events.  Two locks of one event, each
 * contended by two threads that go to sleep at once (sync_spin_loops=0): the
 * sets and resets of either lock land between the other's resets, sets and
 * sleeps, and the timed waits that give up leave the event set or reset
 * behind.  A lost wake-up leaves a sleeper for good (the watchdog); a set for
 * the other lock only wakes a sleeper early, to sleep again.
 */
enum { SHARE_THREADS = 4, SHARE_POOL = 2 << LL_IB_EVENT_BITS };
static ll_innodb56_t share_pool[SHARE_POOL];
static ll_innodb56_t *share_lock[2];
static long share_counter[2];
static atomic_long share_timeouts;

struct share_arg {
	int which;
	long iters;
};

static void *share_main(void *p)
{
	const struct share_arg *a = p;
	ll_innodb56_t *l = share_lock[a->which];
	for (long i = 0; i < a->iters; i++) {
		if (i % 4 == 3) {
			struct timespec dl;
			clock_gettime(CLOCK_MONOTONIC, &dl);
			dl.tv_nsec += 20000;
			if (dl.tv_nsec >= 1000000000L) {
				dl.tv_sec++;
				dl.tv_nsec -= 1000000000L;
			}
			if (ll_innodb56_timedlock(l, &dl) == ETIMEDOUT) {
				atomic_fetch_add_explicit(&share_timeouts, 1, memory_order_relaxed);
				ll_innodb56_lock(l);
			}
		} else {
			ll_innodb56_lock(l);
		}
		/* Held across a yield and a short spin: the other thread sleeps. */
		sched_yield();
		for (int k = 0; k < 200; k++)
			ll_spin_wait(LL_SPIN_PAUSE);
		share_counter[a->which] = share_counter[a->which] + 1;
		ll_innodb56_unlock(l);
	}
	return NULL;
}

int test_innodb56_events(void)
{
	/* Twice as many locks as events: two of them share one. */
	int seen[1 << LL_IB_EVENT_BITS];
	memset(seen, -1, sizeof(seen));
	for (int i = 0; i < SHARE_POOL && !share_lock[1]; i++) {
		unsigned e = ll_ib_event_index(&share_pool[i]);
		if (seen[e] >= 0) {
			share_lock[0] = &share_pool[seen[e]];
			share_lock[1] = &share_pool[i];
		}
		seen[e] = i;
	}
	CHECK(share_lock[1], "no two of %d locks share an event", SHARE_POOL);
	const struct ll_lock_ops *ops = ll_algo_find("innodb56", NULL);
	struct ll_innodb56_config cfg;
	struct ll_error err;
	ll_config_defaults(ops, &cfg);
	CHECK(ll_config_parse(ops, "sync_spin_loops=0", &cfg, &err) == 0, "%s", err.msg);
	for (int k = 0; k < 2; k++)
		CHECK(ll_innodb56_init(share_lock[k], &cfg) == 0, "init");
	long iters = test_scaled(20000);
	struct share_arg args[SHARE_THREADS];
	for (int i = 0; i < SHARE_THREADS; i++)
		args[i] = (struct share_arg){ i % 2, iters };
	test_watchdog("innodb56-events", 120);
	test_run_threads(SHARE_THREADS, share_main, args, sizeof(args[0]));
	for (int k = 0; k < 2; k++) {
		CHECK(share_counter[k] == iters * (SHARE_THREADS / 2), "lock %d: counter %ld, expected %ld",
		      k, share_counter[k], iters * (SHARE_THREADS / 2));
		ll_innodb56_destroy(share_lock[k]);
	}
	printf("innodb56-events: locks %td and %td share event %u: %d threads x %ld acquisitions, "
	       "%ld timed-out waits\n", share_lock[0] - share_pool, share_lock[1] - share_pool,
	       ll_ib_event_index(share_lock[0]), SHARE_THREADS, iters,
	       atomic_load(&share_timeouts));
	return 0;
}
