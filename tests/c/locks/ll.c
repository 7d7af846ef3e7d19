/*
 * ll.c: test_locks ll-*, the `ll` mutex's own rules: its pollers, the queue
 * draining while the lock is free, paused looks, and how a poll ends.
 */
#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "suite.h"
#include "locklab/locks/ll.h"

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

int test_ll_pollers(void)
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

int test_ll_drain(void)
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

int test_ll_pause(void)
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

int test_ll_poll_bound(void)
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

int test_ll_poll_queue(void)
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
