/*
 * locks/pthread.h: glibc's mutex as an algorithm of the library.
 *
 *   ll_pthread_t   PTHREAD_MUTEX_NORMAL: one futex word, 0 free / 1 held /
 *                  2 held with waiters; barging; no spinning.
 *   adaptive       PTHREAD_MUTEX_ADAPTIVE_NP: before blocking, spin up to
 *                  min(glibc.pthread.mutex_spin_count, 2*avg+10) trylocks,
 *                  the average updated by 1/8 per contended acquisition.
 */
#ifndef LOCKLAB_PTHREAD_H
#define LOCKLAB_PTHREAD_H

#include "locklab/bits/api.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>

#include "locklab/bits/spin.h"

typedef struct {
	pthread_mutex_t m;
} ll_pthread_t;

struct ll_pthread_config {
	int64_t adaptive;      /* 0: PTHREAD_MUTEX_NORMAL, 1: PTHREAD_MUTEX_ADAPTIVE_NP */
};

/* cfg NULL: the default type.  Returns 0 or pthread_mutex_init's error. */
LL_API int ll_pthread_init(ll_pthread_t *l, const struct ll_pthread_config *cfg);

static inline void ll_pthread_lock(ll_pthread_t *l) { pthread_mutex_lock(&l->m); }
static inline int ll_pthread_trylock(ll_pthread_t *l)
{
	return pthread_mutex_trylock(&l->m) ? EBUSY : 0;
}
static inline void ll_pthread_unlock(ll_pthread_t *l) { pthread_mutex_unlock(&l->m); }
/* pthread_mutex_clocklock(CLOCK_MONOTONIC): 0 or ETIMEDOUT. */
LL_API int ll_pthread_timedlock(ll_pthread_t *l, const struct timespec *abs_mono);
static inline void ll_pthread_destroy(ll_pthread_t *l) { pthread_mutex_destroy(&l->m); }

#endif
