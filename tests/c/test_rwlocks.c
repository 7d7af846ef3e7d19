/*
 * test_rwlocks.c: correctness of every rwlock through the generic API.
 *
 *   test_rwlocks exclusion ALGO    readers and writers: a writer never sees anyone
 *                                  inside, readers never see a writer, counters add up
 *   test_rwlocks try ALGO          tryrdlock / trywrlock semantics across threads
 *   test_rwlocks timed ALGO        timed read and write waits, every representable
 *                                  deadline, both clocks
 *   test_rwlocks wakeup ALGO       256 threads mixing readers, writers and timed waits
 *   test_rwlocks starvation ALGO   a writer gets in under a continuous stream of readers
 *   test_rwlocks recursion ALGO    a reader locks again past a waiting writer; a thread
 *                                  holds 12 locks twice each
 *   test_rwlocks config            registry and option errors
 *   test_rwlocks ll-table          ll's table of visible readers: readers crowded on
 *                                  one CPU fill its line and grow the table, and every
 *                                  hold keeps writers out; a reader that moves to
 *                                  another CPU leaves the slot it took
 *   test_rwlocks innodb56          innodb56-rw's lock_word step by step: x recursion,
 *                                  wait_ex keeps new readers out, a timed-out wait_ex
 *                                  writer gives the reservation back and wakes readers
 *   test_rwlocks revocation UNDER  bravo over UNDER: table readers hold off a revoking
 *                                  writer, a timed revocation gives up with the bias
 *                                  back on, inhibit keeps it off; a stress with the
 *                                  bias flipping where counters add up
 *
 * ctest runs each test for each rwlock of src/lib/rwlocks/rwlocks.def.
 */
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "locklab/locklab.h"
#include "locklab/rwlocks/bravo.h"
#include "locklab/rwlocks/innodb56.h"
#include "locklab/rwlocks/ll.h"

static const char *algo;

static void init_rw(ll_rwlock_t *rw, const char *opts)
{
	struct ll_error err;
	int rc = ll_rwlock_init(rw, algo, opts, &err);
	CHECK(rc == 0, "init %s %s: %s", algo, opts ? opts : "", err.msg);
}

/* The lock's writer-preferring setting, where a knob chooses it (glibc's kind). */
static const char *writer_first_opts(void)
{
	const struct ll_rwlock_ops *ops = ll_rwlock_algo_find(algo, NULL);
	CHECK(ops, "unknown rwlock %s", algo);
	for (size_t k = 0; k < ops->nknobs; k++)
		if (!strcmp(ops->knobs[k].name, "prefer"))
			return "prefer=writer-nonrecursive";
	return NULL;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000 };
	while (nanosleep(&ts, &ts))
		;
}

/* ---- exclusion ---- */

enum { EXCL_LOCKS = 2 };

struct guarded {
	ll_rwlock_t rw;
	atomic_int readers, writers;
	atomic_long violations;
	/* Plain: only the lock orders it, so TSan sees a race if it fails. */
	volatile long counter;
};

static struct guarded guarded[EXCL_LOCKS];

struct excl_arg {
	int id;
	long iters;
	long writes[EXCL_LOCKS], reads;
};

static void excl_write(struct guarded *g, unsigned r)
{
	if (atomic_fetch_add(&g->writers, 1) != 0 || atomic_load(&g->readers) != 0)
		atomic_fetch_add(&g->violations, 1);
	long c = g->counter;
	for (int s = 0; s < (int)(r & 7); s++)
		atomic_signal_fence(memory_order_seq_cst);
	if ((r & 0x3f00) == 0)
		sched_yield();
	g->counter = c + 1;
	atomic_fetch_sub(&g->writers, 1);
}

static void excl_read(struct guarded *g, unsigned r)
{
	atomic_fetch_add(&g->readers, 1);
	if (atomic_load(&g->writers) != 0)
		atomic_fetch_add(&g->violations, 1);
	long c = g->counter;
	for (int s = 0; s < (int)(r & 15); s++)
		atomic_signal_fence(memory_order_seq_cst);
	if ((r & 0x3f00) == 0)
		sched_yield();
	if (g->counter != c)
		atomic_fetch_add(&g->violations, 1);
	atomic_fetch_sub(&g->readers, 1);
}

static void *excl_main(void *p)
{
	struct excl_arg *a = p;
	unsigned r = (unsigned)a->id * 2654435761u + 1;

	for (long i = 0; i < a->iters; i++) {
		r = r * 1103515245u + 12345u;
		int k = (int)((r >> 16) % EXCL_LOCKS);
		struct guarded *g = &guarded[k];
		unsigned how = (r >> 8) & 15;
		if (how < 2) {
			/* Writers: plain, try and timed. */
			if (how == 0 || ll_rwlock_trywrlock(&g->rw) != 0)
				while (ll_rwlock_timedwrlock_ns(&g->rw, 50000) == ETIMEDOUT)
					;
			excl_write(g, r);
			ll_rwlock_unlock(&g->rw);
			a->writes[k]++;
		} else {
			if (how == 2) {
				if (ll_rwlock_tryrdlock(&g->rw) != 0)
					CHECK(ll_rwlock_rdlock(&g->rw) == 0, "rdlock");
			} else if (how == 3) {
				while (ll_rwlock_timedrdlock_ns(&g->rw, 20000) == ETIMEDOUT)
					;
			} else {
				CHECK(ll_rwlock_rdlock(&g->rw) == 0, "rdlock");
			}
			excl_read(g, r);
			ll_rwlock_unlock(&g->rw);
			a->reads++;
		}
	}
	return NULL;
}

static int test_exclusion(void)
{
	int nthreads = 4 * test_ncpu() < 8 ? 8 : 4 * test_ncpu();
	long total = test_scaled(2000000);
	struct excl_arg *args = calloc((size_t)nthreads, sizeof(*args));

	test_watchdog("exclusion", 300);
	for (int k = 0; k < EXCL_LOCKS; k++)
		init_rw(&guarded[k].rw, NULL);
	for (int i = 0; i < nthreads; i++) {
		args[i].id = i;
		args[i].iters = total / nthreads;
	}
	uint64_t t0 = ll_now_ns();
	test_run_threads(nthreads, excl_main, args, sizeof(*args));
	double secs = (double)(ll_now_ns() - t0) / 1e9;
	long writes = 0, reads = 0;
	for (int k = 0; k < EXCL_LOCKS; k++) {
		long expect = 0;
		for (int i = 0; i < nthreads; i++)
			expect += args[i].writes[k];
		CHECK(atomic_load(&guarded[k].violations) == 0, "%s: lock %d: %ld sections saw "
		      "another inside", algo, k, atomic_load(&guarded[k].violations));
		CHECK(guarded[k].counter == expect, "%s: lock %d: counter %ld, expected %ld", algo, k,
		      guarded[k].counter, expect);
		writes += expect;
		ll_rwlock_destroy(&guarded[k].rw);
	}
	for (int i = 0; i < nthreads; i++)
		reads += args[i].reads;
	printf("exclusion %s: %d threads, %ld writes and %ld reads in %.2f s, counters add up\n",
	       algo, nthreads, writes, reads, secs);
	free(args);
	return 0;
}

/* ---- try ---- */

static ll_rwlock_t shared;
static atomic_int step;

static void wait_step(int s)
{
	while (atomic_load(&step) < s)
		sched_yield();
}

/* The peer's try results, step by step: see test_try. */
static void *try_peer(void *p)
{
	int *res = p;
	wait_step(1);                          /* main holds it for writing */
	res[0] = ll_rwlock_tryrdlock(&shared);
	res[1] = ll_rwlock_trywrlock(&shared);
	atomic_store(&step, 2);
	wait_step(3);                          /* main holds it for reading */
	res[2] = ll_rwlock_tryrdlock(&shared);
	if (res[2] == 0)
		ll_rwlock_unlock(&shared);
	res[3] = ll_rwlock_trywrlock(&shared);
	atomic_store(&step, 4);
	wait_step(5);                          /* free */
	res[4] = ll_rwlock_trywrlock(&shared);
	atomic_store(&step, 6);
	wait_step(7);
	ll_rwlock_unlock(&shared);
	atomic_store(&step, 8);
	return NULL;
}

static int test_try(void)
{
	int res[5] = { -1, -1, -1, -1, -1 };
	pthread_t t;

	init_rw(&shared, NULL);
	CHECK(ll_rwlock_trywrlock(&shared) == 0, "%s: trywrlock of a free lock failed", algo);
	pthread_create(&t, NULL, try_peer, res);
	atomic_store(&step, 1);
	wait_step(2);
	CHECK(ll_rwlock_unlock(&shared) == 0, "%s: write unlock", algo);
	CHECK(ll_rwlock_tryrdlock(&shared) == 0, "%s: tryrdlock of a free lock failed", algo);
	/* A second read lock by the same thread (POSIX allows holding it n times). */
	CHECK(ll_rwlock_tryrdlock(&shared) == 0, "%s: recursive tryrdlock failed", algo);
	CHECK(ll_rwlock_unlock(&shared) == 0, "%s: inner read unlock", algo);
	atomic_store(&step, 3);
	wait_step(4);
	CHECK(ll_rwlock_unlock(&shared) == 0, "%s: read unlock", algo);
	atomic_store(&step, 5);
	wait_step(6);                          /* the peer holds it for writing */
	CHECK(ll_rwlock_tryrdlock(&shared) == EBUSY, "%s: tryrdlock of a write-held lock "
	      "succeeded", algo);
	CHECK(ll_rwlock_trywrlock(&shared) == EBUSY, "%s: trywrlock of a write-held lock "
	      "succeeded", algo);
	atomic_store(&step, 7);
	wait_step(8);
	pthread_join(t, NULL);
	CHECK(res[0] == EBUSY, "%s: tryrdlock of a write-held lock returned %d", algo, res[0]);
	CHECK(res[1] == EBUSY, "%s: trywrlock of a write-held lock returned %d", algo, res[1]);
	CHECK(res[2] == 0, "%s: tryrdlock of a read-held lock returned %d", algo, res[2]);
	CHECK(res[3] == EBUSY, "%s: trywrlock of a read-held lock returned %d", algo, res[3]);
	CHECK(res[4] == 0, "%s: trywrlock of a free lock returned %d", algo, res[4]);
	CHECK(ll_rwlock_trywrlock(&shared) == 0, "%s: trywrlock after release failed", algo);
	CHECK(ll_rwlock_unlock(&shared) == 0, "%s: unlock", algo);
	ll_rwlock_destroy(&shared);
	printf("try %s: ok\n", algo);
	return 0;
}

/* ---- recursion: reading again with a writer waiting, and many locks at once ---- */

static atomic_int writer_in;

static void *waiting_writer(void *p)
{
	(void)p;
	atomic_store(&step, 1);
	CHECK(ll_rwlock_wrlock(&shared) == 0, "wrlock");
	atomic_store(&writer_in, 1);
	ll_rwlock_unlock(&shared);
	return NULL;
}

enum { MANY = 12 };   /* more locks than ll keeps slots for a thread (8) */
static ll_rwlock_t many[MANY];

static void *try_write_many(void *p)
{
	int *busy = p;
	for (int k = 0; k < MANY; k++)
		if (ll_rwlock_trywrlock(&many[k]) == EBUSY)
			(*busy)++;
		else
			ll_rwlock_unlock(&many[k]);
	return NULL;
}

/*
 * Whether a thread that reads the lock may read it again while a writer
 * waits.  innodb56-rw may not, as InnoDB's rw_lock_t: the waiting writer has
 * already taken X_LOCK_DECR off lock_word (wait_ex), no s-lock gets in past
 * it, and the writer waits for the reader that waits for it.  Only a timed
 * read returns; the test expects it to time out.
 */
static int reads_past_waiting_writer(void)
{
	return strcmp(algo, "innodb56-rw") != 0;
}

static int test_recursion(void)
{
	pthread_t t;

	init_rw(&shared, NULL);
	test_watchdog("recursion", 60);
	atomic_store(&step, 0);
	CHECK(ll_rwlock_rdlock(&shared) == 0, "rdlock");
	pthread_create(&t, NULL, waiting_writer, NULL);
	wait_step(1);
	sleep_ms(50);   /* the writer is waiting by now */
	CHECK(!atomic_load(&writer_in), "%s: a writer got in beside a reader", algo);
	if (reads_past_waiting_writer()) {
		/* A reader may lock again (POSIX): it must not queue behind the writer it blocks. */
		int rc = ll_rwlock_timedrdlock_ns(&shared, 2000000000);
		CHECK(rc == 0, "%s: recursive read with a writer waiting returned %d", algo, rc);
		CHECK(ll_rwlock_unlock(&shared) == 0 && !atomic_load(&writer_in), "%s: writer in "
		      "after the inner unlock", algo);
	} else {
		/* The writer has reserved the lock: the read waits for it, which waits for us. */
		int rc = ll_rwlock_timedrdlock_ns(&shared, 50000000);
		CHECK(rc == ETIMEDOUT && !atomic_load(&writer_in), "%s: recursive read with a "
		      "writer waiting returned %d, writer in %d", algo, rc, atomic_load(&writer_in));
		CHECK(ll_rwlock_tryrdlock(&shared) == EBUSY, "%s: tryrdlock past a waiting writer",
		      algo);
	}
	CHECK(ll_rwlock_unlock(&shared) == 0, "unlock");
	pthread_join(t, NULL);
	CHECK(atomic_load(&writer_in), "%s: writer never got in", algo);
	ll_rwlock_destroy(&shared);

	/* Twice each of more locks than a thread has slots for: every hold counts. */
	for (int k = 0; k < MANY; k++) {
		init_rw(&many[k], NULL);
		CHECK(ll_rwlock_rdlock(&many[k]) == 0 && ll_rwlock_rdlock(&many[k]) == 0, "rdlock");
	}
	for (int round = 0; round < 3; round++) {
		int busy = 0;
		pthread_create(&t, NULL, try_write_many, &busy);
		pthread_join(t, NULL);
		CHECK(busy == (round < 2 ? MANY : 0), "%s: round %d: %d of %d read-held locks busy "
		      "to a writer", algo, round, busy, MANY);
		if (round < 2)
			for (int k = 0; k < MANY; k++)
				CHECK(ll_rwlock_unlock(&many[k]) == 0, "%s: unlock %d", algo, k);
	}
	for (int k = 0; k < MANY; k++)
		ll_rwlock_destroy(&many[k]);
	printf("recursion %s: %s; %d locks held twice each\n", algo,
	       reads_past_waiting_writer() ? "read again past a waiting writer"
					   : "a read again waits for the waiting writer", MANY);
	return 0;
}

/* ---- timed ---- */

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

static int test_timed(void)
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

/* ---- lost wakeups: 256 threads ---- */

enum { WAKEUP_THREADS = 256 };

static volatile long wake_counter;
static atomic_long wake_timeouts, wake_writes;
static atomic_int wake_readers, wake_writers, wake_bad;

struct wake_arg {
	long iters;
	unsigned id;
};

static void *wakeup_main(void *p)
{
	const struct wake_arg *a = p;
	long iters = a->iters;
	unsigned id = a->id;
	for (long i = 0; i < iters; i++) {
		/* A quarter of each thread's sections write; a quarter of the waits are timed. */
		int write = ((unsigned)i + id) % 4 == 0, timed = i % 4 == 3;
		if (timed) {
			while ((write ? ll_rwlock_timedwrlock_ns(&shared, 200000)
				      : ll_rwlock_timedrdlock_ns(&shared, 200000)) == ETIMEDOUT)
				atomic_fetch_add_explicit(&wake_timeouts, 1, memory_order_relaxed);
		} else {
			CHECK((write ? ll_rwlock_wrlock(&shared) : ll_rwlock_rdlock(&shared)) == 0,
			      "lock");
		}
		if (write) {
			if (atomic_fetch_add(&wake_writers, 1) || atomic_load(&wake_readers))
				atomic_fetch_add(&wake_bad, 1);
			if ((i & 7) == 0)
				sched_yield();
			wake_counter = wake_counter + 1;
			atomic_fetch_sub(&wake_writers, 1);
			atomic_fetch_add_explicit(&wake_writes, 1, memory_order_relaxed);
		} else {
			atomic_fetch_add(&wake_readers, 1);
			if (atomic_load(&wake_writers))
				atomic_fetch_add(&wake_bad, 1);
			if ((i & 7) == 1)
				sched_yield();
			atomic_fetch_sub(&wake_readers, 1);
		}
		ll_rwlock_unlock(&shared);
	}
	return NULL;
}

static int test_wakeup(void)
{
	long iters = test_scaled(400);
	struct wake_arg *args = malloc(sizeof(*args) * WAKEUP_THREADS);
	for (int i = 0; i < WAKEUP_THREADS; i++)
		args[i] = (struct wake_arg){ iters, (unsigned)i };
	init_rw(&shared, NULL);
	test_watchdog("wakeup", 300);
	test_run_threads(WAKEUP_THREADS, wakeup_main, args, sizeof(*args));
	CHECK(atomic_load(&wake_bad) == 0, "%s: %d sections saw a writer beside them", algo,
	      atomic_load(&wake_bad));
	CHECK(wake_counter == atomic_load(&wake_writes), "%s: counter %ld, %ld writes", algo,
	      wake_counter, atomic_load(&wake_writes));
	ll_rwlock_destroy(&shared);
	printf("wakeup %s: %d threads x %ld sections (%ld writes) finished, %ld timed-out waits\n",
	       algo, WAKEUP_THREADS, iters, atomic_load(&wake_writes), atomic_load(&wake_timeouts));
	free(args);
	return 0;
}

/* ---- writer starvation ---- */

enum { STREAM_READERS = 4 };
static atomic_int stream_stop, stream_inside;
static atomic_long stream_reads;

/* Back to back read sections, each a few microseconds: some reader is nearly always inside. */
static void *stream_reader(void *p)
{
	(void)p;
	while (!atomic_load_explicit(&stream_stop, memory_order_relaxed)) {
		CHECK(ll_rwlock_rdlock(&shared) == 0, "rdlock");
		atomic_fetch_add(&stream_inside, 1);
		uint64_t until = ll_now_ns() + 5000;
		while (ll_now_ns() < until)
			ll_cpu_relax();
		atomic_fetch_sub(&stream_inside, 1);
		ll_rwlock_unlock(&shared);
		atomic_fetch_add_explicit(&stream_reads, 1, memory_order_relaxed);
	}
	return NULL;
}

static int test_starvation(void)
{
	const char *opts = writer_first_opts();
	const int64_t limit_ms = 5000;
	long writes = test_scaled(200);
	pthread_t readers[STREAM_READERS];
	double max_ms = 0;

	init_rw(&shared, opts);
	test_watchdog("starvation", 300);
	for (int i = 0; i < STREAM_READERS; i++)
		pthread_create(&readers[i], NULL, stream_reader, NULL);
	/* The stream is flowing before the writer comes. */
	while (atomic_load(&stream_reads) < 100)
		sched_yield();
	for (long w = 0; w < writes; w++) {
		uint64_t t0 = ll_now_ns();
		int rc = ll_rwlock_timedwrlock_ns(&shared, limit_ms * 1000000);
		double ms = (double)(ll_now_ns() - t0) / 1e6;
		CHECK(rc == 0, "%s%s%s: writer %ld starved: no entry in %lld ms under a stream of "
		      "%d readers", algo, opts ? " " : "", opts ? opts : "", w, (long long)limit_ms,
		      STREAM_READERS);
		CHECK(atomic_load(&stream_inside) == 0, "%s: a reader inside with the writer", algo);
		ll_rwlock_unlock(&shared);
		if (ms > max_ms)
			max_ms = ms;
		sleep_ms(1);
	}
	atomic_store(&stream_stop, 1);
	for (int i = 0; i < STREAM_READERS; i++)
		pthread_join(readers[i], NULL);
	ll_rwlock_destroy(&shared);
	printf("starvation %s%s%s: %ld writes under %d streaming readers (%ld reads), longest "
	       "writer wait %.2f ms\n", algo, opts ? " " : "", opts ? opts : "", writes,
	       STREAM_READERS, atomic_load(&stream_reads), max_ms);
	return 0;
}

/* ---- registry and options ---- */

static int test_config(void)
{
	struct ll_error err;
	ll_rwlock_t rw;

	CHECK(ll_rwlock_init(&rw, NULL, NULL, &err) == 0, "default init: %s", err.msg);
	CHECK(!strcmp(ll_rwlock_algo(&rw), LL_DEFAULT_RWLOCK), "default is %s", ll_rwlock_algo(&rw));
	ll_rwlock_destroy(&rw);

	CHECK(ll_rwlock_init(&rw, "nope", NULL, &err) == EINVAL, "unknown rwlock accepted");
	CHECK(strstr(err.msg, "unknown rwlock 'nope' (valid: pthread, ll, partitioned"),
	      "message: %s", err.msg);
	/* A mutex's name that is no rwlock's. */
	CHECK(ll_rwlock_init(&rw, "innodb56", NULL, &err) == EINVAL, "mutex name accepted");
	CHECK(ll_rwlock_init(&rw, "ll", "bogus=1", &err) == EINVAL, "unknown knob accepted");
	CHECK(strstr(err.msg, "rwlock 'll'") && strstr(err.msg, "inhibit"), "message: %s", err.msg);
	CHECK(ll_rwlock_init(&rw, "pthread", "prefer=writer", &err) == EINVAL, "bad choice accepted");
	CHECK(strstr(err.msg, "reader, writer-nonrecursive"), "message: %s", err.msg);
	CHECK(ll_rwlock_init(&rw, "partitioned", "n=0", &err) == EINVAL, "n=0 accepted");
	CHECK(ll_rwlock_init(&rw, "partitioned", "n=1025", &err) == EINVAL, "n=1025 accepted");
	CHECK(ll_rwlock_init(&rw, "ll", "inhibit=9,inhibit=3", &err) == EINVAL &&
	      strstr(err.msg, "option 'inhibit' of rwlock 'll' given twice"), "%s", err.msg);
	CHECK(ll_rwlock_init(&rw, "ll", "bias=0,", &err) == EINVAL &&
	      strstr(err.msg, "(empty item)"), "%s", err.msg);

	/* Options reach the lock: partitioned with one partition, ll without bias, still lock. */
	static const char *const good[][2] = {
		{ "partitioned", "n=1,prefer=writer-nonrecursive" }, { "ll", "bias=0,spin_ns=0" },
		{ "ll", "inhibit=0" }, { "pthread", "prefer=writer-nonrecursive" },
	};
	for (size_t i = 0; i < LL_COUNT(good); i++) {
		CHECK(ll_rwlock_init(&rw, good[i][0], good[i][1], &err) == 0, "%s %s: %s", good[i][0],
		      good[i][1], err.msg);
		CHECK(ll_rwlock_wrlock(&rw) == 0 && ll_rwlock_tryrdlock(&rw) == EBUSY, "%s %s: "
		      "read beside the writer", good[i][0], good[i][1]);
		CHECK(ll_rwlock_unlock(&rw) == 0 && ll_rwlock_rdlock(&rw) == 0, "%s %s: read after "
		      "the writer", good[i][0], good[i][1]);
		ll_rwlock_unlock(&rw);
		ll_rwlock_destroy(&rw);
	}

	/* ll: a reader's own write lock would wait for itself; an unheld unlock is refused. */
	CHECK(ll_rwlock_init(&rw, "ll", NULL, &err) == 0, "%s", err.msg);
	CHECK(ll_rwlock_unlock(&rw) == EPERM, "ll: unlock of a free lock accepted");
	CHECK(ll_rwlock_rdlock(&rw) == 0, "rdlock");
	CHECK(ll_rwlock_trywrlock(&rw) == EDEADLK && ll_rwlock_wrlock(&rw) == EDEADLK,
	      "ll: write lock by a reader of the lock not refused");
	ll_rwlock_unlock(&rw);
	ll_rwlock_destroy(&rw);

	/* A caller's table that does not fit is refused before anything is written. */
	struct ll_rwlock_ops big = *ll_rwlock_algo_find("ll", NULL);
	big.name = "too-big";
	big.state_size = LL_RWLOCK_STATE_BYTES + 8;
	CHECK(ll_rwlock_init_opts(&rw, &big, NULL, &err) == EINVAL &&
	      strstr(err.msg, "rwlock 'too-big': state of 128 bytes is larger than "
		     "LL_RWLOCK_STATE_BYTES (120)"), "oversized state: %s", err.msg);
	CHECK(ll_rwlock_init_config(&rw, &big, NULL) == EINVAL, "oversized state accepted");

	/* rwlocks.def's names are the ops tables'; states fit a line; defaults in range. */
	static const char *const registered[] = {
#define LL_RWLOCK(id, name) name,
#include "rwlocks/rwlocks.def"
#undef LL_RWLOCK
	};
	CHECK(LL_COUNT(registered) == ll_rwlock_algo_count(), "%zu registered, %zu in the table",
	      LL_COUNT(registered), ll_rwlock_algo_count());
	for (size_t i = 0; i < ll_rwlock_algo_count(); i++) {
		const struct ll_rwlock_ops *ops = ll_rwlock_algo_at(i);
		CHECK(!strcmp(registered[i], ops->name), "rwlocks.def names '%s' where its ops table "
		      "says '%s'", registered[i], ops->name);
		CHECK(ops->state_size <= LL_STATE_LINE_BYTES, "%s state %zu bytes, over the %d-byte "
		      "line", ops->name, ops->state_size, LL_STATE_LINE_BYTES);
		for (size_t k = 0; k < ops->nknobs; k++)
			CHECK(ops->knobs[k].def >= ops->knobs[k].min &&
			      ops->knobs[k].def <= ops->knobs[k].max, "%s.%s default out of range",
			      ops->name, ops->knobs[k].name);
		CHECK(ll_rwlock_algo_find(ops->name, NULL) == ops, "%s not found by name", ops->name);
	}
	CHECK(ll_rwlock_algo_find("ll", NULL)->state_size == sizeof(ll_rw_ll_t) &&
	      sizeof(ll_rw_ll_t) == 40, "ll_rw_ll_t is %zu bytes, drawn as 40", sizeof(ll_rw_ll_t));
	printf("config: ok\n");
	return 0;
}

/* ---- bravo: its table, revocation and inhibit, over the underlying lock `algo` ---- */

enum { TABLE_READERS = 4 };

static ll_rw_bravo_t *bravo_of(ll_rwlock_t *rw)
{
	return (ll_rw_bravo_t *)(void *)rw->state;
}

static void init_bravo(ll_rwlock_t *rw, const char *extra)
{
	char opts[128];
	struct ll_error err;
	snprintf(opts, sizeof(opts), "under=%s,%s", algo, extra);
	CHECK(ll_rwlock_init(rw, "bravo", opts, &err) == 0, "bravo %s: %s", opts, err.msg);
}

static atomic_int readers_in, readers_go, writer_done, overlap;

/* Holds `shared` for reading until readers_go passes its number. */
static void *table_reader(void *p)
{
	int id = (int)(intptr_t)p;
	CHECK(ll_rwlock_rdlock(&shared) == 0, "rdlock");
	atomic_fetch_add(&readers_in, 1);
	while (atomic_load(&readers_go) <= id)
		sleep_ms(1);
	if (atomic_load(&writer_done))
		atomic_fetch_add(&overlap, 1);
	atomic_fetch_sub(&readers_in, 1);
	ll_rwlock_unlock(&shared);
	return NULL;
}

static void *revoking_writer(void *p)
{
	(void)p;
	CHECK(ll_rwlock_wrlock(&shared) == 0, "wrlock");
	if (atomic_load(&readers_in))
		atomic_fetch_add(&overlap, 1);
	atomic_store(&writer_done, 1);
	ll_rwlock_unlock(&shared);
	return NULL;
}

/* One try of `shared` in a new thread: the read side (write 0) or the write side. */
struct try_once {
	int write, rc;
};

static void *try_once_main(void *p)
{
	struct try_once *t = p;
	t->rc = t->write ? ll_rwlock_trywrlock(&shared) : ll_rwlock_tryrdlock(&shared);
	if (t->rc == 0)
		ll_rwlock_unlock(&shared);
	return NULL;
}

static int in_other_thread(int write)
{
	pthread_t t;
	struct try_once o = { .write = write, .rc = -1 };
	pthread_create(&t, NULL, try_once_main, &o);
	pthread_join(t, NULL);
	return o.rc;
}

/* Readers in the table, a writer revoking: it enters only after the last has left. */
static void check_revocation_waits(void)
{
	pthread_t rd[TABLE_READERS], wr;
	init_bravo(&shared, "inhibit=0");
	ll_rw_bravo_t *b = bravo_of(&shared);
	atomic_store(&readers_go, 0);
	for (int i = 0; i < TABLE_READERS; i++)
		pthread_create(&rd[i], NULL, table_reader, (void *)(intptr_t)i);
	while (atomic_load(&readers_in) < TABLE_READERS)
		sleep_ms(1);
	/* Two threads may hash to one slot (the second reads through the underlying lock). */
	unsigned in_table = ll_rw_bravo_table_holds(b);
	CHECK(in_table >= 1 && in_table <= TABLE_READERS, "%s: %u of %d readers in the table",
	      algo, in_table, TABLE_READERS);
	pthread_create(&wr, NULL, revoking_writer, NULL);
	sleep_ms(30);
	CHECK(!atomic_load(&writer_done), "bravo/%s: the writer entered beside %d readers", algo,
	      TABLE_READERS);
	CHECK(atomic_load(&b->bias) != 1, "bravo/%s: bias still on under a revoking writer", algo);
	CHECK(in_other_thread(0) == EBUSY, "bravo/%s: a new reader got in past a "
	      "revoking writer", algo);
	for (int i = 0; i < TABLE_READERS; i++) {
		CHECK(!atomic_load(&writer_done), "bravo/%s: writer in with %d readers inside", algo,
		      TABLE_READERS - i);
		atomic_store(&readers_go, i + 1);
		pthread_join(rd[i], NULL);
		if (i + 1 < TABLE_READERS)
			sleep_ms(10);
	}
	pthread_join(wr, NULL);
	CHECK(atomic_load(&writer_done) && !atomic_load(&overlap), "bravo/%s: writer done %d, "
	      "%d overlaps", algo, atomic_load(&writer_done), atomic_load(&overlap));
	CHECK(ll_rw_bravo_table_holds(b) == 0 && atomic_load(&b->bias) == 0, "bravo/%s: after "
	      "the writer: %u table holds, bias %u", algo, ll_rw_bravo_table_holds(b),
	      atomic_load(&b->bias));
	/* inhibit=0: the first reader through the underlying lock turns the bias back on. */
	CHECK(ll_rwlock_rdlock(&shared) == 0 && ll_rw_bravo_table_holds(b) == 0, "slow read");
	ll_rwlock_unlock(&shared);
	CHECK(ll_rwlock_rdlock(&shared) == 0 && ll_rw_bravo_table_holds(b) == 1, "bravo/%s: the "
	      "read after the bias came back is not in the table", algo);
	ll_rwlock_unlock(&shared);
	ll_rwlock_destroy(&shared);
}

/* A timed revocation gives up at its deadline, the bias back on; inhibit keeps it off. */
static void check_timed_revocation_and_inhibit(void)
{
	pthread_t rd;
	init_bravo(&shared, "inhibit=1000");
	ll_rw_bravo_t *b = bravo_of(&shared);
	atomic_store(&readers_go, 0);
	atomic_store(&writer_done, 0);
	pthread_create(&rd, NULL, table_reader, (void *)(intptr_t)0);
	while (atomic_load(&readers_in) < 1)
		sleep_ms(1);
	CHECK(ll_rw_bravo_table_holds(b) == 1, "bravo/%s: the reader is not in the table", algo);
	uint64_t t0 = ll_now_ns();
	int rc = ll_rwlock_timedwrlock_ns(&shared, 20000000);
	double ms = (double)(ll_now_ns() - t0) / 1e6;
	CHECK(rc == ETIMEDOUT && ms >= 20 && ms < 2000, "bravo/%s: timed wrlock beside a table "
	      "reader returned %d after %.1f ms", algo, rc, ms);
	/* The table reader still holds it: bias on, so the next writer looks for it. */
	CHECK(atomic_load(&b->bias) == 1, "bravo/%s: bias %u after a timed-out revocation", algo,
	      atomic_load(&b->bias));
	CHECK(in_other_thread(1) == EBUSY, "bravo/%s: a writer got in beside the "
	      "table reader after a timed-out revocation", algo);
	CHECK(in_other_thread(0) == 0, "bravo/%s: a reader refused beside a reader",
	      algo);
	/* Released 20 ms into a revocation: inhibit=1000 keeps the bias off for seconds. */
	pthread_t wr;
	pthread_create(&wr, NULL, revoking_writer, NULL);
	sleep_ms(20);
	atomic_store(&readers_go, 1);
	pthread_join(rd, NULL);
	pthread_join(wr, NULL);
	CHECK(atomic_load(&writer_done) && !atomic_load(&overlap), "bravo/%s: overlap", algo);
	for (int i = 0; i < 3; i++) {
		CHECK(ll_rwlock_rdlock(&shared) == 0, "rdlock");
		CHECK(ll_rw_bravo_table_holds(b) == 0 && atomic_load(&b->bias) == 0, "bravo/%s: bias "
		      "back on within the inhibit time (read %d)", algo, i);
		ll_rwlock_unlock(&shared);
	}
	ll_rwlock_destroy(&shared);
}

/* Readers and writers, the bias revoked and restored all along: counters add up. */
static atomic_long biased_reads, plain_reads, stress_writes;
static volatile long stress_counter;
static atomic_int stress_readers, stress_writers;

static void *bravo_stress(void *p)
{
	ll_rw_bravo_t *b = bravo_of(&shared);
	long iters = *(long *)p;
	unsigned r = (unsigned)(uintptr_t)&r;
	for (long i = 0; i < iters; i++) {
		r = r * 1103515245u + 12345u;
		if ((r >> 16) % 16 == 0) {
			CHECK(ll_rwlock_wrlock(&shared) == 0, "wrlock");
			if (atomic_fetch_add(&stress_writers, 1) || atomic_load(&stress_readers))
				atomic_fetch_add(&overlap, 1);
			stress_counter = stress_counter + 1;
			atomic_fetch_sub(&stress_writers, 1);
			atomic_fetch_add(&stress_writes, 1);
		} else {
			CHECK(ll_rwlock_rdlock(&shared) == 0, "rdlock");
			atomic_fetch_add(&stress_readers, 1);
			if (atomic_load(&stress_writers))
				atomic_fetch_add(&overlap, 1);
			long c = stress_counter;
			if ((r & 0x700) == 0)
				sched_yield();
			if (stress_counter != c)
				atomic_fetch_add(&overlap, 1);
			/* Which state the bias is in while a reader is inside: both must occur. */
			atomic_fetch_add(atomic_load(&b->bias) == 1 ? &biased_reads : &plain_reads, 1);
			atomic_fetch_sub(&stress_readers, 1);
		}
		ll_rwlock_unlock(&shared);
	}
	return NULL;
}

static int test_revocation(void)
{
	CHECK(strcmp(algo, "bravo") != 0, "bravo over itself");
	test_watchdog("revocation", 120);
	check_revocation_waits();
	check_timed_revocation_and_inhibit();

	enum { STRESS_THREADS = 6 };
	long iters[STRESS_THREADS];
	for (int i = 0; i < STRESS_THREADS; i++)
		iters[i] = test_scaled(100000);
	init_bravo(&shared, "inhibit=0");
	atomic_store(&overlap, 0);
	test_run_threads(STRESS_THREADS, bravo_stress, iters, sizeof(iters[0]));
	CHECK(!atomic_load(&overlap), "bravo/%s: %d sections saw another inside", algo,
	      atomic_load(&overlap));
	CHECK(stress_counter == atomic_load(&stress_writes), "bravo/%s: counter %ld, %ld writes",
	      algo, stress_counter, atomic_load(&stress_writes));
	CHECK(atomic_load(&biased_reads) > 0 && atomic_load(&plain_reads) > 0 &&
	      atomic_load(&stress_writes) > 0, "bravo/%s: %ld biased reads, %ld others, %ld writes: "
	      "both paths not exercised", algo, atomic_load(&biased_reads),
	      atomic_load(&plain_reads), atomic_load(&stress_writes));
	CHECK(ll_rw_bravo_table_holds(bravo_of(&shared)) == 0, "bravo/%s: table not empty", algo);
	ll_rwlock_destroy(&shared);
	printf("revocation bravo over %s: writers waited for table readers, timed revocation "
	       "gave up with the bias on, inhibit held; stress: %ld writes, %ld biased and %ld "
	       "other reads, counters add up\n", algo, atomic_load(&stress_writes),
	       atomic_load(&biased_reads), atomic_load(&plain_reads));
	return 0;
}

/* ---- innodb56-rw: InnoDB's lock_word, recursion and wait_ex ---- */

#define X_DECR LL_RW_INNODB56_X_LOCK_DECR

static int word_of(ll_rwlock_t *rw)
{
	return atomic_load(&((ll_rw_innodb56_t *)(void *)rw->state)->lock_word);
}

static void wait_word(ll_rwlock_t *rw, int w)
{
	while (word_of(rw) != w)
		sched_yield();
}

static atomic_int ib_reader_in, ib_writer_rc, ib_writer_in;

/* Blocks behind the writer, then holds the lock until readers_go. */
static void *ib_reader(void *p)
{
	(void)p;
	CHECK(ll_rwlock_rdlock(&shared) == 0, "rdlock");
	atomic_store(&ib_reader_in, 1);
	while (!atomic_load(&readers_go))
		sleep_ms(1);
	ll_rwlock_unlock(&shared);
	return NULL;
}

/* A writer waiting at most *(int64_t *)p ns (< 0: without deadline). */
static void *ib_writer(void *p)
{
	int64_t ns = *(int64_t *)p;
	int rc = ns < 0 ? ll_rwlock_wrlock(&shared) : ll_rwlock_timedwrlock_ns(&shared, ns);
	if (rc == 0) {
		atomic_store(&ib_writer_in, 1);
		if (atomic_load(&ib_reader_in))
			atomic_fetch_add(&overlap, 1);
		ll_rwlock_unlock(&shared);
	}
	atomic_store(&ib_writer_rc, rc);
	return NULL;
}

static int test_innodb56(void)
{
	struct ll_error err;
	pthread_t r, w;

	algo = "innodb56-rw";
	test_watchdog("innodb56", 60);
	init_rw(&shared, NULL);
	CHECK(ll_rwlock_unlock(&shared) == EPERM, "unlock of a free lock accepted");
	CHECK(word_of(&shared) == X_DECR, "free word %#x", word_of(&shared));
	CHECK(ll_rwlock_rdlock(&shared) == 0 && ll_rwlock_tryrdlock(&shared) == 0 &&
	      word_of(&shared) == X_DECR - 2, "two readers: word %#x", word_of(&shared));
	CHECK(in_other_thread(1) == EBUSY, "a writer beside two readers");
	ll_rwlock_unlock(&shared);
	ll_rwlock_unlock(&shared);

	/* x recursion: 0, -X_LOCK_DECR, then one less per level; readers and others kept out. */
	static const int words[] = { 0, -X_DECR, -X_DECR - 1, -X_DECR - 2 };
	for (int k = 0; k < 4; k++) {
		CHECK((k == 3 ? ll_rwlock_trywrlock(&shared) : ll_rwlock_wrlock(&shared)) == 0 &&
		      word_of(&shared) == words[k], "write level %d: word %d", k + 1, word_of(&shared));
		CHECK(in_other_thread(0) == EBUSY && in_other_thread(1) == EBUSY, "another thread "
		      "in beside the writer at level %d", k + 1);
	}
	CHECK(ll_rwlock_rdlock(&shared) == EDEADLK && ll_rwlock_tryrdlock(&shared) == EBUSY,
	      "the writer's own read not refused");
	for (int k = 3; k >= 0; k--) {
		CHECK(in_other_thread(1) == EBUSY, "a writer in with %d levels held", k + 1);
		CHECK(ll_rwlock_unlock(&shared) == 0 && word_of(&shared) == (k ? words[k - 1] : X_DECR),
		      "unlock of level %d: word %d", k + 1, word_of(&shared));
	}
	CHECK(in_other_thread(1) == 0, "the lock not free after the last write unlock");
	ll_rwlock_destroy(&shared);

	CHECK(ll_rwlock_init(&shared, algo, "x_recursion=0", &err) == 0, "%s", err.msg);
	CHECK(ll_rwlock_wrlock(&shared) == 0 && ll_rwlock_wrlock(&shared) == EDEADLK &&
	      ll_rwlock_trywrlock(&shared) == EDEADLK && word_of(&shared) == 0,
	      "x_recursion=0: the writer's second write lock not refused");
	ll_rwlock_unlock(&shared);
	ll_rwlock_destroy(&shared);

	/*
	 * wait_ex: a writer behind a reader reserves the word (X_LOCK_DECR off);
	 * a reader arriving later waits behind it, and enters after it.
	 */
	int64_t forever = -1, short_ns = 100000000;
	init_rw(&shared, NULL);
	atomic_store(&readers_go, 1);
	atomic_store(&overlap, 0);
	CHECK(ll_rwlock_rdlock(&shared) == 0, "rdlock");
	pthread_create(&w, NULL, ib_writer, &forever);
	wait_word(&shared, -1);
	CHECK(in_other_thread(0) == EBUSY, "a reader in past the wait_ex writer");
	pthread_create(&r, NULL, ib_reader, NULL);
	sleep_ms(30);   /* the reader has spun its rounds and sleeps */
	CHECK(!atomic_load(&ib_reader_in) && !atomic_load(&ib_writer_in), "in beside the reader");
	ll_rwlock_unlock(&shared);
	pthread_join(w, NULL);
	pthread_join(r, NULL);
	CHECK(atomic_load(&ib_writer_rc) == 0 && atomic_load(&ib_writer_in) &&
	      atomic_load(&ib_reader_in) && !atomic_load(&overlap) &&
	      word_of(&shared) == X_DECR, "wait_ex: writer %d, reader %d, overlap %d, word %#x",
	      atomic_load(&ib_writer_rc), atomic_load(&ib_reader_in), atomic_load(&overlap),
	      word_of(&shared));

	/* A timed wait_ex writer gives the word back at its deadline; the reader behind gets in. */
	atomic_store(&ib_reader_in, 0);
	atomic_store(&ib_writer_in, 0);
	atomic_store(&readers_go, 0);
	CHECK(ll_rwlock_rdlock(&shared) == 0, "rdlock");
	uint64_t t0 = ll_now_ns();
	pthread_create(&w, NULL, ib_writer, &short_ns);
	wait_word(&shared, -1);
	pthread_create(&r, NULL, ib_reader, NULL);
	pthread_join(w, NULL);
	double ms = (double)(ll_now_ns() - t0) / 1e6;
	CHECK(atomic_load(&ib_writer_rc) == ETIMEDOUT && ms >= 100, "timed wait_ex writer "
	      "returned %d after %.1f ms", atomic_load(&ib_writer_rc), ms);
	while (!atomic_load(&ib_reader_in))
		sleep_ms(1);   /* woken by the writer's give-back: the first reader still holds it */
	CHECK(word_of(&shared) == X_DECR - 2, "after the give-back: word %#x", word_of(&shared));
	atomic_store(&readers_go, 1);
	pthread_join(r, NULL);
	ll_rwlock_unlock(&shared);
	CHECK(word_of(&shared) == X_DECR && in_other_thread(1) == 0, "not free at the end");
	ll_rwlock_destroy(&shared);

	/* Knobs: innodb56's and x_recursion, bounds refused. */
	CHECK(ll_rwlock_init(&shared, algo, "x_recursion=2", &err) == EINVAL, "x_recursion=2");
	CHECK(ll_rwlock_init(&shared, algo, "sync_array_size=0", &err) == EINVAL &&
	      strstr(err.msg, "sync_array_size"), "%s", err.msg);
	CHECK(ll_rwlock_init(&shared, algo, "sync_spin_loops=0,spin_wait_delay=0,"
			     "pause_multiplier=1,sync_array_size=4,spin=yield", &err) == 0, "%s",
	      err.msg);
	ll_rw_innodb56_t *l = (ll_rw_innodb56_t *)(void *)shared.state;
	CHECK(l->s.spin_loops == 0 && l->s.sync_arrays == 4 && l->s.spin == LL_SPIN_YIELD &&
	      l->x_recursion == 1, "knobs did not reach the lock");
	ll_rwlock_destroy(&shared);
	printf("innodb56 innodb56-rw: recursion levels, wait_ex and its timed give-back as "
	       "drawn\n");
	return 0;
}

/* ---- ll: readers pass a writer that revokes the bias ---- */

/* Until the ll lock `shared`'s word has `bit` set (a writer's phase), at most 10 s. */
static void wait_ll_bit(unsigned bit, const char *what)
{
	const ll_rw_ll_t *l = (const ll_rw_ll_t *)(const void *)shared.state;
	for (int i = 0; i < 10000 && !(atomic_load(&l->word) & bit); i++)
		sleep_ms(1);
	CHECK(atomic_load(&l->word) & bit, "the writer never reached %s", what);
}

/*
 * rwlocks/ll.h's bound: a writer blocks readers (P) only once the fast readers
 * have left; while it waits for them, slow readers still enter, and the
 * writer then waits for those, and for nothing that comes after P.
 */
static int test_ll(void)
{
	algo = "ll";
	init_rw(&shared, NULL);
	pthread_t reader, writer;
	pthread_create(&reader, NULL, table_reader, (void *)(intptr_t)0);   /* bias on: fast */
	while (atomic_load(&readers_in) < 1)
		sleep_ms(1);
	pthread_create(&writer, NULL, revoking_writer, NULL);
	wait_ll_bit(LL_RW_LL_R, "its revocation");
	CHECK(ll_rwlock_tryrdlock(&shared) == 0,
	      "a reader was refused while the writer still waited for a fast reader");
	atomic_fetch_add(&readers_in, 1);
	atomic_store(&readers_go, 1);          /* the fast reader leaves */
	wait_ll_bit(LL_RW_LL_P, "P");
	sleep_ms(20);
	CHECK(!atomic_load(&writer_done), "the writer entered beside a slow reader");
	CHECK(in_other_thread(0) == EBUSY, "a reader entered past the writer's P");
	atomic_fetch_sub(&readers_in, 1);
	ll_rwlock_unlock(&shared);
	pthread_join(writer, NULL);
	pthread_join(reader, NULL);
	CHECK(atomic_load(&writer_done) && !atomic_load(&overlap), "writer %d, overlaps %d",
	      atomic_load(&writer_done), atomic_load(&overlap));
	ll_rwlock_destroy(&shared);
	printf("ll: a reader entered while the writer revoked, none after its P\n");
	return 0;
}

/* ---- ll: readers poll only behind a writer that revoked the bias ---- */

static atomic_long poll_reader_cpu_ns = -1;

static long thread_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

/*
 * The calling thread's sched_yield calls.  This definition interposes on
 * libc's for the library too (the executable's symbol comes first).
 */
static _Thread_local int yields_here;
static atomic_int poll_reader_yields = -1;

int sched_yield(void)
{
	yields_here++;
	return (int)syscall(SYS_sched_yield);
}

/* A thread that has read an ll rwlock (so it counts as a reading thread) and waits. */
static atomic_int idle_readers_in, idle_readers_go;
static ll_rwlock_t idle_lock;

static void *idle_reader(void *p)
{
	(void)p;
	CHECK(ll_rwlock_rdlock(&idle_lock) == 0 && ll_rwlock_unlock(&idle_lock) == 0, "idle read");
	atomic_fetch_add(&idle_readers_in, 1);
	while (!atomic_load(&idle_readers_go))
		sleep_ms(1);
	return NULL;
}

static void *cpu_timed_reader(void *p)
{
	(void)p;
	long t0 = thread_cpu_ns();
	int y0 = yields_here;
	CHECK(ll_rwlock_rdlock(&shared) == 0, "rdlock");
	atomic_store(&poll_reader_cpu_ns, thread_cpu_ns() - t0);
	atomic_store(&poll_reader_yields, yields_here - y0);
	CHECK(ll_rwlock_unlock(&shared) == 0, "unlock");
	return NULL;
}

/* With the write lock held: a reader blocks on it, counts itself in rwaiting, and is let in. */
static void block_one_reader(const ll_rw_ll_t *l)
{
	pthread_t reader;
	pthread_create(&reader, NULL, cpu_timed_reader, NULL);
	for (int i = 0; i < 10000 && atomic_load(&l->rwaiting) == 0; i++)
		sleep_ms(1);
	CHECK(atomic_load(&l->rwaiting) == 1, "the reader never counted itself as blocked");
	CHECK(ll_rwlock_unlock(&shared) == 0, "unlock");
	pthread_join(reader, NULL);
}

/*
 * `revoked` follows the writer that set P: 1 after it revoked the bias, 0
 * when it found the bias off.  Behind the latter, a blocked reader does not
 * poll spin_ns (here 100 ms): it gives its CPU away once (one sched_yield)
 * and then sleeps, so its thread's CPU time, which preemption does not
 * inflate, stays far below the poll.
 */
static int test_ll_poll(void)
{
	algo = "ll";
	init_rw(&shared, "spin_ns=100000000");
	init_rw(&idle_lock, NULL);
	const ll_rw_ll_t *l = (const ll_rw_ll_t *)(const void *)shared.state;
	CHECK(atomic_load(&l->word) & LL_RW_LL_B, "a new lock has the bias on");
	CHECK(ll_rwlock_wrlock(&shared) == 0 && atomic_load(&l->revoked) == 1,
	      "a writer that revoked the bias did not say so");
	CHECK(ll_rwlock_unlock(&shared) == 0, "unlock");
	/* No reader since: the bias stays off and the next writer takes the fast path. */
	CHECK(ll_rwlock_wrlock(&shared) == 0 && atomic_load(&l->revoked) == 0 &&
	      !(atomic_load(&l->word) & LL_RW_LL_B), "a writer that found the bias off");
	block_one_reader(l);
	long cpu = atomic_load(&poll_reader_cpu_ns);
	CHECK(cpu >= 0 && cpu < 50000000L, "the reader spent %.1f ms of CPU behind a writer that "
	      "found the bias off (polled it)", (double)cpu / 1e6);
	int yields = atomic_load(&poll_reader_yields);
	CHECK(yields == 1, "the reader yielded %d times before it slept (once, with a CPU per "
	      "reading thread)", yields);

	/* More reading threads than CPUs: the blocked reader sleeps without the yield. */
	cpu_set_t can;
	CHECK(sched_getaffinity(0, sizeof(can), &can) == 0, "sched_getaffinity");
	int extra = CPU_COUNT(&can);
	pthread_t idle[extra];
	atomic_store(&idle_readers_go, 0);
	atomic_store(&idle_readers_in, 0);
	for (int i = 0; i < extra; i++)
		pthread_create(&idle[i], NULL, idle_reader, NULL);
	while (atomic_load(&idle_readers_in) < extra)
		sleep_ms(1);
	/* The first write revokes a bias the reader may have turned back on; the second finds it off. */
	CHECK(ll_rwlock_wrlock(&shared) == 0 && ll_rwlock_unlock(&shared) == 0, "wrlock, unlock");
	CHECK(ll_rwlock_wrlock(&shared) == 0 && atomic_load(&l->revoked) == 0, "wrlock, bias off");
	atomic_store(&poll_reader_yields, -1);
	block_one_reader(l);
	atomic_store(&idle_readers_go, 1);
	for (int i = 0; i < extra; i++)
		pthread_join(idle[i], NULL);
	int crowded = atomic_load(&poll_reader_yields);
	CHECK(crowded == 0, "with %d reading threads on %d CPUs the blocked reader yielded %d times",
	      extra + 1, extra, crowded);
	ll_rwlock_destroy(&shared);
	printf("ll: revoked follows the writer; behind one that found the bias off a reader "
	       "yielded once and slept (%.3f ms of CPU); with %d reading threads on %d CPUs it "
	       "slept without yielding\n", (double)cpu / 1e6, extra + 1, extra);
	return 0;
}

/* ---- ll: the table of visible readers, first one line of 8 slots per CPU ---- */

#define CROWD_THREADS 6
#define CROWD_LOCKS 8                  /* each thread's: a thread holds at most 8 in slots */
static ll_rwlock_t crowd[CROWD_THREADS][CROWD_LOCKS];
static atomic_int crowd_in, crowd_go;
static int crowd_cpu, other_cpu;

static void *crowd_reader(void *p)
{
	ll_rwlock_t *mine = crowd[(intptr_t)p];
	test_pin_to_cpu(crowd_cpu);
	for (int i = 0; i < CROWD_LOCKS; i++)
		CHECK(ll_rwlock_rdlock(&mine[i]) == 0, "rdlock %d", i);
	atomic_fetch_add(&crowd_in, 1);
	while (!atomic_load(&crowd_go))
		sleep_ms(1);
	for (int i = 0; i < CROWD_LOCKS; i++)
		CHECK(ll_rwlock_unlock(&mine[i]) == 0, "unlock %d", i);
	return NULL;
}

/* Readers counted in an ll lock's word: its slow holds. */
static unsigned slow_readers(ll_rwlock_t *rw)
{
	const ll_rw_ll_t *l = (const ll_rw_ll_t *)(const void *)rw->state;
	return atomic_load(&l->word) & LL_RW_LL_READERS;
}

static void *migrating_reader(void *p)
{
	(void)p;
	test_pin_to_cpu(crowd_cpu);
	CHECK(ll_rwlock_rdlock(&shared) == 0 && slow_readers(&shared) == 0,
	      "the first read was not a fast one");
	test_pin_to_cpu(other_cpu);
	CHECK(ll_rwlock_unlock(&shared) == 0, "unlock on another CPU");
	return NULL;
}

static int test_ll_table(void)
{
	algo = "ll";
	crowd_cpu = test_usable_cpu(0);
	other_cpu = test_usable_cpu(1);
	if (other_cpu < 0)
		other_cpu = crowd_cpu;
	for (int t = 0; t < CROWD_THREADS; t++)
		for (int i = 0; i < CROWD_LOCKS; i++)
			init_rw(&crowd[t][i], NULL);
	pthread_t th[CROWD_THREADS];
	for (int t = 0; t < CROWD_THREADS; t++) {
		/* One after the other: the first fills the CPU's line, the rest grow the table. */
		pthread_create(&th[t], NULL, crowd_reader, (void *)(intptr_t)t);
		while (atomic_load(&crowd_in) < t + 1)
			sleep_ms(1);
	}
	int slow = 0;
	for (int t = 0; t < CROWD_THREADS; t++)
		for (int i = 0; i < CROWD_LOCKS; i++) {
			slow += slow_readers(&crowd[t][i]) != 0;
			CHECK(ll_rwlock_trywrlock(&crowd[t][i]) == EBUSY,
			      "a writer got lock %d of reader %d while it was read-held", i, t);
		}
	int holds = CROWD_THREADS * CROWD_LOCKS;
	CHECK(slow == 0, "%d of %d holds on one CPU went through the word: the table did not "
	      "grow to take them", slow, holds);
	atomic_store(&crowd_go, 1);
	for (int t = 0; t < CROWD_THREADS; t++)
		pthread_join(th[t], NULL);
	for (int t = 0; t < CROWD_THREADS; t++)
		for (int i = 0; i < CROWD_LOCKS; i++) {
			CHECK(ll_rwlock_trywrlock(&crowd[t][i]) == 0,
			      "lock %d of reader %d stayed held after its unlock", i, t);
			ll_rwlock_unlock(&crowd[t][i]);
			ll_rwlock_destroy(&crowd[t][i]);
		}

	init_rw(&shared, NULL);
	pthread_t m;
	pthread_create(&m, NULL, migrating_reader, NULL);
	pthread_join(m, NULL);
	CHECK(ll_rwlock_trywrlock(&shared) == 0,
	      "a read unlocked on another CPU than it was taken on left the lock held");
	ll_rwlock_unlock(&shared);
	ll_rwlock_destroy(&shared);
	printf("ll: %d holds on CPU %d, all in the table, every one kept writers out; a read "
	       "moved from CPU %d to %d let go\n", holds, crowd_cpu, crowd_cpu, other_cpu);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct test_case tests[] = {
		{ "exclusion", test_exclusion, 1 }, { "try", test_try, 1 },
		{ "timed", test_timed, 1 },         { "wakeup", test_wakeup, 1 },
		{ "starvation", test_starvation, 1 }, { "recursion", test_recursion, 1 },
		{ "revocation", test_revocation, 1 }, { "config", test_config, 0 },
		{ "innodb56", test_innodb56, 0 }, { "ll", test_ll, 0 }, { "ll-poll", test_ll_poll, 0 },
		{ "ll-table", test_ll_table, 0 },
	};
	const struct test_case *t = test_pick(argc, argv, tests, LL_COUNT(tests),
					      "exclusion|try|timed|wakeup|starvation|recursion ALGO | revocation UNDER | config | innodb56 | ll | ll-table",
					      &algo);
	return t ? t->run() : 2;
}
