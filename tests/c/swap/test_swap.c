/*
 * test_swap.c: POSIX mutex and condvar semantics, as a program sees them with
 * liblocklab-swap.so preloaded (CMakeLists.txt runs every case under several
 * algorithms).  Nothing here knows about the swapper but `preloaded`, which
 * refuses to pass a run where the library was not loaded, and `herd`, which
 * reads the swapper's statistics (LOCKLAB_SWAP_STATS_JSON).
 *
 *   test_swap CASE [N]
 *
 * Exit status 77: the case cannot run on this machine (it says why).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

#ifdef LL_SWAP_DIRECT
/* Built with the swapper linked in (the ThreadSanitizer build): every mutex
 * and condvar call below goes to its entry points by their own names. */
#include "swap_direct.h"
#define pthread_mutex_init swap_pthread_mutex_init
#define pthread_mutex_destroy swap_pthread_mutex_destroy
#define pthread_mutex_lock swap_pthread_mutex_lock
#define pthread_mutex_trylock swap_pthread_mutex_trylock
#define pthread_mutex_timedlock swap_pthread_mutex_timedlock
#define pthread_mutex_clocklock swap_pthread_mutex_clocklock
#define pthread_mutex_unlock swap_pthread_mutex_unlock
#define pthread_mutex_consistent swap_pthread_mutex_consistent
#define pthread_cond_wait swap_pthread_cond_wait
#define pthread_cond_timedwait swap_pthread_cond_timedwait
#define pthread_cond_clockwait swap_pthread_cond_clockwait
#define pthread_cond_signal swap_pthread_cond_signal
#define pthread_cond_broadcast swap_pthread_cond_broadcast
#define pthread_rwlock_init swap_pthread_rwlock_init
#define pthread_rwlock_destroy swap_pthread_rwlock_destroy
#define pthread_rwlock_rdlock swap_pthread_rwlock_rdlock
#define pthread_rwlock_tryrdlock swap_pthread_rwlock_tryrdlock
#define pthread_rwlock_timedrdlock swap_pthread_rwlock_timedrdlock
#define pthread_rwlock_clockrdlock swap_pthread_rwlock_clockrdlock
#define pthread_rwlock_wrlock swap_pthread_rwlock_wrlock
#define pthread_rwlock_trywrlock swap_pthread_rwlock_trywrlock
#define pthread_rwlock_timedwrlock swap_pthread_rwlock_timedwrlock
#define pthread_rwlock_clockwrlock swap_pthread_rwlock_clockwrlock
#define pthread_rwlock_unlock swap_pthread_rwlock_unlock
#endif

static const char *arg;

static int64_t now_ns(clockid_t clk)
{
	struct timespec ts;
	clock_gettime(clk, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static struct timespec after_ns(clockid_t clk, int64_t ns)
{
	int64_t t = now_ns(clk) + ns;
	struct timespec ts = { (time_t)(t / 1000000000LL), (long)(t % 1000000000LL) };
	return ts;
}

static void *spawn(void *(*fn)(void *), void *p, pthread_t *t)
{
	CHECK(pthread_create(t, NULL, fn, p) == 0, "pthread_create");
	return NULL;
}

static void *join(pthread_t t)
{
	void *r;
	CHECK(pthread_join(t, &r) == 0, "pthread_join");
	return r;
}

/* ------------------------------------------------------------- cases */

static int preloaded(void)
{
	void *libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
	CHECK(libc, "libc.so.6 not loaded");
	CHECK(dlsym(RTLD_DEFAULT, "pthread_mutex_lock") != dlsym(libc, "pthread_mutex_lock"),
	      "pthread_mutex_lock is glibc's: the swap library is not preloaded");
	CHECK(getenv("LOCKLAB_SWAP_LOCK") != NULL, "LOCKLAB_SWAP_LOCK unset");
	return 0;
}

static void *try_is_busy(void *p)
{
	return (void *)(intptr_t)pthread_mutex_trylock(p);
}

static void *unlock_other(void *p)
{
	return (void *)(intptr_t)pthread_mutex_unlock(p);
}

static void *try_and_release(void *p)
{
	int rc = pthread_mutex_trylock(p);
	if (!rc)
		rc = pthread_mutex_unlock(p);
	return (void *)(intptr_t)rc;
}

/* pthread_mutex_init with a mutex of TYPE (the dynamic twin of a static initializer). */
static int init_typed(pthread_mutex_t *m, int type)
{
	pthread_mutexattr_t a;
	pthread_mutexattr_init(&a);
	pthread_mutexattr_settype(&a, type);
	int rc = pthread_mutex_init(m, &a);
	pthread_mutexattr_destroy(&a);
	return rc;
}

static int recursive(void)
{
	static pthread_mutex_t st = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
	pthread_mutex_t dyn;
	CHECK(init_typed(&dyn, PTHREAD_MUTEX_RECURSIVE) == 0, "init");
	pthread_mutex_t *ms[2] = { &st, &dyn };
	for (int i = 0; i < 2; i++) {
		pthread_mutex_t *m = ms[i];
		pthread_t t;
		CHECK(pthread_mutex_lock(m) == 0, "lock");
		CHECK(pthread_mutex_lock(m) == 0, "relock");
		CHECK(pthread_mutex_trylock(m) == 0, "trylock by the owner");
		spawn(try_is_busy, m, &t);
		CHECK(join(t) == (void *)EBUSY, "another thread's trylock must be EBUSY");
		spawn(unlock_other, m, &t);
		CHECK(join(t) == (void *)EPERM, "another thread's unlock must be EPERM");
		for (int k = 0; k < 3; k++)
			CHECK(pthread_mutex_unlock(m) == 0, "unlock %d", k);
		CHECK(pthread_mutex_unlock(m) == EPERM, "unlock of a free recursive mutex");
		spawn(try_and_release, m, &t);
		CHECK(join(t) == 0, "free after three unlocks");
	}
	CHECK(pthread_mutex_destroy(&dyn) == 0, "destroy");
	return 0;
}

static int errorcheck(void)
{
	static pthread_mutex_t st = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;
	pthread_mutex_t dyn;
	CHECK(init_typed(&dyn, PTHREAD_MUTEX_ERRORCHECK) == 0, "init");
	pthread_mutex_t *ms[2] = { &st, &dyn };
	for (int i = 0; i < 2; i++) {
		pthread_mutex_t *m = ms[i];
		pthread_t t;
		CHECK(pthread_mutex_unlock(m) == EPERM, "unlock before any lock");
		CHECK(pthread_mutex_lock(m) == 0, "lock");
		CHECK(pthread_mutex_lock(m) == EDEADLK, "relock must be EDEADLK");
		CHECK(pthread_mutex_trylock(m) == EBUSY, "trylock by the owner must be EBUSY");
		struct timespec dl = after_ns(CLOCK_REALTIME, 1000000);
		CHECK(pthread_mutex_timedlock(m, &dl) == EDEADLK, "timedlock by the owner");
		spawn(unlock_other, m, &t);
		CHECK(join(t) == (void *)EPERM, "another thread's unlock must be EPERM");
		CHECK(pthread_mutex_unlock(m) == 0, "unlock");
		CHECK(pthread_mutex_unlock(m) == EPERM, "second unlock must be EPERM");
	}
	CHECK(pthread_mutex_destroy(&dyn) == 0, "destroy");
	return 0;
}

static int trylock(void)
{
	static pthread_mutex_t st = PTHREAD_MUTEX_INITIALIZER;
	pthread_t t;
	CHECK(pthread_mutex_trylock(&st) == 0, "trylock of a free mutex");
	spawn(try_is_busy, &st, &t);
	CHECK(join(t) == (void *)EBUSY, "trylock of a held mutex must be EBUSY");
	CHECK(pthread_mutex_unlock(&st) == 0, "unlock");
	spawn(try_and_release, &st, &t);
	CHECK(join(t) == 0, "trylock after unlock");
	return 0;
}

struct timed_job {
	pthread_mutex_t *m;
	clockid_t clk;
	int clocklock, rc;
	int64_t waited_ns;
};

static void *timed_main(void *p)
{
	struct timed_job *j = p;
	int64_t t0 = now_ns(j->clk);
	struct timespec dl = after_ns(j->clk, 100000000);   /* 100 ms */
	j->rc = j->clocklock ? pthread_mutex_clocklock(j->m, j->clk, &dl)
			     : pthread_mutex_timedlock(j->m, &dl);
	j->waited_ns = now_ns(j->clk) - t0;
	return NULL;
}

static void dl_bad_clock(pthread_mutex_t *m)
{
	struct timespec dl = after_ns(CLOCK_MONOTONIC, 1000000);
	CHECK(pthread_mutex_clocklock(m, CLOCK_PROCESS_CPUTIME_ID, &dl) == EINVAL,
	      "clocklock on a CPU-time clock");
}

static int timedlock(void)
{
	static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	CHECK(pthread_mutex_lock(&m) == 0, "lock");
	struct timed_job jobs[] = {
		{ &m, CLOCK_REALTIME, 0, -1, 0 },
		{ &m, CLOCK_REALTIME, 1, -1, 0 },
		{ &m, CLOCK_MONOTONIC, 1, -1, 0 },
	};
	for (size_t i = 0; i < sizeof(jobs) / sizeof(jobs[0]); i++) {
		pthread_t t;
		spawn(timed_main, &jobs[i], &t);
		join(t);
		CHECK(jobs[i].rc == ETIMEDOUT, "job %zu: %d, not ETIMEDOUT", i, jobs[i].rc);
		/* Not before the deadline (1 ms for the clock conversion); a loaded
		 * machine may be late, but not by seconds. */
		CHECK(jobs[i].waited_ns >= 99000000, "job %zu gave up after %lld ns", i,
		      (long long)jobs[i].waited_ns);
		CHECK(jobs[i].waited_ns < 5000000000LL, "job %zu waited %lld ns", i,
		      (long long)jobs[i].waited_ns);
	}
	CHECK(pthread_mutex_unlock(&m) == 0, "unlock");
	/* Free: a deadline already past still takes it. */
	struct timespec past = { 1, 0 };
	CHECK(pthread_mutex_timedlock(&m, &past) == 0, "timedlock of a free mutex");
	CHECK(pthread_mutex_unlock(&m) == 0, "unlock");
	/* Held, and a deadline it cannot read. */
	CHECK(pthread_mutex_lock(&m) == 0, "lock");
	struct timespec nonsense = { 0, 2000000000L };
	CHECK(pthread_mutex_timedlock(&m, &nonsense) == EINVAL, "a deadline of 2e9 ns");
	dl_bad_clock(&m);
	CHECK(pthread_mutex_unlock(&m) == 0, "unlock");
	return 0;
}

/* --- many threads on a few mutexes: exclusion, and the first-use race */

#define EX_MUTEXES 4
static pthread_mutex_t ex_static[EX_MUTEXES] = { PTHREAD_MUTEX_INITIALIZER,
	PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER };
static pthread_mutex_t ex_dyn;
static long ex_count[EX_MUTEXES + 1];
static long ex_rounds;

static void *ex_main(void *p)
{
	(void)p;
	for (long r = 0; r < ex_rounds; r++) {
		int i = (int)(r % (EX_MUTEXES + 1));
		pthread_mutex_t *m = i < EX_MUTEXES ? &ex_static[i] : &ex_dyn;
		if (r % 7 == 3) {
			while (pthread_mutex_trylock(m) == EBUSY)
				sched_yield();
		} else {
			CHECK(pthread_mutex_lock(m) == 0, "lock");
		}
		long v = ex_count[i];   /* a plain read-modify-write: the lock makes it whole */
		__asm__ volatile("" ::: "memory");
		ex_count[i] = v + 1;
		CHECK(pthread_mutex_unlock(m) == 0, "unlock");
	}
	return NULL;
}

static int exclusion(void)
{
	int threads = arg ? atoi(arg) : 8;
	ex_rounds = test_scaled(20000);
	CHECK(pthread_mutex_init(&ex_dyn, NULL) == 0, "init");
	char dummy[64];
	/* All start at once (a barrier), on mutexes nobody has locked yet. */
	test_run_threads(threads, ex_main, dummy, 0);
	long total = 0;
	for (int i = 0; i <= EX_MUTEXES; i++)
		total += ex_count[i];
	CHECK(total == threads * ex_rounds, "%ld increments, expected %ld", total,
	      threads * ex_rounds);
	CHECK(pthread_mutex_destroy(&ex_dyn) == 0, "destroy");
	/* A destroyed mutex can be initialised and used again. */
	CHECK(pthread_mutex_init(&ex_dyn, NULL) == 0, "reinit");
	CHECK(pthread_mutex_lock(&ex_dyn) == 0 && pthread_mutex_unlock(&ex_dyn) == 0, "reuse");
	CHECK(pthread_mutex_destroy(&ex_dyn) == 0, "destroy");
	return 0;
}

/* ------------------------------------------------------------ condvars */

static pthread_mutex_t bc_m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t bc_c = PTHREAD_COND_INITIALIZER;
static pthread_cond_t bc_ready = PTHREAD_COND_INITIALIZER;
static int bc_go, bc_waiting, bc_woken;
static int64_t bc_hold_ns;   /* how long each woken waiter holds the mutex */

static void *bc_main(void *p)
{
	(void)p;
	CHECK(pthread_mutex_lock(&bc_m) == 0, "lock");
	bc_waiting++;
	pthread_cond_signal(&bc_ready);
	while (!bc_go)
		CHECK(pthread_cond_wait(&bc_c, &bc_m) == 0, "wait");
	int64_t until = now_ns(CLOCK_MONOTONIC) + bc_hold_ns;
	while (bc_hold_ns && now_ns(CLOCK_MONOTONIC) < until)
		;
	bc_woken++;
	CHECK(pthread_mutex_unlock(&bc_m) == 0, "unlock");
	return NULL;
}

static int broadcast(void)
{
	int n = arg ? atoi(arg) : 1000;
	pthread_t *t = calloc((size_t)n, sizeof(*t));
	pthread_attr_t a;
	pthread_attr_init(&a);
	pthread_attr_setstacksize(&a, 64 << 10);
	for (int i = 0; i < n; i++)
		CHECK(pthread_create(&t[i], &a, bc_main, NULL) == 0, "pthread_create %d", i);
	pthread_attr_destroy(&a);
	pthread_mutex_lock(&bc_m);
	while (bc_waiting < n)
		CHECK(pthread_cond_wait(&bc_ready, &bc_m) == 0, "wait for the waiters");
	bc_go = 1;
	CHECK(pthread_cond_broadcast(&bc_c) == 0, "broadcast");
	pthread_mutex_unlock(&bc_m);
	for (int i = 0; i < n; i++)
		join(t[i]);
	CHECK(bc_woken == n, "%d of %d woken", bc_woken, n);
	free(t);
	return 0;
}

static pthread_mutex_t pp_m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pp_c = PTHREAD_COND_INITIALIZER;
static long pp_turn, pp_rounds;

static void *pp_main(void *p)
{
	long me = (long)(intptr_t)p;
	pthread_mutex_lock(&pp_m);
	for (;;) {
		while (pp_turn % 2 != me && pp_turn < 2 * pp_rounds)
			CHECK(pthread_cond_wait(&pp_c, &pp_m) == 0, "wait");
		if (pp_turn >= 2 * pp_rounds)
			break;
		pp_turn++;
		pthread_cond_signal(&pp_c);
	}
	pthread_mutex_unlock(&pp_m);
	return NULL;
}

/* Two threads take turns by signal: a lost wakeup hangs (the watchdog fails it). */
static int pingpong(void)
{
	pp_rounds = test_scaled(2000);
	pthread_t a, b;
	spawn(pp_main, (void *)0, &a);
	spawn(pp_main, (void *)1, &b);
	join(a);
	join(b);
	CHECK(pp_turn == 2 * pp_rounds, "%ld turns", pp_turn);
	return 0;
}

static int condtimed(void)
{
	static pthread_mutex_t m = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;
	static pthread_mutex_t r = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
	pthread_cond_t c = PTHREAD_COND_INITIALIZER, cm;
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&cm, &ca);
	pthread_condattr_destroy(&ca);

	CHECK(pthread_cond_wait(&c, &m) == EPERM, "waiting without the errorcheck mutex");
	pthread_mutex_lock(&m);
	int64_t t0 = now_ns(CLOCK_MONOTONIC);
	struct timespec dl = after_ns(CLOCK_REALTIME, 50000000);
	CHECK(pthread_cond_timedwait(&c, &m, &dl) == ETIMEDOUT, "timedwait");
	dl = after_ns(CLOCK_MONOTONIC, 50000000);
	CHECK(pthread_cond_clockwait(&c, &m, CLOCK_MONOTONIC, &dl) == ETIMEDOUT, "clockwait");
	dl = after_ns(CLOCK_MONOTONIC, 50000000);
	CHECK(pthread_cond_timedwait(&cm, &m, &dl) == ETIMEDOUT, "timedwait, monotonic condvar");
	int64_t waited = now_ns(CLOCK_MONOTONIC) - t0;
	CHECK(waited >= 149000000 && waited < 10000000000LL, "waited %lld ns", (long long)waited);
	/* Still ours: errorcheck says so. */
	CHECK(pthread_mutex_lock(&m) == EDEADLK, "the mutex is held again after the timeout");
	CHECK(pthread_mutex_unlock(&m) == 0, "unlock");

	/* A recursive mutex held twice is released whole by the wait, and comes back twice. */
	pthread_mutex_lock(&r);
	pthread_mutex_lock(&r);
	dl = after_ns(CLOCK_REALTIME, 10000000);
	CHECK(pthread_cond_timedwait(&c, &r, &dl) == ETIMEDOUT, "recursive timedwait");
	CHECK(pthread_mutex_unlock(&r) == 0 && pthread_mutex_unlock(&r) == 0, "two unlocks");
	CHECK(pthread_mutex_unlock(&r) == EPERM, "and no third");
	pthread_cond_destroy(&cm);
	pthread_cond_destroy(&c);
	return 0;
}

/* --- rings of threads passing one token each: every wakeup is needed once */

#define CS_MUTEXES 4
#define CS_RING 4      /* threads in a ring */
#define CS_LANES 5     /* condvars per thread: 64 threads make 320, more than the swapper's guards */

struct cs_thread {
	pthread_cond_t cv[CS_LANES];
	int ring, at;      /* its ring, and its place in it */
	int lane;          /* the condvar it waits on, -1 when not waiting (its ring's mutex) */
	long passes;       /* tokens it passed on */
};

static pthread_mutex_t cs_m[CS_MUTEXES];
static struct cs_thread *cs;
static int *cs_pos;            /* per ring: whose turn (its ring's mutex) */
static atomic_long *cs_ring_passes;
static int cs_rings;
/* Set under each mutex in turn (so a ring's thread sees it under its own
 * mutex, with the broadcast that follows), read under any: atomic. */
static atomic_int cs_stop;
static long cs_target;
static atomic_long cs_passes;

static pthread_mutex_t *cs_mutex(int ring) { return &cs_m[ring % CS_MUTEXES]; }

static void cs_lock(pthread_mutex_t *m)
{
	CHECK(pthread_mutex_lock(m) == 0, "lock");
	if (m == &cs_m[1])   /* the recursive one: held twice across its waits */
		CHECK(pthread_mutex_lock(m) == 0, "relock");
}

static void cs_unlock(pthread_mutex_t *m)
{
	/* The recursive mutex's depth came back from every wait, or the second unlock fails. */
	if (m == &cs_m[1])
		CHECK(pthread_mutex_unlock(m) == 0, "unlock of depth 2");
	CHECK(pthread_mutex_unlock(m) == 0, "unlock");
}

/* Wake thread t (its mutex held); some with broadcast, some after the unlock. */
static void cs_wake(struct cs_thread *t, long n, pthread_mutex_t *m)
{
	/* Not waiting: a signal nobody waits for. */
	pthread_cond_t *cv = &t->cv[t->lane >= 0 ? t->lane : (int)(n % CS_LANES)];
	if (n % 5 == 2) {
		cs_unlock(m);
		CHECK(pthread_cond_signal(cv) == 0, "signal after unlock");
		cs_lock(m);
	} else if (n % 4 == 1) {
		CHECK(pthread_cond_broadcast(cv) == 0, "broadcast");
	} else {
		CHECK(pthread_cond_signal(cv) == 0, "signal");
	}
}

static void cs_wait(struct cs_thread *me, long w, pthread_mutex_t *m)
{
	me->lane = (int)(w % CS_LANES);
	pthread_cond_t *cv = &me->cv[me->lane];
	int rc;
	if (w % 3 == 1) {
		struct timespec dl = after_ns(CLOCK_REALTIME, 1000000);
		rc = pthread_cond_timedwait(cv, m, &dl);
	} else if (w % 3 == 2) {
		struct timespec dl = after_ns(CLOCK_MONOTONIC, 1000000);
		rc = pthread_cond_clockwait(cv, m, CLOCK_MONOTONIC, &dl);
	} else {
		rc = pthread_cond_wait(cv, m);
	}
	CHECK(rc == 0 || (rc == ETIMEDOUT && w % 3), "wait: %d", rc);
	me->lane = -1;
}

static void *cs_main(void *p)
{
	struct cs_thread *me = p;
	pthread_mutex_t *m = cs_mutex(me->ring);
	long w = me->at;
	for (;;) {
		cs_lock(m);
		while (cs_pos[me->ring] != me->at && !cs_stop)
			cs_wait(me, w++, m);
		if (cs_stop) {
			cs_unlock(m);
			return NULL;
		}
		cs_pos[me->ring] = (me->at + 1) % CS_RING;
		me->passes++;
		atomic_fetch_add_explicit(&cs_ring_passes[me->ring], 1, memory_order_relaxed);
		long n = atomic_fetch_add_explicit(&cs_passes, 1, memory_order_relaxed) + 1;
		cs_wake(&cs[me->ring * CS_RING + cs_pos[me->ring]], n, m);
		cs_unlock(m);
		if (n == cs_target) {   /* the last pass: everyone stops */
			for (int k = 0; k < CS_MUTEXES; k++) {
				cs_lock(&cs_m[k]);
				cs_stop = 1;
				for (int r = k; r < cs_rings; r += CS_MUTEXES)
					for (int i = 0; i < CS_RING; i++)
						for (int l = 0; l < CS_LANES; l++)
							pthread_cond_broadcast(&cs[r * CS_RING + i].cv[l]);
				cs_unlock(&cs_m[k]);
			}
		}
	}
}

/*
 * Lost wakeups, under many more threads than cores: rings of CS_RING threads
 * pass one token each round and round, each thread waiting for its turn on one
 * of its CS_LANES condvars (more condvars than guards, so some share one),
 * the rings sharing CS_MUTEXES mutexes (normal, recursive held twice,
 * errorcheck, normal), woken by signal or broadcast, under the mutex or after
 * it, their waits untimed or timed on either clock.  A ring has one token, so
 * a lost wakeup in an untimed wait stops it: the run fails when a ring makes
 * no pass for 10 s.  The passes must add up.
 */
static int condstress(void)
{
	int threads = arg ? atoi(arg) : 64;
	CHECK(threads >= CS_RING && threads % CS_RING == 0, "threads: a multiple of %d", CS_RING);
	cs_rings = threads / CS_RING;
	cs_target = test_scaled(100000);
	int types[CS_MUTEXES] = { PTHREAD_MUTEX_NORMAL, PTHREAD_MUTEX_RECURSIVE,
				  PTHREAD_MUTEX_ERRORCHECK, PTHREAD_MUTEX_DEFAULT };
	for (int k = 0; k < CS_MUTEXES; k++)
		CHECK(init_typed(&cs_m[k], types[k]) == 0, "init");
	cs = calloc((size_t)threads, sizeof(*cs));
	cs_pos = calloc((size_t)cs_rings, sizeof(*cs_pos));
	cs_ring_passes = calloc((size_t)cs_rings, sizeof(*cs_ring_passes));
	CHECK(cs && cs_pos && cs_ring_passes, "calloc");
	for (int i = 0; i < threads; i++) {
		cs[i].ring = i / CS_RING;
		cs[i].at = i % CS_RING;
		cs[i].lane = -1;
		for (int l = 0; l < CS_LANES; l++)
			pthread_cond_init(&cs[i].cv[l], NULL);
	}
	pthread_t *t = calloc((size_t)threads, sizeof(*t));
	CHECK(t, "calloc");
	for (int i = 0; i < threads; i++)
		CHECK(pthread_create(&t[i], NULL, cs_main, &cs[i]) == 0, "pthread_create %d", i);
	long *last = calloc((size_t)cs_rings, sizeof(*last));
	int64_t *since = calloc((size_t)cs_rings, sizeof(*since));
	CHECK(last && since, "calloc");
	while (atomic_load(&cs_passes) < cs_target) {
		int64_t now = now_ns(CLOCK_MONOTONIC);
		for (int r = 0; r < cs_rings; r++) {
			long p = atomic_load(&cs_ring_passes[r]);
			if (p != last[r] || !since[r]) {
				last[r] = p;
				since[r] = now;
			}
			CHECK(now - since[r] < 10000000000LL || atomic_load(&cs_passes) >= cs_target,
			      "ring %d made no pass for 10 s (at %ld): a lost wakeup", r, p);
		}
		struct timespec tick = { 0, 20000000 };
		nanosleep(&tick, NULL);
	}
	for (int i = 0; i < threads; i++)
		join(t[i]);
	long sum = 0;
	for (int r = 0; r < cs_rings; r++) {
		long ring = 0;
		for (int i = 0; i < CS_RING; i++)
			ring += cs[r * CS_RING + i].passes;
		CHECK(ring == atomic_load(&cs_ring_passes[r]) && ring % CS_RING == cs_pos[r],
		      "ring %d: %ld passes, its count %ld, its token at %d", r, ring,
		      atomic_load(&cs_ring_passes[r]), cs_pos[r]);
		sum += ring;
	}
	/* The target's pass stops them all; passes made meanwhile are counted too. */
	CHECK(sum == atomic_load(&cs_passes) && sum >= cs_target,
	      "%ld passes counted by the threads, %ld in all, %ld expected", sum,
	      atomic_load(&cs_passes), cs_target);
	printf("condstress: %d threads, %ld passes\n", threads, sum);
	for (int i = 0; i < threads; i++)
		for (int l = 0; l < CS_LANES; l++)
			CHECK(pthread_cond_destroy(&cs[i].cv[l]) == 0, "cond_destroy");
	for (int k = 0; k < CS_MUTEXES; k++)
		CHECK(pthread_mutex_destroy(&cs_m[k]) == 0, "destroy");
	free(t);
	free(cs);
	free(cs_pos);
	free(cs_ring_passes);
	free(last);
	free(since);
	return 0;
}

/* --- a broadcast to many waiters: how many race for the mutex at once */

/* The child's side: n waiters (bc_main), started one at a time (no herd at
 * start), woken by one broadcast sent under the mutex, which is then kept for
 * 50 ms; each holds it for 2 us. */
static void herd_child(int n)
{
	pthread_t *t = calloc((size_t)n, sizeof(*t));
	CHECK(t, "calloc");
	pthread_attr_t a;
	pthread_attr_init(&a);
	pthread_attr_setstacksize(&a, 64 << 10);
	bc_hold_ns = 2000;
	pthread_mutex_lock(&bc_m);
	for (int i = 0; i < n; i++) {
		CHECK(pthread_create(&t[i], &a, bc_main, NULL) == 0, "pthread_create %d", i);
		while (bc_waiting <= i)
			CHECK(pthread_cond_wait(&bc_ready, &bc_m) == 0, "wait for waiter %d", i);
	}
	pthread_attr_destroy(&a);
	struct rusage r0, r1;
	getrusage(RUSAGE_SELF, &r0);
	int64_t t0 = now_ns(CLOCK_MONOTONIC);
	bc_go = 1;
	CHECK(pthread_cond_broadcast(&bc_c) == 0, "broadcast");
	struct timespec hold = { 0, 50000000 };
	nanosleep(&hold, NULL);
	pthread_mutex_unlock(&bc_m);
	for (int i = 0; i < n; i++)
		join(t[i]);
	int64_t took = now_ns(CLOCK_MONOTONIC) - t0;
	getrusage(RUSAGE_SELF, &r1);
	CHECK(bc_woken == n, "%d of %d woken", bc_woken, n);
	printf("herd: %d waiters, %.2f voluntary and %.2f involuntary context switches per waiter, "
	       "%.1f ms from broadcast to the last one done\n", n,
	       (double)(r1.ru_nvcsw - r0.ru_nvcsw) / n, (double)(r1.ru_nivcsw - r0.ru_nivcsw) / n,
	       (double)took / 1e6);
	fflush(stdout);
	free(t);
}

/* The most threads the swapper saw waiting in a lock at once, from the JSON line
 * process pid wrote to path at its exit; -1 if there is none. */
static long max_waiting_of(const char *path, pid_t pid)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	char line[2048], want[64];
	long v = -1;
	snprintf(want, sizeof(want), "{\"pid\": %d,", (int)pid);
	while (fgets(line, sizeof(line), f)) {
		const char *k = strstr(line, "\"max_waiting\": ");
		if (!strncmp(line, want, strlen(want)) && k)
			v = atol(k + strlen("\"max_waiting\": "));
	}
	fclose(f);
	return v;
}

/*
 * A broadcast to n waiters (1000) must not send them all into the mutex's lock
 * at once: the swapper's own count of threads waiting inside a lock (stats on)
 * must stay at a few.  Before the regain queue it reached hundreds.  Run in a
 * child, whose exit writes its statistics.
 */
static int herd(void)
{
	int n = arg ? atoi(arg) : 1000;
	const char *path = getenv("LOCKLAB_SWAP_STATS_JSON");
	CHECK(path && *path, "LOCKLAB_SWAP_STATS_JSON unset: the case reads the swapper's stats");
	fflush(stdout);
	pid_t pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		herd_child(n);
		exit(0);   /* the swapper's destructor writes the child's line */
	}
	int status;
	CHECK(waitpid(pid, &status, 0) == pid, "waitpid");
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %#x", status);
	long most = max_waiting_of(path, pid);
	CHECK(most >= 0, "no statistics of process %d in %s", (int)pid, path);
	printf("herd: at most %ld threads waiting in a lock at once\n", most);
	/* The broadcaster's own wait at start-up, one waiter and the regainer: a few. */
	CHECK(most <= 4, "%ld threads raced for the mutex at once after the broadcast", most);
	return 0;
}

/* ---------------------------------------------------------- fork, glibc's */

static pthread_mutex_t fk_held = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t fk_rec = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static pthread_mutex_t fk_free = PTHREAD_MUTEX_INITIALIZER;

static int forking(void)
{
	pthread_mutex_lock(&fk_free);
	pthread_mutex_unlock(&fk_free);
	pthread_mutex_lock(&fk_held);
	pthread_mutex_lock(&fk_rec);
	pid_t pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		/* The child's thread is the one that held them: they are its to release. */
		if (pthread_mutex_unlock(&fk_held) || pthread_mutex_unlock(&fk_rec))
			_exit(3);
		if (pthread_mutex_lock(&fk_free) || pthread_mutex_unlock(&fk_free))
			_exit(4);
		if (pthread_mutex_lock(&fk_rec) || pthread_mutex_unlock(&fk_rec))
			_exit(5);
		pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
		pthread_cond_t c = PTHREAD_COND_INITIALIZER;
		pthread_mutex_lock(&fresh);
		struct timespec dl = after_ns(CLOCK_REALTIME, 1000000);
		if (pthread_cond_timedwait(&c, &fresh, &dl) != ETIMEDOUT)
			_exit(6);
		pthread_mutex_unlock(&fresh);
		/* A thread in the child, on a lock the parent's threads used. */
		pthread_t t;
		if (pthread_create(&t, NULL, try_is_busy, &fk_free) || pthread_join(t, NULL))
			_exit(7);
		exit(0);
	}
	int status;
	CHECK(waitpid(pid, &status, 0) == pid, "waitpid");
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %#x", status);
	CHECK(pthread_mutex_unlock(&fk_rec) == 0 && pthread_mutex_unlock(&fk_held) == 0,
	      "the parent still holds them");
	return 0;
}

/* --- fork while the parent's threads hold and queue on swapped mutexes */

static pthread_mutex_t fq_held = PTHREAD_MUTEX_INITIALIZER;    /* the forking thread's */
static pthread_mutex_t fq_free = PTHREAD_MUTEX_INITIALIZER;    /* contended, free at fork */
static pthread_mutex_t fq_theirs = PTHREAD_MUTEX_INITIALIZER;  /* another thread's at fork */
static pthread_cond_t fq_cond = PTHREAD_COND_INITIALIZER;
static atomic_int fq_arrived;
static long fq_count, fq_child_count[2];

#define FQ_QUEUED 3

/* Contends fq_free, then queues on fq_held (the forking thread holds it). */
static void *fq_queue(void *p)
{
	(void)p;
	for (int r = 0; r < 2000; r++) {
		pthread_mutex_lock(&fq_free);
		fq_count++;
		pthread_mutex_unlock(&fq_free);
	}
	atomic_fetch_add(&fq_arrived, 1);
	CHECK(pthread_mutex_lock(&fq_held) == 0, "lock");
	CHECK(pthread_mutex_unlock(&fq_held) == 0, "unlock");
	return NULL;
}

/* Holds fq_theirs across the fork, queued on fq_held meanwhile. */
static void *fq_holder(void *p)
{
	(void)p;
	CHECK(pthread_mutex_lock(&fq_theirs) == 0, "lock");
	atomic_fetch_add(&fq_arrived, 1);
	CHECK(pthread_mutex_lock(&fq_held) == 0, "lock");
	CHECK(pthread_mutex_unlock(&fq_held) == 0, "unlock");
	CHECK(pthread_mutex_unlock(&fq_theirs) == 0, "unlock");
	return NULL;
}

/* The child's threads: the two mutexes the parent's threads queued on, and a condvar. */
static void *fq_child_main(void *p)
{
	(void)p;
	for (int r = 0; r < 2000; r++) {
		pthread_mutex_t *m = r % 2 ? &fq_held : &fq_free;
		if (pthread_mutex_lock(m))
			_exit(10);
		fq_child_count[r % 2]++;
		if (r % 500 == 0)
			pthread_cond_signal(&fq_cond);
		if (pthread_mutex_unlock(m))
			_exit(11);
	}
	return NULL;
}

static int fq_child(void)
{
	test_watchdog("forkqueue's child", 30);
	/* Held by a thread that does not exist here: it stays held, as with glibc. */
	if (pthread_mutex_trylock(&fq_theirs) != EBUSY)
		_exit(4);
	struct timespec dl = after_ns(CLOCK_REALTIME, 20000000);
	if (pthread_mutex_timedlock(&fq_theirs, &dl) != ETIMEDOUT)
		_exit(5);
	/* Ours, with the parent's threads queued behind: they are not here. */
	if (pthread_mutex_unlock(&fq_held))
		_exit(6);
	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		if (pthread_create(&t[i], NULL, fq_child_main, NULL))
			_exit(7);
	fq_child_main(NULL);
	pthread_mutex_lock(&fq_held);
	dl = after_ns(CLOCK_REALTIME, 1000000);
	int rc = pthread_cond_timedwait(&fq_cond, &fq_held, &dl);
	pthread_mutex_unlock(&fq_held);
	if (rc && rc != ETIMEDOUT)
		_exit(8);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	if (fq_child_count[0] + fq_child_count[1] != 3 * 2000)
		_exit(9);
	if (pthread_mutex_trylock(&fq_free) || pthread_mutex_unlock(&fq_free) ||
	    pthread_mutex_trylock(&fq_held) || pthread_mutex_unlock(&fq_held))
		_exit(12);
	_exit(0);
}

static int forkqueue(void)
{
	pthread_t q[FQ_QUEUED], h;
	CHECK(pthread_mutex_lock(&fq_held) == 0, "lock");
	for (int i = 0; i < FQ_QUEUED; i++)
		spawn(fq_queue, NULL, &q[i]);
	spawn(fq_holder, NULL, &h);
	while (atomic_load(&fq_arrived) < FQ_QUEUED + 1)
		sched_yield();
	/* Long enough for all of them to be queued (or asleep) on fq_held. */
	struct timespec settle = { 0, 50000000 };
	nanosleep(&settle, NULL);
	pid_t pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0)
		fq_child();
	int status;
	CHECK(waitpid(pid, &status, 0) == pid, "waitpid");
	CHECK(pthread_mutex_unlock(&fq_held) == 0, "unlock");
	for (int i = 0; i < FQ_QUEUED; i++)
		join(q[i]);
	join(h);
	CHECK(fq_count == FQ_QUEUED * 2000, "%ld increments in the parent", fq_count);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "the child: status %#x (exit 4-5: a mutex held by a gone thread was free; "
	      "6-12: the mutexes the parent's threads queued on failed)", status);
	return 0;
}

/* --- thousands of threads alive at once on a few mutexes and a condvar */

#define MT_MUTEXES 3
#define MT_ROUNDS 5
static pthread_mutex_t mt_m[MT_MUTEXES] = { PTHREAD_MUTEX_INITIALIZER,
	PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER };
static pthread_mutex_t mt_gate = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t mt_cond = PTHREAD_COND_INITIALIZER;
static long mt_count[MT_MUTEXES];
static int mt_threads, mt_arrived, mt_released;

static void *mt_main(void *p)
{
	long id = (long)(intptr_t)p;
	for (int r = 0; r < MT_ROUNDS; r++) {
		int i = (int)((id + r) % MT_MUTEXES);
		CHECK(pthread_mutex_lock(&mt_m[i]) == 0, "lock");
		mt_count[i]++;
		CHECK(pthread_mutex_unlock(&mt_m[i]) == 0, "unlock");
	}
	/* Nobody leaves before all have arrived: all are alive at once.  Woken one
	 * by one (each signals the next), so no herd needs the gate at once. */
	CHECK(pthread_mutex_lock(&mt_gate) == 0, "lock");
	if (++mt_arrived == mt_threads)
		pthread_cond_signal(&mt_cond);
	while (mt_arrived < mt_threads)
		CHECK(pthread_cond_wait(&mt_cond, &mt_gate) == 0, "wait");
	mt_released++;
	pthread_cond_signal(&mt_cond);
	CHECK(pthread_mutex_unlock(&mt_gate) == 0, "unlock");
	return NULL;
}

/* Why n threads cannot run here, or NULL. */
static const char *thread_limit(int n, char *why, size_t len)
{
	struct rlimit rl;
	long max = -1;
	FILE *f = fopen("/proc/sys/kernel/threads-max", "r");
	if (f) {
		if (fscanf(f, "%ld", &max) != 1)
			max = -1;
		fclose(f);
	}
	if (max >= 0 && max < n + 64) {
		snprintf(why, len, "kernel.threads-max is %ld", max);
		return why;
	}
	if (!getrlimit(RLIMIT_NPROC, &rl) && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur < (rlim_t)n + 64) {
		snprintf(why, len, "ulimit -u is %ld", (long)rl.rlim_cur);
		return why;
	}
	f = fopen("/sys/fs/cgroup/pids.max", "r");
	if (f) {
		char v[32] = "";
		if (fscanf(f, "%31s", v) == 1 && strcmp(v, "max") && atol(v) < n + 64) {
			snprintf(why, len, "the cgroup's pids.max is %s", v);
			fclose(f);
			return why;
		}
		fclose(f);
	}
	return NULL;
}

static int manythreads(void)
{
	int n = arg ? atoi(arg) : 4000;
	char why[128];
	CHECK(n > 0, "thread count %d", n);
	if (thread_limit(n, why, sizeof(why))) {
		printf("skipped: %d threads cannot run here: %s\n", n, why);
		return 77;
	}
	pthread_t *t = calloc((size_t)n, sizeof(*t));
	CHECK(t, "calloc");
	pthread_attr_t a;
	pthread_attr_init(&a);
	pthread_attr_setstacksize(&a, 64 << 10);
	mt_threads = n;
	for (int i = 0; i < n; i++) {
		int rc = pthread_create(&t[i], &a, mt_main, (void *)(intptr_t)i);
		CHECK(rc == 0, "pthread_create of thread %d: %s", i, strerror(rc));
	}
	pthread_attr_destroy(&a);
	for (int i = 0; i < n; i++)
		join(t[i]);
	long total = 0;
	for (int i = 0; i < MT_MUTEXES; i++)
		total += mt_count[i];
	CHECK(total == (long)n * MT_ROUNDS, "%ld increments, expected %ld", total,
	      (long)n * MT_ROUNDS);
	CHECK(mt_released == n, "%d of %d released", mt_released, n);
	free(t);
	return 0;
}

/* --- an allocation-heavy program: blocks made in one thread, freed in another */

#define AL_THREADS 4
#define AL_SLOTS 64
static pthread_mutex_t al_m = PTHREAD_MUTEX_INITIALIZER;
static unsigned char *al_box[AL_SLOTS];
static size_t al_size[AL_SLOTS];
static long al_rounds;

static void al_fill(unsigned char *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (unsigned char)(n + i);
}

static int al_intact(const unsigned char *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (b[i] != (unsigned char)(n + i))
			return 0;
	return 1;
}

static void *al_main(void *p)
{
	unsigned seed = (unsigned)(intptr_t)p * 2654435761u + 1;
	for (long r = 0; r < al_rounds; r++) {
		seed = seed * 1103515245u + 12345u;
		size_t n = 1 + (seed >> 8) % (r % 16 == 0 ? 65536 : 512);
		unsigned char *b = malloc(n);
		CHECK(b, "malloc %zu", n);
		al_fill(b, n);
		if (r % 8 == 0) {
			unsigned char *g = realloc(b, n * 2);
			CHECK(g, "realloc");
			b = g;
		}
		/* Swap it into the shared box: the block found there was made by any thread. */
		int k = (int)((seed >> 4) % AL_SLOTS);
		CHECK(pthread_mutex_lock(&al_m) == 0, "lock");
		unsigned char *old = al_box[k];
		size_t old_n = al_size[k];
		al_box[k] = b;
		al_size[k] = n;
		CHECK(pthread_mutex_unlock(&al_m) == 0, "unlock");
		if (old) {
			CHECK(al_intact(old, old_n), "a block of %zu bytes was overwritten", old_n);
			free(old);
		}
	}
	return NULL;
}

static int allocs(void)
{
	al_rounds = test_scaled(20000);
	char dummy[64];
	test_run_threads(AL_THREADS, al_main, dummy, 0);
	for (int k = 0; k < AL_SLOTS; k++) {
		if (al_box[k])
			CHECK(al_intact(al_box[k], al_size[k]), "block %d overwritten", k);
		free(al_box[k]);
	}
	/* And once across a fork: the allocator's own fork handlers lock its mutexes. */
	pid_t pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		void *b = malloc(100);
		pthread_mutex_lock(&al_m);
		pthread_mutex_unlock(&al_m);
		free(b);
		_exit(b ? 0 : 1);
	}
	int status;
	CHECK(waitpid(pid, &status, 0) == pid, "waitpid");
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %#x", status);
	return 0;
}

/* Robust and process-shared mutexes are glibc's, and still work. */
static int glibc_kept(void)
{
	pthread_mutexattr_t a;
	pthread_mutex_t rb, ps;
	pthread_mutexattr_init(&a);
	pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
	CHECK(pthread_mutex_init(&rb, &a) == 0, "robust init");
	pthread_mutexattr_destroy(&a);
	pthread_mutexattr_init(&a);
	pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
	CHECK(pthread_mutex_init(&ps, &a) == 0, "pshared init");
	pthread_mutexattr_destroy(&a);
	pthread_mutex_t *ms[2] = { &rb, &ps };
	for (int i = 0; i < 2; i++) {
		pthread_t t;
		CHECK(pthread_mutex_lock(ms[i]) == 0, "lock");
		spawn(try_is_busy, ms[i], &t);
		CHECK(join(t) == (void *)EBUSY, "held");
		CHECK(pthread_mutex_unlock(ms[i]) == 0, "unlock");
		CHECK(pthread_mutex_destroy(ms[i]) == 0, "destroy");
	}
	/* A normal mutex is not robust: consistent refuses it. */
	static pthread_mutex_t n = PTHREAD_MUTEX_INITIALIZER;
	CHECK(pthread_mutex_consistent(&n) == EINVAL, "consistent on a normal mutex");
	return 0;
}

/* ------------------------------------------------------------- rwlocks */

/*
 * A program's rwlocks (static initializers of both kinds, an initialised one
 * and a heap one) under readers and writers that use every entry point: a
 * writer bumps two counters a and b with a pause between, a reader checks
 * a == b; at the end each lock's counters are the writes made on it.
 */
#define RW_LOCKS 4
static pthread_rwlock_t rw_static = PTHREAD_RWLOCK_INITIALIZER;
static pthread_rwlock_t rw_nonrec = PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP;
static pthread_rwlock_t rw_made;
static pthread_rwlock_t *rw_locks[RW_LOCKS];
static volatile long rw_a[RW_LOCKS], rw_b[RW_LOCKS];
static atomic_long rw_torn, rw_writes[RW_LOCKS];
static long rw_rounds;
static const struct timespec rw_far = { INT64_MAX, 999999999 };   /* the latest representable */

/* Lock i of the round for reading (write 0) or writing, by variant v of 4. */
static void rw_take(pthread_rwlock_t *l, int write, int v)
{
	int rc;
	switch (v) {
	case 0:
		rc = write ? pthread_rwlock_wrlock(l) : pthread_rwlock_rdlock(l);
		break;
	case 1:
		while ((rc = write ? pthread_rwlock_trywrlock(l) : pthread_rwlock_tryrdlock(l)) == EBUSY)
			sched_yield();
		break;
	case 2:
		rc = write ? pthread_rwlock_timedwrlock(l, &rw_far) : pthread_rwlock_timedrdlock(l, &rw_far);
		break;
	default: {
		clockid_t clk = (v & 4) ? CLOCK_REALTIME : CLOCK_MONOTONIC;
		struct timespec soon = after_ns(clk, 200000000);
		rc = write ? pthread_rwlock_clockwrlock(l, clk, &soon)
			   : pthread_rwlock_clockrdlock(l, clk, &soon);
		while (rc == ETIMEDOUT)   /* a writer may starve for a while: try again */
			rc = write ? pthread_rwlock_clockwrlock(l, clk, &rw_far)
				   : pthread_rwlock_clockrdlock(l, clk, &rw_far);
	}
	}
	CHECK(rc == 0, "%s variant %d: %d", write ? "write" : "read", v, rc);
}

static void *rw_main(void *p)
{
	unsigned seed = (unsigned)(uintptr_t)p * 2654435761u + 1;
	for (long r = 0; r < rw_rounds; r++) {
		seed = seed * 1103515245u + 12345u;
		int i = (int)(seed >> 8) % RW_LOCKS, write = (seed >> 4) % 4 == 0;
		int v = (int)((seed >> 12) % 6);
		pthread_rwlock_t *l = rw_locks[i];
		rw_take(l, write, v < 3 ? v : v == 3 ? 3 : 7);
		if (write) {
			rw_a[i]++;
			for (volatile int k = 0; k < 50; k++)
				;
			rw_b[i]++;
			atomic_fetch_add(&rw_writes[i], 1);
		} else if (rw_a[i] != rw_b[i]) {
			atomic_fetch_add(&rw_torn, 1);
		}
		CHECK(pthread_rwlock_unlock(l) == 0, "unlock");
	}
	return NULL;
}

static int rwcount(void)
{
	int threads = arg ? atoi(arg) : 8;
	rw_rounds = test_scaled(20000);
	pthread_rwlockattr_t a;
	pthread_rwlockattr_init(&a);
	pthread_rwlockattr_setkind_np(&a, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	CHECK(pthread_rwlock_init(&rw_made, &a) == 0, "init");
	pthread_rwlockattr_destroy(&a);
	pthread_rwlock_t *heap = malloc(sizeof(*heap));
	CHECK(heap && pthread_rwlock_init(heap, NULL) == 0, "init");
	pthread_rwlock_t *ls[RW_LOCKS] = { &rw_static, &rw_nonrec, &rw_made, heap };
	memcpy(rw_locks, ls, sizeof(ls));
	pthread_t t[64];
	CHECK(threads > 0 && threads <= 64, "1 to 64 threads");
	for (int i = 0; i < threads; i++)
		spawn(rw_main, (void *)(intptr_t)i, &t[i]);
	for (int i = 0; i < threads; i++)
		join(t[i]);
	long writes = 0;
	for (int i = 0; i < RW_LOCKS; i++) {
		long w = atomic_load(&rw_writes[i]);
		CHECK(rw_a[i] == w && rw_b[i] == w, "lock %d: %ld and %ld after %ld writes", i,
		      rw_a[i], rw_b[i], w);
		writes += w;
	}
	CHECK(atomic_load(&rw_torn) == 0, "%ld reads saw a write half done", atomic_load(&rw_torn));
	CHECK(pthread_rwlock_destroy(heap) == 0 && pthread_rwlock_destroy(&rw_made) == 0, "destroy");
	free(heap);
	printf("rwcount: %d threads, %ld writes in %ld rounds each\n", threads, writes, rw_rounds);
	return 0;
}

/* What another thread gets from one call (op) on rw_subject. */
static pthread_rwlock_t *rw_subject;
enum { RW_TRYRD, RW_TRYWR, RW_TIMEDRD_50MS, RW_CLOCKWR_50MS, RW_CLOCKRD_PAST,
       RW_TIMEDWR_PAST, RW_TIMEDWR_FAR };
static void *rw_other(void *p)
{
	pthread_rwlock_t *l = rw_subject;
	struct timespec past = { -1, 0 };
	struct timespec dl;
	int rc;
	switch ((int)(intptr_t)p) {
	case RW_TRYRD:
		if (!(rc = pthread_rwlock_tryrdlock(l)))
			pthread_rwlock_unlock(l);
		break;
	case RW_TRYWR:
		if (!(rc = pthread_rwlock_trywrlock(l)))
			pthread_rwlock_unlock(l);
		break;
	case RW_TIMEDRD_50MS: {
		dl = after_ns(CLOCK_REALTIME, 50000000);
		int64_t t0 = now_ns(CLOCK_MONOTONIC);
		rc = pthread_rwlock_timedrdlock(l, &dl);
		if (rc == ETIMEDOUT && now_ns(CLOCK_MONOTONIC) - t0 < 40000000)
			rc = -1;   /* gave up early */
		break;
	}
	case RW_CLOCKWR_50MS:
		dl = after_ns(CLOCK_MONOTONIC, 50000000);
		rc = pthread_rwlock_clockwrlock(l, CLOCK_MONOTONIC, &dl);
		break;
	case RW_CLOCKRD_PAST:
		rc = pthread_rwlock_clockrdlock(l, CLOCK_MONOTONIC, &past);
		break;
	case RW_TIMEDWR_PAST:
		rc = pthread_rwlock_timedwrlock(l, &past);
		break;
	default:
		if (!(rc = pthread_rwlock_timedwrlock(l, &rw_far)))
			pthread_rwlock_unlock(l);
	}
	return (void *)(intptr_t)rc;
}

static int rw_from_other(pthread_rwlock_t *l, int op)
{
	pthread_t t;
	rw_subject = l;
	spawn(rw_other, (void *)(intptr_t)op, &t);
	return (int)(intptr_t)join(t);
}

/* The return values a program sees from glibc's rwlocks, whoever serves them. */
static int rwerrors(void)
{
	static pthread_rwlock_t l = PTHREAD_RWLOCK_INITIALIZER;
	struct timespec bad_ns = after_ns(CLOCK_REALTIME, 0);
	bad_ns.tv_nsec = 1000000000;
	struct timespec neg_ns = { 1, -1 }, past = { -1, 0 }, zero = { 0, 0 };
	/* A bad deadline is EINVAL even when the lock is free. */
	CHECK(pthread_rwlock_timedrdlock(&l, &bad_ns) == EINVAL, "tv_nsec 1e9");
	CHECK(pthread_rwlock_timedwrlock(&l, &neg_ns) == EINVAL, "tv_nsec -1");
	CHECK(pthread_rwlock_clockrdlock(&l, CLOCK_PROCESS_CPUTIME_ID, &rw_far) == EINVAL,
	      "another clock");
	CHECK(pthread_rwlock_clockwrlock(&l, CLOCK_MONOTONIC, &bad_ns) == EINVAL, "tv_nsec 1e9");
	/* A free lock is taken whatever the deadline. */
	const struct timespec *dls[] = { &past, &zero, &rw_far };
	for (int i = 0; i < 3; i++) {
		CHECK(pthread_rwlock_timedwrlock(&l, dls[i]) == 0 && pthread_rwlock_unlock(&l) == 0,
		      "timedwrlock free, deadline %d", i);
		CHECK(pthread_rwlock_clockrdlock(&l, CLOCK_MONOTONIC, dls[i]) == 0 &&
		      pthread_rwlock_unlock(&l) == 0, "clockrdlock free, deadline %d", i);
		CHECK(pthread_rwlock_clockwrlock(&l, CLOCK_REALTIME, dls[i]) == 0 &&
		      pthread_rwlock_unlock(&l) == 0, "clockwrlock free, deadline %d", i);
	}
	/* Write-held by this thread. */
	CHECK(pthread_rwlock_wrlock(&l) == 0, "wrlock");
	CHECK(pthread_rwlock_rdlock(&l) == EDEADLK, "rdlock by the writer");
	CHECK(pthread_rwlock_wrlock(&l) == EDEADLK, "wrlock by the writer");
	CHECK(pthread_rwlock_timedwrlock(&l, &rw_far) == EDEADLK, "timedwrlock by the writer");
	CHECK(pthread_rwlock_clockrdlock(&l, CLOCK_MONOTONIC, &rw_far) == EDEADLK,
	      "clockrdlock by the writer");
	CHECK(pthread_rwlock_tryrdlock(&l) == EBUSY, "tryrdlock by the writer");
	CHECK(pthread_rwlock_trywrlock(&l) == EBUSY, "trywrlock by the writer");
	CHECK(rw_from_other(&l, RW_TRYRD) == EBUSY, "tryrdlock of a written lock");
	CHECK(rw_from_other(&l, RW_TRYWR) == EBUSY, "trywrlock of a written lock");
	CHECK(rw_from_other(&l, RW_TIMEDRD_50MS) == ETIMEDOUT, "timedrdlock of a written lock");
	CHECK(rw_from_other(&l, RW_CLOCKWR_50MS) == ETIMEDOUT, "clockwrlock of a written lock");
	CHECK(rw_from_other(&l, RW_CLOCKRD_PAST) == ETIMEDOUT, "a past deadline, busy");
	CHECK(rw_from_other(&l, RW_TIMEDWR_PAST) == ETIMEDOUT, "a past deadline, busy");
	CHECK(pthread_rwlock_unlock(&l) == 0, "unlock");
	/* Read-held: readers share it, writers wait. */
	CHECK(pthread_rwlock_rdlock(&l) == 0, "rdlock");
	CHECK(rw_from_other(&l, RW_TRYRD) == 0, "a second reader");
	CHECK(rw_from_other(&l, RW_TRYWR) == EBUSY, "trywrlock of a read lock");
	CHECK(rw_from_other(&l, RW_CLOCKWR_50MS) == ETIMEDOUT, "clockwrlock of a read lock");
	CHECK(pthread_rwlock_unlock(&l) == 0, "unlock");
	/* A writer waiting with the latest deadline gets the lock when it is free. */
	CHECK(pthread_rwlock_rdlock(&l) == 0, "rdlock");
	pthread_t w;
	rw_subject = &l;
	spawn(rw_other, (void *)(intptr_t)RW_TIMEDWR_FAR, &w);
	struct timespec nap = { 0, 20000000 };
	nanosleep(&nap, NULL);
	CHECK(pthread_rwlock_unlock(&l) == 0, "unlock");
	CHECK(join(w) == 0, "the far writer got it");
	/* Destroyed and made again; many made, used and destroyed. */
	CHECK(pthread_rwlock_destroy(&l) == 0, "destroy");
	CHECK(pthread_rwlock_init(&l, NULL) == 0, "init");
	CHECK(pthread_rwlock_wrlock(&l) == 0 && pthread_rwlock_unlock(&l) == 0, "after re-init");
	enum { MANY = 1000 };
	pthread_rwlock_t *many = calloc(MANY, sizeof(*many));
	CHECK(many, "calloc");
	for (int round = 0; round < 3; round++)
		for (int i = 0; i < MANY; i++) {
			CHECK(pthread_rwlock_init(&many[i], NULL) == 0, "init %d", i);
			CHECK(pthread_rwlock_rdlock(&many[i]) == 0 && pthread_rwlock_unlock(&many[i]) == 0,
			      "read %d", i);
			CHECK(pthread_rwlock_wrlock(&many[i]) == 0 && pthread_rwlock_unlock(&many[i]) == 0,
			      "write %d", i);
			CHECK(pthread_rwlock_destroy(&many[i]) == 0, "destroy %d", i);
		}
	free(many);
	return 0;
}

/*
 * fork with rwlocks held and waited on by the parent's threads: one
 * write-held by another thread (stays held in the child, as glibc's), one
 * free but used by others, one write-held by the forking thread with a
 * writer queued, one read-held by the forking thread.  (A read hold of the
 * forking thread with a writer queued is not here: its release hands the
 * lock to the queued writer, who is gone, in glibc's rwlock as in the
 * library's: the lock stays held in the child.)
 */
static pthread_rwlock_t rf_theirs = PTHREAD_RWLOCK_INITIALIZER;
static pthread_rwlock_t rf_free = PTHREAD_RWLOCK_INITIALIZER;
static pthread_rwlock_t rf_mine_w = PTHREAD_RWLOCK_INITIALIZER;
static pthread_rwlock_t rf_mine_r = PTHREAD_RWLOCK_INITIALIZER;
static atomic_int rf_stop, rf_users_stop, rf_holding;

static void *rf_holder(void *p)
{
	(void)p;
	CHECK(pthread_rwlock_wrlock(&rf_theirs) == 0, "wrlock");
	atomic_store(&rf_holding, 1);
	while (!atomic_load(&rf_stop))
		sched_yield();
	pthread_rwlock_unlock(&rf_theirs);
	return NULL;
}

static void *rf_user(void *p)
{
	(void)p;
	while (!atomic_load(&rf_users_stop)) {
		pthread_rwlock_rdlock(&rf_free);
		pthread_rwlock_unlock(&rf_free);
		pthread_rwlock_wrlock(&rf_free);
		pthread_rwlock_unlock(&rf_free);
	}
	return NULL;
}

static void *rf_waiter(void *p)
{
	pthread_rwlock_t *l = p;
	CHECK(pthread_rwlock_wrlock(l) == 0, "queued writer");
	pthread_rwlock_unlock(l);
	return NULL;
}

static int rf_child(void)
{
	alarm(30);   /* a hang is a failure (alarms are not inherited) */
	struct timespec short_dl = after_ns(CLOCK_MONOTONIC, 20000000);
	if (pthread_rwlock_tryrdlock(&rf_theirs) != EBUSY || pthread_rwlock_trywrlock(&rf_theirs) != EBUSY)
		return 10;
	if (pthread_rwlock_clockwrlock(&rf_theirs, CLOCK_MONOTONIC, &short_dl) != ETIMEDOUT)
		return 11;
	for (int i = 0; i < 3; i++)
		if (pthread_rwlock_wrlock(&rf_free) || pthread_rwlock_unlock(&rf_free) ||
		    pthread_rwlock_rdlock(&rf_free) || pthread_rwlock_unlock(&rf_free))
			return 12;
	/* The forking thread's holds are its own to release, and free after. */
	if (pthread_rwlock_rdlock(&rf_mine_w) != EDEADLK || pthread_rwlock_unlock(&rf_mine_w))
		return 13;
	if (pthread_rwlock_unlock(&rf_mine_r))
		return 14;
	pthread_rwlock_t *mine[2] = { &rf_mine_w, &rf_mine_r };
	for (int i = 0; i < 2; i++) {
		struct timespec dl = after_ns(CLOCK_REALTIME, 2000000000);
		if (pthread_rwlock_timedwrlock(mine[i], &dl) || pthread_rwlock_unlock(mine[i]))
			return 15 + i;
		if (pthread_rwlock_rdlock(mine[i]) || pthread_rwlock_unlock(mine[i]))
			return 17 + i;
	}
#ifndef LL_SWAP_DIRECT
	/* A thread of the child's own on a lock the parent's threads used (not
	 * under ThreadSanitizer: it stops at a thread made after a threaded fork). */
	pthread_t t;
	rw_subject = &rf_free;
	if (pthread_create(&t, NULL, rw_other, (void *)(intptr_t)RW_TRYWR))
		return 19;
	void *r;
	if (pthread_join(t, &r) || r != NULL)
		return 20;
#endif
	return 0;
}

static int rwfork(void)
{
	pthread_t holder, users[2], waiter;
	spawn(rf_holder, NULL, &holder);
	for (int i = 0; i < 2; i++)
		spawn(rf_user, NULL, &users[i]);
	while (!atomic_load(&rf_holding))
		sched_yield();
	CHECK(pthread_rwlock_wrlock(&rf_mine_w) == 0 && pthread_rwlock_rdlock(&rf_mine_r) == 0, "hold");
	spawn(rf_waiter, &rf_mine_w, &waiter);
	struct timespec nap = { 0, 30000000 };   /* the waiters queue, the users run */
	nanosleep(&nap, NULL);
	/* Free at the fork (a lock a gone thread held stays held, as glibc's). */
	atomic_store(&rf_users_stop, 1);
	for (int i = 0; i < 2; i++)
		join(users[i]);
	pid_t pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0)
		_exit(rf_child());
	int status;
	CHECK(waitpid(pid, &status, 0) == pid, "waitpid");
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %#x", status);
	CHECK(pthread_rwlock_unlock(&rf_mine_w) == 0 && pthread_rwlock_unlock(&rf_mine_r) == 0,
	      "the parent still holds them");
	atomic_store(&rf_stop, 1);
	join(holder);
	join(waiter);
	return 0;
}

static const struct test_case cases[] = {
	{ "preloaded", preloaded, 0 },
	{ "recursive", recursive, 0 },
	{ "errorcheck", errorcheck, 0 },
	{ "trylock", trylock, 0 },
	{ "timedlock", timedlock, 0 },
	{ "exclusion", exclusion, 0 },
	{ "broadcast", broadcast, 0 },
	{ "pingpong", pingpong, 0 },
	{ "condtimed", condtimed, 0 },
	{ "herd", herd, 0 },
	{ "condstress", condstress, 0 },
	{ "fork", forking, 0 },
	{ "forkqueue", forkqueue, 0 },
	{ "manythreads", manythreads, 0 },
	{ "allocs", allocs, 0 },
	{ "glibc", glibc_kept, 0 },
	{ "rwcount", rwcount, 0 },
	{ "rwerrors", rwerrors, 0 },
	{ "rwfork", rwfork, 0 },
};

int main(int argc, char **argv)
{
	const struct test_case *c = test_pick(argc, argv, cases, sizeof(cases) / sizeof(cases[0]),
					      "CASE [N]", &arg);
	if (!c)
		return 2;
	test_watchdog(c->name, 120);
	return c->run();
}
