/*
 * recursion.c: test_rwlocks recursion ALGO, a reader locks again past a waiting
 * writer; a thread holds 12 locks twice each.
 */
#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "suite.h"

static atomic_int writer_in;

static void *waiting_writer(void *p)
{
	(void)p;
	atomic_store(&step, 1);
	CHECK(ll_rwlock_wrlock(&shared) == 0, "wrlock");
	atomic_store(&writer_in, 1);
	ll_rwlock_unlock(&shared);
	return NULL;
}

enum { MANY = 12 };   /* more locks than ll keeps slots for a thread (8) */
static ll_rwlock_t many[MANY];

static void *try_write_many(void *p)
{
	int *busy = p;
	for (int k = 0; k < MANY; k++)
		if (ll_rwlock_trywrlock(&many[k]) == EBUSY)
			(*busy)++;
		else
			ll_rwlock_unlock(&many[k]);
	return NULL;
}

/*
 * Whether a thread that reads the lock may read it again while a writer
 * waits.  innodb56-rw may not, as InnoDB's rw_lock_t: the waiting writer has
 * already taken X_LOCK_DECR off lock_word (wait_ex), no s-lock gets in past
 * it, and the writer waits for the reader that waits for it.  Only a timed
 * read returns; the test expects it to time out.
 */
static int reads_past_waiting_writer(void)
{
	return strcmp(algo, "innodb56-rw") != 0;
}

int test_recursion(void)
{
	pthread_t t;

	init_rw(&shared, NULL);
	test_watchdog("recursion", 60);
	atomic_store(&step, 0);
	CHECK(ll_rwlock_rdlock(&shared) == 0, "rdlock");
	pthread_create(&t, NULL, waiting_writer, NULL);
	wait_step(1);
	sleep_ms(50);   /* the writer is waiting by now */
	CHECK(!atomic_load(&writer_in), "%s: a writer got in beside a reader", algo);
	if (reads_past_waiting_writer()) {
		/* A reader may lock again (POSIX): it must not queue behind the writer it blocks. */
		int rc = ll_rwlock_timedrdlock_ns(&shared, 2000000000);
		CHECK(rc == 0, "%s: recursive read with a writer waiting returned %d", algo, rc);
		CHECK(ll_rwlock_unlock(&shared) == 0 && !atomic_load(&writer_in), "%s: writer in "
		      "after the inner unlock", algo);
	} else {
		/* The writer has reserved the lock: the read waits for it, which waits for us. */
		int rc = ll_rwlock_timedrdlock_ns(&shared, 50000000);
		CHECK(rc == ETIMEDOUT && !atomic_load(&writer_in), "%s: recursive read with a "
		      "writer waiting returned %d, writer in %d", algo, rc, atomic_load(&writer_in));
		CHECK(ll_rwlock_tryrdlock(&shared) == EBUSY, "%s: tryrdlock past a waiting writer",
		      algo);
	}
	CHECK(ll_rwlock_unlock(&shared) == 0, "unlock");
	pthread_join(t, NULL);
	CHECK(atomic_load(&writer_in), "%s: writer never got in", algo);
	ll_rwlock_destroy(&shared);

	/* Twice each of more locks than a thread has slots for: every hold counts. */
	for (int k = 0; k < MANY; k++) {
		init_rw(&many[k], NULL);
		CHECK(ll_rwlock_rdlock(&many[k]) == 0 && ll_rwlock_rdlock(&many[k]) == 0, "rdlock");
	}
	for (int round = 0; round < 3; round++) {
		int busy = 0;
		pthread_create(&t, NULL, try_write_many, &busy);
		pthread_join(t, NULL);
		CHECK(busy == (round < 2 ? MANY : 0), "%s: round %d: %d of %d read-held locks busy "
		      "to a writer", algo, round, busy, MANY);
		if (round < 2)
			for (int k = 0; k < MANY; k++)
				CHECK(ll_rwlock_unlock(&many[k]) == 0, "%s: unlock %d", algo, k);
	}
	for (int k = 0; k < MANY; k++)
		ll_rwlock_destroy(&many[k]);
	printf("recursion %s: %s; %d locks held twice each\n", algo,
	       reads_past_waiting_writer() ? "read again past a waiting writer"
					   : "a read again waits for the waiting writer", MANY);
	return 0;
}
