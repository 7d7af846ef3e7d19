/*
 * slot.c: one lifecycle for the slot of every swapped lock, mutex or rwlock
 * (struct swap_recipe says what differs): made at the first use, given back
 * at destroy, and looked at once by the first use after a fork.
 *
 * A forked child has one thread; a swapped lock's state may still hold the
 * parent's others: an mcs queue node, tickets taken, a waiter count, readers.
 * The child bumps swap_hot.fork_gen (fork.c), and the first use of a lock
 * whose gen word differs looks at it once (swap_slot_repair):
 *
 *   never used        gen made current, the slot made as usual
 *   free at the fork  (try_excl of the old state succeeds) a fresh slot; the
 *                     old state is dropped (the recipe's drop), not unlocked
 *                     or destroyed: either could wait for a thread that is gone
 *   held at the fork  by the forking thread or by one that is gone:
 *                     held_waits (mutexes): gen is GEN_HELD, try is EBUSY,
 *                       lock and timed wait on gen; the unlock (the forking
 *                       thread's) gives a fresh slot, the old state dropped
 *                     else (rwlocks): kept as it is, current: a hold of a
 *                       gone thread stays, as glibc's does (try EBUSY, timed
 *                       ETIMEDOUT, lock waits); the forking thread's is its own
 *                       to release (swap_slot_release_stale)
 *
 *   gen word:  OLD --claim--> cur|GEN_REPAIR --free--> cur
 *                                            --held--> cur|GEN_HELD (held_waits)
 *                                                      cur          (else)
 *              cur|GEN_HELD --the holder's unlock: claim, fresh slot--> cur
 *
 * GEN_REPAIR marks the one thread looking; others wait on gen for it.  What
 * a dropped state holds of the parent's other threads (their queue nodes)
 * stays behind: they are gone, and their nodes lived in their own
 * thread-local pools (heap ones past a pool of 32 locks at once leak).
 */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "swap.h"

static void *slot_new(const struct swap_recipe *r)
{
	void *p = swap_slab_take(r->slots);
	if (!p) {
		swap_say("locklab: swap: out of memory for %s (mmap failed)", r->slots->what);
		abort();
	}
	swap_tls.busy++;
	int rc = r->init(p, r->config);
	swap_tls.busy--;
	if (rc) {
		swap_say("locklab: swap: %s%s: init failed (%s)", r->slots->label, r->name,
			 strerror(rc));
		abort();
	}
	return p;
}

static void slot_free(const struct swap_recipe *r, void *p, int destroy)
{
	if (destroy) {
		swap_tls.busy++;
		r->destroy(p);
		swap_tls.busy--;
	}
	swap_slab_put(r->slots, p);
}

void *swap_slot_create(struct swap_lockref l, const struct swap_recipe *r)
{
	void *p = slot_new(r);
	void *expect = NULL;
	/* Release publishes the initialised state to the acquire loads of the
	 * slot; acquire on failure pairs with the winner's release, for its slot. */
	if (__atomic_compare_exchange_n(l.slot, &expect, p, 0, __ATOMIC_ACQ_REL,
					__ATOMIC_ACQUIRE)) {
		atomic_fetch_add_explicit(&r->slots->made, 1, memory_order_relaxed);
		return p;
	}
	slot_free(r, p, 1);
	return expect;
}

void swap_slot_destroy(struct swap_lockref l, const struct swap_recipe *r)
{
	void *p = __atomic_exchange_n(l.slot, NULL, __ATOMIC_ACQ_REL);
	/* A state from before a fork is dropped: its destroy could wait for
	 * threads that are gone. */
	if (p)
		slot_free(r, p, !swap_stale(l.gen));
}

/* Replace the slot, held whole by this thread (its try_excl, or the forking
 * thread's hold), by a fresh one, free.  The old state is dropped: what
 * holding it took from this thread (an mcs queue node) comes back. */
static void fresh_slot(struct swap_lockref l, const struct swap_recipe *r, void *old)
{
	if (r->drop) {
		swap_tls.busy++;
		r->drop(old);
		swap_tls.busy--;
	}
	__atomic_store_n(l.slot, slot_new(r), __ATOMIC_RELEASE);
	slot_free(r, old, 0);
}

/* The gen word set to v, its waiters woken. */
static void gen_publish(unsigned *gen, unsigned v)
{
	int e = errno;
	__atomic_store_n(gen, v, __ATOMIC_RELEASE);
	syscall(SYS_futex, gen, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
	errno = e;
}

/* Until *gen is no longer v: 0, or ETIMEDOUT at mono (CLOCK_MONOTONIC; NULL: none). */
static int gen_wait(unsigned *gen, unsigned v, const struct timespec *mono)
{
	int e = errno, rc = 0;
	while (__atomic_load_n(gen, __ATOMIC_ACQUIRE) == v) {
		if (syscall(SYS_futex, gen, FUTEX_WAIT_BITSET_PRIVATE, v, mono, NULL,
			    FUTEX_BITSET_MATCH_ANY) && errno == ETIMEDOUT) {
			rc = ETIMEDOUT;
			break;
		}
	}
	errno = e;
	return rc;
}

/* The held-at-fork wait of a held_waits lock (gen is v, cur | GEN_HELD):
 * EBUSY for a try, else 0 once it moved, or an error of the deadline's. */
static int held_wait(unsigned *gen, unsigned v, enum swap_how how, clockid_t clk,
		     const struct timespec *abs, struct timespec *mono, int *have_mono)
{
	if (how == H_TRY)
		return EBUSY;
	if (how == H_TIMED && !*have_mono) {
		int rc = ll_clock_to_mono(clk, abs, mono);
		if (rc)
			return rc;
		*have_mono = 1;
	}
	return gen_wait(gen, v, how == H_TIMED ? mono : NULL);
}

int swap_slot_repair(struct swap_lockref l, const struct swap_recipe *r, enum swap_how how,
		     clockid_t clk, const struct timespec *abs)
{
	unsigned cur = swap_hot.fork_gen;
	struct timespec mono;
	int have_mono = 0;
	for (;;) {
		unsigned v = __atomic_load_n(l.gen, __ATOMIC_ACQUIRE);
		if (v == cur)
			return 0;
		if (v & GEN_REPAIR) {
			gen_wait(l.gen, v, NULL);   /* a try_excl and a slot away */
			continue;
		}
		if (v == (cur | GEN_HELD)) {
			int rc = held_wait(l.gen, v, how, clk, abs, &mono, &have_mono);
			if (rc)
				return rc;
			continue;
		}
		/* Never used: nothing to look at, and nobody waits on v (waits are
		 * on a repair or on cur | GEN_HELD).  A slot appears only with a
		 * current gen, or under a claim: either fails this CAS. */
		void *p = __atomic_load_n(l.slot, __ATOMIC_ACQUIRE);
		if (!p) {
			if (__atomic_compare_exchange_n(l.gen, &v, cur, 0, __ATOMIC_ACQUIRE,
							__ATOMIC_RELAXED))
				return 0;
			continue;
		}
		if (!__atomic_compare_exchange_n(l.gen, &v, cur | GEN_REPAIR, 0, __ATOMIC_ACQUIRE,
						 __ATOMIC_RELAXED))
			continue;
		swap_tls.busy++;
		int held = r->try_excl(p);
		swap_tls.busy--;
		if (!held)
			fresh_slot(l, r, p);
		gen_publish(l.gen, held && r->held_waits ? cur | GEN_HELD : cur);
	}
}

/* This thread's look at a lock from before the fork (GEN_REPAIR in *gen),
 * after any other thread's: 1, or 0 when the lock is current after all.  The
 * caller ends the look with gen_publish(gen, swap_hot.fork_gen). */
static int gen_claim(unsigned *gen)
{
	unsigned cur = swap_hot.fork_gen;
	for (;;) {
		unsigned v = __atomic_load_n(gen, __ATOMIC_ACQUIRE);
		if (v == cur)
			return 0;
		if (v & GEN_REPAIR)
			gen_wait(gen, v, NULL);
		else if (__atomic_compare_exchange_n(gen, &v, cur | GEN_REPAIR, 0, __ATOMIC_ACQUIRE,
						     __ATOMIC_RELAXED))
			return 1;
	}
}

int swap_slot_release_stale(struct swap_lockref l, const struct swap_recipe *r, int exclusive)
{
	if (!gen_claim(l.gen))
		return -1;
	void *p = __atomic_load_n(l.slot, __ATOMIC_ACQUIRE);
	int rc = EPERM;   /* never locked */
	if (p && exclusive) {
		fresh_slot(l, r, p);
		rc = 0;
	} else if (p) {
		/* A read hold: released on the old state, replaced if that left it free. */
		swap_tls.busy++;
		rc = r->unlock_shared(p);
		int held = r->try_excl(p);
		swap_tls.busy--;
		if (!held)
			fresh_slot(l, r, p);
	}
	gen_publish(l.gen, swap_hot.fork_gen);
	return rc;
}
