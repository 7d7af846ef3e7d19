/*
 * timed.c: test_locks timed ALGO, timedlock times out, succeeds on release, and
 * keeps its deadline at the edges of struct timespec.
 */
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "suite.h"

/* Hold until main has seen its waits time out (step 2), then a while longer. */
static void *hold_then_release(void *p)
{
	long hold_ms = *(long *)p;
	ll_mutex_lock(&shared_lock);
	atomic_store(&step, 1);
	wait_step(2);
	struct timespec ts = { .tv_sec = hold_ms / 1000, .tv_nsec = (hold_ms % 1000) * 1000000 };
	while (nanosleep(&ts, &ts))
		;
	ll_mutex_unlock(&shared_lock);
	return NULL;
}

/*
 * Deadlines at the edges of struct timespec.  A holder thread keeps the lock
 * until `hold_ms` have passed or the waiter is done, then sets `released`
 * and unlocks: a wait that returns 0 with `released` still 0 took a lock
 * that was held, one that returns ETIMEDOUT with `released` set gave up a
 * free lock, and a timeout after `released` waited for a deadline long past.
 */
struct edge_hold {
	long hold_ms;
	atomic_int held, done, released;
};

static void *edge_holder(void *p)
{
	struct edge_hold *h = p;
	ll_mutex_lock(&shared_lock);
	atomic_store(&h->held, 1);
	uint64_t until = ll_now_ns() + (uint64_t)h->hold_ms * 1000000u;
	const struct timespec tick = { .tv_nsec = 1000000 };
	while (!atomic_load(&h->done) && ll_now_ns() < until)
		nanosleep(&tick, NULL);
	atomic_store(&h->released, 1);
	ll_mutex_unlock(&shared_lock);
	return NULL;
}

/* Hold the lock in another thread for at most hold_ms; the waiter's rc, *waited_ms, *released. */
static int edge_wait(const struct timespec *dl, int64_t rel_ns, long hold_ms, double *waited_ms,
		     int *released)
{
	struct edge_hold h = { .hold_ms = hold_ms };
	pthread_t t;

	pthread_create(&t, NULL, edge_holder, &h);
	while (!atomic_load(&h.held))
		sched_yield();
	uint64_t t0 = ll_now_ns();
	int rc = dl ? ll_mutex_timedlock(&shared_lock, dl)
		    : ll_mutex_timedlock_ns(&shared_lock, rel_ns);
	*waited_ms = (double)(ll_now_ns() - t0) / 1e6;
	*released = atomic_load(&h.released);
	atomic_store(&h.done, 1);
	if (rc == 0)
		ll_mutex_unlock(&shared_lock);
	pthread_join(t, NULL);
	return rc;
}

static void check_edge_deadlines(void)
{
	/* Signed time_t (POSIX leaves it open; Linux's is): its extremes. */
	const time_t tmax = (time_t)(((uint64_t)1 << (sizeof(time_t) * 8 - 1)) - 1);
	const time_t tmin = -tmax - 1;
	/* UINT64_MAX ns is 18446744073.709551615 s: the seconds around the wrap of a u64 of ns. */
	const int64_t far_sec[] = { INT64_C(18446744073), INT64_C(18446744074), INT64_C(1) << 61,
				    INT64_C(1) << 62, INT64_MAX };
	const long far_nsec[] = { 0, 709551615, 709551616, 999999999 };
	const int64_t past_sec[] = { 0, -1, -(INT64_C(1) << 62), INT64_MIN };
	const long past_nsec[] = { 0, 999999999 };
	const long hold_ms = 30, cap_ms = 3000;
	double waited, slowest = 0;
	int released, rc, n_far = 0;

	for (size_t i = 0; i < LL_COUNT(far_sec); i++) {
		/* A value time_t cannot hold is left out; INT64_MAX stands for tmax. */
		time_t sec = far_sec[i] == INT64_MAX ? tmax : (time_t)far_sec[i];
		if ((int64_t)sec != far_sec[i] && far_sec[i] != INT64_MAX)
			continue;
		for (size_t j = 0; j < LL_COUNT(far_nsec); j++) {
			/* The u64 wrap only matters at its own second. */
			if ((far_nsec[j] == 709551615 || far_nsec[j] == 709551616) &&
			    far_sec[i] != INT64_C(18446744073))
				continue;
			struct timespec dl = { .tv_sec = sec, .tv_nsec = far_nsec[j] };
			CHECK(ll_mutex_timedlock(&shared_lock, &dl) == 0,
			      "%s: free lock not taken with deadline %lld.%09ld", algo, (long long)sec,
			      far_nsec[j]);
			ll_mutex_unlock(&shared_lock);
			rc = edge_wait(&dl, 0, hold_ms, &waited, &released);
			CHECK(rc == 0 && released, "%s: deadline %lld.%09ld (far future): timedlock "
			      "returned %d after %.3f ms, the holder %s", algo, (long long)sec,
			      far_nsec[j], rc, waited, released ? "had released" : "still held it");
			n_far++;
		}
	}
	/* The relative form's largest wait: now + INT64_MAX ns. */
	rc = edge_wait(NULL, INT64_MAX, hold_ms, &waited, &released);
	CHECK(rc == 0 && released, "%s: timedlock_ns(INT64_MAX) returned %d after %.3f ms, the "
	      "holder %s", algo, rc, waited, released ? "had released" : "still held it");

	for (size_t i = 0; i < LL_COUNT(past_sec); i++) {
		time_t sec = past_sec[i] == INT64_MIN ? tmin : (time_t)past_sec[i];
		if ((int64_t)sec != past_sec[i] && past_sec[i] != INT64_MIN)
			continue;
		for (size_t j = 0; j < LL_COUNT(past_nsec); j++) {
			struct timespec dl = { .tv_sec = sec, .tv_nsec = past_nsec[j] };
			CHECK(ll_mutex_timedlock(&shared_lock, &dl) == 0,
			      "%s: free lock not taken with deadline %lld.%09ld", algo, (long long)sec,
			      past_nsec[j]);
			ll_mutex_unlock(&shared_lock);
			rc = edge_wait(&dl, 0, cap_ms, &waited, &released);
			CHECK(rc == ETIMEDOUT && !released, "%s: deadline %lld.%09ld (past): timedlock "
			      "returned %d after %.3f ms, the holder %s", algo, (long long)sec,
			      past_nsec[j], rc, waited, released ? "had released" : "still held it");
			if (waited > slowest)
				slowest = waited;
		}
	}
	/* Negative relative waits mean now. */
	rc = edge_wait(NULL, INT64_MIN, cap_ms, &waited, &released);
	CHECK(rc == ETIMEDOUT && !released, "%s: timedlock_ns(INT64_MIN) returned %d after %.3f ms",
	      algo, rc, waited);

	/* No time at all, whatever the seconds. */
	const long bad_nsec[] = { -1, 1000000000L, LONG_MIN, LONG_MAX };
	for (size_t j = 0; j < LL_COUNT(bad_nsec); j++) {
		struct timespec dl = { .tv_sec = tmax, .tv_nsec = bad_nsec[j] };
		CHECK(ll_mutex_timedlock(&shared_lock, &dl) == EINVAL, "%s: tv_nsec %ld accepted",
		      algo, bad_nsec[j]);
	}
	printf("timed %s: %d far deadlines waited for the release, past ones timed out in "
	       "%.3f ms at most\n", algo, n_far + 1, slowest);
}

int test_timed(void)
{
	const int64_t ms = 1000000;
	pthread_t t;
	long hold_ms = 100;

	init_lock(&shared_lock, algo, NULL);

	/* A free lock is taken even when the deadline has passed. */
	struct timespec past = ll_deadline_after_ns(0);
	CHECK(ll_mutex_timedlock(&shared_lock, &past) == 0, "%s: timedlock of a free lock failed",
	      algo);
	ll_mutex_unlock(&shared_lock);

	atomic_store(&step, 0);
	pthread_create(&t, NULL, hold_then_release, &hold_ms);
	wait_step(1);

	/* Held until step 2: a 50 ms wait must time out, not before its deadline. */
	uint64_t t0 = ll_now_ns();
	struct timespec dl = ll_deadline_after_ns(50 * ms);
	int rc = ll_mutex_timedlock(&shared_lock, &dl);
	uint64_t waited = ll_now_ns() - t0;
	CHECK(rc == ETIMEDOUT, "%s: timedlock on a held lock returned %d", algo, rc);
	CHECK(ll_now_ns() >= ll_timespec_ns(&dl), "%s: timed out %.3f ms before the deadline", algo,
	      (double)(ll_timespec_ns(&dl) - ll_now_ns()) / 1e6);
	CHECK(waited < (uint64_t)(50 + 1000) * ms, "%s: 50 ms timeout took %.1f ms", algo,
	      (double)waited / 1e6);

	/* A deadline that is no time is refused, not waited on. */
	struct timespec bad = ll_deadline_after_ns(50 * ms);
	bad.tv_nsec = 1000000000L;
	CHECK(ll_mutex_timedlock(&shared_lock, &bad) == EINVAL, "%s: tv_nsec 1e9 accepted", algo);

	/* Relative form, still held. */
	rc = ll_mutex_timedlock_ns(&shared_lock, 10 * ms);
	CHECK(rc == ETIMEDOUT, "%s: timedlock_ns on a held lock returned %d", algo, rc);

	/* Released ~100 ms from now: a 20 s deadline must succeed soon after. */
	atomic_store(&step, 2);
	t0 = ll_now_ns();
	rc = ll_mutex_timedlock_ns(&shared_lock, 20000 * ms);
	waited = ll_now_ns() - t0;
	CHECK(rc == 0, "%s: timedlock returned %d though the holder released", algo, rc);
	CHECK(waited < 10000 * ms, "%s: acquired only %.1f ms after the wait began", algo,
	      (double)waited / 1e6);
	ll_mutex_unlock(&shared_lock);
	pthread_join(t, NULL);
	check_edge_deadlines();
	ll_mutex_destroy(&shared_lock);
	printf("timed %s: timeout at 50 ms took %.1f ms; acquisition after release ok\n", algo,
	       (double)waited / 1e6);
	return 0;
}
