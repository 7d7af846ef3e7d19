/*
 * locks/innodb56.h: the InnoDB 5.6 mutex (ib_mutex_t), modelled step by step.
 *
 *   lock_word  0 FREE, 1 HELD: taken by an atomic test-and-set
 *   waiters    1: a thread may sleep on the lock's event (set before it
 *              sleeps, cleared by the unlocker that wakes them)
 *   (event)    os_event_t: pthread mutex + cond + is_set + signal_count; not
 *              in the lock: one of a fixed table shared by every innodb56
 *              lock of the process, picked by the lock's address (InnoDB
 *              5.6 allocates one per mutex; a shared one only adds spurious
 *              wake-ups when two locks' sleepers meet, innodb56.c)
 *
 *   lock:   TAS; on failure mutex_spin_wait():
 *             spin: while HELD and i < sync_spin_loops:
 *                     ut_delay(random 0..spin_wait_delay-1), i++
 *                   (one delay unit = pause_multiplier spin waits)
 *             rounds exhausted: sched_yield() once; TAS; i++; repeat
 *             until i reaches sync_spin_loops, then
 *             reserve a cell in a sync array (under the array's pthread
 *             mutex, linear scan for a free cell; reset the event and keep
 *             its signal_count), waiters = 1, TAS up to 4 times, then
 *             sleep on the event until it is set after our reset; free the
 *             cell; start over from the spin.
 *   unlock: lock_word = 0 (full barrier); if waiters: waiters = 0 and set
 *           the event: pthread_cond_broadcast wakes EVERY sleeper, and they
 *           all race for the word again: the thundering herd of the
 *           innodb_thread_concurrency study.
 *
 * Knobs default to InnoDB 5.6's: innodb_sync_spin_loops=30,
 * innodb_spin_wait_delay=6, 50 PAUSEs per delay unit (hard-coded in 5.6;
 * MySQL 8.0 made it innodb_spin_wait_pause_multiplier), and
 * innodb_sync_array_size=1 (several arrays are used round-robin).
 */
#ifndef LOCKLAB_INNODB56_H
#define LOCKLAB_INNODB56_H

#include "locklab/bits/api.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "locklab/bits/spin.h"

/* The spin and sync-array settings of an InnoDB 5.6 lock (the mutex's, rw_lock_t's). */
struct ll_innodb56_spin {
	uint32_t spin_loops;
	uint32_t spin_wait_delay;
	uint32_t pause_multiplier;
	uint16_t sync_arrays;
	uint8_t spin;
};

typedef struct {
	atomic_uint lock_word;
	atomic_uint waiters;
	struct ll_innodb56_spin s;
} ll_innodb56_t;

struct ll_innodb56_config {
	int64_t sync_spin_loops;
	int64_t spin_wait_delay;
	int64_t pause_multiplier;
	int64_t sync_array_size;
	int64_t spin;
};

/* Allocates nothing (the events are a shared table): always 0. */
LL_API int ll_innodb56_init(ll_innodb56_t *l, const struct ll_innodb56_config *cfg);
LL_API void ll_innodb56_destroy(ll_innodb56_t *l);
LL_API int ll_innodb56_lock_slow(ll_innodb56_t *l, const struct timespec *abs_mono);
/* mutex_signal_object(): clear waiters, set the event (broadcast). */
LL_API void ll_innodb56_signal(ll_innodb56_t *l);

/* mutex_test_and_set(): 0 when the word was FREE and is now ours. */
static inline int ll_innodb56_trylock(ll_innodb56_t *l)
{
	return atomic_exchange_explicit(&l->lock_word, 1, memory_order_acquire) ? EBUSY : 0;
}

static inline void ll_innodb56_lock(ll_innodb56_t *l)
{
	if (ll_innodb56_trylock(l))
		ll_innodb56_lock_slow(l, NULL);
}

static inline int ll_innodb56_timedlock(ll_innodb56_t *l, const struct timespec *abs_mono)
{
	return ll_innodb56_trylock(l) ? ll_innodb56_lock_slow(l, abs_mono) : 0;
}

static inline void ll_innodb56_unlock(ll_innodb56_t *l)
{
	/*
	 * seq_cst exchange then seq_cst load: the release of the word must be
	 * globally visible before we read `waiters`, or a waiter that set it
	 * after failing its last TAS would sleep forever.  InnoDB 5.6 cleared
	 * the word with __sync_lock_test_and_set (an XCHG on x86, but promised
	 * only as an acquire barrier) and kept a once-a-second monitor thread
	 * to wake such sleepers; with C11 seq_cst the rescue is unnecessary.
	 */
	atomic_exchange_explicit(&l->lock_word, 0, memory_order_seq_cst);
	if (atomic_load_explicit(&l->waiters, memory_order_seq_cst))
		ll_innodb56_signal(l);
}

#endif
