/*
 * locks/tas.h: test-and-set spinlock, the simplest lock there is.
 *
 * Lock word (32 bits):  0 FREE  --XCHG 1-->  1 HELD  --store 0-->  0 FREE
 *
 * Every waiter XCHGs the word in a loop, so the line moves between cores on
 * each attempt even while the lock is held: the baseline TTAS improves on.
 */
#ifndef LOCKLAB_TAS_H
#define LOCKLAB_TAS_H

#include "locklab/bits/api.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "locklab/bits/spin.h"

typedef struct {
	atomic_uint word;
	uint8_t spin;
} ll_tas_t;

struct ll_tas_config {
	int64_t spin;
};

LL_API int ll_tas_init(ll_tas_t *l, const struct ll_tas_config *cfg);
LL_API int ll_tas_timedlock(ll_tas_t *l, const struct timespec *abs_mono);
static inline void ll_tas_destroy(ll_tas_t *l) { (void)l; }

static inline int ll_tas_trylock(ll_tas_t *l)
{
	return atomic_exchange_explicit(&l->word, 1, memory_order_acquire) ? EBUSY : 0;
}

static inline void ll_tas_lock(ll_tas_t *l)
{
	struct ll_spinner s = ll_spinner_start(l->spin);
	while (atomic_exchange_explicit(&l->word, 1, memory_order_acquire))
		ll_spinner_wait(&s);
}

static inline void ll_tas_unlock(ll_tas_t *l)
{
	atomic_store_explicit(&l->word, 0, memory_order_release);
}

#endif
