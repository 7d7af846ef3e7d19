/*
 * locklab.h: mutexes whose algorithm is chosen per lock at run time.
 *
 *	ll_mutex_t m;
 *	struct ll_error err;
 *	if (ll_mutex_init(&m, "innodb56", "sync_spin_loops=60", &err))
 *		fprintf(stderr, "%s\n", err.msg);
 *	ll_mutex_lock(&m); ... ll_mutex_unlock(&m);
 *	ll_mutex_destroy(&m);
 *
 * The algorithm's state lives inside the ll_mutex_t (no allocation; innodb56
 * allocates its event like InnoDB's os_event_create).  Code that fixes the
 * algorithm can use the direct types instead (locklab/locks/futex.h, ttas.h,
 * ...), whose uncontended paths inline.  locklab/monitor.h: statistics, names,
 * waiters, dumps and a watchdog for these locks.  locklab/rwlock.h: the
 * read-write locks, chosen the same way (ll_rwlock_t).
 *
 * The contract of every entry point of locklab.h, rwlock.h, gate.h,
 * monitor.h and ops.h (tests/c/contract/ calls each one so, for every
 * registered algorithm):
 *
 *   - A struct ll_error * may be NULL: nothing is written then.
 *   - NULL where a call documents a meaning for it: a default (an algorithm
 *     name, options, a config, a dump path) or nothing to do (destroy).
 *   - Any other NULL pointer given to a call that returns an error code is
 *     EINVAL (init of no lock or with no ops table, a NULL deadline, a NULL
 *     output struct); a lookup returns NULL or 0.
 *   - The lock calls take their lock as given: a NULL, never initialised or
 *     freed lock, mutex or gate handle is undefined behaviour (as for
 *     pthread_mutex_lock): a test there would cost every acquisition.
 *   - destroy of NULL, twice, or of a lock never initialised whose memory is
 *     zeroed (static storage, memset) does nothing.  A lock whose init
 *     failed is as destroyed.  On a destroyed mutex, trylock and timedlock
 *     are EINVAL, unlock does nothing, and lock (no way to say so) writes a
 *     line to stderr and aborts; the monitor's calls are ENOENT.  On a
 *     destroyed rwlock, every call is EINVAL (rwlock.h).  init again makes
 *     a destroyed lock new.
 *   - Unlocking a mutex the calling thread does not hold is undefined, as
 *     for POSIX's default mutex: unlock returns nothing, and telling would
 *     cost every unlock.  Every algorithm of the library leaves a lock that
 *     nobody holds free and usable when it is unlocked once more (a double
 *     unlock, or an unlock of a lock never taken): its release is harmless
 *     on a free lock, or its slow path tells and repairs (ticket, mcs, ll;
 *     docs/locks.md).  rwlocks say EPERM instead (rwlock.h).
 */
#ifndef LOCKLAB_H
#define LOCKLAB_H

#include "locklab/bits/api.h"

#include <errno.h>
#include <stdalign.h>
#include <stdint.h>
#include <time.h>

#include "locklab/monitor.h"
#include "locklab/ops.h"
#include "locklab/rwlock.h"
#include "locklab/bits/spin.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The algorithm used when none is named. */
#define LL_DEFAULT_ALGO "ll"

typedef struct ll_mutex {
	/* First: every algorithm's lock word at offset 0 of a 64-byte line. */
	alignas(64) unsigned char state[LL_MUTEX_STATE_BYTES];
	/*
	 * Beside ops, on the line nobody writes after init but the rare
	 * monitor switch (locklab/monitor.h): the monitor record's address,
	 * LL_MON_ON set while statistics are counted, 0 without a record; and
	 * while they are, ops points to the record's copy of the algorithm's
	 * table, whose unlock counts the release.  Read both with
	 * ll_mutex_mon_word() and ll_mutex_ops().
	 */
	uintptr_t mon;
	const struct ll_lock_ops *ops;
} ll_mutex_t;

/*
 * algo: a name from ll_algo_at() or NULL for LL_DEFAULT_ALGO; opts: "k=v,..."
 * or NULL.  Returns 0, or EINVAL (unknown name, bad option, m or ops NULL) /
 * ENOMEM with a one-line message in *err when err is not NULL; a lock whose
 * init failed is as destroyed (above).  The init calls are macros
 * that record the caller's __FILE__/__LINE__ as the place the lock was
 * created; the functions of the same names take "unknown".
 */
LL_API int (ll_mutex_init)(ll_mutex_t *m, const char *algo, const char *opts, struct ll_error *err);
/* Same for any ops table (the library's or another's), options still as text. */
LL_API int (ll_mutex_init_opts)(ll_mutex_t *m, const struct ll_lock_ops *ops, const char *opts,
				struct ll_error *err);
/* Same with an already-parsed config struct (NULL: defaults). */
LL_API int (ll_mutex_init_config)(ll_mutex_t *m, const struct ll_lock_ops *ops, const void *config);
/* NULL, twice, zeroed: nothing to do (above). */
LL_API void ll_mutex_destroy(ll_mutex_t *m);

LL_API int ll_mutex_init_at(ll_mutex_t *m, const char *algo, const char *opts, struct ll_error *err,
			    const char *file, int line);
LL_API int ll_mutex_init_opts_at(ll_mutex_t *m, const struct ll_lock_ops *ops, const char *opts,
				 struct ll_error *err, const char *file, int line);
LL_API int ll_mutex_init_config_at(ll_mutex_t *m, const struct ll_lock_ops *ops, const void *config,
				   const char *file, int line);
#define ll_mutex_init(m, algo, opts, err) \
	ll_mutex_init_at((m), (algo), (opts), (err), __FILE__, __LINE__)
#define ll_mutex_init_opts(m, ops, opts, err) \
	ll_mutex_init_opts_at((m), (ops), (opts), (err), __FILE__, __LINE__)
#define ll_mutex_init_config(m, ops, config) \
	ll_mutex_init_config_at((m), (ops), (config), __FILE__, __LINE__)

/*
 * The lock calls.  With the monitor built in (LL_MONITOR,
 * locklab/bits/monitor_hooks.h) the acquiring calls test the LL_MON_ON bit of
 * m->mon, on the same line as m->ops, and go through the monitor only when it
 * is set; the macros pass the caller's file:line.  unlock tests nothing: a
 * monitored lock's ops is the monitor's copy, whose unlock counts.  With
 * LL_MONITOR=0 they are the bare ops calls.
 */
static inline const struct ll_lock_ops *ll_mutex_ops(const ll_mutex_t *m)
{
	return __atomic_load_n(&m->ops, __ATOMIC_RELAXED);
}

/* m->mon as the lock calls see it: always 0 with LL_MONITOR=0 (no load). */
static inline uintptr_t ll_mutex_mon_word(const ll_mutex_t *m)
{
#if LL_MONITOR
	return __atomic_load_n(&m->mon, __ATOMIC_RELAXED);
#else
	(void)m;
	return 0;
#endif
}
#define LL_MON_IS_ON(mon) __builtin_expect(((mon) & LL_MON_ON) != 0, 0)

/*
 * Monitored: the first try here, then an uncontended acquisition is counted
 * inline (ll_mon_acquired) and a contended one waits in the library.
 */
static inline void ll_mutex_lock_at(ll_mutex_t *m, const char *file, int line)
{
	uintptr_t mon = ll_mutex_mon_word(m);
	if (LL_MON_IS_ON(mon)) {
		if (ll_mutex_ops(m)->trylock(m->state) == 0)
			ll_mon_acquired(ll_mon_hot_of(mon), file, line);
		else
			ll_mon_wait(m, NULL, file, line);
	} else {
		ll_mutex_ops(m)->lock(m->state);
	}
}

static inline int ll_mutex_trylock_at(ll_mutex_t *m, const char *file, int line)
{
	uintptr_t mon = ll_mutex_mon_word(m);
	if (LL_MON_IS_ON(mon)) {
		int rc = ll_mutex_ops(m)->trylock(m->state);
		if (rc == 0)
			ll_mon_acquired(ll_mon_hot_of(mon), file, line);
		else
			ll_mon_trylock_failed(m);
		return rc;
	}
	return ll_mutex_ops(m)->trylock(m->state);
}

static inline void ll_mutex_unlock_at(ll_mutex_t *m)
{
	ll_mutex_ops(m)->unlock(m->state);
}

/* Wait until the CLOCK_MONOTONIC deadline; 0, ETIMEDOUT, or EINVAL for a
 * deadline that is no time (NULL, tv_nsec outside [0, 1e9)).  A free lock is
 * taken even when the deadline has passed (as POSIX timedlock does). */
static inline int ll_mutex_timedlock_at(ll_mutex_t *m, const struct timespec *abs_mono,
					const char *file, int line)
{
	if (!abs_mono || abs_mono->tv_nsec < 0 || abs_mono->tv_nsec >= 1000000000L)
		return EINVAL;
	uintptr_t mon = ll_mutex_mon_word(m);
	if (LL_MON_IS_ON(mon)) {
		/* A free lock is taken even past the deadline, as without the monitor. */
		if (ll_mutex_ops(m)->trylock(m->state) == 0) {
			ll_mon_acquired(ll_mon_hot_of(mon), file, line);
			return 0;
		}
		return ll_mon_wait(m, abs_mono, file, line);
	}
	return ll_mutex_ops(m)->timedlock(m->state, abs_mono);
}
/* Absolute CLOCK_MONOTONIC deadline rel_ns from now. */
LL_API struct timespec ll_deadline_after_ns(int64_t rel_ns);

/* Relative form: wait at most rel_ns nanoseconds. */
static inline int ll_mutex_timedlock_ns_at(ll_mutex_t *m, int64_t rel_ns, const char *file,
					   int line)
{
	struct timespec ts = ll_deadline_after_ns(rel_ns);
	return ll_mutex_timedlock_at(m, &ts, file, line);
}
LL_API int (ll_mutex_timedlock_ns)(ll_mutex_t *m, int64_t rel_ns);

#define ll_mutex_lock(m) ll_mutex_lock_at((m), __FILE__, __LINE__)
#define ll_mutex_trylock(m) ll_mutex_trylock_at((m), __FILE__, __LINE__)
#define ll_mutex_unlock(m) ll_mutex_unlock_at(m)
#define ll_mutex_timedlock(m, abs_mono) ll_mutex_timedlock_at((m), (abs_mono), __FILE__, __LINE__)
#define ll_mutex_timedlock_ns(m, rel_ns) ll_mutex_timedlock_ns_at((m), (rel_ns), __FILE__, __LINE__)

static inline const char *ll_mutex_algo(const ll_mutex_t *m) { return ll_mutex_ops(m)->name; }

#ifdef __cplusplus
}
#endif
#endif
