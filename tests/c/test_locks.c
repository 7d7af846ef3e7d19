/*
 * test_locks.c: correctness of every algorithm through the generic API.
 *
 *   test_locks exclusion ALGO   mutual exclusion under oversubscription
 *   test_locks trylock ALGO     trylock semantics across threads
 *   test_locks timed ALGO       timedlock: times out, and succeeds on release
 *   test_locks wakeup ALGO      256 threads, tiny holds, timed and plain waits
 *   test_locks nested           locks of every algorithm and peer held at once
 *   test_locks innodb56-events  two innodb56 locks sharing an event, contended
 *   test_locks ll-pollers       ll's pollers: the knob's bounds, the count never above
 *                               it and back to 0, timed waits among the pollers
 *   test_locks ll-drain         ll's parked waiters pass a free lock without waiting
 *                               for the end of a turn
 *   test_locks ll-pause         ll's paused looks: the knob's bounds, and a holder
 *                               re-acquiring back to back turns them off
 *   test_locks ll-poll-bound    ll's poll ends after a rotation while nobody is parked,
 *                               however slowly its yields come back
 *   test_locks ll-poll-queue    ... and goes on past a rotation while others are parked
 *   test_locks config           registry and option errors
 *
 * ctest runs each test for each algorithm of src/lib/locks/algorithms.def and
 * each peer lock of the benchmark (src/bench/peers/).
 */
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "locklab/gate.h"
#include "locks/innodb56_sync.h"
#include "locklab/locks/ll.h"
#include "bench/locks.h"

static const char *algo;

/*
 * LL_TEST_LOCK_OPTS: options for the lock under test where a test names none
 * (ctest runs `ll` again with short turns, so that its grants and turn
 * changes happen thousands of times a second).
 */
static void init_lock(ll_mutex_t *m, const char *name, const char *opts)
{
	struct ll_error err;
	if (!opts && algo && !strcmp(name, algo))
		opts = getenv("LL_TEST_LOCK_OPTS");
	int rc = bench_mutex_init(m, name, opts, &err);
	CHECK(rc == 0, "init %s: %s", name, err.msg);
}

/*
 * Spinlocks under oversubscription: a FIFO spinlock hands the lock to a
 * preempted waiter and stalls until the scheduler runs it (seconds for a few
 * thousand handoffs here).  Their pure spin path runs for a fixed time; the
 * long runs use the yield spin-wait, the same lock logic with waiters that
 * give the core to the thread whose turn it is.  Only locks with a `spin`
 * knob (the library's) have that wait; peer spinlocks (ck-*) spin as their
 * authors wrote them, so their fixed-time run is their whole exclusion test.
 */
static const char *const spin_yield = "spin=yield";

/* Exit status ctest reads as "skipped" (SKIP_RETURN_CODE in CMakeLists.txt). */
enum { TEST_SKIPPED = 77 };

static const struct ll_lock_ops *lock_ops(const char *name)
{
	const struct ll_lock_ops *ops = bench_lock_find(name, NULL);
	CHECK(ops, "unknown algorithm %s", name);
	return ops;
}

static int is_spinlock(const char *name)
{
	return !(lock_ops(name)->flags & LL_ALGO_PARKS);
}

/* 1 if spin=yield applies: the lock has a knob named "spin". */
static int has_spin_knob(const char *name)
{
	const struct ll_lock_ops *ops = lock_ops(name);
	for (size_t k = 0; k < ops->nknobs; k++)
		if (!strcmp(ops->knobs[k].name, "spin"))
			return 1;
	return 0;
}

/* ---- mutual exclusion ---- */

enum { EXCL_LOCKS = 4 };

struct guarded {
	ll_mutex_t m;
	/* Plain (volatile) fields: only the lock orders them, so TSan sees a race if it fails. */
	volatile int inside;
	volatile long counter;
	volatile long violations;
};

static struct guarded guarded[EXCL_LOCKS];

struct excl_arg {
	int id;
	long iters;
	long done[EXCL_LOCKS];
};

static atomic_int excl_stop;

static void *excl_main(void *p)
{
	struct excl_arg *a = p;
	unsigned r = (unsigned)a->id * 2654435761u + 1;

	for (long i = 0; i < a->iters && !atomic_load_explicit(&excl_stop, memory_order_relaxed);
	     i++) {
		r = r * 1103515245u + 12345u;
		int k = (int)((r >> 16) % EXCL_LOCKS);
		struct guarded *g = &guarded[k];
		ll_mutex_lock(&g->m);
		if (g->inside)
			g->violations = g->violations + 1;
		g->inside = 1;
		long c = g->counter;
		/* Widen the window a racing thread would need to slip through. */
		for (int s = 0; s < (int)(r & 7); s++)
			atomic_signal_fence(memory_order_seq_cst);
		/* Now and then give the core away while holding: waiters pile up and park. */
		if ((r & 0x3ff0) == 0)
			sched_yield();
		g->counter = c + 1;
		g->inside = 0;
		ll_mutex_unlock(&g->m);
		a->done[k]++;
	}
	return NULL;
}

static void *excl_timer(void *p)
{
	int seconds = *(int *)p;
	struct timespec ts = { .tv_sec = seconds };
	while (nanosleep(&ts, &ts))
		;
	atomic_store(&excl_stop, 1);
	return NULL;
}

/* Iterations in all (seconds > 0: or stop after that long); counters checked. */
static long run_exclusion(const char *opts, long total, int seconds)
{
	int nthreads = 4 * test_ncpu() < 8 ? 8 : 4 * test_ncpu();
	struct excl_arg *args = calloc((size_t)nthreads, sizeof(*args));
	pthread_t timer;

	memset(guarded, 0, sizeof(guarded));
	atomic_store(&excl_stop, 0);
	for (int k = 0; k < EXCL_LOCKS; k++)
		init_lock(&guarded[k].m, algo, opts);
	for (int i = 0; i < nthreads; i++) {
		args[i].id = i;
		args[i].iters = total / nthreads;
	}
	if (seconds)
		pthread_create(&timer, NULL, excl_timer, &seconds);
	uint64_t t0 = ll_now_ns();
	test_run_threads(nthreads, excl_main, args, sizeof(*args));
	double secs = (double)(ll_now_ns() - t0) / 1e9;
	if (seconds) {
		pthread_cancel(timer);
		pthread_join(timer, NULL);
	}

	long expect[EXCL_LOCKS] = { 0 }, sum = 0;
	for (int i = 0; i < nthreads; i++)
		for (int k = 0; k < EXCL_LOCKS; k++)
			expect[k] += args[i].done[k];
	for (int k = 0; k < EXCL_LOCKS; k++) {
		CHECK(guarded[k].violations == 0, "%s: lock %d entered while held %ld times", algo, k,
		      guarded[k].violations);
		CHECK(guarded[k].counter == expect[k], "%s: lock %d counter %ld, expected %ld", algo,
		      k, guarded[k].counter, expect[k]);
		sum += guarded[k].counter;
		ll_mutex_destroy(&guarded[k].m);
	}
	printf("exclusion %s%s%s: %d threads, %d locks, %ld acquisitions in %.2f s, counters add up\n",
	       algo, opts ? " " : "", opts ? opts : "", nthreads, EXCL_LOCKS, sum, secs);
	free(args);
	return sum;
}

static int test_exclusion(void)
{
	long total = test_scaled(2000000);

	test_watchdog("exclusion", 800);
	if (is_spinlock(algo)) {
		/*
		 * Both runs stop after a few seconds: a FIFO spinlock hands the lock to
		 * the next waiter in line even when it is preempted, so with more
		 * threads than CPUs, and the CPUs shared with another job, each handoff
		 * can wait a time slice and 2 million take many minutes.  The counters
		 * must still add up, which is what this test is for.
		 */
		long pure = run_exclusion(NULL, total, 5);
		CHECK(pure > 0, "%s: no acquisition in 5 s", algo);
		if (has_spin_knob(algo))
			CHECK(run_exclusion(spin_yield, total, 10) > 0, "%s: no acquisition in 10 s",
			      algo);
	} else {
		CHECK(run_exclusion(NULL, total, 0) >= total - 64, "%s: run incomplete", algo);
	}
	return 0;
}

/* ---- trylock ---- */

static ll_mutex_t shared_lock;
static atomic_int step;

static void wait_step(int s)
{
	while (atomic_load(&step) < s)
		sched_yield();
}

static void *trylock_peer(void *p)
{
	int *results = p;
	wait_step(1);
	results[0] = ll_mutex_trylock(&shared_lock);   /* held by main: EBUSY */
	atomic_store(&step, 2);
	wait_step(3);
	results[1] = ll_mutex_trylock(&shared_lock);   /* released: 0 */
	atomic_store(&step, 4);
	wait_step(5);
	ll_mutex_unlock(&shared_lock);
	atomic_store(&step, 6);
	return NULL;
}

static int test_trylock(void)
{
	int results[2] = { -1, -1 };
	pthread_t t;

	init_lock(&shared_lock, algo, NULL);
	CHECK(ll_mutex_trylock(&shared_lock) == 0, "%s: trylock of a free lock failed", algo);
	CHECK(ll_mutex_trylock(&shared_lock) == EBUSY, "%s: trylock of an own held lock succeeded",
	      algo);
	pthread_create(&t, NULL, trylock_peer, results);
	atomic_store(&step, 1);
	wait_step(2);
	ll_mutex_unlock(&shared_lock);
	atomic_store(&step, 3);
	wait_step(4);
	CHECK(ll_mutex_trylock(&shared_lock) == EBUSY, "%s: trylock succeeded on a lock held by "
	      "another thread", algo);
	atomic_store(&step, 5);
	wait_step(6);
	pthread_join(t, NULL);
	CHECK(results[0] == EBUSY, "%s: peer's trylock on a held lock returned %d", algo, results[0]);
	CHECK(results[1] == 0, "%s: peer's trylock on a free lock returned %d", algo, results[1]);
	CHECK(ll_mutex_trylock(&shared_lock) == 0, "%s: trylock after release failed", algo);
	ll_mutex_unlock(&shared_lock);
	ll_mutex_destroy(&shared_lock);
	printf("trylock %s: ok\n", algo);
	return 0;
}

/* ---- timedlock ---- */

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

static int test_timed(void)
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

/* ---- lost wakeups: many more threads than cores ---- */

enum { WAKEUP_THREADS = 256 };

static volatile long wake_counter;
static atomic_long wake_timeouts;

static void *wakeup_main(void *p)
{
	long iters = *(long *)p;
	for (long i = 0; i < iters; i++) {
		if (i % 4 == 3) {
			/* Timed waits that give up leave wake state behind: mix them in. */
			while (ll_mutex_timedlock_ns(&shared_lock, 20000) == ETIMEDOUT)
				atomic_fetch_add_explicit(&wake_timeouts, 1, memory_order_relaxed);
		} else {
			ll_mutex_lock(&shared_lock);
		}
		/* Every 8th holder yields: the others find it held, give up spinning and sleep. */
		if ((i & 7) == 0)
			sched_yield();
		wake_counter = wake_counter + 1;
		ll_mutex_unlock(&shared_lock);
	}
	return NULL;
}

static int test_wakeup(void)
{
	/* Spinlocks have no wakeup to lose, but must still hand over at 128 threads a core. */
	int spins = is_spinlock(algo);
	if (spins && !has_spin_knob(algo)) {
		/*
		 * Without spin=yield, 255 waiters spin through their time slices while
		 * the holder or the next in line waits to be scheduled: a handoff takes
		 * up to a round of the run queue.  A 5 s fixed-time run of the ck
		 * spinlocks took 27-99 s to drain their queued waiters on 2 cores,
		 * measuring only the scheduler; exclusion's fixed-time run covers the
		 * handover.
		 */
		printf("wakeup %s: skipped: a pure spinlock (no spin knob for spin=yield) at %d "
		       "threads only measures the scheduler; see exclusion\n", algo, WAKEUP_THREADS);
		return TEST_SKIPPED;
	}
	long iters = test_scaled(spins ? 100 : 1000);
	long *args = malloc(sizeof(long) * WAKEUP_THREADS);

	for (int i = 0; i < WAKEUP_THREADS; i++)
		args[i] = iters;
	init_lock(&shared_lock, algo, spins ? spin_yield : NULL);
	test_watchdog("wakeup", 600);
	test_run_threads(WAKEUP_THREADS, wakeup_main, args, sizeof(long));
	CHECK(wake_counter == iters * WAKEUP_THREADS, "%s: counter %ld, expected %ld", algo,
	      wake_counter, iters * WAKEUP_THREADS);
	ll_mutex_destroy(&shared_lock);
	printf("wakeup %s: %d threads x %ld acquisitions finished, %ld timed-out waits\n", algo,
	       WAKEUP_THREADS, iters, atomic_load(&wake_timeouts));
	free(args);
	return 0;
}

/* ---- innodb56-events: two locks that share their event ---- */

/*
 * innodb56's locks share a table of events.  Two locks of one event, each
 * contended by two threads that go to sleep at once (sync_spin_loops=0): the
 * sets and resets of either lock land between the other's resets, sets and
 * sleeps, and the timed waits that give up leave the event set or reset
 * behind.  A lost wake-up leaves a sleeper for good (the watchdog); a set for
 * the other lock only wakes a sleeper early, to sleep again.
 */
enum { SHARE_THREADS = 4, SHARE_POOL = 2 << LL_IB_EVENT_BITS };
static ll_innodb56_t share_pool[SHARE_POOL];
static ll_innodb56_t *share_lock[2];
static long share_counter[2];
static atomic_long share_timeouts;

struct share_arg {
	int which;
	long iters;
};

static void *share_main(void *p)
{
	const struct share_arg *a = p;
	ll_innodb56_t *l = share_lock[a->which];
	for (long i = 0; i < a->iters; i++) {
		if (i % 4 == 3) {
			struct timespec dl;
			clock_gettime(CLOCK_MONOTONIC, &dl);
			dl.tv_nsec += 20000;
			if (dl.tv_nsec >= 1000000000L) {
				dl.tv_sec++;
				dl.tv_nsec -= 1000000000L;
			}
			if (ll_innodb56_timedlock(l, &dl) == ETIMEDOUT) {
				atomic_fetch_add_explicit(&share_timeouts, 1, memory_order_relaxed);
				ll_innodb56_lock(l);
			}
		} else {
			ll_innodb56_lock(l);
		}
		/* Held across a yield and a short spin: the other thread sleeps. */
		sched_yield();
		for (int k = 0; k < 200; k++)
			ll_spin_wait(LL_SPIN_PAUSE);
		share_counter[a->which] = share_counter[a->which] + 1;
		ll_innodb56_unlock(l);
	}
	return NULL;
}

static int test_innodb56_events(void)
{
	/* Twice as many locks as events: two of them share one. */
	int seen[1 << LL_IB_EVENT_BITS];
	memset(seen, -1, sizeof(seen));
	for (int i = 0; i < SHARE_POOL && !share_lock[1]; i++) {
		unsigned e = ll_ib_event_index(&share_pool[i]);
		if (seen[e] >= 0) {
			share_lock[0] = &share_pool[seen[e]];
			share_lock[1] = &share_pool[i];
		}
		seen[e] = i;
	}
	CHECK(share_lock[1], "no two of %d locks share an event", SHARE_POOL);
	const struct ll_lock_ops *ops = ll_algo_find("innodb56", NULL);
	struct ll_innodb56_config cfg;
	struct ll_error err;
	ll_config_defaults(ops, &cfg);
	CHECK(ll_config_parse(ops, "sync_spin_loops=0", &cfg, &err) == 0, "%s", err.msg);
	for (int k = 0; k < 2; k++)
		CHECK(ll_innodb56_init(share_lock[k], &cfg) == 0, "init");
	long iters = test_scaled(20000);
	struct share_arg args[SHARE_THREADS];
	for (int i = 0; i < SHARE_THREADS; i++)
		args[i] = (struct share_arg){ i % 2, iters };
	test_watchdog("innodb56-events", 120);
	test_run_threads(SHARE_THREADS, share_main, args, sizeof(args[0]));
	for (int k = 0; k < 2; k++) {
		CHECK(share_counter[k] == iters * (SHARE_THREADS / 2), "lock %d: counter %ld, expected %ld",
		      k, share_counter[k], iters * (SHARE_THREADS / 2));
		ll_innodb56_destroy(share_lock[k]);
	}
	printf("innodb56-events: locks %td and %td share event %u: %d threads x %ld acquisitions, "
	       "%ld timed-out waits\n", share_lock[0] - share_pool, share_lock[1] - share_pool,
	       ll_ib_event_index(share_lock[0]), SHARE_THREADS, iters,
	       atomic_load(&share_timeouts));
	return 0;
}

/* ---- nested: every algorithm and peer held at once, released in any order ---- */

enum { NEST_THREADS = 8, NEST_MAX = 64 };

static ll_mutex_t nest_locks[NEST_MAX];
static volatile long nest_counter[NEST_MAX];
static int nest_count;

static void *nested_main(void *p)
{
	long iters = *(long *)p;
	unsigned r = (unsigned)(uintptr_t)p;
	int order[NEST_MAX];

	for (long i = 0; i < iters; i++) {
		/* Acquire in one global order (no deadlock), release in a random one. */
		for (int k = 0; k < nest_count; k++) {
			ll_mutex_lock(&nest_locks[k]);
			nest_counter[k] = nest_counter[k] + 1;
			order[k] = k;
		}
		for (int k = nest_count - 1; k > 0; k--) {
			r = r * 1103515245u + 12345u;
			int j = (int)((r >> 16) % (unsigned)(k + 1));
			int tmp = order[k];
			order[k] = order[j];
			order[j] = tmp;
		}
		for (int k = 0; k < nest_count; k++)
			ll_mutex_unlock(&nest_locks[order[k]]);
	}
	return NULL;
}

static int test_nested(void)
{
	/* Two locks of each algorithm and peer: a thread holds two MCS nodes at once, and so on. */
	CHECK(2 * bench_lock_count() <= NEST_MAX, "%zu locks, NEST_MAX %d", 2 * bench_lock_count(),
	      NEST_MAX);
	for (size_t a = 0; a < bench_lock_count(); a++)
		for (int copy = 0; copy < 2; copy++)
			init_lock(&nest_locks[nest_count++], bench_lock_at(a)->name, NULL);
	long iters = test_scaled(2000);
	long args[NEST_THREADS];
	for (int i = 0; i < NEST_THREADS; i++)
		args[i] = iters;
	test_watchdog("nested", 600);
	test_run_threads(NEST_THREADS, nested_main, args, sizeof(long));
	for (int k = 0; k < nest_count; k++) {
		CHECK(nest_counter[k] == iters * NEST_THREADS, "lock %d (%s): %ld, expected %ld", k,
		      ll_mutex_algo(&nest_locks[k]), nest_counter[k], iters * NEST_THREADS);
		ll_mutex_destroy(&nest_locks[k]);
	}
	printf("nested: %d locks of %zu algorithms, %d threads x %ld rounds\n", nest_count,
	       bench_lock_count(), NEST_THREADS, iters);
	return 0;
}

/* ---- registry and options ---- */

/* A knob table of its own, as the benchmark's workloads have: "a" is a prefix of "ab". */
struct pair_config {
	int64_t a, ab;
};

static const struct ll_knob pair_knobs[] = {
	LL_KNOB_INT(struct pair_config, a, 1, 0, 9, "a"),
	LL_KNOB_INT(struct pair_config, ab, 2, 0, 9, "ab"),
};

static int parse_pair(const char *opts, struct pair_config *cfg, struct ll_error *err)
{
	return ll_knobs_parse("workload", "pair", pair_knobs, LL_COUNT(pair_knobs), opts, cfg, err);
}

static int test_config(void)
{
	struct ll_error err;
	ll_mutex_t m;

	CHECK(ll_mutex_init(&m, NULL, NULL, &err) == 0, "default init: %s", err.msg);
	CHECK(!strcmp(ll_mutex_algo(&m), LL_DEFAULT_ALGO), "default is %s", ll_mutex_algo(&m));
	ll_mutex_destroy(&m);

	CHECK(ll_mutex_init(&m, "nope", NULL, &err) == EINVAL, "unknown algorithm accepted");
	CHECK(strstr(err.msg, "unknown lock 'nope'") && strstr(err.msg, "innodb56"),
	      "message: %s", err.msg);
	CHECK(ll_mutex_init(&m, "ttas", "bogus=1", &err) == EINVAL, "unknown knob accepted");
	CHECK(strstr(err.msg, "backoff_min_ns"), "message does not list knobs: %s", err.msg);
	CHECK(ll_mutex_init(&m, "innodb56", "sync_spin_loops=-1", &err) == EINVAL,
	      "negative spin loops accepted");
	CHECK(ll_mutex_init(&m, "innodb56", "sync_spin_loops=12x", &err) == EINVAL,
	      "trailing garbage accepted");
	CHECK(ll_mutex_init(&m, "futex", "spin=wfe", &err) == EINVAL, "bad choice accepted");
	CHECK(strstr(err.msg, "pause, none, tas, yield"), "message: %s", err.msg);
	CHECK(ll_mutex_init(&m, "futex", "spin_ns", &err) == EINVAL, "missing '=' accepted");
	CHECK(ll_mutex_init(&m, "futex", "", &err) == 0, "empty options: %s", err.msg);
	ll_mutex_destroy(&m);

	/*
	 * Each knob once, no empty item anywhere: lock, gate and workload options
	 * all go through ll_knobs_parse, so the lock's and a bare table's cover them.
	 */
	static const struct {
		const char *opts, *want;
	} refused[] = {
		{ "sync_spin_loops=5,sync_spin_loops=7",
		  "option 'sync_spin_loops' of lock 'innodb56' given twice in "
		  "'sync_spin_loops=5,sync_spin_loops=7'" },
		{ "spin=tas,sync_spin_loops=5,spin=pause", "option 'spin' of lock 'innodb56' given twice" },
		{ "sync_spin_loops=5,", "malformed options 'sync_spin_loops=5,' for lock 'innodb56' "
		  "(empty item)" },
		{ ",sync_spin_loops=5", "(empty item)" },
		{ "sync_spin_loops=5,,spin=tas", "(empty item)" },
		{ ",", "(empty item)" },
	};
	for (size_t i = 0; i < LL_COUNT(refused); i++) {
		err.msg[0] = '\0';
		CHECK(ll_mutex_init(&m, "innodb56", refused[i].opts, &err) == EINVAL,
		      "innodb56 options '%s' accepted", refused[i].opts);
		CHECK(strstr(err.msg, refused[i].want) && !strchr(err.msg, '\n'),
		      "options '%s': got '%s', wanted '%s'", refused[i].opts, err.msg, refused[i].want);
	}
	/* A key that only begins like another is not the same key. */
	CHECK(ll_mutex_init(&m, "ttas", "backoff_min_ns=50,backoff_max_ns=500", &err) == 0, "%s",
	      err.msg);
	ll_mutex_destroy(&m);

	struct pair_config cfg;
	ll_knobs_defaults(pair_knobs, LL_COUNT(pair_knobs), &cfg, sizeof(cfg));
	CHECK(parse_pair("ab=3,a=4", &cfg, &err) == 0 && cfg.a == 4 && cfg.ab == 3, "%s", err.msg);
	CHECK(parse_pair("a=1,ab=3,a=2", &cfg, &err) == EINVAL &&
	      strstr(err.msg, "option 'a' of workload 'pair' given twice"), "%s", err.msg);
	CHECK(parse_pair("a=1,", &cfg, &err) == EINVAL && strstr(err.msg, "(empty item)"), "%s",
	      err.msg);
	ll_gate_t *g = ll_gate_create("fifo", "n=2,n=3", &err);
	CHECK(!g && strstr(err.msg, "option 'n' of gate 'fifo' given twice"), "gate: %s", err.msg);
	g = ll_gate_create("fifo", "n=2,", &err);
	CHECK(!g && strstr(err.msg, "(empty item)"), "gate: %s", err.msg);

	/* Options reach the algorithm: spin-trylock with no spin rounds still locks. */
	CHECK(ll_mutex_init(&m, "spin-trylock", "spin_loops=0,limit=mutex,spin=tas", &err) == 0,
	      "%s", err.msg);
	ll_mutex_lock(&m);
	CHECK(ll_mutex_trylock(&m) == EBUSY, "held spin-trylock taken again");
	ll_mutex_unlock(&m);
	ll_mutex_destroy(&m);

	/*
	 * A caller's own ops table that asks for a larger config than any buffer
	 * holds, or puts a knob outside its config, is refused before anything is
	 * written (the ASan build of this test sees any write past the buffer).
	 */
	struct ll_lock_ops big = *ll_algo_find("innodb56", NULL);
	big.name = "too-big";
	big.config_size = (LL_CONFIG_MAX + 4) * sizeof(int64_t);
	err.msg[0] = '\0';
	CHECK(ll_mutex_init_opts(&m, &big, NULL, &err) == EINVAL, "oversized config accepted");
	CHECK(strstr(err.msg, "lock 'too-big': config of 160 bytes is larger than LL_CONFIG_MAX"),
	      "oversized config: %s", err.msg);
	CHECK(ll_mutex_init_config(&m, &big, NULL) == EINVAL, "oversized config accepted");
	static const struct ll_knob stray[] = {
		{ "far", "a knob past the config", 15 * sizeof(int64_t), 1, 0, 9, NULL },
	};
	struct ll_lock_ops astray = *ll_algo_find("tas", NULL);
	astray.name = "astray";
	astray.knobs = stray;
	astray.nknobs = 1;
	astray.config_size = 2 * sizeof(int64_t);
	CHECK(ll_mutex_init_opts(&m, &astray, "far=3", &err) == EINVAL &&
	      strstr(err.msg, "knob 'far' lies outside its 16-byte config"), "stray knob: %s",
	      err.msg);

	/*
	 * ll keeps its durations in 32 bits: past LL_LL_MAX_NS a knob is refused
	 * in one line, and a config built by hand is refused, never truncated.
	 */
	static const char *const ll_durations[] = { "handoff_ns", "rotation_ns", "min_turn_ns" };
	for (size_t i = 0; i < LL_COUNT(ll_durations); i++) {
		char opts[64], want[128];
		snprintf(opts, sizeof(opts), "%s=%lld", ll_durations[i], (long long)LL_LL_MAX_NS + 1);
		snprintf(want, sizeof(want), "option '%s' of lock 'll' wants an integer in [0, %lld]",
			 ll_durations[i], (long long)LL_LL_MAX_NS);
		err.msg[0] = '\0';
		CHECK(ll_mutex_init(&m, "ll", opts, &err) == EINVAL, "ll options '%s' accepted", opts);
		CHECK(strstr(err.msg, want) && !strchr(err.msg, '\n'), "'%s': got '%s'", opts, err.msg);
		snprintf(opts, sizeof(opts), "%s=%lld", ll_durations[i], (long long)LL_LL_MAX_NS);
		CHECK(ll_mutex_init(&m, "ll", opts, &err) == 0, "'%s': %s", opts, err.msg);
		ll_mutex_destroy(&m);
	}
	const struct ll_lock_ops *ll_ops = ll_algo_find("ll", NULL);
	int64_t raw[LL_CONFIG_MAX];
	ll_config_defaults(ll_ops, raw);
	struct ll_ll_config *ll_cfg = (struct ll_ll_config *)(void *)raw;
	ll_cfg->rotation_ns = (int64_t)UINT32_MAX + 1;  /* 0 once truncated */
	CHECK(ll_mutex_init_config(&m, ll_ops, raw) == EINVAL, "ll rotation_ns 2^32 accepted");
	ll_cfg->rotation_ns = LL_LL_MAX_NS;
	ll_cfg->handoff_ns = -1;
	CHECK(ll_mutex_init_config(&m, ll_ops, raw) == EINVAL, "ll handoff_ns -1 accepted");

	/* A C caller's ll_ll_t need not be zeroed: init sets every field. */
	ll_ll_t dirty, clean;
	memset(&dirty, 0xa5, sizeof(dirty));
	memset(&clean, 0, sizeof(clean));
	CHECK(ll_ll_init(&dirty, NULL) == 0 && ll_ll_init(&clean, NULL) == 0, "ll_ll_init");
	CHECK(!memcmp(&dirty, &clean, sizeof(dirty)), "ll_ll_init left a field of dirty "
	      "memory as it was");

	/* algorithms.def's names are the ops tables' (the ctests run by those names). */
	static const char *const registered[] = {
#define LL_ALGO(id, name) name,
#include "locks/algorithms.def"
#undef LL_ALGO
	};
	CHECK(LL_COUNT(registered) == ll_algo_count(), "%zu registered, %zu in the table",
	      LL_COUNT(registered), ll_algo_count());
	for (size_t i = 0; i < LL_COUNT(registered); i++)
		CHECK(!strcmp(registered[i], ll_algo_at(i)->name), "algorithms.def names '%s' where "
		      "its ops table says '%s'", registered[i], ll_algo_at(i)->name);

	/*
	 * Every algorithm's state fits one cache line (the swapper's slot, and
	 * so the inline storage); every knob default is in range.
	 */
	for (size_t i = 0; i < ll_algo_count(); i++) {
		const struct ll_lock_ops *ops = ll_algo_at(i);
		CHECK(ops->state_size <= LL_STATE_LINE_BYTES, "%s state %zu bytes, over the %d-byte line",
		      ops->name, ops->state_size, LL_STATE_LINE_BYTES);
		for (size_t k = 0; k < ops->nknobs; k++)
			CHECK(ops->knobs[k].def >= ops->knobs[k].min &&
			      ops->knobs[k].def <= ops->knobs[k].max, "%s.%s default out of range",
			      ops->name, ops->knobs[k].name);
		CHECK(ll_algo_find(ops->name, NULL) == ops, "%s not found by name", ops->name);
	}

	/* Calibration: positive costs, budgets that grow with the time asked for. */
	for (unsigned p = 0; p < LL_SPIN_POLICIES; p++) {
		CHECK(ll_spin_ns(p) > 0, "policy %u costs %f ns", p, ll_spin_ns(p));
		CHECK(ll_spin_iters(p, 0) == 0, "zero budget gives iterations");
		CHECK(ll_spin_iters(p, 1) >= 1, "tiny budget gives none");
		CHECK(ll_spin_iters(p, 100000) >= ll_spin_iters(p, 1000), "budgets not monotonic");
	}
	printf("config: ok (pause %.2f ns, none %.2f ns, tas %.2f ns, yield %.0f ns per wait)\n",
	       ll_spin_ns(LL_SPIN_PAUSE), ll_spin_ns(LL_SPIN_NONE), ll_spin_ns(LL_SPIN_TAS),
	       ll_spin_ns(LL_SPIN_YIELD));
	return 0;
}

/* ---- ll-pollers: the bounded set of waiters that poll instead of parking ---- */

enum { POLL_THREADS = 16, POLL_MAX = 2 };

static ll_ll_t poll_lock;
static atomic_int poll_done, poll_over;
static volatile long poll_counter;

static void *poll_main(void *p)
{
	long iters = *(long *)p;
	for (long i = 0; i < iters; i++) {
		if (i % 3 == 2) {
			/* Deadlines of 10 us: pollers must leave the count when they give up. */
			struct timespec ts = ll_deadline_after_ns(10000);
			if (ll_ll_timedlock(&poll_lock, &ts) != 0) {
				i--;
				continue;
			}
		} else {
			ll_ll_lock(&poll_lock);
		}
		poll_counter = poll_counter + 1;
		if ((i & 15) == 0)
			sched_yield();   /* held across a yield: newcomers find it held and poll */
		ll_ll_unlock(&poll_lock);
	}
	atomic_fetch_add(&poll_done, 1);
	return NULL;
}

/* Samples the pollers' count while the threads run: it must never pass the knob. */
static void *poll_watch(void *p)
{
	(void)p;
	while (atomic_load(&poll_done) < POLL_THREADS) {
		if (atomic_load_explicit(&poll_lock.pollers, memory_order_relaxed) > POLL_MAX)
			atomic_store(&poll_over, 1);
		sched_yield();
	}
	return NULL;
}

/* `ll`'s default config, from its ops table (whose config must be ll_ll_config). */
static void ll_default_config(struct ll_ll_config *cfg)
{
	struct ll_error err;
	const struct ll_lock_ops *ops = ll_algo_find("ll", &err);
	CHECK(ops && ops->config_size == sizeof(*cfg), "no ll ops table: %s", err.msg);
	ll_config_defaults(ops, cfg);
}

/* 1 when `ll` refuses the options (EINVAL) at ll_mutex_init. */
static int ll_refuses(const char *opts)
{
	struct ll_error err;
	ll_mutex_t m;
	return ll_mutex_init(&m, "ll", opts, &err) == EINVAL;
}

static int test_ll_pollers(void)
{
	struct ll_ll_config cfg;

	/* The knob: -1 is 32 per CPU the process may use, less one, at most 255. */
	CHECK(ll_refuses("pollers=256"), "pollers=256 accepted");
	CHECK(ll_refuses("pollers=-2"), "pollers=-2 accepted");
	ll_default_config(&cfg);
	CHECK(cfg.pollers == -1, "default pollers %lld", (long long)cfg.pollers);
	cfg.pollers = 300;
	CHECK(ll_ll_init(&poll_lock, &cfg) == EINVAL, "ll_ll_init took pollers=300");
	cfg.pollers = -1;
	CHECK(ll_ll_init(&poll_lock, &cfg) == 0, "default config refused");
	cpu_set_t set;
	int cpus = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 1;
	int want = 32 * cpus - 1 > 255 ? 255 : 32 * cpus - 1;
	CHECK(poll_lock.max_pollers == want, "%d CPUs: max_pollers %d, expected %d", cpus,
	      poll_lock.max_pollers, want);

	/* Contended with a bound of 2, timed waits mixed in: never more, and back to 0. */
	cfg.pollers = POLL_MAX;
	CHECK(ll_ll_init(&poll_lock, &cfg) == 0, "pollers=%d refused", POLL_MAX);
	long iters = test_scaled(20000), args[POLL_THREADS];
	for (int i = 0; i < POLL_THREADS; i++)
		args[i] = iters;
	pthread_t watch;
	pthread_create(&watch, NULL, poll_watch, NULL);
	test_watchdog("ll-pollers", 300);
	test_run_threads(POLL_THREADS, poll_main, args, sizeof(long));
	pthread_join(watch, NULL);
	CHECK(poll_counter == iters * POLL_THREADS, "counter %ld, expected %ld", poll_counter,
	      iters * POLL_THREADS);
	CHECK(!atomic_load(&poll_over), "more than %d pollers at once", POLL_MAX);
	CHECK(atomic_load(&poll_lock.pollers) == 0, "%u pollers left after every thread finished",
	      (unsigned)atomic_load(&poll_lock.pollers));
	printf("ll-pollers: %d CPUs -> %d pollers by default; %d threads x %ld acquisitions with "
	       "at most %d polling, none left\n", cpus, want, POLL_THREADS, iters, POLL_MAX);
	return 0;
}

/*
 * ---- ll-drain: the queue drains while the lock is free, however long the turns ----
 *
 * A holder grants the lock to the heir only at the end of its turn; when the
 * lock goes free between turns (the holder sleeps in I/O outside it), the
 * heir must still be woken by a release, or the parked threads behind it wait
 * out whole turns while the CPUs idle.  Turns of 4 s and no pollers: every
 * waiter is the heir or parked.  Once the holder lets go, each takes the lock
 * once, holds it 20 ms (longer than a wake-up, so that each promoted heir
 * finds it held) and leaves; all must be through long before one turn.
 */
enum { DRAIN_THREADS = 4 };

static ll_ll_t drain_lock;
static atomic_int drain_started, drain_done;

static void *drain_main(void *p)
{
	(void)p;
	atomic_fetch_add(&drain_started, 1);
	ll_ll_lock(&drain_lock);
	atomic_fetch_add(&drain_done, 1);
	usleep(20000);
	ll_ll_unlock(&drain_lock);
	return NULL;
}

static double since_s(const struct timespec *t0)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - t0->tv_sec) + (double)(t.tv_nsec - t0->tv_nsec) / 1e9;
}

static int test_ll_drain(void)
{
	struct ll_ll_config cfg;
	ll_default_config(&cfg);
	cfg.pollers = 0;
	cfg.handoff_ns = cfg.rotation_ns = cfg.min_turn_ns = LL_LL_MAX_NS;
	CHECK(ll_ll_init(&drain_lock, &cfg) == 0, "long-turn config refused");
	test_watchdog("ll-drain", 120);

	ll_ll_lock(&drain_lock);
	pthread_t t[DRAIN_THREADS];
	for (int i = 0; i < DRAIN_THREADS; i++)
		CHECK(pthread_create(&t[i], NULL, drain_main, NULL) == 0, "pthread_create");
	/* Until every thread has arrived and the queue has formed (a heir and parked threads). */
	while (atomic_load(&drain_started) < DRAIN_THREADS ||
	       !(atomic_load(&drain_lock.state) & LL_LL_PARKED))
		usleep(1000);
	usleep(100000);
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ll_ll_unlock(&drain_lock);
	for (int i = 0; i < DRAIN_THREADS; i++)
		pthread_join(t[i], NULL);
	double took = since_s(&t0);
	CHECK(atomic_load(&drain_done) == DRAIN_THREADS, "%d of %d through",
	      atomic_load(&drain_done), DRAIN_THREADS);
	CHECK(took < 2.0, "%d waiters took %.2f s to pass a free lock with 4 s turns", DRAIN_THREADS,
	      took);
	printf("ll-drain: %d waiters (a heir and a parked queue) through a free lock in %.3f s "
	       "with 4 s turns\n", DRAIN_THREADS, took);
	return 0;
}

/*
 * ---- ll-pause: the pollers' first looks between PAUSEs ----
 *
 * The knob's bounds, the budget it gives, and the rule that keeps paused
 * looks off a lock whose holder re-acquires back to back: two threads take
 * turns with no work outside the lock, and pollers must see `unlocks` move
 * twice in a few looks and write pause_off.  Nobody else writes pause_off,
 * so a lock that was never found back to back keeps the 0 of its init.
 */
static ll_ll_t pause_lock;
static atomic_int pause_stop;
static volatile long pause_counter;

static void *pause_main(void *p)
{
	long *done = p;
	while (!atomic_load_explicit(&pause_stop, memory_order_relaxed)) {
		for (int i = 0; i < 64; i++) {
			ll_ll_lock(&pause_lock);
			pause_counter = pause_counter + 1;
			ll_ll_unlock(&pause_lock);
		}
		*done += 64;
	}
	return NULL;
}

static int test_ll_pause(void)
{
	struct ll_ll_config cfg;

	CHECK(ll_refuses("pause_ns=-1"), "pause_ns=-1 accepted");
	CHECK(ll_refuses("pause_ns=100001"), "pause_ns=100001 accepted");
	ll_default_config(&cfg);
	CHECK(cfg.pause_ns == 2000, "default pause_ns %lld", (long long)cfg.pause_ns);
	cfg.pause_ns = LL_LL_MAX_PAUSE_NS + 1;
	CHECK(ll_ll_init(&pause_lock, &cfg) == EINVAL, "ll_ll_init took pause_ns past its bound");
	cfg.pause_ns = 0;
	CHECK(ll_ll_init(&pause_lock, &cfg) == 0 && pause_lock.max_pause_looks == 0,
	      "pause_ns=0: %u paused looks", (unsigned)pause_lock.max_pause_looks);
	cfg.pause_ns = LL_LL_MAX_PAUSE_NS;
	CHECK(ll_ll_init(&pause_lock, &cfg) == 0, "pause_ns=%lld refused", LL_LL_MAX_PAUSE_NS);
	uint32_t want = ll_spin_iters(LL_SPIN_PAUSE, LL_LL_MAX_PAUSE_NS);
	want = want > UINT16_MAX ? UINT16_MAX : want;
	CHECK(pause_lock.max_pause_looks == want && atomic_load(&pause_lock.pause_looks) == want,
	      "pause_ns=%lld: %u looks, budget %u, expected %u", LL_LL_MAX_PAUSE_NS,
	      (unsigned)pause_lock.max_pause_looks, (unsigned)atomic_load(&pause_lock.pause_looks),
	      want);

	/* Back to back: no work outside the lock, two threads (a poller each time one waits). */
	ll_default_config(&cfg);
	CHECK(ll_ll_init(&pause_lock, &cfg) == 0, "default config refused");
	CHECK(atomic_load(&pause_lock.pause_off) == 0, "pause_off %u after init",
	      atomic_load(&pause_lock.pause_off));
	test_watchdog("ll-pause", 120);
	pthread_t t[2];
	long done[2] = { 0, 0 };
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, pause_main, &done[i]);
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (atomic_load(&pause_lock.pause_off) == 0 && since_s(&t0) < 30.0)
		usleep(1000);
	atomic_store(&pause_stop, 1);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	CHECK(pause_counter == done[0] + done[1], "counter %ld, expected %ld", pause_counter,
	      done[0] + done[1]);
	CHECK(atomic_load(&pause_lock.pause_off) != 0,
	      "%ld back-to-back acquisitions in %.1f s and the paused looks never went off",
	      pause_counter, since_s(&t0));
	printf("ll-pause: knob bounds hold; paused looks off after %ld back-to-back acquisitions "
	       "(%.3f s)\n", pause_counter, since_s(&t0));
	return 0;
}

/* Wait up to 10 s for an ll lock to show every bit of `bits` in `state` and at
 * least `pollers` pollers; 0 if it never did. */
static int ll_wait_shows(ll_ll_t *l, unsigned bits, unsigned pollers)
{
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (since_s(&t0) < 10.0) {
		if ((atomic_load(&l->state) & bits) == bits && atomic_load(&l->pollers) >= pollers)
			return 1;
		usleep(200);
	}
	return 0;
}

/*
 * ---- ll-poll-bound: a poll ends after a rotation while nobody is parked ----
 *
 * A poller waits between sched_yield calls.  On a CPU crowded with runnable
 * threads each yield can give the CPU away for a whole scheduler slice, so
 * a poll that counted only its looks lasted hundreds of milliseconds while
 * nobody queued, and the restriction never started (every waiter polled).
 * Everything here runs on one CPU: a holder that keeps the lock while it
 * sleeps, HOGS threads that only compute, and one contender.  With nobody
 * parked, the contender must leave its poll and take the heir's slot
 * within about rotation_ns (5 ms), not after its looks run out.
 */
enum { BOUND_HOGS = 3 };

static ll_ll_t bound_lock;
static atomic_int bound_stop, bound_arrived;

static int bound_cpu;

static void *bound_hog(void *p)
{
	(void)p;
	test_pin_to_cpu(bound_cpu);
	volatile unsigned x = 0;
	while (!atomic_load_explicit(&bound_stop, memory_order_relaxed))
		x = x + 1;
	return NULL;
}

static void *bound_contender(void *p)
{
	(void)p;
	test_pin_to_cpu(bound_cpu);
	atomic_store(&bound_arrived, 1);
	ll_ll_lock(&bound_lock);
	ll_ll_unlock(&bound_lock);
	return NULL;
}

static int test_ll_poll_bound(void)
{
	struct ll_ll_config cfg;
	ll_default_config(&cfg);
	CHECK(ll_ll_init(&bound_lock, &cfg) == 0, "default config refused");
	bound_cpu = test_usable_cpu(0);
	test_watchdog("ll-poll-bound", 120);
	test_pin_to_cpu(bound_cpu);

	ll_ll_lock(&bound_lock);
	pthread_t hogs[BOUND_HOGS], contender;
	for (int i = 0; i < BOUND_HOGS; i++)
		CHECK(pthread_create(&hogs[i], NULL, bound_hog, NULL) == 0, "pthread_create");
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	CHECK(pthread_create(&contender, NULL, bound_contender, NULL) == 0, "pthread_create");
	/* The holder sleeps (it keeps the lock and gives the CPU away) until the heir appears. */
	int heir = ll_wait_shows(&bound_lock, LL_LL_HEIR, 0);
	double took = since_s(&t0);
	ll_ll_unlock(&bound_lock);
	atomic_store(&bound_stop, 1);
	pthread_join(contender, NULL);
	for (int i = 0; i < BOUND_HOGS; i++)
		pthread_join(hogs[i], NULL);
	CHECK(atomic_load(&bound_arrived), "the contender never ran");
	CHECK(heir && took < 0.25, "with %d threads computing on its CPU, a poller took %.3f s to "
	      "stop polling (%s): the poll is not bounded by the rotation (%lld ns)", BOUND_HOGS,
	      took, heir ? "then became the heir" : "never became the heir",
	      (long long)cfg.rotation_ns);
	printf("ll-poll-bound: a poller beside %d computing threads on one CPU became the heir "
	       "after %.3f s (rotation %lld ns)\n", BOUND_HOGS, took, (long long)cfg.rotation_ns);
	return 0;
}

/*
 * ---- ll-poll-queue: with others parked, a poll is not cut at a rotation ----
 *
 * The other half of the rule above: once a queue exists, the rotation rule
 * moves the pollers through it at their next arrival, and a poll runs its
 * looks out (cutting it too would send every poller to the queue after a
 * rotation and cost the fairness when many clients queue).  One poller
 * (pollers=1), a heir and one parked waiter, rotation_ns of QUEUE_ROTATION_MS
 * and spin_ns of a whole second: the poller must still be polling three
 * rotations after it started.  Should the setup itself outlast half a
 * rotation (a loaded machine), it is tried again.
 */
enum { QUEUE_ROTATION_MS = 100, QUEUE_TRIES = 5 };

static ll_ll_t queue_lock;

static void *queue_waiter(void *p)
{
	(void)p;
	ll_ll_lock(&queue_lock);
	ll_ll_unlock(&queue_lock);
	return NULL;
}

static int test_ll_poll_queue(void)
{
	struct ll_ll_config cfg;
	ll_default_config(&cfg);
	cfg.pollers = 1;
	cfg.rotation_ns = QUEUE_ROTATION_MS * 1000000LL;
	cfg.spin_ns = 1000000000LL;
	test_watchdog("ll-poll-queue", 120);

	for (int attempt = 1;; attempt++) {
		CHECK(ll_ll_init(&queue_lock, &cfg) == 0, "config refused");
		ll_ll_lock(&queue_lock);
		pthread_t t[3];
		struct timespec t0;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		/* In turn: the poller, then the heir (the pollers are full), then one parked. */
		static const unsigned shows[3] = { 0, LL_LL_HEIR, LL_LL_HEIR | LL_LL_PARKED };
		for (int i = 0; i < 3; i++) {
			CHECK(pthread_create(&t[i], NULL, queue_waiter, NULL) == 0, "pthread_create");
			CHECK(ll_wait_shows(&queue_lock, shows[i], i == 0), "waiter %d never showed in "
			      "the lock", i);
		}
		double queued_at = since_s(&t0);
		int slow = queued_at > QUEUE_ROTATION_MS / 2000.0;
		if (!slow)
			usleep(3 * QUEUE_ROTATION_MS * 1000);
		int polling = atomic_load(&queue_lock.pollers) == 1;
		double looked_at = since_s(&t0);
		ll_ll_unlock(&queue_lock);
		for (int i = 0; i < 3; i++)
			pthread_join(t[i], NULL);
		if (slow && attempt < QUEUE_TRIES)
			continue;
		CHECK(!slow, "%d tries and the queue took more than half a rotation to form each time "
		      "(%.3f s the last)", attempt, queued_at);
		CHECK(polling, "with a heir and a parked waiter, the poller stopped polling within "
		      "%.3f s (rotation %d ms, spin_ns 1 s): a poll is cut by the rotation while "
		      "others are parked", looked_at, QUEUE_ROTATION_MS);
		printf("ll-poll-queue: with a waiter parked, a poll went on past three rotations "
		       "(%.3f s; try %d)\n", looked_at, attempt);
		return 0;
	}
}

int main(int argc, char **argv)
{
	static const struct test_case tests[] = {
		{ "exclusion", test_exclusion, 1 }, { "trylock", test_trylock, 1 },
		{ "timed", test_timed, 1 },         { "wakeup", test_wakeup, 1 },
		{ "nested", test_nested, 0 },       { "config", test_config, 0 },
		{ "innodb56-events", test_innodb56_events, 0 },
		{ "ll-pollers", test_ll_pollers, 0 }, { "ll-drain", test_ll_drain, 0 },
		{ "ll-pause", test_ll_pause, 0 }, { "ll-poll-bound", test_ll_poll_bound, 0 },
		{ "ll-poll-queue", test_ll_poll_queue, 0 },
	};
	const struct test_case *t = test_pick(argc, argv, tests, sizeof(tests) / sizeof(tests[0]),
					      "exclusion|trylock|timed|wakeup ALGO | nested | config | "
					      "innodb56-events | ll-pollers | ll-drain | ll-pause | "
					      "ll-poll-bound | ll-poll-queue",
					      &algo);
	return t ? t->run() : 2;
}
