/*
 * exclusion.c: test_rwlocks exclusion ALGO, readers and writers: a writer never
 * sees anyone inside, readers never see a writer, counters add up.
 */
#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "suite.h"

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

int test_exclusion(void)
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
