/*
 * innodb56_sync.c: InnoDB 5.6's os_events, the process-wide sync arrays and
 * ut_delay(), shared by the mutex (innodb56.c, drawn in locklab/locks/innodb56.h)
 * and rw_lock_t (rwlocks/innodb56.c, drawn in locklab/rwlocks/innodb56.h).
 *
 * Event (os_event_t):
 *   is_set        the event is signalled
 *   signal_count  bumped by every set that finds it unset; starts at 1 so
 *                 that 0 can mean "no snapshot" in wait_low, as in InnoDB
 *   reset() returns signal_count; wait_low(snapshot) sleeps while
 *   !is_set && signal_count == snapshot, so a set that lands between a
 *   waiter's reset and its sleep is never lost.
 *
 * InnoDB 5.6 creates one event per mutex (os_event_create, 104 bytes on the
 * heap).  Here a lock owns none: its event is one of EVENTS in a table
 * shared by every InnoDB lock of the process, picked by hashing an address
 * the lock names it by (its key: the mutex's address; an rw_lock_t keys its
 * event and its wait_ex_event by two of its fields), each made (mutex and
 * CLOCK_MONOTONIC condvar) on its first use.
 * Two locks that hash alike share an event, which only costs spurious
 * wake-ups; no wake-up is lost, because a waiter's wait returns on any set
 * that follows its reset, whoever sets and resets in between:
 *
 *   - signal_count only grows, under the event's mutex.  A waiter W resets
 *     at time r (is_set = 0, snapshot c) and sleeps while !is_set && count
 *     == c.  The first set after r, on behalf of any lock, finds is_set 0 (W
 *     cleared it, and only a set raises it) and makes count c + 1; from then
 *     on W's condition is false for good, since a reset (any lock's) clears
 *     is_set but never lowers the count.  So W returns iff some set comes
 *     after r in the event mutex's order: a reset by lock B after a set for
 *     lock A cannot undo A's set for A's waiters, and a set for B that finds
 *     is_set already raised by A's changes nothing W cares about (A's set
 *     came after r and already moved the count).
 *   - The unlocker that W needs sets after r: W resets, then stores waiters
 *     = 1 (seq_cst), then tries the word 4 times.  An unlocker U whose
 *     release of the word comes after W's last failed TAS (seq_cst order on
 *     the word) reads waiters after W's store and sees 1, or sees 0 written
 *     by another unlocker U' after W's store, and U' sets after it; either
 *     set takes the event's mutex after W's reset released it.  This is the
 *     per-lock argument of InnoDB's own event, unchanged: it never needed the
 *     event to be the lock's alone.  rw_lock_t's two events keep it the same
 *     way (rwlocks/innodb56.c).
 *   - A wake-up for another lock (a collision, or a set for nobody) returns
 *     W to the sync-array loop: it frees its cell, spins again and, if the
 *     word is still held, reserves a cell, resets and sleeps anew, exactly as
 *     after a broadcast for its own lock that another waiter won.
 *
 * The table is static (EVENTS x 128 bytes of zero pages until used), so a
 * lock costs no memory beyond its state and destroy frees nothing.  A forked
 * child re-makes every event that was made: the parent's threads may have
 * held an event's mutex or waited on its condvar.
 *
 * Sync array: cells {wait_object, event, waiting, signal_count, thread, since},
 * guarded by one pthread mutex per array, scanned linearly for a free cell
 * (InnoDB 5.6 does the same; later versions keep a free list).
 */
#include <pthread.h>
#include <sched.h>
#include <stdalign.h>
#include <string.h>

#include "core/mem.h"
#include "locklab/bits/monitor_hooks.h"
#include "locks/innodb56_sync.h"

enum { EVENTS = 1 << LL_IB_EVENT_BITS };
enum { EVENT_UNMADE, EVENT_MAKING, EVENT_MADE };

/* 128 bytes apart: an event's line and its adjacent-line prefetch are its own. */
struct ll_ib_event {
	alignas(128) pthread_mutex_t m;
	pthread_cond_t c;
	int is_set;
	int64_t signal_count;
	atomic_int made;   /* EVENT_*: the mutex and condvar are initialised */
};

static struct ll_ib_event events[EVENTS];
/* Whether any event was claimed: a forked child with none reads no page of the table. */
static atomic_int events_used;

/* By the thread that claimed the event, or a forked child's only thread. */
static void event_init(struct ll_ib_event *e)
{
	pthread_condattr_t ca;

	pthread_condattr_init(&ca);
	/* Timed waits take CLOCK_MONOTONIC deadlines. */
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	e->m = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
	pthread_cond_init(&e->c, &ca);
	pthread_condattr_destroy(&ca);
}

struct ll_ib_event *ll_ib_event_of(const void *key)
{
	struct ll_ib_event *e = &events[ll_ib_event_index(key)];
	/* Acquire pairs with the maker's release: the mutex and condvar are initialised. */
	int st = atomic_load_explicit(&e->made, memory_order_acquire);
	if (st == EVENT_MADE)
		return e;
	if (st == EVENT_UNMADE &&
	    atomic_compare_exchange_strong_explicit(&e->made, &st, EVENT_MAKING,
						    memory_order_acquire, memory_order_acquire)) {
		atomic_store_explicit(&events_used, 1, memory_order_relaxed);
		/* os_event_create(); signal_count starts at 1, as in InnoDB. */
		event_init(e);
		e->signal_count = 1;
		atomic_store_explicit(&e->made, EVENT_MADE, memory_order_release);
		return e;
	}
	/* Another thread makes it: two pthread inits, a few hundred nanoseconds. */
	while (atomic_load_explicit(&e->made, memory_order_acquire) != EVENT_MADE)
		sched_yield();
	return e;
}

void ll_ib_event_set(struct ll_ib_event *e)
{
	pthread_mutex_lock(&e->m);
	if (!e->is_set) {
		e->is_set = 1;
		e->signal_count++;
		pthread_cond_broadcast(&e->c);
	}
	pthread_mutex_unlock(&e->m);
}

static int64_t event_reset(struct ll_ib_event *e)
{
	pthread_mutex_lock(&e->m);
	e->is_set = 0;
	int64_t snapshot = e->signal_count;
	pthread_mutex_unlock(&e->m);
	return snapshot;
}

/* 0 when set after `snapshot`, ETIMEDOUT at the deadline (NULL: none). */
static int event_wait(struct ll_ib_event *e, int64_t snapshot, const struct timespec *abs_mono)
{
	int rc = 0;

	pthread_mutex_lock(&e->m);
	while (!e->is_set && e->signal_count == snapshot) {
		ll_mon_note_park();   /* one OS wait for the monitor */
		/* Any deadline: glibc times out a negative tv_sec at once, the kernel caps a far one. */
		if (!abs_mono) {
			pthread_cond_wait(&e->c, &e->m);
		} else if (pthread_cond_timedwait(&e->c, &e->m, abs_mono) == ETIMEDOUT) {
			rc = ETIMEDOUT;
			break;
		}
	}
	pthread_mutex_unlock(&e->m);
	return rc;
}

enum { CELLS_PER_ARRAY = 4096 };

struct ll_ib_cell {
	const void *wait_object;   /* the lock waited for; NULL: cell free */
	struct ll_ib_event *event; /* what the thread sleeps on */
	int waiting;               /* the thread sleeps on the event now */
	int64_t signal_count;      /* event snapshot taken at reservation */
	pthread_t thread;
	uint64_t reserved_ns;
};

struct ll_ib_array {
	pthread_mutex_t m;
	uint32_t n_reserved;
	struct ll_ib_cell cells[CELLS_PER_ARRAY];
};

static _Atomic(struct ll_ib_array *) sync_arrays[LL_IB_MAX_SYNC_ARRAYS];

/* Created on first use; a loser of the creation race frees its copy. */
static struct ll_ib_array *sync_array_get(unsigned i)
{
	struct ll_ib_array *a = atomic_load_explicit(&sync_arrays[i], memory_order_acquire);
	if (a)
		return a;
	struct ll_ib_array *fresh = ll_mem_alloc(sizeof(*fresh));
	if (!fresh)
		return NULL;
	pthread_mutex_init(&fresh->m, NULL);
	if (atomic_compare_exchange_strong_explicit(&sync_arrays[i], &a, fresh, memory_order_acq_rel,
						    memory_order_acquire))
		return fresh;
	pthread_mutex_destroy(&fresh->m);
	ll_mem_free(fresh, sizeof(*fresh));
	return a;
}

/*
 * A forked child has only the thread that forked, which was not waiting:
 * every cell is free, and an array's or an event's mutex may have been copied
 * held by a thread that does not exist there, an event's condvar with its
 * waiters.  An event being made by such a thread is made here.
 */
static void after_fork_child(void)
{
	for (unsigned i = 0; atomic_load_explicit(&events_used, memory_order_relaxed) && i < EVENTS;
	     i++) {
		struct ll_ib_event *e = &events[i];
		if (atomic_load_explicit(&e->made, memory_order_relaxed) == EVENT_UNMADE)
			continue;
		if (atomic_load_explicit(&e->made, memory_order_relaxed) == EVENT_MAKING)
			e->signal_count = 1;
		event_init(e);
		atomic_store_explicit(&e->made, EVENT_MADE, memory_order_relaxed);
	}
	for (unsigned i = 0; i < LL_IB_MAX_SYNC_ARRAYS; i++) {
		struct ll_ib_array *a = atomic_load_explicit(&sync_arrays[i], memory_order_relaxed);
		if (!a)
			continue;
		a->m = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
		a->n_reserved = 0;
		memset(a->cells, 0, sizeof(a->cells));
	}
}

__attribute__((constructor)) static void register_fork(void)
{
	pthread_atfork(NULL, NULL, after_fork_child);
}

/* Spreads reservations over the arrays round-robin, as InnoDB 5.6 does. */
static atomic_uint next_array;

struct ll_ib_cell *ll_ib_reserve_cell(const struct ll_innodb56_spin *s, const void *wait_object,
				      struct ll_ib_event *e, struct ll_ib_array **arr_out)
{
	unsigned start = s->sync_arrays > 1
				 ? atomic_fetch_add_explicit(&next_array, 1, memory_order_relaxed)
				 : 0;

	for (unsigned k = 0; k < s->sync_arrays; k++) {
		struct ll_ib_array *a = sync_array_get((start + k) % s->sync_arrays);
		if (!a)
			continue;
		struct ll_ib_cell *cell = NULL;
		pthread_mutex_lock(&a->m);
		for (unsigned i = 0; i < CELLS_PER_ARRAY; i++) {
			if (!a->cells[i].wait_object) {
				cell = &a->cells[i];
				cell->wait_object = wait_object;
				cell->waiting = 0;
				a->n_reserved++;
				break;
			}
		}
		pthread_mutex_unlock(&a->m);
		if (cell) {
			/* As InnoDB: reset outside the array mutex; only we use this cell. */
			cell->event = e;
			cell->signal_count = event_reset(e);
			cell->thread = pthread_self();
			cell->reserved_ns = ll_now_ns();
			*arr_out = a;
			return cell;
		}
	}
	sched_yield();
	return NULL;
}

void ll_ib_free_cell(struct ll_ib_array *a, struct ll_ib_cell *cell)
{
	pthread_mutex_lock(&a->m);
	cell->wait_object = NULL;
	cell->waiting = 0;
	a->n_reserved--;
	pthread_mutex_unlock(&a->m);
}

/* sync_array_wait_event(): mark the cell waiting, sleep, free the cell. */
int ll_ib_wait_in_cell(struct ll_ib_array *a, struct ll_ib_cell *cell,
		       const struct timespec *abs_mono)
{
	pthread_mutex_lock(&a->m);
	cell->waiting = 1;
	pthread_mutex_unlock(&a->m);
	int rc = event_wait(cell->event, cell->signal_count, abs_mono);
	ll_ib_free_cell(a, cell);
	return rc;
}

/* ut_delay(): `units` x pause_multiplier spin waits. */
static void ut_delay(const struct ll_innodb56_spin *s, uint32_t units, struct ll_spinner *sp)
{
	uint32_t n = units * s->pause_multiplier;
	for (uint32_t i = 0; i < n; i++)
		ll_spinner_wait(sp);
}

void ll_ib_spin_delay(const struct ll_innodb56_spin *s, struct ll_spinner *sp)
{
	/* ut_rnd_interval(0, d) in 5.6 is low + rnd % (high - low): 0..d-1. */
	if (s->spin_wait_delay)
		ut_delay(s, ll_rand32() % s->spin_wait_delay, sp);
}

void ll_ib_spin_set(struct ll_innodb56_spin *s, int64_t spin_loops, int64_t spin_wait_delay,
		    int64_t pause_multiplier, int64_t arrays, int64_t spin)
{
	s->spin_loops = (uint32_t)spin_loops;
	s->spin_wait_delay = (uint32_t)spin_wait_delay;
	s->pause_multiplier = (uint32_t)pause_multiplier;
	s->sync_arrays = (uint16_t)arrays;
	s->spin = (uint8_t)spin;
}
