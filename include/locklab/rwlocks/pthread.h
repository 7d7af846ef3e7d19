/*
 * rwlocks/pthread.h: glibc's pthread_rwlock_t as an rwlock of the library.
 *
 * Lock word (glibc 2.25+, __readers, 32 bits; 56 bytes in all):
 *
 *   31                                 3   2   1   0
 *   +-----------------------------------+---+---+---+
 *   |  readers (count << 3)             | P | W | R |
 *   +-----------------------------------+---+---+---+
 *     R  WRPHASE: a writer owns the phase     W  WRLOCKED: a writer holds it
 *     P  RWAITING: readers wait for the phase to change
 *
 *   read lock    fetch_add(8); fine unless the word is in a write phase
 *   read unlock  CAS: count - 8, the last reader hands the phase to a
 *                waiting writer (__writers futex) when one is there
 *   write lock   CAS 0 -> W|R, else queue on __writers / __writers_futex
 *
 * prefer=reader (PTHREAD_RWLOCK_PREFER_READER_NP, glibc's default): a
 * reader enters while readers hold the lock, even with writers waiting, so a
 * stream of readers starves them.  prefer=writer-nonrecursive
 * (PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP): new readers wait behind a
 * waiting writer; a thread that reads recursively while a writer waits
 * deadlocks (glibc's own warning for that kind).
 */
#ifndef LOCKLAB_RW_PTHREAD_H
#define LOCKLAB_RW_PTHREAD_H

#include "locklab/bits/api.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <time.h>

typedef struct {
	pthread_rwlock_t rw;
} ll_rw_pthread_t;

enum { LL_RW_PREFER_READER = 0, LL_RW_PREFER_WRITER_NONRECURSIVE = 1 };

struct ll_rw_pthread_config {
	int64_t prefer;        /* LL_RW_PREFER_* */
};

/* cfg NULL: glibc's default kind.  0 or pthread_rwlock_init's error. */
LL_API int ll_rw_pthread_init(ll_rw_pthread_t *l, const struct ll_rw_pthread_config *cfg);
static inline void ll_rw_pthread_destroy(ll_rw_pthread_t *l) { pthread_rwlock_destroy(&l->rw); }
static inline int ll_rw_pthread_rdlock(ll_rw_pthread_t *l) { return pthread_rwlock_rdlock(&l->rw); }
static inline int ll_rw_pthread_wrlock(ll_rw_pthread_t *l) { return pthread_rwlock_wrlock(&l->rw); }
/*
 * 0, or EPERM when nobody holds the lock: no reader counted, W clear.  glibc
 * would take it for a read unlock and wrap the count below zero, which no
 * writer ever sees leave (ops.h, rwlock.h: the contract).  One load of the
 * word glibc's unlock reads next.
 */
static inline int ll_rw_pthread_unlock(ll_rw_pthread_t *l)
{
#if defined(__GLIBC__)
	/* Every bit but R and P: the reader count and W. */
	if (__builtin_expect((__atomic_load_n(&l->rw.__data.__readers, __ATOMIC_RELAXED) & ~5u) == 0,
			     0))
		return EPERM;
#endif
	return pthread_rwlock_unlock(&l->rw);
}
/* EBUSY when held against the caller (glibc's tryrdlock also says EAGAIN at the reader limit). */
static inline int ll_rw_pthread_tryrdlock(ll_rw_pthread_t *l)
{
	return pthread_rwlock_tryrdlock(&l->rw);
}
static inline int ll_rw_pthread_trywrlock(ll_rw_pthread_t *l)
{
	return pthread_rwlock_trywrlock(&l->rw);
}
/* pthread_rwlock_clock{rd,wr}lock(CLOCK_MONOTONIC): 0 or ETIMEDOUT. */
LL_API int ll_rw_pthread_timedrdlock(ll_rw_pthread_t *l, const struct timespec *abs_mono);
LL_API int ll_rw_pthread_timedwrlock(ll_rw_pthread_t *l, const struct timespec *abs_mono);

#endif
