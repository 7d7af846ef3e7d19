/*
 * locks/ticket.h: ticket spinlock, FIFO.
 *
 *   next   the ticket the next arrival draws (FETCH_ADD 1)
 *   owner  the ticket being served (only the holder writes it)
 *
 *   FREE  <=> next == owner
 *   lock:    t = next++; wait until owner == t
 *   unlock:  owner = owner + 1 (release)
 *   trylock: CAS next: owner -> owner+1 (succeeds only when FREE)
 *
 *   PASSED <=> owner ahead of next: an unlock of a FREE lock (ops.h: the
 *   contract) served a ticket nobody drew.  No holder, so it is FREE too:
 *   the next trylock, or a waiter that finds owner past its own ticket,
 *   takes ticket `owner` by CAS next -> owner + 1 (PASSED -> HELD); a
 *   waiter whose ticket was passed and loses that race draws again.
 *
 * Waiters wait in proportion to their distance from the head: one
 * backoff_ns per thread ahead (0: poll with one spin wait).  Strict FIFO:
 * a preempted waiter stalls everyone behind it, so this lock collapses when
 * threads outnumber cores.  Timed waits cannot give back a drawn ticket, so
 * timedlock polls with trylock until the deadline.
 *
 *   sleepers  spin=auto only: waiters asleep on `owner` (FUTEX_WAIT_BITSET,
 *             the bit of their ticket mod 32); an unlock that sees any wakes
 *             the bit of the next ticket, after a fence that orders its
 *             store to owner before its load of sleepers (a sleeper adds
 *             itself, then looks at owner again, before it sleeps).
 */
#ifndef LOCKLAB_TICKET_H
#define LOCKLAB_TICKET_H

#include "locklab/bits/api.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "locklab/bits/spin.h"

typedef struct {
	atomic_uint next;
	atomic_uint owner;
	uint32_t backoff;      /* spin waits per thread ahead */
	uint8_t spin;
	atomic_uint sleepers;  /* spin=auto: waiters asleep on owner */
} ll_ticket_t;

struct ll_ticket_config {
	int64_t backoff_ns;
	int64_t spin;
};

LL_API int ll_ticket_init(ll_ticket_t *l, const struct ll_ticket_config *cfg);
LL_API void ll_ticket_wait(ll_ticket_t *l, unsigned ticket);
LL_API int ll_ticket_timedlock(ll_ticket_t *l, const struct timespec *abs_mono);
/* spin=auto's unlock after its store: wake the next ticket if anyone sleeps. */
LL_API void ll_ticket_wake(ll_ticket_t *l, unsigned next);
static inline void ll_ticket_destroy(ll_ticket_t *l) { (void)l; }

/* PASSED (owner o ahead of next n) -> HELD: 0, or EBUSY when the lock is not PASSED. */
LL_API int ll_ticket_take_passed(ll_ticket_t *l, unsigned o, unsigned n);

static inline int ll_ticket_trylock(ll_ticket_t *l)
{
	/* Acquire: pairs with the last holder's release of owner. */
	unsigned o = atomic_load_explicit(&l->owner, memory_order_acquire);
	unsigned expect = o;
	/* FREE -> HELD */
	if (atomic_compare_exchange_strong_explicit(&l->next, &expect, o + 1, memory_order_acquire,
						    memory_order_relaxed))
		return 0;
	/* next behind owner (never, unless an unlock found the lock FREE): PASSED. */
	return (int)(expect - o) < 0 ? ll_ticket_take_passed(l, o, expect) : EBUSY;
}

static inline void ll_ticket_lock(ll_ticket_t *l)
{
	unsigned t = atomic_fetch_add_explicit(&l->next, 1, memory_order_relaxed);
	if (atomic_load_explicit(&l->owner, memory_order_acquire) != t)
		ll_ticket_wait(l, t);
}

static inline void ll_ticket_unlock(ll_ticket_t *l)
{
	/* Only the holder writes owner: a plain increment published by release. */
	unsigned o = atomic_load_explicit(&l->owner, memory_order_relaxed);
	atomic_store_explicit(&l->owner, o + 1, memory_order_release);
	if (l->spin == LL_SPIN_AUTO)
		ll_ticket_wake(l, o + 1);
}

#endif
