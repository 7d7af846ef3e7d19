/*
 * conds.c: condvars waited on with a swapped mutex: wakeups, timeouts, the
 * recursive mutex released whole, no wakeup lost under many threads, no herd
 * after a broadcast.
 */
#include <sys/resource.h>

#include "swap_test.h"

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

int broadcast(void)
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
int pingpong(void)
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

int condtimed(void)
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
int condstress(void)
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

/*
 * A broadcast to n waiters (1000) must not send them all into the mutex's lock
 * at once: the swapper's own count of threads waiting inside a lock (stats on)
 * must stay at a few.  Before the regain queue it reached hundreds.  Run in a
 * child, whose exit writes its statistics.
 */
int herd(void)
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
	wait_child_ok(pid, "herd");
	/* The most threads the swapper saw waiting in a lock at once. */
	long most = swap_record_number(path, pid, "max_waiting");
	CHECK(most >= 0, "no statistics of process %d in %s", (int)pid, path);
	printf("herd: at most %ld threads waiting in a lock at once\n", most);
	/* The broadcaster's own wait at start-up, one waiter and the regainer: a few. */
	CHECK(most <= 4, "%ld threads raced for the mutex at once after the broadcast", most);
	return 0;
}
