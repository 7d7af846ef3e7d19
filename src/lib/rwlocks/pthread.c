/*
 * pthread.c: glibc's pthread_rwlock_t behind the rwlock ops table (word
 * drawn in locklab/rwlocks/pthread.h); the preference is a knob.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "locklab/rwlocks/pthread.h"
#include "core/clock.h"
#include "rwlocks/rwalgo.h"

int ll_rw_pthread_init(ll_rw_pthread_t *l, const struct ll_rw_pthread_config *cfg)
{
	pthread_rwlockattr_t a;
	int rc = pthread_rwlockattr_init(&a);
	if (rc)
		return rc;
	rc = pthread_rwlockattr_setkind_np(&a, cfg && cfg->prefer == LL_RW_PREFER_WRITER_NONRECURSIVE
						       ? PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP
						       : PTHREAD_RWLOCK_PREFER_READER_NP);
	if (!rc)
		rc = pthread_rwlock_init(&l->rw, &a);
	pthread_rwlockattr_destroy(&a);
	return rc;
}

/*
 * ThreadSanitizer intercepts no pthread_rwlock_clock*lock: sanitized builds
 * wait on the realtime clock for the same time left.
 */
#if defined(__SANITIZE_THREAD__)
int ll_rw_pthread_timedrdlock(ll_rw_pthread_t *l, const struct timespec *abs_mono)
{
	struct timespec rt = ll_mono_to_realtime(abs_mono);
	return pthread_rwlock_timedrdlock(&l->rw, &rt);
}

int ll_rw_pthread_timedwrlock(ll_rw_pthread_t *l, const struct timespec *abs_mono)
{
	struct timespec rt = ll_mono_to_realtime(abs_mono);
	return pthread_rwlock_timedwrlock(&l->rw, &rt);
}
#else
int ll_rw_pthread_timedrdlock(ll_rw_pthread_t *l, const struct timespec *abs_mono)
{
	return pthread_rwlock_clockrdlock(&l->rw, CLOCK_MONOTONIC, abs_mono);
}

int ll_rw_pthread_timedwrlock(ll_rw_pthread_t *l, const struct timespec *abs_mono)
{
	return pthread_rwlock_clockwrlock(&l->rw, CLOCK_MONOTONIC, abs_mono);
}
#endif

const char *const ll_rw_prefer_names[] = { "reader", "writer-nonrecursive", NULL };

static const struct ll_knob knobs[] = {
	LL_RW_KNOB_PREFER(struct ll_rw_pthread_config,
			  "reader (glibc's default: readers may starve writers) or "
			  "writer-nonrecursive (new readers wait behind a waiting writer)"),
};

LL_RWLOCK_ADAPTERS(pthread, ll_rw_pthread_t)

/* LL_ALGO_GLIBC: the state is glibc's rwlock, at its start. */
_Static_assert(offsetof(ll_rw_pthread_t, rw) == 0, "glibc's rwlock starts the state");

const struct ll_rwlock_ops ll_rw_pthread_ops = {
	.name = "pthread",
	.summary = "glibc pthread_rwlock_t: one reader-count word, futex queues",
	.flags = LL_ALGO_PARKS | LL_ALGO_GLIBC | LL_ALGO_PREEMPT_SAFE,
	.knobs = knobs, .nknobs = LL_COUNT(knobs),
	.config_size = sizeof(struct ll_rw_pthread_config),
	LL_RWLOCK_FUNCS(pthread, ll_rw_pthread_t),
};
