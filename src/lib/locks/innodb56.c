/*
 * innodb56.c: the InnoDB 5.6 mutex's slow path, its os_events and the
 * process-wide sync arrays (the mutex is drawn in innodb56.h).
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
 * shared by every innodb56 lock of the process, picked by hashing the lock's
 * address, each made (mutex and CLOCK_MONOTONIC condvar) on its first use.
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
 *     event to be the lock's alone.
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
 * Sync array: cells {wait_object, waiting, signal_count, thread, since},
 * guarded by one pthread mutex per array, scanned linearly for a free cell
 * (InnoDB 5.6 does the same; later versions keep a free list).
 */
#include <pthread.h>
#include <sched.h>
#include <stdalign.h>
#include <string.h>

#include "core/mem.h"
#include "locklab/innodb56.h"
#include "locks/algo.h"

enum { EVENTS = 1 << LL_INNODB56_EVENT_BITS };
enum { EVENT_UNMADE, EVENT_MAKING, EVENT_MADE };

/* 128 bytes apart: an event's line and its adjacent-line prefetch are its own. */
struct event {
	alignas(128) pthread_mutex_t m;
	pthread_cond_t c;
	int is_set;
	int64_t signal_count;
	atomic_int made;   /* EVENT_*: the mutex and condvar are initialised */
};

static struct event events[EVENTS];
/* Whether any event was claimed: a forked child with none reads no page of the table. */
static atomic_int events_used;

/* By the thread that claimed the event, or a forked child's only thread. */
static void event_init(struct event *e)
{
	pthread_condattr_t ca;

	pthread_condattr_init(&ca);
	/* Timed waits take CLOCK_MONOTONIC deadlines. */
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	e->m = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
	pthread_cond_init(&e->c, &ca);
	pthread_condattr_destroy(&ca);
}

/* The event of lock l, made on its first use. */
static struct event *event_of(const ll_innodb56_t *l)
{
	struct event *e = &events[ll_innodb56_event_index(l)];
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

static void event_set(struct event *e)
{
	pthread_mutex_lock(&e->m);
	if (!e->is_set) {
		e->is_set = 1;
		e->signal_count++;
		pthread_cond_broadcast(&e->c);
	}
	pthread_mutex_unlock(&e->m);
}

static int64_t event_reset(struct event *e)
{
	pthread_mutex_lock(&e->m);
	e->is_set = 0;
	int64_t snapshot = e->signal_count;
	pthread_mutex_unlock(&e->m);
	return snapshot;
}

/* 0 when set after `snapshot`, ETIMEDOUT at the deadline (NULL: none). */
static int event_wait(struct event *e, int64_t snapshot, const struct timespec *abs_mono)
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

enum { MAX_SYNC_ARRAYS = 64, CELLS_PER_ARRAY = 4096 };

struct sync_cell {
	const void *wait_object;   /* the mutex waited for; NULL: cell free */
	int waiting;               /* the thread sleeps on the event now */
	int64_t signal_count;      /* event snapshot taken at reservation */
	pthread_t thread;
	uint64_t reserved_ns;
};

struct sync_array {
	pthread_mutex_t m;
	uint32_t n_reserved;
	struct sync_cell cells[CELLS_PER_ARRAY];
};

static _Atomic(struct sync_array *) sync_arrays[MAX_SYNC_ARRAYS];

/* Created on first use; a loser of the creation race frees its copy. */
static struct sync_array *sync_array_get(unsigned i)
{
	struct sync_array *a = atomic_load_explicit(&sync_arrays[i], memory_order_acquire);
	if (a)
		return a;
	struct sync_array *fresh = ll_mem_alloc(sizeof(*fresh));
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
		struct event *e = &events[i];
		if (atomic_load_explicit(&e->made, memory_order_relaxed) == EVENT_UNMADE)
			continue;
		if (atomic_load_explicit(&e->made, memory_order_relaxed) == EVENT_MAKING)
			e->signal_count = 1;
		event_init(e);
		atomic_store_explicit(&e->made, EVENT_MADE, memory_order_relaxed);
	}
	for (unsigned i = 0; i < MAX_SYNC_ARRAYS; i++) {
		struct sync_array *a = atomic_load_explicit(&sync_arrays[i], memory_order_relaxed);
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

/* sync_array_reserve_cell(): a free cell for `l`, with the event reset. */
static struct sync_cell *reserve_cell(ll_innodb56_t *l, struct sync_array **arr_out)
{
	unsigned start = l->sync_arrays > 1
				 ? atomic_fetch_add_explicit(&next_array, 1, memory_order_relaxed)
				 : 0;

	for (unsigned k = 0; k < l->sync_arrays; k++) {
		struct sync_array *a = sync_array_get((start + k) % l->sync_arrays);
		if (!a)
			continue;
		struct sync_cell *cell = NULL;
		pthread_mutex_lock(&a->m);
		for (unsigned i = 0; i < CELLS_PER_ARRAY; i++) {
			if (!a->cells[i].wait_object) {
				cell = &a->cells[i];
				cell->wait_object = l;
				cell->waiting = 0;
				a->n_reserved++;
				break;
			}
		}
		pthread_mutex_unlock(&a->m);
		if (cell) {
			/* As InnoDB: reset outside the array mutex; only we use this cell. */
			cell->signal_count = event_reset(event_of(l));
			cell->thread = pthread_self();
			cell->reserved_ns = ll_now_ns();
			*arr_out = a;
			return cell;
		}
	}
	return NULL;
}

static void free_cell(struct sync_array *a, struct sync_cell *cell)
{
	pthread_mutex_lock(&a->m);
	cell->wait_object = NULL;
	cell->waiting = 0;
	a->n_reserved--;
	pthread_mutex_unlock(&a->m);
}

/* sync_array_wait_event(): mark the cell waiting, sleep, free the cell. */
static int wait_in_cell(ll_innodb56_t *l, struct sync_array *a, struct sync_cell *cell,
			const struct timespec *abs_mono)
{
	pthread_mutex_lock(&a->m);
	cell->waiting = 1;
	pthread_mutex_unlock(&a->m);
	int rc = event_wait(event_of(l), cell->signal_count, abs_mono);
	free_cell(a, cell);
	return rc;
}

/* ut_delay(): `units` x pause_multiplier spin waits. */
static void ut_delay(const ll_innodb56_t *l, uint32_t units)
{
	uint32_t n = units * l->pause_multiplier;
	for (uint32_t i = 0; i < n; i++)
		ll_spin_wait(l->spin);
}

int ll_innodb56_init(ll_innodb56_t *l, const struct ll_innodb56_config *cfg)
{
	struct ll_innodb56_config def;
	cfg = LL_CONFIG_OR_DEFAULTS(innodb56, cfg, def);
	atomic_init(&l->lock_word, 0);
	atomic_init(&l->waiters, 0);
	l->spin_loops = (uint32_t)cfg->sync_spin_loops;
	l->spin_wait_delay = (uint32_t)cfg->spin_wait_delay;
	l->pause_multiplier = (uint32_t)cfg->pause_multiplier;
	l->sync_arrays = (uint16_t)cfg->sync_array_size;
	l->spin = (uint8_t)cfg->spin;
	return 0;
}

/* The lock's event is the table's: nothing of the lock's to free. */
void ll_innodb56_destroy(ll_innodb56_t *l)
{
	(void)l;
}

void ll_innodb56_signal(ll_innodb56_t *l)
{
	atomic_store_explicit(&l->waiters, 0, memory_order_seq_cst);
	event_set(event_of(l));
}

/* The spin phase of mutex_spin_wait(): 0 when the word was taken. */
static int spin_phase(ll_innodb56_t *l, const struct timespec *abs_mono)
{
	uint32_t i = 0;

	for (;;) {
		while (atomic_load_explicit(&l->lock_word, memory_order_relaxed) && i < l->spin_loops) {
			/* ut_rnd_interval(0, d) in 5.6 is low + rnd % (high - low): 0..d-1. */
			if (l->spin_wait_delay)
				ut_delay(l, ll_rand32() % l->spin_wait_delay);
			i++;
		}
		if (i >= l->spin_loops)
			sched_yield();
		if (ll_innodb56_trylock(l) == 0)
			return 0;
		if (abs_mono && ll_deadline_passed(abs_mono))
			return ETIMEDOUT;
		if (++i >= l->spin_loops)
			return EBUSY;
	}
}

int ll_innodb56_lock_slow(ll_innodb56_t *l, const struct timespec *abs_mono)
{
	for (;;) {
		int rc = spin_phase(l, abs_mono);
		if (rc != EBUSY)
			return rc;

		struct sync_array *a;
		struct sync_cell *cell = reserve_cell(l, &a);
		if (!cell) {
			/* Every cell taken (InnoDB would abort): let the holders run. */
			sched_yield();
			continue;
		}
		/* seq_cst: our flag is visible before the TASs below read the word. */
		atomic_store_explicit(&l->waiters, 1, memory_order_seq_cst);
		for (int k = 0; k < 4; k++) {
			if (ll_innodb56_trylock(l) == 0) {
				free_cell(a, cell);
				return 0;
			}
		}
		if (wait_in_cell(l, a, cell, abs_mono) == ETIMEDOUT)
			return ll_innodb56_trylock(l) ? ETIMEDOUT : 0;
	}
}

static const struct ll_knob knobs[] = {
	LL_KNOB_INT(struct ll_innodb56_config, sync_spin_loops, 30, 0, 100000000,
		    "spin rounds before the sync array (innodb_sync_spin_loops)"),
	LL_KNOB_INT(struct ll_innodb56_config, spin_wait_delay, 6, 0, 1000000,
		    "max random delay units per round (innodb_spin_wait_delay)"),
	LL_KNOB_INT(struct ll_innodb56_config, pause_multiplier, 50, 0, 1000000,
		    "spin waits per delay unit (50, fixed in 5.6; 8.0's innodb_spin_wait_pause_multiplier)"),
	LL_KNOB_INT(struct ll_innodb56_config, sync_array_size, 1, 1, MAX_SYNC_ARRAYS,
		    "sync arrays waiters spread over (innodb_sync_array_size)"),
	LL_KNOB_SPIN(struct ll_innodb56_config),
};

LL_OPS_ADAPTERS(innodb56, ll_innodb56_t)

const struct ll_lock_ops ll_innodb56_ops = {
	.name = "innodb56",
	.summary = "InnoDB 5.6 mutex: TAS, random ut_delay spin, sync array, broadcast on unlock",
	.flags = LL_ALGO_PARKS,
	.knobs = knobs, .nknobs = LL_COUNT(knobs),
	.config_size = sizeof(struct ll_innodb56_config),
	LL_OPS_FUNCS(innodb56, ll_innodb56_t),
};
