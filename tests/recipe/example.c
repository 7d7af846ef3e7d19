/*
 * example.c: the algorithm tests/python/test_add_algorithm.py adds to a copy
 * of the tree, following docs/locks.md's recipe: this one file in src/lib/locks/
 * and `LL_ALGO(example, "example")` in algorithms.def, nothing else.
 *
 * Word: one int, 0 FREE, 1 HELD.  lock: XCHG 0 -> 1, else yield and retry;
 * unlock: store 0 (release).
 */
#include <errno.h>
#include <sched.h>
#include <stdatomic.h>

#include "locklab/bits/spin.h"
#include "locks/algo.h"

typedef struct {
	atomic_int word;
} ll_example_t;

struct ll_example_config {
	int64_t yield;
};

static const struct ll_knob example_knobs[] = {
	LL_KNOB_INT(struct ll_example_config, yield, 1, 0, 1, "1: sched_yield between tries"),
};

static int ll_example_init(ll_example_t *l, const struct ll_example_config *cfg)
{
	(void)cfg;
	atomic_init(&l->word, 0);
	return 0;
}

static void ll_example_destroy(ll_example_t *l)
{
	(void)l;
}

static int ll_example_trylock(ll_example_t *l)
{
	/* Acquire: pairs with the unlock's release; FREE -> HELD. */
	return atomic_exchange_explicit(&l->word, 1, memory_order_acquire) ? EBUSY : 0;
}

static int ll_example_timedlock(ll_example_t *l, const struct timespec *abs_mono)
{
	while (ll_example_trylock(l)) {
		if (abs_mono && ll_deadline_passed(abs_mono))
			return ETIMEDOUT;
		sched_yield();
	}
	return 0;
}

static void ll_example_lock(ll_example_t *l)
{
	ll_example_timedlock(l, NULL);
}

static void ll_example_unlock(ll_example_t *l)
{
	/* Release: the critical section's writes before FREE is seen. */
	atomic_store_explicit(&l->word, 0, memory_order_release);
}

LL_OPS_ADAPTERS(example, ll_example_t)

const struct ll_lock_ops ll_example_ops = {
	.name = "example",
	.summary = "a test-and-set lock that yields, added by the recipe test",
	.flags = LL_ALGO_SPINS,
	.knobs = example_knobs,
	.nknobs = LL_COUNT(example_knobs),
	.config_size = sizeof(struct ll_example_config),
	LL_OPS_FUNCS(example, ll_example_t),
};
