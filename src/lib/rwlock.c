/*
 * rwlock.c: the generic ll_rwlock_t (locklab/rwlock.h): an rwlock of the
 * table (rwlocks/) chosen by name at init, its config parsed from text.
 */
#include <errno.h>
#include <string.h>

#include "core/fit.h"
#include "locklab/locklab.h"

/* 0 when ops fits ll_rwlock_t's state and int64_t[LL_CONFIG_MAX]; else EINVAL with err set. */
static int ops_fit(const struct ll_rwlock_ops *ops, struct ll_error *err)
{
	const struct ll_fit f = {
		.kind = "rwlock", .name = ops->name, .limit_name = "LL_RWLOCK_STATE_BYTES",
		.state_size = ops->state_size, .state_limit = LL_RWLOCK_STATE_BYTES,
		.config_size = ops->config_size, .knobs = ops->knobs, .nknobs = ops->nknobs,
	};
	return ll_fit_check(&f, err);
}

/*
 * A destroyed rwlock's table (and an rwlock whose init failed): every call
 * returns EINVAL, destroy does nothing (locklab/rwlock.h: the contract).
 */
static void destroyed_destroy(void *state)
{
	(void)state;
}

static int destroyed_call(void *state)
{
	(void)state;
	return EINVAL;
}

static int destroyed_timed(void *state, const struct timespec *abs_mono)
{
	(void)state;
	(void)abs_mono;
	return EINVAL;
}

static const struct ll_rwlock_ops destroyed_ops = {
	.name = "destroyed",
	.summary = "a destroyed ll_rwlock_t",
	.destroy = destroyed_destroy,
	.rdlock = destroyed_call, .tryrdlock = destroyed_call, .timedrdlock = destroyed_timed,
	.wrlock = destroyed_call, .trywrlock = destroyed_call, .timedwrlock = destroyed_timed,
	.unlock = destroyed_call,
};

/* EINVAL with err set when there is no rwlock or no table; a failed init leaves rw destroyed. */
static int init_refused(ll_rwlock_t *rw, const struct ll_rwlock_ops *ops, struct ll_error *err)
{
	if (rw && ops)
		return 0;
	ll_error_set(err, "ll_rwlock_init: %s is NULL", rw ? "the ops table" : "the rwlock");
	if (rw)
		rw->ops = &destroyed_ops;
	return EINVAL;
}

int ll_rwlock_init_config(ll_rwlock_t *rw, const struct ll_rwlock_ops *ops, const void *config)
{
	int64_t defaults[LL_CONFIG_MAX];

	if (init_refused(rw, ops, NULL))
		return EINVAL;
	if (ops_fit(ops, NULL)) {
		rw->ops = &destroyed_ops;
		return EINVAL;
	}
	if (!config) {
		ll_rwlock_config_defaults(ops, defaults);
		config = defaults;
	}
	memset(rw->state, 0, sizeof(rw->state));
	int rc = ops->init(rw->state, config);
	rw->ops = rc ? &destroyed_ops : ops;
	return rc;
}

int ll_rwlock_init_opts(ll_rwlock_t *rw, const struct ll_rwlock_ops *ops, const char *opts,
			struct ll_error *err)
{
	int64_t config[LL_CONFIG_MAX];

	int rc = init_refused(rw, ops, err);
	if (!rc)
		rc = ops_fit(ops, err);
	if (!rc) {
		ll_rwlock_config_defaults(ops, config);
		rc = ll_rwlock_config_parse(ops, opts, config, err);
	}
	if (rc) {
		if (rw)
			rw->ops = &destroyed_ops;
		return rc;
	}
	rc = ll_rwlock_init_config(rw, ops, config);
	if (rc)
		ll_error_set(err, "rwlock '%s': init failed: %s", ops->name, strerror(rc));
	return rc;
}

int ll_rwlock_init(ll_rwlock_t *rw, const char *algo, const char *opts, struct ll_error *err)
{
	const struct ll_rwlock_ops *ops = ll_rwlock_algo_find(algo ? algo : LL_DEFAULT_RWLOCK, err);
	if (!ops) {
		if (rw)
			rw->ops = &destroyed_ops;
		return EINVAL;
	}
	return ll_rwlock_init_opts(rw, ops, opts, err);
}

void ll_rwlock_destroy(ll_rwlock_t *rw)
{
	/* NULL, never initialised (zeroed: no table), or destroyed already: nothing to do. */
	if (!rw || !rw->ops || rw->ops == &destroyed_ops)
		return;
	rw->ops->destroy(rw->state);
	rw->ops = &destroyed_ops;
}

int ll_rwlock_clockrdlock(ll_rwlock_t *rw, int clk, const struct timespec *abs)
{
	struct timespec mono;
	int rc = ll_clock_to_mono(clk, abs, &mono);
	return rc ? rc : rw->ops->timedrdlock(rw->state, &mono);
}

int ll_rwlock_clockwrlock(ll_rwlock_t *rw, int clk, const struct timespec *abs)
{
	struct timespec mono;
	int rc = ll_clock_to_mono(clk, abs, &mono);
	return rc ? rc : rw->ops->timedwrlock(rw->state, &mono);
}

int ll_rwlock_timedrdlock_ns(ll_rwlock_t *rw, int64_t rel_ns)
{
	struct timespec dl = ll_deadline_after_ns(rel_ns);
	return rw->ops->timedrdlock(rw->state, &dl);
}

int ll_rwlock_timedwrlock_ns(ll_rwlock_t *rw, int64_t rel_ns)
{
	struct timespec dl = ll_deadline_after_ns(rel_ns);
	return rw->ops->timedwrlock(rw->state, &dl);
}
