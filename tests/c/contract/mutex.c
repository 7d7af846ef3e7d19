/*
 * mutex.c: test_api_contract mutex, for every algorithm of the registry: an
 * unlock of a lock nobody holds leaves it free and usable, destroy (the
 * generic one and the ops table's) is harmless twice and on a zeroed lock,
 * a destroyed lock (or one whose init failed) answers as locklab.h says.
 */
#include <errno.h>
#include <signal.h>
#include <string.h>

#include "suite.h"
#include "locklab/locklab.h"

static int timedlock_2s(void *m)
{
	int rc = ll_mutex_timedlock_ns((ll_mutex_t *)m, 2000000000);
	if (rc == 0)
		ll_mutex_unlock((ll_mutex_t *)m);
	return rc;
}

static int trylock_other(void *m)
{
	int rc = ll_mutex_trylock((ll_mutex_t *)m);
	if (rc == 0)
		ll_mutex_unlock((ll_mutex_t *)m);
	return rc;
}

static int timedlock_20ms(void *m)
{
	int rc = ll_mutex_timedlock_ns((ll_mutex_t *)m, 20000000);
	if (rc == 0)
		ll_mutex_unlock((ll_mutex_t *)m);
	return rc;
}

/* m is free and works: another thread takes it, this one too, and it still excludes. */
static void check_usable(ll_mutex_t *m, const char *name, const char *after)
{
	CHECK(on_other_thread(timedlock_2s, m) == 0, "%s: another thread cannot take the free "
	      "lock after %s", name, after);
	CHECK(ll_mutex_trylock(m) == 0, "%s: trylock of the free lock after %s", name, after);
	ll_mutex_unlock(m);
	ll_mutex_lock(m);
	CHECK(on_other_thread(trylock_other, m) == EBUSY, "%s: a held lock is not busy to another "
	      "thread after %s", name, after);
	CHECK(on_other_thread(timedlock_20ms, m) == ETIMEDOUT, "%s: a held lock does not time out "
	      "another thread after %s", name, after);
	ll_mutex_unlock(m);
	CHECK(on_other_thread(timedlock_2s, m) == 0, "%s: another thread cannot take the lock "
	      "released after %s", name, after);
}

/* The unlocks the contract covers: of a lock never taken, twice, three times; monitored too. */
static void unlock_unheld(const struct ll_lock_ops *ops, int monitored)
{
	ll_mutex_t m;
	struct ll_error err;
	const char *name = ops->name;

	CHECK(ll_mutex_init_opts(&m, ops, NULL, &err) == 0, "%s: %s", name, err.msg);
	if (monitored)
		CHECK(ll_mutex_monitor(&m, 1) == 0, "%s: monitor", name);
	ll_mutex_unlock(&m);
	check_usable(&m, name, monitored ? "a monitored unlock of a lock never taken"
					 : "an unlock of a lock never taken");
	ll_mutex_lock(&m);
	ll_mutex_unlock(&m);
	ll_mutex_unlock(&m);
	check_usable(&m, name, "a double unlock");
	ll_mutex_lock(&m);
	ll_mutex_unlock(&m);
	ll_mutex_unlock(&m);
	ll_mutex_unlock(&m);
	check_usable(&m, name, "a triple unlock");
	ll_mutex_destroy(&m);
}

static void lock_destroyed(void *p)
{
	ll_mutex_lock((ll_mutex_t *)p);
}

static void check_destroyed(ll_mutex_t *m, const char *name, const char *how)
{
	struct ll_mutex_stats st;
	struct timespec past = { 0, 0 };
	CHECK(ll_mutex_trylock(m) == EINVAL, "%s: trylock of a lock %s", name, how);
	CHECK(ll_mutex_timedlock(m, &past) == EINVAL, "%s: timedlock of a lock %s", name, how);
	CHECK(ll_mutex_timedlock_ns(m, 1000) == EINVAL, "%s: timedlock_ns of a lock %s", name, how);
	ll_mutex_unlock(m);
	CHECK(!strcmp(ll_mutex_algo(m), "destroyed"), "%s: a lock %s is '%s'", name, how,
	      ll_mutex_algo(m));
	CHECK(ll_mutex_stats(m, &st) == ENOENT, "%s: stats of a lock %s", name, how);
	CHECK(ll_mutex_monitor(m, 1) == ENOENT, "%s: monitor of a lock %s", name, how);
	CHECK(ll_mutex_set_name(m, "x") == ENOENT, "%s: set_name of a lock %s", name, how);
	CHECK(dies_saying(lock_destroyed, m, SIGABRT, "destroyed ll_mutex_t"),
	      "%s: lock of a lock %s does not abort with a message", name, how);
	ll_mutex_destroy(m);
	ll_mutex_destroy(m);
}

static void destroy(const struct ll_lock_ops *ops)
{
	const char *name = ops->name;
	ll_mutex_t m;
	struct ll_error err;

	memset(&m, 0, sizeof(m));
	ll_mutex_destroy(&m);
	ll_mutex_destroy(&m);
	/* The table's own destroy, as the swapper calls it on its slots: twice, and zeroed. */
	int64_t config[LL_CONFIG_MAX];
	ll_config_defaults(ops, config);
	CHECK(ops->init(m.state, config) == 0, "%s: ops->init", name);
	ops->destroy(m.state);
	ops->destroy(m.state);
	memset(m.state, 0, sizeof(m.state));
	ops->destroy(m.state);

	CHECK(ll_mutex_init_opts(&m, ops, NULL, &err) == 0, "%s: %s", name, err.msg);
	ll_mutex_lock(&m);
	ll_mutex_unlock(&m);
	ll_mutex_destroy(&m);
	check_destroyed(&m, name, "destroyed");

	/* init again: a new lock. */
	CHECK(ll_mutex_init_opts(&m, ops, NULL, NULL) == 0, "%s: init after destroy", name);
	check_usable(&m, name, "init after destroy");
	ll_mutex_destroy(&m);

	CHECK(ll_mutex_init_opts(&m, ops, "no_such_knob=1", NULL) == EINVAL,
	      "%s: a bad option accepted", name);
	check_destroyed(&m, name, "whose init failed");
}

int test_mutex(void)
{
	ll_mutex_t m;
	CHECK(ll_mutex_init(&m, "no-such-lock", NULL, NULL) == EINVAL, "unknown lock accepted");
	check_destroyed(&m, "no-such-lock", "whose init failed");

	for (size_t i = 0; i < ll_algo_count(); i++) {
		const struct ll_lock_ops *ops = ll_algo_at(i);
		unlock_unheld(ops, 0);
		if (ll_monitor_available())
			unlock_unheld(ops, 1);
		destroy(ops);
		printf("%s: as the contract says\n", ops->name);
	}
	return 0;
}
