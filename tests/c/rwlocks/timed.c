/*
 * timed.c: test_rwlocks timed ALGO, timed read and write waits, every
 * representable deadline, both clocks.
 */
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "suite.h"

enum side { RD, WR };
static const char *const side_name[] = { "rdlock", "wrlock" };

/* How the waiter waits: the monotonic deadline, the realtime one, or rel_ns from now. */
enum how { MONO, REAL, REL };

static int timed_call(enum side s, enum how how, const struct timespec *dl, int64_t rel_ns)
{
	switch (how) {
	case MONO:
		return s == RD ? ll_rwlock_timedrdlock(&shared, dl) : ll_rwlock_timedwrlock(&shared, dl);
	case REAL:
		return s == RD ? ll_rwlock_clockrdlock(&shared, CLOCK_REALTIME, dl)
			       : ll_rwlock_clockwrlock(&shared, CLOCK_REALTIME, dl);
	default:
		return s == RD ? ll_rwlock_timedrdlock_ns(&shared, rel_ns)
			       : ll_rwlock_timedwrlock_ns(&shared, rel_ns);
	}
}

/*
 * A holder keeps `shared` for writing (or reading) until hold_ms have passed
 * or the waiter is done, then sets `released` and unlocks: a wait that
 * returns 0 with `released` still 0 took a lock that was held, one that
 * returns ETIMEDOUT with `released` set waited for a deadline long past.
 */
struct edge_hold {
	long hold_ms;
	enum side side;
	atomic_int held, done, released;
};

static void *edge_holder(void *p)
{
	struct edge_hold *h = p;
	CHECK((h->side == WR ? ll_rwlock_wrlock(&shared) : ll_rwlock_rdlock(&shared)) == 0, "hold");
	atomic_store(&h->held, 1);
	uint64_t until = ll_now_ns() + (uint64_t)h->hold_ms * 1000000u;
	while (!atomic_load(&h->done) && ll_now_ns() < until)
		sleep_ms(1);
	atomic_store(&h->released, 1);
	ll_rwlock_unlock(&shared);
	return NULL;
}

/* The waiter's rc against a holder of side `held` for at most hold_ms; *waited_ms, *released. */
static int edge_wait(enum side held, enum side s, enum how how, const struct timespec *dl,
		     int64_t rel_ns, long hold_ms, double *waited_ms, int *released)
{
	struct edge_hold h = { .hold_ms = hold_ms, .side = held };
	pthread_t t;

	pthread_create(&t, NULL, edge_holder, &h);
	while (!atomic_load(&h.held))
		sched_yield();
	uint64_t t0 = ll_now_ns();
	int rc = timed_call(s, how, dl, rel_ns);
	*waited_ms = (double)(ll_now_ns() - t0) / 1e6;
	*released = atomic_load(&h.released);
	atomic_store(&h.done, 1);
	if (rc == 0)
		ll_rwlock_unlock(&shared);
	pthread_join(t, NULL);
	return rc;
}

/* A free lock is taken whatever the deadline. */
static void check_free_taken(enum side s, enum how how, const struct timespec *dl)
{
	int rc = timed_call(s, how, dl, 0);
	CHECK(rc == 0, "%s: timed %s of a free lock with deadline %lld.%09ld returned %d", algo,
	      side_name[s], (long long)dl->tv_sec, dl->tv_nsec, rc);
	ll_rwlock_unlock(&shared);
}

static int n_far, n_past;
static double slowest_past;

/*
 * A deadline in the far future (far) waits for the writer's release and
 * takes the lock; one in the past times out at once, the writer still in.
 */
static void check_deadline(enum side s, enum how how, const struct timespec *dl, int64_t rel_ns,
			   int far)
{
	double waited;
	int released;
	if (how != REL)
		check_free_taken(s, how, dl);
	/* A writer holds it: a reader and a writer both wait. */
	int rc = edge_wait(WR, s, how, dl, rel_ns, far ? 30 : 3000, &waited, &released);
	CHECK(far ? rc == 0 && released : rc == ETIMEDOUT && !released,
	      "%s: %s with deadline %lld.%09ld%s (%s): returned %d after %.3f ms, the writer %s",
	      algo, side_name[s], dl ? (long long)dl->tv_sec : 0, dl ? dl->tv_nsec : 0,
	      how == REAL ? " realtime" : how == REL ? " relative" : "", far ? "far future" : "past",
	      rc, waited, released ? "had released" : "still held it");
	if (far) {
		n_far++;
	} else {
		if (waited > slowest_past)
			slowest_past = waited;
		n_past++;
	}
}

static void check_edge_deadlines(enum side s)
{
	/* Signed time_t (Linux's): its extremes. */
	const time_t tmax = (time_t)(((uint64_t)1 << (sizeof(time_t) * 8 - 1)) - 1);
	const time_t tmin = -tmax - 1;
	/* UINT64_MAX ns is 18446744073.709551615 s: the seconds around the wrap of a u64 of ns. */
	const int64_t far_sec[] = { INT64_C(18446744073), INT64_C(18446744074), INT64_C(1) << 62,
				    INT64_MAX };
	const long far_nsec[] = { 0, 709551616, 999999999 };
	const int64_t past_sec[] = { 0, -1, INT64_MIN };
	const long past_nsec[] = { 0, 999999999 };

	for (size_t i = 0; i < LL_COUNT(far_sec); i++) {
		time_t sec = far_sec[i] == INT64_MAX ? tmax : (time_t)far_sec[i];
		for (size_t j = 0; j < LL_COUNT(far_nsec); j++) {
			if (far_nsec[j] == 709551616 && far_sec[i] != INT64_C(18446744073))
				continue;
			struct timespec dl = { .tv_sec = sec, .tv_nsec = far_nsec[j] };
			check_deadline(s, MONO, &dl, 0, 1);
			if (j == 0)
				check_deadline(s, REAL, &dl, 0, 1);
		}
	}
	check_deadline(s, REL, NULL, INT64_MAX, 1);
	for (size_t i = 0; i < LL_COUNT(past_sec); i++) {
		time_t sec = past_sec[i] == INT64_MIN ? tmin : (time_t)past_sec[i];
		for (size_t j = 0; j < LL_COUNT(past_nsec); j++) {
			struct timespec dl = { .tv_sec = sec, .tv_nsec = past_nsec[j] };
			check_deadline(s, MONO, &dl, 0, 0);
			if (j == 0)
				check_deadline(s, REAL, &dl, 0, 0);
		}
	}
	check_deadline(s, REL, NULL, INT64_MIN, 0);
	check_deadline(s, REL, NULL, 0, 0);

	/* No time at all, whatever the seconds, on either clock. */
	const long bad_nsec[] = { -1, 1000000000L, LONG_MIN, LONG_MAX };
	for (size_t j = 0; j < LL_COUNT(bad_nsec); j++) {
		struct timespec dl = { .tv_sec = tmax, .tv_nsec = bad_nsec[j] };
		CHECK(timed_call(s, MONO, &dl, 0) == EINVAL, "%s: %s tv_nsec %ld accepted", algo,
		      side_name[s], bad_nsec[j]);
		CHECK(timed_call(s, REAL, &dl, 0) == EINVAL, "%s: realtime %s tv_nsec %ld accepted",
		      algo, side_name[s], bad_nsec[j]);
	}
	struct timespec now = { .tv_sec = 1 };
	CHECK(ll_rwlock_clockrdlock(&shared, CLOCK_PROCESS_CPUTIME_ID, &now) == EINVAL,
	      "%s: a CPU-time clock accepted", algo);
}

int test_timed(void)
{
	const int64_t ms = 1000000;
	double waited;
	int released, rc;

	init_rw(&shared, NULL);
	test_watchdog("timed", 300);
	for (enum side s = RD; s <= WR; s++) {
		/* Write-held: a 50 ms wait times out, not before its deadline. */
		struct timespec dl = ll_deadline_after_ns(50 * ms);
		rc = edge_wait(WR, s, MONO, &dl, 0, 3000, &waited, &released);
		CHECK(rc == ETIMEDOUT && !released, "%s: %s on a write-held lock returned %d", algo,
		      side_name[s], rc);
		CHECK(ll_now_ns() >= ll_timespec_ns(&dl), "%s: %s timed out before the deadline",
		      algo, side_name[s]);
		CHECK(waited < 1050, "%s: 50 ms %s timeout took %.1f ms", algo, side_name[s], waited);
		/* Released ~30 ms in: a 20 s wait succeeds then. */
		rc = edge_wait(WR, s, REL, NULL, 20000 * ms, 30, &waited, &released);
		CHECK(rc == 0 && released, "%s: %s returned %d after %.1f ms though the writer "
		      "released", algo, side_name[s], rc, waited);
		check_edge_deadlines(s);
	}
	/* Read-held by another thread: a reader gets in at once, a writer times out. */
	rc = edge_wait(RD, RD, REL, NULL, 1000 * ms, 3000, &waited, &released);
	CHECK(rc == 0 && !released, "%s: timed rdlock beside a reader returned %d (%.1f ms)", algo,
	      rc, waited);
	rc = edge_wait(RD, WR, REL, NULL, 30 * ms, 3000, &waited, &released);
	CHECK(rc == ETIMEDOUT && !released, "%s: timed wrlock beside a reader returned %d", algo,
	      rc);
	/* After the timed-out writer, readers and writers still get in. */
	rc = edge_wait(RD, WR, REL, NULL, 20000 * ms, 30, &waited, &released);
	CHECK(rc == 0 && released, "%s: wrlock after the reader left returned %d", algo, rc);
	ll_rwlock_destroy(&shared);
	printf("timed %s: %d far deadlines waited for the release, %d past ones timed out in "
	       "%.3f ms at most\n", algo, n_far, n_past, slowest_past);
	return 0;
}
