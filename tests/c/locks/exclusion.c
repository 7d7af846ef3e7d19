/*
 * exclusion.c: test_locks exclusion ALGO, mutual exclusion under oversubscription.
 */
#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "suite.h"

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

int test_exclusion(void)
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
		/* The policies that give the core away: yield at every wait, auto after a while. */
		if (has_spin_knob(algo)) {
			CHECK(run_exclusion(spin_yield, total, 10) > 0, "%s: no acquisition in 10 s",
			      algo);
			CHECK(run_exclusion("spin=auto", total, 10) > 0,
			      "%s spin=auto: no acquisition in 10 s", algo);
		}
	} else {
		CHECK(run_exclusion(NULL, total, 0) >= total - 64, "%s: run incomplete", algo);
	}
	return 0;
}
