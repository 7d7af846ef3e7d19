/*
 * once.h: set-up done once by whichever thread comes first, in a preloaded
 * library, without pthread_once (whose waiters cannot be told apart from a
 * re-entry of the same thread, and which a library interposing pthread calls
 * would rather not lean on).
 *
 *   if (pl_once_claim(&state, &ready)) { ...set up...; pl_once_done(&ready); }
 *
 * The first caller gets 1 and does the work; every other caller gets 0 once
 * the work is done (it yields until then).  The thread doing the work must not
 * come back here before pl_once_done: it would wait for itself.
 */
#ifndef LOCKLAB_PRELOAD_ONCE_H
#define LOCKLAB_PRELOAD_ONCE_H

#include <sched.h>
#include <stdatomic.h>

static inline int pl_once_claim(atomic_int *state, atomic_int *ready)
{
	int expect = 0;
	if (atomic_compare_exchange_strong_explicit(state, &expect, 1, memory_order_acq_rel,
						    memory_order_acquire))
		return 1;
	/* Acquire pairs with pl_once_done's release: the set-up's writes are seen. */
	while (!atomic_load_explicit(ready, memory_order_acquire))
		sched_yield();
	return 0;
}

static inline void pl_once_done(atomic_int *ready)
{
	atomic_store_explicit(ready, 1, memory_order_release);
}

#endif
