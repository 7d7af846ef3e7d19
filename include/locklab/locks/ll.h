/*
 * locks/ll.h: the project's own mutex, `ll`, the default lock.  Its C names
 * follow every algorithm's ll_<algo>_*: ll_ll_t, ll_ll_lock, struct
 * ll_ll_config.
 *
 * Why it is built so: on a shared lock the fastest thing is one thread
 * running a burst of critical sections with the line in its cache; waking
 * every waiter (innodb56) or one per unlock (pthread) spends the CPUs in the
 * kernel; spinning everyone (tas) starves those preempted.  And a lock that
 * lets one thread run while every other sleeps leaves CPUs idle whenever
 * the work between critical sections could run beside them, so a bounded
 * set of waiters polls (sched_yield between looks) instead of sleeping.
 *
 * Word, 8 bytes:
 *
 *   locked (32)  0 FREE | 1 HELD | 2, 3 GRANTED (held, handed to the heir of parity 0, 1)
 *   state  (32)  bit 0 HEIR      one waiter is the heir
 *                bit 1 SLEEPING  the heir sleeps: the next release must wake it
 *                bit 2 PARITY    the heir's parity (flips with every new heir)
 *                bit 3 PARKED    the lock has waiters in the parking lot (park.c)
 *
 *   The whole lock, 64 bytes: one cache line (a slot of the lock swapper's
 *   slab).  Besides the word, configuration written once at init, the
 *   pollers' count, and the holder's turn: plain fields written only by the
 *   thread holding the lock (handoff_cost is atomic: heirs read it).
 *   Durations are 32-bit: the knobs stop at LL_LL_MAX_NS (4 s).
 *
 *     off size
 *      0  4   locked
 *      4  4   state
 *      8  4   spin_iters      configuration (from spin_ns): a poller's looks
 *     12  1   unlocks         holder's (mod 256), read by pollers
 *     13  1   max_pollers     configuration
 *     14  2   pollers         atomic: newcomers polling now
 *     16  8   turn_start      holder's, monotonic ns
 *     24  8   grant_ts        the grantor's, monotonic ns (read by the grantee)
 *     32  4   turn_len        holder's, ns (<= handoff_ns)
 *     36  4   handoff_ns      configuration
 *     40  4   rotation_ns     configuration
 *     44  4   min_turn_ns     configuration
 *     48  4   handoff_cost    holder's, atomic (heirs read it), ns
 *     52  2   turn_cost_ratio configuration
 *     54  1   spin            configuration (the pollers' wait)
 *     55  1   (free)
 *     56  2   pause_looks     atomic, pollers': the adapted budget of paused looks
 *     58  2   max_pause_looks configuration (from pause_ns)
 *     60  4   pause_off       atomic, pollers': paused looks are off until then (us)
 *
 *   lock:    CAS locked 0 -> 1 (fast path; never XCHG: it would turn a
 *            GRANTED word back into HELD and strand the heir).  Slow: poll,
 *            if fewer than max_pollers do: look at `locked` between
 *            PAUSEs for up to pause_ns (a budget each lock adapts to
 *            what such looks win), then between sched_yield calls for up
 *            to spin_ns (while nobody is parked, at most rotation_ns of
 *            wall time), and take it when free.
 *            Then become the heir if the slot is free, else park (FIFO, on
 *            a node of one's own in a bucket hashed by the lock's address)
 *            until promoted by name.  The heir sleeps with SLEEPING set, or,
 *            when the holder re-acquires back to back, naps.  A heir that
 *            takes the lock while free passes the role on (promotes the
 *            oldest parked waiter, or clears HEIR).  A thread that granted
 *            the lock, or has not parked for rotation_ns while others are
 *            parked, does not poll: it queues (ll.c says why).
 *   unlock:  no heir: store locked = 0 (plain store), then load `state`:
 *            if SLEEPING, wake the heir.  A heir: every 8th unlock looks at
 *            the clock.  At the end of the holder's turn (rotation_ns shared
 *            among the queue, within [min_turn_ns, handoff_ns]) it grants
 *            the heir the lock (locked = 2 + its parity), wakes it and
 *            promotes the next waiter.  The turn is timed by the holder: the
 *            rotation does not wait for a napping heir's timer.
 *
 *   The parity tells two heirs apart: the one whose grant is on its way
 *   and the one promoted after it.
 *
 *   No RMW on unlock: the store->load pair is ordered against a sleeping
 *   heir by membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED), which the heir
 *   issues after setting SLEEPING and before its last look at `locked`:
 *   either the heir sees the release, or the unlocker sees SLEEPING.
 *   (Kernels without it: the unlock uses a full fence instead.)
 */
#ifndef LOCKLAB_LL_H
#define LOCKLAB_LL_H

#include "locklab/bits/api.h"

#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "locklab/bits/spin.h"

enum {
	LL_LL_FREE = 0, LL_LL_HELD = 1, LL_LL_GRANTED = 2,   /* + the heir's parity */
	LL_LL_HEIR = 1u << 0, LL_LL_SLEEPING = 1u << 1, LL_LL_PARITY = 1u << 2,
	LL_LL_PARKED = 1u << 3,
};

/* The longest duration a knob may give (the fields are 32-bit): 4 s. */
#define LL_LL_MAX_NS 4000000000LL
/* The longest paused polling a knob may give (the budget counts looks in 16 bits). */
#define LL_LL_MAX_PAUSE_NS 100000LL

/* Laid out as drawn above: the offsets are part of the drawing. */
typedef struct {
	atomic_uint locked;
	atomic_uint state;
	uint32_t spin_iters;    /* a poller's looks (waits of `spin`) before it queues */
	atomic_uchar unlocks;   /* holder's: its unlocks (mod 256; pollers read it) */
	uint8_t max_pollers;    /* newcomers that may poll at once instead of queueing */
	atomic_ushort pollers;  /* newcomers polling now */
	uint64_t turn_start;    /* holder's: when its turn began */
	uint64_t grant_ts;      /* the grantor's: when it granted the lock (read by the grantee) */
	uint32_t turn_len;      /* holder's: how long its turn lasts with a heir waiting */
	uint32_t handoff_ns;    /* the longest turn (0: the heir is never handed the lock) */
	uint32_t rotation_ns;   /* a whole queue's turns should take about this long */
	uint32_t min_turn_ns;   /* however long the queue */
	atomic_uint handoff_cost; /* holder's (read by heirs): a grant's idle time, ns, averaged */
	uint16_t turn_cost_ratio; /* a turn lasts at least this many handoff costs */
	uint8_t spin;           /* the pollers' wait between looks */
	atomic_ushort pause_looks; /* pollers': paused looks that pay off on this lock (adapted) */
	uint16_t max_pause_looks;  /* the most paused looks a poll may take (from pause_ns) */
	atomic_uint pause_off;     /* pollers': no paused looks until this time (ns >> 10, mod 2^32) */
} ll_ll_t;

_Static_assert(sizeof(ll_ll_t) <= 64, "ll_ll_t must fit one cache line (the swapper's slot)");
_Static_assert(offsetof(ll_ll_t, pollers) == 14 && offsetof(ll_ll_t, grant_ts) == 24 &&
	       offsetof(ll_ll_t, handoff_cost) == 48 && offsetof(ll_ll_t, spin) == 54 &&
	       offsetof(ll_ll_t, pause_looks) == 56 && offsetof(ll_ll_t, max_pause_looks) == 58 &&
	       offsetof(ll_ll_t, pause_off) == 60 && sizeof(ll_ll_t) == 64,
	       "ll_ll_t differs from the drawing in ll.h");

struct ll_ll_config {
	int64_t spin_ns;
	int64_t handoff_ns;
	int64_t rotation_ns;
	int64_t min_turn_ns;
	int64_t pollers;
	int64_t turn_cost_ratio;
	int64_t spin;
	int64_t pause_ns;
};

/* 1 when unlock must fence (no membarrier on this kernel); set once at first init. */
extern LL_API int ll_ll_unlock_fences;

LL_API int ll_ll_init(ll_ll_t *l, const struct ll_ll_config *cfg);
LL_API int ll_ll_lock_slow(ll_ll_t *l, const struct timespec *abs_mono);
LL_API void ll_ll_unlock_slow(ll_ll_t *l);
LL_API void ll_ll_unlock_heir(ll_ll_t *l);
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
	/*
	 * Loaded before the release: with a heir waiting, every 8th unlock
	 * looks at the turn.  `unlocks` is written only by the holder (a load
	 * and a store, no RMW); pollers read it to tell a holder that
	 * re-acquires back to back (ll.c, poll_paused).
	 */
	unsigned s = atomic_load_explicit(&l->state, memory_order_relaxed);
	unsigned char u = (unsigned char)(atomic_load_explicit(&l->unlocks, memory_order_relaxed) + 1);
	atomic_store_explicit(&l->unlocks, u, memory_order_relaxed);
	if ((s & LL_LL_HEIR) && (u & 7) == 0)
		ll_ll_unlock_heir(l);
	else
		ll_ll_release(l);
}

#endif
