/*
 * rwlocks/innodb56.h: InnoDB 5.6's rw_lock_t (sync0rw), modelled step by step as
 * innodb56 models its mutex, with the mutex's events and sync arrays.
 *
 * Per lock, 40 bytes; its two events are of the table shared by every
 * InnoDB lock of the process (locklab/locks/innodb56.h), keyed by the addresses of
 * lock_word (`event`) and of waiters (`wait_ex_event`):
 *
 *   +-----------+---------+---------------+--------------------+---------+
 *   | lock_word | waiters | writer_thread | spin knobs         | x_recur |
 *   | 4         | 4       | 8             | 15 (+1)            | 1 (+7)  |
 *   +-----------+---------+---------------+--------------------+---------+
 *
 *   lock_word   X_LOCK_DECR = 0x00100000 - what is held:
 *
 *     X_LOCK_DECR           free
 *     (0, X_LOCK_DECR)      X_LOCK_DECR - lock_word readers
 *     0                     one writer, no reader
 *     (-X_LOCK_DECR, 0)     a writer reserved it (wait_ex) and waits for the
 *                           -lock_word readers still inside to leave
 *     -X_LOCK_DECR          the writer holds it twice (recursion)
 *     < -X_LOCK_DECR        the writer holds it 2 + (-X_LOCK_DECR - lock_word) times
 *
 *   waiters        1: a thread may sleep on `event` (set before it sleeps,
 *                  cleared by the releaser that sets the event)
 *   writer_thread  the thread that holds or reserved the lock for writing
 *                  (0: none); it stands for InnoDB's writer_thread and
 *                  `recursive` together
 *
 *   s-lock   rw_lock_s_lock_low: CAS lock_word - 1 while it stays > 0;
 *            else spin: up to sync_spin_loops rounds of ut_delay(random
 *            0..spin_wait_delay-1) while lock_word <= 0, CAS again;
 *            rounds spent: sched_yield, reserve a cell on `event`,
 *            waiters = 1, CAS once more, sleep; woken, start over
 *   x-lock   rw_lock_x_lock_low: CAS lock_word - X_LOCK_DECR while it is
 *            > 0 (the lock is reserved: no new reader enters), then wait
 *            for the readers inside: lock_word < 0 -> spin rounds, then a
 *            cell on `wait_ex_event` and sleep (the wait_ex state); the
 *            CAS failing: the holder relocks (0 -> -X_LOCK_DECR, else - 1),
 *            anyone else spins and sleeps on `event` as the s-lock does
 *   s-unlock lock_word + 1; reaching 0 (the last reader before a wait_ex
 *            writer): set `wait_ex_event`
 *   x-unlock lock_word + X_LOCK_DECR (+ 1 for an inner recursion); free
 *            and waiters set: waiters = 0, set `event`: every sleeper wakes
 *            (InnoDB's broadcast) and they race for the word again
 *
 * InnoDB has no timed rw-lock waits; here a timed wait sleeps on the event
 * with the caller's deadline, and a writer that times out in wait_ex gives
 * its reservation back (lock_word + X_LOCK_DECR; if the readers left
 * meanwhile the lock is its own) and, with waiters set, sets `event`.
 * A writer reserves the lock as soon as no other writer has it, so writers
 * are never starved by readers; readers behind a writer wait for it, a
 * thread reading again while a writer waits (wait_ex) waits for that
 * writer, which waits for it: InnoDB's rule that s-locks do not recurse
 * past a writer, and a timed read is the only way out.  rdlock or a
 * non-recursive wrlock by the writer returns EDEADLK (InnoDB would hang);
 * a wrlock by a thread that reads the lock waits for itself (InnoDB's too).
 *
 * Knobs: innodb56's (sync_spin_loops 30, spin_wait_delay 6,
 * pause_multiplier 50, sync_array_size 1, spin) and x_recursion (1: the
 * writer may lock again, as InnoDB's rw_lock_x_lock allows; 0: EDEADLK).
 */
#ifndef LOCKLAB_RW_INNODB56_H
#define LOCKLAB_RW_INNODB56_H

#include "locklab/bits/api.h"

#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "locklab/locks/innodb56.h"

#define LL_RW_INNODB56_X_LOCK_DECR 0x00100000

typedef struct {
	atomic_int lock_word;
	atomic_uint waiters;
	_Atomic uintptr_t writer_thread;
	struct ll_innodb56_spin s;
	uint8_t x_recursion;
} ll_rw_innodb56_t;

struct ll_rw_innodb56_config {
	int64_t sync_spin_loops;
	int64_t spin_wait_delay;
	int64_t pause_multiplier;
	int64_t sync_array_size;
	int64_t spin;
	int64_t x_recursion;
};

/* cfg NULL: defaults.  Allocates nothing: always 0. */
LL_API int ll_rw_innodb56_init(ll_rw_innodb56_t *l, const struct ll_rw_innodb56_config *cfg);
LL_API void ll_rw_innodb56_destroy(ll_rw_innodb56_t *l);
LL_API int ll_rw_innodb56_rdlock(ll_rw_innodb56_t *l);
LL_API int ll_rw_innodb56_tryrdlock(ll_rw_innodb56_t *l);
LL_API int ll_rw_innodb56_timedrdlock(ll_rw_innodb56_t *l, const struct timespec *abs_mono);
LL_API int ll_rw_innodb56_wrlock(ll_rw_innodb56_t *l);
LL_API int ll_rw_innodb56_trywrlock(ll_rw_innodb56_t *l);
LL_API int ll_rw_innodb56_timedwrlock(ll_rw_innodb56_t *l, const struct timespec *abs_mono);
/* Either side; EPERM for a free lock or a write unlock by another thread. */
LL_API int ll_rw_innodb56_unlock(ll_rw_innodb56_t *l);

#endif
