/*
 * mutex.c: the generic ll_mutex_t (locklab/locklab.h): an algorithm of the
 * table (locks/) chosen by name at init, its config parsed from text (core/),
 * the lock attached to the monitor's table of live locks (monitor/).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "locklab/locklab.h"
#include "core/fit.h"
#include "monitor/monitor_impl.h"

/* 0 when ops fits ll_mutex_t's state and int64_t[LL_CONFIG_MAX]; else EINVAL with err set. */
static int ops_fit(const struct ll_lock_ops *ops, struct ll_error *err)
{
	const struct ll_fit f = {
		.kind = "lock", .name = ops->name, .limit_name = "LL_MUTEX_STATE_BYTES",
		.state_size = ops->state_size, .state_limit = LL_MUTEX_STATE_BYTES,
		.config_size = ops->config_size, .knobs = ops->knobs, .nknobs = ops->nknobs,
	};
	return ll_fit_check(&f, err);
}

/*
 * A destroyed lock's table (and a lock whose init failed): the calls that can
 * say so return EINVAL, an unlock finds nothing held, and a lock, which has
 * no way to report, stops the program rather than return unlocked or wait
 * forever (locklab/locklab.h: the contract).
 */
static void destroyed_nothing(void *state)
{
	(void)state;
}

static void destroyed_lock(void *state)
{
	(void)state;
	fputs("locklab: ll_mutex_lock on a destroyed ll_mutex_t (or one whose init failed)\n",
	      stderr);
	abort();
}

static int destroyed_trylock(void *state)
{
	(void)state;
	return EINVAL;
}

static int destroyed_timedlock(void *state, const struct timespec *abs_mono)
{
	(void)state;
	(void)abs_mono;
	return EINVAL;
}

static const struct ll_lock_ops destroyed_ops = {
	.name = "destroyed",
	.summary = "a destroyed ll_mutex_t",
	.destroy = destroyed_nothing, .lock = destroyed_lock,
	.trylock = destroyed_trylock, .timedlock = destroyed_timedlock,
	.unlock = destroyed_nothing,
};

/* m (not NULL) as destroy leaves it: calls on it are answered by destroyed_ops. */
static void mark_destroyed(ll_mutex_t *m)
{
	__atomic_store_n(&m->mon, (uintptr_t)0, __ATOMIC_RELAXED);
	__atomic_store_n(&m->ops, &destroyed_ops, __ATOMIC_RELAXED);
}

/* EINVAL with err set when there is no lock or no table to init it with. */
static int init_refused(ll_mutex_t *m, const struct ll_lock_ops *ops, struct ll_error *err)
{
	if (m && ops)
		return 0;
	ll_error_set(err, "ll_mutex_init: %s is NULL", m ? "the ops table" : "the lock");
	if (m)
		mark_destroyed(m);
	return EINVAL;
}

int ll_mutex_init_config_at(ll_mutex_t *m, const struct ll_lock_ops *ops, const void *config,
			    const char *file, int line)
{
	int64_t defaults[LL_CONFIG_MAX];

	if (init_refused(m, ops, NULL))
		return EINVAL;
	if (ops_fit(ops, NULL)) {
		mark_destroyed(m);
		return EINVAL;
	}
	if (!config) {
		ll_config_defaults(ops, defaults);
		config = defaults;
	}
	memset(m->state, 0, sizeof(m->state));
	m->ops = ops;
	m->mon = 0;
	int rc = ops->init(m->state, config);
	if (rc == 0)
		ll_mon_attach(m, file, line);
	else
		mark_destroyed(m);
	return rc;
}

int ll_mutex_init_at(ll_mutex_t *m, const char *algo, const char *opts, struct ll_error *err,
		     const char *file, int line)
{
	const struct ll_lock_ops *ops = ll_algo_find(algo ? algo : LL_DEFAULT_ALGO, err);
	if (!ops) {
		if (m)
			mark_destroyed(m);
		return EINVAL;
	}
	return ll_mutex_init_opts_at(m, ops, opts, err, file, line);
}

int ll_mutex_init_opts_at(ll_mutex_t *m, const struct ll_lock_ops *ops, const char *opts,
			  struct ll_error *err, const char *file, int line)
{
	int64_t config[LL_CONFIG_MAX];

	int rc = init_refused(m, ops, err);
	if (!rc)
		rc = ops_fit(ops, err);
	if (!rc) {
		ll_config_defaults(ops, config);
		rc = ll_config_parse(ops, opts, config, err);
	}
	if (rc) {
		if (m)
			mark_destroyed(m);
		return rc;
	}
	rc = ll_mutex_init_config_at(m, ops, config, file, line);
	if (rc)
		ll_error_set(err, "lock '%s': init failed: %s", ops->name, strerror(rc));
	return rc;
}

/* The functions behind the macros, for callers that do not see them: the place is unknown. */
int (ll_mutex_init_config)(ll_mutex_t *m, const struct ll_lock_ops *ops, const void *config)
{
	return ll_mutex_init_config_at(m, ops, config, NULL, 0);
}

int (ll_mutex_init)(ll_mutex_t *m, const char *algo, const char *opts, struct ll_error *err)
{
	return ll_mutex_init_at(m, algo, opts, err, NULL, 0);
}

int (ll_mutex_init_opts)(ll_mutex_t *m, const struct ll_lock_ops *ops, const char *opts,
			 struct ll_error *err)
{
	return ll_mutex_init_opts_at(m, ops, opts, err, NULL, 0);
}

void ll_mutex_destroy(ll_mutex_t *m)
{
	/* NULL, never initialised (zeroed: no table), or destroyed already: nothing to do. */
	if (!m)
		return;
	/* Atomic: a monitor switch may be rewriting the table pointer under the registry lock. */
	const struct ll_lock_ops *ops = __atomic_load_n(&m->ops, __ATOMIC_RELAXED);
	if (!ops || ops == &destroyed_ops)
		return;
	/* Out of the registry first: a dump never sees a lock being torn down. */
	ll_mon_detach(m);
	m->ops->destroy(m->state);
	mark_destroyed(m);
}

struct timespec ll_deadline_after_ns(int64_t rel_ns)
{
	/* Saturated: INT64_MAX from an uptime past 292 years still lies ahead. */
	return ll_ns_timespec(ll_ns_add_sat(ll_now_ns(), (uint64_t)(rel_ns > 0 ? rel_ns : 0)));
}

int (ll_mutex_timedlock_ns)(ll_mutex_t *m, int64_t rel_ns)
{
	return ll_mutex_timedlock_ns_at(m, rel_ns, NULL, 0);
}
