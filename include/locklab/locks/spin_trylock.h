/*
 * locks/spin_trylock.h: innotsim's own mutex: busy-wait with trylock on a pthread
 * mutex, then block in pthread_mutex_lock.
 *
 *   m          glibc mutex (its word: 0 free, 1 held, 2 held+sleepers)
 *   spinners   threads spinning on this mutex now (limit=mutex)
 *
 *   lock: trylock; else, if the spinner limit admits us, up to spin_loops
 *         rounds of (wait round_ns, trylock); else or then pthread_mutex_lock.
 *
 * The limit is none, one process-wide counter (limit=global), or this
 * mutex's counter (limit=mutex), at most max_spinners spinning at once
 * (0: the number of online CPUs).  The InnoDB mutex study found the limit helps at high
 * concurrency and costs elsewhere: every spinner moves the counter's line.
 */
#ifndef LOCKLAB_SPIN_TRYLOCK_H
#define LOCKLAB_SPIN_TRYLOCK_H

#include "locklab/bits/api.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "locklab/bits/spin.h"

enum ll_spinner_limit { LL_SPINNER_LIMIT_NONE, LL_SPINNER_LIMIT_GLOBAL, LL_SPINNER_LIMIT_MUTEX };

typedef struct {
	pthread_mutex_t m;
	atomic_int spinners;
	uint32_t spin_loops;
	uint32_t round_iters;  /* spin waits per round */
	int32_t max_spinners;
	uint8_t limit;         /* enum ll_spinner_limit */
	uint8_t spin;
} ll_spin_trylock_t;

struct ll_spin_trylock_config {
	int64_t spin_loops;
	int64_t round_ns;
	int64_t limit;
	int64_t max_spinners;
	int64_t spin;
};

LL_API int ll_spin_trylock_init(ll_spin_trylock_t *l, const struct ll_spin_trylock_config *cfg);
LL_API int ll_spin_trylock_lock_slow(ll_spin_trylock_t *l, const struct timespec *abs_mono);

static inline int ll_spin_trylock_trylock(ll_spin_trylock_t *l)
{
	return pthread_mutex_trylock(&l->m) ? EBUSY : 0;
}

static inline void ll_spin_trylock_lock(ll_spin_trylock_t *l)
{
	if (pthread_mutex_trylock(&l->m))
		ll_spin_trylock_lock_slow(l, NULL);
}

static inline int ll_spin_trylock_timedlock(ll_spin_trylock_t *l, const struct timespec *abs_mono)
{
	return pthread_mutex_trylock(&l->m) ? ll_spin_trylock_lock_slow(l, abs_mono) : 0;
}

static inline void ll_spin_trylock_unlock(ll_spin_trylock_t *l) { pthread_mutex_unlock(&l->m); }
static inline void ll_spin_trylock_destroy(ll_spin_trylock_t *l) { pthread_mutex_destroy(&l->m); }

#endif
