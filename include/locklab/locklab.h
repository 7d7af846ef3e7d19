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
 * algorithm can use the direct types instead (locklab/futex.h, ttas.h, ...),
 * whose uncontended paths inline.
 */
#ifndef LOCKLAB_H
#define LOCKLAB_H

#include <errno.h>
#include <stdalign.h>
#include <stdint.h>
#include <time.h>

#include "locklab/ops.h"
#include "locklab/spin.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The algorithm used when none is named. */
#define LL_DEFAULT_ALGO "ll"

typedef struct ll_mutex {
	/* First: every algorithm's lock word at offset 0 of a 64-byte line. */
	alignas(64) unsigned char state[LL_MUTEX_STATE_BYTES];
	const struct ll_lock_ops *ops;
} ll_mutex_t;

/*
 * algo: a name from ll_algo_at() or NULL for LL_DEFAULT_ALGO; opts: "k=v,..."
 * or NULL.  Returns 0, or EINVAL (unknown name, bad option) / ENOMEM with a
 * one-line message in *err when err is not NULL.
 */
int ll_mutex_init(ll_mutex_t *m, const char *algo, const char *opts, struct ll_error *err);
/* Same for any ops table (the library's or another's), options still as text. */
int ll_mutex_init_opts(ll_mutex_t *m, const struct ll_lock_ops *ops, const char *opts,
		       struct ll_error *err);
/* Same with an already-parsed config struct (NULL: defaults). */
int ll_mutex_init_config(ll_mutex_t *m, const struct ll_lock_ops *ops, const void *config);
void ll_mutex_destroy(ll_mutex_t *m);

static inline void ll_mutex_lock(ll_mutex_t *m) { m->ops->lock(m->state); }
static inline int ll_mutex_trylock(ll_mutex_t *m) { return m->ops->trylock(m->state); }
static inline void ll_mutex_unlock(ll_mutex_t *m) { m->ops->unlock(m->state); }

/* Wait until the CLOCK_MONOTONIC deadline; 0, ETIMEDOUT, or EINVAL for a
 * deadline that is no time (tv_nsec outside [0, 1e9)).  A free lock is taken
 * even when the deadline has passed (as POSIX timedlock does). */
static inline int ll_mutex_timedlock(ll_mutex_t *m, const struct timespec *abs_mono)
{
	if (abs_mono->tv_nsec < 0 || abs_mono->tv_nsec >= 1000000000L)
		return EINVAL;
	return m->ops->timedlock(m->state, abs_mono);
}
/* Relative form: wait at most rel_ns nanoseconds. */
int ll_mutex_timedlock_ns(ll_mutex_t *m, int64_t rel_ns);

static inline const char *ll_mutex_algo(const ll_mutex_t *m) { return m->ops->name; }

/* Absolute CLOCK_MONOTONIC deadline rel_ns from now. */
struct timespec ll_deadline_after_ns(int64_t rel_ns);

#ifdef __cplusplus
}
#endif
#endif
