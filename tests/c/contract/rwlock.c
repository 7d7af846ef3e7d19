/*
 * rwlock.c: test_api_contract rwlock, for every rwlock of the registry: unlock
 * of an rwlock nobody holds is EPERM and leaves it usable, destroy (the
 * generic one and the ops table's) is harmless twice and on a zeroed lock,
 * a destroyed rwlock (or one whose init failed) answers EINVAL to every call.
 */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "suite.h"
#include "locklab/rwlock.h"

static int wr_2s(void *rw)
{
	int rc = ll_rwlock_timedwrlock_ns((ll_rwlock_t *)rw, 2000000000);
	return rc ? rc : ll_rwlock_unlock((ll_rwlock_t *)rw);
}

static int rd_2s(void *rw)
{
	int rc = ll_rwlock_timedrdlock_ns((ll_rwlock_t *)rw, 2000000000);
	return rc ? rc : ll_rwlock_unlock((ll_rwlock_t *)rw);
}

static int tryrd_other(void *rw)
{
	int rc = ll_rwlock_tryrdlock((ll_rwlock_t *)rw);
	return rc ? rc : ll_rwlock_unlock((ll_rwlock_t *)rw);
}

static int trywr_other(void *rw)
{
	int rc = ll_rwlock_trywrlock((ll_rwlock_t *)rw);
	return rc ? rc : ll_rwlock_unlock((ll_rwlock_t *)rw);
}

/* rw is free and works: another thread writes and reads it, and a writer still excludes. */
static void check_usable(ll_rwlock_t *rw, const char *name, const char *after)
{
	CHECK(on_other_thread(wr_2s, rw) == 0, "%s: another thread cannot write the free "
	      "rwlock after %s", name, after);
	CHECK(on_other_thread(rd_2s, rw) == 0, "%s: another thread cannot read the free "
	      "rwlock after %s", name, after);
	CHECK(ll_rwlock_wrlock(rw) == 0, "%s: wrlock after %s", name, after);
	CHECK(on_other_thread(tryrd_other, rw) == EBUSY, "%s: a written rwlock is not busy to a "
	      "reader after %s", name, after);
	CHECK(on_other_thread(trywr_other, rw) == EBUSY, "%s: a written rwlock is not busy to a "
	      "writer after %s", name, after);
	CHECK(ll_rwlock_unlock(rw) == 0, "%s: unlock of the write after %s", name, after);
	CHECK(ll_rwlock_rdlock(rw) == 0, "%s: rdlock after %s", name, after);
	CHECK(on_other_thread(trywr_other, rw) == EBUSY, "%s: a read rwlock is not busy to a "
	      "writer after %s", name, after);
	CHECK(ll_rwlock_unlock(rw) == 0, "%s: unlock of the read after %s", name, after);
	CHECK(on_other_thread(wr_2s, rw) == 0, "%s: another thread cannot write the rwlock "
	      "released after %s", name, after);
}

static void unlock_unheld(const struct ll_rwlock_ops *ops)
{
	const char *name = ops->name;
	ll_rwlock_t rw;
	struct ll_error err;

	CHECK(ll_rwlock_init_opts(&rw, ops, NULL, &err) == 0, "%s: %s", name, err.msg);
	CHECK(ll_rwlock_unlock(&rw) == EPERM, "%s: unlock of an rwlock never taken", name);
	check_usable(&rw, name, "an unlock of an rwlock never taken");
	CHECK(ll_rwlock_rdlock(&rw) == 0 && ll_rwlock_unlock(&rw) == 0, "%s: read", name);
	CHECK(ll_rwlock_unlock(&rw) == EPERM, "%s: a second unlock of a read", name);
	check_usable(&rw, name, "a second unlock of a read");
	CHECK(ll_rwlock_wrlock(&rw) == 0 && ll_rwlock_unlock(&rw) == 0, "%s: write", name);
	CHECK(ll_rwlock_unlock(&rw) == EPERM, "%s: a second unlock of a write", name);
	check_usable(&rw, name, "a second unlock of a write");
	ll_rwlock_destroy(&rw);
}

static void check_destroyed(ll_rwlock_t *rw, const char *name, const char *how)
{
	struct timespec past = { 0, 0 };
	CHECK(ll_rwlock_rdlock(rw) == EINVAL, "%s: rdlock of an rwlock %s", name, how);
	CHECK(ll_rwlock_tryrdlock(rw) == EINVAL, "%s: tryrdlock of an rwlock %s", name, how);
	CHECK(ll_rwlock_timedrdlock(rw, &past) == EINVAL, "%s: timedrdlock of an rwlock %s",
	      name, how);
	CHECK(ll_rwlock_wrlock(rw) == EINVAL, "%s: wrlock of an rwlock %s", name, how);
	CHECK(ll_rwlock_trywrlock(rw) == EINVAL, "%s: trywrlock of an rwlock %s", name, how);
	CHECK(ll_rwlock_timedwrlock(rw, &past) == EINVAL, "%s: timedwrlock of an rwlock %s",
	      name, how);
	CHECK(ll_rwlock_clockrdlock(rw, CLOCK_REALTIME, &past) == EINVAL,
	      "%s: clockrdlock of an rwlock %s", name, how);
	CHECK(ll_rwlock_clockwrlock(rw, CLOCK_MONOTONIC, &past) == EINVAL,
	      "%s: clockwrlock of an rwlock %s", name, how);
	CHECK(ll_rwlock_timedrdlock_ns(rw, 1000) == EINVAL, "%s: timedrdlock_ns of an rwlock %s",
	      name, how);
	CHECK(ll_rwlock_timedwrlock_ns(rw, 1000) == EINVAL, "%s: timedwrlock_ns of an rwlock %s",
	      name, how);
	CHECK(ll_rwlock_unlock(rw) == EINVAL, "%s: unlock of an rwlock %s", name, how);
	CHECK(!strcmp(ll_rwlock_algo(rw), "destroyed"), "%s: an rwlock %s is '%s'", name, how,
	      ll_rwlock_algo(rw));
	ll_rwlock_destroy(rw);
	ll_rwlock_destroy(rw);
}

static void destroy(const struct ll_rwlock_ops *ops)
{
	const char *name = ops->name;
	ll_rwlock_t rw;
	struct ll_error err;

	memset(&rw, 0, sizeof(rw));
	ll_rwlock_destroy(&rw);
	ll_rwlock_destroy(&rw);
	/* The table's own destroy, as the swapper calls it on its slots: twice, and zeroed. */
	int64_t config[LL_CONFIG_MAX];
	ll_rwlock_config_defaults(ops, config);
	CHECK(ops->init(rw.state, config) == 0, "%s: ops->init", name);
	ops->destroy(rw.state);
	ops->destroy(rw.state);
	memset(rw.state, 0, sizeof(rw.state));
	ops->destroy(rw.state);

	CHECK(ll_rwlock_init_opts(&rw, ops, NULL, &err) == 0, "%s: %s", name, err.msg);
	CHECK(ll_rwlock_timedrdlock(&rw, NULL) == EINVAL, "%s: timedrdlock without a deadline",
	      name);
	CHECK(ll_rwlock_timedwrlock(&rw, NULL) == EINVAL, "%s: timedwrlock without a deadline",
	      name);
	CHECK(ll_rwlock_clockrdlock(&rw, CLOCK_MONOTONIC, NULL) == EINVAL,
	      "%s: clockrdlock without a deadline", name);
	CHECK(ll_rwlock_clockwrlock(&rw, CLOCK_REALTIME, NULL) == EINVAL,
	      "%s: clockwrlock without a deadline", name);
	CHECK(ll_rwlock_rdlock(&rw) == 0 && ll_rwlock_unlock(&rw) == 0, "%s: read", name);
	ll_rwlock_destroy(&rw);
	check_destroyed(&rw, name, "destroyed");

	CHECK(ll_rwlock_init_opts(&rw, ops, NULL, NULL) == 0, "%s: init after destroy", name);
	check_usable(&rw, name, "init after destroy");
	ll_rwlock_destroy(&rw);

	CHECK(ll_rwlock_init_opts(&rw, ops, "no_such_knob=1", NULL) == EINVAL,
	      "%s: a bad option accepted", name);
	check_destroyed(&rw, name, "whose init failed");
}

int test_rwlock(void)
{
	ll_rwlock_t rw;
	CHECK(ll_rwlock_init(&rw, "no-such-rwlock", NULL, NULL) == EINVAL,
	      "unknown rwlock accepted");
	check_destroyed(&rw, "no-such-rwlock", "whose init failed");

	for (size_t i = 0; i < ll_rwlock_algo_count(); i++) {
		const struct ll_rwlock_ops *ops = ll_rwlock_algo_at(i);
		unlock_unheld(ops);
		destroy(ops);
		printf("%s: as the contract says\n", ops->name);
	}
	return 0;
}
