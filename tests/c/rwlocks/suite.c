/*
 * suite.c: what test_rwlocks' cases share (suite.h): the rwlock under test
 * and how it is made, the shared lock and step, and a sleep.
 */
#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "suite.h"

const char *algo;

void init_rw(ll_rwlock_t *rw, const char *opts)
{
	struct ll_error err;
	int rc = ll_rwlock_init(rw, algo, opts, &err);
	CHECK(rc == 0, "init %s %s: %s", algo, opts ? opts : "", err.msg);
}

/* The lock's writer-preferring setting, where a knob chooses it (glibc's kind). */
const char *writer_first_opts(void)
{
	const struct ll_rwlock_ops *ops = ll_rwlock_algo_find(algo, NULL);
	CHECK(ops, "unknown rwlock %s", algo);
	for (size_t k = 0; k < ops->nknobs; k++)
		if (!strcmp(ops->knobs[k].name, "prefer"))
			return "prefer=writer-nonrecursive";
	return NULL;
}

void sleep_ms(long ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000 };
	while (nanosleep(&ts, &ts))
		;
}

ll_rwlock_t shared;
atomic_int step;

void wait_step(int s)
{
	while (atomic_load(&step) < s)
		sched_yield();
}
