/*
 * suite.c: what test_locks' cases share (suite.h): the lock under test, how
 * it is made, and what kind of lock it is.
 */
#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "suite.h"
#include "bench/locks.h"

const char *algo;

/*
 * LL_TEST_LOCK_OPTS: options for the lock under test where a test names none
 * (ctest runs `ll` again with short turns, so that its grants and turn
 * changes happen thousands of times a second).
 */
void init_lock(ll_mutex_t *m, const char *name, const char *opts)
{
	struct ll_error err;
	if (!opts && algo && !strcmp(name, algo))
		opts = getenv("LL_TEST_LOCK_OPTS");
	int rc = bench_mutex_init(m, name, opts, &err);
	CHECK(rc == 0, "init %s: %s", name, err.msg);
}

/*
 * Spinlocks under oversubscription: a FIFO spinlock hands the lock to a
 * preempted waiter and stalls until the scheduler runs it (seconds for a few
 * thousand handoffs here).  Their pure spin path runs for a fixed time; the
 * long runs use the yield spin-wait, the same lock logic with waiters that
 * give the core to the thread whose turn it is.  Only locks with a `spin`
 * knob (the library's) have that wait; peer spinlocks (ck-*) spin as their
 * authors wrote them, so their fixed-time run is their whole exclusion test.
 */
const char *const spin_yield = "spin=yield";

const struct ll_lock_ops *lock_ops(const char *name)
{
	const struct ll_lock_ops *ops = bench_lock_find(name, NULL);
	CHECK(ops, "unknown algorithm %s", name);
	return ops;
}

int is_spinlock(const char *name)
{
	return !(lock_ops(name)->flags & LL_ALGO_PARKS);
}

/* 1 if spin=yield applies: the lock has a knob named "spin". */
int has_spin_knob(const char *name)
{
	const struct ll_lock_ops *ops = lock_ops(name);
	for (size_t k = 0; k < ops->nknobs; k++)
		if (!strcmp(ops->knobs[k].name, "spin"))
			return 1;
	return 0;
}

ll_mutex_t shared_lock;
atomic_int step;

void wait_step(int s)
{
	while (atomic_load(&step) < s)
		sched_yield();
}
