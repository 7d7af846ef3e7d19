/*
 * rw_own.h: the project's own rwlock, `ll` in the rwlock table (ll_rw_own_t
 * in C): a read side that writes no shared cache line while no writer is
 * active, writers that readers cannot starve, every wait a futex sleep with
 * a deadline.
 *
 * Per lock, 48 bytes:
 *
 *   word (32 bits)
 *   31  30  29                                         0
 *   +---+---+--------------------------------------------+
 *   | P | G |  slow readers inside (up to 2^30 - 1)      |
 *   +---+---+--------------------------------------------+
 *     P  a writer holds the lock or waits for the readers inside to leave:
 *        no slow reader enters
 *     G  a writer waits for the readers the previous writer blocked to enter
 *
 *   bias      1: readers take the fast path; 0: they do not; 2: they do not,
 *             and a writer sleeps here until the last fast reader leaves
 *   rseq      readers blocked by P sleep on it; bumped when P clears
 *   wseq      the writer owning P or G sleeps on it; bumped by the reader
 *             whose leaving (or entering, for G) it waits for
 *   rwaiting  readers blocked by P, counted until they enter or give up
 *   wmx       writers take it first, one at a time (locklab/futex.h)
 *   bias_after, inhibit, spin_iters, bias_on: the knobs and the bias timer
 *
 * Shared by every lock, one record per thread that read-locks (128 bytes,
 * kept for the next thread when its thread exits): a line of 8 slots where
 * the thread writes the address of each lock it holds through the fast path
 * (address | 1: a slow hold, recorded for recursion only), and a private line
 * of recursion counts.
 *
 *   fast rdlock   bias == 1: store the lock's address in a free slot of the
 *                 thread's own line (seq_cst: one locked instruction on a
 *                 line no other thread writes), reload bias: still 1, done
 *   fast unlock   release-store 0 in the slot; load bias (2: wake the writer)
 *   slow rdlock   CAS word + 1 while P is clear, else poll spin_ns, then
 *                 sleep on rseq
 *   wrlock        wmx; while readers the last writer blocked are waiting,
 *                 set G and sleep until they have entered; set P; sleep
 *                 until the slow readers have left; if bias is on: clear it
 *                 and scan every thread's slots for this lock, waiting (spin,
 *                 then sleep on bias) for each holder to leave
 *   inhibit       a revocation that took T keeps bias off for inhibit x T;
 *                 the first slow reader after that turns it on again (BRAVO's
 *                 rule: a writer's revocations cost it at most ~1/inhibit)
 *
 * Bounds.  Once a writer holds wmx, readers arriving later never delay it:
 * it waits for the readers the previous writer blocked to enter (they were
 * woken at that writer's release), for the read sections in progress when
 * it set P and when it revoked the bias to end, and for nothing else.
 * Writers among themselves take wmx, a barging futex mutex: no FIFO order
 * between writers (a handoff to waiting writers was measured and dropped:
 * docs/rwlocks.md).  A reader blocked by a writer enters before the next
 * writer can set P: it waits for at most that one writer's section.
 *
 * Recursion: a thread may read-lock a lock it holds for reading, even while
 * a writer waits (its slot counts).  wrlock by a thread holding a read lock
 * of a slot returns EDEADLK; a second wrlock by the writer deadlocks.
 */
#ifndef LOCKLAB_RW_OWN_H
#define LOCKLAB_RW_OWN_H

#include "locklab/api.h"

#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "locklab/futex.h"

typedef struct {
	atomic_uint word;
	atomic_uint bias;
	atomic_uint rseq;
	atomic_uint wseq;
	atomic_uint rwaiting;
	uint32_t spin_iters;           /* a waiter's polls before it sleeps */
	_Atomic uint64_t bias_after;   /* ll_now_ns() before which bias stays off */
	ll_futex_t wmx;
	uint16_t inhibit;              /* bias stays off for inhibit x the revocation time */
	uint8_t bias_on;               /* 0: never bias (a plain writer-first rwlock) */
} ll_rw_own_t;

#define LL_RW_OWN_P 0x80000000u
#define LL_RW_OWN_G 0x40000000u
#define LL_RW_OWN_READERS 0x3fffffffu

struct ll_rw_own_config {
	int64_t bias;          /* 1: the fast read path (default), 0: never */
	int64_t inhibit;       /* bias off for inhibit x the revocation's time (BRAVO's N, 9) */
	int64_t spin_ns;       /* a waiting writer or reader polls this long before it sleeps */
};

/* cfg NULL: defaults.  0, or EINVAL for a config out of the knobs' range. */
LL_API int ll_rw_own_init(ll_rw_own_t *l, const struct ll_rw_own_config *cfg);
static inline void ll_rw_own_destroy(ll_rw_own_t *l) { (void)l; }
LL_API int ll_rw_own_rdlock(ll_rw_own_t *l);
LL_API int ll_rw_own_tryrdlock(ll_rw_own_t *l);
LL_API int ll_rw_own_timedrdlock(ll_rw_own_t *l, const struct timespec *abs_mono);
LL_API int ll_rw_own_wrlock(ll_rw_own_t *l);
LL_API int ll_rw_own_trywrlock(ll_rw_own_t *l);
LL_API int ll_rw_own_timedwrlock(ll_rw_own_t *l, const struct timespec *abs_mono);
/* 0, or EPERM when the lock is not held. */
LL_API int ll_rw_own_unlock(ll_rw_own_t *l);

#endif
