/*
 * mutexes.c: POSIX mutex semantics: the types' errors, try and timed locks,
 * exclusion under a first-use race, the mutexes glibc keeps.
 */
#include <dlfcn.h>

#include "swap_test.h"

int preloaded(void)
{
	void *libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
	CHECK(libc, "libc.so.6 not loaded");
	CHECK(dlsym(RTLD_DEFAULT, "pthread_mutex_lock") != dlsym(libc, "pthread_mutex_lock"),
	      "pthread_mutex_lock is glibc's: the swap library is not preloaded");
	CHECK(getenv("LOCKLAB_SWAP_LOCK") != NULL, "LOCKLAB_SWAP_LOCK unset");
	return 0;
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

/* check(m) on a mutex of TYPE made by its static initializer (st), then on one
 * made by pthread_mutex_init. */
static void on_both(pthread_mutex_t *st, int type, void (*check)(pthread_mutex_t *m))
{
	pthread_mutex_t dyn;
	CHECK(init_typed(&dyn, type) == 0, "init");
	check(st);
	check(&dyn);
	CHECK(pthread_mutex_destroy(&dyn) == 0, "destroy");
}

static void recursive_on(pthread_mutex_t *m)
{
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

int recursive(void)
{
	static pthread_mutex_t st = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
	on_both(&st, PTHREAD_MUTEX_RECURSIVE, recursive_on);
	return 0;
}

static void errorcheck_on(pthread_mutex_t *m)
{
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

int errorcheck(void)
{
	static pthread_mutex_t st = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;
	on_both(&st, PTHREAD_MUTEX_ERRORCHECK, errorcheck_on);
	return 0;
}

int trylock(void)
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

int timedlock(void)
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

int exclusion(void)
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

/* Robust and process-shared mutexes are glibc's, and still work. */
int glibc_kept(void)
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
