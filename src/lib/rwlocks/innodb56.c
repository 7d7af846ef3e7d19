/*
 * innodb56.c: InnoDB 5.6's rw_lock_t (drawn in locklab/rwlocks/innodb56.h), on
 * the os_events and sync arrays of the innodb56 mutex (locks/innodb56_sync.c).
 *
 * No wake-up is lost, by the mutex's argument applied to each event:
 *
 *   - `event`: a waiter reserves a cell (resetting the event), stores
 *     waiters = 1 and reads lock_word again, all seq_cst; a releaser that
 *     frees the word (x-unlock, or a timed-out wait_ex writer giving its
 *     reservation back) changes lock_word, then reads waiters, seq_cst.
 *     Either the waiter's read sees the freed word and it does not sleep, or
 *     the releaser's read sees the flag (or a 0 stored by another releaser
 *     after it, who sets the event after the waiter's reset) and sets.
 *     Readers wait only while lock_word <= 0 and writers only while it is
 *     <= 0 too: a writer holds or has reserved the lock, and that writer
 *     frees it by one of those two paths.
 *   - `wait_ex_event`: only the writer that reserved the lock sleeps on it;
 *     it resets the event (under the event's mutex), then reads lock_word.
 *     The reader whose s-unlock brings lock_word to 0 sets it afterwards,
 *     unconditionally.  If that set came before the writer's reset in the
 *     event mutex's order, the reader's increment happens before the
 *     writer's read, which sees 0 and does not sleep.
 *
 * A collision of two events in the shared table only adds spurious
 * wake-ups (innodb56_sync.c): every waiter loops back and looks again.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>

#include "locklab/rwlocks/innodb56.h"
#include "locklab/bits/spin.h"
#include "locks/innodb56_sync.h"
#include "rwlocks/rwalgo.h"

#define X_LOCK_DECR LL_RW_INNODB56_X_LOCK_DECR

_Static_assert(sizeof(ll_rw_innodb56_t) == 40, "ll_rw_innodb56_t is drawn as 40 bytes");

/* Results of x_lock_low besides 0 (taken) and errno values. */
enum { RESERVED = -1 };

static inline uintptr_t self_id(void)
{
	return (uintptr_t)pthread_self();
}

static struct ll_ib_event *event_of(ll_rw_innodb56_t *l)
{
	return ll_ib_event_of(&l->lock_word);
}

static struct ll_ib_event *wait_ex_event_of(ll_rw_innodb56_t *l)
{
	return ll_ib_event_of(&l->waiters);
}

int ll_rw_innodb56_init(ll_rw_innodb56_t *l, const struct ll_rw_innodb56_config *cfg)
{
	struct ll_rw_innodb56_config def;
	cfg = LL_RW_CONFIG_OR_DEFAULTS(innodb56, cfg, def);
	atomic_init(&l->lock_word, X_LOCK_DECR);
	atomic_init(&l->waiters, 0);
	atomic_init(&l->writer_thread, 0);
	LL_IB_SPIN_SET(&l->s, cfg);
	l->x_recursion = (uint8_t)cfg->x_recursion;
	return 0;
}

/* The events are the shared table's: nothing of the lock's to free. */
void ll_rw_innodb56_destroy(ll_rw_innodb56_t *l)
{
	(void)l;
}

/* rw_lock_reset_waiter_flag() and os_event_set(lock->event), when anyone may sleep. */
static void signal_waiters(ll_rw_innodb56_t *l)
{
	if (atomic_load_explicit(&l->waiters, memory_order_seq_cst)) {
		atomic_store_explicit(&l->waiters, 0, memory_order_seq_cst);
		ll_ib_event_set(event_of(l));
	}
}

/* ---- readers ---- */

/* rw_lock_s_lock_low(): one reader more while lock_word stays > 0. */
static inline int s_lock_low(ll_rw_innodb56_t *l)
{
	/* seq_cst: after a waiter's store of waiters, this read is the Dekker half. */
	int w = atomic_load_explicit(&l->lock_word, memory_order_seq_cst);
	while (w > 1)
		if (atomic_compare_exchange_weak_explicit(&l->lock_word, &w, w - 1,
							  memory_order_seq_cst, memory_order_seq_cst))
			return 0;
	/* 1: X_LOCK_DECR - 1 readers inside, the most the word counts. */
	return w == 1 ? EAGAIN : EBUSY;
}

/* rw_lock_s_lock_spin(): spin rounds, then a cell on `event`, until in or the deadline. */
static int s_lock_spin(ll_rw_innodb56_t *l, const struct timespec *dl)
{
	const uint32_t rounds = l->s.spin_loops;
	uint32_t i = 0;
	struct ll_spinner sp = ll_spinner_start(l->s.spin);
	int rc;

	for (;;) {
		while (i < rounds && atomic_load_explicit(&l->lock_word, memory_order_relaxed) <= 0) {
			ll_ib_spin_delay(&l->s, &sp);
			i++;
		}
		if (i >= rounds)
			sched_yield();
		rc = s_lock_low(l);
		if (rc != EBUSY)
			return rc;
		if (i < rounds)
			continue;
		if (dl && ll_deadline_passed(dl))
			return ETIMEDOUT;

		struct ll_ib_array *a;
		struct ll_ib_cell *cell = ll_ib_reserve_cell(&l->s, l, event_of(l), &a);
		if (!cell)
			continue;   /* every cell taken: it yielded, spin again */
		/* Set before looking at lock_word once more, so that the releaser signals. */
		atomic_store_explicit(&l->waiters, 1, memory_order_seq_cst);
		rc = s_lock_low(l);
		if (rc != EBUSY) {
			ll_ib_free_cell(a, cell);
			return rc;
		}
		if (ll_ib_wait_in_cell(a, cell, dl) == ETIMEDOUT) {
			rc = s_lock_low(l);
			return rc == EBUSY ? ETIMEDOUT : rc;
		}
		i = 0;
	}
}

/* try: do not wait; else dl: the deadline of a timed wait, or NULL. */
static inline int rd(ll_rw_innodb56_t *l, const struct timespec *dl, int try)
{
	int rc = s_lock_low(l);
	if (__builtin_expect(rc != EBUSY, 1) || try)
		return rc;
	/* The writer reading its own lock would wait for itself (InnoDB hangs there). */
	if (atomic_load_explicit(&l->writer_thread, memory_order_relaxed) == self_id())
		return EDEADLK;
	return s_lock_spin(l, dl);
}

/* ---- writers ---- */

/*
 * The decrement failed, lock_word read as w <= 0: 0 when the writer relocked
 * (0 -> -X_LOCK_DECR, deeper by 1), EDEADLK for the writer without
 * x_recursion, EBUSY for anyone else.
 */
static int x_relock(ll_rw_innodb56_t *l, uintptr_t me, int w)
{
	/* Only this thread stores its own id there, and it is not waiting: it holds the lock. */
	if (atomic_load_explicit(&l->writer_thread, memory_order_relaxed) != me)
		return EBUSY;
	if (!l->x_recursion)
		return EDEADLK;
	/* Nobody else writes lock_word while the lock is written. */
	atomic_fetch_sub_explicit(&l->lock_word, w == 0 ? X_LOCK_DECR : 1, memory_order_relaxed);
	return 0;
}

/*
 * rw_lock_x_lock_low(): RESERVED when lock_word was > 0 and is now less by
 * X_LOCK_DECR (the caller waits for the readers inside), else x_relock's.
 */
static int x_lock_low(ll_rw_innodb56_t *l, uintptr_t me)
{
	int w = atomic_load_explicit(&l->lock_word, memory_order_seq_cst);
	while (w > 0) {
		if (atomic_compare_exchange_weak_explicit(&l->lock_word, &w, w - X_LOCK_DECR,
							  memory_order_seq_cst, memory_order_seq_cst)) {
			atomic_store_explicit(&l->writer_thread, me, memory_order_relaxed);
			return RESERVED;
		}
	}
	return x_relock(l, me, w);
}

/* rw_lock_x_lock_wait(): the reserving writer waits for the readers inside (wait_ex). */
static int x_lock_wait(ll_rw_innodb56_t *l, const struct timespec *dl)
{
	const uint32_t rounds = l->s.spin_loops;
	uint32_t i = 0;
	struct ll_spinner sp = ll_spinner_start(l->s.spin);

	while (atomic_load_explicit(&l->lock_word, memory_order_acquire) < 0) {
		ll_ib_spin_delay(&l->s, &sp);
		if (i < rounds) {
			i++;
			continue;
		}
		if (dl && ll_deadline_passed(dl))
			return ETIMEDOUT;
		struct ll_ib_array *a;
		struct ll_ib_cell *cell = ll_ib_reserve_cell(&l->s, l, wait_ex_event_of(l), &a);
		if (!cell)
			continue;
		i = 0;
		/* Looked at after the reset: the last reader's set cannot be missed. */
		if (atomic_load_explicit(&l->lock_word, memory_order_acquire) < 0) {
			if (ll_ib_wait_in_cell(a, cell, dl) == ETIMEDOUT &&
			    atomic_load_explicit(&l->lock_word, memory_order_acquire) < 0)
				return ETIMEDOUT;
		} else {
			ll_ib_free_cell(a, cell);
		}
	}
	return 0;
}

/*
 * A timed-out wait_ex writer gives its reservation back (no InnoDB
 * counterpart: InnoDB does not time out): ETIMEDOUT, or 0 when the last
 * reader left meanwhile and the lock is the writer's after all.
 */
static int x_unreserve(ll_rw_innodb56_t *l, uintptr_t me)
{
	atomic_store_explicit(&l->writer_thread, 0, memory_order_relaxed);
	int w = atomic_load_explicit(&l->lock_word, memory_order_acquire);
	do {
		if (w == 0) {
			atomic_store_explicit(&l->writer_thread, me, memory_order_relaxed);
			return 0;
		}
	} while (!atomic_compare_exchange_weak_explicit(&l->lock_word, &w, w + X_LOCK_DECR,
							 memory_order_seq_cst, memory_order_acquire));
	/* Readers and writers that slept behind the reservation may enter now. */
	signal_waiters(l);
	return ETIMEDOUT;
}

/* RESERVED from x_lock_low: wait out the readers (or give the reservation back). */
static int x_finish(ll_rw_innodb56_t *l, int rc, const struct timespec *dl, uintptr_t me)
{
	if (rc != RESERVED)
		return rc;
	return x_lock_wait(l, dl) ? x_unreserve(l, me) : 0;
}

/* rw_lock_x_lock_func(); try: rw_lock_x_lock_func_nowait(). */
static int wr(ll_rw_innodb56_t *l, const struct timespec *dl, int try)
{
	const uintptr_t me = self_id();
	const uint32_t rounds = l->s.spin_loops;
	uint32_t i = 0;
	struct ll_spinner sp = ll_spinner_start(l->s.spin);
	int rc;

	if (try) {
		int w = X_LOCK_DECR;
		if (atomic_compare_exchange_strong_explicit(&l->lock_word, &w, 0,
							    memory_order_acquire,
							    memory_order_relaxed)) {
			atomic_store_explicit(&l->writer_thread, me, memory_order_relaxed);
			return 0;
		}
		/* Held by readers (w > 0): busy, as for another writer. */
		return w > 0 ? EBUSY : x_relock(l, me, w);
	}
	for (;;) {
		rc = x_lock_low(l, me);
		if (rc != EBUSY)
			return x_finish(l, rc, dl, me);
		/* Spin while another writer has it; it freed: try again at once. */
		while (i < rounds && atomic_load_explicit(&l->lock_word, memory_order_relaxed) <= 0) {
			ll_ib_spin_delay(&l->s, &sp);
			i++;
		}
		if (i < rounds)
			continue;
		sched_yield();
		if (dl && ll_deadline_passed(dl))
			return ETIMEDOUT;

		struct ll_ib_array *a;
		struct ll_ib_cell *cell = ll_ib_reserve_cell(&l->s, l, event_of(l), &a);
		if (!cell)
			continue;
		atomic_store_explicit(&l->waiters, 1, memory_order_seq_cst);
		rc = x_lock_low(l, me);
		if (rc != EBUSY) {
			ll_ib_free_cell(a, cell);
			return x_finish(l, rc, dl, me);
		}
		if (ll_ib_wait_in_cell(a, cell, dl) == ETIMEDOUT) {
			rc = x_lock_low(l, me);
			return rc == EBUSY ? ETIMEDOUT : x_finish(l, rc, dl, me);
		}
		i = 0;
	}
}

/* ---- unlock: the side is read off lock_word (rwlocks/innodb56.h's table) ---- */

static int unlock(ll_rw_innodb56_t *l)
{
	int w = atomic_load_explicit(&l->lock_word, memory_order_relaxed);
	if (w == X_LOCK_DECR)
		return EPERM;
	if (w > 0 || (w > -X_LOCK_DECR && w < 0)) {
		/* rw_lock_s_unlock(): the last reader before a wait_ex writer wakes it. */
		if (atomic_fetch_add_explicit(&l->lock_word, 1, memory_order_seq_cst) + 1 == 0)
			ll_ib_event_set(wait_ex_event_of(l));
		return 0;
	}
	/* rw_lock_x_unlock(): 0 or -X_LOCK_DECR steps by X_LOCK_DECR, deeper recursion by 1. */
	if (atomic_load_explicit(&l->writer_thread, memory_order_relaxed) != self_id())
		return EPERM;
	if (w == 0)
		atomic_store_explicit(&l->writer_thread, 0, memory_order_relaxed);
	int incr = w == 0 || w == -X_LOCK_DECR ? X_LOCK_DECR : 1;
	if (atomic_fetch_add_explicit(&l->lock_word, incr, memory_order_seq_cst) + incr ==
	    X_LOCK_DECR)
		signal_waiters(l);
	return 0;
}

int ll_rw_innodb56_rdlock(ll_rw_innodb56_t *l)
{
	return rd(l, NULL, 0);
}

int ll_rw_innodb56_tryrdlock(ll_rw_innodb56_t *l)
{
	return rd(l, NULL, 1);
}

int ll_rw_innodb56_timedrdlock(ll_rw_innodb56_t *l, const struct timespec *abs_mono)
{
	return rd(l, abs_mono, 0);
}

int ll_rw_innodb56_wrlock(ll_rw_innodb56_t *l)
{
	return wr(l, NULL, 0);
}

int ll_rw_innodb56_trywrlock(ll_rw_innodb56_t *l)
{
	return wr(l, NULL, 1);
}

int ll_rw_innodb56_timedwrlock(ll_rw_innodb56_t *l, const struct timespec *abs_mono)
{
	return wr(l, abs_mono, 0);
}

int ll_rw_innodb56_unlock(ll_rw_innodb56_t *l)
{
	return unlock(l);
}

static const struct ll_knob knobs[] = {
	LL_IB_SPIN_KNOBS(struct ll_rw_innodb56_config),
	LL_KNOB_INT(struct ll_rw_innodb56_config, x_recursion, 1, 0, 1,
		    "1: the writer may write-lock again (InnoDB's rw_lock_x_lock); 0: EDEADLK"),
};

LL_RW_STATIC_ADAPTERS(ll_rw_innodb56_init, ll_rw_innodb56_destroy)

const struct ll_rwlock_ops ll_rw_innodb56_ops = {
	.name = "innodb56-rw",
	.summary = "InnoDB 5.6 rw_lock_t: lock_word with X_LOCK_DECR, wait_ex, random ut_delay "
		   "spin, sync array, broadcast",
	.flags = LL_ALGO_PARKS | LL_ALGO_PREEMPT_SAFE,
	.knobs = knobs, .nknobs = LL_COUNT(knobs),
	.config_size = sizeof(struct ll_rw_innodb56_config),
	LL_RW_STATIC_FUNCS(ll_rw_innodb56_t),
};
