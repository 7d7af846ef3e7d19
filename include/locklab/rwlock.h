/*
 * rwlock.h: read-write locks whose algorithm is chosen per lock at run time.
 *
 *	ll_rwlock_t rw;
 *	struct ll_error err;
 *	if (ll_rwlock_init(&rw, "partitioned", "n=16", &err))
 *		fprintf(stderr, "%s\n", err.msg);
 *	ll_rwlock_rdlock(&rw); ... ll_rwlock_unlock(&rw);
 *	ll_rwlock_wrlock(&rw); ... ll_rwlock_unlock(&rw);
 *	ll_rwlock_destroy(&rw);
 *
 * One ops table (struct ll_rwlock_ops) for every rwlock algorithm, their own
 * registration list (src/lib/rwlocks/rwlocks.def), knobs parsed by the same
 * machinery as the mutexes' (locklab/ops.h).  A name may be both a mutex and
 * an rwlock (`pthread`, `ll`): the two tables are separate.  The direct types
 * (locklab/rwlocks/ll.h, pthread.h, partitioned.h, bravo.h, innodb56.h)
 * are usable without the table.  docs/rwlocks.md: each
 * lock's word, design and cost.
 *
 * The contract is locklab.h's (NULL arguments, destroy), with two
 * differences, since every rwlock call returns an error code: unlock of an
 * rwlock that nobody holds is EPERM, for every algorithm; and on a
 * destroyed rwlock (or one whose init failed) every call is EINVAL.
 * Unlocking an rwlock that other threads hold but the caller does not is
 * undefined, as for pthread_rwlock_unlock (EPERM where the algorithm can
 * tell: ll, innodb56-rw).
 */
#ifndef LOCKLAB_RWLOCK_H
#define LOCKLAB_RWLOCK_H

#include "locklab/bits/api.h"

#include <errno.h>
#include <stdalign.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "locklab/ops.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The rwlock used when none is named. */
#define LL_DEFAULT_RWLOCK "ll"

/* Bytes of algorithm state inside every ll_rwlock_t (128 less ops). */
#define LL_RWLOCK_STATE_BYTES 120

/*
 * Every entry point returns 0 or an errno value.  rdlock: EAGAIN when the
 * reader count would overflow.  try*: EBUSY.  timed*: ETIMEDOUT at the
 * CLOCK_MONOTONIC deadline (any tv_sec however far or negative; tv_nsec in
 * [0, 1e9), which the ll_rwlock_timed* calls check); a lock that is free is
 * taken even past the deadline.  unlock releases whichever side the calling
 * thread holds (as pthread_rwlock_unlock does); EPERM when nobody holds the
 * lock (an algorithm of one's own must say so too: the contract above).
 */
struct ll_rwlock_ops {
	const char *name;
	const char *summary;
	unsigned flags;                /* LL_ALGO_PARKS, ... (locklab/ops.h) */
	const struct ll_knob *knobs;
	size_t nknobs;
	size_t config_size;            /* <= LL_CONFIG_MAX * sizeof(int64_t) */
	size_t state_size;             /* <= LL_RWLOCK_STATE_BYTES */
	int  (*init)(void *state, const void *config);
	void (*destroy)(void *state);
	int  (*rdlock)(void *state);
	int  (*tryrdlock)(void *state);
	int  (*timedrdlock)(void *state, const struct timespec *abs_mono);
	int  (*wrlock)(void *state);
	int  (*trywrlock)(void *state);
	int  (*timedwrlock)(void *state, const struct timespec *abs_mono);
	int  (*unlock)(void *state);
};

/* The table of rwlocks (src/lib/rwlocks/rwlocks.def, in that order). */
LL_API size_t ll_rwlock_algo_count(void);
LL_API const struct ll_rwlock_ops *ll_rwlock_algo_at(size_t i);
/* NULL and err filled ("unknown rwlock 'x' (valid: ...)") when not found (or name is NULL). */
LL_API const struct ll_rwlock_ops *ll_rwlock_algo_find(const char *name, struct ll_error *err);
/* Every knob's default into config (LL_CONFIG_MAX int64_t fields at most); NULL: nothing. */
LL_API void ll_rwlock_config_defaults(const struct ll_rwlock_ops *ops, void *config);
/* "k=v,k=v" on top of config: 0 or EINVAL with err set ("option 'n' of rwlock ...";
 * ops or config NULL). */
LL_API int ll_rwlock_config_parse(const struct ll_rwlock_ops *ops, const char *opts, void *config,
				  struct ll_error *err);

typedef struct ll_rwlock {
	alignas(64) unsigned char state[LL_RWLOCK_STATE_BYTES];
	const struct ll_rwlock_ops *ops;
} ll_rwlock_t;

/*
 * algo: a name of ll_rwlock_algo_at() or NULL for LL_DEFAULT_RWLOCK; opts
 * "k=v,..." or NULL.  0, or EINVAL (unknown name, bad option, an ops table
 * whose state or config does not fit, rw or ops NULL) / the algorithm's init
 * error, with a one-line message in *err when err is not NULL.
 */
LL_API int ll_rwlock_init(ll_rwlock_t *rw, const char *algo, const char *opts,
			  struct ll_error *err);
/* Same for any ops table (the library's or a caller's own). */
LL_API int ll_rwlock_init_opts(ll_rwlock_t *rw, const struct ll_rwlock_ops *ops, const char *opts,
			       struct ll_error *err);
/* Same with a parsed config (NULL: defaults). */
LL_API int ll_rwlock_init_config(ll_rwlock_t *rw, const struct ll_rwlock_ops *ops,
				 const void *config);
/* NULL, twice, zeroed: nothing to do (locklab.h). */
LL_API void ll_rwlock_destroy(ll_rwlock_t *rw);

static inline int ll_rwlock_rdlock(ll_rwlock_t *rw) { return rw->ops->rdlock(rw->state); }
static inline int ll_rwlock_tryrdlock(ll_rwlock_t *rw) { return rw->ops->tryrdlock(rw->state); }
static inline int ll_rwlock_wrlock(ll_rwlock_t *rw) { return rw->ops->wrlock(rw->state); }
static inline int ll_rwlock_trywrlock(ll_rwlock_t *rw) { return rw->ops->trywrlock(rw->state); }
static inline int ll_rwlock_unlock(ll_rwlock_t *rw) { return rw->ops->unlock(rw->state); }

/* CLOCK_MONOTONIC deadlines: 0, ETIMEDOUT, or EINVAL for NULL or tv_nsec outside [0, 1e9). */
static inline int ll_rwlock_timedrdlock(ll_rwlock_t *rw, const struct timespec *abs_mono)
{
	if (!abs_mono || abs_mono->tv_nsec < 0 || abs_mono->tv_nsec >= 1000000000L)
		return EINVAL;
	return rw->ops->timedrdlock(rw->state, abs_mono);
}

static inline int ll_rwlock_timedwrlock(ll_rwlock_t *rw, const struct timespec *abs_mono)
{
	if (!abs_mono || abs_mono->tv_nsec < 0 || abs_mono->tv_nsec >= 1000000000L)
		return EINVAL;
	return rw->ops->timedwrlock(rw->state, abs_mono);
}

/*
 * A deadline on clock clk (CLOCK_MONOTONIC or CLOCK_REALTIME; an int so that
 * strict ISO C sees no clockid_t) as a CLOCK_MONOTONIC one, what every
 * algorithm waits on: 0, or EINVAL for another clock, a NULL pointer (no
 * deadline, or nowhere to put it) or a tv_nsec outside [0, 1e9).  A realtime
 * deadline is converted once, from the time left now, saturated on the
 * nanosecond scale of ll_timespec_ns: a far one stays far, a past one stays
 * past.  A later step of the realtime clock does not move it.
 */
LL_API int ll_clock_to_mono(int clk, const struct timespec *abs, struct timespec *abs_mono);

/* pthread_rwlock_clock{rd,wr}lock's form: the deadline on clk. */
LL_API int ll_rwlock_clockrdlock(ll_rwlock_t *rw, int clk, const struct timespec *abs);
LL_API int ll_rwlock_clockwrlock(ll_rwlock_t *rw, int clk, const struct timespec *abs);
/* Relative forms: wait at most rel_ns nanoseconds (<= 0: do not wait). */
LL_API int ll_rwlock_timedrdlock_ns(ll_rwlock_t *rw, int64_t rel_ns);
LL_API int ll_rwlock_timedwrlock_ns(ll_rwlock_t *rw, int64_t rel_ns);

static inline const char *ll_rwlock_algo(const ll_rwlock_t *rw) { return rw->ops->name; }

/*
 * The ops table's void * entry points from an algorithm's direct functions
 * ll_rw_<algo>_{init,destroy,rdlock,tryrdlock,timedrdlock,wrlock,trywrlock,
 * timedwrlock,unlock}(type *, ...): LL_RWLOCK_ADAPTERS once in the
 * algorithm's file, LL_RWLOCK_FUNCS in its struct ll_rwlock_ops initialiser.
 */
#define LL_RWLOCK_ADAPTERS(algo, type)                                                         \
	static int rw_##algo##_op_init(void *s, const void *c)                                  \
	{ return ll_rw_##algo##_init((type *)s, c); }                                           \
	static void rw_##algo##_op_destroy(void *s) { ll_rw_##algo##_destroy((type *)s); }      \
	static int rw_##algo##_op_rdlock(void *s) { return ll_rw_##algo##_rdlock((type *)s); } \
	static int rw_##algo##_op_tryrdlock(void *s) { return ll_rw_##algo##_tryrdlock((type *)s); } \
	static int rw_##algo##_op_timedrdlock(void *s, const struct timespec *t)                \
	{ return ll_rw_##algo##_timedrdlock((type *)s, t); }                                    \
	static int rw_##algo##_op_wrlock(void *s) { return ll_rw_##algo##_wrlock((type *)s); } \
	static int rw_##algo##_op_trywrlock(void *s) { return ll_rw_##algo##_trywrlock((type *)s); } \
	static int rw_##algo##_op_timedwrlock(void *s, const struct timespec *t)                \
	{ return ll_rw_##algo##_timedwrlock((type *)s, t); }                                    \
	static int rw_##algo##_op_unlock(void *s) { return ll_rw_##algo##_unlock((type *)s); }
#define LL_RWLOCK_FUNCS(algo, type)                                                       \
	.state_size = sizeof(type), .init = rw_##algo##_op_init,                          \
	.destroy = rw_##algo##_op_destroy, .rdlock = rw_##algo##_op_rdlock,               \
	.tryrdlock = rw_##algo##_op_tryrdlock, .timedrdlock = rw_##algo##_op_timedrdlock, \
	.wrlock = rw_##algo##_op_wrlock, .trywrlock = rw_##algo##_op_trywrlock,           \
	.timedwrlock = rw_##algo##_op_timedwrlock, .unlock = rw_##algo##_op_unlock

#ifdef __cplusplus
}
#endif
#endif
