/*
 * rwlocks.c: the table of the library's rwlocks, in rwlocks.def's order,
 * finding one by name, and their configs (the mutexes' knob machinery).
 */
#include <string.h>

#include "rwlocks/rwalgo.h"

static const struct ll_rwlock_ops *const rwlocks[] = {
#define LL_RWLOCK(id, name) &ll_rw_##id##_ops,
#include "rwlocks.def"
#undef LL_RWLOCK
};

size_t ll_rwlock_algo_count(void)
{
	return LL_COUNT(rwlocks);
}

const struct ll_rwlock_ops *ll_rwlock_algo_at(size_t i)
{
	return i < LL_COUNT(rwlocks) ? rwlocks[i] : NULL;
}

static const char *rwlock_name(size_t i, const void *ctx)
{
	(void)ctx;
	return rwlocks[i]->name;
}

const struct ll_rwlock_ops *ll_rwlock_algo_find(const char *name, struct ll_error *err)
{
	for (size_t i = 0; i < LL_COUNT(rwlocks) && name; i++)
		if (strcmp(rwlocks[i]->name, name) == 0)
			return rwlocks[i];
	ll_error_unknown(err, "rwlock", name ? name : "", NULL, LL_COUNT(rwlocks), rwlock_name, NULL);
	return NULL;
}

void ll_rwlock_config_defaults(const struct ll_rwlock_ops *ops, void *config)
{
	if (ops)
		ll_knobs_defaults(ops->knobs, ops->nknobs, config, ops->config_size);
}

int ll_rwlock_config_parse(const struct ll_rwlock_ops *ops, const char *opts, void *config,
			   struct ll_error *err)
{
	if (!ops) {
		ll_error_set(err, "rwlock options: the ops table is NULL");
		return EINVAL;
	}
	return ll_knobs_parse("rwlock", ops->name, ops->knobs, ops->nknobs, opts, config, err);
}
