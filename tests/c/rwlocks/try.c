/*
 * try.c: test_rwlocks try ALGO, tryrdlock / trywrlock semantics across threads.
 */
#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "suite.h"

/* The peer's try results, step by step: see test_try. */
static void *try_peer(void *p)
{
	int *res = p;
	wait_step(1);                          /* main holds it for writing */
	res[0] = ll_rwlock_tryrdlock(&shared);
	res[1] = ll_rwlock_trywrlock(&shared);
	atomic_store(&step, 2);
	wait_step(3);                          /* main holds it for reading */
	res[2] = ll_rwlock_tryrdlock(&shared);
	if (res[2] == 0)
		ll_rwlock_unlock(&shared);
	res[3] = ll_rwlock_trywrlock(&shared);
	atomic_store(&step, 4);
	wait_step(5);                          /* free */
	res[4] = ll_rwlock_trywrlock(&shared);
	atomic_store(&step, 6);
	wait_step(7);
	ll_rwlock_unlock(&shared);
	atomic_store(&step, 8);
	return NULL;
}

int test_try(void)
{
	int res[5] = { -1, -1, -1, -1, -1 };
	pthread_t t;

	init_rw(&shared, NULL);
	CHECK(ll_rwlock_trywrlock(&shared) == 0, "%s: trywrlock of a free lock failed", algo);
	pthread_create(&t, NULL, try_peer, res);
	atomic_store(&step, 1);
	wait_step(2);
	CHECK(ll_rwlock_unlock(&shared) == 0, "%s: write unlock", algo);
	CHECK(ll_rwlock_tryrdlock(&shared) == 0, "%s: tryrdlock of a free lock failed", algo);
	/* A second read lock by the same thread (POSIX allows holding it n times). */
	CHECK(ll_rwlock_tryrdlock(&shared) == 0, "%s: recursive tryrdlock failed", algo);
	CHECK(ll_rwlock_unlock(&shared) == 0, "%s: inner read unlock", algo);
	atomic_store(&step, 3);
	wait_step(4);
	CHECK(ll_rwlock_unlock(&shared) == 0, "%s: read unlock", algo);
	atomic_store(&step, 5);
	wait_step(6);                          /* the peer holds it for writing */
	CHECK(ll_rwlock_tryrdlock(&shared) == EBUSY, "%s: tryrdlock of a write-held lock "
	      "succeeded", algo);
	CHECK(ll_rwlock_trywrlock(&shared) == EBUSY, "%s: trywrlock of a write-held lock "
	      "succeeded", algo);
	atomic_store(&step, 7);
	wait_step(8);
	pthread_join(t, NULL);
	CHECK(res[0] == EBUSY, "%s: tryrdlock of a write-held lock returned %d", algo, res[0]);
	CHECK(res[1] == EBUSY, "%s: trywrlock of a write-held lock returned %d", algo, res[1]);
	CHECK(res[2] == 0, "%s: tryrdlock of a read-held lock returned %d", algo, res[2]);
	CHECK(res[3] == EBUSY, "%s: trywrlock of a read-held lock returned %d", algo, res[3]);
	CHECK(res[4] == 0, "%s: trywrlock of a free lock returned %d", algo, res[4]);
	CHECK(ll_rwlock_trywrlock(&shared) == 0, "%s: trywrlock after release failed", algo);
	CHECK(ll_rwlock_unlock(&shared) == 0, "%s: unlock", algo);
	ll_rwlock_destroy(&shared);
	printf("try %s: ok\n", algo);
	return 0;
}
