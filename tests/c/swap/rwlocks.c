/*
 * rwlocks.c: a program's rwlocks (LOCKLAB_SWAP_RWLOCK): exclusion and torn reads
 * under every entry point, and the return values glibc's give.
 */
#include "swap_test.h"

/*
 * A program's rwlocks (static initializers of both kinds, an initialised one
 * and a heap one) under readers and writers that use every entry point: a
 * writer bumps two counters a and b with a pause between, a reader checks
 * a == b; at the end each lock's counters are the writes made on it.
 */
#define RW_LOCKS 4
static pthread_rwlock_t rw_static = PTHREAD_RWLOCK_INITIALIZER;
static pthread_rwlock_t rw_nonrec = PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP;
static pthread_rwlock_t rw_made;
static pthread_rwlock_t *rw_locks[RW_LOCKS];
static volatile long rw_a[RW_LOCKS], rw_b[RW_LOCKS];
static atomic_long rw_torn, rw_writes[RW_LOCKS];
static long rw_rounds;
const struct timespec rw_far = { INT64_MAX, 999999999 };

/* Lock i of the round for reading (write 0) or writing, by variant v of 4. */
static void rw_take(pthread_rwlock_t *l, int write, int v)
{
	int rc;
	switch (v) {
	case 0:
		rc = write ? pthread_rwlock_wrlock(l) : pthread_rwlock_rdlock(l);
		break;
	case 1:
		while ((rc = write ? pthread_rwlock_trywrlock(l) : pthread_rwlock_tryrdlock(l)) == EBUSY)
			sched_yield();
		break;
	case 2:
		rc = write ? pthread_rwlock_timedwrlock(l, &rw_far) : pthread_rwlock_timedrdlock(l, &rw_far);
		break;
	default: {
		clockid_t clk = (v & 4) ? CLOCK_REALTIME : CLOCK_MONOTONIC;
		struct timespec soon = after_ns(clk, 200000000);
		rc = write ? pthread_rwlock_clockwrlock(l, clk, &soon)
			   : pthread_rwlock_clockrdlock(l, clk, &soon);
		while (rc == ETIMEDOUT)   /* a writer may starve for a while: try again */
			rc = write ? pthread_rwlock_clockwrlock(l, clk, &rw_far)
				   : pthread_rwlock_clockrdlock(l, clk, &rw_far);
	}
	}
	CHECK(rc == 0, "%s variant %d: %d", write ? "write" : "read", v, rc);
}

static void *rw_main(void *p)
{
	unsigned seed = (unsigned)(uintptr_t)p * 2654435761u + 1;
	for (long r = 0; r < rw_rounds; r++) {
		seed = seed * 1103515245u + 12345u;
		int i = (int)(seed >> 8) % RW_LOCKS, write = (seed >> 4) % 4 == 0;
		int v = (int)((seed >> 12) % 6);
		pthread_rwlock_t *l = rw_locks[i];
		rw_take(l, write, v < 3 ? v : v == 3 ? 3 : 7);
		if (write) {
			rw_a[i]++;
			for (volatile int k = 0; k < 50; k++)
				;
			rw_b[i]++;
			atomic_fetch_add(&rw_writes[i], 1);
		} else if (rw_a[i] != rw_b[i]) {
			atomic_fetch_add(&rw_torn, 1);
		}
		CHECK(pthread_rwlock_unlock(l) == 0, "unlock");
	}
	return NULL;
}

int rwcount(void)
{
	int threads = arg ? atoi(arg) : 8;
	rw_rounds = test_scaled(20000);
	pthread_rwlockattr_t a;
	pthread_rwlockattr_init(&a);
	pthread_rwlockattr_setkind_np(&a, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	CHECK(pthread_rwlock_init(&rw_made, &a) == 0, "init");
	pthread_rwlockattr_destroy(&a);
	pthread_rwlock_t *heap = malloc(sizeof(*heap));
	CHECK(heap && pthread_rwlock_init(heap, NULL) == 0, "init");
	pthread_rwlock_t *ls[RW_LOCKS] = { &rw_static, &rw_nonrec, &rw_made, heap };
	memcpy(rw_locks, ls, sizeof(ls));
	pthread_t t[64];
	CHECK(threads > 0 && threads <= 64, "1 to 64 threads");
	for (int i = 0; i < threads; i++)
		spawn(rw_main, (void *)(intptr_t)i, &t[i]);
	for (int i = 0; i < threads; i++)
		join(t[i]);
	long writes = 0;
	for (int i = 0; i < RW_LOCKS; i++) {
		long w = atomic_load(&rw_writes[i]);
		CHECK(rw_a[i] == w && rw_b[i] == w, "lock %d: %ld and %ld after %ld writes", i,
		      rw_a[i], rw_b[i], w);
		writes += w;
	}
	CHECK(atomic_load(&rw_torn) == 0, "%ld reads saw a write half done", atomic_load(&rw_torn));
	CHECK(pthread_rwlock_destroy(heap) == 0 && pthread_rwlock_destroy(&rw_made) == 0, "destroy");
	free(heap);
	printf("rwcount: %d threads, %ld writes in %ld rounds each\n", threads, writes, rw_rounds);
	return 0;
}

/* What another thread gets from one call (op) on rw_subject. */
pthread_rwlock_t *rw_subject;
void *rw_other(void *p)
{
	pthread_rwlock_t *l = rw_subject;
	struct timespec past = { -1, 0 };
	struct timespec dl;
	int rc;
	switch ((int)(intptr_t)p) {
	case RW_TRYRD:
		if (!(rc = pthread_rwlock_tryrdlock(l)))
			pthread_rwlock_unlock(l);
		break;
	case RW_TRYWR:
		if (!(rc = pthread_rwlock_trywrlock(l)))
			pthread_rwlock_unlock(l);
		break;
	case RW_TIMEDRD_50MS: {
		dl = after_ns(CLOCK_REALTIME, 50000000);
		int64_t t0 = now_ns(CLOCK_MONOTONIC);
		rc = pthread_rwlock_timedrdlock(l, &dl);
		if (rc == ETIMEDOUT && now_ns(CLOCK_MONOTONIC) - t0 < 40000000)
			rc = -1;   /* gave up early */
		break;
	}
	case RW_CLOCKWR_50MS:
		dl = after_ns(CLOCK_MONOTONIC, 50000000);
		rc = pthread_rwlock_clockwrlock(l, CLOCK_MONOTONIC, &dl);
		break;
	case RW_CLOCKRD_PAST:
		rc = pthread_rwlock_clockrdlock(l, CLOCK_MONOTONIC, &past);
		break;
	case RW_TIMEDWR_PAST:
		rc = pthread_rwlock_timedwrlock(l, &past);
		break;
	default:
		if (!(rc = pthread_rwlock_timedwrlock(l, &rw_far)))
			pthread_rwlock_unlock(l);
	}
	return (void *)(intptr_t)rc;
}

static int rw_from_other(pthread_rwlock_t *l, int op)
{
	pthread_t t;
	rw_subject = l;
	spawn(rw_other, (void *)(intptr_t)op, &t);
	return (int)(intptr_t)join(t);
}

/* The return values a program sees from glibc's rwlocks, whoever serves them. */
int rwerrors(void)
{
	static pthread_rwlock_t l = PTHREAD_RWLOCK_INITIALIZER;
	struct timespec bad_ns = after_ns(CLOCK_REALTIME, 0);
	bad_ns.tv_nsec = 1000000000;
	struct timespec neg_ns = { 1, -1 }, past = { -1, 0 }, zero = { 0, 0 };
	/* A bad deadline is EINVAL even when the lock is free. */
	CHECK(pthread_rwlock_timedrdlock(&l, &bad_ns) == EINVAL, "tv_nsec 1e9");
	CHECK(pthread_rwlock_timedwrlock(&l, &neg_ns) == EINVAL, "tv_nsec -1");
	CHECK(pthread_rwlock_clockrdlock(&l, CLOCK_PROCESS_CPUTIME_ID, &rw_far) == EINVAL,
	      "another clock");
	CHECK(pthread_rwlock_clockwrlock(&l, CLOCK_MONOTONIC, &bad_ns) == EINVAL, "tv_nsec 1e9");
	/* A free lock is taken whatever the deadline. */
	const struct timespec *dls[] = { &past, &zero, &rw_far };
	for (int i = 0; i < 3; i++) {
		CHECK(pthread_rwlock_timedwrlock(&l, dls[i]) == 0 && pthread_rwlock_unlock(&l) == 0,
		      "timedwrlock free, deadline %d", i);
		CHECK(pthread_rwlock_clockrdlock(&l, CLOCK_MONOTONIC, dls[i]) == 0 &&
		      pthread_rwlock_unlock(&l) == 0, "clockrdlock free, deadline %d", i);
		CHECK(pthread_rwlock_clockwrlock(&l, CLOCK_REALTIME, dls[i]) == 0 &&
		      pthread_rwlock_unlock(&l) == 0, "clockwrlock free, deadline %d", i);
	}
	/* Write-held by this thread. */
	CHECK(pthread_rwlock_wrlock(&l) == 0, "wrlock");
	CHECK(pthread_rwlock_rdlock(&l) == EDEADLK, "rdlock by the writer");
	CHECK(pthread_rwlock_wrlock(&l) == EDEADLK, "wrlock by the writer");
	CHECK(pthread_rwlock_timedwrlock(&l, &rw_far) == EDEADLK, "timedwrlock by the writer");
	CHECK(pthread_rwlock_clockrdlock(&l, CLOCK_MONOTONIC, &rw_far) == EDEADLK,
	      "clockrdlock by the writer");
	CHECK(pthread_rwlock_tryrdlock(&l) == EBUSY, "tryrdlock by the writer");
	CHECK(pthread_rwlock_trywrlock(&l) == EBUSY, "trywrlock by the writer");
	CHECK(rw_from_other(&l, RW_TRYRD) == EBUSY, "tryrdlock of a written lock");
	CHECK(rw_from_other(&l, RW_TRYWR) == EBUSY, "trywrlock of a written lock");
	CHECK(rw_from_other(&l, RW_TIMEDRD_50MS) == ETIMEDOUT, "timedrdlock of a written lock");
	CHECK(rw_from_other(&l, RW_CLOCKWR_50MS) == ETIMEDOUT, "clockwrlock of a written lock");
	CHECK(rw_from_other(&l, RW_CLOCKRD_PAST) == ETIMEDOUT, "a past deadline, busy");
	CHECK(rw_from_other(&l, RW_TIMEDWR_PAST) == ETIMEDOUT, "a past deadline, busy");
	CHECK(pthread_rwlock_unlock(&l) == 0, "unlock");
	/* Read-held: readers share it, writers wait. */
	CHECK(pthread_rwlock_rdlock(&l) == 0, "rdlock");
	CHECK(rw_from_other(&l, RW_TRYRD) == 0, "a second reader");
	CHECK(rw_from_other(&l, RW_TRYWR) == EBUSY, "trywrlock of a read lock");
	CHECK(rw_from_other(&l, RW_CLOCKWR_50MS) == ETIMEDOUT, "clockwrlock of a read lock");
	CHECK(pthread_rwlock_unlock(&l) == 0, "unlock");
	/* A writer waiting with the latest deadline gets the lock when it is free. */
	CHECK(pthread_rwlock_rdlock(&l) == 0, "rdlock");
	pthread_t w;
	rw_subject = &l;
	spawn(rw_other, (void *)(intptr_t)RW_TIMEDWR_FAR, &w);
	struct timespec nap = { 0, 20000000 };
	nanosleep(&nap, NULL);
	CHECK(pthread_rwlock_unlock(&l) == 0, "unlock");
	CHECK(join(w) == 0, "the far writer got it");
	/* Destroyed and made again; many made, used and destroyed. */
	CHECK(pthread_rwlock_destroy(&l) == 0, "destroy");
	CHECK(pthread_rwlock_init(&l, NULL) == 0, "init");
	CHECK(pthread_rwlock_wrlock(&l) == 0 && pthread_rwlock_unlock(&l) == 0, "after re-init");
	enum { MANY = 1000 };
	pthread_rwlock_t *many = calloc(MANY, sizeof(*many));
	CHECK(many, "calloc");
	for (int round = 0; round < 3; round++)
		for (int i = 0; i < MANY; i++) {
			CHECK(pthread_rwlock_init(&many[i], NULL) == 0, "init %d", i);
			CHECK(pthread_rwlock_rdlock(&many[i]) == 0 && pthread_rwlock_unlock(&many[i]) == 0,
			      "read %d", i);
			CHECK(pthread_rwlock_wrlock(&many[i]) == 0 && pthread_rwlock_unlock(&many[i]) == 0,
			      "write %d", i);
			CHECK(pthread_rwlock_destroy(&many[i]) == 0, "destroy %d", i);
		}
	free(many);
	return 0;
}

/*
 * LOCKLAB_SWAP_RWLOCK_FOR names one of the program's rwlocks by its symbol,
 * test_swap`rw_site_hot: it alone gets the site's rwlock, chosen at its
 * first use (a static initializer); the others, two initialised in static
 * storage and one on the heap, get LOCKLAB_SWAP_RWLOCK's, or stay glibc's
 * without it.  Readers and writers on all four keep their counters whole,
 * and the child's record (LOCKLAB_SWAP_SITES_JSON) counts the site matched
 * once and the others, without LOCKLAB_SWAP_RWLOCK, not chosen.
 */
static pthread_rwlock_t rw_site_hot = PTHREAD_RWLOCK_INITIALIZER;
static pthread_rwlock_t rw_site_cold[2];

static void rwsites_child(void)
{
	pthread_rwlock_t *heap = malloc(sizeof(*heap));
	CHECK(heap && pthread_rwlock_init(heap, NULL) == 0, "init");
	for (int i = 0; i < 2; i++)
		CHECK(pthread_rwlock_init(&rw_site_cold[i], NULL) == 0, "init");
	pthread_rwlock_t *ls[RW_LOCKS] = { &rw_site_hot, &rw_site_cold[0], &rw_site_cold[1], heap };
	memcpy(rw_locks, ls, sizeof(ls));
	rw_rounds = test_scaled(5000);
	pthread_t t[4];
	for (int i = 0; i < 4; i++)
		spawn(rw_main, (void *)(intptr_t)i, &t[i]);
	for (int i = 0; i < 4; i++)
		join(t[i]);
	for (int i = 0; i < RW_LOCKS; i++) {
		long w = atomic_load(&rw_writes[i]);
		CHECK(rw_a[i] == w && rw_b[i] == w, "lock %d: %ld and %ld after %ld writes", i,
		      rw_a[i], rw_b[i], w);
	}
	CHECK(atomic_load(&rw_torn) == 0, "%ld reads saw a write half done", atomic_load(&rw_torn));
}

int rwsites(void)
{
	const char *path = getenv("LOCKLAB_SWAP_SITES_JSON");
	CHECK(path && *path, "LOCKLAB_SWAP_SITES_JSON unset: the case reads the swapper's record");
	fflush(stdout);
	pid_t pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		rwsites_child();
		exit(0);   /* the swapper's destructor writes the child's record */
	}
	wait_child_ok(pid, "rwsites");
	long matched = swap_record_number(path, pid, "matched");
	long others = swap_record_number(path, pid, "rwlocks_not_chosen");
	long want = getenv("LOCKLAB_SWAP_RWLOCK") ? 0 : RW_LOCKS - 1;
	printf("rwsites: the site matched %ld rwlock, %ld not chosen\n", matched, others);
	CHECK(matched == 1, "the site matched %ld rwlocks, not 1", matched);
	CHECK(others == want, "%ld rwlocks not chosen, not %ld", others, want);
	return 0;
}
