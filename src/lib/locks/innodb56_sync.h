/*
 * innodb56_sync.h: InnoDB 5.6's os_event, its sync arrays and ut_delay(),
 * shared by the two InnoDB 5.6 models: the mutex (innodb56.c) and rw_lock_t
 * (rwlocks/innodb56.c).  innodb56_sync.c explains the events and cells.
 *
 * A waiter reserves a cell for its wait object and the event it will sleep
 * on (the reservation resets the event and keeps its signal count), makes
 * its flag visible, looks at the lock word once more, then either frees the
 * cell or sleeps in it until a set that follows its reset.  An event is one
 * of a table shared by every InnoDB lock of the process, picked by hashing
 * an address the lock names it by (its key).
 */
#ifndef LOCKLAB_INNODB56_SYNC_H
#define LOCKLAB_INNODB56_SYNC_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "locklab/locks/innodb56.h"
#include "locklab/ops.h"

/*
 * The events (innodb56_sync.c): a table of 2^LL_IB_EVENT_BITS shared by every
 * InnoDB lock of the process (innodb56 and innodb56-rw); a lock's is picked
 * by a Fibonacci hash of an address (its key: the mutex's own, an
 * rw_lock_t's lock_word and waiters for its two events), so locks at
 * consecutive addresses get distinct events (test_locks innodb56-events).
 */
#define LL_IB_EVENT_BITS 10
static inline unsigned ll_ib_event_index(const void *key)
{
	return (unsigned)(((uint64_t)(uintptr_t)key * 0x9e3779b97f4a7c15ull) >>
			  (64 - LL_IB_EVENT_BITS));
}

struct ll_ib_event;
struct ll_ib_cell;
struct ll_ib_array;

/* The event an InnoDB lock calls `key`, made on its first use. */
struct ll_ib_event *ll_ib_event_of(const void *key);
/* os_event_set(): wakes every thread asleep on it (a broadcast). */
void ll_ib_event_set(struct ll_ib_event *e);

/*
 * sync_array_reserve_cell(): a free cell of one of s->sync_arrays arrays for
 * wait_object, with `e` reset and its signal count kept in the cell; NULL
 * when every cell is taken (InnoDB would abort), after a sched_yield() that
 * lets the holders run: the caller starts its wait over.  *arr: the cell's
 * array.
 */
struct ll_ib_cell *ll_ib_reserve_cell(const struct ll_innodb56_spin *s, const void *wait_object,
				      struct ll_ib_event *e, struct ll_ib_array **arr);
void ll_ib_free_cell(struct ll_ib_array *a, struct ll_ib_cell *cell);
/* sync_array_wait_event(): sleep until a set after the reservation, free the cell; 0 or ETIMEDOUT. */
int ll_ib_wait_in_cell(struct ll_ib_array *a, struct ll_ib_cell *cell,
		       const struct timespec *abs_mono);

/* One spin round's ut_delay(ut_rnd_interval(0, spin_wait_delay)), waits of sp (s->spin's). */
void ll_ib_spin_delay(const struct ll_innodb56_spin *s, struct ll_spinner *sp);

/* The knobs' values into the lock: LL_IB_SPIN_SET(&lock->s, cfg). */
void ll_ib_spin_set(struct ll_innodb56_spin *s, int64_t spin_loops, int64_t spin_wait_delay,
		    int64_t pause_multiplier, int64_t arrays, int64_t spin);
#define LL_IB_SPIN_SET(s, cfg)                                                         \
	ll_ib_spin_set((s), (cfg)->sync_spin_loops, (cfg)->spin_wait_delay,             \
		       (cfg)->pause_multiplier, (cfg)->sync_array_size, (cfg)->spin)

#define LL_IB_MAX_SYNC_ARRAYS 64

/*
 * The knobs of InnoDB's spin and sync array, in a config `type` with int64_t
 * fields of these names (struct ll_innodb56_config, ll_rw_innodb56_config).
 */
#define LL_IB_SPIN_KNOBS(type)                                                           \
	LL_KNOB_INT(type, sync_spin_loops, 30, 0, 100000000,                             \
		    "spin rounds before the sync array (innodb_sync_spin_loops)"),       \
	LL_KNOB_INT(type, spin_wait_delay, 6, 0, 1000000,                                \
		    "max random delay units per round (innodb_spin_wait_delay)"),        \
	LL_KNOB_INT(type, pause_multiplier, 50, 0, 1000000,                              \
		    "spin waits per delay unit (50, fixed in 5.6; 8.0's "                \
		    "innodb_spin_wait_pause_multiplier)"),                               \
	LL_KNOB_INT(type, sync_array_size, 1, 1, LL_IB_MAX_SYNC_ARRAYS,                  \
		    "sync arrays waiters spread over (innodb_sync_array_size)"),         \
	LL_KNOB_SPIN(type)

#endif
