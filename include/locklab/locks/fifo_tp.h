/*
 * locks/fifo_tp.h: `fifo-tp`, a FIFO queue lock that survives preemption
 * (time-published waiters, after He, Scherer & Scott's MCS-TP).
 *
 * A FIFO lock hands the lock to the oldest waiter; where threads outnumber
 * CPUs that waiter is often not running, and everyone behind it waits for
 * the scheduler (mcs, ticket).  Here the lock passes only between waiters
 * that run, and the others leave the running set:
 *
 *   candidates  the first waiters of the queue (max_candidates of them):
 *               they spin on their own node and publish a heartbeat (the
 *               clock) into it every microsecond or so.  A candidate whose
 *               heartbeat is older than stale_ns is not running (preempted,
 *               stopped): the lock skips it, and the oldest parked waiter is
 *               promoted beside it so that someone running is next.
 *   parked      everyone behind them, asleep on their node in the parking
 *               lot (park.c, shared with `ll`), promoted one at a time in
 *               arrival order.  Parking keeps the run queue short, so a
 *               preempted holder gets its CPU back.
 *   turns       a handoff moves the lock's line and the protected data to
 *               another CPU: the holder keeps re-taking the lock for up to
 *               turn_ns (or two wake-ups, where those are slower) while a
 *               candidate waits, then grants it to the oldest running
 *               candidate, or with none running to the oldest that will
 *               run soon (woken just now, or asleep), so that the queue
 *               keeps turning however slow the scheduler is.  turn_ns=0: a
 *               handoff at every unlock with a queue.
 *
 * Word, 32 bits:
 *
 *   bit 0  LOCKED   held
 *   bit 1  QUEUED   the queue is not empty (set and cleared with the lock's
 *                   bucket held, so under the bucket the queue and the bit agree)
 *   bit 2  SLEEPY   a candidate sleeps: the next release ends the turn
 *
 *   FREE (0)           --lock: CAS-->            LOCKED
 *   LOCKED             --unlock: CAS-->          FREE
 *   LOCKED             --a waiter queues-->      LOCKED|QUEUED
 *   LOCKED|QUEUED      --release in the turn-->  QUEUED      (only the turn's
 *                                                owner takes it back)
 *   LOCKED|QUEUED      --grant at turn end, or
 *                        at a release with SLEEPY-->  LOCKED|QUEUED (another owner)
 *   QUEUED             --a candidate finds it idle, or a newcomer finds no
 *                        candidate running-->    LOCKED|QUEUED
 *   x|QUEUED           --a candidate sleeps-->   x|QUEUED|SLEEPY
 *
 *   No fast path succeeds with QUEUED or SLEEPY set: the word then differs
 *   from the value its CAS expects, and the slow path sees the queue.
 *
 * The whole lock fits one cache line (the lock swapper's slot):
 *
 *     off size
 *      0  4   word
 *      4  1   unlocks         holder's (mod 256): candidates read it to tell
 *                             a busy lock from an idle one
 *      5  1   spin            configuration: the candidates' wait
 *      6  1   max_candidates  configuration
 *      7  1   (free)
 *      8  8   turn_start      when the turn began (monotonic ns)
 *     16  8   turn_owner      the thread whose turn it is (its token)
 *     24  4   turn_ns         configuration
 *     28  4   stale_ns        configuration
 *     32  4   patience_ns     configuration: a candidate sleeps after this
 *                             long without seeing the holder unlock
 *     36  4   beat_iters      configuration: spin waits between heartbeats
 *     40  8   look_at         when the turn ends (turn_start + its length)
 *     48  4   wake_ns         waiters' (relaxed stores): a wake-up's latency,
 *                             averaged; a turn lasts at least two
 *     52  4   holder_cpu      holder's: the CPU it runs on (a candidate there naps)
 *     56  4   waiters         queued waiters (changed with the bucket held)
 *
 * Holding the lock takes nothing from the thread: a waiter's node lives on
 * its stack while it waits, and is read by others only under its bucket.
 */
#ifndef LOCKLAB_FIFO_TP_H
#define LOCKLAB_FIFO_TP_H

#include "locklab/bits/api.h"

#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "locklab/bits/spin.h"

enum { LL_FIFO_TP_LOCKED = 1u << 0, LL_FIFO_TP_QUEUED = 1u << 1, LL_FIFO_TP_SLEEPY = 1u << 2 };

/* The longest duration a knob may give (the fields are 32-bit): 4 s. */
#define LL_FIFO_TP_MAX_NS 4000000000LL

typedef struct {
	atomic_uint word;
	atomic_uchar unlocks;       /* holder's: slow-path unlocks, mod 256 */
	uint8_t spin;               /* the candidates' wait between looks */
	uint8_t max_candidates;     /* waiters that spin at the head of the queue */
	uint8_t unused;
	_Atomic uint64_t turn_start;        /* when the turn began */
	_Atomic(const void *) turn_owner;   /* the token of the thread whose turn it is */
	uint32_t turn_ns;           /* the longest turn while a running candidate waits */
	uint32_t stale_ns;          /* a heartbeat older than this: not running */
	uint32_t patience_ns;       /* a candidate sleeps after this long without an unlock */
	uint32_t beat_iters;        /* spin waits between a candidate's heartbeats */
	_Atomic uint64_t look_at;   /* when the holder looks at the turn next */
	atomic_uint wake_ns;        /* how long a woken waiter takes to run, averaged */
	atomic_int holder_cpu;      /* the CPU the holder last ran on */
	atomic_uint waiters;        /* waiters queued */
} ll_fifo_tp_t;

_Static_assert(offsetof(ll_fifo_tp_t, turn_start) == 8 &&
	       offsetof(ll_fifo_tp_t, turn_owner) == 16 &&
	       offsetof(ll_fifo_tp_t, turn_ns) == 24 && offsetof(ll_fifo_tp_t, beat_iters) == 36 &&
	       offsetof(ll_fifo_tp_t, look_at) == 40 && offsetof(ll_fifo_tp_t, wake_ns) == 48 &&
	       offsetof(ll_fifo_tp_t, holder_cpu) == 52 && offsetof(ll_fifo_tp_t, waiters) == 56 &&
	       sizeof(ll_fifo_tp_t) <= 64,
	       "ll_fifo_tp_t differs from the drawing in fifo_tp.h");

struct ll_fifo_tp_config {
	int64_t turn_ns;
	int64_t stale_ns;
	int64_t patience_ns;
	int64_t candidates;
	int64_t spin;
};

LL_API int ll_fifo_tp_init(ll_fifo_tp_t *l, const struct ll_fifo_tp_config *cfg);
LL_API int ll_fifo_tp_lock_slow(ll_fifo_tp_t *l, const struct timespec *abs_mono);
LL_API int ll_fifo_tp_trylock_slow(ll_fifo_tp_t *l);
LL_API void ll_fifo_tp_unlock_slow(ll_fifo_tp_t *l);
static inline void ll_fifo_tp_destroy(ll_fifo_tp_t *l) { (void)l; }

/* CAS from -> to with acquire (taking) or release (giving back) order. */
static inline int ll_fifo_tp_cas(ll_fifo_tp_t *l, unsigned from, unsigned to, memory_order mo)
{
	return atomic_compare_exchange_strong_explicit(&l->word, &from, to, mo,
						       memory_order_relaxed);
}

static inline int ll_fifo_tp_trylock(ll_fifo_tp_t *l)
{
	/* FREE -> LOCKED; with a queue, only the turn's owner or an idle queue lets us in. */
	return ll_fifo_tp_cas(l, 0, LL_FIFO_TP_LOCKED, memory_order_acquire)
		       ? 0 : ll_fifo_tp_trylock_slow(l);
}

static inline void ll_fifo_tp_lock(ll_fifo_tp_t *l)
{
	if (!ll_fifo_tp_cas(l, 0, LL_FIFO_TP_LOCKED, memory_order_acquire))
		ll_fifo_tp_lock_slow(l, NULL);
}

static inline int ll_fifo_tp_timedlock(ll_fifo_tp_t *l, const struct timespec *abs_mono)
{
	return ll_fifo_tp_cas(l, 0, LL_FIFO_TP_LOCKED, memory_order_acquire)
		       ? 0 : ll_fifo_tp_lock_slow(l, abs_mono);
}

static inline void ll_fifo_tp_unlock(ll_fifo_tp_t *l)
{
	/* LOCKED -> FREE, release: pairs with the next taker's acquire CAS. */
	if (!ll_fifo_tp_cas(l, LL_FIFO_TP_LOCKED, 0, memory_order_release))
		ll_fifo_tp_unlock_slow(l);
}

#endif
