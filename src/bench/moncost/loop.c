/*
 * loop.c: the timed loop of `locklab-bench moncost` (moncost.c), compiled
 * twice into the benchmark: as `moncost_pairs_bare` with the monitor built
 * out (LL_MONITOR=0: ll_mutex_lock is the bare ops call, as in a library
 * built without the feature) and as `moncost_pairs_monitored` with it in.
 *
 * By default the loop is bench's worker loop with one thread (bench.c):
 * the lock calls between the same loads and stores.  --empty times bare
 * lock+unlock pairs, where the result moves with code and data layout: for
 * locks with a locked instruction in lock and unlock, adding any
 * instruction between one unlock and the next lock call, a NOP included,
 * can cost a few ns.
 */
#ifdef MONCOST_BARE
#undef LL_MONITOR
#define LL_MONITOR 0
#define MONCOST_PAIRS moncost_pairs_bare
#else
#define MONCOST_PAIRS moncost_pairs_monitored
#endif

#include "locklab/locklab.h"
#include "bench/moncost.h"

uint64_t MONCOST_PAIRS(ll_mutex_t *m, uint64_t pairs, int empty, struct moncost_slot *s)
{
	uint64_t t0 = ll_now_ns();
	if (empty) {
		for (uint64_t i = 0; i < pairs; i++) {
			ll_mutex_lock(m);
			ll_mutex_unlock(m);
		}
		return ll_now_ns() - t0;
	}
	for (uint64_t i = 0; i < pairs; i++) {
		if (atomic_load_explicit(&s->stop, memory_order_relaxed))
			break;
		ll_mutex_lock(m);
		if (s->inside)
			s->violations++;
		s->inside = 1;
		s->counter++;
		s->inside = 0;
		ll_mutex_unlock(m);
		atomic_store_explicit(&s->iters, i + 1, memory_order_relaxed);
	}
	return ll_now_ns() - t0;
}
