/*
 * algo.h: what an algorithm file needs besides its public header: the ops
 * table of every algorithm, and defaults for a NULL config.
 */
#ifndef LOCKLAB_ALGO_H
#define LOCKLAB_ALGO_H

#include "locklab/ops.h"

#define LL_ALGO(id, name) extern const struct ll_lock_ops ll_##id##_ops;
#include "algorithms.def"
#undef LL_ALGO

/* cfg itself, or `tmp` filled with the knob table's defaults when cfg is NULL. */
#define LL_CONFIG_OR_DEFAULTS(algo, cfg, tmp) \
	((cfg) ? (cfg) : (ll_config_defaults(&ll_##algo##_ops, &(tmp)), &(tmp)))

/*
 * pthread_mutex_clocklock(CLOCK_MONOTONIC), for every algorithm built on a
 * glibc mutex.  ThreadSanitizer does not intercept clocklock, so sanitized
 * builds convert the deadline to CLOCK_REALTIME for pthread_mutex_timedlock.
 */
#include <pthread.h>
int ll_pthread_mutex_clocklock(pthread_mutex_t *m, const struct timespec *abs_mono);

#endif
