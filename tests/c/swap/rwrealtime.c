/*
 * rwrealtime.c: POSIX's rule for rwlocks under SCHED_FIFO, through the
 * swapper (LOCKLAB_SWAP_RWLOCK): main holds a pthread_rwlock_t for reading,
 * a writer of higher priority waits, and a reader of main's priority must
 * not get in (tryrdlock: EBUSY) until the writer has been.  Every thread on
 * one CPU, so that who runs when follows from the priorities alone.  Exit
 * 77 (skipped) without root or RLIMIT_RTPRIO.
 */
#include <errno.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "harness.h"

enum { PRIO_MAIN = 10, PRIO_WRITER = 20 };

static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static atomic_int writer_waiting, writer_through, reader_rc = -1, reader_after_writer;

static void *writer_main(void *p)
{
	(void)p;
	atomic_store(&writer_waiting, 1);
	CHECK(pthread_rwlock_wrlock(&rw) == 0, "wrlock");
	atomic_store(&writer_through, 1);
	CHECK(pthread_rwlock_unlock(&rw) == 0, "writer's unlock");
	return NULL;
}

static void *reader_main(void *p)
{
	(void)p;
	int rc = pthread_rwlock_tryrdlock(&rw);
	if (rc == 0)
		pthread_rwlock_unlock(&rw);
	atomic_store(&reader_rc, rc);
	CHECK(pthread_rwlock_rdlock(&rw) == 0, "rdlock");
	atomic_store(&reader_after_writer, atomic_load(&writer_through));
	CHECK(pthread_rwlock_unlock(&rw) == 0, "reader's unlock");
	return NULL;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { .tv_sec = 0, .tv_nsec = ms * 1000000 };
	while (nanosleep(&ts, &ts))
		;
}

int main(void)
{
	int rc = test_sched_fifo(PRIO_MAIN);
	if (rc) {
		printf("skipped: SCHED_FIFO needs root or RLIMIT_RTPRIO (%s)\n", strerror(rc));
		return TEST_SKIPPED;
	}
	test_pin_to_cpu(test_usable_cpu(0));
	test_watchdog("rwrealtime", 60);
	CHECK(pthread_rwlock_rdlock(&rw) == 0, "main's rdlock");
	pthread_t w = test_start_fifo(writer_main, NULL, PRIO_WRITER);
	while (!atomic_load(&writer_waiting))
		sleep_ms(1);
	sleep_ms(50);
	pthread_t r = test_start_fifo(reader_main, NULL, PRIO_MAIN);
	sleep_ms(100);
	CHECK(atomic_load(&reader_rc) == EBUSY, "a reader at SCHED_FIFO %d: tryrdlock %d while a "
	      "writer at %d waits (EBUSY expected)", PRIO_MAIN, atomic_load(&reader_rc), PRIO_WRITER);
	CHECK(pthread_rwlock_unlock(&rw) == 0, "main's unlock");
	pthread_join(w, NULL);
	pthread_join(r, NULL);
	CHECK(atomic_load(&reader_after_writer), "the reader got in before the writer");
	printf("no reader entered past the waiting realtime writer\n");
	return 0;
}
