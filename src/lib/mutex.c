/*
 * mutex.c: the generic ll_mutex_t (locklab/locklab.h): an algorithm of the
 * table (locks/) chosen by name at init, its config parsed from text (core/),
 * the lock attached to the monitor's table of live locks (monitor/).
 */
#include <errno.h>
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

int ll_mutex_init_config_at(ll_mutex_t *m, const struct ll_lock_ops *ops, const void *config,
			    const char *file, int line)
{
	int64_t defaults[LL_CONFIG_MAX];

	if (ops_fit(ops, NULL))
		return EINVAL;
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
	return rc;
}

int ll_mutex_init_at(ll_mutex_t *m, const char *algo, const char *opts, struct ll_error *err,
		     const char *file, int line)
{
	const struct ll_lock_ops *ops = ll_algo_find(algo ? algo : LL_DEFAULT_ALGO, err);
	return ops ? ll_mutex_init_opts_at(m, ops, opts, err, file, line) : EINVAL;
}

int ll_mutex_init_opts_at(ll_mutex_t *m, const struct ll_lock_ops *ops, const char *opts,
			  struct ll_error *err, const char *file, int line)
{
	int64_t config[LL_CONFIG_MAX];

	int rc = ops_fit(ops, err);
	if (rc)
		return rc;
	ll_config_defaults(ops, config);
	rc = ll_config_parse(ops, opts, config, err);
	if (rc)
		return rc;
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
	/* Out of the registry first: a dump never sees a lock being torn down. */
	ll_mon_detach(m);
	m->ops->destroy(m->state);
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
