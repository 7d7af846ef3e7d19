/*
 * bravo.c: test_rwlocks revocation UNDER, bravo over UNDER: table readers hold
 * off a revoking writer, a timed revocation gives up with the bias back on,
 * inhibit keeps it off; a stress with the bias flipping where counters add up.
 */
#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "suite.h"
#include "locklab/rwlocks/bravo.h"

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

int test_revocation(void)
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
