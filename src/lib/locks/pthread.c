/*
 * pthread.c: glibc's default and adaptive mutexes behind the ops table.
 * Two algorithms of one file: they differ only in the mutex type.
 *
 * Lock word (glibc lll_lock): 0 free, 1 held, 2 held and someone may sleep;
 * unlock swaps in 0 and calls FUTEX_WAKE(1) when the old value was 2.  The
 * adaptive type spins with trylock first (bounded by an average of past
 * spins and glibc.pthread.mutex_spin_count), then does the same.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "locklab/locks/pthread.h"
#include "core/clock.h"
#include "locks/algo.h"

int ll_pthread_init(ll_pthread_t *l, const struct ll_pthread_config *cfg)
{
	pthread_mutexattr_t a;
	int rc = pthread_mutexattr_init(&a);
	if (rc)
		return rc;
	rc = pthread_mutexattr_settype(&a, cfg && cfg->adaptive ? PTHREAD_MUTEX_ADAPTIVE_NP
							       : PTHREAD_MUTEX_NORMAL);
	if (!rc)
		rc = pthread_mutex_init(&l->m, &a);
	pthread_mutexattr_destroy(&a);
	return rc;
}

#if defined(__SANITIZE_THREAD__)
int ll_pthread_mutex_clocklock(pthread_mutex_t *m, const struct timespec *abs_mono)
{
	struct timespec rt = ll_mono_to_realtime(abs_mono);
	return pthread_mutex_timedlock(m, &rt);
}
#else
int ll_pthread_mutex_clocklock(pthread_mutex_t *m, const struct timespec *abs_mono)
{
	return pthread_mutex_clocklock(m, CLOCK_MONOTONIC, abs_mono);
}
#endif

int ll_pthread_timedlock(ll_pthread_t *l, const struct timespec *abs_mono)
{
	return ll_pthread_mutex_clocklock(&l->m, abs_mono);
}

LL_OPS_ADAPTERS(pthread, ll_pthread_t)

/* LL_ALGO_GLIBC: the state is glibc's mutex, at its start. */
_Static_assert(offsetof(ll_pthread_t, m) == 0, "glibc's mutex starts the state");

const struct ll_lock_ops ll_pthread_ops = {
	.name = "pthread",
	.summary = "glibc default mutex: futex word, barging, no spin",
	.flags = LL_ALGO_PARKS | LL_ALGO_GLIBC | LL_ALGO_PREEMPT_SAFE,
	.config_size = sizeof(struct ll_pthread_config),
	LL_OPS_FUNCS(pthread, ll_pthread_t),
};

/* The adaptive type is the same lock with a different attribute at init. */
static int adaptive_init(void *s, const void *c)
{
	(void)c;
	struct ll_pthread_config cfg = { .adaptive = 1 };
	return ll_pthread_init(s, &cfg);
}

const struct ll_lock_ops ll_pthread_adaptive_ops = {
	.name = "pthread-adaptive",
	.summary = "glibc PTHREAD_MUTEX_ADAPTIVE_NP: bounded adaptive trylock spin, then futex",
	.flags = LL_ALGO_PARKS | LL_ALGO_GLIBC | LL_ALGO_PREEMPT_SAFE,
	.config_size = sizeof(struct ll_pthread_config),
	.state_size = sizeof(ll_pthread_t),
	.init = adaptive_init, .destroy = pthread_op_destroy, .lock = pthread_op_lock,
	.trylock = pthread_op_trylock, .timedlock = pthread_op_timedlock,
	.unlock = pthread_op_unlock,
};
