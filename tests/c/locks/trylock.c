/*
 * trylock.c: test_locks trylock ALGO, trylock semantics across threads.
 */
#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "suite.h"

static void *trylock_peer(void *p)
{
	int *results = p;
	wait_step(1);
	results[0] = ll_mutex_trylock(&shared_lock);   /* held by main: EBUSY */
	atomic_store(&step, 2);
	wait_step(3);
	results[1] = ll_mutex_trylock(&shared_lock);   /* released: 0 */
	atomic_store(&step, 4);
	wait_step(5);
	ll_mutex_unlock(&shared_lock);
	atomic_store(&step, 6);
	return NULL;
}

int test_trylock(void)
{
	int results[2] = { -1, -1 };
	pthread_t t;

	init_lock(&shared_lock, algo, NULL);
	CHECK(ll_mutex_trylock(&shared_lock) == 0, "%s: trylock of a free lock failed", algo);
	CHECK(ll_mutex_trylock(&shared_lock) == EBUSY, "%s: trylock of an own held lock succeeded",
	      algo);
	pthread_create(&t, NULL, trylock_peer, results);
	atomic_store(&step, 1);
	wait_step(2);
	ll_mutex_unlock(&shared_lock);
	atomic_store(&step, 3);
	wait_step(4);
	CHECK(ll_mutex_trylock(&shared_lock) == EBUSY, "%s: trylock succeeded on a lock held by "
	      "another thread", algo);
	atomic_store(&step, 5);
	wait_step(6);
	pthread_join(t, NULL);
	CHECK(results[0] == EBUSY, "%s: peer's trylock on a held lock returned %d", algo, results[0]);
	CHECK(results[1] == 0, "%s: peer's trylock on a free lock returned %d", algo, results[1]);
	CHECK(ll_mutex_trylock(&shared_lock) == 0, "%s: trylock after release failed", algo);
	ll_mutex_unlock(&shared_lock);
	ll_mutex_destroy(&shared_lock);
	printf("trylock %s: ok\n", algo);
	return 0;
}
