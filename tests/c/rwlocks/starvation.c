/*
 * starvation.c: test_rwlocks starvation ALGO, a writer gets in under a
 * continuous stream of readers.
 */
#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "suite.h"

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

int test_starvation(void)
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
