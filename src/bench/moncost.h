/*
 * moncost.h: the two builds of moncost's timed loop (moncost/loop.c).
 */
#ifndef LOCKLAB_BENCH_MONCOST_H
#define LOCKLAB_BENCH_MONCOST_H

#include <stdalign.h>
#include <stdatomic.h>
#include <stdint.h>

#include "locklab/locklab.h"

/* What bench's worker touches besides the lock, on lines of their own. */
struct moncost_slot {
	alignas(64) uint64_t counter;   /* guarded by the lock */
	int inside;
	uint64_t violations;
	alignas(64) atomic_uint_fast64_t iters;
	alignas(64) atomic_int stop;
};

/*
 * pairs iterations of bench's worker loop on m (one thread): a relaxed load
 * of the stop flag, lock, the inside/counter updates, unlock, a relaxed
 * store of the iteration count; empty: lock and unlock only.  The
 * nanoseconds they took.
 */
uint64_t moncost_pairs_bare(ll_mutex_t *m, uint64_t pairs, int empty,
			    struct moncost_slot *s);   /* LL_MONITOR=0 */
uint64_t moncost_pairs_monitored(ll_mutex_t *m, uint64_t pairs, int empty,
				 struct moncost_slot *s);   /* LL_MONITOR=1 */

#endif
