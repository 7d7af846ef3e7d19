/*
 * ll.c: test_rwlocks ll, ll-poll, ll-table, the `ll` rwlock's own rules: readers
 * pass a writer that revokes the bias, poll only behind one that revoked it,
 * and its table of visible readers grows and keeps writers out.
 */
#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "suite.h"
#include "locklab/rwlocks/ll.h"

/* ---- ll: readers pass a writer that revokes the bias ---- */

/* Until the ll lock `shared`'s word has `bit` set (a writer's phase), at most 10 s. */
static void wait_ll_bit(unsigned bit, const char *what)
{
	const ll_rw_ll_t *l = (const ll_rw_ll_t *)(const void *)shared.state;
	for (int i = 0; i < 10000 && !(atomic_load(&l->word) & bit); i++)
		sleep_ms(1);
	CHECK(atomic_load(&l->word) & bit, "the writer never reached %s", what);
}

/*
 * rwlocks/ll.h's bound: a writer blocks readers (P) only once the fast readers
 * have left; while it waits for them, slow readers still enter, and the
 * writer then waits for those, and for nothing that comes after P.
 */
int test_ll(void)
{
	algo = "ll";
	init_rw(&shared, NULL);
	pthread_t reader, writer;
	pthread_create(&reader, NULL, table_reader, (void *)(intptr_t)0);   /* bias on: fast */
	while (atomic_load(&readers_in) < 1)
		sleep_ms(1);
	pthread_create(&writer, NULL, revoking_writer, NULL);
	wait_ll_bit(LL_RW_LL_R, "its revocation");
	CHECK(ll_rwlock_tryrdlock(&shared) == 0,
	      "a reader was refused while the writer still waited for a fast reader");
	atomic_fetch_add(&readers_in, 1);
	atomic_store(&readers_go, 1);          /* the fast reader leaves */
	wait_ll_bit(LL_RW_LL_P, "P");
	sleep_ms(20);
	CHECK(!atomic_load(&writer_done), "the writer entered beside a slow reader");
	CHECK(in_other_thread(0) == EBUSY, "a reader entered past the writer's P");
	atomic_fetch_sub(&readers_in, 1);
	ll_rwlock_unlock(&shared);
	pthread_join(writer, NULL);
	pthread_join(reader, NULL);
	CHECK(atomic_load(&writer_done) && !atomic_load(&overlap), "writer %d, overlaps %d",
	      atomic_load(&writer_done), atomic_load(&overlap));
	ll_rwlock_destroy(&shared);
	printf("ll: a reader entered while the writer revoked, none after its P\n");
	return 0;
}

/* ---- ll: readers poll only behind a writer that revoked the bias ---- */

static atomic_long poll_reader_cpu_ns = -1;

static long thread_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

/*
 * The calling thread's sched_yield calls.  This definition interposes on
 * libc's for the library too (the executable's symbol comes first).
 */
static _Thread_local int yields_here;
static atomic_int poll_reader_yields = -1;

int sched_yield(void)
{
	yields_here++;
	return (int)syscall(SYS_sched_yield);
}

/* A thread that has read an ll rwlock (so it counts as a reading thread) and waits. */
static atomic_int idle_readers_in, idle_readers_go;
static ll_rwlock_t idle_lock;

static void *idle_reader(void *p)
{
	(void)p;
	CHECK(ll_rwlock_rdlock(&idle_lock) == 0 && ll_rwlock_unlock(&idle_lock) == 0, "idle read");
	atomic_fetch_add(&idle_readers_in, 1);
	while (!atomic_load(&idle_readers_go))
		sleep_ms(1);
	return NULL;
}

static void *cpu_timed_reader(void *p)
{
	(void)p;
	long t0 = thread_cpu_ns();
	int y0 = yields_here;
	CHECK(ll_rwlock_rdlock(&shared) == 0, "rdlock");
	atomic_store(&poll_reader_cpu_ns, thread_cpu_ns() - t0);
	atomic_store(&poll_reader_yields, yields_here - y0);
	CHECK(ll_rwlock_unlock(&shared) == 0, "unlock");
	return NULL;
}

/* With the write lock held: a reader blocks on it, counts itself in rwaiting, and is let in. */
static void block_one_reader(const ll_rw_ll_t *l)
{
	pthread_t reader;
	pthread_create(&reader, NULL, cpu_timed_reader, NULL);
	for (int i = 0; i < 10000 && atomic_load(&l->rwaiting) == 0; i++)
		sleep_ms(1);
	CHECK(atomic_load(&l->rwaiting) == 1, "the reader never counted itself as blocked");
	CHECK(ll_rwlock_unlock(&shared) == 0, "unlock");
	pthread_join(reader, NULL);
}

/*
 * `revoked` follows the writer that set P: 1 after it revoked the bias, 0
 * when it found the bias off.  Behind the latter, a blocked reader does not
 * poll spin_ns (here 100 ms): it gives its CPU away once (one sched_yield)
 * and then sleeps, so its thread's CPU time, which preemption does not
 * inflate, stays far below the poll.
 */
int test_ll_poll(void)
{
	algo = "ll";
	init_rw(&shared, "spin_ns=100000000");
	init_rw(&idle_lock, NULL);
	const ll_rw_ll_t *l = (const ll_rw_ll_t *)(const void *)shared.state;
	CHECK(atomic_load(&l->word) & LL_RW_LL_B, "a new lock has the bias on");
	CHECK(ll_rwlock_wrlock(&shared) == 0 && atomic_load(&l->revoked) == 1,
	      "a writer that revoked the bias did not say so");
	CHECK(ll_rwlock_unlock(&shared) == 0, "unlock");
	/* No reader since: the bias stays off and the next writer takes the fast path. */
	CHECK(ll_rwlock_wrlock(&shared) == 0 && atomic_load(&l->revoked) == 0 &&
	      !(atomic_load(&l->word) & LL_RW_LL_B), "a writer that found the bias off");
	block_one_reader(l);
	long cpu = atomic_load(&poll_reader_cpu_ns);
	CHECK(cpu >= 0 && cpu < 50000000L, "the reader spent %.1f ms of CPU behind a writer that "
	      "found the bias off (polled it)", (double)cpu / 1e6);
	int yields = atomic_load(&poll_reader_yields);
	CHECK(yields == 1, "the reader yielded %d times before it slept (once, with a CPU per "
	      "reading thread)", yields);

	/* More reading threads than CPUs: the blocked reader sleeps without the yield. */
	cpu_set_t can;
	CHECK(sched_getaffinity(0, sizeof(can), &can) == 0, "sched_getaffinity");
	int extra = CPU_COUNT(&can);
	pthread_t idle[extra];
	atomic_store(&idle_readers_go, 0);
	atomic_store(&idle_readers_in, 0);
	for (int i = 0; i < extra; i++)
		pthread_create(&idle[i], NULL, idle_reader, NULL);
	while (atomic_load(&idle_readers_in) < extra)
		sleep_ms(1);
	/* The first write revokes a bias the reader may have turned back on; the second finds it off. */
	CHECK(ll_rwlock_wrlock(&shared) == 0 && ll_rwlock_unlock(&shared) == 0, "wrlock, unlock");
	CHECK(ll_rwlock_wrlock(&shared) == 0 && atomic_load(&l->revoked) == 0, "wrlock, bias off");
	atomic_store(&poll_reader_yields, -1);
	block_one_reader(l);
	atomic_store(&idle_readers_go, 1);
	for (int i = 0; i < extra; i++)
		pthread_join(idle[i], NULL);
	int crowded = atomic_load(&poll_reader_yields);
	CHECK(crowded == 0, "with %d reading threads on %d CPUs the blocked reader yielded %d times",
	      extra + 1, extra, crowded);
	ll_rwlock_destroy(&shared);
	printf("ll: revoked follows the writer; behind one that found the bias off a reader "
	       "yielded once and slept (%.3f ms of CPU); with %d reading threads on %d CPUs it "
	       "slept without yielding\n", (double)cpu / 1e6, extra + 1, extra);
	return 0;
}

/* ---- ll: the table of visible readers, first one line of 8 slots per CPU ---- */

#define CROWD_THREADS 6
#define CROWD_LOCKS 8                  /* each thread's: a thread holds at most 8 in slots */
static ll_rwlock_t crowd[CROWD_THREADS][CROWD_LOCKS];
static atomic_int crowd_in, crowd_go;
static int crowd_cpu, other_cpu;

static void *crowd_reader(void *p)
{
	ll_rwlock_t *mine = crowd[(intptr_t)p];
	test_pin_to_cpu(crowd_cpu);
	for (int i = 0; i < CROWD_LOCKS; i++)
		CHECK(ll_rwlock_rdlock(&mine[i]) == 0, "rdlock %d", i);
	atomic_fetch_add(&crowd_in, 1);
	while (!atomic_load(&crowd_go))
		sleep_ms(1);
	for (int i = 0; i < CROWD_LOCKS; i++)
		CHECK(ll_rwlock_unlock(&mine[i]) == 0, "unlock %d", i);
	return NULL;
}

/* Readers counted in an ll lock's word: its slow holds. */
static unsigned slow_readers(ll_rwlock_t *rw)
{
	const ll_rw_ll_t *l = (const ll_rw_ll_t *)(const void *)rw->state;
	return atomic_load(&l->word) & LL_RW_LL_READERS;
}

static void *migrating_reader(void *p)
{
	(void)p;
	test_pin_to_cpu(crowd_cpu);
	CHECK(ll_rwlock_rdlock(&shared) == 0 && slow_readers(&shared) == 0,
	      "the first read was not a fast one");
	test_pin_to_cpu(other_cpu);
	CHECK(ll_rwlock_unlock(&shared) == 0, "unlock on another CPU");
	return NULL;
}

int test_ll_table(void)
{
	algo = "ll";
	crowd_cpu = test_usable_cpu(0);
	other_cpu = test_usable_cpu(1);
	if (other_cpu < 0)
		other_cpu = crowd_cpu;
	for (int t = 0; t < CROWD_THREADS; t++)
		for (int i = 0; i < CROWD_LOCKS; i++)
			init_rw(&crowd[t][i], NULL);
	pthread_t th[CROWD_THREADS];
	for (int t = 0; t < CROWD_THREADS; t++) {
		/* One after the other: the first fills the CPU's line, the rest grow the table. */
		pthread_create(&th[t], NULL, crowd_reader, (void *)(intptr_t)t);
		while (atomic_load(&crowd_in) < t + 1)
			sleep_ms(1);
	}
	int slow = 0;
	for (int t = 0; t < CROWD_THREADS; t++)
		for (int i = 0; i < CROWD_LOCKS; i++) {
			slow += slow_readers(&crowd[t][i]) != 0;
			CHECK(ll_rwlock_trywrlock(&crowd[t][i]) == EBUSY,
			      "a writer got lock %d of reader %d while it was read-held", i, t);
		}
	int holds = CROWD_THREADS * CROWD_LOCKS;
	CHECK(slow == 0, "%d of %d holds on one CPU went through the word: the table did not "
	      "grow to take them", slow, holds);
	atomic_store(&crowd_go, 1);
	for (int t = 0; t < CROWD_THREADS; t++)
		pthread_join(th[t], NULL);
	for (int t = 0; t < CROWD_THREADS; t++)
		for (int i = 0; i < CROWD_LOCKS; i++) {
			CHECK(ll_rwlock_trywrlock(&crowd[t][i]) == 0,
			      "lock %d of reader %d stayed held after its unlock", i, t);
			ll_rwlock_unlock(&crowd[t][i]);
			ll_rwlock_destroy(&crowd[t][i]);
		}

	init_rw(&shared, NULL);
	pthread_t m;
	pthread_create(&m, NULL, migrating_reader, NULL);
	pthread_join(m, NULL);
	CHECK(ll_rwlock_trywrlock(&shared) == 0,
	      "a read unlocked on another CPU than it was taken on left the lock held");
	ll_rwlock_unlock(&shared);
	ll_rwlock_destroy(&shared);
	printf("ll: %d holds on CPU %d, all in the table, every one kept writers out; a read "
	       "moved from CPU %d to %d let go\n", holds, crowd_cpu, crowd_cpu, other_cpu);
	return 0;
}
