/*
 * fifo_tp.c: test_locks fifo-tp-skip and fifo-tp-abandon, what `fifo-tp`
 * adds to a FIFO lock: a queued waiter that stops running does not hold up
 * the waiters behind it, and a timed waiter leaves the queue at its deadline.
 *
 * The lock is used through its own type (locklab/locks/fifo_tp.h), whose
 * word shows when a waiter has queued (QUEUED).  A waiter "stops" inside a
 * signal handler that sleeps until the test lets it go: from the lock's
 * side it is a thread the scheduler does not run, and its heartbeat ages.
 */
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "suite.h"
#include "locklab/locks/fifo_tp.h"

static ll_fifo_tp_t lk;

static void init_fifo_tp(const struct ll_fifo_tp_config *cfg)
{
	CHECK(ll_fifo_tp_init(&lk, cfg) == 0, "fifo-tp init refused");
}

static unsigned word(void)
{
	return atomic_load(&lk.word);
}

static void sleep_ms(long ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000 };
	while (nanosleep(&ts, &ts))
		;
}

/* Wait up to ms for *flag to become nonzero; its value. */
static int wait_flag(atomic_int *flag, long ms)
{
	for (long i = 0; i < ms && !atomic_load(flag); i++)
		sleep_ms(1);
	return atomic_load(flag);
}

/* The stopped waiter: SIGUSR1 holds it in the handler until `go_on`. */
static atomic_int stopped, go_on;

static void stop_here(int sig)
{
	(void)sig;
	atomic_store(&stopped, 1);
	while (!atomic_load(&go_on))
		sleep_ms(1);
}

struct skip_waiter {
	atomic_int tid, got, release;
};

static void *skip_waiter_main(void *p)
{
	struct skip_waiter *w = p;
	atomic_store(&w->tid, (int)syscall(SYS_gettid));
	ll_fifo_tp_lock(&lk);
	atomic_store(&w->got, 1);
	wait_flag(&w->release, 10000);
	ll_fifo_tp_unlock(&lk);
	return NULL;
}

/*
 * A holder, a waiter that queued first and stopped (its heartbeat stale,
 * longer ago than a woken waiter's grace), and a second waiter: the holder's
 * release goes to the second, while the first is still stopped; once it runs
 * again, the first gets the lock too.  A plain FIFO lock (mcs, ticket) hands
 * the lock to the stopped waiter and everyone behind it waits.
 */
int test_fifo_tp_skip(void)
{
	/* Hand over at every unlock; candidates never sleep, so the stopped one stays stale. */
	const struct ll_fifo_tp_config cfg = { .turn_ns = 0, .stale_ns = 20000,
					       .patience_ns = 4000000000LL, .candidates = 1,
					       .spin = LL_SPIN_PAUSE };
	struct skip_waiter first = { 0 }, second = { 0 };
	pthread_t t1, t2;

	test_watchdog("fifo-tp-skip", 60);
	signal(SIGUSR1, stop_here);
	init_fifo_tp(&cfg);
	ll_fifo_tp_lock(&lk);

	pthread_create(&t1, NULL, skip_waiter_main, &first);
	for (int i = 0; i < 10000 && !(word() & LL_FIFO_TP_QUEUED); i++)
		sleep_ms(1);
	CHECK(word() & LL_FIFO_TP_QUEUED, "the first waiter never queued (word %#x)", word());
	syscall(SYS_tgkill, getpid(), atomic_load(&first.tid), SIGUSR1);
	CHECK(wait_flag(&stopped, 10000), "the first waiter never stopped");
	/* Past stale_ns and a woken waiter's grace: the first waiter does not run. */
	sleep_ms(50);

	pthread_create(&t2, NULL, skip_waiter_main, &second);
	sleep_ms(20);
	ll_fifo_tp_unlock(&lk);
	CHECK(wait_flag(&second.got, 10000), "the second waiter did not get the lock while the "
	      "first was stopped");
	CHECK(!atomic_load(&first.got), "the stopped waiter got the lock");
	CHECK(atomic_load(&stopped), "the first waiter left its handler");

	atomic_store(&go_on, 1);
	atomic_store(&second.release, 1);
	CHECK(wait_flag(&first.got, 10000), "the first waiter did not get the lock once it ran");
	atomic_store(&first.release, 1);
	pthread_join(t1, NULL);
	pthread_join(t2, NULL);
	CHECK(word() == 0, "word %#x left behind, expected FREE", word());
	printf("fifo-tp-skip: the stopped waiter was passed by, then served\n");
	return 0;
}

struct timed_waiter {
	int64_t timeout_ms;   /* 0: a plain lock */
	int rc;
	double waited_ms;
	atomic_int done;
};

static void *timed_waiter_main(void *p)
{
	struct timed_waiter *w = p;
	uint64_t t0 = ll_now_ns();
	if (w->timeout_ms) {
		struct timespec dl = ll_deadline_after_ns(w->timeout_ms * 1000000);
		w->rc = ll_fifo_tp_timedlock(&lk, &dl);
	} else {
		ll_fifo_tp_lock(&lk);
		w->rc = 0;
	}
	w->waited_ms = (double)(ll_now_ns() - t0) / 1e6;
	if (w->rc == 0)
		ll_fifo_tp_unlock(&lk);
	atomic_store(&w->done, 1);
	return NULL;
}

/*
 * While the lock is held: a timed waiter at the head (a candidate), one
 * parked behind it, and a plain waiter last.  Both timed ones leave at their
 * deadlines, the plain one gets the lock at the release, and the word holds
 * nothing afterwards (the queue emptied).
 */
int test_fifo_tp_abandon(void)
{
	struct timed_waiter w[3] = { { .timeout_ms = 100 }, { .timeout_ms = 150 }, { 0 } };
	pthread_t t[3];

	test_watchdog("fifo-tp-abandon", 60);
	init_fifo_tp(NULL);
	ll_fifo_tp_lock(&lk);
	for (int i = 0; i < 3; i++) {
		pthread_create(&t[i], NULL, timed_waiter_main, &w[i]);
		sleep_ms(10);
	}
	CHECK(wait_flag(&w[0].done, 10000) && wait_flag(&w[1].done, 10000),
	      "the timed waiters did not leave");
	for (int i = 0; i < 2; i++)
		CHECK(w[i].rc == ETIMEDOUT && w[i].waited_ms >= (double)w[i].timeout_ms &&
		      w[i].waited_ms < (double)w[i].timeout_ms + 2000,
		      "timed waiter %d: rc %d after %.1f ms (deadline %lld ms)", i, w[i].rc,
		      w[i].waited_ms, (long long)w[i].timeout_ms);
	CHECK(!atomic_load(&w[2].done), "the plain waiter got a held lock");
	CHECK(word() & LL_FIFO_TP_QUEUED, "the plain waiter is not queued (word %#x)", word());
	uint64_t released = ll_now_ns();
	ll_fifo_tp_unlock(&lk);
	CHECK(wait_flag(&w[2].done, 10000), "the plain waiter did not get the released lock");
	double after_ms = (double)(ll_now_ns() - released) / 1e6;
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	CHECK(w[2].rc == 0, "plain waiter: rc %d", w[2].rc);
	CHECK(word() == 0, "word %#x left behind, expected FREE", word());
	printf("fifo-tp-abandon: timed waiters left after %.1f and %.1f ms; the last got the "
	       "lock %.2f ms after the release\n", w[0].waited_ms, w[1].waited_ms, after_ms);
	return 0;
}
