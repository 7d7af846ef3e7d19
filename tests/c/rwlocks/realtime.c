/*
 * realtime.c: test_rwlocks realtime ALGO, POSIX's rule for rwlocks under
 * SCHED_FIFO and SCHED_RR: a thread does not acquire a read lock while a
 * writer of higher or equal priority is blocked on the lock; the writer
 * gets it before that reader.  Every thread on one CPU, so that who runs
 * when follows from the priorities alone.  Needs root or RLIMIT_RTPRIO
 * (skipped with the reason elsewhere).
 *
 * `pthread` runs with prefer=writer-nonrecursive: glibc's default kind lets
 * a reader join the readers inside whatever waits (glibc's choice; the
 * lock models it as it is), and that kind is glibc's way to keep the rule.
 */
#include <errno.h>
#include <sched.h>
#include <string.h>

#include "suite.h"

/* Priorities above the default's 0 and below anything the system runs. */
enum { PRIO_MAIN = 10 };

static atomic_int writer_waiting, writer_through, reader_in, reader_try_rc, reader_timed_rc;
static atomic_int reader_saw_writer_done;

static void *writer_main(void *p)
{
	(void)p;
	atomic_store(&writer_waiting, 1);
	CHECK(ll_rwlock_wrlock(&shared) == 0, "%s: wrlock", algo);
	atomic_store(&writer_through, 1);
	CHECK(ll_rwlock_unlock(&shared) == 0, "%s: writer's unlock", algo);
	return NULL;
}

static void *reader_main(void *p)
{
	(void)p;
	int rc = ll_rwlock_tryrdlock(&shared);
	atomic_store(&reader_try_rc, rc);
	if (rc == 0)
		ll_rwlock_unlock(&shared);
	rc = ll_rwlock_timedrdlock_ns(&shared, 20000000);
	atomic_store(&reader_timed_rc, rc);
	if (rc == 0)
		ll_rwlock_unlock(&shared);
	CHECK(ll_rwlock_rdlock(&shared) == 0, "%s: rdlock", algo);
	atomic_store(&reader_saw_writer_done, atomic_load(&writer_through));
	atomic_store(&reader_in, 1);
	CHECK(ll_rwlock_unlock(&shared) == 0, "%s: reader's unlock", algo);
	return NULL;
}

/*
 * main (PRIO_MAIN) reads; a writer at writer_prio waits; a reader at
 * reader_prio arrives.  blocks: whether the rule has the reader wait.
 */
static void scene(const char *opts, int writer_prio, int reader_prio, int blocks)
{
	atomic_store(&writer_waiting, 0);
	atomic_store(&writer_through, 0);
	atomic_store(&reader_in, 0);
	init_rw(&shared, opts);
	CHECK(ll_rwlock_rdlock(&shared) == 0, "%s: main's rdlock", algo);
	pthread_t w = test_start_fifo(writer_main, NULL, writer_prio);
	while (!atomic_load(&writer_waiting))
		sleep_ms(1);
	sleep_ms(50);   /* the writer asleep in wrlock: main runs only once it is */
	CHECK(!atomic_load(&writer_through), "%s: the writer got in past a reader", algo);
	pthread_t r = test_start_fifo(reader_main, NULL, reader_prio);
	sleep_ms(100);
	if (blocks) {
		CHECK(atomic_load(&reader_try_rc) == EBUSY, "%s: a reader at SCHED_FIFO %d: "
		      "tryrdlock %d while a writer at %d waits (EBUSY expected)", algo, reader_prio,
		      atomic_load(&reader_try_rc), writer_prio);
		CHECK(atomic_load(&reader_timed_rc) == ETIMEDOUT, "%s: a reader at SCHED_FIFO %d: "
		      "timedrdlock %d while a writer at %d waits (ETIMEDOUT expected)", algo,
		      reader_prio, atomic_load(&reader_timed_rc), writer_prio);
		CHECK(!atomic_load(&reader_in), "%s: a reader at SCHED_FIFO %d got in while a "
		      "writer at %d waits", algo, reader_prio, writer_prio);
	} else {
		CHECK(atomic_load(&reader_try_rc) == 0 && atomic_load(&reader_in),
		      "%s: a reader at SCHED_FIFO %d waits behind a writer at %d (try: %d)", algo,
		      reader_prio, writer_prio, atomic_load(&reader_try_rc));
	}
	CHECK(ll_rwlock_unlock(&shared) == 0, "%s: main's unlock", algo);
	pthread_join(w, NULL);
	pthread_join(r, NULL);
	if (blocks)
		CHECK(atomic_load(&reader_saw_writer_done), "%s: the reader at SCHED_FIFO %d got "
		      "in before the writer at %d", algo, reader_prio, writer_prio);
	ll_rwlock_destroy(&shared);
}

int test_realtime(void)
{
	int rc = test_sched_fifo(PRIO_MAIN);
	if (rc) {
		printf("skipped: SCHED_FIFO needs root or RLIMIT_RTPRIO (%s)\n", strerror(rc));
		return TEST_SKIPPED;
	}
	test_pin_to_cpu(test_usable_cpu(0));
	test_watchdog("realtime", 60);
	const char *opts = !strcmp(algo, "pthread") ? writer_first_opts() : NULL;
	scene(opts, PRIO_MAIN + 10, PRIO_MAIN, 1);   /* a writer of higher priority */
	scene(opts, PRIO_MAIN, PRIO_MAIN, 1);        /* of equal priority */
	scene(opts, PRIO_MAIN + 10, PRIO_MAIN - 5, 1);
	/* ll compares the priorities: a reader above the writer's enters, as POSIX says. */
	if (!strcmp(algo, "ll"))
		scene(NULL, PRIO_MAIN, PRIO_MAIN + 10, 0);
	printf("%s: no reader entered past a realtime writer of its priority or above\n", algo);
	return 0;
}
