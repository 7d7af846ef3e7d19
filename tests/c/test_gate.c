/*
 * test_gate.c: the admission gate (locklab/gate.h), every policy.
 *
 *   test_gate limit POLICY     many more threads than cores, tickets on and
 *                              off, suspends: never more than N inside, and
 *                              every thread finishes (nobody waits forever)
 *   test_gate tickets POLICY   admissions per thread are exactly what the
 *                              tickets promise, alone and under contention
 *   test_gate suspend POLICY   a suspended thread's slot lets another in;
 *                              resume waits for a slot again
 *   test_gate barge POLICY     fifo, auto: a running thread passes a sleeper
 *                              only until the sleeper is overdue; strict
 *                              FIFO (barge_us=0) never; suspend hands over
 *   test_gate follow auto      auto moves N the way the work asks: down to
 *                              what is used when N does not bind, up when
 *                              the admitted threads sleep inside the gate
 *   test_gate config           policy and option errors, the policy list
 *
 * No timing thresholds: the watchdog turns a hang into a failure.
 */
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "harness.h"
#include "locklab/gate.h"

static const char *policy;

/* Options that keep InnoDB's sleep-and-retry quick enough for a test. */
static const char *opts_for(const char *extra, char *buf, size_t len)
{
	const char *own = !strcmp(policy, "innodb") ? "thread_sleep_delay=200,adaptive_max_sleep_delay=2000,"
						    : "";
	snprintf(buf, len, "%s%s", own, extra);
	return buf;
}

static ll_gate_t *make_gate(const char *extra)
{
	char buf[256];
	struct ll_error err;
	ll_gate_t *g = ll_gate_create(policy, opts_for(extra, buf, sizeof(buf)), &err);
	CHECK(g, "create %s %s: %s", policy, buf, err.msg);
	return g;
}

/* --- limit: never more than N inside --- */

static struct {
	ll_gate_t *g;
	atomic_int inside, max_inside;
	atomic_long done;
	long rounds;
	int tickets_trx;   /* leave every this many enters (0: ticket-free gate) */
} lim;

static void note_inside(void)
{
	int now = atomic_fetch_add(&lim.inside, 1) + 1;
	int max = atomic_load(&lim.max_inside);
	while (now > max && !atomic_compare_exchange_weak(&lim.max_inside, &max, now))
		;
}

static void *limit_main(void *arg)
{
	ll_gate_thread_t me = { 0 };
	unsigned seed = (unsigned)(size_t)arg * 2654435761u + 1;
	for (long i = 0; i < lim.rounds; i++) {
		ll_gate_enter(lim.g, &me);
		note_inside();
		seed = seed * 1103515245u + 12345u;
		if ((seed >> 16) % 8 == 0) {
			/* Block "inside": step out, so the count must drop meanwhile. */
			atomic_fetch_sub(&lim.inside, 1);
			ll_gate_suspend(lim.g, &me);
			sched_yield();
			ll_gate_resume(lim.g, &me);
			note_inside();
		} else if ((seed >> 16) % 4 == 0) {
			sched_yield();   /* give a preempted neighbour the chance to overtake */
		}
		atomic_fetch_sub(&lim.inside, 1);
		ll_gate_exit(lim.g, &me);
		if (lim.tickets_trx && (i + 1) % lim.tickets_trx == 0)
			ll_gate_leave(lim.g, &me);
	}
	ll_gate_leave(lim.g, &me);
	atomic_fetch_add(&lim.done, 1);
	return NULL;
}

static int test_limit(void)
{
	static const struct {
		const char *opts;
		int n, trx;
	} cases[] = {
		{ "n=1,tickets=0", 1, 0 },
		{ "n=3,tickets=0", 3, 0 },
		{ "n=3,tickets=5", 3, 7 },
		{ "n=8,tickets=2", 8, 0 },
	};
	int threads = 64;
	test_watchdog("gate limit", 600);
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		char opts[64];
		/* auto moves N itself: pin its range so the bound is known. */
		if (!strcmp(policy, "auto"))
			snprintf(opts, sizeof(opts), "%s,min=1,max=%d,interval_us=200", cases[c].opts,
				 cases[c].n);
		else
			snprintf(opts, sizeof(opts), "%s", cases[c].opts);
		lim.g = make_gate(opts);
		atomic_store(&lim.inside, 0);
		atomic_store(&lim.max_inside, 0);
		atomic_store(&lim.done, 0);
		lim.rounds = test_scaled(3000);
		lim.tickets_trx = cases[c].trx;
		test_run_threads(threads, limit_main, NULL, 0);

		struct ll_gate_stats st;
		ll_gate_get_stats(lim.g, &st);
		int max = atomic_load(&lim.max_inside);
		printf("%s %s: %d threads, at most %d inside, N %lld..%lld, %llu waits\n", policy,
		       opts, threads, max, (long long)st.limit_min, (long long)st.limit_max,
		       (unsigned long long)st.waits);
		CHECK(max <= cases[c].n, "%d threads inside a gate of N=%d", max, cases[c].n);
		CHECK(max >= 1, "nobody was ever inside");
		CHECK(atomic_load(&lim.done) == threads, "%ld of %d threads finished",
		      atomic_load(&lim.done), threads);
		CHECK(atomic_load(&lim.inside) == 0, "inside count %d after all left",
		      atomic_load(&lim.inside));
		CHECK(st.limit_max <= cases[c].n, "limit went to %lld", (long long)st.limit_max);
		ll_gate_destroy(lim.g);
	}
	return 0;
}

/* --- tickets: admissions counted exactly --- */

static struct {
	ll_gate_t *g;
	long enters, trx;
	uint64_t admissions[16];
} tix;

static void *tickets_main(void *arg)
{
	size_t id = (size_t)arg;
	ll_gate_thread_t me = { 0 };
	for (long i = 0; i < tix.enters; i++) {
		ll_gate_enter(tix.g, &me);
		ll_gate_exit(tix.g, &me);
		if (tix.trx && (i + 1) % tix.trx == 0)
			ll_gate_leave(tix.g, &me);
	}
	ll_gate_leave(tix.g, &me);
	CHECK(me.enters == (uint64_t)tix.enters, "%llu enters counted",
	      (unsigned long long)me.enters);
	tix.admissions[id] = me.admissions;
	return NULL;
}

static void run_tickets(int threads)
{
	pthread_t t[16];
	for (int i = 0; i < threads; i++)
		CHECK(pthread_create(&t[i], NULL, tickets_main, (void *)(size_t)i) == 0, "create");
	for (int i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
}

static int test_tickets(void)
{
	test_watchdog("gate tickets", 300);
	/* T tickets: one admission covers T + 1 enters, transaction ends aside. */
	static const struct {
		const char *opts;
		long enters, trx, expect;
	} cases[] = {
		{ "n=2,tickets=0", 100, 0, 100 },    /* every enter is checked */
		{ "n=2,tickets=3", 100, 0, 25 },     /* 100 / (3 + 1) */
		{ "n=2,tickets=3", 101, 0, 26 },     /* the 101st starts a new one */
		{ "n=2,tickets=3", 100, 10, 30 },    /* ceil(10 / 4) per transaction of 10 */
		{ "n=2,tickets=1000", 500, 0, 1 },   /* all on one admission */
	};
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		for (int threads = 1; threads <= 8; threads += 7) {
			tix.g = make_gate(cases[c].opts);
			tix.enters = cases[c].enters;
			tix.trx = cases[c].trx;
			run_tickets(threads);
			for (int i = 0; i < threads; i++)
				CHECK(tix.admissions[i] == (uint64_t)cases[c].expect,
				      "%s %s, %ld enters, trx %ld, %d threads: thread %d took %llu "
				      "admissions, expected %ld", policy, cases[c].opts, cases[c].enters,
				      cases[c].trx, threads, i, (unsigned long long)tix.admissions[i],
				      cases[c].expect);
			struct ll_gate_stats st;
			ll_gate_get_stats(tix.g, &st);
			CHECK(st.waits <= (uint64_t)(threads * cases[c].expect), "%llu waits",
			      (unsigned long long)st.waits);
			if (threads == 1)
				CHECK(st.waits == 0, "a thread alone waited %llu times",
				      (unsigned long long)st.waits);
			ll_gate_destroy(tix.g);
		}
	}
	printf("%s: tickets ok\n", policy);
	return 0;
}

/* --- suspend: the slot is freed --- */

static struct {
	ll_gate_t *g;
	atomic_int step;       /* 1: A suspended; 2: B inside; 3: A resuming; 4: B gone */
	atomic_int b_inside;
	atomic_int a_saw_b_inside;
} sus;

static void wait_step(int s)
{
	while (atomic_load(&sus.step) < s)
		sched_yield();
}

static void *suspend_a(void *arg)
{
	(void)arg;
	ll_gate_thread_t me = { 0 };
	ll_gate_enter(sus.g, &me);
	CHECK(me.inside, "not inside after enter");
	ll_gate_suspend(sus.g, &me);
	CHECK(!me.inside && me.suspended, "suspend kept the slot");
	atomic_store(&sus.step, 1);
	wait_step(2);
	atomic_store(&sus.step, 3);
	/* N = 1 and B holds the slot: resume must wait for B to leave. */
	ll_gate_resume(sus.g, &me);
	atomic_store(&sus.a_saw_b_inside, atomic_load(&sus.b_inside));
	CHECK(me.inside && !me.suspended, "resume did not take a slot");
	ll_gate_exit(sus.g, &me);
	ll_gate_leave(sus.g, &me);
	return NULL;
}

static void *suspend_b(void *arg)
{
	(void)arg;
	ll_gate_thread_t me = { 0 };
	wait_step(1);
	/* Would hang here (until the watchdog) if A's suspended slot were not free. */
	ll_gate_enter(sus.g, &me);
	atomic_store(&sus.b_inside, 1);
	atomic_store(&sus.step, 2);
	wait_step(3);
	/* Let A reach its resume; a resume that failed to wait would see us inside. */
	for (int i = 0; i < 200; i++)
		sched_yield();
	struct timespec ts = { 0, 20 * 1000 * 1000 };
	nanosleep(&ts, NULL);
	atomic_store(&sus.b_inside, 0);
	ll_gate_exit(sus.g, &me);
	ll_gate_leave(sus.g, &me);
	return NULL;
}

static int test_suspend(void)
{
	test_watchdog("gate suspend", 120);
	for (int round = 0; round < 3; round++) {
		/* tickets=5: suspend must free the slot even while tickets remain. */
		sus.g = make_gate(!strcmp(policy, "auto") ? "n=1,min=1,max=1,tickets=5" : "n=1,tickets=5");
		atomic_store(&sus.step, 0);
		atomic_store(&sus.b_inside, 0);
		pthread_t a, b;
		CHECK(pthread_create(&a, NULL, suspend_a, NULL) == 0, "create");
		CHECK(pthread_create(&b, NULL, suspend_b, NULL) == 0, "create");
		pthread_join(a, NULL);
		pthread_join(b, NULL);
		CHECK(!atomic_load(&sus.a_saw_b_inside), "resume admitted A while B held the only slot");
		ll_gate_destroy(sus.g);
	}
	/* Suspend and resume outside the gate are no-ops. */
	ll_gate_t *g = make_gate("n=1");
	ll_gate_thread_t me = { 0 };
	ll_gate_suspend(g, &me);
	ll_gate_resume(g, &me);
	CHECK(!me.inside && !me.suspended && me.admissions == 0, "no-op suspend/resume changed state");
	ll_gate_destroy(g);
	printf("%s: suspend/resume ok\n", policy);
	return 0;
}

/* --- barge: a running thread may pass a sleeper, within the bound --- */

static struct {
	ll_gate_t *g;
	atomic_int b_in;       /* B got its slot */
	atomic_int b_go;       /* B may leave */
} brg;

static void *barge_b(void *arg)
{
	(void)arg;
	ll_gate_thread_t me = { 0 };
	ll_gate_enter(brg.g, &me);
	atomic_store(&brg.b_in, 1);
	while (!atomic_load(&brg.b_go))
		sched_yield();
	ll_gate_leave(brg.g, &me);
	return NULL;
}

/* N = 1, A (this thread) inside; start B and return once B sleeps in the queue. */
static pthread_t barge_setup(const char *opts, ll_gate_thread_t *a)
{
	char buf[128];
	snprintf(buf, sizeof(buf), "%s%s", opts, !strcmp(policy, "auto") ? ",min=1,max=1" : "");
	brg.g = make_gate(buf);
	atomic_store(&brg.b_in, 0);
	atomic_store(&brg.b_go, 0);
	*a = (ll_gate_thread_t){ 0 };
	ll_gate_enter(brg.g, a);
	pthread_t b;
	CHECK(pthread_create(&b, NULL, barge_b, NULL) == 0, "create");
	struct ll_gate_stats st;
	do {
		sched_yield();
		ll_gate_get_stats(brg.g, &st);
	} while (st.waiting == 0);
	CHECK(!atomic_load(&brg.b_in), "B got in beside A with N = 1");
	return b;
}

static void barge_finish(pthread_t b, ll_gate_thread_t *a)
{
	atomic_store(&brg.b_go, 1);
	ll_gate_leave(brg.g, a);
	pthread_join(b, NULL);
	ll_gate_destroy(brg.g);
}

/* C, back from a suspend while B sleeps in the queue: spins for A's slot. */
static struct {
	atomic_int suspended, go, in, done;
	ll_gate_thread_t me;
} spn;

static void *spin_c(void *arg)
{
	(void)arg;
	ll_gate_enter(brg.g, &spn.me);
	ll_gate_suspend(brg.g, &spn.me);
	atomic_store(&spn.suspended, 1);
	while (!atomic_load(&spn.go))
		sched_yield();
	ll_gate_resume(brg.g, &spn.me);
	atomic_store(&spn.in, 1);
	while (!atomic_load(&spn.done))
		sched_yield();
	return NULL;
}

/*
 * The middle path: A suspends while C, back from its own suspend, spins for a
 * slot and B sleeps in the queue.  A's slot goes to C, running, not to B (no
 * handoff, no wake-up); with nobody spinning, a suspend hands over (above).
 */
static void barge_to_a_resuming_thread(void)
{
	char buf[128];
	struct ll_gate_stats st;
	snprintf(buf, sizeof(buf), "n=1,tickets=0,barge_us=10000000,resume_spin_us=2000000%s",
		 !strcmp(policy, "auto") ? ",min=1,max=1" : "");
	brg.g = make_gate(buf);
	atomic_store(&brg.b_in, 0);
	atomic_store(&brg.b_go, 0);
	pthread_t b, c;
	CHECK(pthread_create(&c, NULL, spin_c, NULL) == 0, "create");
	while (!atomic_load(&spn.suspended))
		sched_yield();
	ll_gate_thread_t a = { 0 };
	ll_gate_enter(brg.g, &a);
	CHECK(pthread_create(&b, NULL, barge_b, NULL) == 0, "create");
	do {
		sched_yield();
		ll_gate_get_stats(brg.g, &st);
	} while (st.waiting == 0);
	atomic_store(&spn.go, 1);
	do {
		sched_yield();
		ll_gate_get_stats(brg.g, &st);
	} while (!st.spinning && !atomic_load(&spn.in));
	CHECK(!atomic_load(&spn.in), "C got in beside A with N = 1");
	ll_gate_suspend(brg.g, &a);
	while (!atomic_load(&spn.in))   /* the watchdog fires if C never gets A's slot */
		sched_yield();
	ll_gate_get_stats(brg.g, &st);
	CHECK(!atomic_load(&brg.b_in) && st.handoffs == 0 && st.waiting == 1 && !st.spinning,
	      "A's slot went to the sleeper: B in %d, %llu handoffs, %llu waiting",
	      atomic_load(&brg.b_in), (unsigned long long)st.handoffs,
	      (unsigned long long)st.waiting);
	/* C suspends with nobody spinning: the slot goes to B, as before. */
	ll_gate_suspend(brg.g, &spn.me);
	while (!atomic_load(&brg.b_in))
		sched_yield();
	atomic_store(&brg.b_go, 1);
	pthread_join(b, NULL);
	atomic_store(&spn.done, 1);
	pthread_join(c, NULL);
	ll_gate_resume(brg.g, &spn.me);
	ll_gate_leave(brg.g, &spn.me);
	ll_gate_resume(brg.g, &a);
	ll_gate_leave(brg.g, &a);
	ll_gate_get_stats(brg.g, &st);
	CHECK(st.handoffs == 1, "%llu handoffs", (unsigned long long)st.handoffs);
	ll_gate_destroy(brg.g);
}

/* Holders that keep a slot until told to leave. */
static struct {
	atomic_int in, go;
} hld;

static void *holder_main(void *arg)
{
	(void)arg;
	ll_gate_thread_t me = { 0 };
	ll_gate_enter(brg.g, &me);
	atomic_fetch_add(&hld.in, 1);
	while (!atomic_load(&hld.go))
		sched_yield();
	ll_gate_leave(brg.g, &me);
	atomic_fetch_sub(&hld.in, 1);
	return NULL;
}

static int cpus_usable(void)
{
	cpu_set_t set;
	return sched_getaffinity(0, sizeof(set), &set) ? 1 : CPU_COUNT(&set);
}

/*
 * N above the CPU count, every slot held, B asleep in the queue: A's suspend,
 * with CPU-count others still inside, frees its slot for a running thread (no
 * handoff, B still asleep), and A's resume takes it back directly.  With fewer
 * others inside than CPUs, A's suspend hands the slot to B (the CPU would idle).
 */
static void barge_suspend_above_the_cpus(void)
{
	char buf[128];
	struct ll_gate_stats st;
	int cpus = cpus_usable(), n = cpus + 2;
	int len = snprintf(buf, sizeof(buf), "n=%d,tickets=0,barge_us=10000000", n);
	if (!strcmp(policy, "auto"))
		snprintf(buf + len, sizeof(buf) - (size_t)len, ",min=%d,max=%d", n, n);
	brg.g = make_gate(buf);
	atomic_store(&brg.b_in, 0);
	atomic_store(&brg.b_go, 0);
	atomic_store(&hld.in, 0);
	atomic_store(&hld.go, 0);
	ll_gate_thread_t a = { 0 };
	ll_gate_enter(brg.g, &a);
	pthread_t *h = calloc((size_t)n, sizeof(*h)), b;
	CHECK(h, "calloc");
	for (int i = 0; i < n - 1; i++)
		CHECK(pthread_create(&h[i], NULL, holder_main, NULL) == 0, "create");
	while (atomic_load(&hld.in) < n - 1)
		sched_yield();
	CHECK(pthread_create(&b, NULL, barge_b, NULL) == 0, "create");
	do {
		sched_yield();
		ll_gate_get_stats(brg.g, &st);
	} while (st.waiting == 0);
	ll_gate_suspend(brg.g, &a);
	ll_gate_get_stats(brg.g, &st);
	CHECK(st.handoffs == 0 && st.waiting == 1 && !atomic_load(&brg.b_in),
	      "%d others inside on %d CPUs: a suspend handed its slot over (%llu handoffs, B in %d)",
	      n - 1, cpus, (unsigned long long)st.handoffs, atomic_load(&brg.b_in));
	ll_gate_resume(brg.g, &a);
	ll_gate_get_stats(brg.g, &st);
	CHECK(a.inside && st.handoffs == 0 && st.barges == 1 && st.waiting == 1,
	      "resume did not take the freed slot: %llu handoffs, %llu barges, %llu waiting",
	      (unsigned long long)st.handoffs, (unsigned long long)st.barges,
	      (unsigned long long)st.waiting);
	/* The holders leave (their slots free, B not overdue); A's next suspend,
	 * with nobody else inside, hands its slot to B. */
	atomic_store(&hld.go, 1);
	for (int i = 0; i < n - 1; i++)
		pthread_join(h[i], NULL);
	ll_gate_suspend(brg.g, &a);
	while (!atomic_load(&brg.b_in))   /* the watchdog fires if B never gets in */
		sched_yield();
	atomic_store(&brg.b_go, 1);
	pthread_join(b, NULL);
	ll_gate_resume(brg.g, &a);
	ll_gate_leave(brg.g, &a);
	free(h);
	ll_gate_destroy(brg.g);
}

static int test_barge(void)
{
	test_watchdog("gate barge", 300);
	ll_gate_thread_t a;
	struct ll_gate_stats st;

	/* A bound far beyond the test: A's leave and re-enter passes the sleeping B,
	 * as InnoDB's gate lets it; A's suspend then hands the slot to B at once. */
	pthread_t b = barge_setup("n=1,tickets=0,barge_us=10000000", &a);
	ll_gate_leave(brg.g, &a);
	ll_gate_enter(brg.g, &a);
	CHECK(!atomic_load(&brg.b_in), "B got in: A did not barge");
	ll_gate_get_stats(brg.g, &st);
	CHECK(st.barges == 1 && st.waiting == 1, "%llu barges, %llu waiting",
	      (unsigned long long)st.barges, (unsigned long long)st.waiting);
	ll_gate_suspend(brg.g, &a);
	while (!atomic_load(&brg.b_in))   /* the watchdog fires if the slot never reaches B */
		sched_yield();
	ll_gate_get_stats(brg.g, &st);
	CHECK(st.handoffs == 1, "%llu handoffs after suspend", (unsigned long long)st.handoffs);
	/* Resume once B has gone: were A to queue behind B now, B's leave would free
	 * the slot for running threads and A would sleep out its 10 s bound. */
	atomic_store(&brg.b_go, 1);
	pthread_join(b, NULL);
	ll_gate_resume(brg.g, &a);
	CHECK(a.inside && !a.suspended, "resume after B left did not take the free slot");
	ll_gate_leave(brg.g, &a);
	ll_gate_destroy(brg.g);

	/* Strict FIFO: A's re-enter queues behind B and returns only after B got in. */
	b = barge_setup("n=1,tickets=0,barge_us=0", &a);
	atomic_store(&brg.b_go, 1);
	ll_gate_leave(brg.g, &a);
	ll_gate_enter(brg.g, &a);
	CHECK(atomic_load(&brg.b_in), "A passed B with barge_us=0");
	ll_gate_get_stats(brg.g, &st);
	CHECK(st.barges == 0, "%llu barges with barge_us=0", (unsigned long long)st.barges);
	barge_finish(b, &a);

	/* A bound of 20 ms: A leaving and re-entering without pause would pass B
	 * for ever; once B is overdue the slot must go to B (else the watchdog). */
	b = barge_setup("n=1,tickets=0,barge_us=20000", &a);
	atomic_store(&brg.b_go, 1);
	long rounds = 0;
	while (!atomic_load(&brg.b_in)) {
		ll_gate_leave(brg.g, &a);
		ll_gate_enter(brg.g, &a);
		rounds++;
	}
	ll_gate_get_stats(brg.g, &st);
	printf("%s: A re-entered %ld times, passing B %llu times, before B's turn\n", policy, rounds,
	       (unsigned long long)st.barges);
	CHECK(st.handoffs >= 1, "B got in without a handoff");
	barge_finish(b, &a);

	/* A free slot that no running thread takes reaches a sleeper by its deadline. */
	b = barge_setup("n=1,tickets=0,barge_us=20000", &a);
	ll_gate_leave(brg.g, &a);
	while (!atomic_load(&brg.b_in))
		sched_yield();
	atomic_store(&brg.b_go, 1);
	pthread_join(b, NULL);
	ll_gate_destroy(brg.g);

	barge_to_a_resuming_thread();
	barge_suspend_above_the_cpus();
	printf("%s: barging ok\n", policy);
	return 0;
}

/* --- config --- */

/* auto following the work: N must reach a bound within a long deadline. */
static struct {
	ll_gate_t *g;
	atomic_int stop;
	int sleep_us;
} follow;

static void *follow_main(void *arg)
{
	(void)arg;
	ll_gate_thread_t me = { 0 };
	while (!atomic_load(&follow.stop)) {
		ll_gate_enter(follow.g, &me);
		if (follow.sleep_us) {
			struct timespec ts = { 0, follow.sleep_us * 1000L };
			nanosleep(&ts, NULL);
		}
		ll_gate_exit(follow.g, &me);
		ll_gate_leave(follow.g, &me);
	}
	return NULL;
}

/* Run THREADS clients until lo <= N <= hi (or MS_MAX ms); returns the last N. */
static int64_t follow_run(const char *opts, int threads, int sleep_us, int64_t lo, int64_t hi,
			  int ms_max)
{
	pthread_t t[16];
	struct ll_error err;
	follow.g = ll_gate_create("auto", opts, &err);
	CHECK(follow.g, "auto %s: %s", opts, err.msg);
	atomic_store(&follow.stop, 0);
	follow.sleep_us = sleep_us;
	for (int i = 0; i < threads; i++)
		CHECK(!pthread_create(&t[i], NULL, follow_main, NULL), "pthread_create");
	int64_t n = ll_gate_limit(follow.g);
	for (int ms = 0; ms < ms_max && !(n >= lo && n <= hi); ms += 10) {
		struct timespec ts = { 0, 10 * 1000000L };
		nanosleep(&ts, NULL);
		n = ll_gate_limit(follow.g);
	}
	atomic_store(&follow.stop, 1);
	for (int i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	ll_gate_destroy(follow.g);
	return n;
}

static int test_follow(void)
{
	CHECK(!strcmp(policy, "auto"), "follow is auto's test");
	/* 2 clients behind N = 64: nobody ever queues, so N does not bind; it must
	 * come down to 1.5x the most seen inside (at most 2), + 1, and not below min. */
	int64_t n = follow_run("n=64,min=2,max=64,interval_us=1000", 2, 0, 2, 4, 10000);
	CHECK(n >= 2 && n <= 4, "N did not come down to what is used: %lld", (long long)n);
	/* 12 clients that sleep 2 ms inside the gate, from N = 1: each slot serves
	 * one client at a time, so every step up serves more; N must climb. */
	n = follow_run("n=1,min=1,max=64,interval_us=2000", 12, 2000, 4, 64, 10000);
	CHECK(n >= 4, "N did not climb while the admitted threads sleep: %lld", (long long)n);
	/* The same, but the admitted threads barge back in for 3 s, so that within the
	 * 2 s given nobody ever comes out of the queue: a full queue is a queue all the
	 * same, and N must climb.  (The clients still queued at the end get their slots
	 * only when overdue: the run ends 3 s after its start.) */
	n = follow_run("n=1,min=1,max=64,interval_us=2000,barge_us=3000000", 12, 2000, 4, 64, 2000);
	CHECK(n >= 4, "N did not climb with a full queue that nobody leaves: %lld", (long long)n);
	printf("follow: down to %s, up while sleeping inside ok\n", "what is used");
	return 0;
}

static void expect_error(const char *p, const char *opts, const char *want)
{
	struct ll_error err = { "" };
	ll_gate_t *g = ll_gate_create(p, opts, &err);
	CHECK(!g, "%s %s accepted", p, opts ? opts : "");
	CHECK(strstr(err.msg, want) && !strchr(err.msg, '\n'), "%s %s: got '%s', wanted '%s'", p,
	      opts ? opts : "", err.msg, want);
}

static int test_config(void)
{
	expect_error("lifo", NULL, "unknown gate policy 'lifo' (valid: innodb, fifo, auto)");
	expect_error("fifo", "m=3", "unknown option 'm' for gate 'fifo' (valid: n, tickets, barge_us, handoff_pace, resume_spin_us)");
	expect_error("fifo", "n=0", "option 'n' of gate 'fifo' wants an integer in [1, ");
	expect_error("innodb", "thread_sleep_delay=-1", "option 'thread_sleep_delay' of gate 'innodb'");
	expect_error("auto", "n=2,,tickets=1", "malformed options 'n=2,,tickets=1' for gate 'auto' (empty item)");
	expect_error("auto", "interval_us", "expected KEY=VALUE");

	size_t n = 0;
	while (ll_gate_policy_at(n))
		n++;
	CHECK(n == 3, "%zu policies", n);
	for (size_t i = 0; i < n; i++) {
		const struct ll_gate_policy_info *p = ll_gate_policy_at(i);
		CHECK(p->nknobs >= 2 && !strcmp(p->knobs[0].name, "n") &&
		      !strcmp(p->knobs[1].name, "tickets"), "%s: n and tickets first", p->name);
		struct ll_error err;
		ll_gate_t *g = ll_gate_create(p->name, NULL, &err);
		CHECK(g, "%s with defaults: %s", p->name, err.msg);
		CHECK(!strcmp(ll_gate_policy(g), p->name), "policy name");
		CHECK(ll_gate_limit(g) >= 1, "limit %lld", (long long)ll_gate_limit(g));
		ll_gate_destroy(g);
	}
	struct ll_error err;
	ll_gate_t *g = ll_gate_create("innodb", "n=5", &err);
	CHECK(g && ll_gate_limit(g) == 5, "innodb n=5");
	ll_gate_destroy(g);
	printf("config: errors and defaults ok\n");
	return 0;
}

int main(int argc, char **argv)
{
	static const struct test_case tests[] = {
		{ "limit", test_limit, 1 },     { "tickets", test_tickets, 1 },
		{ "suspend", test_suspend, 1 }, { "barge", test_barge, 1 },
		{ "follow", test_follow, 1 },   { "config", test_config, 0 },
	};
	const struct test_case *t = test_pick(argc, argv, tests, sizeof(tests) / sizeof(tests[0]),
					      "limit|tickets|suspend|barge|follow POLICY | config", &policy);
	return t ? t->run() : 2;
}
