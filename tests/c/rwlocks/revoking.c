/*
 * revoking.c: the threads the revocation cases (bravo's and ll's) share:
 * readers that hold `shared`, a writer that revokes their bias, and a try
 * from another thread.
 */
#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "suite.h"

atomic_int readers_in, readers_go, writer_done, overlap;

/* Holds `shared` for reading until readers_go passes its number. */
void *table_reader(void *p)
{
	int id = (int)(intptr_t)p;
	CHECK(ll_rwlock_rdlock(&shared) == 0, "rdlock");
	atomic_fetch_add(&readers_in, 1);
	while (atomic_load(&readers_go) <= id)
		sleep_ms(1);
	if (atomic_load(&writer_done))
		atomic_fetch_add(&overlap, 1);
	atomic_fetch_sub(&readers_in, 1);
	ll_rwlock_unlock(&shared);
	return NULL;
}

void *revoking_writer(void *p)
{
	(void)p;
	CHECK(ll_rwlock_wrlock(&shared) == 0, "wrlock");
	if (atomic_load(&readers_in))
		atomic_fetch_add(&overlap, 1);
	atomic_store(&writer_done, 1);
	ll_rwlock_unlock(&shared);
	return NULL;
}

/* One try of `shared` in a new thread: the read side (write 0) or the write side. */
struct try_once {
	int write, rc;
};

static void *try_once_main(void *p)
{
	struct try_once *t = p;
	t->rc = t->write ? ll_rwlock_trywrlock(&shared) : ll_rwlock_tryrdlock(&shared);
	if (t->rc == 0)
		ll_rwlock_unlock(&shared);
	return NULL;
}

int in_other_thread(int write)
{
	pthread_t t;
	struct try_once o = { .write = write, .rc = -1 };
	pthread_create(&t, NULL, try_once_main, &o);
	pthread_join(t, NULL);
	return o.rc;
}
