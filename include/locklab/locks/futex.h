/*
 * locks/futex.h: the three-state futex mutex with wake-one (what replaced
 * InnoDB's broadcast), optionally spinning before it sleeps.
 *
 * Lock word (32 bits):
 *
 *     0  FREE
 *     1  HELD, nobody sleeps          lock: CAS 0->1 (fast path)
 *     2  HELD, sleepers possible      contended lock: XCHG 2, sleep while 2
 *
 *   FREE --CAS--> HELD --XCHG(2) by a waiter--> HELD+SLEEPERS
 *   HELD --unlock XCHG(0) saw 1--> FREE                  (no syscall)
 *   HELD+SLEEPERS --unlock XCHG(0) saw 2--> FREE, FUTEX_WAKE(1)
 *
 * A woken waiter swaps in 2 (not 1): it cannot know whether others still
 * sleep, so it keeps the next unlock honest at the cost of one spare wake.
 */
#ifndef LOCKLAB_FUTEX_H
#define LOCKLAB_FUTEX_H

#include "locklab/bits/api.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "locklab/bits/spin.h"

typedef struct {
	atomic_uint word;
	uint32_t spin_iters;   /* waits before sleeping (0: sleep at once) */
	uint8_t spin;          /* enum ll_spin_policy */
} ll_futex_t;

struct ll_futex_config {
	int64_t spin_ns;
	int64_t spin;
};

/* cfg NULL: defaults (no spinning).  Returns 0. */
LL_API int ll_futex_init(ll_futex_t *l, const struct ll_futex_config *cfg);
static inline void ll_futex_destroy(ll_futex_t *l) { (void)l; }
LL_API int ll_futex_lock_slow(ll_futex_t *l, const struct timespec *abs_mono);
LL_API void ll_futex_wake_one(ll_futex_t *l);

static inline int ll_futex_trylock(ll_futex_t *l)
{
	unsigned expect = 0;
	return atomic_compare_exchange_strong_explicit(&l->word, &expect, 1, memory_order_acquire,
						       memory_order_relaxed) ? 0 : EBUSY;
}

static inline void ll_futex_lock(ll_futex_t *l)
{
	if (ll_futex_trylock(l))
		ll_futex_lock_slow(l, NULL);
}

static inline int ll_futex_timedlock(ll_futex_t *l, const struct timespec *abs_mono)
{
	return ll_futex_trylock(l) ? ll_futex_lock_slow(l, abs_mono) : 0;
}

static inline void ll_futex_unlock(ll_futex_t *l)
{
	/* Release: the critical section's writes are visible to the next owner. */
	if (atomic_exchange_explicit(&l->word, 0, memory_order_release) == 2)
		ll_futex_wake_one(l);
}

#endif
