/*
 * locks/ttas.h: test-and-test-and-set spinlock with bounded exponential backoff.
 *
 * Lock word (32 bits):  0 FREE  --XCHG 1-->  1 HELD  --store 0-->  0 FREE
 *
 * Waiters read the word (the line stays shared in every waiter's cache)
 * and XCHG only when it reads FREE.  A failed XCHG means others raced for
 * the same release: back off for a random time in [d/2, d], d doubling from
 * backoff_min_ns up to backoff_max_ns, so the herd spreads out.
 */
#ifndef LOCKLAB_TTAS_H
#define LOCKLAB_TTAS_H

#include "locklab/bits/api.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "locklab/bits/spin.h"

typedef struct {
	atomic_uint word;
	uint8_t spin;
	uint32_t backoff_min;  /* spin waits */
	uint32_t backoff_max;
} ll_ttas_t;

struct ll_ttas_config {
	int64_t backoff_min_ns;
	int64_t backoff_max_ns;
	int64_t spin;
};

LL_API int ll_ttas_init(ll_ttas_t *l, const struct ll_ttas_config *cfg);
LL_API int ll_ttas_lock_slow(ll_ttas_t *l, const struct timespec *abs_mono);
static inline void ll_ttas_destroy(ll_ttas_t *l) { (void)l; }

static inline int ll_ttas_trylock(ll_ttas_t *l)
{
	/* Read first: a held lock costs a shared read, not a line transfer. */
	if (atomic_load_explicit(&l->word, memory_order_relaxed))
		return EBUSY;
	return atomic_exchange_explicit(&l->word, 1, memory_order_acquire) ? EBUSY : 0;
}

static inline void ll_ttas_lock(ll_ttas_t *l)
{
	if (atomic_exchange_explicit(&l->word, 1, memory_order_acquire))
		ll_ttas_lock_slow(l, NULL);
}

static inline int ll_ttas_timedlock(ll_ttas_t *l, const struct timespec *abs_mono)
{
	if (atomic_exchange_explicit(&l->word, 1, memory_order_acquire) == 0)
		return 0;
	return ll_ttas_lock_slow(l, abs_mono);
}

static inline void ll_ttas_unlock(ll_ttas_t *l)
{
	atomic_store_explicit(&l->word, 0, memory_order_release);
}

#endif
