/*
 * algorithms.c: the table of the library's algorithms, in algorithms.def's
 * order, and finding one by name.
 */
#include <string.h>

#include "locks/algo.h"

static const struct ll_lock_ops *const algorithms[] = {
#define LL_ALGO(id, name) &ll_##id##_ops,
#include "algorithms.def"
#undef LL_ALGO
};

size_t ll_algo_count(void)
{
	return LL_COUNT(algorithms);
}

const struct ll_lock_ops *ll_algo_at(size_t i)
{
	return i < LL_COUNT(algorithms) ? algorithms[i] : NULL;
}

static const char *algo_name(size_t i, const void *ctx)
{
	(void)ctx;
	return algorithms[i]->name;
}

const struct ll_lock_ops *ll_algo_find(const char *name, struct ll_error *err)
{
	for (size_t i = 0; i < LL_COUNT(algorithms) && name; i++)
		if (strcmp(algorithms[i]->name, name) == 0)
			return algorithms[i];
	ll_error_unknown(err, "lock", name ? name : "", NULL, LL_COUNT(algorithms), algo_name, NULL);
	return NULL;
}
