/*
 * ll.h: the project's own mutex, `ll`, the default lock.
 *
 * Built from the sweep's lessons: on a shared lock the fastest thing is one
 * thread running a burst of critical sections with the line in its cache;
 * waking every waiter (innodb56) or one per unlock (pthread) spends the
 * CPUs in the kernel; spinning everyone (tas) starves those preempted.
 *
 * Word, 8 bytes:
 *
 *   locked (32)  0 FREE | 1 HELD | 2 GRANTED (held, handed to the heir)
 *   state  (32)  bit 0 HEIR      one waiter is the heir: awake, or asleep on `locked`
 *                bit 1 SLEEPING  the heir sleeps: the next release must wake it
 *                bit 2 HANDOFF   the heir waited too long: the next unlock grants it the lock
 *                bit 3 PROMOTE   a parked waiter was woken to become the heir
 *                bits 4..31      waiters parked on `state`, FIFO
 *
 *   lock:    CAS locked 0 -> 1 (fast path; never XCHG: it would turn a
 *            GRANTED word back into HELD and strand the heir).  Slow: if there is no heir,
 *            spin spin_ns on a read of `locked`; then become the heir if
 *            the slot is free, else park (FIFO) until promoted.  The heir
 *            spins, then sleeps (on `state`) with SLEEPING set; after handoff_ns it sets
 *            HANDOFF and is given the lock directly.  Whoever acquires as
 *            heir resigns: it promotes the oldest parked waiter (PROMOTE +
 *            FUTEX_WAKE 1) or clears HEIR.
 *   unlock:  HANDOFF set?  grant (locked = 2, wake the heir if it sleeps);
 *            else store locked = 0 (plain store), then load `state`: if
 *            SLEEPING, wake the heir.
 *
 *   No RMW on unlock: the store->load pair is ordered against a sleeping
 *   heir by membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED), which the heir
 *   issues after setting SLEEPING and before its last look at `locked`:
 *   either the heir sees the release, or the unlocker sees SLEEPING.
 *   (Kernels without it: the unlock uses a full fence instead.)
 */
#ifndef LOCKLAB_LL_H
#define LOCKLAB_LL_H

#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "locklab/spin.h"

enum {
	LL_LL_FREE = 0, LL_LL_HELD = 1, LL_LL_GRANTED = 2,
	LL_LL_HEIR = 1u << 0, LL_LL_SLEEPING = 1u << 1, LL_LL_HANDOFF = 1u << 2,
	LL_LL_PROMOTE = 1u << 3, LL_LL_PARKED_ONE = 1u << 4,
};

typedef struct {
	atomic_uint locked;
	atomic_uint state;
	uint32_t spin_iters;    /* spin waits before a newcomer or the heir sleeps */
	uint64_t handoff_ns;    /* the heir's wait before it asks for the lock (0: never) */
	uint8_t spin;
} ll_ll_t;

struct ll_ll_config {
	int64_t spin_ns;
	int64_t handoff_ns;
	int64_t spin;
};

/* 1 when unlock must fence (no membarrier on this kernel); set once at first init. */
extern int ll_ll_unlock_fences;

int ll_ll_init(ll_ll_t *l, const struct ll_ll_config *cfg);
int ll_ll_lock_slow(ll_ll_t *l, const struct timespec *abs_mono);
void ll_ll_unlock_slow(ll_ll_t *l);
void ll_ll_unlock_grant(ll_ll_t *l);
static inline void ll_ll_destroy(ll_ll_t *l) { (void)l; }

/* CAS FREE -> HELD: 1 when taken. */
static inline int ll_ll_cas_free(ll_ll_t *l)
{
	unsigned expect = LL_LL_FREE;
	return atomic_compare_exchange_strong_explicit(&l->locked, &expect, LL_LL_HELD,
						       memory_order_acquire, memory_order_relaxed);
}

static inline int ll_ll_trylock(ll_ll_t *l)
{
	return ll_ll_cas_free(l) ? 0 : EBUSY;
}

static inline void ll_ll_lock(ll_ll_t *l)
{
	if (!ll_ll_cas_free(l))
		ll_ll_lock_slow(l, NULL);
}

static inline int ll_ll_timedlock(ll_ll_t *l, const struct timespec *abs_mono)
{
	return ll_ll_cas_free(l) ? 0 : ll_ll_lock_slow(l, abs_mono);
}

/*
 * Orders a store before the following load of `state`.  always: a real
 * barrier (rare paths).  Otherwise only the compiler's, when sleepers use
 * membarrier.  ThreadSanitizer cannot model fences: there an acq_rel RMW on
 * `state` does the same job (all RMWs of `state` are totally ordered and the
 * heir's SLEEPING is one of them).
 */
static inline void ll_ll_store_load_barrier(ll_ll_t *l, int always)
{
#if defined(__SANITIZE_THREAD__)
	(void)always;
	(void)atomic_fetch_add_explicit(&l->state, 0, memory_order_acq_rel);
#else
	(void)l;
	if (always || ll_ll_unlock_fences)
		atomic_thread_fence(memory_order_seq_cst);
	else
		atomic_signal_fence(memory_order_seq_cst);
#endif
}

/* Release, then wake a sleeping heir. */
static inline void ll_ll_release(ll_ll_t *l)
{
	atomic_store_explicit(&l->locked, LL_LL_FREE, memory_order_release);
	/* Store then load: a sleeping heir's membarrier orders the pair (see above). */
	ll_ll_store_load_barrier(l, 0);
	if (atomic_load_explicit(&l->state, memory_order_relaxed) & LL_LL_SLEEPING)
		ll_ll_unlock_slow(l);
}

static inline void ll_ll_unlock(ll_ll_t *l)
{
	/* Loaded before the release: a HANDOFF request keeps the lock held. */
	if (atomic_load_explicit(&l->state, memory_order_relaxed) & LL_LL_HANDOFF)
		ll_ll_unlock_grant(l);
	else
		ll_ll_release(l);
}

#endif
