/*
 * innodb56.c: test_rwlocks innodb56, innodb56-rw's lock_word step by step: x
 * recursion, wait_ex keeps new readers out, a timed-out wait_ex writer gives
 * the reservation back and wakes readers.
 */
#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "suite.h"
#include "locklab/rwlocks/innodb56.h"

#define X_DECR LL_RW_INNODB56_X_LOCK_DECR

static int word_of(ll_rwlock_t *rw)
{
	return atomic_load(&((ll_rw_innodb56_t *)(void *)rw->state)->lock_word);
}

static void wait_word(ll_rwlock_t *rw, int w)
{
	while (word_of(rw) != w)
		sched_yield();
}

static atomic_int ib_reader_in, ib_writer_rc, ib_writer_in;

/* Blocks behind the writer, then holds the lock until readers_go. */
static void *ib_reader(void *p)
{
	(void)p;
	CHECK(ll_rwlock_rdlock(&shared) == 0, "rdlock");
	atomic_store(&ib_reader_in, 1);
	while (!atomic_load(&readers_go))
		sleep_ms(1);
	ll_rwlock_unlock(&shared);
	return NULL;
}

/* A writer waiting at most *(int64_t *)p ns (< 0: without deadline). */
static void *ib_writer(void *p)
{
	int64_t ns = *(int64_t *)p;
	int rc = ns < 0 ? ll_rwlock_wrlock(&shared) : ll_rwlock_timedwrlock_ns(&shared, ns);
	if (rc == 0) {
		atomic_store(&ib_writer_in, 1);
		if (atomic_load(&ib_reader_in))
			atomic_fetch_add(&overlap, 1);
		ll_rwlock_unlock(&shared);
	}
	atomic_store(&ib_writer_rc, rc);
	return NULL;
}

int test_innodb56(void)
{
	struct ll_error err;
	pthread_t r, w;

	algo = "innodb56-rw";
	test_watchdog("innodb56", 60);
	init_rw(&shared, NULL);
	CHECK(ll_rwlock_unlock(&shared) == EPERM, "unlock of a free lock accepted");
	CHECK(word_of(&shared) == X_DECR, "free word %#x", word_of(&shared));
	CHECK(ll_rwlock_rdlock(&shared) == 0 && ll_rwlock_tryrdlock(&shared) == 0 &&
	      word_of(&shared) == X_DECR - 2, "two readers: word %#x", word_of(&shared));
	CHECK(in_other_thread(1) == EBUSY, "a writer beside two readers");
	ll_rwlock_unlock(&shared);
	ll_rwlock_unlock(&shared);

	/* x recursion: 0, -X_LOCK_DECR, then one less per level; readers and others kept out. */
	static const int words[] = { 0, -X_DECR, -X_DECR - 1, -X_DECR - 2 };
	for (int k = 0; k < 4; k++) {
		CHECK((k == 3 ? ll_rwlock_trywrlock(&shared) : ll_rwlock_wrlock(&shared)) == 0 &&
		      word_of(&shared) == words[k], "write level %d: word %d", k + 1, word_of(&shared));
		CHECK(in_other_thread(0) == EBUSY && in_other_thread(1) == EBUSY, "another thread "
		      "in beside the writer at level %d", k + 1);
	}
	CHECK(ll_rwlock_rdlock(&shared) == EDEADLK && ll_rwlock_tryrdlock(&shared) == EBUSY,
	      "the writer's own read not refused");
	for (int k = 3; k >= 0; k--) {
		CHECK(in_other_thread(1) == EBUSY, "a writer in with %d levels held", k + 1);
		CHECK(ll_rwlock_unlock(&shared) == 0 && word_of(&shared) == (k ? words[k - 1] : X_DECR),
		      "unlock of level %d: word %d", k + 1, word_of(&shared));
	}
	CHECK(in_other_thread(1) == 0, "the lock not free after the last write unlock");
	ll_rwlock_destroy(&shared);

	CHECK(ll_rwlock_init(&shared, algo, "x_recursion=0", &err) == 0, "%s", err.msg);
	CHECK(ll_rwlock_wrlock(&shared) == 0 && ll_rwlock_wrlock(&shared) == EDEADLK &&
	      ll_rwlock_trywrlock(&shared) == EDEADLK && word_of(&shared) == 0,
	      "x_recursion=0: the writer's second write lock not refused");
	ll_rwlock_unlock(&shared);
	ll_rwlock_destroy(&shared);

	/*
	 * wait_ex: a writer behind a reader reserves the word (X_LOCK_DECR off);
	 * a reader arriving later waits behind it, and enters after it.
	 */
	int64_t forever = -1, short_ns = 100000000;
	init_rw(&shared, NULL);
	atomic_store(&readers_go, 1);
	atomic_store(&overlap, 0);
	CHECK(ll_rwlock_rdlock(&shared) == 0, "rdlock");
	pthread_create(&w, NULL, ib_writer, &forever);
	wait_word(&shared, -1);
	CHECK(in_other_thread(0) == EBUSY, "a reader in past the wait_ex writer");
	pthread_create(&r, NULL, ib_reader, NULL);
	sleep_ms(30);   /* the reader has spun its rounds and sleeps */
	CHECK(!atomic_load(&ib_reader_in) && !atomic_load(&ib_writer_in), "in beside the reader");
	ll_rwlock_unlock(&shared);
	pthread_join(w, NULL);
	pthread_join(r, NULL);
	CHECK(atomic_load(&ib_writer_rc) == 0 && atomic_load(&ib_writer_in) &&
	      atomic_load(&ib_reader_in) && !atomic_load(&overlap) &&
	      word_of(&shared) == X_DECR, "wait_ex: writer %d, reader %d, overlap %d, word %#x",
	      atomic_load(&ib_writer_rc), atomic_load(&ib_reader_in), atomic_load(&overlap),
	      word_of(&shared));

	/* A timed wait_ex writer gives the word back at its deadline; the reader behind gets in. */
	atomic_store(&ib_reader_in, 0);
	atomic_store(&ib_writer_in, 0);
	atomic_store(&readers_go, 0);
	CHECK(ll_rwlock_rdlock(&shared) == 0, "rdlock");
	uint64_t t0 = ll_now_ns();
	pthread_create(&w, NULL, ib_writer, &short_ns);
	wait_word(&shared, -1);
	pthread_create(&r, NULL, ib_reader, NULL);
	pthread_join(w, NULL);
	double ms = (double)(ll_now_ns() - t0) / 1e6;
	CHECK(atomic_load(&ib_writer_rc) == ETIMEDOUT && ms >= 100, "timed wait_ex writer "
	      "returned %d after %.1f ms", atomic_load(&ib_writer_rc), ms);
	while (!atomic_load(&ib_reader_in))
		sleep_ms(1);   /* woken by the writer's give-back: the first reader still holds it */
	CHECK(word_of(&shared) == X_DECR - 2, "after the give-back: word %#x", word_of(&shared));
	atomic_store(&readers_go, 1);
	pthread_join(r, NULL);
	ll_rwlock_unlock(&shared);
	CHECK(word_of(&shared) == X_DECR && in_other_thread(1) == 0, "not free at the end");
	ll_rwlock_destroy(&shared);

	/* Knobs: innodb56's and x_recursion, bounds refused. */
	CHECK(ll_rwlock_init(&shared, algo, "x_recursion=2", &err) == EINVAL, "x_recursion=2");
	CHECK(ll_rwlock_init(&shared, algo, "sync_array_size=0", &err) == EINVAL &&
	      strstr(err.msg, "sync_array_size"), "%s", err.msg);
	CHECK(ll_rwlock_init(&shared, algo, "sync_spin_loops=0,spin_wait_delay=0,"
			     "pause_multiplier=1,sync_array_size=4,spin=yield", &err) == 0, "%s",
	      err.msg);
	ll_rw_innodb56_t *l = (ll_rw_innodb56_t *)(void *)shared.state;
	CHECK(l->s.spin_loops == 0 && l->s.sync_arrays == 4 && l->s.spin == LL_SPIN_YIELD &&
	      l->x_recursion == 1, "knobs did not reach the lock");
	ll_rwlock_destroy(&shared);
	printf("innodb56 innodb56-rw: recursion levels, wait_ex and its timed give-back as "
	       "drawn\n");
	return 0;
}
